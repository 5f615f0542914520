"""Group comparisons that pick the test for the data and say which (private)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dentalkit.errors import InputError, require
from dentalkit.stats import _tests
from dentalkit.stats._tables import as_list, require_columns

__all__ = ["COLUMNS", "TESTS", "compare"]

#: Tests :func:`compare` can run, by design (``test=`` accepts these names,
#: plus "auto", "parametric" and "nonparametric").
TESTS: dict[str, str] = {
    "welch_t": "two independent groups, continuous (Welch 1947)",
    "student_t": "two independent groups, continuous, equal variances",
    "mann_whitney": "two independent groups, continuous or ordinal (Mann & Whitney 1947)",
    "welch_anova": "≥3 independent groups, continuous (Welch 1951)",
    "anova": "≥3 independent groups, continuous, equal variances",
    "kruskal": "≥3 independent groups, continuous or ordinal (Kruskal & Wallis 1952)",
    "paired_t": "two paired levels, continuous",
    "wilcoxon": "two paired levels, continuous or ordinal (Wilcoxon 1945)",
    "rm_anova": "≥3 paired levels, continuous",
    "friedman": "≥3 paired levels, continuous or ordinal (Friedman 1937)",
    "chi2": "independent groups, categorical value (Pearson; no continuity correction)",
    "fisher": "independent groups, categorical value, small expected counts",
    "mcnemar": "two paired levels, binary value (McNemar 1947)",
    "cochran_q": "≥3 paired levels, binary value (Cochran 1950)",
}
_FAMILY = {
    # (paired, kind, many levels) -> (parametric, nonparametric)
    (False, "continuous", False): ("welch_t", "mann_whitney"),
    (False, "continuous", True): ("welch_anova", "kruskal"),
    (True, "continuous", False): ("paired_t", "wilcoxon"),
    (True, "continuous", True): ("rm_anova", "friedman"),
}
_PARAMETRIC = {"welch_t", "student_t", "welch_anova", "anova", "paired_t", "rm_anova"}

COLUMNS = [
    "value",
    "by",
    "paired",
    "groups",
    "n",
    "n_per_group",
    "test",
    "reason",
    "statistic_name",
    "statistic",
    "df",
    "df2",
    "p_value",
    "p_adjusted",
    "correction",
    "effect_size_name",
    "effect_size",
    "effect_ci_low",
    "effect_ci_high",
    "effect_ci_method",
    "difference_name",
    "difference",
    "difference_ci_low",
    "difference_ci_high",
    "normality_p",
    "note",
]
_FLOATS = [
    "statistic",
    "df",
    "df2",
    "p_value",
    "p_adjusted",
    "effect_size",
    "effect_ci_low",
    "effect_ci_high",
    "difference",
    "difference_ci_low",
    "difference_ci_high",
    "normality_p",
]


def compare(
    table: pd.DataFrame,
    value: str,
    by: str,
    paired: str | None = None,
    *,
    per: str | Sequence[str] | None = None,
    test: str = "auto",
    correction: str | None = None,
    order: Sequence[Any] | None = None,
    alpha_normality: float = 0.05,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Compare ``value`` between the levels of ``by`` with the test that fits the data.

    Parameters
    ----------
    table : DataFrame
        Long table, one row per observation.
    value : str
        Column to compare. Numeric → location tests; bool, 0/1, string or
        categorical → tests of proportions.
    by : str
        Column whose levels are the groups (or, with ``paired``, the
        repeated conditions such as sessions).
    paired : str, optional
        Column identifying the unit measured at every level of ``by``
        (e.g. ``"patient_id"`` across sessions). Units lacking a level are
        dropped (counted in ``note``).
    per : str or list of str, optional
        Run one comparison per value of these columns (e.g. ``"fdi"`` or
        ``"class_name"``); ``correction`` then adjusts across them.
    test : str
        ``"auto"`` (default, rule below), ``"parametric"``,
        ``"nonparametric"`` or a name from :data:`TESTS`.
    correction : str, optional
        Multiple-comparison adjustment across the rows, any method of
        :func:`statsmodels.stats.multitest.multipletests` — ``"holm"``
        (Holm 1979, family-wise error) or ``"fdr_bh"`` (Benjamini & Hochberg
        1995, false discovery rate).
    order : sequence, optional
        Order of the ``by`` levels; differences and effect sizes are
        first − second. Default: categorical order, else sorted.
    alpha_normality : float
        Level of the Shapiro–Wilk checks of the automatic rule.
    confidence : float
        Level of every confidence interval.
    n_resamples, seed : int
        Bootstrap resamples and seed for the rank-based effect-size intervals
        (0 resamples: no bootstrap, NaN intervals).

    Returns
    -------
    DataFrame
        One row per comparison: the ``per`` columns, then :data:`COLUMNS`
        (test, why it was chosen, statistic, df, p, adjusted p, effect size
        with CI, raw difference with CI where defined, normality p, notes).

    Notes
    -----
    **Automatic rule.** Numeric values: Shapiro–Wilk (Shapiro & Wilk 1965) on
    every group (on the paired differences, or on the within-subject
    residuals for ≥3 paired levels). If every p ≥ ``alpha_normality`` the
    parametric test runs (Welch's t, Welch's ANOVA, paired t, repeated-measures
    ANOVA), otherwise — or when a group has fewer than 3 values — the rank
    test (Mann–Whitney U, Kruskal–Wallis, Wilcoxon signed-rank, Friedman).
    Welch's versions are used because they keep their error rate when
    variances differ and lose little when they do not (Delacre et al. 2017).
    Categorical values: Pearson's chi-square test unless expected counts are
    small (any < 5 in a 2×2 table; otherwise any < 1 or more than 20 % < 5 —
    Cochran 1954), then Fisher's exact test (Monte Carlo p-value for tables
    larger than 2×2). Paired binary values: McNemar (exact when b + c < 25)
    or Cochran's Q. Pre-testing normality is a convention, not a law (Rochon
    et al. 2012); pass ``test=`` to fix the test in a pre-registered
    analysis.

    **Effect sizes.** Hedges' g (t-tests), Cohen's d_z (paired t),
    rank-biserial correlation (Mann–Whitney; matched-pairs version for
    Wilcoxon, Kerby 2014), η² / partial η² with noncentral-F intervals
    (ANOVAs), ε² (Kruskal–Wallis), Kendall's W (Friedman), odds ratio with
    exact CI and difference in proportions with Newcombe's CI (2×2 tables),
    Cramér's V (larger tables), conditional odds ratio b/c (McNemar).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame(
    ...     {
    ...         "group": ["a"] * 5 + ["b"] * 5,
    ...         "area": [10.1, 10.4, 9.8, 10.0, 10.2, 11.0, 11.3, 10.9, 11.4, 11.1],
    ...     }
    ... )
    >>> r = compare(t, "area", "group").iloc[0]
    >>> print(r["test"], round(float(r["difference"]), 2), bool(r["p_value"] < 0.001))
    welch_t -1.04 True
    """
    require_columns(table, [value, by, *([paired] if paired else []), *as_list(per)], "table")
    if test not in (*TESTS, "auto", "parametric", "nonparametric"):
        raise InputError(
            f"test={test!r} unknown; use 'auto', 'parametric', 'nonparametric' or one of {list(TESTS)}"
        )
    if not 0 < confidence < 1:
        raise InputError(f"confidence={confidence!r} must be between 0 and 1")
    spec = _Spec(
        value,
        by,
        paired,
        _kind(table[value]),
        test,
        order,
        alpha_normality,
        confidence,
        n_resamples,
        seed,
    )
    per = as_list(per)
    splits = table.groupby(per, sort=True, dropna=False, observed=True) if per else [((), table)]
    rows = []
    for labels, sub in splits:
        labels = labels if isinstance(labels, tuple) else (labels,)
        rows.append({**dict(zip(per, labels, strict=True)), **_one(sub, spec)})
    out = pd.DataFrame(rows).reindex(columns=[*per, *COLUMNS])
    out[_FLOATS] = out[_FLOATS].astype("float64")
    out["n"] = out["n"].astype("int64")
    return _adjust(out, correction)


