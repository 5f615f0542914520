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

import numpy as np
import pandas as pd

from dentalkit.errors import (
    DentalkitWarning,
    Errors,
    InputError,
    check_errors,
    problems_error,
)
from dentalkit.study._not_run import (
    NOT_RUN,
    Problems,
    group_counts,
    left_out,
    untested,
    why_not,
)
from dentalkit.study._parts import (
    arch_scale,
    by_patients,
    fit_arches,
    mean_forms,
    measure_arches,
    measure_scaled,
)
from dentalkit.study._plausible import PRODUCER as PLAUSIBLE
from dentalkit.study._plausible import run_plausible
from dentalkit.study._qc import run_qc, sensitivity_results
from dentalkit.study._tables import (
    fill_endpoints,
    model_versions,
    read_analyses,
    warn_pooled,
    write_analyses,
)
from dentalkit.study._tle import OBSERVED, TLE_ENDPOINT, first_sessions, tle_patients
from dentalkit.study.calibration import Calibration, calibration_policy
from dentalkit.study.design import Design
from dentalkit.study.groups import (
    CLASS_DEFINED_BY,
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
    "NOT_RUN",
    "AnalysisInputs",
    "AnalysisSpec",
    "analyze",
    "left_out",
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
    problems: Problems = field(default_factory=Problems)
    unasked: set[str] = field(default_factory=set)  # tables of analyses whose input was not given
    built_tables: Mapping[str, pd.DataFrame] | None = None  # as given, when QC excluded rows

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
    unmet : str
        What is missing when ``when`` says no (the reason of its ``analysis_problems`` row).
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
    unmet: str = ""

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
    if not len(versions):  # no answers given: nothing to record
        inputs.unasked.add("model_versions")
        return {}
    warn_pooled(versions)
    return {"model_versions": versions}


def _run_calibration(inputs: AnalysisInputs) -> dict[str, pd.DataFrame]:
    # which scale each image got (its own, its endpoint's, none): the policy's record
    applied = inputs.calibration.applied(inputs.tables)
    if not len(applied):  # no image given: nothing to record
        inputs.unasked.add("calibration_applied")
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
    else:
        for name in ("ceph_classes", "ceph_class_changes", "ceph_change", "ceph_summary"):
            inputs.problems.not_run(
                name,
                "not made: no lateral cephalogram was measured (no ceph_lateral_points "
                "landmarks), so there is no skeletal class, change or summary",
                path="ceph",
                endpoint="ceph_lateral_points",
            )
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
        inputs.problems.not_run(
            "ceph_compare",
            f"not run: no lateral cephalogram gave the compared measures ({', '.join(compared)})",
            path="ceph_compare",
            endpoint="ceph_lateral_points",
        )
        return {}
    cm = merge_groups(inputs.one_per_patient(cm), inputs.groups).dropna(subset=[col, "value"])
    if cm[col].nunique() < 2:
        inputs.problems.not_run(
            "ceph_compare",
            f"not run: a comparison needs two groups of {col} with a measured patient; "
            f"found {group_counts(cm, col)}",
            path="ceph_compare",
            field=col,
        )
        return {}
    design = inputs.design
    cmp = stats.compare(
        cm, "value", col, per="measure", correction=design.adjust, confidence=design.confidence
    )
    cmp = untested("ceph_compare", cmp, ["measure"], col, inputs)
    return {"ceph_compare": cmp} if len(cmp) else {}


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
    elif "tooth_keypoints" not in inputs.tables:  # not given: not asked
        inputs.unasked.add("arch_measures")
    else:
        inputs.problems.not_run(
            "arch_measures",
            "not made: the tables have no tooth_keypoints rows (the arch widths, depth and "
            "perimeter are measured between tooth keypoints)",
            path="arch",
        )
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
            cmp = arch.compare(am, col, correction=design.adjust, confidence=design.confidence)
            cmp = untested("arch_compare", cmp, ["arch", "measure"], col, inputs)
            if len(cmp):
                out["arch_compare"] = cmp
        else:
            inputs.problems.not_run(
                "arch_compare",
                f"not run: a comparison needs two groups of {col} with an arch measured in mm; "
                f"found {group_counts(am, col)} (arches in pixels are not compared)",
                path="arch_groups",
                field=col,
            )
    elif "arch_measures" in inputs.unasked:
        inputs.unasked.add("arch_compare")
    else:
        inputs.problems.not_run(
            "arch_compare", "not run: no arch_measures were made (see its row)", path="arch_groups"
        )
    return out


def _run_growth(inputs: AnalysisInputs) -> dict[str, pd.DataFrame]:
    why: list[str] = []
    # Default groups (skeletal class of the first session) carry that session's ANB tracing
    # error: every measure is modelled baseline-adjusted for it (regression to the mean).
    design, default = inputs.design, inputs.given_groups is None and inputs.design.groups is None
    out = growth_by_group(
        inputs.results.get("ceph_measures"),
        inputs.results.get("arch_measures"),
        inputs.groups,
        correction=inputs.design.adjust,
        confidence=inputs.design.confidence,
        why=why,
        group_defined_by=CLASS_DEFINED_BY if default and design.session == "first" else None,
    )
    if not out and {"ceph_measures", "arch_measures"} <= inputs.unasked:
        inputs.unasked.update(_GROWTH_TABLES)  # neither input given: not asked
        return out
    if not out:
        for name in _GROWTH_TABLES:
            inputs.problems.not_run(
                name, f"not run: {why[0] if why else 'no model'}", path="growth"
            )
        return out
    models = out["growth_models"]
    for r in models[models["status"].astype(str) != "ok"].itertuples(index=False):
        # its growth_models row says so too (status, note); growth_fixed has no terms of it
        inputs.problems.not_run(
            "growth_models",
            f"not fitted ({r.status}), no growth terms: {r.note}",
            path=f"measure={r.measure}",
        )
    return out


def _run_teeth(inputs: AnalysisInputs) -> dict[str, pd.DataFrame]:
    from dentalkit import teeth

    table = inputs.tables["teeth"]
    measured, problems = measure_scaled(by_patients(teeth.measure), table, inputs.calibration)
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
    else:  # neither given: not asked
        inputs.unasked.add("findings_prevalence")
        return {}
    if not len(images):
        inputs.problems.not_run(
            "findings_prevalence",
            "not run: no image was analysed for findings (no answer of a findings endpoint)",
            path="findings",
        )
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
    if not len(prev.prevalence):  # written with no rows: nothing was found to count
        n_pat = images["patient_id"].nunique()
        inputs.problems.not_run(
            "findings_prevalence",
            f"not made (no rows): no finding was detected in the {len(images)} image(s) of "
            f"{n_pat} patient(s) analysed for findings, so no class has a prevalence to show",
            path="findings",
        )
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
    typed, why = tle_patients(inputs.patients, sessions)
    if typed is None:
        inputs.problems.not_run("tle_estimates", f"not run: {why}", path="tle")
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
    n = int(estimates["estimate_length_months"].notna().sum())
    if n >= 3:  # a summary needs values
        level = inputs.design.confidence
        out["tle_summary"] = tle.summarize(
            estimates, by="malocclusion_class", confidence_level=level
        )
        pairs = int(estimates[OBSERVED].notna().sum()) if OBSERVED in estimates.columns else 0
        if pairs >= 3:
            out["tle_calibration"] = tle.calibration(estimates, OBSERVED, confidence_level=level)
        else:
            inputs.problems.not_run(
                "tle_calibration",
                f"not made: a calibration needs 3 patients with an estimate and {OBSERVED} in "
                f"the patients table; found {pairs}",
                path="tle",
            )
    else:
        for name in ("tle_summary", "tle_calibration"):
            inputs.problems.not_run(
                name, f"not made: it needs 3 patients with an estimate; found {n}", path="tle"
            )
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
        "plausible_lengths", run_plausible, tables=("landmarks",), needs=("ceph_measures",),
        producers=(PLAUSIBLE,), quiet=False,
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
        unmet="no /tle answers with a patients table (the treatment-length estimates need "
        "both: docs/tle.md)",
    ),
    AnalysisSpec(  # the main results without QC (qc="exclude"): the analyses run again
        "qc_sensitivity", lambda i: sensitivity_results(i, ANALYSES),
        writes=("qc_sensitivity_results",)),
)  # fmt: skip

