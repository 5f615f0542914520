"""Skeletal class and vertical pattern per session, from thresholds kept as data.

``dentalkit/data/ceph_classes.csv``: one row per (scheme, category) with the
interval ``[lower, upper)`` of the scheme's measure (empty = unbounded), the source
and a ``verified`` flag (False where the cut-offs are a documented dentalkit choice
rather than a published band). Shipped schemes:

- ``skeletal_class`` from ANB: < 0° Class III, 0–4° Class I, ≥ 4° Class II (Steiner).
- ``skeletal_class_wits`` from Wits: < −2 mm III, −2…2 mm I, ≥ 2 mm II (sign from
  Jacobson 1975; cut-offs a dentalkit choice around his 0 / −1 mm norms).
- ``vertical_sn_gogn`` from SN_GoGn: < 27° hypo-, 27–37° normo-, ≥ 37° hyperdivergent
  (dentalkit choice around Steiner's 32° ± 5°, applied only to SN–GoGn, the measure
  Steiner's norm is for: SN–MP to Go–Me runs several degrees higher, so these cut-offs
  would misclassify it; there is no shipped SN_MP scheme).
- ``vertical_fma`` from FMA: < 20°, 20–30°, ≥ 30° (Tweed's FMA groups).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from dentalkit.errors import InputError

__all__ = ["class_changes", "class_order", "classify", "load_thresholds"]


@lru_cache(maxsize=1)
def _default() -> pd.DataFrame:
    with (
        resources.files("dentalkit.data").joinpath("ceph_classes.csv").open(encoding="utf-8") as fh
    ):
        return pd.read_csv(fh, dtype=str, keep_default_na=False)


def load_thresholds(path: str | Path | pd.DataFrame | None = None) -> pd.DataFrame:
    """Return the classification thresholds (shipped by default), validated.

    Columns: ``scheme``, ``measure``, ``category``, ``lower``, ``upper`` (float, NaN =
    unbounded; the interval is ``[lower, upper)``), ``source``, ``verified``, ``note``.
    Within a scheme the intervals must not overlap.
    """
    table = (
        _default()
        if path is None
        else (
            path
            if isinstance(path, pd.DataFrame)
            else pd.read_csv(path, dtype=str, keep_default_na=False)
        )
    ).copy()
    missing = {"scheme", "measure", "category", "lower", "upper"} - set(table.columns)
    if missing:
        raise InputError(f"threshold table lacks column(s) {sorted(missing)}")
    for col in ("source", "verified", "note"):
        if col not in table.columns:
            table[col] = ""
    for col in ("lower", "upper"):
        table[col] = pd.to_numeric(table[col].replace("", np.nan), errors="coerce").astype(float)
    table["verified"] = table["verified"].astype(str).str.lower().isin(["true", "1", "yes"])
    for scheme, g in table.groupby("scheme", sort=False):
        if len(set(g["measure"])) != 1:
            raise InputError(
                f"threshold scheme {scheme!r} mixes measures {sorted(set(g['measure']))}"
            )
        lo = g["lower"].fillna(-np.inf).to_numpy()
        hi = g["upper"].fillna(np.inf).to_numpy()
        order = np.argsort(lo)
        if (lo[order][1:] < hi[order][:-1]).any() or (lo >= hi).any():
            raise InputError(f"threshold scheme {scheme!r} has empty or overlapping intervals")
    return table.reset_index(drop=True)


def class_order(
    scheme: str = "skeletal_class", thresholds: pd.DataFrame | str | Path | None = None
) -> list[str]:
    """The categories of a classification scheme in the order of its measure.

    The order is declared once, by the thresholds themselves (``ceph_classes.csv``):
    categories sorted by the lower end of their interval — for ``skeletal_class`` (ANB)
    ``["Class III", "Class I", "Class II"]``. :func:`classify` returns ordered
    categoricals in this order, and weighted kappa (``agreement.cohens_kappa``,
    ``agreement.measure``) weighs disagreements by distance in it.

    Parameters
    ----------
    scheme : str
        A scheme of the threshold table (``skeletal_class``, ``skeletal_class_wits``,
        ``vertical_sn_gogn``, ``vertical_fma`` are shipped).
    thresholds : DataFrame or path, optional
        Default: the shipped table (see :func:`load_thresholds`).

    Returns
    -------
    list of str

    Examples
    --------
    >>> class_order("skeletal_class")
    ['Class III', 'Class I', 'Class II']
    >>> class_order("vertical_fma")
    ['hypodivergent', 'normodivergent', 'hyperdivergent']
    """
    table = load_thresholds(thresholds)
    g = table[table["scheme"] == scheme]
    if g.empty:
        raise InputError(f"unknown scheme {scheme!r}; have {sorted(set(table['scheme']))}")
    return _ordered_categories(g)


def _ordered_categories(g: pd.DataFrame) -> list[str]:
    """A scheme's categories sorted by the lower end of their interval."""
    cats = g["category"].tolist()
    return [cats[i] for i in np.argsort(g["lower"].fillna(-np.inf).to_numpy(), kind="stable")]


