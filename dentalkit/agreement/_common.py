"""Plumbing shared by ``agreement.landmarks`` and ``agreement.measure``: session keys,
calibration, the problems table and the ``errors=`` policy."""

from __future__ import annotations

import warnings
from typing import Literal

import numpy as np
import pandas as pd

from dentalkit.errors import PROBLEM_COLUMNS, DentalkitWarning, InputError, problems_error
from dentalkit.errors import check_errors as _check_errors
from dentalkit.errors import problems_frame as _conform

__all__ = [
    "SESSION_DEFAULT",
    "SESSION_RULES",
    "Errors",
    "calibration",
    "check_errors",
    "check_session",
    "finish",
    "key_frame",
    "one_session_per_unit",
    "problems_frame",
    "session_columns",
    "unit_column",
]

#: Session key columns used by default (those present in *both* tables). ``session_time``
#: is parsed from ``timestamp`` (data contract) and never part of the key.
SESSION_DEFAULT = ("patient_id", "timestamp")
#: Which paired sessions of each unit (patient) enter the statistics (``session=``).
SESSION_RULES = ("first", "last", "all")
#: Accepted ``errors=`` values: dentalkit's one rule.
Errors = Literal["raise", "collect", "warn"]


def check_errors(errors: str, where: str) -> str:
    """The canonical ``errors=`` value (:func:`dentalkit.errors.check_errors`)."""
    return _check_errors(errors, where)


def session_columns(
    reference: pd.DataFrame, test: pd.DataFrame, session_cols: list[str] | None
) -> list[str]:
    """The columns identifying one image/session in both tables."""
    for side, table in (("reference", reference), ("test", test)):
        if not isinstance(table, pd.DataFrame):
            raise InputError(f"{side} must be a pandas DataFrame, got {type(table).__name__}")
    if session_cols is None:
        cols = [c for c in SESSION_DEFAULT if c in reference.columns and c in test.columns]
        if not cols:
            raise InputError(
                "reference and test share none of the session columns "
                f"{list(SESSION_DEFAULT)}; pass session_cols=[...] naming the columns that "
                "identify one image in both tables"
            )
        return cols
    cols = list(session_cols)
    for side, table in (("reference", reference), ("test", test)):
        missing = [c for c in cols if c not in table.columns]
        if missing:
            raise InputError(f"session_cols {missing} are not columns of the {side} table")
    return cols


def key_frame(table: pd.DataFrame, cols: list[str]) -> pd.DataFrame:
    """Key columns as plain strings (categoricals with different categories merge cleanly)."""
    out = {}
    for c in cols:
        col = table[c]
        out[c] = col.astype(object).where(col.notna(), None).to_numpy()
    return pd.DataFrame(out, index=table.index)


def calibration(
    mm_per_px: float | str | pd.Series | None,
    reference: pd.DataFrame,
    test: pd.DataFrame,
    pairs: pd.DataFrame,
    session_cols: list[str],
) -> np.ndarray | None:
    """mm per pixel for every pair (NaN where unknown), or None without calibration.

    ``mm_per_px`` is a positive number, the name of a column of the reference (else the
    test) table that is constant within a session, or a Series indexed by session
    columns.
    """
    if mm_per_px is None:
        return None
    n = len(pairs)
    if isinstance(mm_per_px, (int, float, np.integer, np.floating)) and not isinstance(
        mm_per_px, bool
    ):
        value = float(mm_per_px)
        if not np.isfinite(value) or value <= 0:
            raise InputError(f"mm_per_px must be a positive number, got {mm_per_px!r}")
        return np.full(n, value)
    if isinstance(mm_per_px, str):
        source = (
            reference
            if mm_per_px in reference.columns
            else test
            if mm_per_px in test.columns
            else None
        )
        if source is None:
            raise InputError(
                f"mm_per_px={mm_per_px!r} is a column of neither table; pass a number, a "
                "column name or a Series indexed by session columns"
            )
        keys = key_frame(source, session_cols)
        keys["_scale"] = pd.to_numeric(source[mm_per_px], errors="coerce").to_numpy(float)
        spread = keys.groupby(session_cols, dropna=False, sort=False)["_scale"].agg(["min", "max"])
        varies = ~np.isclose(spread["min"], spread["max"], rtol=1e-9, atol=0.0, equal_nan=True)
        if varies.any():
            who = dict(zip(session_cols, np.atleast_1d(spread.index[varies][0]), strict=False))
            raise InputError(
                f"column {mm_per_px!r} varies within session {who}; calibration must be one "
                "value per image"
            )
        per_session = spread["min"].rename("_scale").reset_index()
        merged = key_frame(pairs, session_cols).merge(per_session, on=session_cols, how="left")
        vals = merged["_scale"].to_numpy(dtype=float)
        return np.where(vals > 0, vals, np.nan)
    if isinstance(mm_per_px, pd.Series):
        names = [n for n in mm_per_px.index.names if n is not None]
        if not names or any(nm not in session_cols for nm in names):
            raise InputError(
                "a mm_per_px Series must be indexed by session columns (index names ⊆ "
                f"{session_cols}), got index names {list(mm_per_px.index.names)}"
            )
        if mm_per_px.index.duplicated().any():
            raise InputError("the mm_per_px Series has duplicate index entries")
        table = mm_per_px.rename("_scale").reset_index()
        table = key_frame(table, names).assign(
            _scale=pd.to_numeric(table["_scale"], errors="coerce").to_numpy(float)
        )
        merged = key_frame(pairs, names).merge(table, on=names, how="left")
        vals = merged["_scale"].to_numpy(dtype=float)
        return np.where(vals > 0, vals, np.nan)
    raise InputError(
        f"mm_per_px must be a number, a column name or a Series, got {type(mm_per_px).__name__}"
    )


