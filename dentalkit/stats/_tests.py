"""One function per statistical test; each returns the fields of one result row (private).

scipy, statsmodels and pingouin do the statistics; this module only calls
them, orients their results (first group minus second) and adds the effect
size that belongs to each test. Bootstrap intervals use
:func:`scipy.stats.bootstrap` (BCa) with a fixed seed, so results repeat.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy import stats

from dentalkit.errors import require

Row = dict[str, Any]


def _nan_ci() -> tuple[float, float]:
    return (np.nan, np.nan)


def bootstrap_ci(
    data: tuple[np.ndarray, ...],
    statistic: Callable[..., Any],
    *,
    paired: bool,
    vectorized: bool,
    confidence: float,
    n_resamples: int,
    seed: int,
) -> tuple[float, float]:
    """BCa bootstrap interval of ``statistic`` (NaN when it cannot be formed)."""
    if n_resamples <= 0:
        return _nan_ci()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            res = stats.bootstrap(
                data,
                statistic,
                paired=paired,
                vectorized=vectorized,
                confidence_level=confidence,
                n_resamples=n_resamples,
                method="BCa",
                rng=np.random.default_rng(seed),
            )
        except (ValueError, FloatingPointError):
            return _nan_ci()
    low, high = float(res.confidence_interval.low), float(res.confidence_interval.high)
    return (low, high) if np.isfinite(low) and np.isfinite(high) else _nan_ci()


# --------------------------------------------------------------------- two groups


def welch_t(x: np.ndarray, y: np.ndarray, confidence: float, equal_var: bool = False) -> Row:
    """Welch's (or Student's) t-test; Hedges' g with its normal-approximation CI."""
    meta = require("statsmodels.stats.meta_analysis", "stats")
    r = stats.ttest_ind(x, y, equal_var=equal_var)
    ci = r.confidence_interval(confidence)
    g, var_g = meta.effectsize_smd(x.mean(), x.std(ddof=1), len(x), y.mean(), y.std(ddof=1), len(y))
    z = stats.norm.ppf(0.5 + confidence / 2)
    return {
        "test": "student_t" if equal_var else "welch_t",
        "statistic_name": "t",
        "statistic": float(r.statistic),
        "df": float(r.df),
        "p_value": float(r.pvalue),
        "effect_size_name": "hedges_g",
        "effect_size": float(g),
        "effect_ci_low": float(g - z * np.sqrt(var_g)),
        "effect_ci_high": float(g + z * np.sqrt(var_g)),
        "effect_ci_method": "normal approximation (Hedges & Olkin 1985)",
        "difference_name": "mean difference",
        "difference": float(x.mean() - y.mean()),
        "difference_ci_low": float(ci.low),
        "difference_ci_high": float(ci.high),
    }


def _rank_biserial(x: np.ndarray, y: np.ndarray, axis: int = -1) -> np.ndarray:
    """Rank-biserial correlation 2·U₁/(n₁n₂) − 1 (> 0: the first group tends to be larger)."""
    u = stats.mannwhitneyu(x, y, axis=axis, alternative="two-sided").statistic
    return 2.0 * u / (x.shape[axis] * y.shape[axis]) - 1.0


def mann_whitney(
    x: np.ndarray, y: np.ndarray, confidence: float, n_resamples: int, seed: int
) -> Row:
    """Mann–Whitney U test; rank-biserial correlation with a bootstrap CI."""
    r = stats.mannwhitneyu(x, y, alternative="two-sided")
    rb = float(2.0 * r.statistic / (len(x) * len(y)) - 1.0)
    low, high = bootstrap_ci(
        (x, y),
        _rank_biserial,
        paired=False,
        vectorized=True,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
    )
    return {
        "test": "mann_whitney",
        "statistic_name": "U",
        "statistic": float(r.statistic),
        "p_value": float(r.pvalue),
        "effect_size_name": "rank_biserial",
        "effect_size": rb,
        "effect_ci_low": low,
        "effect_ci_high": high,
        "effect_ci_method": f"bootstrap BCa ({n_resamples} resamples)",
    }


