"""Cohort summary of a measures table (what ``dentalkit demo`` prints)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dentalkit.errors import InputError

__all__ = ["summarize"]


def summarize(measures: pd.DataFrame) -> pd.DataFrame:
    """Per view and measure: n, mean, SD, min, median, max (and mean z when present).

    Parameters
    ----------
    measures : DataFrame
        Output of :func:`dentalkit.ceph.measure` (optionally of
        :func:`dentalkit.ceph.zscores`).

    Returns
    -------
    DataFrame
        One row per (view, measure, unit, analysis) in catalogue order, with
        ``n`` (non-NaN sessions), ``n_missing``, ``mean``, ``sd`` (ddof=1), ``min``,
        ``median``, ``max`` and, when a ``z`` column is present, ``mean_z``.

    Examples
    --------
    >>> import pandas as pd
    >>> m = pd.DataFrame(
    ...     {
    ...         "view": "lateral",
    ...         "measure": ["SNA"] * 3,
    ...         "unit": "deg",
    ...         "analysis": "Steiner",
    ...         "value": [80.0, 82.0, float("nan")],
    ...     }
    ... )
    >>> summarize(m)[["measure", "n", "n_missing", "mean"]].to_dict("records")
    [{'measure': 'SNA', 'n': 2, 'n_missing': 1, 'mean': 81.0}]
    """
    for col in ("measure", "value"):
        if col not in measures.columns:
            raise InputError(f"measures table lacks column {col!r} (use the output of measure())")
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
    if "z" in measures.columns:
        out["mean_z"] = measures.groupby(keys, observed=True, sort=True)["z"].mean()
    out = out.reset_index()
    out["n"] = out["n"].astype(np.int64)
    out["n_missing"] = out["n_missing"].astype(np.int64)
    return out