def _kind(values: pd.Series) -> str:
    if pd.api.types.is_bool_dtype(values):
        return "binary"
    if pd.api.types.is_numeric_dtype(values):
        observed = set(pd.unique(values.dropna()))
        return "binary" if observed and observed <= {0, 1} else "continuous"
    return "categorical"


def _levels(series: pd.Series, order: Sequence[Any] | None) -> list[Any]:
    present = list(pd.unique(series.dropna()))
    if order is not None:
        unknown = [o for o in order if o not in present]
        missing = [p for p in present if p not in list(order)]
        if missing:
            raise InputError(f"order={list(order)} lacks level(s) {missing} of the by column")
        return [o for o in order if o not in unknown]
    if isinstance(series.dtype, pd.CategoricalDtype):
        return [c for c in series.cat.categories if c in present]
    try:
        return sorted(present)
    except TypeError:
        return sorted(present, key=str)


@dataclass(frozen=True)
class _Spec:
    """What one call of :func:`compare` asks for (shared by every comparison)."""

    value: str
    by: str
    paired: str | None
    kind: str
    test: str
    order: Sequence[Any] | None
    alpha: float
    confidence: float
    n_resamples: int
    seed: int


def _one(sub: pd.DataFrame, spec: _Spec) -> dict[str, Any]:
    """One comparison (one row of the result)."""
    cols = [spec.by, spec.value, *([spec.paired] if spec.paired else [])]
    clean = sub[cols].dropna()
    notes: list[str] = []
    if len(clean) < len(sub):
        notes.append(f"{len(sub) - len(clean)} row(s) with a missing value dropped")
    levels = _levels(clean[spec.by], spec.order)
    base: dict[str, Any] = {
        "value": spec.value,
        "by": spec.by,
        "paired": spec.paired,
        "groups": " | ".join(map(str, levels)),
        "correction": None,
    }
    if len(levels) < 2:
        notes.append("fewer than two groups: no test")
        return {**base, "n": len(clean), "note": "; ".join(notes)}
    run = _paired if spec.paired else _independent
    result = run(clean, levels, spec, notes)
    if "p_value" in result and not np.isfinite(result["p_value"]):
        notes.append("the test statistic is undefined for these data (e.g. no variation)")
    return {**base, **result, "note": "; ".join(notes) or None}