# ------------------------------------------------------------------ k groups


def _eta_squared(f: float, df1: float, df2: float, confidence: float) -> Row:
    oneway = require("statsmodels.stats.oneway", "stats")
    eta2 = f * df1 / (f * df1 + df2)
    with np.errstate(divide="ignore"):  # a lower limit of 0 passes through 1/0 inside
        ci = oneway.confint_effectsize_oneway(f, (df1, df2), alpha=1 - confidence)
    return {
        "effect_size_name": "eta_squared",
        "effect_size": float(eta2),
        "effect_ci_low": float(ci.eta2[0]),
        "effect_ci_high": float(ci.eta2[1]),
        "effect_ci_method": "noncentral F inversion (Steiger 2004)",
    }


def eta_omega_squared(groups: list[np.ndarray], confidence: float) -> Row:
    """η² = SS_between/SS_total and ω² of a one-way layout, with the noncentral-F interval.

    η² describes the share of the total sum of squares between the group means
    (Pearson 1905; Olejnik & Algina 2003). ω² = (SS_between − (k − 1)·MS_within) /
    (SS_total + MS_within) corrects its upward bias (Hays 1963). The interval of η²
    inverts the noncentral F distribution of the classic one-way F =
    MS_between/MS_within with (k − 1, N − k) degrees of freedom (Steiger 2004;
    statsmodels ``confint_effectsize_oneway``); it assumes equal variances, also
    when the test run is Welch's.
    """
    oneway = require("statsmodels.stats.oneway", "stats")
    k = len(groups)
    n = sum(len(g) for g in groups)
    grand = np.concatenate(groups).mean()
    ss_between = float(sum(len(g) * (g.mean() - grand) ** 2 for g in groups))
    ss_within = float(sum(((g - g.mean()) ** 2).sum() for g in groups))
    ss_total = ss_between + ss_within
    df1, df2 = k - 1, n - k
    if ss_total <= 0 or df2 <= 0:
        nan = float("nan")
        return {
            "effect_size_name": "eta_squared",
            "effect_size": nan,
            "effect_ci_low": nan,
            "effect_ci_high": nan,
            "effect_ci_method": "noncentral F inversion of the classic one-way F (Steiger 2004)",
            "omega_squared": nan,
        }
    ms_within = ss_within / df2
    eta2 = ss_between / ss_total
    omega2 = (ss_between - df1 * ms_within) / (ss_total + ms_within)
    if ms_within > 0:
        f = (ss_between / df1) / ms_within
        with np.errstate(divide="ignore"):  # a lower limit of 0 passes through 1/0 inside
            ci = oneway.confint_effectsize_oneway(f, (df1, df2), alpha=1 - confidence)
        low, high = float(ci.eta2[0]), float(ci.eta2[1])
    else:
        low = high = float("nan")
    return {
        "effect_size_name": "eta_squared",
        "effect_size": float(eta2),
        "effect_ci_low": low,
        "effect_ci_high": high,
        "effect_ci_method": "noncentral F inversion of the classic one-way F (Steiger 2004)",
        "omega_squared": float(omega2),
    }


def anova(groups: list[np.ndarray], confidence: float, welch: bool = True) -> Row:
    """One-way ANOVA — Welch's (unequal variances, default) or Fisher's classic.

    The effect size is η² from the sums of squares (with ω²) whichever test runs:
    an η² computed from Welch's F and its fractional df is not the share of
    variance between groups.
    """
    oneway = require("statsmodels.stats.oneway", "stats")
    r = oneway.anova_oneway(groups, use_var="unequal" if welch else "equal")
    df1, df2 = float(r.df_num), float(r.df_denom)
    return {
        "test": "welch_anova" if welch else "anova",
        "statistic_name": "F",
        "statistic": float(r.statistic),
        "df": df1,
        "df2": df2,
        "p_value": float(r.pvalue),
        **eta_omega_squared(groups, confidence),
    }


