"""The study's analyses, declared as data: one :class:`AnalysisSpec` record each.

:func:`analyze` walks :data:`ANALYSES` in order, as :func:`dentalkit.study.make_figures`
walks the figures: an analysis whose input tables have no rows (or that needs groups
when there are none) is skipped; the others run on the tables and on the results of
the analyses before them. Every number comes from the concept modules (``ceph``,
``arch``, ``teeth``, ``findings``, ``stats``); the problems each meets are gathered into
one ``analysis_problems`` table (its ``producer`` column: :data:`ANALYSIS_PROBLEM_PRODUCERS`).

Calibration is explicit (millimetres only after a scale, never guessed): the study's one
policy (:class:`dentalkit.study.Calibration`) gives each image its own ``mm_per_px``
(the ``calibration`` table), else its endpoint's fallback, else pixels.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

import numpy as np
import pandas as pd

from dentalkit.errors import (
    PROBLEM_COLUMNS,
    DentalkitWarning,
    Errors,
    InputError,
    MixedVersionsWarning,
    check_errors,
    empty_problems,
    problems_error,
    problems_frame,
)
from dentalkit.study._parts import (
    arch_scale,
    fit_arches,
    in_whole,
    mean_forms,
    measure_arches,
    measure_scaled,
)
from dentalkit.study._qc import run_qc
from dentalkit.study._tle import OBSERVED, TLE_ENDPOINT, first_sessions, tle_patients
from dentalkit.study.calibration import Calibration, calibration_policy
from dentalkit.study.design import Design
from dentalkit.study.groups import (
    default_groups,
    groups_from_patients,
    growth_by_group,
    merge_groups,
)

__all__ = [
    "ANALYSES",
    "ANALYSIS_PROBLEM_PRODUCERS",
    "ANALYZE_HINT",
    "CEPH_COMPARED",
    "AnalysisInputs",
    "AnalysisSpec",
    "analyze",
    "model_versions",
    "problems_summary",
    "read_analyses",
    "selected_analyses",
    "write_analyses",
]

#: Cephalometric measures compared between skeletal classes (vertical pattern and face
#: heights; not ANB, SNA, SNB or Wits, which define the skeletal class).
CEPH_COMPARED = ("SN_MP", "SN_GoGn", "FMA", "gonial_angle", "N_Me", "ANS_Me", "S_Go")
#: The sagittal measures that define the skeletal class: compared only between groups
#: that are not skeletal classes (a column of the patients table).
CEPH_CLASS_MEASURES = ("SNA", "SNB", "ANB", "Wits")
#: How to go on after :func:`analyze` raised on bad rows (the message's last line).
ANALYZE_HINT = (
    "Fix these rows, or pass errors='collect' to run every analysis on the other rows and "
    "get these in the analysis_problems table (errors='warn': the same, plus one warning)"
)


class _Problems:
    """The problems of every analysis :func:`analyze` runs, gathered in run order."""

    def __init__(self) -> None:
        self.parts: list[pd.DataFrame] = []
        #: Per table the QC policy removed rows from: the position in the table given to
        #: :func:`analyze` of each row the analyses see (set by the ``qc`` step).
        self.kept_rows: dict[str, np.ndarray] = {}

    def add(self, producer: str, problems: pd.DataFrame, rows: np.ndarray | None = None) -> None:
        """Keep ``problems`` of ``producer``; ``rows`` maps the positions of an analysed
        subset back to the positions of the table the analysis was given, and
        ``kept_rows`` those back to the table given to :func:`analyze`."""
        if problems is None or not len(problems):
            return
        part = problems_frame(problems)[list(PROBLEM_COLUMNS)]
        if rows is not None:
            part["row"] = in_whole(part["row"], rows)
        for name, kept in self.kept_rows.items():
            mine = (part["table"].astype(str) == name).to_numpy(dtype=bool)
            if mine.any():
                part.loc[mine, "row"] = in_whole(part.loc[mine, "row"], kept)
        self.parts.append(part.assign(producer=producer))

    def table(self) -> pd.DataFrame:
        """One table: :data:`~dentalkit.errors.PROBLEM_COLUMNS`, then ``producer``."""
        if self.parts:
            out = pd.concat(self.parts, ignore_index=True)
        else:
            out = empty_problems()
            out["producer"] = pd.Series(dtype="object")
        out = problems_frame(out)
        out["producer"] = pd.Categorical(
            out["producer"].astype("object"), categories=list(ANALYSIS_PROBLEM_PRODUCERS)
        )
        return out


@dataclass
class AnalysisInputs:
    """What an analysis runs on: the tables, the policy, the design and earlier results.

    ``results`` fills up as :func:`analyze` walks :data:`ANALYSES`; ``problems`` gathers
    the problem rows of every analysis (``problems.add(producer, table)``).
    """

    tables: Mapping[str, pd.DataFrame]
    calibration: Calibration
    design: Design = field(default_factory=Design)
    responses: pd.DataFrame | None = None
    patients: pd.DataFrame | None = None
    given_groups: pd.DataFrame | None = None
    results: dict[str, pd.DataFrame] = field(default_factory=dict)
    problems: _Problems = field(default_factory=_Problems)

    def rows(self, name: str) -> pd.DataFrame | None:
        """Table ``name`` when it is there and has rows, else None."""
        table = self.tables.get(name)
        return table if table is not None and len(table) else None

    @cached_property
    def groups(self) -> pd.DataFrame | None:
        """``patient_id`` and one group column (one row per patient), or None: the given
        groups, else the design's column of the patients table, else the skeletal class of
        each patient's session by the design's rule (once ``ceph_classes`` exists)."""
        if self.given_groups is not None:
            return self.given_groups
        if self.design.groups is not None:
            return groups_from_patients(self.patients, self.design.groups)
        classes = self.results.get("ceph_classes")
        return None if classes is None else default_groups(classes, self.design.session)

    @property
    def group_column(self) -> str:
        """The group column of :attr:`groups`."""
        assert self.groups is not None
        return next(c for c in self.groups.columns if c != "patient_id")

    @cached_property
    def arch_scale(self) -> pd.DataFrame | None:
        """Per-arch scale of the arch points (session key, arch, mm_per_px), or None."""
        return arch_scale(self.tables["arch_points"], self.calibration)

    def one_per_patient(self, table: pd.DataFrame) -> pd.DataFrame:
        """One row per patient × measure: the session of the design's rule."""
        from dentalkit.stats import one_row_per_unit

        return one_row_per_unit(table, self.design.session)


