"""Norms and z-scores.

``dentalkit/data/ceph_norms.csv`` holds one row per (measure, norm group, sex, age
band): ``mean``, ``sd`` (blank where the source gives none), the source's range,
``source`` (the publication), ``checked_in`` (where the value was confirmed) and
``verified``. A row is ``verified`` only when its mean (and SD, if given) were
confirmed in a retrievable source; the others are textbook values kept for
reference and **excluded from z-scores by default** (``include_unverified=True``
uses them, with a warning). Rows without an SD never give a z-score.

User norm tables (by age, sex, ethnicity, study group …) have at least the columns
``measure``, ``mean``, ``sd``; any other column can be matched with ``by=``.
"""

from __future__ import annotations

import warnings
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from dentalkit.errors import DentalkitWarning, InputError

__all__ = ["NORM_COLUMNS", "load_norms", "zscores"]

NORM_COLUMNS = [
    "measure",
    "group",
    "mean",
    "sd",
    "range_low",
    "range_high",
    "age_min",
    "age_max",
    "sex",
    "unit",
    "source",
    "checked_in",
    "verified",
    "note",
]
_NUMERIC = ["mean", "sd", "range_low", "range_high", "age_min", "age_max"]


@lru_cache(maxsize=1)
def _default() -> pd.DataFrame:
    with resources.files("dentalkit.data").joinpath("ceph_norms.csv").open(encoding="utf-8") as fh:
        return pd.read_csv(fh, dtype=str, keep_default_na=False)


def load_norms(path: str | Path | pd.DataFrame | None = None) -> pd.DataFrame:
    """Return a norm table (shipped by default), validated, with typed columns.

    Parameters
    ----------
    path : path-like or DataFrame, optional
        A user norm table. Required columns: ``measure``, ``mean``, ``sd``. Missing
        optional columns are added empty (``group`` = ``"user"``, ``verified`` =
        True: a table you supply is yours to vouch for).

    Returns
    -------
    DataFrame
        Numeric columns float64 (NaN = not given); ``age_min`` inclusive,
        ``age_max`` inclusive (years); ``sex`` ``F``/``M`` or empty (= any);
        ``verified`` bool.
    """
    if path is None:
        table = _default().copy()
        user = False
    else:
        table = path.copy() if isinstance(path, pd.DataFrame) else pd.read_csv(path)
        user = True
    missing = {"measure", "mean", "sd"} - set(table.columns)
    if missing:
        raise InputError(f"norm table lacks column(s) {sorted(missing)}; needs measure, mean, sd")
    for col in NORM_COLUMNS:
        if col not in table.columns:
            table[col] = {"group": "user", "verified": True}.get(col, "") if user else ""
    for col in _NUMERIC:
        table[col] = pd.to_numeric(table[col].replace("", np.nan), errors="coerce").astype(float)
    if (table["sd"] <= 0).any():
        bad = table.loc[table["sd"] <= 0, "measure"].tolist()
        raise InputError(f"norm table has non-positive sd for {bad}")
    v = table["verified"]
    table["verified"] = (
        v.astype(str).str.strip().str.lower().isin(["true", "1", "yes"]) if v.dtype != bool else v
    )
    for col in ("measure", "group", "sex", "unit", "source", "checked_in", "note"):
        table[col] = table[col].fillna("").astype(str)
    return table.reset_index(drop=True)


