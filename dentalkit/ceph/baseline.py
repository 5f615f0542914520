"""Which measures regression to the mean touches when groups come from a baseline measure.

When patients are grouped by a measure at their first session (skeletal class from
ANB), the groups differ in that session's tracing error as well as in anatomy: Class II
patients were traced, on average, with a positive ANB error, which does not recur at
the next session. Every measure that shares landmarks with the defining one (SNA and SNB
share A, B, N and S with ANB) or correlates with it inherits part of that error, and its
change between the groups is then partly regression to the mean (Barnett, van der Pols &
Dobson 2005). :func:`regression_to_the_mean` lists them, with a sentence a report can
print; ``stats.growth(group_defined_by=...)`` analyses them baseline-adjusted.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dentalkit.ceph._catalog import load_measures
from dentalkit.ceph.names import required_landmarks
from dentalkit.errors import InputError

__all__ = ["RTM_COLUMNS", "regression_to_the_mean"]

#: Columns of :func:`regression_to_the_mean`.
RTM_COLUMNS = [
    "defining",
    "measure",
    "shared_landmarks",
    "correlation",
    "n_units",
    "at_risk",
    "why",
]


def regression_to_the_mean(
    table: pd.DataFrame | None = None,
    *,
    defining: str = "ANB",
    measures: Sequence[str] | None = None,
    threshold: float = 0.3,
    catalog: pd.DataFrame | None = None,
) -> pd.DataFrame:
    """The measures whose group differences in change partly reflect regression to the mean.

    Parameters
    ----------
    table : DataFrame, optional
        A long lateral ceph measures table (:func:`dentalkit.ceph.measure`): the
        correlation of each measure with the defining one is computed across patients
        at their first session. Without it only shared landmarks are checked.
    defining : str
        The measure whose first-session value defined the groups (default ``"ANB"``,
        the skeletal class).
    measures : sequence of str, optional
        The measures to check (default: those in ``table``, else the catalogue's
        lateral measures).
    threshold : float
        |r| at or above which a correlated measure is at risk without sharing landmarks.
    catalog : DataFrame, optional
        A measures catalogue (default the shipped ``ceph_measures.csv``).

    Returns
    -------
    DataFrame
        One row per measure (:data:`RTM_COLUMNS`), the defining measure first, then the
        others at risk, then the rest: ``shared_landmarks`` (a list), ``correlation``
        (Pearson r at the first session; NaN without ``table``) with ``n_units``
        (patients behind it), ``at_risk`` (shares a landmark, or |r| ≥ ``threshold``, or
        is the defining measure) and ``why`` (a sentence for the report).

    Examples
    --------
    >>> r = regression_to_the_mean(measures=["SNA", "SNB", "FMA"])
    >>> r[["measure", "at_risk"]].to_dict("list")
    {'measure': ['ANB', 'SNA', 'SNB', 'FMA'], 'at_risk': [True, True, True, False]}
    >>> r["shared_landmarks"].iloc[1]
    ['A', 'N', 'S']
    """
    cat = load_measures(catalog)
    if defining not in set(cat["id"]):
        raise InputError(f"defining={defining!r} is not a measure of the catalogue")
    if not 0 <= threshold <= 1:
        raise InputError(f"threshold={threshold!r} must be between 0 and 1")
    first = _first_sessions(table) if table is not None else None
    if measures is None:
        if first is not None:
            measures = [m for m in first.columns if m in set(cat["id"])]
        else:
            measures = cat.loc[cat["view"] == "lateral", "id"].tolist()
    unknown = sorted(set(measures) - set(cat["id"]))
    if unknown:
        raise InputError(f"unknown measure ids {unknown}")
    wanted = [defining, *[m for m in dict.fromkeys(measures) if m != defining]]
    needs = required_landmarks(wanted, cat)
    base = set(needs[defining])
    rows = []
    for m in wanted:
        shared = sorted(base & set(needs[m]))
        r, n = _correlation(first, defining, m)
        risk = m == defining or bool(shared) or (np.isfinite(r) and abs(r) >= threshold)
        rows.append(
            {
                "defining": defining,
                "measure": m,
                "shared_landmarks": shared,
                "correlation": r,
                "n_units": n,
                "at_risk": risk,
                "why": _why(defining, m, shared, r, n, risk, threshold),
            }
        )
    out = pd.DataFrame(rows, columns=RTM_COLUMNS)
    order = np.lexsort((-out["shared_landmarks"].map(len).to_numpy(), ~out["at_risk"].to_numpy()))
    order = [0, *[i for i in order if i != 0]]
    return out.iloc[order].reset_index(drop=True).astype({"n_units": "int64"})


def _first_sessions(table: pd.DataFrame) -> pd.DataFrame:
    """Patients × measures at each patient's first session (lateral view)."""
    from dentalkit.stats import one_row_per_unit

    for col in ("patient_id", "measure", "value"):
        if col not in table.columns:
            raise InputError(f"the measures table lacks column {col!r} (use ceph.measure's output)")
    lat = table[table["view"] == "lateral"] if "view" in table.columns else table
    session = "timestamp" if "timestamp" in lat.columns else "session_time"
    first = one_row_per_unit(lat, "first", session=session, values="value")
    wide = first.pivot_table(
        index="patient_id", columns="measure", values="value", aggfunc="mean", observed=True
    )
    wide.columns = [str(c) for c in wide.columns]
    return wide


def _correlation(first: pd.DataFrame | None, a: str, b: str) -> tuple[float, int]:
    if first is None or a not in first.columns or b not in first.columns:
        return float("nan"), 0
    if a == b:
        return 1.0, int(first[a].notna().sum())
    both = first[[a, b]].dropna()
    if len(both) < 3 or both[a].std() == 0 or both[b].std() == 0:
        return float("nan"), len(both)
    return float(np.corrcoef(both[a], both[b])[0, 1]), len(both)


def _why(defining, m, shared, r, n, risk, threshold) -> str:
    corr = f"r = {r:.2f} with {defining} ({n} patients, first sessions)" if np.isfinite(r) else ""
    fix = f"analyse it baseline-adjusted (stats.growth(group_defined_by={defining!r}))"
    if m == defining:
        return (
            f"{defining} defines the groups at the first session: its change differs between "
            f"groups by regression to the mean alone (the first session's tracing error does "
            f"not recur); {fix}"
        )
    if not risk:
        return (
            f"shares no landmark with {defining}"
            + (f" and {corr} (|r| < {threshold:g})" if corr else "")
            + ": little regression to the mean from the grouping"
        )
    reasons = [f"shares landmarks {', '.join(shared)} with {defining}"] if shared else []
    if corr:
        reasons.append(f"correlates at {corr}")
    return (
        f"{m} {' and '.join(reasons)}: groups defined by the first-session {defining} differ "
        f"in {m}'s baseline error too, so its change by group partly reflects regression to "
        f"the mean; {fix}"
    )
