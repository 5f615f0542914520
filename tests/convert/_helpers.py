"""Helpers for the converter tests: spec-shaped fixtures and responses tables."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd

FIXTURES = Path(__file__).parent / "fixtures"
PID = "P001"
TS = "2024-03-01T09:30:00Z"
# ISO 3950, written out by hand: quadrant 1 upper right, 2 upper left, 3 lower left,
# 4 lower right; i1=1, i2=2, c=3, p1=4, p2=5, m1=6, m2=7, m3=8.
FDI_32 = {
    "i1_rgt_up": 11, "i2_rgt_up": 12, "c_rgt_up": 13, "p1_rgt_up": 14,
    "p2_rgt_up": 15, "m1_rgt_up": 16, "m2_rgt_up": 17, "m3_rgt_up": 18,
    "i1_lft_up": 21, "i2_lft_up": 22, "c_lft_up": 23, "p1_lft_up": 24,
    "p2_lft_up": 25, "m1_lft_up": 26, "m2_lft_up": 27, "m3_lft_up": 28,
    "i1_lft_lo": 31, "i2_lft_lo": 32, "c_lft_lo": 33, "p1_lft_lo": 34,
    "p2_lft_lo": 35, "m1_lft_lo": 36, "m2_lft_lo": 37, "m3_lft_lo": 38,
    "i1_rgt_lo": 41, "i2_rgt_lo": 42, "c_rgt_lo": 43, "p1_rgt_lo": 44,
    "p2_rgt_lo": 45, "m1_rgt_lo": 46, "m2_rgt_lo": 47, "m3_rgt_lo": 48,
}  # fmt: skip

#: generated responses and corruptions of the property tests (reported by conftest)
COUNTS = {"responses": 0, "corruptions": 0}
TLE_OPTIONS = {
    f"p{i:02d}": str(v) for i, v in enumerate([14, "F", 2, 1, 0, 4.5, 3, 0, 0, 0, 37], 1)
}


def load(name: str) -> dict:
    """A fixture body (a fresh copy: tests may corrupt it)."""
    return copy.deepcopy(json.loads((FIXTURES / f"{name}.json").read_text()))


def row(
    endpoint: str,
    body: object,
    patient_id: str | None = PID,
    timestamp: str | None = TS,
    **extra: object,
) -> dict:
    """One row of a responses table; dict bodies are serialised as JSON text."""
    if isinstance(body, dict):
        body = json.dumps(body)
    return {
        "endpoint": endpoint,
        "patient_id": patient_id,
        "timestamp": timestamp,
        "body": body,
    } | extra


def frame(*rows: dict) -> pd.DataFrame:
    """A responses table from rows (columns as the data contract names them)."""
    df = pd.DataFrame(list(rows))
    for col in ("endpoint", "patient_id", "timestamp", "body"):
        if col not in df:
            df[col] = None
    return df


def tle_row(body: dict | None = None, options: dict | None = None, **kw: object) -> dict:
    body = body if body is not None else load("tle")
    opts = TLE_OPTIONS if options is None else options
    return row(
        "tle",
        body,
        patient_id=kw.pop("patient_id", None),
        timestamp=kw.pop("timestamp", None),
        options=json.dumps(opts),
        **kw,
    )


def all_endpoints_rows() -> list[dict]:
    """One spec-shaped response per endpoint, endpoints named by registry name."""
    from dentalkit.endpoints import ENDPOINTS

    rows = [row(name, load(name)) for name in ENDPOINTS if name != "tle"]
    rows.append(tle_row())
    return rows
