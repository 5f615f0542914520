"""The ``calibration`` table: the per-image scales the fetch kept from the manifest.

The fetch writes them to ``STORE/calibration.parquet`` (one row per manifest image with a
``mm_per_px``); :func:`dentalkit.convert.tables` checks and types them as the declared
``calibration`` table, beside the tables built from the responses. Pure: no I/O.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from dentalkit.convert import schemas
from dentalkit.convert._problems import Problems
from dentalkit.convert._values import printable
from dentalkit.endpoints import get_endpoint
from dentalkit.errors import InputError

_REQUIRED = ("patient_id", "timestamp", "endpoint", "image_url", "mm_per_px")
#: ``calibration_source`` of a row that gives none (a scale typed into the manifest).
DEFAULT_SOURCE = "manifest"


def convert(calibration: pd.DataFrame, problems: Problems) -> pd.DataFrame:
    """The declared ``calibration`` table from a table of per-image scales.

    Rows with a missing key, an endpoint that takes no image, or a ``mm_per_px`` that is
    not a finite number > 0 are problems (table ``calibration``; the row is left out, or
    ``errors="raise"`` raises naming it). A missing ``calibration_source`` is ``manifest``.
    """
    if not isinstance(calibration, pd.DataFrame):
        raise InputError(
            "calibration must be a DataFrame (e.g. dentalkit.fetch.read_calibration(store)), "
            f"got {type(calibration).__name__}"
        )
    missing = [c for c in _REQUIRED if c not in calibration.columns]
    if missing:
        raise InputError(
            f"the calibration table lacks column(s) {missing}; it needs {list(_REQUIRED)} "
            "and optionally calibration_source (docs/manifest.md)"
        )
    frame = calibration.reset_index(drop=True)
    source = (
        frame["calibration_source"].astype(object).where(frame["calibration_source"].notna())
        if "calibration_source" in frame.columns
        else pd.Series(None, index=frame.index, dtype=object)
    )
    keep = np.ones(len(frame), dtype=bool)
    names = []
    for i, rec in enumerate(frame[list(_REQUIRED)].itertuples(index=False, name=None)):
        pid, ts, ep, url, scale = rec
        why = _bad_row(pid, ts, ep, url, scale)
        if why is not None:
            field, reason = why
            value = {"patient_id": pid, "timestamp": ts, "endpoint": ep, "image_url": url}
            problems.calibration(i, pid, ts, ep, field, _shown(value.get(field, scale)), reason)
            keep[i] = False
            names.append(None)
            continue
        names.append(get_endpoint(ep).name)
    out = pd.DataFrame(
        {
            "patient_id": frame["patient_id"].astype(object)[keep],
            "timestamp": frame["timestamp"].astype(object)[keep],
            "endpoint": np.asarray(names, dtype=object)[keep] if len(names) else [],
            "image_url": frame["image_url"].astype(object)[keep],
            "mm_per_px": pd.to_numeric(frame["mm_per_px"][keep], errors="coerce"),
            "calibration_source": source[keep].fillna(DEFAULT_SOURCE),
        }
    ).reset_index(drop=True)
    return schemas.conform(out, "calibration")


def _bad_row(pid, ts, ep, url, scale) -> tuple[str, str] | None:
    """(field, reason) of what is wrong with one calibration row, or None."""
    for field, value in (("patient_id", pid), ("timestamp", ts), ("image_url", url)):
        if not isinstance(value, str) or not value:
            return field, f"{field} must be text, got {_shown(value)}"
    try:
        endpoint = get_endpoint(ep) if isinstance(ep, str) else None
    except KeyError:
        endpoint = None
    if endpoint is None or not endpoint.is_image:
        return "endpoint", "not the registry name of an endpoint that takes an image"
    if isinstance(scale, bool) or not isinstance(scale, int | float | np.number):
        return "mm_per_px", "mm_per_px must be a number (millimetres per pixel)"
    if not math.isfinite(float(scale)) or float(scale) <= 0:
        return "mm_per_px", "mm_per_px must be a finite number > 0 (millimetres per pixel)"
    return None


def _shown(value: object) -> str | None:
    if value is None:
        return None
    return printable(value) if isinstance(value, str) else printable(repr(value))