def _epsilon_squared(*samples: np.ndarray, axis: int = -1) -> np.ndarray:
    n = sum(s.shape[axis] for s in samples)
    return stats.kruskal(*samples, axis=axis).statistic / (n - 1)


def kruskal(groups: list[np.ndarray], confidence: float, n_resamples: int, seed: int) -> Row:
    """Kruskal–Wallis H test; ε² = H/(n − 1) (Tomczak & Tomczak 2014) with a bootstrap CI."""
    r = stats.kruskal(*groups)
    n = sum(len(g) for g in groups)
    low, high = bootstrap_ci(
        tuple(groups),
        _epsilon_squared,
        paired=False,
        vectorized=True,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
    )
    return {
        "test": "kruskal",
        "statistic_name": "H",
        "statistic": float(r.statistic),
        "df": float(len(groups) - 1),
        "p_value": float(r.pvalue),
        "effect_size_name": "epsilon_squared",
        "effect_size": float(r.statistic / (n - 1)),
        "effect_ci_low": low,
        "effect_ci_high": high,
        "effect_ci_method": f"bootstrap BCa ({n_resamples} resamples)",
    }


# ------------------------------------------------------------------- paired


def paired_t(x: np.ndarray, y: np.ndarray, confidence: float) -> Row:
    """Paired t-test; Cohen's d_z (mean/SD of the differences) with pingouin's CI."""
    pg = require("pingouin", "stats")
    r = stats.ttest_rel(x, y)
    ci = r.confidence_interval(confidence)
    d = x - y
    dz = float(d.mean() / d.std(ddof=1)) if d.std(ddof=1) > 0 else np.nan
    low, high = (
        pg.compute_esci(dz, nx=len(d), ny=len(d), paired=True, confidence=confidence, decimals=12)
        if np.isfinite(dz)
        else _nan_ci()
    )
    return {
        "test": "paired_t",
        "statistic_name": "t",
        "statistic": float(r.statistic),
        "df": float(r.df),
        "p_value": float(r.pvalue),
        "effect_size_name": "cohen_dz",
        "effect_size": dz,
        "effect_ci_low": float(low),
        "effect_ci_high": float(high),
        "effect_ci_method": "t approximation (pingouin.compute_esci)",
        "difference_name": "mean paired difference",
        "difference": float(d.mean()),
        "difference_ci_low": float(ci.low),
        "difference_ci_high": float(ci.high),
    }


def _matched_rank_biserial(x: np.ndarray, y: np.ndarray) -> float:
    """(T⁺ − T⁻)/(T⁺ + T⁻) over the non-zero differences (Kerby 2014)."""
    d = x - y
    d = d[d != 0]
    if not len(d):
        return np.nan
    ranks = stats.rankdata(np.abs(d))
    return float((ranks[d > 0].sum() - ranks[d < 0].sum()) / ranks.sum())


def wilcoxon(x: np.ndarray, y: np.ndarray, confidence: float, n_resamples: int, seed: int) -> Row:
    """Wilcoxon signed-rank test; matched-pairs rank-biserial with a bootstrap CI."""
    r = stats.wilcoxon(x, y)
    low, high = bootstrap_ci(
        (x, y),
        _matched_rank_biserial,
        paired=True,
        vectorized=False,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
    )
    return {
        "test": "wilcoxon",
        "statistic_name": "W",
        "statistic": float(r.statistic),
        "p_value": float(r.pvalue),
        "effect_size_name": "rank_biserial",
        "effect_size": _matched_rank_biserial(x, y),
        "effect_ci_low": low,
        "effect_ci_high": high,
        "effect_ci_method": f"bootstrap BCa ({n_resamples} resamples)",
    }