def classify(
    measures: pd.DataFrame,
    thresholds: pd.DataFrame | str | Path | None = None,
    schemes: list[str] | None = None,
) -> pd.DataFrame:
    """Classify every session by each threshold scheme.

    Parameters
    ----------
    measures : DataFrame
        Output of :func:`dentalkit.ceph.measure` (long).
    thresholds : DataFrame or path, optional
        Default: the shipped ``ceph_classes.csv`` (see :func:`load_thresholds`).
    schemes : list of str, optional
        Only these schemes (default all).

    Returns
    -------
    DataFrame
        One row per session (the session columns of ``measures``) with one ordered
        categorical column per scheme (``skeletal_class``, ``skeletal_class_wits``,
        ``vertical_sn_gogn``, ``vertical_fma``) and, when both sagittal schemes are
        present, ``skeletal_class_agree`` (boolean; NA where either is missing).
        A NaN measure gives a missing category.

    Examples
    --------
    >>> import pandas as pd
    >>> m = pd.DataFrame(
    ...     {
    ...         "patient_id": ["p"],
    ...         "timestamp": ["t"],
    ...         "view": ["lateral"],
    ...         "measure": ["ANB"],
    ...         "value": [5.0],
    ...         "unit": ["deg"],
    ...     }
    ... )
    >>> classify(m, schemes=["skeletal_class"])["skeletal_class"].tolist()
    ['Class II']
    """
    table = load_thresholds(thresholds)
    if schemes is not None:
        unknown = set(schemes) - set(table["scheme"])
        if unknown:
            raise InputError(
                f"unknown scheme(s) {sorted(unknown)}; have {sorted(set(table['scheme']))}"
            )
        table = table[table["scheme"].isin(schemes)]
    for col in ("measure", "value"):
        if col not in measures.columns:
            raise InputError(f"measures table lacks column {col!r} (use the output of measure())")
    key = [c for c in measures.columns if c not in ("view", "measure", "value", "unit", "analysis")]
    key = [c for c in key if not c.startswith(("norm_", "z"))]
    out = measures[key].drop_duplicates().reset_index(drop=True)
    measure_col = measures["measure"].astype(str)
    for scheme, g in table.groupby("scheme", sort=False):
        mid = g["measure"].iloc[0]
        sub = measures.loc[(measure_col == mid).to_numpy(), [*key, "value"]]
        sub = sub.drop_duplicates(key)
        values = out.merge(sub, on=key, how="left")["value"].to_numpy(dtype=float)
        lo = g["lower"].fillna(-np.inf).to_numpy()
        hi = g["upper"].fillna(np.inf).to_numpy()
        inside = (values[:, None] >= lo[None, :]) & (values[:, None] < hi[None, :])
        code = np.where(inside.any(axis=1), inside.argmax(axis=1), -1)
        cats = g["category"].tolist()
        ordered = _ordered_categories(g)
        remap = np.array([ordered.index(c) for c in cats] + [-1])
        out[scheme] = (
            pd.Categorical.from_codes(remap[code], ordered, ordered=True)
            if len(set(ordered)) == len(ordered)
            else pd.Categorical([cats[c] if c >= 0 else None for c in code])
        )
    if {"skeletal_class", "skeletal_class_wits"} <= set(out.columns):
        a = out["skeletal_class"].astype(object)
        b = out["skeletal_class_wits"].astype(object)
        agree = pd.array((a == b).to_numpy(), dtype="boolean")
        agree[(a.isna() | b.isna()).to_numpy()] = pd.NA
        out["skeletal_class_agree"] = agree
    return out


def class_changes(classes: pd.DataFrame, scheme: str = "skeletal_class") -> pd.DataFrame:
    """Each patient's class at the first and last session, and whether it changed.

    Parameters
    ----------
    classes : DataFrame
        Output of :func:`dentalkit.ceph.classify` (one row per session).
    scheme : str
        Classification column (default ``"skeletal_class"``).

    Returns
    -------
    DataFrame
        One row per patient: ``patient_id``, ``n_sessions``, ``first``, ``last`` (the
        class at the first / last session; sessions ordered by ``session_time`` when
        present, then ``timestamp``), ``changed`` (the first and last class differ;
        NA when either is missing) and ``scheme``.

    Notes
    -----
    A group comparison needs a group fixed per patient: the demo uses the class of
    the first session and counts here the patients whose class differs later, rather
    than filing them silently under one class.

    Examples
    --------
    >>> import pandas as pd
    >>> c = pd.DataFrame(
    ...     {
    ...         "patient_id": ["a", "a", "b", "b"],
    ...         "timestamp": ["2024", "2025", "2024", "2025"],
    ...         "skeletal_class": ["Class I", "Class II", "Class I", "Class I"],
    ...     }
    ... )
    >>> class_changes(c)[["patient_id", "first", "last", "changed"]].values.tolist()
    [['a', 'Class I', 'Class II', True], ['b', 'Class I', 'Class I', False]]
    """
    from dentalkit.stats import one_row_per_unit

    for col in ("patient_id", "timestamp", scheme):
        if col not in classes.columns:
            raise InputError(f"classes table lacks column {col!r} (use ceph.classify output)")
    first = one_row_per_unit(classes, "first")[["patient_id", scheme]]
    last = one_row_per_unit(classes, "last")[["patient_id", scheme]]
    n = classes.groupby(classes["patient_id"].astype("object"), sort=True).size()
    out = (
        first.astype({"patient_id": "object"})
        .merge(last.astype({"patient_id": "object"}), on="patient_id", suffixes=("_first", ""))
        .rename(columns={f"{scheme}_first": "first", scheme: "last"})
    )
    out.insert(1, "n_sessions", out["patient_id"].map(n).astype("int64"))
    a, b = out["first"].astype("object"), out["last"].astype("object")
    changed = pd.array((a != b).to_numpy(), dtype="boolean")
    changed[(a.isna() | b.isna()).to_numpy()] = pd.NA
    out["changed"] = changed
    out["scheme"] = scheme
    return out.sort_values("patient_id", ignore_index=True)
