"""The ``errors=`` rule of the qc functions, in one place."""

from __future__ import annotations

import warnings
from functools import lru_cache

import pandas as pd

from dentalkit.errors import DentalkitWarning, empty_problems, problems_error, problems_frame

__all__ = ["finish", "problem_rows"]


def problem_rows(table: str, keys: pd.DataFrame, reason: str | list[str], **fields) -> pd.DataFrame:
    """Problems of the items ``keys`` (one row each; session keys taken when present)."""
    if not len(keys):
        return pd.DataFrame()
    out = pd.DataFrame(index=range(len(keys)))
    for col in ("endpoint", "patient_id", "timestamp", "row"):
        if col in keys.columns:
            out[col] = keys[col].astype(object).to_numpy()
    out["table"] = table
    out["reason"] = reason
    for name, value in fields.items():
        out[name] = value
    return problems_frame(out, severity="error")


@lru_cache(maxsize=1)
def _no_problems() -> pd.DataFrame:
    return problems_frame(empty_problems(), severity="error")


def finish(
    table: pd.DataFrame, problems: pd.DataFrame, errors: str, who: str
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """Return the qc table by dentalkit's ``errors=`` rule (``problems`` may be empty)."""
    if len(problems):
        problems = problems_frame(problems, severity="error")
    else:
        problems = _no_problems().copy()
    if errors == "collect":
        return table, problems
    if len(problems) and errors == "raise":
        raise problems_error(
            problems,
            f"{who} could not check {len(problems)} item(s)",
            "Pass errors='collect' to get the qc table (those items marked 'not checked') "
            "and these rows in a problems table, or errors='warn' for the table and one warning",
        )
    if len(problems):
        warnings.warn(
            f"{who}: {len(problems)} item(s) not checked (e.g. {problems['reason'].iloc[0]}); "
            "they are marked 'not checked' in the qc table",
            DentalkitWarning,
            stacklevel=3,
        )
    return table