def _choose(design: tuple[bool, str, bool], test: str, normal: bool | None) -> tuple[str, str]:
    """The test to run and why."""
    para, nonpara = _FAMILY[design]
    if test == "parametric":
        return para, "parametric requested"
    if test == "nonparametric":
        return nonpara, "nonparametric requested"
    if test != "auto":
        allowed = (
            {para, nonpara}
            | ({"student_t"} if para == "welch_t" else set())
            | ({"anova"} if para == "welch_anova" else set())
        )
        if test not in allowed:
            raise InputError(
                f"test={test!r} does not fit this design; use one of {sorted(allowed)}"
            )
        return test, "requested"
    if normal:
        return para, "auto: Shapiro–Wilk p ≥ alpha in every group → parametric"
    if normal is None:
        return (
            nonpara,
            "auto: a group has < 3 values or no spread, normality not assessable → rank test",
        )
    return nonpara, "auto: Shapiro–Wilk p < alpha in a group → rank test"


def _normality(samples: list[np.ndarray], alpha: float) -> tuple[bool | None, float]:
    ps = [_tests.shapiro_p(s) for s in samples]
    if any(np.isnan(p) for p in ps):
        return None, float(np.nanmin(ps)) if not all(np.isnan(p) for p in ps) else np.nan
    return all(p >= alpha for p in ps), float(min(ps))


def _independent(
    clean: pd.DataFrame, levels: list[Any], spec: _Spec, notes: list[str]
) -> dict[str, Any]:
    value, by, kind, test = spec.value, spec.by, spec.kind, spec.test
    alpha, confidence, n_resamples, seed = spec.alpha, spec.confidence, spec.n_resamples, spec.seed
    groups = [clean.loc[clean[by] == lv, value] for lv in levels]
    sizes = [len(g) for g in groups]
    out: dict[str, Any] = {"n": int(sum(sizes)), "n_per_group": " | ".join(map(str, sizes))}
    if kind == "continuous":
        arrays = [g.to_numpy(dtype=float) for g in groups]
        many = len(levels) > 2
        normal, pmin = _normality(arrays, alpha)
        name, reason = _choose((False, "continuous", many), test, normal)
        out.update(reason=reason, normality_p=pmin)
        if min(sizes) < 2:
            notes.append("a group has fewer than 2 values: no test")
            return out
        if name in ("welch_t", "student_t"):
            out.update(_tests.welch_t(*arrays, confidence, equal_var=name == "student_t"))
        elif name == "mann_whitney":
            out.update(_tests.mann_whitney(*arrays, confidence, n_resamples, seed))
        elif name in ("welch_anova", "anova"):
            out.update(_tests.anova(arrays, confidence, welch=name == "welch_anova"))
        else:
            out.update(_tests.kruskal(arrays, confidence, n_resamples, seed))
        return out
    # categorical / binary value: a groups × values contingency table
    table, codes, positive = _crosstab(clean, value, by, levels, kind)
    if table.shape[1] < 2:
        notes.append("the value takes a single level: no test")
        return out
    if test not in ("auto", "chi2", "fisher"):
        raise InputError(f"test={test!r} does not fit a categorical value; use 'chi2' or 'fisher'")
    expected = stats.contingency.expected_freq(table)
    small = (
        (expected < 5).any()
        if table.shape == (2, 2)
        else ((expected < 1).any() or (expected < 5).mean() > 0.2)
    )
    use_fisher = test == "fisher" or (test == "auto" and small)
    reason = (
        "requested"
        if test != "auto"
        else (
            "auto: small expected counts (Cochran 1954) → Fisher's exact test"
            if small
            else "auto: expected counts large enough → chi-square"
        )
    )
    out.update(reason=reason)
    out.update(_tests.contingency(table, codes, use_fisher, confidence, n_resamples, seed))
    if positive is not None:
        notes.append(f"proportions and odds of {value} == {positive!r}")
    return out


