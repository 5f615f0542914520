"""Cohort summary of a measures table (what ``dentalkit demo`` prints)."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd

from dentalkit.errors import InputError

__all__ = ["summarize"]

_SESSIONS = ("first", "last", "all")


def summarize(
    measures: pd.DataFrame,
    *,
    session: Literal["first", "last", "all"] = "first",
    unit: str = "patient_id",
) -> pd.DataFrame:
    """Per view and measure: n, mean, SD, min, median, max over one session per patient.

    Parameters
    ----------
    measures : DataFrame
        Output of :func:`dentalkit.ceph.measure` (optionally of
        :func:`dentalkit.ceph.zscores`).
    session : {"first", "last", "all"}
        Which sessions of each patient to describe. Default ``"first"``: one
        session per patient, so ``n`` counts patients and the SD is a
        between-patient SD. ``"all"`` pools every session (``n`` then counts
        sessions, ``n_units`` the patients behind them, and the SD mixes
        within- and between-patient variation — say so when you report it).
        Sessions are ordered by ``session_time`` when present, then
        ``timestamp``; a table without ``timestamp`` is used as it is.
    unit : str
        Column identifying the patient (default ``"patient_id"``); a table
        without it is described row by row (``n_units`` = ``n``).

    Returns
    -------
    DataFrame
        One row per (view, measure, unit, analysis) in catalogue order, with
        ``n`` (non-NaN values), ``n_units`` (patients with a value),
        ``n_missing``, ``mean``, ``sd`` (ddof=1), ``min``, ``median``, ``max``,
        ``session`` (the rule used) and, when a ``z`` column is present,
        ``mean_z``.

    Examples
    --------
    >>> import pandas as pd
    >>> m = pd.DataFrame(
    ...     {
    ...         "patient_id": ["a", "a", "b", "c"],
    ...         "timestamp": ["2024", "2025", "2024", "2024"],
    ...         "view": "lateral",
    ...         "measure": ["SNA"] * 4,
    ...         "unit": "deg",
    ...         "analysis": "Steiner",
    ...         "value": [80.0, 90.0, 82.0, float("nan")],
    ...     }
    ... )
    >>> summarize(m)[["measure", "n", "n_units", "n_missing", "mean"]].to_dict("records")
    [{'measure': 'SNA', 'n': 2, 'n_units': 2, 'n_missing': 1, 'mean': 81.0}]
    """
    for col in ("measure", "value"):
        if col not in measures.columns:
            raise InputError(f"measures table lacks column {col!r} (use the output of measure())")
    if session not in _SESSIONS:
        raise InputError(f"session={session!r} is not allowed; use one of {_SESSIONS}")
    if session != "all" and unit in measures.columns and "timestamp" in measures.columns:
        from dentalkit.stats import one_row_per_unit

        measures = one_row_per_unit(measures, session, unit=unit)
    keys = [c for c in ("view", "measure", "unit", "analysis") if c in measures.columns]
    g = measures.groupby(keys, observed=True, sort=True)["value"]
    out = pd.DataFrame(
        {
            "n": g.count(),
            "n_missing": g.size() - g.count(),
            "mean": g.mean(),
            "sd": g.std(ddof=1),
            "min": g.min(),
            "median": g.median(),
            "max": g.max(),
        }
    )
    if unit in measures.columns:
        present = measures[measures["value"].notna()]
        out.insert(
            1,
            "n_units",
            present.groupby(keys, observed=True, sort=True)[unit].nunique().reindex(out.index),
        )
    else:
        out.insert(1, "n_units", out["n"])
    if "z" in measures.columns:
        out["mean_z"] = measures.groupby(keys, observed=True, sort=True)["z"].mean()
    out = out.reset_index()
    out["session"] = session
    for col in ("n", "n_units", "n_missing"):
        out[col] = out[col].fillna(0).astype(np.int64)
    return out
