"""Descriptive statistics per group, the companion table of :func:`compare` (private)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dentalkit.stats._proportions import CLUSTER_CI_METHOD, cluster_proportion_ci, proportion_ci
from dentalkit.stats._tables import as_list, require_columns
from dentalkit.stats._units import DEFAULT_UNIT, resolve_unit

__all__ = ["describe"]


def describe(
    table: pd.DataFrame,
    value: str,
    by: str | Sequence[str] | None = None,
    *,
    confidence: float = 0.95,
    unit: str | None = DEFAULT_UNIT,
) -> pd.DataFrame:
    """Per-group summary of ``value``, with the patients behind the rows.

    Numeric values get ``n``, ``mean``, ``sd``, ``median``, ``q1``, ``q3``,
    ``min``, ``max``; bool or 0/1 values get ``n``, ``n_positive``,
    ``proportion`` and its interval ``ci_low``/``ci_high`` with ``ci_method``:
    Wilson (Wilson 1927) when every row of a group is a different unit,
    Wilson on an effective sample size clustered on the unit (Korn & Graubard
    1998; :func:`~dentalkit.stats._proportions.cluster_proportion_ci`) when a unit
    has several rows in a group (sessions, teeth). Missing values are not counted.
    ``n_units`` counts the units (``unit``, default ``"patient_id"`` when the
    table has it; otherwise rows, with a warning) behind ``n`` rows, and
    ``unit_of_analysis`` names the unit column (``"row"`` when rows are the units).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame(
    ...     {"patient_id": ["p", "q", "r"], "g": ["a", "a", "b"], "x": [1.0, 3.0, 5.0]}
    ... )
    >>> describe(t, "x", "g")[["g", "n", "n_units", "mean"]].to_dict("records")
    [{'g': 'a', 'n': 2, 'n_units': 2, 'mean': 2.0}, {'g': 'b', 'n': 1, 'n_units': 1, 'mean': 5.0}]
    """
    by = as_list(by)
    require_columns(table, [value, *by], "table")
    values = table[value]
    binary = pd.api.types.is_bool_dtype(values) or (
        pd.api.types.is_numeric_dtype(values) and set(pd.unique(values.dropna())) <= {0, 1}
    )
    unit_col, _ = resolve_unit(table, unit)
    named = unit_col if unit_col is not None else "row"
    cols = list(dict.fromkeys([*by, value, *([unit_col] if unit_col else [])]))
    work = table[cols].dropna(subset=[value])
    if unit_col is None:
        work = work.assign(_unit=np.arange(len(work)))
        unit_col = "_unit"
    if not by:
        work = work.assign(_all=0)
    keys = by or ["_all"]
    g = work.groupby(keys, sort=True, dropna=False, observed=True)[value]
    n_units = work.groupby(keys, sort=True, dropna=False, observed=True)[unit_col].nunique()
    if binary:
        out = g.agg(n="size", n_positive=lambda v: int(v.astype(int).sum())).reset_index()
        n = out["n"].to_numpy(dtype=float)
        out["proportion"] = out["n_positive"] / n
        out["ci_low"], out["ci_high"] = proportion_ci(out["n_positive"], n, confidence)
        out["ci_method"] = "Wilson score (Wilson 1927); one row per unit"
        repeated = n_units.to_numpy() < out["n"].to_numpy()
        if repeated.any():
            labels = work[keys].astype("object").astype(str).agg("\x1f".join, axis=1)
            _, low, high, _ = cluster_proportion_ci(
                work[value].astype(int).to_numpy(), work[unit_col].to_numpy(), labels, confidence
            )
            target = out[keys].astype("object").astype(str).agg("\x1f".join, axis=1)
            idx = np.searchsorted(np.unique(labels.to_numpy().astype(str)), target.to_numpy())
            out.loc[repeated, "ci_low"] = low[idx][repeated]
            out.loc[repeated, "ci_high"] = high[idx][repeated]
            out.loc[repeated, "ci_method"] = f"{CLUSTER_CI_METHOD}, rows clustered on {unit_col}"
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
    out.insert(len(keys) + 1, "n_units", n_units.to_numpy().astype("int64"))
    out.insert(len(keys) + 2, "unit_of_analysis", named)
    return out.drop(columns=["_all"], errors="ignore").assign(value=value).pipe(_value_first, by)


def _value_first(out: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    cols = [*by, "value", *[c for c in out.columns if c not in (*by, "value")]]
    return out[cols].reset_index(drop=True).astype({"n": np.int64})