@dataclass(frozen=True)
class AnalysisSpec:
    """One analysis of the study, declared as data.

    Parameters
    ----------
    name : str
        Its name in the study design (``[analyses] run``).
    run : callable
        ``run(inputs)`` → ``{analysis table name: DataFrame}`` (:class:`AnalysisInputs`);
        it adds its problem rows to ``inputs.problems``.
    tables : tuple of str
        Tables it cannot run without (skipped when one is absent or has no rows).
    needs : tuple of str
        Results of earlier analyses it cannot run without.
    groups : bool
        It compares groups: skipped when the study has none.
    writes : tuple of str
        The analysis tables it may write (docs/columns.md declares each).
    producers : tuple of str
        The ``producer`` values of its rows in ``analysis_problems``.
    quiet : bool
        Its warnings are silenced (its problems are rows of a table instead).
    when : callable, optional
        ``when(inputs)`` → whether its other inputs are there (e.g. ``/tle`` answers).
    """

    name: str
    run: Callable[[AnalysisInputs], dict[str, pd.DataFrame]]
    tables: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    groups: bool = False
    writes: tuple[str, ...] = ()
    producers: tuple[str, ...] = ()
    quiet: bool = True
    when: Callable[[AnalysisInputs], bool] | None = None

    def ready(self, inputs: AnalysisInputs) -> bool:
        """Whether its inputs are there (tables with rows, earlier results, groups)."""
        if any(inputs.rows(t) is None for t in self.tables):
            return False
        if any(n not in inputs.results for n in self.needs):
            return False
        if self.when is not None and not self.when(inputs):
            return False
        return not self.groups or inputs.groups is not None


# ---------------------------------------------------------------- the analyses


