"""Cohort statistics of predicted treatment length: summaries and calibration (pure functions).

References
----------
.. [BA86] Bland JM, Altman DG. Statistical methods for assessing agreement between two
   methods of clinical measurement. Lancet 1986; 1(8476): 307-310.
.. [BA99] Bland JM, Altman DG. Measuring agreement in method comparison studies.
   Stat Methods Med Res 1999; 8(2): 135-160.
.. [C15] Carkeet A. Exact parametric confidence intervals for Bland-Altman limits of
   agreement. Optom Vis Sci 2015; 92(3): e71-e80.
.. [L89] Lin LI-K. A concordance correlation coefficient to evaluate reproducibility.
   Biometrics 1989; 45(1): 255-268; correction Biometrics 2000; 56(1): 324-325.
.. [ET93] Efron B, Tibshirani RJ. An Introduction to the Bootstrap. Chapman & Hall 1993,
   ch. 14 (BCa intervals).
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd
from scipy import stats as sps

from dentalkit.errors import DentalkitWarning, InputError

__all__ = ["LOA_CI_METHODS", "calibration", "paired_months", "summarize"]

#: Column holding predicted months in the tables of :func:`dentalkit.tle.estimate`.
PREDICTED = "estimate_length_months"
#: Confidence-interval methods for the limits of agreement.
LOA_CI_METHODS = ("bland-altman-1999", "bland-altman-1986", "exact")
#: The same methods under their names in :func:`dentalkit.agreement.bland_altman_moments`.
_AGREEMENT_LOA_CI = {"bland-altman-1999": "1999", "bland-altman-1986": "1986", "exact": "exact"}
_BOOTSTRAP_BATCH_ELEMENTS = 2_000_000  # resamples × n per batch (bounds memory)


def summarize(
    estimates: pd.DataFrame,
    by: str | Sequence[str] | None = None,
    *,
    value: str = PREDICTED,
    confidence_level: float = 0.95,
    n_resamples: int = 9999,
    seed: int = 0,
    method: Literal["BCa", "percentile", "basic"] = "BCa",
    unit: str | None = "patient_id",
) -> pd.DataFrame:
    """Describe predicted treatment lengths of a cohort, overall or per group.

    Parameters
    ----------
    estimates : pandas.DataFrame
        A table with a numeric ``value`` column (months), e.g. from
        :func:`~dentalkit.tle.estimate`.
    by : str or list of str, optional
        Grouping column(s); one row per observed group (missing group values form their
        own group). ``None``: one row for the whole table.
    value : str
        Column to describe; default ``estimate_length_months``.
    confidence_level : float
        Level of the bootstrap interval of the mean (default 0.95).
    n_resamples : int
        Bootstrap resamples (default 9999).
    seed : int
        Seed of the bootstrap generator (``numpy.random.default_rng(seed)``), the same for
        every group, so results do not depend on group order.
    method : {"BCa", "percentile", "basic"}
        ``scipy.stats.bootstrap`` interval method; default bias-corrected and accelerated
        (BCa, [ET93]_).
    unit : str or None
        Column identifying the patient (default ``"patient_id"`` when present): the
        bootstrap resamples values as independent patients, so a patient with several
        rows (several estimates) is refused — keep one estimate per patient first.
        ``None`` takes every row as a patient.

    Returns
    -------
    pandas.DataFrame
        The ``by`` columns, then ``n`` (non-missing values), ``n_missing``, ``mean``,
        ``sd`` (sample SD, ddof = 1), ``median``, ``q1``, ``q3`` (quartiles, linear
        interpolation = Hyndman-Fan type 7, numpy's default), ``iqr`` (q3 − q1), ``min``,
        ``max``, ``ci_low``, ``ci_high`` (bootstrap CI of the mean, resampling patients:
        ``n`` counts patients, one value each). Values in the unit of
        ``value`` (months). ``sd`` and the CI are NaN for fewer than 2 values; when all
        values are equal the CI is the value itself (every resample has that mean).
        ``attrs["ci"]`` states the CI method, level, resamples and seed.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"estimate_length_months": [20.0, 22.0, 24.0, 30.0]})
    >>> s = summarize(t)
    >>> s[["n", "mean", "median", "iqr"]].iloc[0].tolist()
    [4.0, 24.0, 23.0, 4.0]
    """
    if not isinstance(estimates, pd.DataFrame):
        raise InputError(f"estimates must be a DataFrame, got {type(estimates).__name__}")
    keys = [] if by is None else [by] if isinstance(by, str) else list(by)
    absent = [c for c in [value, *keys] if c not in estimates.columns]
    if absent:
        raise InputError(
            f"estimates lacks column(s) {absent}; columns are {list(estimates.columns)}"
        )
    if not 0 < confidence_level < 1:
        raise InputError(f"confidence_level must be between 0 and 1, got {confidence_level}")
    values = pd.to_numeric(estimates[value], errors="coerce")
    bad = values.isna() & estimates[value].notna()
    if bad.any():
        raise InputError(
            f"column {value!r} has non-numeric values at rows "
            f"{estimates.index[bad.to_numpy()][:5].tolist()}; it must hold months as numbers"
        )
    if unit is not None and unit in estimates.columns:
        used = estimates.loc[values.notna().to_numpy()]
        repeated = used[unit].astype("object").duplicated(keep=False)
        if repeated.any():
            example = used.loc[repeated.to_numpy(), unit].iloc[0]
            n_rep = used.loc[repeated.to_numpy(), unit].nunique()
            raise InputError(
                f"tle.summarize: {n_rep} {unit}(s) have more than one estimate (e.g. "
                f"{example!r}); the bootstrap interval treats rows as independent patients. "
                f"Keep one estimate per patient (e.g. dentalkit.stats.one_row_per_unit("
                f"estimates, 'first')), or pass unit=None if the rows are separate patients"
            )
    elif unit is not None and unit != "patient_id":
        raise InputError(f"unit column {unit!r} is not in estimates; use unit=None or add it")
    frame = estimates[keys].assign(_value=values.astype("float64"))
    groups = (
        [((), frame)]
        if not keys
        else frame.groupby(
            keys if len(keys) > 1 else keys[0], observed=True, dropna=False, sort=True
        )
    )
    rows = []
    for key, g in groups:
        key = key if isinstance(key, tuple) else (key,)
        row: dict[str, Any] = dict(zip(keys, key, strict=True))
        row.update(_describe(g["_value"].to_numpy(), confidence_level, n_resamples, seed, method))
        rows.append(row)
    out = pd.DataFrame(rows, columns=[*keys, *_SUMMARY_COLUMNS])
    for k in keys:  # keep the grouping columns' dtypes (categoricals stay categoricals)
        out[k] = out[k].astype(estimates[k].dtype)
    out[list(_SUMMARY_COLUMNS)] = out[list(_SUMMARY_COLUMNS)].astype("float64")
    out.attrs["ci"] = (
        f"{method} bootstrap CI of the mean (scipy.stats.bootstrap), level "
        f"{confidence_level:g}, {n_resamples} resamples, numpy default_rng({seed})"
    )
    return out


_SUMMARY_COLUMNS = (
    "n",
    "n_missing",
    "mean",
    "sd",
    "median",
    "q1",
    "q3",
    "iqr",
    "min",
    "max",
    "ci_low",
    "ci_high",
)


def _describe(
    x: np.ndarray, level: float, n_resamples: int, seed: int, method: str
) -> dict[str, float]:
    ok = x[~np.isnan(x)]
    n = ok.size
    out = dict.fromkeys(_SUMMARY_COLUMNS, np.nan)
    out["n"], out["n_missing"] = n, x.size - n
    if n == 0:
        return out
    q1, median, q3 = np.quantile(ok, [0.25, 0.5, 0.75])
    out.update(mean=ok.mean(), median=median, q1=q1, q3=q3, iqr=q3 - q1, min=ok.min(), max=ok.max())
    if n < 2:
        return out
    out["sd"] = ok.std(ddof=1)
    if np.ptp(ok) == 0:
        out["ci_low"] = out["ci_high"] = ok[0]
        return out
    res = sps.bootstrap(
        (ok,),
        np.mean,
        n_resamples=n_resamples,
        confidence_level=level,
        method=method,
        vectorized=True,
        batch=max(1, _BOOTSTRAP_BATCH_ELEMENTS // n),
        rng=np.random.default_rng(seed),
    )
    out["ci_low"], out["ci_high"] = res.confidence_interval
    return out


def calibration(
    estimates: pd.DataFrame | Sequence[float] | np.ndarray,
    observed_months: str | pd.Series | Sequence[float] | np.ndarray,
    *,
    predicted: str = PREDICTED,
    confidence_level: float = 0.95,
    loa_z: float = 1.96,
    loa_ci: Literal["bland-altman-1999", "bland-altman-1986", "exact"] = "bland-altman-1999",
) -> pd.DataFrame:
    """Agreement and calibration of predicted against observed treatment durations.

    Differences are **predicted − observed** (months): a positive bias means the service
    predicts longer treatment than observed.

    Parameters
    ----------
    estimates : DataFrame or array-like
        A table with the ``predicted`` column (e.g. from :func:`~dentalkit.tle.estimate`)
        or the predicted months themselves.
    observed_months : str, Series or array-like
        Observed durations in months: a column of ``estimates``, a Series with the same
        index labels as ``estimates`` (aligned by label), or an array of the same length
        (aligned by position).
    predicted : str
        Column of predicted months (default ``estimate_length_months``).
    confidence_level : float
        Level of every CI (default 0.95).
    loa_z : float
        Multiplier of the SD for the limits of agreement: 1.96 (95 % limits, [BA99]_) or
        2 as in the worked example of [BA86]_.
    loa_ci : {"bland-altman-1999", "bland-altman-1986", "exact"}
        CI of each limit: SE = s·√(1/n + z²/(2(n−1))) with t(n−1) quantiles ([BA99]_, the
        default); SE = s·√((1 + z²/2)/n) ([BA86]_, √(3s²/n) for z = 2); or the exact
        interval from non-central t quantiles ([C15]_, limits considered individually).

    Returns
    -------
    pandas.DataFrame
        One row per statistic with columns ``statistic``, ``estimate``, ``ci_low``,
        ``ci_high``, ``unit``, ``definition``. Statistics: ``n_pairs``, ``n_excluded``
        (pairs with a missing value), ``mean_predicted``, ``mean_observed``, ``bias``
        (mean difference, CI from t(n−1)), ``sd_difference`` (ddof = 1), ``loa_lower``,
        ``loa_upper`` (bias ∓ z·SD), ``mae``, ``rmse``, ``calibration_slope`` and
        ``calibration_intercept`` (OLS of observed on predicted,
        ``observed = intercept + slope × predicted``, CIs from t(n−2); perfect
        calibration is slope 1, intercept 0), ``pearson_r`` (CI by Fisher's z) and
        ``ccc`` (Lin's concordance correlation coefficient [L89]_, CI by Fisher's z with
        Lin's asymptotic variance). ``attrs`` records the difference direction and
        methods.

    Raises
    ------
    InputError
        Fewer than 3 complete pairs, misaligned or non-numeric inputs, unknown method.

    Warns
    -----
    DentalkitWarning
        When the predictions (or observations) are all equal: slope, intercept, r and
        CCC are then undefined (NaN).

    Examples
    --------
    >>> cal = calibration([20.0, 24.0, 30.0, 18.0], [22.0, 23.0, 33.0, 18.0])
    >>> cal.set_index("statistic").loc[["bias", "mae"], "estimate"].round(2).tolist()
    [-1.0, 1.5]
    """
    if loa_ci not in LOA_CI_METHODS:
        raise InputError(f"loa_ci must be one of {LOA_CI_METHODS}, got {loa_ci!r}")
    if not 0 < confidence_level < 1:
        raise InputError(f"confidence_level must be between 0 and 1, got {confidence_level}")
    pred, obs = paired_months(estimates, observed_months, predicted)
    complete = ~(np.isnan(pred) | np.isnan(obs))
    n_excluded = int((~complete).sum())
    x, y = pred[complete], obs[complete]
    n = x.size
    if n < 3:
        raise InputError(
            f"calibration needs at least 3 complete (predicted, observed) pairs, got {n} "
            f"({n_excluded} excluded for missing values)"
        )
    from dentalkit.agreement import bland_altman_moments

    d = x - y
    bias, sd = d.mean(), d.std(ddof=1)
    ba = {  # the package's one Bland–Altman implementation
        k: float(v)
        for k, v in bland_altman_moments(
            n, bias, sd, agreement=loa_z, confidence=confidence_level,
            loa_ci=_AGREEMENT_LOA_CI[loa_ci],
        ).items()
    }  # fmt: skip
    lower_ci = (ba["loa_low_ci_low"], ba["loa_low_ci_high"])
    upper_ci = (ba["loa_high_ci_low"], ba["loa_high_ci_high"])

    rows: list[tuple] = [
        ("n_pairs", n, np.nan, np.nan, "count", "complete (predicted, observed) pairs"),
        ("n_excluded", n_excluded, np.nan, np.nan, "count", "pairs with a missing value"),
        ("mean_predicted", x.mean(), np.nan, np.nan, "months", "mean of predicted"),
        ("mean_observed", y.mean(), np.nan, np.nan, "months", "mean of observed"),
        ("bias", bias, ba["bias_ci_low"], ba["bias_ci_high"], "months",
         "mean of predicted − observed; CI from t(n−1)"),
        ("sd_difference", sd, np.nan, np.nan, "months", "SD of predicted − observed (ddof=1)"),
        ("loa_lower", ba["loa_low"], *lower_ci, "months", f"bias − {loa_z:g}·SD; CI {loa_ci}"),
        ("loa_upper", ba["loa_high"], *upper_ci, "months", f"bias + {loa_z:g}·SD; CI {loa_ci}"),
        ("mae", np.abs(d).mean(), np.nan, np.nan, "months", "mean |predicted − observed|"),
        ("rmse", np.sqrt(np.mean(d**2)), np.nan, np.nan, "months",
         "√ mean (predicted − observed)²"),
    ]  # fmt: skip
    rows += _association(x, y, confidence_level)
    out = pd.DataFrame(
        rows, columns=["statistic", "estimate", "ci_low", "ci_high", "unit", "definition"]
    )
    out = out.astype(
        {"statistic": "str", "estimate": "float64", "ci_low": "float64", "ci_high": "float64",
         "unit": "str", "definition": "str"}
    )  # fmt: skip
    out.attrs.update(
        difference="predicted − observed (months)",
        confidence_level=confidence_level,
        loa_z=loa_z,
        loa_ci=loa_ci,
    )
    return out


def paired_months(
    estimates: Any, observed: Any, predicted: str = PREDICTED
) -> tuple[np.ndarray, np.ndarray]:
    """Predicted and observed treatment lengths as two aligned float arrays (months).

    The one place that pairs predictions with outcomes, for :func:`calibration` and the
    TLE figures alike.

    Parameters
    ----------
    estimates : DataFrame or array-like
        A table holding ``predicted`` (e.g. from :func:`dentalkit.tle.estimate`), or the
        predicted months themselves.
    observed : str, Series or array-like
        A column of ``estimates``; a Series aligned on its index labels; or one value per
        estimate, in order.
    predicted : str
        Column of predicted months in ``estimates``.

    Returns
    -------
    (ndarray, ndarray)
        Predicted and observed months, float64, NaN where missing (pairs are not dropped).

    Raises
    ------
    InputError
        Absent columns, misaligned or repeated labels, lengths that differ, non-numeric or
        infinite values.
    """
    if isinstance(estimates, pd.DataFrame):
        if predicted not in estimates.columns:
            raise InputError(
                f"estimates lacks the predicted column {predicted!r}; pass predicted=<column>"
            )
        pred_s = estimates[predicted]
        if isinstance(observed, str):
            if observed not in estimates.columns:
                raise InputError(f"estimates has no observed column {observed!r}")
            obs_s = estimates[observed]
        elif isinstance(observed, pd.Series):
            if not observed.index.sort_values().equals(estimates.index.sort_values()):
                raise InputError(
                    "observed_months is a Series whose index labels differ from the "
                    "estimates' index; align them (or pass observed.to_numpy() for "
                    "positional pairing)"
                )
            if not observed.index.is_unique:
                raise InputError("observed_months has repeated index labels; cannot align")
            obs_s = observed.reindex(estimates.index)
        else:
            obs_arr = np.asarray(observed)
            if obs_arr.ndim != 1 or len(obs_arr) != len(estimates):
                raise InputError(
                    f"observed_months has shape {obs_arr.shape} for {len(estimates)} estimates; "
                    "give one observed duration per estimate"
                )
            obs_s = pd.Series(obs_arr, index=estimates.index)
    else:
        if isinstance(observed, str):
            raise InputError("observed_months names a column, but estimates is not a DataFrame")
        pred_s, obs_s = pd.Series(np.asarray(estimates)), pd.Series(np.asarray(observed))
        if len(pred_s) != len(obs_s):
            raise InputError(f"{len(pred_s)} predicted values but {len(obs_s)} observed values")
    arrays = []
    for name, s in (("predicted", pred_s), ("observed_months", obs_s)):
        num = pd.to_numeric(s, errors="coerce")
        if (num.isna() & s.notna()).any():
            raise InputError(f"{name} has non-numeric values; give months as numbers")
        arr = num.to_numpy(dtype="float64", na_value=np.nan)
        if np.isinf(arr).any():
            raise InputError(f"{name} has infinite values")
        arrays.append(arr)
    return arrays[0], arrays[1]


def _loa_ci(
    bias: float, sd: float, n: int, z: float, level: float, method: str
) -> tuple[tuple[float, float], tuple[float, float]]:
    """Confidence intervals of both limits, from the package's one Bland–Altman implementation."""
    from dentalkit.agreement import bland_altman_moments

    r = bland_altman_moments(
        n, bias, sd, agreement=z, confidence=level, loa_ci=_AGREEMENT_LOA_CI[method]
    )
    low = (r["loa_low_ci_low"], r["loa_low_ci_high"])
    return low, (r["loa_high_ci_low"], r["loa_high_ci_high"])


def _association(x: np.ndarray, y: np.ndarray, level: float) -> list[tuple]:
    n = x.size
    names = ("calibration_slope", "calibration_intercept", "pearson_r", "ccc")
    if np.ptp(x) == 0 or np.ptp(y) == 0:
        which = "predicted" if np.ptp(x) == 0 else "observed"
        warnings.warn(
            f"all {which} values are equal: calibration slope, intercept, Pearson r and "
            "CCC are undefined (NaN)",
            DentalkitWarning,
            stacklevel=3,
        )
        return [(s, np.nan, np.nan, np.nan, "", "undefined: constant values") for s in names]
    fit = sps.linregress(x, y)
    t_n2 = sps.t.ppf(1 - (1 - level) / 2, n - 2)
    r = fit.rvalue
    r_ci = sps.pearsonr(x, y).confidence_interval(confidence_level=level)
    ccc, ccc_ci = _lin_ccc(x, y, r, level)
    return [
        ("calibration_slope", fit.slope, fit.slope - t_n2 * fit.stderr,
         fit.slope + t_n2 * fit.stderr, "1",
         "OLS slope of observed on predicted (1 = calibrated); CI from t(n−2)"),
        ("calibration_intercept", fit.intercept, fit.intercept - t_n2 * fit.intercept_stderr,
         fit.intercept + t_n2 * fit.intercept_stderr, "months",
         "OLS intercept of observed on predicted (0 = calibrated); CI from t(n−2)"),
        ("pearson_r", r, r_ci.low, r_ci.high, "1", "Pearson correlation; CI by Fisher's z"),
        ("ccc", ccc, *ccc_ci, "1",
         "Lin's concordance correlation coefficient; CI by Fisher's z (Lin 1989/2000)"),
    ]  # fmt: skip


def _lin_ccc(x: np.ndarray, y: np.ndarray, r: float, level: float) -> tuple[float, tuple]:
    """Lin's CCC with moments of divisor n, and its Fisher-z CI (Lin 1989, 2000)."""
    n = x.size
    sx2, sy2 = x.var(), y.var()  # ddof = 0, as in Lin (1989)
    sxy = np.mean((x - x.mean()) * (y - y.mean()))
    shift = x.mean() - y.mean()
    rc = 2 * sxy / (sx2 + sy2 + shift**2)
    if abs(rc) >= 1:  # perfect agreement: no sampling variability left to estimate
        return rc, (rc, rc)
    u2 = shift**2 / np.sqrt(sx2 * sy2)  # squared location shift relative to scale
    var_rc = (
        (1 - r**2) * rc**2 * (1 - rc**2) / r**2
        + 2 * rc**3 * (1 - rc) * u2 / r
        - rc**4 * u2**2 / (2 * r**2)
    ) / (n - 2)
    se_z = np.sqrt(max(var_rc, 0.0)) / (1 - rc**2)
    zq = sps.norm.ppf(1 - (1 - level) / 2)
    zc = np.arctanh(rc)
    return rc, (float(np.tanh(zc - zq * se_z)), float(np.tanh(zc + zq * se_z)))
