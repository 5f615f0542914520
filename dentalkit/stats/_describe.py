"""Descriptive statistics per group, the companion table of :func:`compare` (private)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dentalkit.stats._proportions import proportion_ci
from dentalkit.stats._tables import as_list, require_columns

__all__ = ["describe"]


def describe(
    table: pd.DataFrame,
    value: str,
    by: str | Sequence[str] | None = None,
    *,
    confidence: float = 0.95,
) -> pd.DataFrame:
    """Per-group summary of ``value``.

    Numeric values get ``n``, ``mean``, ``sd``, ``median``, ``q1``, ``q3``,
    ``min``, ``max``; bool or 0/1 values get ``n``, ``n_positive``,
    ``proportion`` and its Wilson interval ``ci_low``/``ci_high``. Missing
    values are not counted.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"g": ["a", "a", "b"], "x": [1.0, 3.0, 5.0]})
    >>> describe(t, "x", "g")[["g", "n", "mean"]].to_dict("records")
    [{'g': 'a', 'n': 2, 'mean': 2.0}, {'g': 'b', 'n': 1, 'mean': 5.0}]
    """
    by = as_list(by)
    require_columns(table, [value, *by], "table")
    values = table[value]
    binary = pd.api.types.is_bool_dtype(values) or (
        pd.api.types.is_numeric_dtype(values) and set(pd.unique(values.dropna())) <= {0, 1}
    )
    work = table[[*by, value]].dropna(subset=[value])
    if not by:
        work = work.assign(_all=0)
    keys = by or ["_all"]
    g = work.groupby(keys, sort=True, dropna=False, observed=True)[value]
    if binary:
        out = g.agg(n="size", n_positive=lambda v: int(v.astype(int).sum())).reset_index()
        n = out["n"].to_numpy(dtype=float)
        out["proportion"] = out["n_positive"] / n
        out["ci_low"], out["ci_high"] = proportion_ci(out["n_positive"], n, confidence)
    else:
        out = g.agg(
            n="size",
            mean="mean",
            sd="std",
            median="median",
            q1=lambda v: v.quantile(0.25),
            q3=lambda v: v.quantile(0.75),
            min="min",
            max="max",
        ).reset_index()
    out["n"] = out["n"].astype("int64")
    return out.drop(columns=["_all"], errors="ignore").assign(value=value).pipe(_value_first, by)


def _value_first(out: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    cols = [*by, "value", *[c for c in out.columns if c not in (*by, "value")]]
    return out[cols].reset_index(drop=True).astype({"n": np.int64})
