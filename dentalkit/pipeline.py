"""The study pipeline behind ``dentalkit analyze``, ``dentalkit figures`` and the demo.

Each stage reads only the output of the stage before it (DESIGN.md):
tables → :func:`analyze` → analysis tables → :func:`make_figures` → figures, and
:func:`write_report` links them. The functions are thin: every number comes from the
concept modules (``ceph``, ``arch``, ``teeth``, ``findings``, ``tle``), every figure from
``dentalkit.plot``.

Calibration is explicit (millimetres only after ``mm_per_px``, never guessed): a mapping
from endpoint name to millimetres per pixel, e.g. ``{"ceph_lateral_points": 0.1}``.
Tables of endpoints without a calibration are measured in pixels.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dentalkit._progress import bar
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

__all__ = [
    "ANALYSIS_PROBLEM_PRODUCERS",
    "FIGURES",
    "GROWTH_ARCH",
    "GROWTH_CEPH",
    "FigureInputs",
    "FigureSpec",
    "analyze",
    "growth_by_group",
    "make_figures",
    "model_versions",
    "problems_summary",
    "read_analyses",
    "write_analyses",
    "write_report",
]

#: Lateral ceph measures of the growth analysis (SNB and ANB as in issue 19, SN–MP the
#: vertical pattern) and the arch widths (upper and lower).
GROWTH_CEPH = ("SNB", "ANB", "SN_MP")
GROWTH_ARCH = ("intercanine_width", "intermolar_width")

log = logging.getLogger("dentalkit")

Calibration = Mapping[str, float]

#: Cephalometric measures :func:`analyze` compares between groups (vertical pattern and
#: face heights; not ANB, SNA, SNB or Wits, which define the skeletal class).
CEPH_COMPARED = ("SN_MP", "SN_GoGn", "FMA", "gonial_angle", "N_Me", "ANS_Me", "S_Go")

#: The analyses whose problems :func:`analyze` gathers into ``analysis_problems`` (its
#: ``producer`` column), in the order it runs them.
ANALYSIS_PROBLEM_PRODUCERS = (
    "ceph.measure",
    "arch.fit",
    "arch.measure",
    "arch.mean_form",
    "teeth.measure",
    "findings.prevalence",
)
#: How to go on after :func:`analyze` raised on bad rows (the message's last line).
ANALYZE_HINT = (
    "Fix these rows, or pass errors='collect' to run every analysis on the other rows and "
    "get these in the analysis_problems table (errors='warn': the same, plus one warning)"
)


class _Problems:
    """The problems of every analysis :func:`analyze` runs, gathered in run order."""

    def __init__(self) -> None:
        self.parts: list[pd.DataFrame] = []

    def add(self, producer: str, problems: pd.DataFrame, rows: np.ndarray | None = None) -> None:
        """Keep ``problems`` of ``producer``; ``rows`` maps the positions of an analysed
        subset back to the positions of the table given to :func:`analyze`."""
        if problems is None or not len(problems):
            return
        part = problems_frame(problems)[list(PROBLEM_COLUMNS)]
        if rows is not None:
            part["row"] = _in_whole(part["row"], rows)
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


def _in_whole(positions: pd.Series, rows: np.ndarray) -> pd.Series:
    """Problem ``row`` positions in an analysed part, as positions in the whole table
    (``rows[i]`` is the whole table's position of the part's row ``i``; null stays null)."""
    return pd.Series(
        pd.array([None if pd.isna(r) else int(rows[int(r)]) for r in positions], dtype="Int64"),
        index=positions.index,
    )


def _with_scale(table: pd.DataFrame, mm_per_px: Calibration | None) -> pd.DataFrame:
    """``table`` plus a ``mm_per_px`` column looked up by its ``endpoint`` (NaN = pixels)."""
    out = table.copy()
    lookup = dict(mm_per_px or {})
    out["mm_per_px"] = out["endpoint"].astype("object").map(lookup).astype("float64")
    return out


def _concat_parts(results: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The results of the calibrated and uncalibrated parts, one after the other, with
    the categories of both (``pd.concat`` makes differing categoricals object)."""
    out = pd.concat(list(results), ignore_index=True)
    for col in out.columns:
        dtypes = [r[col].dtype for r in results if col in r.columns]
        if out[col].dtype == object and all(isinstance(d, pd.CategoricalDtype) for d in dtypes):
            cats = pd.unique(
                np.concatenate([np.asarray(d.categories, dtype=object) for d in dtypes])
            )
            out[col] = pd.Categorical(out[col], categories=cats, ordered=dtypes[0].ordered)
    return out


