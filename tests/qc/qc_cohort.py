"""Small sandbox cohorts for the qc tests: answers built in-process (no HTTP), converted by
``dentalkit.convert`` as a study would, with the injected-error records as the truth."""

from __future__ import annotations

from functools import cache

import orjson
import pandas as pd

from dentalkit import convert
from dentalkit.sandbox.simulate import respond_with_errors

TS = "2024-03-01"


def request(pid: str, ts: str = TS) -> dict:
    return {"PatientID": pid, "TimeStamp": ts, "ImageName": f"https://img.example/{pid}/{ts}.png"}


def responses(
    endpoint: str, patients: list[str], *, mode: str = "off", seed: int = 0, ts: str = TS
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Responses table (endpoint, patient_id, timestamp, body) and the error records."""
    rows, records = [], []
    for pid in patients:
        body, rec = respond_with_errors(
            endpoint, request(pid, ts), ai_errors=mode, ai_errors_seed=seed
        )
        rows.append((endpoint, pid, ts, orjson.dumps(body).decode()))
        records += [{"patient_id": pid, "timestamp": ts, **r} for r in rec]
    return (
        pd.DataFrame(rows, columns=["endpoint", "patient_id", "timestamp", "body"]),
        pd.DataFrame(records),
    )


@cache
def lateral(n: int = 60, prefix: str = "QCT") -> pd.DataFrame:
    """The landmarks table of n patients' lateral cephalograms (noise on, no AI errors)."""
    resp, _ = responses("ceph_lateral_points", [f"{prefix}-{i:03d}" for i in range(n)])
    return convert.landmarks(resp)


def move(table: pd.DataFrame, pid: str, name: str, dx: float, dy: float) -> pd.DataFrame:
    """A copy of ``table`` with one landmark of one patient moved by (dx, dy) px."""
    out = table.copy()
    hit = (out["patient_id"].astype(str) == pid) & (out["name"].astype(str) == name)
    assert hit.sum() == 1
    out.loc[hit, "x"] += dx
    out.loc[hit, "y"] += dy
    return out