def rm_anova(wide: np.ndarray, confidence: float) -> Row:
    """One-way repeated-measures ANOVA (statsmodels AnovaRM); partial η² with its CI."""
    import pandas as pd

    anova_mod = require("statsmodels.stats.anova", "stats")
    n, k = wide.shape
    long = pd.DataFrame(
        {
            "subject": np.repeat(np.arange(n), k),
            "level": np.tile(np.arange(k), n),
            "value": wide.ravel(),
        }
    )
    table = anova_mod.AnovaRM(long, "value", "subject", within=["level"]).fit().anova_table
    row = table.iloc[0]
    f, df1, df2 = float(row["F Value"]), float(row["Num DF"]), float(row["Den DF"])
    effect = _eta_squared(f, df1, df2, confidence)
    effect["effect_size_name"] = "partial_eta_squared"
    return {
        "test": "rm_anova",
        "statistic_name": "F",
        "statistic": f,
        "df": df1,
        "df2": df2,
        "p_value": float(row["Pr > F"]),
        **effect,
    }


def _kendalls_w(*columns: np.ndarray) -> float:
    n, k = len(columns[0]), len(columns)
    chi2 = stats.friedmanchisquare(*columns).statistic
    return float(chi2 / (n * (k - 1)))


def friedman(wide: np.ndarray, confidence: float, n_resamples: int, seed: int) -> Row:
    """Friedman test; Kendall's W = χ²/(n(k − 1)) with a bootstrap CI over subjects."""
    cols = tuple(wide[:, j] for j in range(wide.shape[1]))
    r = stats.friedmanchisquare(*cols)
    n, k = wide.shape
    low, high = bootstrap_ci(
        cols,
        _kendalls_w,
        paired=True,
        vectorized=False,
        confidence=confidence,
        n_resamples=n_resamples,
        seed=seed,
    )
    return {
        "test": "friedman",
        "statistic_name": "chi2",
        "statistic": float(r.statistic),
        "df": float(k - 1),
        "p_value": float(r.pvalue),
        "effect_size_name": "kendalls_w",
        "effect_size": float(r.statistic / (n * (k - 1))),
        "effect_ci_low": low,
        "effect_ci_high": high,
        "effect_ci_method": f"bootstrap BCa ({n_resamples} resamples)",
    }


# ------------------------------------------------------------ proportions


def contingency(
    table: np.ndarray,
    codes: tuple[np.ndarray, np.ndarray],
    use_fisher: bool,
    confidence: float,
    n_resamples: int,
    seed: int,
) -> Row:
    """Chi-square test of independence or Fisher's exact test on a groups × values table.

    2×2 tables: odds ratio (conditional MLE) with its exact CI, and the
    difference in proportions with Newcombe's hybrid score CI. Larger tables:
    Cramér's V with a bootstrap CI (rows resampled).
    """
    proportion = require("statsmodels.stats.proportion", "stats")
    row: Row = {}
    if use_fisher:
        if table.shape == (2, 2):
            r = stats.fisher_exact(table)
            row.update(test="fisher", statistic_name="odds_ratio", statistic=float(r.statistic))
        else:
            method = stats.MonteCarloMethod(n_resamples=max(n_resamples, 1000), rng=seed)
            r = stats.fisher_exact(table, method=method)
            row.update(
                test="fisher_monte_carlo",
                statistic_name="table_probability",
                statistic=float(r.statistic),
            )
        row["p_value"] = float(r.pvalue)
    else:
        r = stats.chi2_contingency(table, correction=False)
        row.update(
            test="chi2",
            statistic_name="chi2",
            statistic=float(r.statistic),
            df=float(r.dof),
            p_value=float(r.pvalue),
        )
    if table.shape == (2, 2):
        odds = stats.contingency.odds_ratio(table, kind="conditional")
        ci = odds.confidence_interval(confidence)
        (a, b), (c, d) = table
        low, high = proportion.confint_proportions_2indep(
            a, a + b, c, c + d, method="newcomb", compare="diff", alpha=1 - confidence
        )
        row.update(
            effect_size_name="odds_ratio",
            effect_size=float(odds.statistic),
            effect_ci_low=float(ci.low),
            effect_ci_high=float(ci.high),
            effect_ci_method="exact conditional (Fisher)",
            difference_name="difference in proportions",
            difference=float(a / (a + b) - c / (c + d)),
            difference_ci_low=float(low),
            difference_ci_high=float(high),
        )
    else:
        g, v = codes

        def cramer(gi: np.ndarray, vi: np.ndarray) -> float:
            t = np.zeros(table.shape)
            np.add.at(t, (gi, vi), 1)
            t = t[t.sum(axis=1) > 0][:, t.sum(axis=0) > 0]
            if min(t.shape) < 2:
                return 0.0
            return float(stats.contingency.association(t, method="cramer"))

        low, high = bootstrap_ci(
            (g, v),
            cramer,
            paired=True,
            vectorized=False,
            confidence=confidence,
            n_resamples=n_resamples,
            seed=seed,
        )
        row.update(
            effect_size_name="cramers_v",
            effect_size=float(stats.contingency.association(table, method="cramer")),
            effect_ci_low=low,
            effect_ci_high=high,
            effect_ci_method=f"bootstrap BCa ({n_resamples} resamples)",
        )
    return row


