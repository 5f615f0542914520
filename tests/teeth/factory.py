"""Hand-built ``teeth`` tables for the tests (the converters are written elsewhere)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import shapely

DIGIT = {"i1": 1, "i2": 2, "c": 3, "p1": 4, "p2": 5, "m1": 6, "m2": 7, "m3": 8}
QUADRANT = {("rgt", "up"): 1, ("lft", "up"): 2, ("lft", "lo"): 3, ("rgt", "lo"): 4}


def tooth_row(
    tooth: str,
    geometry,
    *,
    patient_id: str = "p1",
    timestamp: str = "2024-01-01",
    source: str = "pano",
    missing: bool | None = None,
    **extra,
) -> dict:
    """One row of the teeth table for key ``tooth`` (``"m1_rgt_up"``)."""
    tooth_type, side, arch = tooth.split("_")
    digit = DIGIT.get(tooth_type)
    fdi = None if digit is None else QUADRANT[(side, arch)] * 10 + digit
    if missing is None:
        missing = geometry is None
    return {
        "patient_id": patient_id,
        "timestamp": timestamp,
        "session_time": pd.Timestamp(timestamp, tz="UTC"),
        "endpoint": {"pano": "pano_segmentation", "frontal": "frontal_segmentation"}.get(
            source, source + "_seg"
        ),
        "model_version": "1.0",
        "source": source,
        "tooth": tooth,
        "tooth_type": tooth_type,
        "side": side,
        "arch": arch,
        "fdi": fdi,
        "missing": missing,
        "geometry": geometry,
        "repaired": False,
        **extra,
    }


def teeth_table(rows: list[dict], categorical: bool = False) -> pd.DataFrame:
    """Build a teeth table with the contract's dtypes from :func:`tooth_row` dicts."""
    t = pd.DataFrame(rows)
    t["fdi"] = t["fdi"].astype("Int16")
    t["missing"] = t["missing"].astype(bool)
    if categorical:
        for c in (
            "patient_id",
            "timestamp",
            "endpoint",
            "source",
            "tooth",
            "tooth_type",
            "side",
            "arch",
        ):
            t[c] = t[c].astype("category")
    return t


def rect(cx: float, cy: float, along: float, across: float, angle_deg: float = 0.0):
    """Rectangle centred at (cx, cy): side ``along`` in direction ``angle_deg``."""
    a = np.deg2rad(angle_deg)
    u = np.array([np.cos(a), np.sin(a)]) * along / 2
    v = np.array([-np.sin(a), np.cos(a)]) * across / 2
    c = np.array([cx, cy])
    return shapely.Polygon([c - u - v, c + u - v, c + u + v, c - u + v])


def regular_polygon(n: int, radius: float, cx: float = 0.0, cy: float = 0.0, phase: float = 0.0):
    """Regular n-gon with circumradius ``radius``."""
    t = phase + 2 * np.pi * np.arange(n) / n
    return shapely.Polygon(np.c_[cx + radius * np.cos(t), cy + radius * np.sin(t)])


def one_row(table: pd.DataFrame, **where) -> pd.Series:
    """The single row of ``table`` whose columns equal ``where`` (fails unless exactly one)."""
    sel = np.ones(len(table), bool)
    for k, v in where.items():
        sel &= (table[k] == v).to_numpy()
    assert sel.sum() == 1, where
    return table.loc[sel].iloc[0]