def zscores(
    measures: pd.DataFrame,
    norms: pd.DataFrame | str | Path | None = None,
    by: list[str] | str | None = None,
    *,
    group: str | list[str] | None = None,
    include_unverified: bool = False,
) -> pd.DataFrame:
    """Attach norm mean / SD and z = (value − mean) / SD to a measures table.

    Parameters
    ----------
    measures : DataFrame
        Output of :func:`dentalkit.ceph.measure` (``measure``, ``value``, ``unit``),
        optionally with covariate columns merged in (``sex``, ``age`` …).
    norms : DataFrame or path, optional
        Norm table (default: the shipped one; see :func:`load_norms`).
    by : str or list of str, optional
        Columns of ``measures`` to match against the norm table: ``"age"`` is matched
        to ``age_min <= age <= age_max`` (years), any other column by equality with
        the same-named norm column. An empty / NaN norm cell matches any value. When
        several norm rows match, the most specific one (most ``by`` columns matched
        non-empty) wins, then the first in table order.
    group : str or list of str, optional
        Only these norm groups (e.g. ``"Steiner"``), in order of preference.
        Default: all groups, table order (the shipped table lists the classic
        analysis of each measure first).
    include_unverified : bool
        Also use rows with ``verified`` False (textbook values not confirmed in a
        retrieved source). Default False.

    Returns
    -------
    DataFrame
        ``measures`` plus ``norm_group``, ``norm_mean``, ``norm_sd``, ``z``,
        ``norm_source``. A norm applies only when its ``unit`` equals the row's unit
        (a mm norm never scores a px value); no matching norm or no SD → NaN.

    Examples
    --------
    >>> import pandas as pd
    >>> m = pd.DataFrame({"measure": ["APDI"], "value": [85.19], "unit": ["deg"]})
    >>> round(zscores(m)["z"].item(), 6)
    1.0
    """
    for col in ("measure", "value", "unit"):
        if col not in measures.columns:
            raise InputError(f"measures table lacks column {col!r} (use the output of measure())")
    table = load_norms(None if norms is None else norms)
    by_cols = [by] if isinstance(by, str) else list(by or [])
    for c in by_cols:
        if c not in measures.columns:
            raise InputError(f"by column {c!r} is not a column of the measures table")
        if c != "age" and c not in table.columns:
            raise InputError(f"by column {c!r} is not a column of the norm table")
    if not include_unverified:
        table = table[table["verified"]]
    elif not table["verified"].all():
        warnings.warn(
            "include_unverified=True: z-scores use norms not confirmed in a retrieved source "
            "(see the 'checked_in' and 'note' columns of load_norms())",
            DentalkitWarning,
            stacklevel=2,
        )
    if group is not None:
        groups = [group] if isinstance(group, str) else list(group)
        unknown = set(groups) - set(table["group"])
        if unknown:
            raise InputError(
                f"norm group(s) {sorted(unknown)} not in the norm table "
                f"(groups: {sorted(set(table['group']))})"
            )
        table = table[table["group"].isin(groups)].copy()
        table["_pref"] = table["group"].map({g: i for i, g in enumerate(groups)})
        table = table.sort_values("_pref", kind="stable")
    table = table.reset_index(drop=True)
    table["_order"] = np.arange(len(table))

    left = pd.DataFrame(
        {
            "_row": np.arange(len(measures)),
            "measure": measures["measure"].astype(str).to_numpy(),
            "unit": measures["unit"].astype(str).to_numpy(),
        }
    )
    for c in by_cols:
        left["_by_" + c] = measures[c].to_numpy()
    right_cols = ["measure", "unit", "group", "mean", "sd", "source", "_order"]
    right = table[right_cols + [c for c in by_cols if c != "age"] + ["age_min", "age_max"]].copy()
    right.loc[right["unit"] == "", "unit"] = np.nan
    merged = left.merge(right, on="measure", how="inner", suffixes=("", "_norm"))
    ok = merged["unit_norm"].isna() | (merged["unit_norm"] == merged["unit"])
    score = np.zeros(len(merged))
    for c in by_cols:
        val = merged["_by_" + c]
        if c == "age":
            lo, hi = merged["age_min"], merged["age_max"]
            age = pd.to_numeric(val, errors="coerce")
            cond = (lo.isna() | (age >= lo)) & (hi.isna() | (age <= hi))
            score += (lo.notna() | hi.notna()).to_numpy()
        else:
            norm_val = merged[c]
            wildcard = norm_val.isna() | (norm_val.astype(str) == "")
            cond = wildcard | (norm_val.astype(str) == val.astype(str))
            score += (~wildcard).to_numpy()
        ok &= cond.to_numpy()
    merged = merged[ok.to_numpy() if hasattr(ok, "to_numpy") else ok].copy()
    merged["_score"] = score[ok.to_numpy() if hasattr(ok, "to_numpy") else ok]
    merged = merged.sort_values(["_row", "_score", "_order"], ascending=[True, False, True])
    best = merged.drop_duplicates("_row")
    out = measures.copy()
    idx = best["_row"].to_numpy()
    for name, col in (("norm_group", "group"), ("norm_source", "source")):
        arr = np.full(len(out), None, dtype=object)
        arr[idx] = best[col].to_numpy()
        out[name] = pd.Categorical(arr)
    for name, col in (("norm_mean", "mean"), ("norm_sd", "sd")):
        arr = np.full(len(out), np.nan)
        arr[idx] = best[col].to_numpy(dtype=float)
        out[name] = arr
    out["z"] = (out["value"].to_numpy(dtype=float) - out["norm_mean"]) / out["norm_sd"]
    return out
