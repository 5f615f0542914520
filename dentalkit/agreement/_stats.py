"""Agreement statistics on plain arrays: Bland–Altman, Dahlberg, intervals.

Hand-written here only what no maintained package returns as numbers:

- Bland–Altman bias, limits of agreement (LoA) and their confidence intervals
  (Bland & Altman 1986, *Lancet* 327:307–310; 1999, *Stat Methods Med Res* 8:135–160;
  exact intervals of Carkeet 2015, *Optom Vis Sci* 92:e71–e80). pingouin and statsmodels
  only *plot* them. This is the package's one implementation: :func:`dentalkit.tle.calibration`
  calls :func:`bland_altman_moments` too.
- Dahlberg's method error ``sqrt(Σd² / 2n)`` (Dahlberg 1940; Houston 1983,
  *Am J Orthod* 83:382–390).
- Limits of agreement with several pairs per subject whose true value varies (Bland &
  Altman 2007, *J Biopharm Stat* 17:571–582): one-way ANOVA variance components of the
  differences.

Delegated to maintained packages:

- the intraclass correlation to :func:`pingouin.intraclass_corr` (ANOVA estimates of
  Shrout & Fleiss 1979, CIs of McGraw & Wong 1996);
- Cohen's kappa and its asymptotic standard error to
  :func:`statsmodels.stats.inter_rater.cohens_kappa` (Fleiss, Cohen & Everitt 1969);
- Wilson intervals of proportions to :func:`statsmodels.stats.proportion.proportion_confint`;
- Student t quantiles to :mod:`scipy.stats`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import pandas as pd
from scipy import stats as sps

from dentalkit.errors import InputError

__all__ = [
    "LOA_CI_METHODS",
    "bland_altman",
    "bland_altman_moments",
    "bland_altman_repeated",
    "check_confidence",
    "dahlberg",
    "repeated_moments",
    "t_interval",
    "wilson_interval",
]

#: Confidence-interval formulas for the limits of agreement (see :func:`bland_altman_moments`).
LOA_CI_METHODS = ("1999", "1986", "exact")
LoaCI = Literal["1999", "1986", "exact"]


def check_confidence(confidence: float) -> float:
    c = float(confidence)
    if not 0.0 < c < 1.0:
        raise InputError(f"confidence must be between 0 and 1 (e.g. 0.95), got {confidence!r}")
    return c


def t_interval(
    mean: np.ndarray | float, sd: np.ndarray | float, n: np.ndarray | float, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """Student-t confidence interval of a mean, ``mean ± t(n−1)·sd/√n`` (vectorized).

    NaN where ``n < 2``.
    """
    c = check_confidence(confidence)
    mean, sd, n = (np.asarray(v, dtype=float) for v in (mean, sd, n))
    ok = n >= 2
    with np.errstate(invalid="ignore", divide="ignore"):
        t = np.where(ok, sps.t.ppf(0.5 + c / 2, np.where(ok, n - 1, 1)), np.nan)
        half = t * sd / np.sqrt(n)
    return mean - half, mean + half


def wilson_interval(
    successes: np.ndarray, n: np.ndarray, confidence: float
) -> tuple[np.ndarray, np.ndarray]:
    """Wilson score interval of a proportion (statsmodels), NaN where ``n == 0``."""
    from statsmodels.stats.proportion import proportion_confint

    c = check_confidence(confidence)
    k = np.asarray(successes, dtype=float)
    m = np.asarray(n, dtype=float)
    ok = m > 0
    low = np.full(k.shape, np.nan)
    high = np.full(k.shape, np.nan)
    if ok.any():
        lo, hi = proportion_confint(k[ok], m[ok], alpha=1 - c, method="wilson")
        low[ok], high[ok] = lo, hi
    return low, high


def bland_altman_moments(
    n: np.ndarray | float,
    bias: np.ndarray | float,
    sd: np.ndarray | float,
    *,
    agreement: float = 1.96,
    confidence: float = 0.95,
    loa_ci: LoaCI = "1999",
) -> dict[str, np.ndarray]:
    """Bland–Altman statistics from the number, mean and SD of paired differences.

    Vectorized: every argument may be an array (one entry per measure).

    Parameters
    ----------
    n : array_like
        Number of pairs.
    bias : array_like
        Mean difference d̄ (test − reference), in the measure's unit.
    sd : array_like
        Standard deviation s of the differences (``ddof=1``).
    agreement : float
        Multiplier of s for the limits of agreement: 1.96 (Bland & Altman 1999)
        or 2 (Bland & Altman 1986).
    confidence : float
        Level of the confidence intervals (0.95).
    loa_ci : {"1999", "1986", "exact"}
        Confidence interval of a limit d̄ ± z·s. ``"1999"``: standard error
        ``s·sqrt(1/n + z²/(2(n−1)))`` (Bland & Altman 1999); ``"1986"``: the approximation
        ``s·sqrt((1 + z²/2)/n)``, which is Bland & Altman's (1986) ``sqrt(3s²/n)`` at
        z = 2; both with Student's t quantile on n − 1 degrees of freedom. ``"exact"``:
        quantiles of the non-central t distribution with n − 1 degrees of freedom and
        non-centrality z·√n (Carkeet 2015; each limit considered on its own), for which
        ``loa_se`` is NaN.

    Returns
    -------
    dict of numpy.ndarray
        ``bias_ci_low``, ``bias_ci_high`` (t interval of d̄), ``t``, ``p_bias``
        (paired t test of d̄ = 0, Houston 1983's test of systematic error),
        ``loa_low``, ``loa_high``, ``loa_se``, ``loa_low_ci_low``,
        ``loa_low_ci_high``, ``loa_high_ci_low``, ``loa_high_ci_high``.
        NaN where ``n < 2``.

    Examples
    --------
    Bland & Altman (1986): d̄ = −2.1 l/min, s = 38.8 l/min, n = 17, LoA d̄ ± 2s.

    >>> r = bland_altman_moments(17, -2.1, 38.8, agreement=2, loa_ci="1986")
    >>> [round(float(r[k]), 1) for k in ("loa_low", "loa_high", "loa_low_ci_low")]
    [-79.7, 75.5, -114.3]
    """
    c = check_confidence(confidence)
    if loa_ci not in LOA_CI_METHODS:
        raise InputError(f"loa_ci must be one of {LOA_CI_METHODS}, got {loa_ci!r}")
    z = float(agreement)
    if not np.isfinite(z) or z <= 0:
        raise InputError(f"agreement (the LoA multiplier) must be positive, got {agreement!r}")
    n, bias, sd = (np.asarray(v, dtype=float) for v in (n, bias, sd))
    ok = n >= 2
    nn = np.where(ok, n, np.nan)
    with np.errstate(invalid="ignore", divide="ignore"):
        tq = sps.t.ppf(0.5 + c / 2, nn - 1)
        se_bias = sd / np.sqrt(nn)
        t = bias / se_bias
        p = 2.0 * sps.t.sf(np.abs(t), nn - 1)
        low = bias - z * sd
        high = bias + z * sd
        if loa_ci == "exact":
            # Carkeet 2015: (d̄ − θ)·√n / s ~ non-central t(n − 1, −z√n) for θ = μ + zσ.
            k_lo = sps.nct.ppf((1 - c) / 2, nn - 1, z * np.sqrt(nn)) / np.sqrt(nn)
            k_hi = sps.nct.ppf(0.5 + c / 2, nn - 1, z * np.sqrt(nn)) / np.sqrt(nn)
            loa_se = np.full(np.broadcast(nn, sd).shape, np.nan)
            limits = (bias - k_hi * sd, bias - k_lo * sd, bias + k_lo * sd, bias + k_hi * sd)
        else:
            if loa_ci == "1999":
                loa_se = sd * np.sqrt(1.0 / nn + z**2 / (2.0 * (nn - 1)))
            else:  # 1986: var(d̄ ± z·s) ≈ s²/n + z²s²/(2n), i.e. 3s²/n at z = 2
                loa_se = sd * np.sqrt((1.0 + z**2 / 2.0) / nn)
            limits = (low - tq * loa_se, low + tq * loa_se, high - tq * loa_se, high + tq * loa_se)
    out = {
        "bias_ci_low": bias - tq * se_bias,
        "bias_ci_high": bias + tq * se_bias,
        "t": t,
        "p_bias": p,
        "loa_low": low,
        "loa_high": high,
        "loa_se": loa_se,
        "loa_low_ci_low": limits[0],
        "loa_low_ci_high": limits[1],
        "loa_high_ci_low": limits[2],
        "loa_high_ci_high": limits[3],
    }
    return {k: np.where(ok, v, np.nan) for k, v in out.items()}


def _paired(reference: Sequence[float], test: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    r = np.asarray(reference, dtype=float).ravel()
    t = np.asarray(test, dtype=float).ravel()
    if r.shape != t.shape:
        raise InputError(
            f"reference and test must have the same length (paired values), got {r.size} and {t.size}"
        )
    bad = ~(np.isfinite(r) & np.isfinite(t))
    if bad.any():
        raise InputError(
            f"{int(bad.sum())} pair(s) with a missing or non-finite value (first at position "
            f"{int(np.flatnonzero(bad)[0])}); drop them first"
        )
    return r, t


def bland_altman(
    reference: Sequence[float],
    test: Sequence[float],
    *,
    agreement: float = 1.96,
    confidence: float = 0.95,
    loa_ci: LoaCI = "1999",
) -> pd.Series:
    """Bland–Altman analysis of paired measurements (differences test − reference).

    Parameters
    ----------
    reference, test : array_like
        Paired values in the same unit.
    agreement, confidence, loa_ci
        See :func:`bland_altman_moments`.

    Returns
    -------
    pandas.Series
        ``n``, ``bias``, ``sd_diff`` and every entry of :func:`bland_altman_moments`.

    References
    ----------
    Bland JM, Altman DG. Statistical methods for assessing agreement between two
    methods of clinical measurement. *Lancet* 1986;327:307–310.
    Bland JM, Altman DG. Measuring agreement in method comparison studies.
    *Stat Methods Med Res* 1999;8:135–160.

    Examples
    --------
    >>> s = bland_altman([10.0, 12.0, 14.0], [11.0, 12.5, 15.5])
    >>> round(float(s["bias"]), 3), round(float(s["sd_diff"]), 3)
    (1.0, 0.5)
    """
    r, t = _paired(reference, test)
    d = t - r
    n = d.size
    if n < 2:
        raise InputError(f"Bland–Altman needs at least 2 pairs, got {n}")
    bias = float(d.mean())
    sd = float(d.std(ddof=1))
    res = bland_altman_moments(
        n, bias, sd, agreement=agreement, confidence=confidence, loa_ci=loa_ci
    )
    return pd.Series({"n": n, "bias": bias, "sd_diff": sd} | {k: float(v) for k, v in res.items()})


def dahlberg(reference: Sequence[float], test: Sequence[float]) -> float:
    """Dahlberg's method error ``sqrt(Σ d² / 2n)`` of paired (duplicate) measurements.

    It pools random and systematic error; report it with the bias and its test
    (Houston 1983).

    References
    ----------
    Dahlberg G. *Statistical methods for medical and biological students.* London:
    Allen & Unwin, 1940. Houston WJB. The analysis of errors in orthodontic
    measurements. *Am J Orthod* 1983;83:382–390.

    Examples
    --------
    >>> dahlberg([1.0, 2.0], [2.0, 2.0])  # sqrt(1 / (2·2))
    0.5
    """
    r, t = _paired(reference, test)
    if r.size == 0:
        raise InputError("Dahlberg's method error needs at least one pair")
    return float(np.sqrt(np.sum((t - r) ** 2) / (2 * r.size)))


def repeated_moments(
    d: np.ndarray, units: np.ndarray, *, agreement: float = 1.96, confidence: float = 0.95
) -> dict[str, float]:
    """Bland & Altman's (2007) repeated-measures limits from differences and their units.

    The true value may change between a subject's pairs (sessions a year apart), so the
    differences of one subject are not replicates of one quantity: their variance splits
    into a between-subject and a within-subject component, estimated from the one-way
    ANOVA of the differences on the subject (method-of-moments, unequal numbers of pairs):
    MS_w = Σᵢⱼ(dᵢⱼ − d̄ᵢ)²/(N − n), MS_b = Σᵢ mᵢ(d̄ᵢ − d̄)²/(n − 1),
    σ²_b = max(0, (MS_b − MS_w)(n − 1)N/(N² − Σmᵢ²)), σ²_w = MS_w. The limits are
    d̄ ± z·√(σ²_b + σ²_w), d̄ the mean of all N differences. The bias interval is
    d̄ ± t_{n−1}·√((σ²_b·Σmᵢ² + σ²_w·N)/N²), the variance of d̄ under that model, on the
    subjects' degrees of freedom; Bland & Altman give no interval for the limits.

    Parameters
    ----------
    d : array of float
        Differences (test − reference), N ≥ 2, from n ≥ 2 units with N > n.
    units : array
        The unit (subject, patient) of each difference.

    Returns
    -------
    dict
        ``n``, ``n_units``, ``bias``, ``bias_ci_low``, ``bias_ci_high``, ``t``,
        ``p_bias``, ``sd_between``, ``sd_within``, ``sd_total``, ``loa_low``, ``loa_high``.
    """
    c = check_confidence(confidence)
    d = np.asarray(d, dtype=float)
    _, u = np.unique(np.asarray(units, dtype=object).astype(str), return_inverse=True)
    m = np.bincount(u).astype(float)
    big_n, n = float(len(d)), float(len(m))
    bias = float(d.mean())
    means = np.bincount(u, weights=d) / m
    ms_w = float(((d - means[u]) ** 2).sum() / (big_n - n)) if big_n > n else np.nan
    ms_b = float((m * (means - bias) ** 2).sum() / (n - 1)) if n > 1 else np.nan
    divisor = (big_n**2 - (m**2).sum()) / ((n - 1) * big_n) if n > 1 else np.nan
    var_b = max(0.0, (ms_b - ms_w) / divisor) if divisor and np.isfinite(divisor) else np.nan
    sd_total = float(np.sqrt(var_b + ms_w))
    se_bias = float(np.sqrt((var_b * (m**2).sum() + ms_w * big_n) / big_n**2))
    with np.errstate(invalid="ignore", divide="ignore"):
        tq = sps.t.ppf(0.5 + c / 2, n - 1)
        t = bias / se_bias
        p = 2.0 * sps.t.sf(abs(t), n - 1)
    z = float(agreement)
    return {
        "n": int(big_n),
        "n_units": int(n),
        "bias": bias,
        "bias_ci_low": bias - tq * se_bias,
        "bias_ci_high": bias + tq * se_bias,
        "t": float(t),
        "p_bias": float(p),
        "sd_between": float(np.sqrt(var_b)),
        "sd_within": float(np.sqrt(ms_w)),
        "sd_total": sd_total,
        "loa_low": bias - z * sd_total,
        "loa_high": bias + z * sd_total,
    }


def bland_altman_repeated(
    reference: Sequence[float],
    test: Sequence[float],
    units: Sequence,
    *,
    agreement: float = 1.96,
    confidence: float = 0.95,
) -> pd.Series:
    """Bland–Altman limits of agreement with several pairs per subject (Bland & Altman 2007).

    For pairs of measurements taken on the same subjects more than once, when the true
    value may change between occasions (sessions of a growing patient): the SD of the
    differences combines their between- and within-subject components
    (:func:`repeated_moments`), so the limits cover single differences without treating a
    subject's pairs as different subjects.

    Parameters
    ----------
    reference, test : array_like
        Paired values in the same unit.
    units : array_like
        The subject (patient) of each pair.
    agreement, confidence
        See :func:`bland_altman_moments`.

    Returns
    -------
    pandas.Series
        See :func:`repeated_moments`.

    References
    ----------
    Bland JM, Altman DG. Agreement between methods of measurement with multiple
    observations per individual. *J Biopharm Stat* 2007;17:571–582.

    Examples
    --------
    Bland & Altman (2007), §3: 60 pairs of 12 subjects (RV − IC) give bias 0.6022, SD
    0.9906 and limits −1.339 to 2.544 (``tests/agreement/test_agreement_stats.py``).

    >>> r = bland_altman_repeated([1.0, 2.0, 3.0, 5.0], [1.5, 2.0, 3.5, 5.5], ["a", "a", "b", "b"])
    >>> round(float(r["bias"]), 3), int(r["n_units"])
    (0.375, 2)
    """
    r, t = _paired(reference, test)
    u = pd.Series(list(units), dtype=object)
    if len(u) != r.size:
        raise InputError(f"units must give the subject of each pair ({r.size}), got {len(u)}")
    if u.isna().any():
        raise InputError("units has missing values: every pair needs its subject")
    n_units = u.nunique()
    if n_units < 2 or r.size <= n_units:
        raise InputError(
            f"repeated-measures limits need ≥ 2 subjects and more pairs than subjects; got "
            f"{r.size} pair(s) of {n_units} subject(s) (with one pair per subject use "
            "bland_altman)"
        )
    return pd.Series(
        repeated_moments(t - r, u.to_numpy(), agreement=agreement, confidence=confidence)
    )
