"""Left/right symmetry of paired teeth (private; public as ``dentalkit.teeth.symmetry``)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd
from scipy import stats

from dentalkit.errors import InputError
from dentalkit.stats._tables import require_columns, select_sessions

__all__ = ["Symmetry", "symmetry"]

PAIR_KEY = ["patient_id", "timestamp", "source", "arch", "tooth_type"]


class Symmetry(NamedTuple):
    """Result of :func:`symmetry`: three tidy tables.

    Attributes
    ----------
    pairs : DataFrame
        One row per left/right pair (session, source, arch, tooth type):
        ``value_rgt``, ``value_lft``, ``ratio`` (right / left), ``log_ratio``,
        ``difference`` (right − left), ``asymmetry_pct`` (100·(R − L)/((R + L)/2)),
        ``complete`` (both sides measured).
    per_patient : DataFrame
        One row per patient session and source: ``n_pairs`` (complete pairs),
        ``gm_ratio`` (geometric mean of the pair ratios), ``mean_difference``,
        ``mean_abs_asymmetry_pct``.
    cohort : DataFrame
        One row per source, arch and tooth type: ``n_patients``, ``gm_ratio``
        with ``gm_ratio_ci_low/high``, ``mean_difference`` with
        ``difference_ci_low/high``, ``sd_difference``, ``mean_abs_asymmetry_pct``.
    """

    pairs: pd.DataFrame
    per_patient: pd.DataFrame
    cohort: pd.DataFrame


def symmetry(
    measured: pd.DataFrame,
    value: str = "area",
    *,
    session: str = "all",
    confidence: float = 0.95,
) -> Symmetry:
    """Compare each tooth with its antimere (same session, source, arch and type).

    Parameters
    ----------
    measured : DataFrame
        Output of :func:`dentalkit.teeth.measure` (or any table with the
        session key, ``source``, ``arch``, ``tooth_type``, ``side`` and the
        ``value`` column).
    value : str
        Measure to compare (``"area"``, ``"md_width"``, …); must be > 0 for
        ratios.
    session : {"all", "first", "last"}
        Which sessions of each patient to use.
    confidence : float
        Level of the cohort confidence intervals.

    Returns
    -------
    Symmetry
        ``(pairs, per_patient, cohort)``.

    Notes
    -----
    The **patient's right** tooth is the numerator of ``ratio`` and the
    minuend of ``difference`` (``side == "rgt"``, FDI quadrants 1 and 4), so
    ratio > 1 and difference > 0 mean the right tooth is larger. A tooth whose
    antimere is missing (or not segmented) gives an incomplete pair, kept in
    ``pairs`` with NaN ratio and left out of every summary.

    The cohort summary first averages each patient's sessions, so every
    patient counts once, then reports the geometric mean ratio
    exp(mean(log R/L)) — unchanged in meaning when the sides are swapped,
    unlike the arithmetic mean of ratios — with a t-based confidence interval
    computed on the log scale and transformed back, and the mean right − left
    difference with its t interval (the interval of a paired t-test).

    Examples
    --------
    >>> import pandas as pd
    >>> m = pd.DataFrame(
    ...     {
    ...         "patient_id": ["p1", "p1"],
    ...         "timestamp": ["t0", "t0"],
    ...         "source": ["pano", "pano"],
    ...         "arch": ["up", "up"],
    ...         "tooth_type": ["m1", "m1"],
    ...         "side": ["rgt", "lft"],
    ...         "area": [110.0, 100.0],
    ...     }
    ... )
    >>> symmetry(m).pairs[["ratio", "difference"]].round(6).to_dict("records")
    [{'ratio': 1.1, 'difference': 10.0}]
    """
    require_columns(
        measured,
        [*PAIR_KEY, "side", value],
        "measured",
        "Pass the output of dentalkit.teeth.measure(teeth).",
    )
    if not pd.api.types.is_numeric_dtype(measured[value]):
        raise InputError(f"column {value!r} is not numeric; pick a measure such as 'area'")
    sides = set(measured["side"].dropna().astype("object").unique())
    if not sides <= {"rgt", "lft"}:
        raise InputError(
            f"side must be 'rgt' or 'lft'; found {sorted(map(str, sides - {'rgt', 'lft'}))}"
        )
    table = select_sessions(measured, session)
    keys = [*PAIR_KEY, "side"]
    dup = table.duplicated(keys, keep=False)
    if dup.any():
        example = table.loc[dup, keys].head(2).astype("object").to_dict("records")
        raise InputError(
            f"several rows for the same tooth, e.g. {example}; one row per tooth, source and session"
        )
    pairs = _pairs(table, value)
    return Symmetry(pairs, _per_patient(pairs), _cohort(pairs, confidence))


def _pairs(table: pd.DataFrame, value: str) -> pd.DataFrame:
    keys = list(PAIR_KEY)
    extra = [c for c in ("session_time", "unit") if c in table.columns]
    work = table[[*keys, *extra, "side", value]].astype({k: "object" for k in keys})
    wide = work.pivot(index=keys, columns="side", values=value)
    wide = wide.reindex(columns=["rgt", "lft"]).rename(
        columns={"rgt": "value_rgt", "lft": "value_lft"}
    )
    wide.columns.name = None
    out = wide.reset_index()
    if extra:
        out = out.merge(work[[*keys, *extra]].drop_duplicates(keys), on=keys, how="left")
    r = out["value_rgt"].to_numpy(dtype=float)
    left = out["value_lft"].to_numpy(dtype=float)
    complete = np.isfinite(r) & np.isfinite(left)
    positive = complete & (r > 0) & (left > 0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out["ratio"] = np.where(positive, r / left, np.nan)
        out["log_ratio"] = np.where(positive, np.log(r / left), np.nan)
        out["difference"] = np.where(complete, r - left, np.nan)
        out["asymmetry_pct"] = np.where(positive, 100 * (r - left) / ((r + left) / 2), np.nan)
    out["complete"] = complete
    out["value"] = value
    return out.sort_values(keys, kind="stable", ignore_index=True)


def _per_patient(pairs: pd.DataFrame) -> pd.DataFrame:
    used = pairs[pairs["complete"]].assign(abs_asym=lambda d: d["asymmetry_pct"].abs())
    g = used.groupby(["patient_id", "timestamp", "source"], sort=True, observed=True)
    out = g.agg(
        n_pairs=("complete", "size"),
        mean_log_ratio=("log_ratio", "mean"),
        mean_difference=("difference", "mean"),
        mean_abs_asymmetry_pct=("abs_asym", "mean"),
    ).reset_index()
    out.insert(4, "gm_ratio", np.exp(out.pop("mean_log_ratio")))
    return out


def _cohort(pairs: pd.DataFrame, confidence: float) -> pd.DataFrame:
    used = pairs[pairs["complete"]].assign(abs_asym=lambda d: d["asymmetry_pct"].abs())
    keys = ["source", "arch", "tooth_type"]
    per_patient = (
        used.groupby([*keys, "patient_id"], sort=True, observed=True)[
            ["log_ratio", "difference", "abs_asym"]
        ]
        .mean()
        .reset_index()
    )
    g = per_patient.groupby(keys, sort=True, observed=True)
    out = g.agg(
        n_patients=("patient_id", "size"),
        mean_log=("log_ratio", "mean"),
        sd_log=("log_ratio", "std"),
        n_log=("log_ratio", "count"),
        mean_difference=("difference", "mean"),
        sd_difference=("difference", "std"),
        mean_abs_asymmetry_pct=("abs_asym", "mean"),
    ).reset_index()
    n = out["n_patients"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        tq = stats.t.ppf(0.5 + confidence / 2, n - 1)
        half_log = tq * out["sd_log"].to_numpy() / np.sqrt(out["n_log"].to_numpy(dtype=float))
        half_diff = tq * out["sd_difference"].to_numpy() / np.sqrt(n)
    mean_log = out.pop("mean_log").to_numpy()
    out.insert(4, "gm_ratio", np.exp(mean_log))
    out.insert(5, "gm_ratio_ci_low", np.exp(mean_log - half_log))
    out.insert(6, "gm_ratio_ci_high", np.exp(mean_log + half_log))
    md = out["mean_difference"].to_numpy()
    out.insert(out.columns.get_loc("mean_difference") + 1, "difference_ci_low", md - half_diff)
    out.insert(out.columns.get_loc("difference_ci_low") + 1, "difference_ci_high", md + half_diff)
    out["confidence"] = confidence
    return out.drop(columns=["sd_log", "n_log"])