def _measure_scaled(
    measure: Callable[..., tuple[pd.DataFrame, pd.DataFrame]],
    table: pd.DataFrame,
    mm_per_px: Calibration | None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``measure(part, mm_per_px=…, errors="collect")`` in mm where the endpoint has a
    calibration and in pixels where it has none (as the module docstring promises: a
    ``mm_per_px`` column with NaN would make every length NaN instead).

    Returns the results of both parts, one after the other, and their problems with
    ``row`` as the 0-based position in ``table``.
    """
    scaled = _with_scale(table, mm_per_px)
    has = scaled["mm_per_px"].notna().to_numpy(dtype=bool)
    if has.all() or not has.any():
        return measure(scaled, mm_per_px="mm_per_px" if has.any() else None, errors="collect")
    results, problems = [], []
    for mask, scale in ((has, "mm_per_px"), (~has, None)):
        rows = np.flatnonzero(mask)
        result, found = measure(
            scaled.iloc[rows].reset_index(drop=True), mm_per_px=scale, errors="collect"
        )
        results.append(result)
        if len(found):
            found = problems_frame(found)
            found["row"] = _in_whole(found["row"], rows)
            problems.append(found)
    out = _concat_parts(results)
    if not problems:
        return out, empty_problems()
    return out, pd.concat(problems, ignore_index=True)


def _arch_scale(table: pd.DataFrame, mm_per_px: Calibration | None) -> pd.DataFrame | None:
    """Per-arch calibration table (session key, arch, mm_per_px) for ``dentalkit.arch``."""
    scaled = _with_scale(table, mm_per_px)
    keys = scaled[["patient_id", "timestamp", "arch", "mm_per_px"]].drop_duplicates(
        ["patient_id", "timestamp", "arch"]
    )
    keys = keys.dropna(subset=["mm_per_px"])
    return keys.reset_index(drop=True) if len(keys) else None


#: Reason of an upper − lower difference of a session whose arches are in two units.
_MIXED_UNITS = (
    "one arch of this session is calibrated (mm) and the other is not (px): calibrate "
    "both occlusogram endpoints (mm_per_px) to compare them"
)


def _arch_parts(table: pd.DataFrame, scale: pd.DataFrame | None) -> list[tuple[np.ndarray, Any]]:
    """The arches of ``table`` split by calibration: ``(positions, mm_per_px)`` for the
    rows of calibrated arches (``scale``) and for the others (``None``: pixels), empty
    parts left out. ``dentalkit.arch`` takes one unit per call (a calibration table
    without a value for some arch is refused there), so :func:`analyze` measures the two
    parts apart, as ``_measure_scaled`` does for ceph and teeth."""
    if scale is None:
        return [(np.arange(len(table)), None)]
    key = ["patient_id", "timestamp", "arch"]
    has = pd.MultiIndex.from_frame(table[key].astype(str)).isin(
        pd.MultiIndex.from_frame(scale[key].astype(str))
    )
    parts = [(np.flatnonzero(has), scale), (np.flatnonzero(~has), None)]
    return [(rows, s) for rows, s in parts if len(rows)]


def _remap_problems(records: Sequence[dict], rows: Mapping[str, np.ndarray]) -> list[dict]:
    """``dentalkit.arch`` problem records of a part with ``row`` as the position in the
    whole table (``rows[table]`` maps the part's positions); index labels are kept."""
    out = []
    for rec in records:
        rec = dict(rec)
        where = rows.get(str(rec.get("table")))
        if where is not None and rec.get("row") is not None:
            rec["row"] = int(where[int(rec["row"])])
        out.append(rec)
    return out


def _fit_arches(
    points: pd.DataFrame, keypoints: pd.DataFrame | None, scale: pd.DataFrame | None
) -> pd.DataFrame:
    """``arch.fit`` of every arch: calibrated arches in mm, the others in pixels."""
    from dentalkit import arch

    parts = _arch_parts(points, scale)
    if len(parts) == 1:
        return arch.fit(
            points, "all", tooth_keypoints=keypoints, mm_per_px=parts[0][1], errors="collect"
        )
    fits, records = [], []
    for rows, s in parts:
        f = arch.fit(
            points.iloc[rows], "all", tooth_keypoints=keypoints, mm_per_px=s, errors="collect"
        )
        records += _remap_problems(f.attrs["problems"], {"arch_points": rows})
        fits.append(f)
    out = _concat_parts(fits)
    out.attrs["problems"] = tuple(sorted(records, key=lambda r: r["row"]))
    return out


def _measure_arches(
    keypoints: pd.DataFrame, points: pd.DataFrame, scale: pd.DataFrame | None
) -> pd.DataFrame:
    """``arch.measure`` of every arch: calibrated arches in mm, the others in pixels.

    A session whose upper arch is in mm and lower in px (or the reverse) gets its upper −
    lower rows with status ``needs_mm`` and NaN values, as ``arch.measure`` gives them
    without any calibration: the two units are never subtracted.
    """
    from dentalkit import arch

    tk_parts, pt_parts = _arch_parts(keypoints, scale), _arch_parts(points, scale)
    if len(tk_parts) == 1 and all(s is tk_parts[0][1] for _, s in pt_parts):
        return arch.measure(keypoints, points, mm_per_px=tk_parts[0][1], errors="collect")
    pt_rows = {s is None: rows for rows, s in pt_parts}
    results, records = [], []
    for tk_rows, s in tk_parts:
        rows = pt_rows.get(s is None, np.zeros(0, dtype=np.int64))
        part = points.iloc[rows] if len(rows) else None
        m = arch.measure(keypoints.iloc[tk_rows], part, mm_per_px=s, errors="collect")
        records += _remap_problems(
            m.attrs["problems"], {"tooth_keypoints": tk_rows, "arch_points": rows}
        )
        results.append(m)
    out = _concat_parts(results)
    mixed = _mixed_differences(out)
    if len(mixed):
        out = _concat_parts([out, mixed])
    out.attrs["problems"] = tuple(records)
    return out


def _mixed_differences(measures: pd.DataFrame) -> pd.DataFrame:
    """``needs_mm`` upper − lower rows of the sessions whose two arches have two units."""
    from dentalkit import arch

    per_arch = measures[measures["arch"].astype(str).isin(["up", "lo"])]
    units = per_arch.groupby(["patient_id", "timestamp"], observed=True)["unit"].nunique()
    mixed = units[units > 1].index
    if not len(mixed):
        return measures.iloc[:0]
    session = pd.MultiIndex.from_frame(per_arch[["patient_id", "timestamp"]])
    upper = per_arch[session.isin(mixed) & (per_arch["arch"].astype(str) == "up").to_numpy()]
    parts = []
    for ms in arch.MEASURES.values():
        if ms.base is None:
            continue
        base = upper[upper["measure"].astype(str) == ms.base]
        if not len(base):
            continue
        part = base.copy()
        part["arch"] = pd.Categorical(["up-lo"] * len(part), categories=base["arch"].cat.categories)
        part["measure"] = pd.Categorical(
            [ms.name] * len(part), categories=base["measure"].cat.categories
        )
        part["value"] = np.nan
        part["unit"] = pd.Categorical(["px"] * len(part), categories=base["unit"].cat.categories)
        part["status"] = pd.Categorical(
            ["needs_mm"] * len(part), categories=base["status"].cat.categories
        )
        part["reason"] = pd.array([_MIXED_UNITS] * len(part), dtype="string")
        parts.append(part)
    return pd.concat(parts, ignore_index=True) if parts else measures.iloc[:0]


def _mean_forms(
    points: pd.DataFrame, by: str, scale: pd.DataFrame | None
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``arch.mean_form`` by ``by``, of the calibrated arches in mm and of the others in
    pixels: one mean form per unit, never pooling the two; and the problem rows of the
    groups left out (no fit with status ``ok``, e.g. every arch of a part failed).

    The rows of bad points are not repeated here: ``arch.fit`` lists them (with their
    row in the given table). A group row gets the ``endpoint`` of its arches' points.
    """
    from dentalkit import arch

    forms, records = [], []
    for rows, s in _arch_parts(points, scale):
        part = points.iloc[rows]
        form = arch.mean_form(part, by=by, mm_per_px=s, errors="collect")
        for rec in form.attrs["problems"]:
            if rec.get("table") != "arch_mean_forms":
                continue  # a bad point row: arch.fit lists it
            rec = dict(rec)
            if "endpoint" in part.columns:
                eps = set(part.loc[part["arch"].astype(str) == rec["arch"], "endpoint"].dropna())
                if len(eps) == 1:
                    rec["endpoint"] = str(eps.pop())
            records.append(rec)
        forms.append(form)
    kept = [f for f in forms if len(f)] or forms[:1]
    out = kept[0] if len(kept) == 1 else _concat_parts(kept)
    out.attrs.pop("problems", None)
    found = pd.DataFrame.from_records(records, columns=[*PROBLEM_COLUMNS, "arch"])
    return out, problems_frame(found, severity="error")


def analyze(
    tables: Mapping[str, pd.DataFrame],
    mm_per_px: Calibration | None = None,
    *,
    groups: pd.DataFrame | None = None,
    responses: pd.DataFrame | None = None,
    patients: pd.DataFrame | None = None,
    errors: Errors = "raise",
) -> dict[str, pd.DataFrame]:
    """Run every cohort analysis that the tables allow.

    Parameters
    ----------
    tables : mapping of str to DataFrame
        Output of :func:`dentalkit.convert.tables` (or :func:`dentalkit.io.read_tables`).
    mm_per_px : mapping, optional
        Millimetres per pixel by endpoint name; endpoints without one stay in pixels.
        Tables holding both are measured in two parts and joined (``unit`` says which):
        with one occlusogram calibrated, its arches are in mm and the other's in px, the
        upper − lower differences of such a session are ``needs_mm`` rows (NaN), mean
        forms are one per unit, and ``arch_compare`` and the growth model take the mm rows
        only (docs/arch.md, "Partial calibration in the study pipeline").
    groups : DataFrame, optional
        A ``patient_id`` column plus group columns to compare (default: the skeletal
        class of each patient's first session, from :func:`dentalkit.ceph.classify`).
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
        ``model_versions`` (:func:`model_versions`: the ``Version`` labels each endpoint's
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
    from dentalkit import arch, ceph, findings, stats, teeth
    from dentalkit.stats import one_row_per_unit

    errors = check_errors(errors, "dentalkit.pipeline.analyze")
    found = _Problems()
    out: dict[str, pd.DataFrame] = {}
    versions = model_versions(tables)
    if len(versions):
        out["model_versions"] = versions
        _warn_pooled(versions)
    landmarks = tables.get("landmarks")
    with warnings.catch_warnings():
        # Problems are collected into tables; a warning per stage would only repeat them.
        warnings.simplefilter("ignore", DentalkitWarning)
        if landmarks is not None and len(landmarks):
            measures, problems = _measure_scaled(ceph.measure, landmarks, mm_per_px)
            found.add("ceph.measure", problems)
            out["ceph_measures"] = measures
            out["ceph_zscores"] = ceph.zscores(measures, patients=patients)
            lateral = measures[measures["view"] == "lateral"]
            if len(lateral):
                out["ceph_classes"] = ceph.classify(lateral)
                out["ceph_class_changes"] = ceph.class_changes(out["ceph_classes"])
                out["ceph_change"] = ceph.change(lateral)
                out["ceph_summary"] = ceph.summarize(lateral, session="first")
        if groups is None and "ceph_classes" in out:
            # The group of a patient is the class of their first session, fixed per patient;
            # patients whose class changes later are counted in ceph_class_changes.
            classes = one_row_per_unit(out["ceph_classes"], "first")
            groups = classes[["patient_id", "skeletal_class"]]
        if groups is not None and "ceph_measures" in out:
            # Vertical and size measures by group, first session of each patient (the
            # sagittal measures that define the skeletal class are not compared with it).
            group_col = next(c for c in groups.columns if c != "patient_id")
            cm = out["ceph_measures"]
            cm = cm[(cm["view"] == "lateral") & cm["measure"].astype(str).isin(CEPH_COMPARED)]
            if len(cm):
                cm = _merge_groups(one_row_per_unit(cm, "first"), groups)
                cm = cm.dropna(subset=[group_col, "value"])
                if cm[group_col].nunique() >= 2:
                    out["ceph_compare"] = stats.compare(
                        cm, "value", group_col, per="measure", correction="holm"
                    )

        points, keypoints = tables.get("arch_points"), tables.get("tooth_keypoints")
        if points is not None and len(points):
            scale = _arch_scale(points, mm_per_px)
            # every arch is fitted; an arch with bad points is a bad_input row (listed)
            # calibrated arches in mm, the others in pixels (fitted apart: one unit per fit)
            fits = _fit_arches(points, keypoints, scale)
            found.add("arch.fit", arch.problems(fits))
            out["arch_fits"] = fits
            if keypoints is not None and len(keypoints):
                dims = _measure_arches(keypoints, points, scale)
                found.add("arch.measure", arch.problems(dims))
                out["arch_measures"] = dims
            if groups is not None:
                # Group comparisons take one session per patient (the first): the patient
                # is the unit; repeated sessions belong in a growth model.
                group_col = next(c for c in groups.columns if c != "patient_id")
                grouped = _merge_groups(one_row_per_unit(points, "first"), groups)
                # its bad arches are those arch.fit listed above (first sessions only)
                # one mean form per unit: mm arches and px arches are never averaged together
                # a group without an ok fit (every arch of a part failed) is absent and
                # listed, so one bad part does not stop the analysis in collect mode
                out["arch_mean_forms"], problems = _mean_forms(
                    grouped.dropna(subset=[group_col]), group_col, scale
                )
                found.add("arch.mean_form", problems)
                if "arch_measures" in out:
                    first = one_row_per_unit(out["arch_measures"], "first")
                    am = _merge_groups(first, groups).dropna(subset=[group_col])
                    am = am[am["arch"].isin(["up", "lo"]) & (am["unit"] == "mm")]
                    if am[group_col].nunique() >= 2:
                        out["arch_compare"] = arch.compare(am, group_col)

        if groups is not None:
            out.update(growth_by_group(out.get("ceph_measures"), out.get("arch_measures"), groups))

        teeth_table = tables.get("teeth")
        if teeth_table is not None and len(teeth_table):
            measured, problems = _measure_scaled(teeth.measure, teeth_table, mm_per_px)
            found.add("teeth.measure", problems)
            out["tooth_measures"] = measured
            out["tooth_symmetry_cohort"] = teeth.symmetry(measured, "area").cohort
            miss = teeth.missing(teeth_table)
            out["missing_by_fdi"] = miss.by_fdi
            out["missing_patterns"] = miss.patterns

        det, counts = tables.get("findings"), tables.get("finding_counts")
        det_rows = None  # positions of the analysed detections in the findings table
        if responses is not None and len(responses):
            images = findings.analysed_images(responses)
        elif counts is not None and len(counts):
            images = counts[["patient_id", "timestamp", "source"]].drop_duplicates()
            if det is not None:
                clinical = (det["source"] == "clinical").to_numpy(dtype=bool)
                det, det_rows = det[clinical], np.flatnonzero(clinical)
        else:
            images = None
        if images is not None and len(images):
            prev = findings.prevalence(det, counts, images=images, errors="collect")
            problems = prev.problems
            if det_rows is not None and len(problems):
                in_findings = (problems["table"] == "findings").to_numpy(dtype=bool)
                found.add("findings.prevalence", problems[in_findings], rows=det_rows)
                problems = problems[~in_findings]
            found.add("findings.prevalence", problems)
            out["findings_prevalence"] = prev.prevalence
        tmj = tables.get("tmj")
        if tmj is not None and len(tmj):
            out["tmj_prevalence"] = findings.tmj_prevalence(tmj)
    problems = _fill_endpoints(found.table(), tables)
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
                f"dentalkit.pipeline.analyze met {problems_summary(problems)}; nothing "
                "was returned",
                ANALYZE_HINT,
            )
            err.problems = problems
            raise err
        return out
    if errors == "warn" and len(problems):
        warnings.warn(
            f"dentalkit.pipeline.analyze met {problems_summary(problems)}; the other rows "
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
        stacklevel=3,
    )


def growth_by_group(
    ceph_measures: pd.DataFrame | None,
    arch_measures: pd.DataFrame | None,
    groups: pd.DataFrame,
    *,
    ceph: Sequence[str] = GROWTH_CEPH,
    arch: Sequence[str] = GROWTH_ARCH,
) -> dict[str, pd.DataFrame]:
    """Growth of ceph and arch measures over the sessions, compared between groups.

    One linear mixed-effects model per measure (:func:`dentalkit.stats.growth`):
    ``value ~ years × group`` with a random intercept per patient (and a random slope
    where ≥ 3 sessions identify it), REML, Holm across the measures per term. The
    patient is the unit; the group is the patient's (e.g. skeletal class at the first
    session), never a session's.

    Parameters
    ----------
    ceph_measures, arch_measures : DataFrame, optional
        Outputs of :func:`dentalkit.ceph.measure` and :func:`dentalkit.arch.measure`.
    groups : DataFrame
        ``patient_id`` and one group column (one row per patient).
    ceph, arch : sequence of str
        Lateral ceph measures and arch measures (each for the upper and lower arch) to
        model; arch measures in millimetres only.

    Returns
    -------
    dict of str to DataFrame
        ``growth_fixed``, ``growth_variance``, ``growth_models``, ``growth_bands``
        (fit and 95 % band per group, for :func:`dentalkit.plot.growth_lines`) and
        ``growth_data`` (the modelled rows with the group); empty when no patient has
        two sessions or the groups do not allow a model.
    """
    from dentalkit.stats import growth

    group_col = next(c for c in groups.columns if c != "patient_id")
    cols = ["patient_id", "timestamp", "session_time", "measure", "value", "unit"]
    parts = []
    if ceph_measures is not None and len(ceph_measures):
        lat = ceph_measures
        if "view" in lat.columns:
            lat = lat[lat["view"] == "lateral"]
        lat = lat[lat["measure"].astype(str).isin(list(ceph))]
        parts.append(lat.reindex(columns=cols).astype({"measure": "object"}))
    if arch_measures is not None and len(arch_measures):
        am = arch_measures[
            arch_measures["arch"].isin(["up", "lo"])
            & arch_measures["measure"].astype(str).isin(list(arch))
            & (arch_measures["unit"] == "mm")
        ]
        if "status" in am.columns:
            am = am[am["status"] == "ok"]
        am = am.assign(
            measure=am["measure"].astype(str) + np.where(am["arch"] == "up", " (upper)", " (lower)")
        )
        parts.append(am.reindex(columns=cols))
    parts = [p for p in parts if len(p)]
    if not parts:
        return {}
    data = pd.concat(parts, ignore_index=True)
    data = data.astype({"patient_id": "object", "timestamp": "object", "unit": "object"})
    sessions = data.groupby("patient_id")["timestamp"].nunique()
    if not (sessions >= 2).any():
        return {}
    groups = groups[["patient_id", group_col]]
    levels = list(pd.unique(groups[group_col].dropna()))
    if isinstance(groups[group_col].dtype, pd.CategoricalDtype):
        levels = [c for c in groups[group_col].cat.categories if c in levels]
    normal = [lv for lv in levels if str(lv) in ("I", "Class I")]
    if normal:  # Class I (the normal relation) is the reference of the comparisons
        order = normal + [lv for lv in levels if lv not in normal]
        # from plain values: recoding a categorical whose unused categories leave the new
        # order is deprecated in pandas (it would raise in a later release)
        values = groups[group_col].astype("object")
        groups = groups.assign(**{group_col: pd.Categorical(values, categories=order)})
    try:
        result = growth(data, group=group_col, patients=groups)
    except InputError as exc:
        log.warning("growth analysis skipped: %s", exc)
        return {}
    grouped = _merge_groups(data, groups)
    return {
        "growth_fixed": result.fixed,
        "growth_variance": result.variance,
        "growth_models": result.models,
        "growth_bands": result.bands().astype({"group": "object"}),
        "growth_data": grouped,
    }


def _merge_groups(table: pd.DataFrame, groups: pd.DataFrame) -> pd.DataFrame:
    left = table.assign(patient_id=table["patient_id"].astype("object"))
    right = groups.assign(patient_id=groups["patient_id"].astype("object"))
    return left.merge(right, on="patient_id", how="left")


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


@dataclass(frozen=True)
class FigureSpec:
    """One figure of a study's figure set, declared as data.

    Parameters
    ----------
    name : str
        File stem of the figure (``<name>.pdf``, ``<name>.png``) and its key in the
        result of :func:`make_figures`.
    plan : callable
        ``plan(inputs)`` → ``draw(ax)``, or ``None`` when the inputs hold nothing to show
        (e.g. no patient with two sessions for a superimposition).
    tables, analyses : tuple of str
        Tables (of :func:`dentalkit.convert.tables`) and analysis tables (of
        :func:`analyze`) the figure cannot be drawn without; it is skipped when any of
        them is missing.
    optional : tuple of str
        Analysis tables it reads when they are present.
    width : str
        ``"single"`` (85 mm) or ``"double"`` (180 mm) column, as :func:`dentalkit.plot.figure`.
    """

    name: str
    plan: Callable[[FigureInputs], Callable[[Any], Any] | None]
    tables: tuple[str, ...] = ()
    analyses: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    width: str = "single"


@dataclass(frozen=True)
class FigureInputs:
    """What a :class:`FigureSpec` plans from: the tables, the analyses, the calibration
    (mm per pixel by endpoint) and the images to draw under tracings (or ``None``)."""

    tables: Mapping[str, pd.DataFrame]
    analyses: Mapping[str, pd.DataFrame]
    mm_per_px: Mapping[str, float]
    image_for: Callable[[str, str, str], Any] | None = None

    def image(self, kind: str, pid: str, ts: str) -> Any:
        """The image of ``kind`` for one session, or ``None`` (blank canvas)."""
        return None if self.image_for is None else self.image_for(kind, pid, ts)


def _lateral_session(inputs: FigureInputs) -> tuple[pd.DataFrame, str, str] | None:
    """Lateral landmarks and the typical session (ANB closest to the median)."""
    lm = inputs.tables["landmarks"]
    if not len(lm):
        return None
    lateral = lm[lm["view"] == "lateral"]
    pid, ts = _typical_session(lateral, inputs.analyses.get("ceph_measures"))
    return lateral, pid, ts


def _plan_ceph_tracing(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    found = _lateral_session(inputs)
    if found is None:
        return None
    lateral, pid, ts = found
    return lambda ax: plot.ceph_tracing(
        lateral,
        (pid, ts),
        image=inputs.image("lateral_ceph", pid, ts),
        mm_per_px=inputs.mm_per_px.get("ceph_lateral_points"),
        measures=["SNA", "SNB", "ANB", "SN_MP", "U1_SN", "IMPA"],
        ax=ax,
    )


def _plan_ceph_superimposition(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    found = _lateral_session(inputs)
    if found is None:
        return None
    lateral, pid, _ = found
    sessions = lateral[lateral["patient_id"].astype(str) == pid]
    if sessions["timestamp"].nunique() < 2:
        return None
    # the whole lateral table: the patient is named by rank among all ("patient 3"), as
    # in the tracing
    return lambda ax: plot.ceph_superimposition(
        lateral, pid, mm_per_px=inputs.mm_per_px.get("ceph_lateral_points"), ax=ax
    )


def _plan_ceph_wiggle(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import ceph, plot
    from dentalkit.stats import one_row_per_unit

    measures = inputs.analyses["ceph_measures"]
    if not len(measures):
        return None
    # Most shipped norms lack a verified SD (docs/measures.md); the chart shows the
    # textbook SDs too and says so on its axis (so the warning is not repeated here).
    # z against the norm of each patient's sex and age: the covariates travel in
    # ceph_zscores (analyze(patients=...)); norms by sex or age need them.
    # One session per patient (the first): the chart's mean and t interval are over
    # patients, not sessions.
    scored = inputs.analyses.get("ceph_zscores", measures)
    scored = one_row_per_unit(scored[scored["view"] == "lateral"], "first")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DentalkitWarning)
        z = ceph.zscores(scored, include_unverified=True)
    if not z["z"].notna().any():
        return None

    def wiggle(ax: Any) -> None:
        plot.ceph_wiggle(z, ax=ax)
        ax.set_xlabel("z-score, first session\n(textbook SDs, not all verified)")

    return wiggle


def _plan_arch_forms(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    points, fits = inputs.tables["arch_points"], inputs.analyses["arch_fits"]
    if not len(points):
        return None
    up = points[points["arch"] == "up"]
    key = up.iloc[0][["patient_id", "timestamp"]].astype(str).tolist()
    return lambda ax: plot.arch_forms(up, fits, tuple(key), ax=ax)


def _plan_mean_arch_forms(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    mf = inputs.analyses["arch_mean_forms"]
    if (mf["unit"] == "mm").any() and (mf["unit"] == "px").any():
        # one arch calibrated, the other not: the panels share one scale, so only the
        # mean forms in mm are drawn (the px ones stay in the table)
        mf = mf[mf["unit"] == "mm"]
    if not len(mf):
        return None
    by = "skeletal_class" if "skeletal_class" in mf.columns else None
    return lambda ax: plot.mean_arch_forms(mf, by=by, ax=ax)


def _plan_tooth_map(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    teeth_table, tm = inputs.tables["teeth"], inputs.analyses["tooth_measures"]
    if not len(teeth_table):
        return None
    pano = teeth_table[teeth_table["source"] == "pano"]
    if not len(pano):
        return None
    key = pano.iloc[0][["patient_id", "timestamp"]].astype(str).tolist()
    return lambda ax: plot.tooth_map(
        pano, "area", tuple(key), values=tm, image=inputs.image("pano", *key), ax=ax
    )


def _plan_odontogram_missing(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    by_fdi = inputs.analyses["missing_by_fdi"]
    if not len(by_fdi):
        return None
    return lambda ax: plot.odontogram(by_fdi, ax=ax)


def _plan_finding_boxes(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    det = inputs.tables["findings"]
    if not len(det):
        return None
    clinical = det[det["source"] == "clinical"]
    if not len(clinical):
        return None
    key = clinical.iloc[0][["patient_id", "timestamp"]].astype(str).tolist()
    # crop: the view on the boxes (with a margin), so that their labels can be read
    return lambda ax: plot.finding_boxes(
        clinical, tuple(key), image=inputs.image("intraoral_frontal", *key), crop=True, ax=ax
    )


def _plan_growth_by_class(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    gdata, gbands = inputs.analyses["growth_data"], inputs.analyses["growth_bands"]
    if not len(gbands):
        return None
    gcol = next((c for c in gdata.columns if c.startswith("skeletal_class")), None)
    shown = "SNB" if (gbands["measure"] == "SNB").any() else str(gbands["measure"].iloc[0])
    return lambda ax: plot.growth_lines(gdata, gbands, shown, group=gcol, ax=ax)


def _plan_findings_prevalence(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    prev = inputs.analyses["findings_prevalence"]
    if not len(prev):
        return None
    return lambda ax: plot.prevalence_bars(prev, by="source", ax=ax)


#: The standard figure set, in the order :func:`make_figures` draws it.
FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec("ceph_tracing", _plan_ceph_tracing, ("landmarks",), (), ("ceph_measures",)),
    FigureSpec(
        "ceph_superimposition", _plan_ceph_superimposition, ("landmarks",), (), ("ceph_measures",)
    ),
    FigureSpec("ceph_wiggle", _plan_ceph_wiggle, (), ("ceph_measures",), ("ceph_zscores",)),
    FigureSpec("arch_forms", _plan_arch_forms, ("arch_points",), ("arch_fits",)),
    FigureSpec("mean_arch_forms", _plan_mean_arch_forms, (), ("arch_mean_forms",)),
    FigureSpec("tooth_map", _plan_tooth_map, ("teeth",), ("tooth_measures",), width="double"),
    FigureSpec("odontogram_missing", _plan_odontogram_missing, (), ("missing_by_fdi",)),
    FigureSpec("finding_boxes", _plan_finding_boxes, ("findings",)),
    FigureSpec("growth_by_class", _plan_growth_by_class, (), ("growth_data", "growth_bands")),
    FigureSpec("findings_prevalence", _plan_findings_prevalence, (), ("findings_prevalence",)),
)


def make_figures(
    tables: Mapping[str, pd.DataFrame],
    analyses: Mapping[str, pd.DataFrame],
    out: str | Path,
    *,
    mm_per_px: Calibration | None = None,
    image_for: Callable[[str, str, str], Any] | None = None,
    extra: Mapping[str, Callable[[Any], Any]] | None = None,
    dpi: int = 600,
    progress: bool = False,
    figures: Sequence[FigureSpec] = FIGURES,
) -> dict[str, list[Path]]:
    """Draw the standard figure set; return ``{figure name: [files]}``.

    Walks ``figures`` (default :data:`FIGURES`) in order: a figure whose required
    inputs are missing, or whose plan finds nothing to show, is skipped; one that fails
    while drawing is logged and skipped, so it does not cost the others.

    Parameters
    ----------
    tables, analyses : mappings of DataFrames
        Outputs of :func:`dentalkit.convert.tables` and :func:`analyze`.
    out : path
        Folder for the figures (PDF and PNG of each, 85 mm single-column width).
    mm_per_px : mapping, optional
        Calibration by endpoint name (used to label tracings in millimetres).
    image_for : callable, optional
        ``image_for(kind, patient_id, timestamp)`` → an image to draw under tracings,
        tooth maps and findings (``kind`` as in :data:`dentalkit.sandbox.render.IMAGE_KINDS`);
        ``None`` draws on blank canvases.
    extra : mapping, optional
        More figures: name → ``function(ax)`` drawing on a fresh single-column axes,
        drawn after ``figures``.
    dpi : int
        Resolution of the PNG files and of images embedded in the PDFs (300–1200;
        default 600, the usual requirement for combination artwork).
    progress : bool
        Show a tqdm bar on stderr that counts the figures as they are drawn, out of the
        number planned (each one takes about a second at 600 dpi); only when stderr is
        a terminal.
    figures : sequence of FigureSpec
        The figure set, declared as data (default :data:`FIGURES`; the demo adds its
        treatment-length figures, :data:`dentalkit.demo.DEMO_FIGURES`).
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from dentalkit import plot

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, list[Path]] = {}
    inputs = FigureInputs(tables, analyses, dict(mm_per_px or {}), image_for)
    # Plan every figure first: the bar's total is what will be drawn (the declared set,
    # less the figures whose inputs are missing or whose plan finds nothing to show).
    todo: list[tuple[str, Callable[[Any], Any], str]] = []
    for spec in figures:
        if any(tables.get(t) is None for t in spec.tables) or any(
            analyses.get(a) is None for a in spec.analyses
        ):
            continue
        fn = spec.plan(inputs)
        if fn is not None:
            todo.append((spec.name, fn, spec.width))
    todo += [(name, fn, "single") for name, fn in (extra or {}).items()]
    counter = bar(len(todo), "figures", "fig", enabled=progress)

    def draw(name: str, fn: Callable[[Any], Any], width: str) -> None:
        counter.set_postfix_str(name)
        try:
            with plot.style():
                fig = plot.figure(width)
                ax = fig.add_subplot()
                fn(ax)
                written[name] = plot.savefig(
                    fig, out / name, width=width, formats=("pdf", "png"), dpi=dpi
                )
                plt.close(fig)
        except Exception as exc:  # one bad figure must not cost the others
            plt.close("all")
            log.warning("figure %s was not drawn: %s", name, exc)
        counter.update(1)

    for name, fn, width in todo:
        draw(name, fn, width)
    counter.close()
    return written


def _typical_session(lateral: pd.DataFrame, measures: pd.DataFrame | None) -> tuple[str, str]:
    """The lateral session whose ANB is closest to the cohort median (first one otherwise)."""
    first = lateral.sort_values(["patient_id", "timestamp"]).iloc[0]
    choice = (str(first["patient_id"]), str(first["timestamp"]))
    if measures is None or not len(measures):
        return choice
    anb = measures[(measures["measure"].astype(str) == "ANB") & (measures["view"] == "lateral")]
    anb = anb.dropna(subset=["value"])
    if not len(anb):
        return choice
    best = anb.iloc[int((anb["value"] - anb["value"].median()).abs().to_numpy().argmin())]
    return str(best["patient_id"]), str(best["timestamp"])


def write_report(
    path: str | Path,
    *,
    title: str,
    intro: str,
    sections: list[tuple[str, str]],
    figures: Mapping[str, list[Path]],
) -> Path:
    """Write a Markdown report: an introduction, text sections and the figures (PNG links)."""
    path = Path(path)
    lines = [f"# {title}", "", intro, ""]
    for heading, body in sections:
        lines += [f"## {heading}", "", body, ""]
    if figures:
        lines += ["## Figures", ""]
        for name, files in figures.items():
            png = next((f for f in files if f.suffix == ".png"), files[0])
            pdf = next((f for f in files if f.suffix == ".pdf"), None)
            rel = png.relative_to(path.parent) if png.is_relative_to(path.parent) else png
            pdf_link = ""
            if pdf is not None:
                rel_pdf = pdf.relative_to(path.parent) if pdf.is_relative_to(path.parent) else pdf
                pdf_link = f" ([PDF]({rel_pdf.as_posix()}))"
            lines += [
                f"### {name.replace('_', ' ')}{pdf_link}",
                "",
                f"![{name}]({rel.as_posix()})",
                "",
            ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
