"""Longitudinal change: per patient, consecutive sessions' differences and yearly rates."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dentalkit.errors import InputError

__all__ = ["change"]

_DAYS_PER_YEAR = 365.25


def change(measures: pd.DataFrame) -> pd.DataFrame:
    """Differences between consecutive sessions of each patient, per view and measure.

    Sessions are ordered by ``session_time``, then ``timestamp`` (sessions whose
    time did not parse sort last, in timestamp order). The rate is the change divided
    by the elapsed time in years (365.25 days); it is NaN when either time is NaT or
    both sessions have the same time.

    Parameters
    ----------
    measures : DataFrame
        Output of :func:`dentalkit.ceph.measure`; needs ``patient_id``, ``timestamp``,
        ``measure``, ``value``; ``session_time`` optional (rates are NaN without it).

    Returns
    -------
    DataFrame
        One row per patient × view × measure × consecutive pair: ``patient_id``,
        ``view``, ``measure``, ``unit``, ``analysis`` (when present),
        ``from_timestamp``, ``to_timestamp``, ``from_time``, ``to_time``,
        ``value_from``, ``value_to``, ``change`` (to − from), ``years``,
        ``rate_per_year``.

    Examples
    --------
    >>> import pandas as pd
    >>> m = pd.DataFrame(
    ...     {
    ...         "patient_id": ["p", "p"],
    ...         "timestamp": ["2020-01-01", "2022-01-01"],
    ...         "session_time": pd.to_datetime(["2020-01-01", "2022-01-01"], utc=True),
    ...         "measure": ["SNB", "SNB"],
    ...         "value": [78.0, 79.0],
    ...         "unit": ["deg", "deg"],
    ...     }
    ... )
    >>> out = change(m)
    >>> out["change"].item(), round(out["rate_per_year"].item(), 4)
    (1.0, 0.4997)
    """
    for col in ("patient_id", "timestamp", "measure", "value"):
        if col not in measures.columns:
            raise InputError(f"measures table lacks column {col!r} (use the output of measure())")
    m = measures.copy()
    if "session_time" not in m.columns:
        m["session_time"] = pd.NaT
    st = pd.to_datetime(m["session_time"], utc=True)
    m["_t"] = st
    m["_nat"] = st.isna()
    group = ["patient_id"] + (["view"] if "view" in m.columns else []) + ["measure"]
    m = m.sort_values([*group, "_nat", "_t", "timestamp"], kind="stable")
    g = m.groupby(group, observed=True, sort=False)
    prev_value = g["value"].shift(1)
    prev_ts = g["timestamp"].shift(1)
    prev_t = g["_t"].shift(1)
    has_prev = g.cumcount().to_numpy() > 0
    cur = m[has_prev]
    out = pd.DataFrame({c: cur[c].to_numpy() for c in group})
    for c in ("patient_id", "view", "measure"):
        if c in cur.columns and isinstance(cur[c].dtype, pd.CategoricalDtype):
            out[c] = pd.Categorical(cur[c].to_numpy(), categories=cur[c].cat.categories)
    for extra in ("unit", "analysis"):
        if extra in cur.columns:
            out[extra] = cur[extra].to_numpy()
    out["from_timestamp"] = prev_ts[has_prev].to_numpy()
    out["to_timestamp"] = cur["timestamp"].to_numpy()
    out["from_time"] = prev_t[has_prev].to_numpy()
    out["to_time"] = cur["_t"].to_numpy()
    out["value_from"] = prev_value[has_prev].to_numpy(dtype=float)
    out["value_to"] = cur["value"].to_numpy(dtype=float)
    out["change"] = out["value_to"] - out["value_from"]
    dt = pd.to_datetime(out["to_time"], utc=True) - pd.to_datetime(out["from_time"], utc=True)
    years = dt.dt.total_seconds().to_numpy() / (86400.0 * _DAYS_PER_YEAR)
    out["years"] = years
    with np.errstate(divide="ignore", invalid="ignore"):
        out["rate_per_year"] = np.where(years != 0, out["change"].to_numpy() / years, np.nan)
    return out.reset_index(drop=True)
