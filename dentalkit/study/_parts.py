"""Analyses run in parts by unit: calibrated rows in mm, the others in pixels.

The analysis functions take one unit per call (``dentalkit.arch`` refuses a calibration
table without a value for some arch; a ``mm_per_px`` column with NaN would make every
length NaN). So the study measures the rows of calibrated images and the rows of
uncalibrated ones apart and joins the results (``unit`` says which), mapping the rows of
each part's problems back to the positions of the whole table. The scale of every row
comes from the one calibration policy (:class:`dentalkit.study.calibration.Calibration`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from dentalkit.errors import PROBLEM_COLUMNS, empty_problems, problems_frame
from dentalkit.study.calibration import Calibration


def in_whole(positions: pd.Series, rows: np.ndarray) -> pd.Series:
    """Problem ``row`` positions in an analysed part, as positions in the whole table
    (``rows[i]`` is the whole table's position of the part's row ``i``; null stays null)."""
    return pd.Series(
        pd.array([None if pd.isna(r) else int(rows[int(r)]) for r in positions], dtype="Int64"),
        index=positions.index,
    )


def concat_parts(results: Sequence[pd.DataFrame]) -> pd.DataFrame:
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


def measure_scaled(
    measure: Callable[..., tuple[pd.DataFrame, pd.DataFrame]],
    table: pd.DataFrame,
    calibration: Calibration,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``measure(part, mm_per_px=…, errors="collect")`` in mm where the image has a scale
    (its own or its endpoint's) and in pixels where it has none (as the module docstring
    promises: a ``mm_per_px`` column with NaN would make every length NaN instead).

    Returns the results of both parts, one after the other, and their problems with
    ``row`` as the 0-based position in ``table``.
    """
    scaled = calibration.with_scale(table)
    has = scaled["mm_per_px"].notna().to_numpy(dtype=bool)
    if has.all() or not has.any():
        return measure(scaled, mm_per_px="mm_per_px" if has.any() else None, errors="collect")
    parts = [
        (np.flatnonzero(mask), {"mm_per_px": scale})
        for mask, scale in ((has, "mm_per_px"), (~has, None))
    ]
    return _measure_parts(measure, scaled, parts, errors="collect")


def _measure_parts(
    measure: Callable[..., tuple[pd.DataFrame, pd.DataFrame]],
    table: pd.DataFrame,
    parts: Sequence[tuple[np.ndarray, Mapping[str, Any]]],
    **options: Any,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """``measure`` on each part of ``table`` (its positions, its own options): the results
    one after the other, and their problems with ``row`` as the position in ``table``."""
    results, problems = [], []
    for rows, own in parts:
        result, found = measure(table.iloc[rows].reset_index(drop=True), **own, **options)
        results.append(result)
        if len(found):
            found = problems_frame(found)
            found["row"] = in_whole(found["row"], rows)
            problems.append(found)
    out = concat_parts(results)
    return out, (pd.concat(problems, ignore_index=True) if problems else empty_problems())


#: Patients per batch of :func:`by_patients` (about 160 tooth outlines each: 80,000 rows).
BATCH_PATIENTS = 500


def by_patients(
    measure: Callable[..., tuple[pd.DataFrame, pd.DataFrame]], patients: int | None = None
) -> Callable[..., tuple[pd.DataFrame, pd.DataFrame]]:
    """``measure`` run on batches of ``patients`` whole patients, joined in the table's order.

    For measures that look at one patient's rows at a time (each tooth outline within its
    image: :func:`dentalkit.teeth.measure`), so that their temporaries (coordinate arrays,
    rotated rectangles of every outline) hold one batch instead of the cohort: the
    results are the same rows with the same values and dtypes as one call on the whole
    table; the problem rows are the same, each batch's after the previous one's, with
    ``row`` as the position in the whole table.

    Parameters
    ----------
    measure : callable
        ``measure(table, **options)`` → ``(result, problems)``: one result row per table
        row, in table order (``errors="collect"``).
    patients : int, optional
        Patients per batch (default :data:`BATCH_PATIENTS`, read at each call).
    """

    def batched(table: pd.DataFrame, **options: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
        size = BATCH_PATIENTS if patients is None else patients
        codes, _ = pd.factorize(table["patient_id"], use_na_sentinel=False)
        if len(codes) == 0 or codes.max() < size:
            return measure(table, **options)
        batch = codes // size
        where = [np.flatnonzero(batch == b) for b in range(int(batch.max()) + 1)]
        out, problems = _measure_parts(measure, table, [(rows, {}) for rows in where], **options)
        positions = np.concatenate(where)
        if (np.diff(positions) < 0).any():  # a patient's rows apart: back to table order
            out = out.iloc[np.argsort(positions, kind="stable")].reset_index(drop=True)
        return out, problems

    return batched


def arch_scale(table: pd.DataFrame, calibration: Calibration) -> pd.DataFrame | None:
    """Per-arch calibration table (session key, arch, mm_per_px) for ``dentalkit.arch``."""
    scaled = calibration.with_scale(table)
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
    without a value for some arch is refused there), so the study measures the two
    parts apart, as ``measure_scaled`` does for ceph and teeth."""
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


def fit_arches(
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
    out = concat_parts(fits)
    out.attrs["problems"] = tuple(sorted(records, key=lambda r: r["row"]))
    return out


def measure_arches(
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
    out = concat_parts(results)
    mixed = _mixed_differences(out)
    if len(mixed):
        out = concat_parts([out, mixed])
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


def mean_forms(
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
    out = kept[0] if len(kept) == 1 else concat_parts(kept)
    out.attrs.pop("problems", None)
    found = pd.DataFrame.from_records(records, columns=[*PROBLEM_COLUMNS, "arch"])
    return out, problems_frame(found, severity="error")
