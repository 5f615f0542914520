"""What a study does with the qc tables: a pre-specified policy, and a summary for the report.

:func:`apply` takes an analysis table (landmarks, measures, teeth, findings …) and the qc
rows (one check's table or several concatenated) and applies the policy fixed before the
data were seen:

``"exclude"`` (the study's default)
    Rows of flagged items are left out; every excluded item is listed with its reason and
    the number of rows it removed. Nothing is dropped silently.
``"flag"``
    Every row is kept, with ``qc_flagged`` and ``qc_reason`` columns.
``"ignore"``
    The table is returned as it is (the sensitivity analysis "without QC").

Rows are matched to qc items by the item's key columns (:data:`MATCH_COLUMNS`): a landmarks
item is a session and view (a table without ``view`` is matched by session), a teeth item
a tooth of an image, a findings item one box, a treatment-length item a patient row. A
check whose key columns the table lacks does not apply to it, and is named in
``not_applied``.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dentalkit.errors import InputError
from dentalkit.qc._table import CHECKS, COMMON_COLUMNS, MATCH_COLUMNS

__all__ = ["POLICIES", "Applied", "apply", "summarize"]

#: The pre-specified policies, the study's default first.
POLICIES = ("exclude", "flag", "ignore")
EXCLUDED_COLUMNS = ("check", "patient_id", "timestamp", "item", "reason", "failed_checks", "n_rows")


@dataclass(frozen=True)
class Applied:
    """Result of :func:`apply`.

    Attributes
    ----------
    kept : DataFrame
        The rows the analysis uses (with ``qc_flagged`` / ``qc_reason`` under ``"flag"``).
    excluded : DataFrame
        One row per excluded item (``"exclude"`` only): ``check``, ``patient_id``,
        ``timestamp``, ``item``, ``reason``, ``failed_checks`` and ``n_rows`` (rows of the
        table it removed).
    policy : str
    not_applied : tuple of str
        Checks with flagged items whose key columns the table lacks.
    """

    kept: pd.DataFrame
    excluded: pd.DataFrame
    policy: str
    not_applied: tuple[str, ...]


def _keys(frame: pd.DataFrame, cols: list[str]) -> pd.MultiIndex:
    """Comparable keys: numbers as floats, everything as text (NaN is a value)."""
    parts = []
    for c in cols:
        v = frame[c]
        if pd.api.types.is_numeric_dtype(v) and not pd.api.types.is_bool_dtype(v):
            v = v.astype(float)
        parts.append(v.astype(object).where(v.notna(), None).astype(str).to_numpy())
    return pd.MultiIndex.from_arrays(parts, names=cols)


def apply(table: pd.DataFrame, qc: pd.DataFrame, *, policy: str = "exclude") -> Applied:
    """Apply a pre-specified QC policy to an analysis table.

    Parameters
    ----------
    table : DataFrame
        Any table with the key columns of the checks (see the module docstring).
    qc : DataFrame
        Rows of qc tables (``qc.landmarks`` …, or their concatenation).
    policy : {"exclude", "flag", "ignore"}, default "exclude"

    Returns
    -------
    Applied

    Examples
    --------
    >>> lm = pd.DataFrame(
    ...     {
    ...         "patient_id": ["P1", "P1", "P2"],
    ...         "timestamp": "t1",
    ...         "view": "lateral",
    ...         "value": [1.0, 2.0, 3.0],
    ...     }
    ... )
    >>> q = pd.DataFrame(
    ...     {
    ...         "check": "landmarks",
    ...         "patient_id": ["P1", "P2"],
    ...         "timestamp": "t1",
    ...         "view": "lateral",
    ...         "item": "lateral landmarks",
    ...         "flagged": [True, False],
    ...         "score": [9.0, 1.0],
    ...         "threshold": 3.1,
    ...         "reason": ["Go far", None],
    ...         "failed_checks": [["shape model"], []],
    ...         "method": "cohort model",
    ...         "method_reason": "…",
    ...     }
    ... )
    >>> r = apply(lm, q)
    >>> r.kept["value"].tolist(), r.excluded[["patient_id", "n_rows"]].to_dict("list")
    ([3.0], {'patient_id': ['P1'], 'n_rows': [2]})
    """
    if policy not in POLICIES:
        raise InputError(f"policy must be one of {', '.join(POLICIES)}; got {policy!r}")
    if not isinstance(table, pd.DataFrame) or not isinstance(qc, pd.DataFrame):
        raise InputError("apply takes two DataFrames: the analysis table and the qc table")
    absent = [c for c in ("check", "flagged", "reason") if c not in qc.columns]
    if absent:
        raise InputError(f"qc table lacks column(s) {absent}; give the output of a qc function")
    empty = pd.DataFrame({c: pd.Series(dtype=object) for c in EXCLUDED_COLUMNS}).astype(
        {"n_rows": np.int64}
    )
    if policy == "ignore":
        return Applied(table.copy(), empty, policy, ())
    hit = np.zeros(len(table), bool)
    reason = np.full(len(table), None, dtype=object)
    excluded, not_applied = [], []
    flagged = qc[qc["flagged"].astype(bool)]
    for check in [c for c in CHECKS if c in set(flagged["check"].astype(str))]:
        items = flagged[flagged["check"].astype(str) == check]
        required, optional = MATCH_COLUMNS[check]
        if any(c not in table.columns or c not in items.columns for c in required):
            not_applied.append(check)
            continue
        cols = [*required, *(c for c in optional if c in table.columns and c in items.columns)]
        item_keys, row_keys = _keys(items, cols), _keys(table, cols)
        rows = row_keys.isin(item_keys)
        counts = pd.Series(1, index=row_keys[rows]).groupby(level=list(range(len(cols)))).sum()
        n_rows = counts.reindex(item_keys).fillna(0).to_numpy(np.int64)
        text = pd.Series(items["reason"].astype(object).to_numpy(), index=item_keys)
        text = text[~text.index.duplicated()]
        for i in np.flatnonzero(rows):
            r = f"{check}: {text.loc[row_keys[i]]}"
            reason[i] = r if reason[i] is None else f"{reason[i]} | {r}"
        hit |= rows
        part = items.reset_index(drop=True).assign(n_rows=n_rows)
        excluded.append(part[part["n_rows"] > 0])
    if policy == "flag":
        kept = table.copy()
        kept["qc_flagged"] = hit
        kept["qc_reason"] = pd.Series(reason, index=table.index, dtype="str")
        return Applied(kept, empty, policy, tuple(not_applied))
    listing = (
        pd.concat(excluded, ignore_index=True)
        if excluded
        else pd.DataFrame(columns=[*list(COMMON_COLUMNS), "n_rows"])
    )
    cols = [c for c in EXCLUDED_COLUMNS if c in listing.columns]
    listing = listing[cols].reset_index(drop=True) if len(listing) else empty
    return Applied(table.loc[~hit].copy(), listing, policy, tuple(not_applied))


def _listed(values: Any) -> list[str]:
    """The names of a list cell; none for a missing one (None, or NaN once tables whose
    list column is absent or empty were concatenated)."""
    if isinstance(values, (list, tuple, np.ndarray)):
        return [str(v) for v in values]
    return []


def summarize(qc: pd.DataFrame) -> pd.DataFrame:
    """Counts and reasons per check, for a report.

    Parameters
    ----------
    qc : DataFrame
        One or several qc tables (concatenated).

    Returns
    -------
    DataFrame
        One row per check present: ``check``, ``n_items``, ``n_not_checked``,
        ``n_flagged``, ``n_patients`` (patients with an item), ``n_patients_flagged``,
        ``methods`` (list: each method with its count of items), ``failed_checks`` (list:
        each failed check with its count) and ``suspects`` (list: the most frequent
        suspect landmarks, points or parameters with their counts; at most ten).

    Examples
    --------
    >>> q = pd.DataFrame(
    ...     {
    ...         "check": "teeth",
    ...         "patient_id": ["P1", "P1", "P2"],
    ...         "flagged": [True, False, False],
    ...         "method": "single-session rules",
    ...         "failed_checks": [["order"], [], []],
    ...     }
    ... )
    >>> summarize(q)[["check", "n_flagged", "n_patients_flagged", "failed_checks"]].to_dict("list")
    {'check': ['teeth'], 'n_flagged': [1], 'n_patients_flagged': [1], 'failed_checks': [['order: 1']]}
    """
    if not isinstance(qc, pd.DataFrame) or "check" not in qc.columns:
        raise InputError("summarize takes a qc table (the output of a qc function)")
    rows = []
    for check in [c for c in CHECKS if c in set(qc["check"].astype(str))]:
        part = qc[qc["check"].astype(str) == check]
        flagged = part["flagged"].astype(bool).to_numpy()
        method = part["method"].astype(str) if "method" in part else pd.Series([""] * len(part))
        patients = (
            part["patient_id"].astype(str) if "patient_id" in part else pd.Series([], dtype=str)
        )
        suspects: Counter[str] = Counter()
        for col in ("suspect_landmarks", "suspect_points", "suspect_parameters"):
            if col in part:
                for values in part.loc[flagged, col]:
                    suspects.update(_listed(values))
        failed: Counter[str] = Counter()
        if "failed_checks" in part:
            for values in part["failed_checks"]:
                failed.update(_listed(values))
        rows.append(
            {
                "check": check,
                "n_items": len(part),
                "n_not_checked": int((method == "not checked").sum()),
                "n_flagged": int(flagged.sum()),
                "n_patients": int(patients.nunique()),
                "n_patients_flagged": int(patients[flagged].nunique()),
                "methods": [f"{m}: {k}" for m, k in method.value_counts().items() if k],
                "failed_checks": [f"{m}: {k}" for m, k in failed.most_common()],
                "suspects": [f"{m}: {k}" for m, k in suspects.most_common(10)],
            }
        )
    out = pd.DataFrame(rows, columns=[
        "check", "n_items", "n_not_checked", "n_flagged", "n_patients", "n_patients_flagged",
        "methods", "failed_checks", "suspects",
    ])  # fmt: skip
    return out.astype({c: np.int64 for c in out.columns if c.startswith("n_")})
