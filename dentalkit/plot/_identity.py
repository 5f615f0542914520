"""Who and when a figure shows, in words a figure may print (private).

Figures never print a patient identifier or a raw timestamp unless asked: a patient is
"patient k" (k its rank among the table's patients, identifiers in natural order) and a
session is "session j" with its time from the patient's first session ("baseline",
"12 months"). ``identity="raw"`` prints the identifiers; a mapping gives each patient the
label a study chose (e.g. keyed pseudonyms of :func:`dentalkit.io.pseudonymize`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from dentalkit.errors import InputError

__all__ = [
    "IDENTITIES",
    "Identity",
    "check_identity",
    "patient_label",
    "pseudonyms",
    "session_label",
]

#: The values ``identity=`` takes besides a mapping: ordinal pseudonyms (default), the
#: identifiers and timestamps as stored, or nothing.
IDENTITIES = ("pseudonym", "raw", None)
Identity = str | Mapping[str, str] | None

DAYS_PER_MONTH = 365.25 / 12


def check_identity(identity: Any) -> None:
    """Refuse an ``identity=`` that is not one of :data:`IDENTITIES` or a mapping."""
    if identity in IDENTITIES or isinstance(identity, Mapping):
        return
    raise InputError(
        f"identity must be 'pseudonym', 'raw', None or a mapping {{patient_id: label}}, "
        f"got {identity!r}"
    )


def _natural(text: str) -> tuple:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", text))


def pseudonyms(patients: pd.DataFrame | Any) -> dict[str, str]:
    """``{patient_id: "patient k"}`` for a table's patients (or a list of identifiers).

    ``k`` is the rank of the identifier in natural order ("P2" before "P10"). Pass the
    result as ``identity=`` to every figure of a study so that a patient has one name in
    all of them, whichever subset of patients a figure's own table holds.

    >>> pseudonyms(["P10", "P2", "P2"])
    {'P2': 'patient 1', 'P10': 'patient 2'}
    """
    ids = patients["patient_id"] if isinstance(patients, pd.DataFrame) else pd.Series(patients)
    ordered = sorted(pd.unique(ids.astype(str)), key=_natural)
    return {pid: f"patient {k + 1}" for k, pid in enumerate(ordered)}


def patient_label(table: pd.DataFrame, patient_id: Any, identity: Identity = "pseudonym") -> str:
    """ "patient k" (rank among the table's patients), the identifier, or the mapped label."""
    check_identity(identity)
    pid = str(patient_id)
    if identity is None:
        return ""
    if identity == "raw":
        return pid
    if isinstance(identity, Mapping) and pid in identity:
        return str(identity[pid])
    return pseudonyms(table).get(pid, "patient")


def _times(rows: pd.DataFrame) -> pd.Series:
    """Session times as UTC datetimes (``session_time`` if present, else the timestamp)."""
    col = "session_time" if "session_time" in rows.columns else "timestamp"
    return pd.to_datetime(rows[col].astype(str), utc=True, errors="coerce", format="mixed")


def _elapsed(days: float) -> str:
    months = days / DAYS_PER_MONTH
    if months < 0.5:
        return f"{days:.0f} days" if days >= 1 else "baseline"
    if months < 24:
        return f"{months:.0f} months"
    return f"{months / 12:.1f} years"


def session_label(
    table: pd.DataFrame,
    patient_id: Any,
    timestamp: Any,
    identity: Identity = "pseudonym",
    *,
    with_patient: bool = True,
) -> str:
    """ "patient k, session j (12 months)", from the table's sessions of that patient.

    ``j`` is the session's rank among the patient's sessions in ``table`` (in time order);
    the time from the patient's first session is given in days, months or years, or
    "baseline". A timestamp that cannot be read as a time leaves it out.
    ``identity="raw"`` gives ``"<patient_id>, <timestamp>"``.
    """
    check_identity(identity)
    if identity is None:
        return ""
    if identity == "raw":
        return f"{patient_id}, {timestamp}" if with_patient else str(timestamp)
    mine = table[table["patient_id"].astype(str) == str(patient_id)]
    sessions = mine.drop_duplicates("timestamp").copy()
    sessions["_t"] = _times(sessions)
    sessions = sessions.sort_values(["_t", "timestamp"], kind="stable", na_position="last")
    stamps = sessions["timestamp"].astype(str).tolist()
    who = patient_label(table, patient_id, identity) if with_patient else ""
    if str(timestamp) not in stamps:
        return who
    j = stamps.index(str(timestamp))
    text = f"session {j + 1}"
    t = sessions["_t"].to_numpy()
    if not pd.isna(t[j]) and not pd.isna(t[0]):
        days = float((t[j] - t[0]) / np.timedelta64(1, "D"))
        text += f" ({_elapsed(days)})"
    return f"{who}, {text}" if who else text
