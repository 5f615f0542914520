"""Pixel → millimetre calibration of measurement tables (private; teeth, findings, ceph).

Millimetres appear only after an explicit calibration, never guessed
(docs/data-contract.md). :func:`resolve_mm_per_px` turns every accepted form
of ``mm_per_px`` into one float per row:

- ``None`` — no calibration; results stay in pixels (all NaN here).
- a number — one scale for every row.
- a column name (``str``) — the table's own per-row column.
- a mapping ``{source: scale}`` — one scale per ``source``
  (``{"pano": 0.1, "occlusogram_upper": 0.05}``).
- a DataFrame with a ``mm_per_px`` column and one or more key columns that
  the table also has (``patient_id``, ``timestamp``, ``source`` …) — one
  scale per key, e.g. per session and source; or the same as a Series whose
  (Multi)Index is named by those key columns (as ``dentalkit.ceph`` takes it).

Every scale must be finite and > 0; rows that need one (``needed``) and get
none are reported, never left in pixels among millimetres.
"""

from __future__ import annotations

from collections.abc import Mapping
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd

from dentalkit.errors import InputError
from dentalkit.stats._tables import combine_problems, empty_problems, problem_rows

MmPerPx = float | str | Mapping[str, float] | pd.DataFrame | None


def resolve_mm_per_px(
    table: pd.DataFrame, mm_per_px: Any, needed: np.ndarray, name: str
) -> tuple[np.ndarray, pd.DataFrame]:
    """Return ``(scale per row, problems)``; the scale is NaN where uncalibrated.

    Parameters
    ----------
    table : DataFrame
        The table being measured.
    mm_per_px : see module docstring
        Calibration in millimetres per pixel.
    needed : bool array
        Rows that will carry a measurement and therefore need a scale.
    name : str
        Table name used in messages.
    """
    n = len(table)
    if mm_per_px is None:
        return np.full(n, np.nan), empty_problems()
    if isinstance(mm_per_px, bool):
        raise InputError(
            "mm_per_px must be a number, a column name, a mapping or a table, not a bool"
        )
    if isinstance(mm_per_px, Real):
        scale = np.full(n, float(mm_per_px))
        _check_scalar(float(mm_per_px))
    elif isinstance(mm_per_px, str):
        if mm_per_px not in table.columns:
            raise InputError(
                f"mm_per_px={mm_per_px!r} names no column of {name}; columns: {list(table.columns)}"
            )
        scale = pd.to_numeric(table[mm_per_px], errors="coerce").to_numpy(dtype=float)
    elif isinstance(mm_per_px, pd.DataFrame):
        scale = _from_frame(table, mm_per_px, name)
    elif isinstance(mm_per_px, pd.Series):
        if any(n is None for n in mm_per_px.index.names):
            raise InputError(
                "a mm_per_px Series must be indexed by session columns or other key "
                "columns, with a named index (e.g. a (patient_id, timestamp, source) "
                "MultiIndex)"
            )
        scale = _from_frame(table, mm_per_px.rename("mm_per_px").reset_index(), name)
    elif isinstance(mm_per_px, Mapping):
        if "source" not in table.columns:
            raise InputError(
                f"a mapping mm_per_px is keyed by source, but {name} has no source column"
            )
        for key, value in mm_per_px.items():
            _check_scalar(value, f"mm_per_px[{key!r}]")
        lookup = {str(k): float(v) for k, v in mm_per_px.items()}
        scale = table["source"].astype("object").map(lookup).to_numpy(dtype=float)
    else:
        raise InputError(
            f"mm_per_px of type {type(mm_per_px).__name__} is not understood; give a number, "
            "a column name, a {source: scale} mapping, a table with a mm_per_px column or a "
            "Series indexed by key columns"
        )
    bad_value = np.isfinite(scale) & (scale <= 0) | np.isinf(scale)
    uncovered = needed & ~np.isfinite(scale) & ~np.isinf(scale)
    problems = combine_problems(
        [
            problem_rows(
                table, needed & bad_value, name, "mm_per_px", "mm_per_px must be finite and > 0"
            ),
            problem_rows(
                table,
                uncovered,
                name,
                "mm_per_px",
                "no calibration (mm_per_px) for this row; cover every measured row or measure in pixels",
            ),
        ]
    )
    scale = np.where(bad_value, np.nan, scale)
    return scale, problems


def _check_scalar(value: Any, what: str = "mm_per_px") -> None:
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"{what}={value!r} is not a number") from None
    if not np.isfinite(v) or v <= 0:
        raise InputError(
            f"{what}={value!r} is not a positive number: give millimetres per pixel, finite and > 0"
        )


def _from_frame(table: pd.DataFrame, frame: pd.DataFrame, name: str) -> np.ndarray:
    if "mm_per_px" not in frame.columns:
        raise InputError("a mm_per_px table needs a 'mm_per_px' column")
    keys = [c for c in frame.columns if c != "mm_per_px"]
    if not keys:
        raise InputError("a mm_per_px table needs key columns (e.g. patient_id, timestamp, source)")
    absent = [k for k in keys if k not in table.columns]
    if absent:
        raise InputError(
            f"mm_per_px table keys {absent} are not columns of {name}; "
            f"use key columns that {name} has ({list(table.columns)})"
        )
    dup = frame.duplicated(keys, keep=False)
    if dup.any():
        first = frame.loc[dup, keys].head(3).to_dict("records")
        raise InputError(f"mm_per_px table has several rows for the same key, e.g. {first}")
    left = table[keys].astype("object").reset_index(drop=True)
    right = frame[[*keys, "mm_per_px"]].astype({k: "object" for k in keys})
    merged = left.merge(right, on=keys, how="left", validate="many_to_one")
    return pd.to_numeric(merged["mm_per_px"], errors="coerce").to_numpy(dtype=float)