def problems_frame(
    records: list[pd.DataFrame], table: str, item: str, session_cols: list[str]
) -> pd.DataFrame:
    """Concatenate problem pieces into dentalkit's one problems schema.

    Columns: :data:`dentalkit.errors.PROBLEM_COLUMNS` (``row`` is the position in the
    reference or test table, ``severity`` always ``error``: the item is left out of the
    statistics), then ``side`` (reference/test/both), ``view``, ``item`` (``name``,
    ``landmark`` or ``measure``) and any other session columns.
    """
    extra = ["side", "view", item, *[c for c in session_cols if c not in SESSION_DEFAULT]]
    pieces = [r for r in records if len(r)]
    out = pd.concat(pieces, ignore_index=True) if pieces else pd.DataFrame(columns=extra)
    out["table"] = table
    for c in extra:
        if c not in out.columns:
            out[c] = None
    out = _conform(out, severity="error")
    out = out[[*PROBLEM_COLUMNS, *extra]]
    for c in extra:
        out[c] = out[c].astype(object).where(out[c].notna(), None)
    return out


def finish(problems: pd.DataFrame, errors: str, what: str, *, where: str) -> None:
    """Apply the ``errors=`` rule to a problems table (``where``: the public function)."""
    if not len(problems) or errors == "collect":
        return
    if errors == "raise":
        raise problems_error(
            problems,
            f"{where} met {len(problems)} problem(s) while pairing {what}",
            "Pass errors='collect' to get the statistics of the items that pair and these "
            "rows in result.problems, or errors='warn' for the same and one warning",
        )
    warnings.warn(
        f"{len(problems)} problem(s) while pairing {what} (e.g. {problems['reason'].iloc[0]}); "
        "the affected items are left out of the statistics. See result.problems",
        DentalkitWarning,
        stacklevel=3,
    )


def check_session(session: str) -> None:
    """Refuse a ``session=`` rule that is not one of :data:`SESSION_RULES`."""
    if session not in SESSION_RULES:
        raise InputError(
            f"session={session!r} is not allowed; use one of {SESSION_RULES} ('first', the "
            "default, counts each patient once)"
        )


def unit_column(
    unit: str | None, cols: list[str], reference: pd.DataFrame, test: pd.DataFrame
) -> str | None:
    """The unit-of-analysis column, or None when each paired session is a unit."""
    if unit is None:
        return None
    if unit not in cols:
        if unit == "patient_id" and not (unit in reference.columns and unit in test.columns):
            return None  # the default, and the tables have no patient column
        raise InputError(
            f"unit={unit!r} must be one of the session columns {cols} (the pairs are keyed "
            "on them): add it to session_cols, or pass unit=None to count each paired "
            "session as a unit"
        )
    return unit


def _session_rank(pairs: pd.DataFrame, cols: list[str], unit: str) -> np.ndarray:
    """Sort key of each pair's session within its unit (timestamps as dates when they are)."""
    other = [c for c in cols if c != unit]
    if not other:
        return np.zeros(len(pairs), dtype=np.int64)
    keys = pd.DataFrame({c: pairs[c].astype(object).map(str) for c in other})
    if "timestamp" in other:
        when = pd.to_datetime(keys["timestamp"], errors="coerce", utc=True, format="ISO8601")
        keys.insert(0, "_when", when)
    order = keys.sort_values(list(keys.columns), na_position="last", kind="stable").index
    rank = np.empty(len(pairs), dtype=np.int64)
    rank[order.to_numpy()] = np.arange(len(pairs))
    return rank


def one_session_per_unit(
    pairs: pd.DataFrame, unit: str, cols: list[str], rule: str, item: str
) -> np.ndarray:
    """Row mask: per (view, item, unit), the first or last paired session.

    ``pairs`` has a default index and categorical ``view`` and ``item`` columns; sessions
    are ordered by the other session columns, ``timestamp`` read as a date when it is one.
    """
    frame = pd.DataFrame(
        {
            "view": pairs["view"].cat.codes.to_numpy(),
            "item": pairs[item].cat.codes.to_numpy(),
            "unit": pd.factorize(pairs[unit])[0],
        }
    )
    if not frame.duplicated().any():  # one session per unit already: nothing to choose
        return np.ones(len(pairs), dtype=bool)
    frame["rank"] = _session_rank(pairs.reset_index(drop=True), cols, unit)
    frame = frame.sort_values("rank", kind="stable")
    pick = frame.drop_duplicates(["view", "item", "unit"], keep=rule).index
    keep = np.zeros(len(pairs), dtype=bool)
    keep[pick.to_numpy()] = True
    return keep
