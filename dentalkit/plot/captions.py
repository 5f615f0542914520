"""Ready-to-paste figure captions: what is drawn, n (patients), units and the method.

:func:`caption` takes a figure's name (a function of :mod:`dentalkit.plot` or a figure of
the standard figure set) and **the same inputs as the figure function**, and returns the
caption of the figure those inputs draw: every mark explained, n counted in patients,
units and intervals spelled as the house style spells them (:mod:`dentalkit.plot.house`),
the patient and session named as the figure names them (never an identifier or a
timestamp unless ``identity="raw"``).

Examples
--------
>>> import pandas as pd
>>> by_fdi = pd.DataFrame(
...     {"fdi": [18, 28], "prevalence": [0.25, 0.5], "n_assessed": [4, 4], "n_affected": [1, 2]}
... )
>>> print(caption("odontogram_missing", by_fdi))  # doctest: +NORMALIZE_WHITESPACE
Share of patients missing each tooth (FDI numbering, ISO 3950), charted as a clinician
facing the patient reads it: the patient's right on the viewer's left, the upper arch on
top. Colour and numbers in the cells: per cent of the patients assessed; grey: not
assessed. Method: dentalkit.teeth.missing; the patient is the unit. n = 4 patients.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dentalkit.errors import InputError
from dentalkit.plot._common import select_session
from dentalkit.plot._identity import patient_label, session_label
from dentalkit.plot.house import MIN_N_BOX, ci_text, unit_text, variable_label

__all__ = ["FIGURE_NAMES", "caption"]

#: Names of the standard figure set → the figure function that draws it.
FIGURE_NAMES = {
    "ceph_tracing": "ceph_tracing",
    "ceph_superimposition": "ceph_superimposition",
    "ceph_wiggle": "ceph_wiggle",
    "arch_forms": "arch_forms",
    "mean_arch_forms": "mean_arch_forms",
    "tooth_map": "tooth_map",
    "odontogram": "odontogram",
    "odontogram_missing": "odontogram",
    "finding_boxes": "finding_boxes",
    "prevalence_bars": "prevalence_bars",
    "findings_prevalence": "prevalence_bars",
    "growth_lines": "growth_lines",
    "growth_by_class": "growth_lines",
    "tle_distribution": "tle_distribution",
    "tle_by_class": "tle_distribution",
    "tle_sensitivity": "tle_sensitivity",
    "tle_sensitivity_crowding": "tle_sensitivity",
    "tle_bland_altman": "tle_bland_altman",
    "tle_calibration": "tle_calibration",
    "qc_outliers": "qc_outliers",
}
_VIEW_OF_SOURCE = {
    "pano": "panoramic radiograph",
    "frontal": "intra-oral frontal photograph",
    "clinical": "intra-oral photograph",
    "occlusogram_upper": "upper dental-model photograph",
    "occlusogram_lower": "lower dental-model photograph",
}


def caption(
    figure: str | Callable[..., Any], *args: Any, note: str | None = None, **kwargs: Any
) -> str:
    """The caption of the figure ``figure(*args, **kwargs)`` would draw.

    Parameters
    ----------
    figure : str or callable
        A figure function of :mod:`dentalkit.plot` (``plot.ceph_wiggle``) or its name
        (``"ceph_wiggle"``), or a figure of the standard set (``"growth_by_class"``,
        ``"odontogram_missing"`` …; :data:`FIGURE_NAMES`).
    *args, **kwargs
        The figure function's inputs, exactly as passed to it (``ax`` and pure drawing
        options are ignored).
    note : str, optional
        A sentence added at the end (e.g. "Observed durations are simulated.").

    Returns
    -------
    str
        One paragraph: what is drawn and what each mark means, units, method, n in
        patients.

    Raises
    ------
    InputError
        For a figure without a caption here (the list is in the message).
    """
    name = _name(figure)
    key = FIGURE_NAMES.get(name)
    if key is None:
        raise InputError(
            f"no caption for figure {name!r}; captions exist for {sorted(FIGURE_NAMES)}"
        )
    kwargs.pop("ax", None)
    text = " ".join(_CAPTIONS[key](*args, **kwargs).split())
    return f"{text} {note.strip()}" if note else text


def _name(figure: str | Callable[..., Any]) -> str:
    if isinstance(figure, str):
        return figure
    from dentalkit.plot import arch, ceph, findings, growth, qc, teeth, tle

    functions = {
        ceph.tracing: "ceph_tracing",
        ceph.superimposition: "ceph_superimposition",
        ceph.wiggle: "ceph_wiggle",
        arch.forms: "arch_forms",
        arch.mean_forms: "mean_arch_forms",
        teeth.tooth_map: "tooth_map",
        teeth.odontogram: "odontogram",
        findings.boxes: "finding_boxes",
        findings.prevalence_bars: "prevalence_bars",
        growth.growth_lines: "growth_lines",
        tle.distribution: "tle_distribution",
        tle.sensitivity: "tle_sensitivity",
        tle.bland_altman: "tle_bland_altman",
        tle.calibration_plot: "tle_calibration",
        qc.qc_outliers: "qc_outliers",
    }
    try:
        return functions[figure]
    except (KeyError, TypeError):
        raise InputError(f"{figure!r} is not a figure function of dentalkit.plot") from None


def _patients(n: int) -> str:
    return f"n = {n} patient" + ("" if n == 1 else "s")


def _join(items: Sequence[str]) -> str:
    items = [str(i) for i in items]
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def _who(table: pd.DataFrame, rows: pd.DataFrame, identity: Any) -> str:
    if not {"patient_id", "timestamp"} <= set(rows.columns) or identity is None:
        return ""
    return session_label(table, rows["patient_id"].iloc[0], rows["timestamp"].iloc[0], identity)


def _length_unit(mm_per_px: Any) -> str:
    return f"mm ({mm_per_px:g} mm per pixel)" if mm_per_px else "pixels (no calibration)"


# --- cephalometrics -----------------------------------------------------------------


def _ceph_tracing(
    landmarks: pd.DataFrame,
    session: Any = None,
    *,
    view: str = "lateral",
    image: Any = None,
    measures: Sequence[str] | None = None,
    mm_per_px: float | None = None,
    contours: bool = True,
    identity: Any = "pseudonym",
    **_: Any,
) -> str:
    from dentalkit import ceph
    from dentalkit.plot._ceph_geometry import compact_label, view_rows
    from dentalkit.plot.ceph import DEFAULT_MEASURES

    every = view_rows(landmarks, view)
    rows = select_session(every, session, what="landmarks")
    who = _who(every, rows, identity)
    chosen = list(DEFAULT_MEASURES.get(view, ()) if measures is None else measures)
    catalog = ceph.load_measures().set_index("id")
    defined = [
        f"{compact_label(catalog.reset_index(), m)}, {catalog.loc[m, 'label']}"
        for m in chosen
        if m in catalog.index
    ]
    film = "lateral cephalogram" if view == "lateral" else "frontal (PA) cephalogram"
    return f"""
        Cephalometric tracing of one {film}{f" ({who})" if who else ""}{
        " over the radiograph" if image is not None else ""
    }. Points: landmarks located by
        the Dental Image Analysis Service; white boxes: landmark names.
        {
        "Thin lines: the landmark map's contours (centripetal Catmull–Rom curves through "
        "the contour points). "
        if contours
        else ""
    }{
        f"Coloured lines: the measures in the legend, with their values ({'; '.join(defined)}); "
        "arcs mark angles, dashed lines are construction lines (extensions to an intersection, "
        "perpendiculars). "
        if defined
        else ""
    }
        Angles in degrees (°), lengths in {_length_unit(mm_per_px)}. Measures as defined in
        dentalkit's measure catalogue (dentalkit.ceph.measure). {_patients(1)}.
    """


def _ceph_superimposition(
    landmarks: pd.DataFrame,
    patient_id: str | None = None,
    sessions: Sequence[str] | None = None,
    *,
    mm_per_px: float | None = None,
    scale: bool = False,
    arrows: Sequence[str] | None = None,
    identity: Any = "pseudonym",
    **kwargs: Any,
) -> str:
    from dentalkit.plot._ceph_geometry import landmark_text, view_rows
    from dentalkit.plot._ceph_superimposition import DEFAULT_ARROWS

    if "arrows" not in kwargs and arrows is None:
        arrows = DEFAULT_ARROWS
    every = view_rows(landmarks, "lateral")
    if patient_id is None:
        ids = every["patient_id"].astype(str).unique()
        patient_id = ids[0] if len(ids) == 1 else None
    if patient_id is None:
        raise InputError("the landmarks table holds several patients; give patient_id")
    mine = every[every["patient_id"].astype(str) == str(patient_id)]
    order = list(
        dict.fromkeys(["session_time" if "session_time" in mine else "timestamp", "timestamp"])
    )
    available = mine[order].drop_duplicates("timestamp").sort_values(order)["timestamp"]
    stamps = [str(s) for s in sessions] if sessions else available.astype(str).tolist()
    labels = [
        session_label(mine, patient_id, ts, identity, with_patient=False)
        for ts in (stamps if identity is not None else [])
    ]
    who = patient_label(every, patient_id, identity)
    moved = (
        f" Arrows: movement of {_join([landmark_text(a) for a in arrows])} from the first to "
        "the last session."
        if arrows
        else ""
    )
    return f"""
        Lateral cephalometric tracings of {who or "one patient"} at {len(stamps)} sessions
        {f"({_join(labels)}) " if labels else ""}superimposed on the S–N line registered at S
        (origin at S, x along S→N, y superior; Ghafari J, Engel FE, Laster LL. Am J Orthod
        Dentofacial Orthop 1987;91:403–413){
        ", each scaled to the first session's S–N length" if scale else ""
    }. Colours:
        sessions (points: landmarks; lines: the landmark map's contours); black line and +:
        S–N and S of the first session.{moved} Units: {_length_unit(mm_per_px)}.
        {_patients(1)}.
    """


def _ceph_wiggle(
    zscores: pd.DataFrame,
    *,
    measures: Sequence[str] | None = None,
    by: str | None = None,
    level: float = 0.95,
    session_cols: Sequence[str] = ("patient_id", "timestamp"),
    **_: Any,
) -> str:
    from dentalkit.plot._ceph_wiggle import MIN_N_INTERVAL

    z = zscores[np.isfinite(pd.to_numeric(zscores["z"], errors="coerce"))]
    if measures is not None:
        z = z[z["measure"].astype(str).isin(list(measures))]
    n = z["patient_id"].nunique() if "patient_id" in z.columns else len(z)
    sessions = z[[c for c in session_cols if c in z.columns]].drop_duplicates()
    per_patient = len(sessions) / max(n, 1)
    groups = (
        z[["norm_group", "norm_source"]].drop_duplicates().astype(str).agg(" (".join, axis=1) + ")"
        if {"norm_group", "norm_source"} <= set(z.columns)
        else pd.Series(dtype=str)
    )
    means = f"{variable_label(by).lower()} means" if by else "means"
    return f"""
        z-scores of {z["measure"].nunique()} cephalometric measures against published norms,
        {"one session per patient" if per_patient <= 1 else f"{len(sessions)} sessions"}:
        z = (value − norm mean) / norm SD. Grey lines: patients; points and bars: {means} with
        their {ci_text(level)} (t distribution; no interval for fewer than {MIN_N_INTERVAL}
        patients); shaded: ±1 and ±2 SD of the norm. Right-hand column: the norm (mean ± SD,
        in ° or mm) and, in brackets, the number of patients scored. Norms matched on sex and
        age where they give them: {"; ".join(groups) if len(groups) else "see the zscores table"}.
        {_patients(n)}.
    """


# --- arches ---------------------------------------------------------------------------


def _arch_forms(
    arch_points: pd.DataFrame,
    fits: pd.DataFrame | None = None,
    session: Any = None,
    *,
    arch: str | None = None,
    models: Sequence[str] | None = None,
    identity: Any = "pseudonym",
    **_: Any,
) -> str:
    from dentalkit.plot.arch import _ARCH_NAME, _MODEL_ORDER, _curves_from, _one_arch, _scale

    every = _one_arch(arch_points, arch)
    rows = select_session(
        every, session, what="arch_points", keys=("patient_id", "timestamp", "arch")
    )
    key = {c: rows[c].iloc[0] for c in ("patient_id", "timestamp", "arch") if c in rows}
    who = _who(every, rows, identity)
    arch_name = _ARCH_NAME.get(str(key.get("arch")), "one")
    drawn: list[str] = []
    k, unit = 1.0, "px"
    if fits is not None:
        curves, table = _curves_from(fits)
        have = set(curves["model"].astype(str))
        drawn = list(models) if models else [m for m in _MODEL_ORDER if m in have]
        k, unit = _scale(table, key)
    names = {
        "catenary": "catenary",
        "beta": "Braun's beta function",
        "poly4": "4th-order even polynomial",
        "poly6": "6th-order even polynomial",
        "parabola": "parabola",
    }
    units = f"mm ({k:g} mm per pixel)" if unit == "mm" else "pixels"
    return f"""
        Arch form of one {arch_name} dental-model photograph{f" ({who})" if who else ""}:
        points: the catenary points reported by the service{
        f"; lines: the fitted {_join([names.get(m, m) for m in drawn])} (dentalkit.arch.fit, "
        "orthogonal least squares), each with its own dash pattern, the root-mean-square "
        "distance of the points from the curve (RMSE) in the legend"
        if drawn
        else ""
    }. Axes in
        image coordinates, y down, in {units}. {_patients(1)}.
    """


def _mean_arch_forms(
    mean_form: pd.DataFrame, *, by: str | None = None, arch: str | None = None, band: bool = True,
    **_: Any,
) -> str:  # fmt: skip
    from dentalkit.plot.arch import _one_arch
    from dentalkit.plot.house import group_order

    table = mean_form if arch is None else _one_arch(mean_form, arch)
    count = next((c for c in ("n_units", "n_patients", "n") if c in table.columns), None)
    model = str(table["model"].iloc[0])
    unit = unit_text(table["unit"].iloc[0])
    level = float(table["level"].iloc[0]) if "level" in table.columns else 0.95
    if by is not None and count is not None:
        sizes = table.groupby(by, observed=True)[count].max()
        n_text = "; ".join(f"{g}: {int(sizes[g])}" for g in group_order(sizes.index, by))
        total = int(sizes.sum())
        n_line = f"n = {total} patients ({n_text})"
    elif count is not None:
        n_line = _patients(int(table[count].max()))
    else:
        n_line = ""
    arches = [a for a in ("up", "lo") if a in set(table["arch"].astype(str))]
    panels = "upper arch above, lower arch below, at the same scale" if len(arches) == 2 else (
        f"{'upper' if arches == ['up'] else 'lower'} arch"
    )  # fmt: skip
    return f"""
        Mean {model} arch forms{f" by {variable_label(by).lower()}" if by else ""} after
        alignment (dentalkit.arch.mean_form), {panels}: the incisal point at the origin, x
        towards the patient's left, y posterior, in {unit}. Lines: group means{
        f"; bands: pointwise {ci_text(level)} at fixed x" if band else ""
    }. {n_line}.
    """


# --- teeth and findings ---------------------------------------------------------------


def _tooth_map(
    teeth: pd.DataFrame,
    value: str | None = None,
    session: Any = None,
    *,
    values: pd.DataFrame | None = None,
    label: str | None = None,
    numbers: bool = True,
    image: Any = None,
    identity: Any = "pseudonym",
    **_: Any,
) -> str:
    from dentalkit.plot.teeth import _IMAGE_KEY, _value_column, _value_label

    rows = select_session(teeth, session, what="teeth", keys=_IMAGE_KEY)
    who = _who(teeth, rows, identity)
    source = str(rows["source"].iloc[0]) if "source" in rows.columns else ""
    film = _VIEW_OF_SOURCE.get(source, "image")
    coloured = ""
    if value is not None:
        _, unit = _value_column(rows.copy(), value, values)
        coloured = f" coloured by {label or _value_label(value, unit)} (colour bar)"
    return f"""
        Tooth outlines of one {film}{f" ({who})" if who else ""}{
        " over the image" if image is not None else ""
    }, as segmented by the service,{coloured}.
        {"Numbers: FDI tooth numbers (ISO 3950). " if numbers else ""}Hatched, dashed circles:
        missing teeth, drawn where their neighbours place them (a schematic, not a
        measurement). Axes in image pixels, y down. {_patients(1)}.
    """


def _odontogram(table: pd.DataFrame, value: str = "prevalence", **_: Any) -> str:
    n = (
        int(pd.to_numeric(table["n_assessed"], errors="coerce").max())
        if "n_assessed" in table.columns
        else None
    )
    what = (
        "Share of patients missing each tooth"
        if value == "prevalence"
        else f"{value.replace('_', ' ').capitalize()} of each tooth"
    )
    return f"""
        {what} (FDI numbering, ISO 3950), charted as a clinician facing the patient reads it:
        the patient's right on the viewer's left, the upper arch on top. Colour and numbers in
        the cells: {"per cent of the patients assessed" if value == "prevalence" else value};
        grey: not assessed. Method: dentalkit.teeth.missing; the patient is the unit.
        {_patients(n) + "." if n is not None else ""}
    """


def _finding_boxes(
    findings: pd.DataFrame,
    session: Any = None,
    *,
    image: Any = None,
    classes: Sequence[str] | None = None,
    identity: Any = "pseudonym",
    **_: Any,
) -> str:
    keys = [k for k in ("patient_id", "timestamp", "source", "image_name") if k in findings]
    rows = select_session(findings, session, what="findings", keys=keys)
    who = _who(findings, rows, identity)
    source = str(rows["source"].iloc[0]) if "source" in rows.columns else ""
    film = _VIEW_OF_SOURCE.get(source, "image")
    return f"""
        Findings detected by the service on one {film}{f" ({who})" if who else ""}{
        " over the image" if image is not None else ""
    }: boxes coloured by class, the class
        name at each box and the number of boxes per class in the legend. Axes in image
        pixels, y down. {_patients(1)}.
    """


def _prevalence_bars(
    table: pd.DataFrame,
    label: str | Sequence[str] = "class_name",
    *,
    by: str | None = None,
    value: str = "prevalence",
    ci: tuple[str, str] | None = ("ci_low", "ci_high"),
    counts: tuple[str, str] | None = ("n_units_with", "n_units"),
    **_: Any,
) -> str:
    from dentalkit.plot.findings import _interval

    n = None
    if counts and counts[1] in table.columns:
        n = int(pd.to_numeric(table[counts[1]], errors="coerce").max())
    method = (
        str(table["ci_method"].dropna().iloc[0]).split(";")[0]
        if "ci_method" in table.columns and table["ci_method"].notna().any()
        else ""
    )
    interval = _interval(table)
    return f"""
        Share of patients with at least one detection of each class{
        f", by {variable_label(by).lower()}" if by else ""
    } (per cent). Bars: prevalence{
        f"; whiskers: {interval}" + (f" ({method})" if method else "") if ci else ""
    }{"; at the bar ends: patients with the finding / patients assessed" if counts else ""}.
        Detections by the service; dentalkit.findings.prevalence, the patient as the unit.
        {_patients(n) + "." if n is not None else ""}
    """


# --- growth and treatment length ------------------------------------------------------


def _growth_lines(
    data: pd.DataFrame,
    bands: pd.DataFrame,
    measure: str,
    *,
    group: str | None = None,
    value: str = "value",
    unit: str = "patient_id",
    **_: Any,
) -> str:
    from dentalkit.plot.house import group_order

    rows = data[data["measure"].astype(str) == str(measure)].dropna(subset=[value])
    units = pd.unique(rows["unit"].dropna().astype(str)) if "unit" in rows.columns else []
    u = f" ({unit_text(units[0])})" if len(units) == 1 else ""
    if group:
        sizes = rows.groupby(group, observed=True)[unit].nunique()
        n_line = (
            f"n = {int(rows[unit].nunique())} patients ("
            + "; ".join(f"{g}: {int(sizes[g])}" for g in group_order(sizes.index, group))
            + ")"
        )
    else:
        n_line = _patients(int(rows[unit].nunique()))
    return f"""
        {measure}{u} against years since each patient's first session{
        f", by {variable_label(group).lower()}" if group else ""
    }. Thin lines: patients (their
        sessions joined); thick lines: the population-average fit of a linear mixed-effects
        model with a random intercept and slope per patient (dentalkit.stats.growth; Laird &
        Ware 1982); bands: pointwise {ci_text(0.95)} of the fit. {n_line}.
    """


def _tle_distribution(
    estimates: pd.DataFrame, by: str | None = None, *, value: str | None = None, **_: Any
) -> str:
    from dentalkit.plot.house import group_order
    from dentalkit.tle.stats import PREDICTED

    value = value or PREDICTED
    table = estimates[estimates[value].notna()]
    if by:
        sizes = table.groupby(by, observed=True).size()
        levels = [g for g in group_order(sizes.index, by) if sizes[g] > 0]
        n_line = (
            f"n = {len(table)} patients (" + "; ".join(f"{g}: {sizes[g]}" for g in levels) + ")"
        )
        small = [g for g in levels if sizes[g] < MIN_N_BOX]
    else:
        n_line, small = _patients(len(table)), ([] if len(table) >= MIN_N_BOX else ["all"])
    return f"""
        Predicted treatment length (months) from the service's GET /tle{
        f", by {variable_label(by).lower()}" if by else ""
    }. Points: patients; boxes (groups of
        at least {MIN_N_BOX} patients): median, quartiles and whiskers to the furthest value
        within 1.5 times the interquartile range (Tukey 1977); diamonds: mean with its
        {ci_text(0.95, "BCa bootstrap")} (dentalkit.tle.summarize).{
        f" Groups of fewer than {MIN_N_BOX} patients ({_join(small)}) are drawn as points only."
        if small
        else ""
    } {n_line}.
    """


def _tle_sensitivity(curves: pd.DataFrame | Sequence[pd.DataFrame], **_: Any) -> str:
    parts = list(curves) if isinstance(curves, list | tuple) else [curves]
    texts, n = [], 0
    for c in parts:
        for column, one in c.groupby(c["column"].astype(str), sort=False):
            mean = one[one["curve"].astype(str) == "mean"]
            values = [str(v) for v in mean["value"]]
            texts.append(f"{variable_label(column).lower()} ({_join(values)})")
            if "n_patients" in mean.columns and mean["n_patients"].notna().any():
                n = max(n, int(mean["n_patients"].max()))
    return f"""
        Predicted treatment length (months) as {_join(texts)} varies, the other inputs held at
        each patient's own values (partial dependence; Friedman JH. Ann Stat 2001;29:1189–1232):
        grey lines: patients; blue: the mean over the patients at each value.
        {_patients(n) + "." if n else ""}
    """


def _tle_pairs(estimates: Any, observed_months: Any, predicted: str | None) -> int:
    from dentalkit.tle.stats import PREDICTED, paired_months

    pred, obs = paired_months(estimates, observed_months, predicted or PREDICTED)
    return int(np.sum(np.isfinite(pred) & np.isfinite(obs)))


def _tle_bland_altman(
    estimates: Any,
    observed_months: Any,
    *,
    predicted: str | None = None,
    confidence_level: float = 0.95,
    loa_z: float = 1.96,
    **_: Any,
) -> str:
    n = _tle_pairs(estimates, observed_months, predicted)
    return f"""
        Bland–Altman plot of predicted against observed treatment length: predicted − observed
        (months) against their mean, one point per patient. Solid line: bias (mean
        difference); dashed lines: limits of agreement, bias ± {loa_z:g} SD; shaded: the
        {ci_text(confidence_level)} of each line; dotted: zero (Bland JM, Altman DG. Stat
        Methods Med Res 1999;8:135–160; dentalkit.tle.calibration). {_patients(n)}.
    """


def _tle_calibration(
    estimates: Any, observed_months: Any, *, predicted: str | None = None, **_: Any
) -> str:
    n = _tle_pairs(estimates, observed_months, predicted)
    return f"""
        Observed against predicted treatment length (months), one point per patient. Dashed:
        identity (perfect calibration); line: calibration line observed = a + b × predicted
        (ordinary least squares, dentalkit.tle.calibration). {_patients(n)}.
    """


def _qc_outliers(qc: pd.DataFrame, *, view: str = "lateral", **_: Any) -> str:
    rows = qc[(qc["view"].astype(str) == view) & qc["procrustes_distance"].notna()]
    flagged = int(rows["flagged"].astype(bool).sum())
    patients = rows["patient_id"].nunique() if "patient_id" in rows.columns else None
    who = f" of {int(patients)} patients" if patients is not None else ""
    return f"""
        Quality control of the AI's {view} cephalometric landmarks: each session's Procrustes
        distance from the cohort's mean shape after generalised Procrustes superimposition
        (configurations centred, scaled to unit centroid size and rotated; Gower 1975, Rohlf &
        Slice 1990; dentalkit.qc.landmarks), sessions ordered by distance, largest first, as
        geomorph's plotOutliers. Vermillion: sessions flagged by the quality control (cohort
        shape model or plausible-range rules); grey: passed. Solid line: median distance;
        dashed: upper fence, third quartile + 1.5 times the interquartile range. Distances
        have no unit (shapes at unit centroid size). n = {len(rows)} sessions{who};
        {flagged} flagged.
    """


_CAPTIONS: dict[str, Callable[..., str]] = {
    "ceph_tracing": _ceph_tracing,
    "ceph_superimposition": _ceph_superimposition,
    "ceph_wiggle": _ceph_wiggle,
    "arch_forms": _arch_forms,
    "mean_arch_forms": _mean_arch_forms,
    "tooth_map": _tooth_map,
    "odontogram": _odontogram,
    "finding_boxes": _finding_boxes,
    "prevalence_bars": _prevalence_bars,
    "growth_lines": _growth_lines,
    "tle_distribution": _tle_distribution,
    "tle_sensitivity": _tle_sensitivity,
    "tle_bland_altman": _tle_bland_altman,
    "tle_calibration": _tle_calibration,
    "qc_outliers": _qc_outliers,
}