def _run_versions(inputs: AnalysisInputs) -> dict[str, pd.DataFrame]:
    versions = model_versions(inputs.tables)
    if not len(versions):
        return {}
    _warn_pooled(versions)
    return {"model_versions": versions}


def _run_calibration(inputs: AnalysisInputs) -> dict[str, pd.DataFrame]:
    # which scale each image got (its own, its endpoint's, none): the policy's record
    applied = inputs.calibration.applied(inputs.tables)
    return {"calibration_applied": applied} if len(applied) else {}


def _run_ceph(inputs: AnalysisInputs) -> dict[str, pd.DataFrame]:
    from dentalkit import ceph

    measures, problems = measure_scaled(
        ceph.measure, inputs.tables["landmarks"], inputs.calibration
    )
    inputs.problems.add("ceph.measure", problems)
    out = {
        "ceph_measures": measures,
        "ceph_zscores": ceph.zscores(measures, patients=inputs.patients),
    }
    lateral = measures[measures["view"] == "lateral"]
    if len(lateral):
        out["ceph_classes"] = ceph.classify(lateral)
        out["ceph_class_changes"] = ceph.class_changes(out["ceph_classes"])
        out["ceph_change"] = ceph.change(lateral)
        out["ceph_summary"] = ceph.summarize(lateral, session=inputs.design.session)
    return out


def _run_ceph_compare(inputs: AnalysisInputs) -> dict[str, pd.DataFrame]:
    # Vertical and size measures by group, one session per patient (the sagittal measures
    # that define the skeletal class are compared only between groups of another kind).
    from dentalkit import stats

    compared = CEPH_COMPARED
    if inputs.design.groups is not None:
        compared = CEPH_CLASS_MEASURES + CEPH_COMPARED
    col = inputs.group_column
    cm = inputs.results["ceph_measures"]
    cm = cm[(cm["view"] == "lateral") & cm["measure"].astype(str).isin(compared)]
    if not len(cm):
        return {}
    cm = merge_groups(inputs.one_per_patient(cm), inputs.groups).dropna(subset=[col, "value"])
    if cm[col].nunique() < 2:
        return {}
    design = inputs.design
    return {
        "ceph_compare": stats.compare(
            cm, "value", col, per="measure", correction=design.adjust, confidence=design.confidence
        )
    }


def _run_arch(inputs: AnalysisInputs) -> dict[str, pd.DataFrame]:
    # every arch is fitted; an arch with bad points is a bad_input row (listed); calibrated
    # arches in mm, the others in pixels (fitted apart: one unit per fit)
    from dentalkit import arch

    points, keypoints = inputs.tables["arch_points"], inputs.tables.get("tooth_keypoints")
    fits = fit_arches(points, keypoints, inputs.arch_scale)
    inputs.problems.add("arch.fit", arch.problems(fits))
    out = {"arch_fits": fits}
    if keypoints is not None and len(keypoints):
        dims = measure_arches(keypoints, points, inputs.arch_scale)
        inputs.problems.add("arch.measure", arch.problems(dims))
        out["arch_measures"] = dims
    return out


def _run_arch_groups(inputs: AnalysisInputs) -> dict[str, pd.DataFrame]:
    # Group comparisons take one session per patient: the patient is the unit; repeated
    # sessions belong in a growth model. One mean form per unit (mm and px arches are never
    # averaged together); a group without an ok fit is absent and listed, so one bad part
    # does not stop the analysis in collect mode (its bad arches are arch.fit's rows).
    from dentalkit import arch

    col, groups = inputs.group_column, inputs.groups
    grouped = merge_groups(inputs.one_per_patient(inputs.tables["arch_points"]), groups)
    forms, problems = mean_forms(grouped.dropna(subset=[col]), col, inputs.arch_scale)
    inputs.problems.add("arch.mean_form", problems)
    out = {"arch_mean_forms": forms}
    if "arch_measures" in inputs.results:
        first = inputs.one_per_patient(inputs.results["arch_measures"])
        am = merge_groups(first, groups).dropna(subset=[col])
        am = am[am["arch"].isin(["up", "lo"]) & (am["unit"] == "mm")]
        if am[col].nunique() >= 2:
            design = inputs.design
            out["arch_compare"] = arch.compare(
                am, col, correction=design.adjust, confidence=design.confidence
            )
    return out