def mcnemar(table: np.ndarray, confidence: float) -> Row:
    """McNemar's test on paired binary values; conditional odds ratio b/c with exact CI.

    ``table[i, j]`` counts subjects with value ``i`` (1 = positive) at the
    first level and ``j`` at the second; b = positive only at the first
    level, c = positive only at the second. The exact test is used when
    b + c < 25.
    """
    ct = require("statsmodels.stats.contingency_tables", "stats")
    proportion = require("statsmodels.stats.proportion", "stats")
    # reorder so that row/col 0 is "positive" as statsmodels expects b = table[0, 1]
    t = table[::-1, ::-1]
    b, c = int(t[0, 1]), int(t[1, 0])
    exact = b + c < 25
    r = ct.mcnemar(t, exact=exact)
    row: Row = {
        "test": "mcnemar",
        "statistic_name": "b" if exact else "chi2",
        "statistic": float(r.statistic),
        "df": np.nan if exact else 1.0,
        "p_value": float(r.pvalue),
        "effect_size_name": "odds_ratio",
    }
    if b + c == 0:
        row.update(effect_size=np.nan, effect_ci_low=np.nan, effect_ci_high=np.nan)
    else:
        lo, hi = proportion.proportion_confint(b, b + c, alpha=1 - confidence, method="beta")
        with np.errstate(divide="ignore"):
            row.update(
                effect_size=b / c if c else np.inf,
                effect_ci_low=lo / (1 - lo) if lo < 1 else np.inf,
                effect_ci_high=hi / (1 - hi) if hi < 1 else np.inf,
            )
    row["effect_ci_method"] = "exact binomial (Clopper–Pearson) on b/(b + c)"
    return row


def cochran_q(wide: np.ndarray) -> Row:
    """Cochran's Q test on paired binary values over k levels (no effect size)."""
    ct = require("statsmodels.stats.contingency_tables", "stats")
    r = ct.cochrans_q(wide)
    return {
        "test": "cochran_q",
        "statistic_name": "Q",
        "statistic": float(r.statistic),
        "df": float(r.df),
        "p_value": float(r.pvalue),
    }


def shapiro_p(sample: np.ndarray) -> float:
    """Shapiro–Wilk p-value; NaN when n < 3 or the sample is constant."""
    if len(sample) < 3 or np.ptp(sample) == 0:
        return np.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.shapiro(sample).pvalue)