#: The analyses whose problems :func:`analyze` gathers into ``analysis_problems`` (its
#: ``producer`` column), in the order it runs them.
ANALYSIS_PROBLEM_PRODUCERS: tuple[str, ...] = (*(p for a in ANALYSES for p in a.producers), NOT_RUN)


def selected_analyses(names: Sequence[str] | None) -> tuple[AnalysisSpec, ...]:
    """The specs the design names (every one when None); model versions, the
    calibration record, its plausibility check and the quality control (with its
    sensitivity analysis) always run."""
    if names is None:
        return ANALYSES
    known = {a.name for a in ANALYSES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(
            f"study design: unknown analysis {', '.join(map(repr, unknown))}; the analyses "
            f"are {', '.join(a.name for a in ANALYSES)}"
        )
    always = ("model_versions", "calibration", "qc", "plausible_lengths", "qc_sensitivity")
    return tuple(a for a in ANALYSES if a.name in names or a.name in always)


def problems_summary(problems: pd.DataFrame | None) -> str:
    """How many problems, per analysis: ``"3 problem(s): ceph.measure 2, arch.measure 1"``.

    Parameters
    ----------
    problems : DataFrame or None
        The ``analysis_problems`` table of :func:`analyze` (``producer`` column).

    Returns
    -------
    str
        ``"no problems"`` for an empty table (or ``None``); the :data:`NOT_RUN` rows
        are counted apart (``"; 4 table(s) or comparison(s) not made on this cohort …"``).

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
    not_made = int((names == NOT_RUN).sum())
    names = names[names != NOT_RUN]
    order = [p for p in ANALYSIS_PROBLEM_PRODUCERS if p in set(names)]
    order += sorted(set(names) - set(order))
    counts = names.value_counts()
    text = f"{len(names)} problem(s): " + ", ".join(f"{p} {counts[p]}" for p in order)
    if not not_made:
        return text
    return (text if len(names) else "no problems") + (
        f"; {not_made} table(s) or comparison(s) not made on this cohort ({NOT_RUN}: why)"
    )


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
    qc : {"exclude", "flag", "ignore"}, optional
        The pre-specified quality-control policy (default: the design's, ``"exclude"``):
        the checks of :mod:`dentalkit.qc` run first (``qc``, ``qc_summary``); ``"exclude"``
        leaves the rows of flagged items out of every analysis, lists each (``qc_excluded``)
        and gives the main results with and without them (``qc_sensitivity``,
        ``qc_sensitivity_results``); ``"flag"`` and ``"ignore"`` keep every row.
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
        ``dentalkit analyze`` and the demo collect. An analysis (or one of its tables or
        comparisons) that cannot run on this cohort — one group, a group of one patient,
        one session, an endpoint without answers — is not a bad row: it is a
        :data:`NOT_RUN` row of ``analysis_problems`` saying why, in every mode, and never
        raises.

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
        ``qc``, ``qc_summary`` (and ``qc_excluded``, ``qc_sensitivity``,
        ``qc_sensitivity_results`` under ``qc="exclude"``), ``model_versions`` (:func:`model_versions`: the ``Version`` labels each endpoint's
        rows carry), and the growth analysis of :func:`growth_by_group` (``growth_fixed``,
        ``growth_variance``, ``growth_models``, ``growth_bands``, ``growth_data``) when
        patients have more than one session. Also ``analysis_problems`` (``"collect"``,
        ``"warn"``: always, 0 rows when there is none; ``"raise"``: only its rows saying
        what was not made, when there are any): the problems of
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
    unasked = inputs.unasked
    for spec in selected_analyses(design.analyses):
        if not spec.ready(inputs):  # it cannot run on this cohort: each table says why
            why = why_not(spec, inputs, unasked)
            for name in spec.writes if why else ():
                inputs.problems.not_run(name, why, path=spec.name)
            unasked.update(() if why else spec.writes)  # its input was not given
            continue
        with warnings.catch_warnings():
            if spec.quiet:  # problems are collected into tables; a warning would repeat them
                warnings.simplefilter("ignore", DentalkitWarning)
            inputs.results.update(spec.run(inputs))
        for name in spec.writes:  # nothing silently missing: a table made, or a reason
            made = name in inputs.results or name in unasked or inputs.problems.said(name)
            if not made:
                inputs.problems.not_run(
                    name,
                    f"not made: {spec.name} found nothing in the tables to make it from",
                    path=spec.name,
                )
    out = inputs.results
    problems = fill_endpoints(inputs.problems.table(ANALYSIS_PROBLEM_PRODUCERS), tables)
    bad = problems[problems["producer"].astype(str) != NOT_RUN]  # rows left out
    if errors == "raise" and len(bad):
        # the message names the analysis and the table of each row; .problems is the
        # table collect would return
        shown = bad.assign(
            reason=bad["producer"].astype(str)
            + " ("
            + bad["table"].astype(str)
            + "): "
            + bad["reason"].astype(str)
        )
        err = problems_error(
            shown,
            f"dentalkit.study.analyze met {problems_summary(bad)}; nothing was returned",
            ANALYZE_HINT,
        )
        err.problems = problems
        raise err
    if errors == "warn" and len(bad):
        warnings.warn(
            f"dentalkit.study.analyze met {problems_summary(bad)}; the other rows "
            "were analysed, and the analysis_problems table lists these",
            DentalkitWarning,
            stacklevel=2,
        )
    if errors != "raise" or len(problems):  # raise: only the rows saying what was not made
        out["analysis_problems"] = problems
    return out