def _run_growth(inputs: AnalysisInputs) -> dict[str, pd.DataFrame]:
    return growth_by_group(
        inputs.results.get("ceph_measures"),
        inputs.results.get("arch_measures"),
        inputs.groups,
        correction=inputs.design.adjust,
        confidence=inputs.design.confidence,
    )


def _run_teeth(inputs: AnalysisInputs) -> dict[str, pd.DataFrame]:
    from dentalkit import teeth

    table = inputs.tables["teeth"]
    measured, problems = measure_scaled(teeth.measure, table, inputs.calibration)
    inputs.problems.add("teeth.measure", problems)
    miss = teeth.missing(table)
    return {
        "tooth_measures": measured,
        "tooth_symmetry_cohort": teeth.symmetry(measured, "area").cohort,
        "missing_by_fdi": miss.by_fdi,
        "missing_patterns": miss.patterns,
    }


def _run_findings(inputs: AnalysisInputs) -> dict[str, pd.DataFrame]:
    # The responses tell which images were analysed (an image without a detection leaves no
    # findings row but counts in the denominators); without them, the clinical photographs'
    # ImageContents list every analysed image.
    from dentalkit import findings

    det, counts = inputs.tables.get("findings"), inputs.rows("finding_counts")
    det_rows = None  # positions of the analysed detections in the findings table
    if inputs.responses is not None and len(inputs.responses):
        images = findings.analysed_images(inputs.responses)
    elif counts is not None:
        images = counts[["patient_id", "timestamp", "source"]].drop_duplicates()
        if det is not None:
            clinical = (det["source"] == "clinical").to_numpy(dtype=bool)
            det, det_rows = det[clinical], np.flatnonzero(clinical)
    else:
        return {}
    if not len(images):
        return {}
    prev = findings.prevalence(
        det, inputs.tables.get("finding_counts"), images=images, errors="collect"
    )
    problems = prev.problems
    if det_rows is not None and len(problems):
        in_findings = (problems["table"] == "findings").to_numpy(dtype=bool)
        inputs.problems.add("findings.prevalence", problems[in_findings], rows=det_rows)
        problems = problems[~in_findings]
    inputs.problems.add("findings.prevalence", problems)
    return {"findings_prevalence": prev.prevalence}


def _run_tmj(inputs: AnalysisInputs) -> dict[str, pd.DataFrame]:
    from dentalkit import findings

    return {"tmj_prevalence": findings.tmj_prevalence(inputs.tables["tmj"])}


def _asked_tle(inputs: AnalysisInputs) -> bool:
    r = inputs.responses
    if inputs.patients is None or r is None or not len(r) or "endpoint" not in r.columns:
        return False
    return bool((r["endpoint"].astype(str) == TLE_ENDPOINT).any())


def _run_tle(inputs: AnalysisInputs) -> dict[str, pd.DataFrame]:
    # One estimate per patient from the stored /tle answers (nothing is sent), the sex and
    # age of the patient record; summaries by malocclusion class, calibration against the
    # observed durations of the patients table (three pairs at least).
    from dentalkit import tle

    responses = inputs.responses
    asked = responses[responses["endpoint"].astype(str) == TLE_ENDPOINT]
    sessions = first_sessions(asked)
    typed, _ = tle_patients(inputs.patients, sessions)
    if typed is None:
        return {}
    typed = typed[typed["patient_id"].isin(list(sessions))].reset_index(drop=True)
    estimates = tle.estimate(typed, responses, errors="collect")
    patients = inputs.patients
    if OBSERVED in patients.columns:
        observed = patients.assign(patient_id=patients["patient_id"].astype(str))
        observed = observed.drop_duplicates("patient_id").set_index("patient_id")[OBSERVED]
        estimates[OBSERVED] = pd.to_numeric(
            estimates["patient_id"].astype(str).map(observed), errors="coerce"
        ).astype("float64")
    out = {"tle_estimates": estimates}
    if int(estimates["estimate_length_months"].notna().sum()) >= 3:  # a summary needs values
        level = inputs.design.confidence
        out["tle_summary"] = tle.summarize(
            estimates, by="malocclusion_class", confidence_level=level
        )
        if OBSERVED in estimates.columns and estimates[OBSERVED].notna().sum() >= 3:
            out["tle_calibration"] = tle.calibration(estimates, OBSERVED, confidence_level=level)
    return out


