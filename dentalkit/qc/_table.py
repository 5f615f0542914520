"""The columns every quality-control table shares, built in one place.

Every ``qc`` function returns one row per checked item with, in this order: ``check``
(which function), the item's key columns (``patient_id``, ``timestamp`` …), ``item`` (what
was checked, in words), ``flagged``, ``score``, ``threshold`` (``flagged`` ⇔ ``score ≥
threshold``), ``reason`` (why it is flagged; null when it is not), ``method`` (the cohort
model, single-session rules, both, or not checked) and ``method_reason`` (why that method),
then the check's own columns. Declared in ``dentalkit/data/columns.csv`` (tables
``qc_landmarks`` … and ``qc``, their concatenation).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dentalkit.errors import InputError

__all__ = [
    "CHECKS",
    "COMMON_COLUMNS",
    "MATCH_COLUMNS",
    "METHODS",
    "checked_input",
    "key_columns",
    "no_lists",
    "qc_frame",
    "tally",
]

#: The checks (one per qc function), in the order of a combined ``qc`` table.
CHECKS = ("landmarks", "teeth", "arch_points", "findings", "tle_inputs")
#: Values of ``method``.
METHODS = (
    "cohort model",
    "single-session rules",
    "cohort model and single-session rules",
    "not checked",
)
COMMON_COLUMNS = (
    "check",
    "patient_id",
    "timestamp",
    "item",
    "flagged",
    "score",
    "threshold",
    "reason",
    "failed_checks",
    "method",
    "method_reason",
)
#: Per check: the columns that name an item in the tables it applies to (required, then
#: optional ones used when the table has them; see :func:`dentalkit.qc.apply`).
MATCH_COLUMNS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "landmarks": (("patient_id", "timestamp"), ("view",)),
    "teeth": (("patient_id", "timestamp", "source", "tooth"), ()),
    "arch_points": (("patient_id", "timestamp", "arch"), ()),
    "findings": (
        ("patient_id", "timestamp", "source", "class_name", "x0", "y0", "x1", "y1"),
        (),
    ),
    "tle_inputs": (("patient_id",), ("timestamp",)),
}


def no_lists(n: int) -> np.ndarray:
    """A list column of ``n`` rows with no list yet: null means none (a list is set where
    there is something to list; a Python list per row would cost most of the time of a
    100,000-session check)."""
    return np.full(n, None, dtype=object)


def checked_input(table: object, required: Sequence[str], what: str) -> pd.DataFrame:
    """``table`` with a fresh index, or an InputError naming what is not right with it."""
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"{what} must be a pandas DataFrame, got {type(table).__name__}")
    absent = [c for c in required if c not in table.columns]
    if absent:
        raise InputError(f"{what} table lacks column(s) {absent}")
    return table.reset_index(drop=True)


def key_columns(table: pd.DataFrame) -> pd.DataFrame:
    """The session key columns of ``table`` that it has, for a qc table's keys."""
    return table[[c for c in ("patient_id", "timestamp", "session_time", "endpoint") if c in table]]


def tally(
    fails: list[list[str]], notes: list[list[str]]
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per item: the number of rules failed (the score), the failed rules (null when none)
    and the reason (the notes joined; null when none)."""
    score = np.array([len(f) for f in fails], dtype=float)
    failed = no_lists(len(fails))
    for i in np.flatnonzero(score):
        failed[i] = fails[i]
    reason = np.array(["; ".join(x) if x else None for x in notes], dtype=object)
    return score, failed, reason


def _category(values: Sequence[str] | np.ndarray | str, n: int) -> pd.Categorical:
    """A categorical of ``n`` values (a scalar is repeated without a per-row array)."""
    if isinstance(values, str):
        return (
            pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), [values])
            if n
            else (pd.Categorical([], categories=[values]))
        )
    return pd.Categorical(np.asarray(values, dtype=object))


def qc_frame(
    check: str,
    keys: pd.DataFrame,
    *,
    item: Sequence[str] | np.ndarray | str,
    flagged: np.ndarray,
    score: np.ndarray,
    threshold: np.ndarray | float,
    reason: Sequence[str | None] | np.ndarray,
    failed_checks: np.ndarray,
    method: Sequence[str] | np.ndarray | str,
    method_reason: Sequence[str] | np.ndarray | str,
    extra: dict[str, object] | None = None,
) -> pd.DataFrame:
    """One qc table: the common columns (typed) around the item's key columns.

    ``keys`` holds the key columns (``patient_id``, ``timestamp``, …) in the output order,
    one row per item; scalars are broadcast.
    """
    n = len(keys)
    out = keys.reset_index(drop=True).copy()
    for col in out.columns:
        if col in ("patient_id", "timestamp") and not isinstance(
            out[col].dtype, pd.CategoricalDtype
        ):
            out[col] = out[col].astype("category")
    out.insert(
        0,
        "check",
        pd.Categorical.from_codes(np.full(n, CHECKS.index(check), np.int8), list(CHECKS)),
    )
    out["item"] = _category(item, n)
    out["flagged"] = np.asarray(flagged, dtype=bool)
    out["score"] = np.asarray(score, dtype=np.float64)
    out["threshold"] = np.broadcast_to(np.asarray(threshold, dtype=np.float64), n).copy()
    out["reason"] = pd.Series(np.asarray(reason, dtype=object), dtype="str")
    out["failed_checks"] = failed_checks
    if isinstance(method, str):
        codes = np.full(n, METHODS.index(method), dtype=np.int8)
        out["method"] = pd.Categorical.from_codes(codes, list(METHODS))
    else:
        out["method"] = pd.Categorical(np.asarray(method, dtype=object), categories=list(METHODS))
    out["method_reason"] = _category(method_reason, n)
    for name, values in (extra or {}).items():
        out[name] = values
    return out
