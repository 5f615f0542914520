"""Helpers for the converter tests: spec-shaped fixtures and responses tables."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pandas as pd

FIXTURES = Path(__file__).parent / "fixtures"
PID = "P001"
TS = "2024-03-01T09:30:00Z"
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