_GROWTH_TABLES = ("growth_fixed", "growth_variance", "growth_models", "growth_bands", "growth_data")

#: The study's analyses, in the order :func:`analyze` runs them.
ANALYSES: tuple[AnalysisSpec, ...] = (
    AnalysisSpec("model_versions", _run_versions, writes=("model_versions",), quiet=False),
    AnalysisSpec("calibration", _run_calibration, writes=("calibration_applied",)),
    AnalysisSpec(
        "qc", run_qc, writes=("qc", "qc_summary", "qc_excluded", "qc_sensitivity"),
    ),
    AnalysisSpec(
        "ceph",
        _run_ceph,
        tables=("landmarks",),
        writes=(
            "ceph_measures",
            "ceph_zscores",
            "ceph_classes",
            "ceph_class_changes",
            "ceph_change",
            "ceph_summary",
        ),
        producers=("ceph.measure",),
    ),
    AnalysisSpec(
        "ceph_compare", _run_ceph_compare, needs=("ceph_measures",), groups=True,
        writes=("ceph_compare",),
    ),
    AnalysisSpec(
        "arch", _run_arch, tables=("arch_points",), writes=("arch_fits", "arch_measures"),
        producers=("arch.fit", "arch.measure"),
    ),
    AnalysisSpec(
        "arch_groups", _run_arch_groups, tables=("arch_points",), groups=True,
        writes=("arch_mean_forms", "arch_compare"), producers=("arch.mean_form",),
    ),
    AnalysisSpec("growth", _run_growth, groups=True, writes=_GROWTH_TABLES),
    AnalysisSpec(
        "teeth", _run_teeth, tables=("teeth",),
        writes=("tooth_measures", "tooth_symmetry_cohort", "missing_by_fdi", "missing_patterns"),
        producers=("teeth.measure",),
    ),
    AnalysisSpec(
        "findings", _run_findings, writes=("findings_prevalence",),
        producers=("findings.prevalence",),
    ),
    AnalysisSpec("tmj", _run_tmj, tables=("tmj",), writes=("tmj_prevalence",)),
    AnalysisSpec(
        "tle", _run_tle, when=_asked_tle,
        writes=("tle_estimates", "tle_summary", "tle_calibration"),
    ),
)  # fmt: skip

#: The analyses whose problems :func:`analyze` gathers into ``analysis_problems`` (its
#: ``producer`` column), in the order it runs them.
ANALYSIS_PROBLEM_PRODUCERS: tuple[str, ...] = tuple(p for a in ANALYSES for p in a.producers)


