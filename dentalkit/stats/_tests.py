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
from scipy import special, stats

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


def _nct_interval(t: float, df: float, level: float) -> tuple[float, float]:
    """Interval of the noncentrality δ of a t statistic: P(T ≥ t | δ_L) = P(T ≤ t | δ_U) = (1 − level)/2.

    Inverting the distribution of the statistic the test used makes the interval agree
    with the test: 0 lies outside the two-sided ``level`` interval exactly when the
    two-sided p < 1 − level (Steiger & Fouladi 1997; Cumming & Finch 2001).
    """
    from scipy.optimize import brentq

    tail = (1 - level) / 2
    if not np.isfinite(t) or not np.isfinite(df) or df <= 0:
        return _nan_ci()

    def cdf(delta: float) -> float:
        value = float(stats.nct.cdf(t, df, delta))
        if np.isnan(value):  # scipy's far tails: the cdf is ~0 (δ ≫ t) or ~1 (δ ≪ t)
            return 0.0 if delta > t else 1.0
        return value

    span = abs(t) + 10.0
    while cdf(t - span) < 1 - tail or cdf(t + span) > tail:
        span *= 2
        if span > 1e6:
            return _nan_ci()
    low = brentq(lambda d: cdf(d) - (1 - tail), t - span, t + span)
    high = brentq(lambda d: cdf(d) - tail, t - span, t + span)
    return float(low), float(high)


def welch_t(x: np.ndarray, y: np.ndarray, confidence: float, equal_var: bool = False) -> Row:
    """Welch's (or Student's) t-test with a standardized difference that agrees with it.

    Student's t: Hedges' g (pooled SD, small-sample factor J) with the interval from the
    noncentral t of the test statistic (n₁ + n₂ − 2 df). Welch's t: Cohen's d with the
    SD √((s₁² + s₂²)/2) — the standardizer that does not assume equal variances (Bonett
    2008) — with the interval from the noncentral t of Welch's statistic on Welch's df,
    mapped through the observed SEs. Either interval excludes 0 exactly when p < α.
    """
    r = stats.ttest_ind(x, y, equal_var=equal_var)
    ci = r.confidence_interval(confidence)
    n1, n2 = len(x), len(y)
    v1, v2 = x.var(ddof=1), y.var(ddof=1)
    diff = float(x.mean() - y.mean())
    if equal_var:
        df = n1 + n2 - 2.0
        j = float(np.exp(special.gammaln(df / 2) - special.gammaln((df - 1) / 2)) / np.sqrt(df / 2))
        scale = j * np.sqrt(1 / n1 + 1 / n2)  # g = J·t·√(1/n₁ + 1/n₂)
        method = "noncentral t of Student's t (Hedges & Olkin 1985)"
    else:
        sd_av = np.sqrt((v1 + v2) / 2)
        scale = np.sqrt(v1 / n1 + v2 / n2) / sd_av if sd_av > 0 else np.nan
        method = "noncentral t of Welch's t on its df (SD √((s₁²+s₂²)/2), Bonett 2008)"
    t = float(r.statistic)
    low, high = _nct_interval(t, float(r.df), confidence)
    with np.errstate(invalid="ignore"):
        es = t * scale
    return {
        "test": "student_t" if equal_var else "welch_t",
        "statistic_name": "t",
        "statistic": t,
        "df": float(r.df),
        "p_value": float(r.pvalue),
        "effect_size_name": "hedges_g" if equal_var else "cohens_d",
        "effect_size": float(es),
        "effect_ci_low": float(low * scale),
        "effect_ci_high": float(high * scale),
        **_agreeing(method, confidence),
        "difference_name": "mean difference",
        "difference": diff,
        "difference_ci_low": float(ci.low),
        "difference_ci_high": float(ci.high),
    }


def _agreeing(method: str, level: float, alpha: float | None = None) -> Row:
    """The CI fields of an effect size whose interval inverts the test's own statistic."""
    alpha = 1 - level if alpha is None else alpha
    return {
        "effect_ci_method": f"{method}; agrees with the test: excludes 0 exactly when p < "
        f"{alpha:g}",
        "effect_ci_level": float(level),
        "effect_agrees_with_test": True,
    }


def _not_agreeing(method: str, level: float) -> Row:
    """The CI fields of an effect size whose interval is not derived from the test."""
    return {
        "effect_ci_method": f"{method}; not derived from the test, so near p = {1 - level:g} "
        "the interval and the test may disagree",
        "effect_ci_level": float(level),
        "effect_agrees_with_test": False,
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
        **_not_agreeing(f"bootstrap BCa ({n_resamples} resamples)", confidence),
    }


# ------------------------------------------------------------------ k groups


def _noncentral_f_interval(f: float, df1: float, df2: float, level: float) -> tuple[float, float]:
    """Interval of the noncentrality λ of an F statistic, lower end truncated at 0."""
    oneway = require("statsmodels.stats.oneway", "stats")
    if not (np.isfinite(f) and df2 > 0):
        return _nan_ci()
    with np.errstate(divide="ignore", invalid="ignore"):
        ci = np.asarray(oneway.confint_noncentrality(f, (df1, df2), alpha=1 - level), dtype=float)
    return float(max(ci[0], 0.0)), float(max(ci[1], 0.0))


def _f_effect_level(confidence: float) -> float:
    """Level of a two-sided interval of an effect size bounded at 0 that agrees with the
    F test at α = 1 − confidence: 1 − 2α (Steiger 2004), its lower end the one-sided bound."""
    return round(1 - 2 * (1 - confidence), 12)