def _crosstab(clean, value, by, levels, kind):
    """Groups × value-levels counts; for binary values column 0 is the positive level."""
    values = clean[value]
    if kind == "binary":
        vlevels: list[Any] = [True, False] if pd.api.types.is_bool_dtype(values) else [1, 0]
        positive = vlevels[0]
    else:
        vlevels = _levels(values, None)
        positive = vlevels[-1] if len(vlevels) == 2 else None
        if positive is not None:
            vlevels = vlevels[::-1]
    g = pd.Categorical(clean[by], categories=levels).codes
    v = pd.Categorical(values, categories=vlevels).codes
    table = np.zeros((len(levels), len(vlevels)), dtype=np.int64)
    np.add.at(table, (g, v), 1)
    keep = table.sum(axis=0) > 0
    return table[:, keep], (g, v), positive


def _paired(
    clean: pd.DataFrame, levels: list[Any], spec: _Spec, notes: list[str]
) -> dict[str, Any]:
    value, by, paired, kind, test = spec.value, spec.by, spec.paired, spec.kind, spec.test
    alpha, confidence, n_resamples, seed = spec.alpha, spec.confidence, spec.n_resamples, spec.seed
    dup = clean.duplicated([paired, by], keep=False)
    if dup.any():
        example = clean.loc[dup, [paired, by]].head(2).astype("object").to_dict("records")
        raise InputError(
            f"several rows for the same {paired} and {by}, e.g. {example}; a paired comparison "
            "needs one value per unit and level (aggregate first, or split with per=)"
        )
    wide = clean.pivot(index=paired, columns=by, values=value).reindex(columns=levels)
    complete = wide.dropna()
    if len(complete) < len(wide):
        notes.append(f"{len(wide) - len(complete)} {paired}(s) without every level dropped")
    out: dict[str, Any] = {
        "n": len(complete),
        "n_per_group": " | ".join([str(len(complete))] * len(levels)),
    }
    many = len(levels) > 2
    if len(complete) < 2:
        notes.append("fewer than 2 complete pairs: no test")
        return out
    if kind == "continuous":
        data = complete.to_numpy(dtype=float)
        if many:
            resid = data - data.mean(axis=1, keepdims=True) - data.mean(axis=0) + data.mean()
            normal, pmin = _normality([resid.ravel()], alpha)
        else:
            normal, pmin = _normality([data[:, 0] - data[:, 1]], alpha)
        name, reason = _choose((True, "continuous", many), test, normal)
        out.update(reason=reason, normality_p=pmin)
        if name == "paired_t":
            out.update(_tests.paired_t(data[:, 0], data[:, 1], confidence))
        elif name == "wilcoxon":
            if np.all(data[:, 0] == data[:, 1]):
                notes.append("all paired differences are zero: no test")
                return out
            out.update(_tests.wilcoxon(data[:, 0], data[:, 1], confidence, n_resamples, seed))
        elif name == "rm_anova":
            out.update(_tests.rm_anova(data, confidence))
        else:
            out.update(_tests.friedman(data, confidence, n_resamples, seed))
        return out
    if kind != "binary":
        raise InputError(
            f"paired comparison of a categorical value with more than two levels is not supported "
            f"({value}); recode it as binary"
        )
    data = complete.to_numpy().astype(int)
    if many:
        if test not in ("auto", "cochran_q"):
            raise InputError(
                f"test={test!r} does not fit paired binary values over ≥3 levels; use 'cochran_q'"
            )
        out.update(reason="paired binary value, ≥3 levels → Cochran's Q", **_tests.cochran_q(data))
        notes.append("no effect size for Cochran's Q")
        return out
    if test not in ("auto", "mcnemar"):
        raise InputError(f"test={test!r} does not fit paired binary values; use 'mcnemar'")
    table = np.zeros((2, 2), dtype=np.int64)
    np.add.at(table, (data[:, 0], data[:, 1]), 1)
    out.update(
        reason="paired binary value, 2 levels → McNemar", **_tests.mcnemar(table, confidence)
    )
    return out


def _adjust(out: pd.DataFrame, correction: str | None) -> pd.DataFrame:
    if correction is None:
        return out
    multitest = require("statsmodels.stats.multitest", "stats")
    ok = out["p_value"].notna().to_numpy()
    if ok.any():
        try:
            _, adjusted, _, _ = multitest.multipletests(out.loc[ok, "p_value"], method=correction)
        except ValueError as exc:
            raise InputError(f"correction={correction!r}: {exc}") from None
        out.loc[ok, "p_adjusted"] = adjusted
    out["correction"] = correction
    return out