def selected_analyses(names: Sequence[str] | None) -> tuple[AnalysisSpec, ...]:
    """The specs the design names (every one when None); model versions, the
    calibration record and the quality control always run."""
    if names is None:
        return ANALYSES
    known = {a.name for a in ANALYSES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(
            f"study design: unknown analysis {', '.join(map(repr, unknown))}; the analyses "
            f"are {', '.join(a.name for a in ANALYSES)}"
        )
    always = ("model_versions", "calibration", "qc")
    return tuple(a for a in ANALYSES if a.name in names or a.name in always)


def _fill_endpoints(problems: pd.DataFrame, tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """``endpoint`` of the problems that name a row of a given table but no endpoint."""
    need = problems["endpoint"].isna() & problems["row"].notna()
    for name in pd.unique(problems.loc[need, "table"].astype(object)):
        table = tables.get(str(name))
        if table is None or "endpoint" not in table.columns:
            continue
        sel = (need & (problems["table"] == name)).to_numpy(dtype=bool)
        rows = problems.loc[sel, "row"].to_numpy(dtype="int64")
        rows_ok = (rows >= 0) & (rows < len(table))
        idx = np.flatnonzero(sel)[rows_ok]
        values = table["endpoint"].astype(object).to_numpy()[rows[rows_ok]]
        problems.loc[idx, "endpoint"] = [None if pd.isna(v) else str(v) for v in values]
    return problems


def problems_summary(problems: pd.DataFrame | None) -> str:
    """How many problems, per analysis: ``"3 problem(s): ceph.measure 2, arch.measure 1"``.

    Parameters
    ----------
    problems : DataFrame or None
        The ``analysis_problems`` table of :func:`analyze` (``producer`` column).

    Returns
    -------
    str
        ``"no problems"`` for an empty table (or ``None``).

    Examples
    --------
    >>> t = pd.DataFrame({"producer": ["arch.measure", "ceph.measure", "ceph.measure"]})
    >>> problems_summary(t)
    '3 problem(s): ceph.measure 2, arch.measure 1'
    >>> problems_summary(t.iloc[:0])
    'no problems'
    """
    if problems is None or not len(problems):
        return "no problems"
    names = problems["producer"].astype(str)
    order = [p for p in ANALYSIS_PROBLEM_PRODUCERS if p in set(names)]
    order += sorted(set(names) - set(order))
    counts = names.value_counts()
    return f"{len(problems)} problem(s): " + ", ".join(f"{p} {counts[p]}" for p in order)


def analyze(
    tables: Mapping[str, pd.DataFrame],
    mm_per_px: Calibration | Mapping[str, float] | None = None,
    *,
    groups: pd.DataFrame | None = None,
    responses: pd.DataFrame | None = None,
    patients: pd.DataFrame | None = None,
    design: Design | None = None,
    qc: str | None = None,
    errors: Errors = "raise",
) -> dict[str, pd.DataFrame]:
    """Run every cohort analysis of :data:`ANALYSES` that the tables allow.

    Parameters
    ----------
    tables : mapping of str to DataFrame
        Output of :func:`dentalkit.convert.tables` (or :func:`dentalkit.io.read_tables`).
    mm_per_px : Calibration or mapping, optional
        The calibration policy (:class:`~dentalkit.study.Calibration`), or its endpoint
        fallback: millimetres per pixel by endpoint name. An image's own value in
        ``tables["calibration"]`` (when present) goes first; images with neither stay in
        pixels. Tables holding both are measured in two parts and joined (``unit`` says which):
        with one occlusogram calibrated, its arches are in mm and the other's in px, the
        upper − lower differences of such a session are ``needs_mm`` rows (NaN), mean
        forms are one per unit, and ``arch_compare`` and the growth model take the mm rows
        only (docs/arch.md, "Partial calibration in the study pipeline").
    groups : DataFrame, optional
        A ``patient_id`` column plus one group column to compare (default: the design's
        column of ``patients``, else the skeletal class of each patient's first session,
        from :func:`dentalkit.ceph.classify`).
    responses : DataFrame, optional
        The responses table; it tells which images were analysed for findings (images
        with no detection leave no row in the findings tables but count in prevalence
        denominators). Without it, findings prevalence is computed over the clinical
        photographs only (their ``ImageContents`` lists every analysed image).
    patients : DataFrame, optional
        ``patient_id`` with ``sex`` and ``birth_date`` (or ``age``): z-scores are taken
        against the norm of the patient's sex and age at each session (see
        :func:`dentalkit.ceph.zscores`). Without it, norms given by sex or age give no
        z-score (``norm_note`` says why).
    design : Design, optional
        The study design (:class:`~dentalkit.study.Design`): the group column, the session
        rule, α, the correction, the QC policy and which analyses run (default:
        :class:`Design` ()).
    qc : {"flag", "exclude", "ignore"}, optional
        The pre-specified quality-control policy (default: the design's, ``"flag"``).
        The checks of :mod:`dentalkit.qc` run first, on the tables as given (``qc``,
        ``qc_summary``); ``"exclude"`` leaves the rows of flagged items out of every
        analysis, lists each excluded item with its reason (``qc_excluded``) and gives
        the main cephalometric means with and without them (``qc_sensitivity``);
        ``"flag"`` keeps every row (the flagged items are listed in ``qc``);
        ``"ignore"`` keeps every row and says the checks were not applied.
    errors : {"raise", "collect", "warn"}
        dentalkit's one ``errors=`` rule (:func:`dentalkit.errors.check_errors`), applied
        to the problems of every analysis run (:data:`ANALYSIS_PROBLEM_PRODUCERS`: absent
        landmarks of ``ceph.measure``, non-finite arch or tooth points of ``arch.fit`` and
        ``arch.measure``, groups of ``arch.mean_form`` without a fit to average (left
        out of ``arch_mean_forms``), unusable outlines of ``teeth.measure``, malformed boxes or
        counts of ``findings.prevalence``). ``"raise"`` (default, as everywhere in
        dentalkit): one :class:`~dentalkit.errors.InputError` lists every problem of
        every analysis, each with its analysis, table, patient, session and row, and
        nothing is returned. ``"collect"``: every analysis runs on the usable rows (the
        others are NaN or a status other than ``ok`` in its table) and the result holds
        ``analysis_problems``; ``"warn"``: the same, plus one
        :class:`~dentalkit.errors.DentalkitWarning` with the count per analysis.
        ``dentalkit analyze`` and the demo collect.

    Returns
    -------
    dict of str to DataFrame
        ``ceph_measures``, ``ceph_zscores``, ``ceph_classes``, ``ceph_class_changes``,
        ``ceph_change``, ``ceph_summary`` (first session of each patient),
        ``ceph_compare`` (:data:`CEPH_COMPARED` by group, first session of each patient),
        ``arch_fits``, ``arch_measures``, ``arch_mean_forms`` and ``arch_compare`` (first
        session of each patient: one row per patient), ``tooth_measures``,
        ``tooth_symmetry_cohort``, ``missing_by_fdi``, ``missing_patterns``,
        ``findings_prevalence``, ``tmj_prevalence`` (unknown TMJ wordings counted apart,
        never as findings) — each present when its input table has rows — and
        ``qc`` and ``qc_summary`` (and ``qc_excluded``, ``qc_sensitivity`` under
        ``qc="exclude"``), ``model_versions`` (:func:`model_versions`: the ``Version`` labels each endpoint's
        rows carry), and the growth analysis of :func:`growth_by_group` (``growth_fixed``,
        ``growth_variance``, ``growth_models``, ``growth_bands``, ``growth_data``) when
        patients have more than one session. With ``errors="collect"`` or ``"warn"``
        also ``analysis_problems`` (always, 0 rows when there is none): the problems of
        every analysis in :data:`dentalkit.errors.PROBLEM_SCHEMA`, plus ``producer`` (the
        analysis that reported the row; :data:`ANALYSIS_PROBLEM_PRODUCERS`). ``row`` is the
        0-based position in the table named by ``table`` as given to this function (null
        when the problem is a whole session, e.g. an absent landmark: ``path`` names it);
        the producers' own context columns (``view``, ``measures``, ``arch`` …) are
        left out, as the reason names what became NaN. See :func:`problems_summary`.

    Raises
    ------
    InputError
        ``errors="raise"`` and some analysis met bad rows; ``.problems`` holds the table
        ``"collect"`` would have returned as ``analysis_problems``.

    Warns
    -----
    MixedVersionsWarning
        When the rows of one endpoint carry several ``Version`` labels: its analyses pool
        answers of different model versions (recorded in ``model_versions``, column
        ``pooled``).
    DentalkitWarning
        ``errors="warn"`` and some analysis met bad rows (once, with the count per
        analysis).
    """
    errors = check_errors(errors, "dentalkit.study.analyze")
    design = design or Design()
    if qc is not None:
        design = design.with_(qc=qc)
    inputs = AnalysisInputs(
        tables,
        calibration_policy(mm_per_px, tables),
        design,
        responses=responses,
        patients=patients,
        given_groups=groups,
    )
    for spec in selected_analyses(design.analyses):
        if not spec.ready(inputs):
            continue
        with warnings.catch_warnings():
            if spec.quiet:  # problems are collected into tables; a warning would repeat them
                warnings.simplefilter("ignore", DentalkitWarning)
            inputs.results.update(spec.run(inputs))
    out = inputs.results
    problems = _fill_endpoints(inputs.problems.table(), tables)
    if errors == "raise":
        if len(problems):
            # the message names the analysis and the table of each row; .problems is the
            # table collect would return
            shown = problems.assign(
                reason=problems["producer"].astype(str)
                + " ("
                + problems["table"].astype(str)
                + "): "
                + problems["reason"].astype(str)
            )
            err = problems_error(
                shown,
                f"dentalkit.study.analyze met {problems_summary(problems)}; nothing was returned",
                ANALYZE_HINT,
            )
            err.problems = problems
            raise err
        return out
    if errors == "warn" and len(problems):
        warnings.warn(
            f"dentalkit.study.analyze met {problems_summary(problems)}; the other rows "
            "were analysed, and the analysis_problems table lists these",
            DentalkitWarning,
            stacklevel=2,
        )
    out["analysis_problems"] = problems
    return out


def model_versions(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The ``Version`` labels behind the tables, per endpoint: what the analyses pool.

    Parameters
    ----------
    tables : mapping of str to DataFrame
        Tables of :func:`dentalkit.convert.tables` (any with ``endpoint``,
        ``model_version``, ``patient_id`` and ``timestamp`` columns count).

    Returns
    -------
    pandas.DataFrame
        One row per endpoint and ``model_version`` (``"(none)"`` for endpoints whose
        responses carry no Version, such as the classifier): ``n_sessions`` and
        ``n_patients`` (distinct sessions and patients with that label; the patient is the
        unit) and ``pooled`` (True when the endpoint's rows carry more than one label, so
        its analyses mix model versions).
    """
    keys = []
    for table in tables.values():
        if table is None or not len(table):
            continue
        if not {"endpoint", "model_version", "patient_id", "timestamp"} <= set(table.columns):
            continue
        keys.append(
            pd.DataFrame(
                {
                    "endpoint": table["endpoint"].astype("object"),
                    "model_version": table["model_version"].astype("object"),
                    "patient_id": table["patient_id"].astype("object"),
                    "timestamp": table["timestamp"].astype("object"),
                }
            ).drop_duplicates()
        )
    cols = ["endpoint", "model_version", "n_sessions", "n_patients", "pooled"]
    if not keys:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in cols})
    allk = pd.concat(keys, ignore_index=True).drop_duplicates()
    allk["model_version"] = allk["model_version"].where(allk["model_version"].notna(), "(none)")
    grouped = allk.groupby(["endpoint", "model_version"], sort=True)
    out = pd.DataFrame(
        {
            "n_sessions": grouped[["patient_id", "timestamp"]].apply(
                lambda g: len(g.drop_duplicates())
            ),
            "n_patients": grouped["patient_id"].nunique(),
        }
    ).reset_index()
    labels = out.groupby("endpoint")["model_version"].transform("size")
    out["pooled"] = (labels > 1).to_numpy()
    return out.astype(
        {"endpoint": "str", "model_version": "str", "n_sessions": "int64", "n_patients": "int64"}
    )[cols]


def _warn_pooled(versions: pd.DataFrame) -> None:
    pooled = versions[versions["pooled"]]
    if not len(pooled):
        return
    parts = [
        f"{ep}: "
        + ", ".join(
            f"{v} ({n} patients)" for v, n in zip(g["model_version"], g["n_patients"], strict=True)
        )
        for ep, g in pooled.groupby("endpoint", sort=True)
    ]
    warnings.warn(
        "the analyses pool responses of different model versions — "
        + "; ".join(parts)
        + " (recorded in the model_versions table; analyse one Version at a time by "
        "filtering the tables on model_version to keep them apart)",
        MixedVersionsWarning,
        stacklevel=4,
    )


def write_analyses(analyses: Mapping[str, pd.DataFrame], out: str | Path) -> Path:
    """Write each analysis table as ``out/<name>.parquet`` (atomic); return the folder.

    Tables are written with their declared schemas (``docs/columns.md``): declared Arrow
    types and nullability, field metadata ``description``/``unit``/``values``.
    """
    from dentalkit.io import write_parquet

    out = Path(out)
    for name, table in analyses.items():
        write_parquet(table, out / f"{name}.parquet", name=name)
    return out


def read_analyses(folder: str | Path) -> dict[str, pd.DataFrame]:
    """Read the tables written by :func:`write_analyses`."""
    return {p.stem: pd.read_parquet(p) for p in sorted(Path(folder).glob("*.parquet"))}