def omega_squared_from_f(f: float, df1: float, df2: float, n: int, confidence: float) -> Row:
    """ω² = λ/(λ + N) of the F test that was run, with its noncentral-F interval.

    λ̂ = df₁(F − 1) (0 when F < 1) estimates the noncentrality of the F statistic the test
    used, and ω² = λ/(λ + N) the share of variance between the groups it implies — for
    Fisher's F exactly Hays' ω² = (SS_b − df₁·MS_w)/(SS_t + MS_w); for Welch's F the
    same share with each group standardized by its own variance (the noncentrality of
    Welch's statistic, Σ wᵢ(μᵢ − μ_w)², wᵢ = nᵢ/σᵢ²; statsmodels ``effectsize_oneway``
    with ``use_var="unequal"``). The interval inverts the noncentral F of that same
    statistic with its own df (Steiger 2004) at level 1 − 2α, so its lower end is the
    one-sided bound: above 0 exactly when p < α.
    """
    level = _f_effect_level(confidence)
    lam = max(df1 * (f - 1.0), 0.0) if np.isfinite(f) else np.nan
    lo, hi = _noncentral_f_interval(f, df1, df2, level)
    return {
        "effect_size_name": "omega_squared",
        "effect_size": float(lam / (lam + n)),
        "effect_ci_low": float(lo / (lo + n)),
        "effect_ci_high": float(hi / (hi + n)),
        "omega_squared": float(lam / (lam + n)),
        **_agreeing(
            f"noncentral F inversion of the test's F with df ({df1:g}, {df2:.4g}), "
            f"{100 * level:g} % two-sided = {100 * confidence:g} % one-sided lower bound "
            "(Steiger 2004)",
            level,
            1 - confidence,
        ),
    }


def anova(groups: list[np.ndarray], confidence: float, welch: bool = True) -> Row:
    """One-way ANOVA — Welch's (unequal variances, default) or Fisher's classic —
    with ω² of the F that was run and its interval (:func:`omega_squared_from_f`).

    Before issue 29 the effect size was η² = SS_between/SS_total with the interval of
    the *classic* F also after Welch's test, so p 0.022 (Welch) could sit beside an
    interval reaching 0 (the classic F's p was 0.263).
    """
    oneway = require("statsmodels.stats.oneway", "stats")
    r = oneway.anova_oneway(groups, use_var="unequal" if welch else "equal")
    df1, df2 = float(r.df_num), float(r.df_denom)
    n = sum(len(g) for g in groups)
    return {
        "test": "welch_anova" if welch else "anova",
        "statistic_name": "F",
        "statistic": float(r.statistic),
        "df": df1,
        "df2": df2,
        "p_value": float(r.pvalue),
        **omega_squared_from_f(float(r.statistic), df1, df2, n, confidence),
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
        **_not_agreeing(f"bootstrap BCa ({n_resamples} resamples)", confidence),
    }


# ------------------------------------------------------------------- paired


def paired_t(x: np.ndarray, y: np.ndarray, confidence: float) -> Row:
    """Paired t-test; Cohen's d_z = t/√n with the interval of the test's noncentral t."""
    r = stats.ttest_rel(x, y)
    ci = r.confidence_interval(confidence)
    d = x - y
    n = len(d)
    dz = float(d.mean() / d.std(ddof=1)) if d.std(ddof=1) > 0 else np.nan
    low, high = (
        _nct_interval(float(r.statistic), float(r.df), confidence) if np.isfinite(dz) else _nan_ci()
    )
    return {
        "test": "paired_t",
        "statistic_name": "t",
        "statistic": float(r.statistic),
        "df": float(r.df),
        "p_value": float(r.pvalue),
        "effect_size_name": "cohen_dz",
        "effect_size": dz,
        "effect_ci_low": float(low / np.sqrt(n)),
        "effect_ci_high": float(high / np.sqrt(n)),
        **_agreeing("noncentral t of the paired t (d_z = δ/√n)", confidence),
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
        **_not_agreeing(f"bootstrap BCa ({n_resamples} resamples)", confidence),
    }


def rm_anova(wide: np.ndarray, confidence: float) -> Row:
    """One-way repeated-measures ANOVA (statsmodels AnovaRM); partial η² with the
    interval of the same F (noncentral F, λ/(λ + df₁ + df₂ + 1), level 1 − 2α)."""
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
    level = _f_effect_level(confidence)
    lo, hi = _noncentral_f_interval(f, df1, df2, level)
    n = df1 + df2 + 1
    effect = {
        "effect_size_name": "partial_eta_squared",
        "effect_size": float(f * df1 / (f * df1 + df2)),
        "effect_ci_low": float(lo / (lo + n)),
        "effect_ci_high": float(hi / (hi + n)),
        **_agreeing(
            f"noncentral F inversion of the test's F, {100 * level:g} % two-sided = "
            f"{100 * confidence:g} % one-sided lower bound (Steiger 2004)",
            level,
            1 - confidence,
        ),
    }
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
        **_not_agreeing(f"bootstrap BCa ({n_resamples} resamples)", confidence),
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
            **_not_agreeing("exact conditional (Fisher)", confidence),
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
            **_not_agreeing(f"bootstrap BCa ({n_resamples} resamples)", confidence),
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
    row.update(_not_agreeing("exact binomial (Clopper–Pearson) on b/(b + c)", confidence))
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
