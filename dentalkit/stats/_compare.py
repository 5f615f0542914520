"""Group comparisons with a pre-specified test, on one row per unit, saying what they did (private)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dentalkit.errors import InputError, require
from dentalkit.stats import _tests
from dentalkit.stats._tables import as_list, present_levels, require_columns
from dentalkit.stats._units import (
    AGGREGATES,
    DEFAULT_UNIT,
    aggregate_per_unit,
    aggregation_text,
    check_group_fixed,
    refuse_repeats,
    resolve_unit,
    unit_counts,
)

__all__ = ["COLUMNS", "TESTS", "compare"]

#: Tests :func:`compare` can run, by design (``test=`` accepts these names, plus
#: "default", "rank" and "pretest").
TESTS: dict[str, str] = {
    "welch_t": "Welch's t-test: two independent groups, continuous (Welch 1947)",
    "student_t": "Student's t-test: two independent groups, continuous, equal variances",
    "mann_whitney": "Mann–Whitney U test: two independent groups, continuous or ordinal "
    "(Mann & Whitney 1947)",
    "welch_anova": "Welch's one-way ANOVA: ≥3 independent groups, continuous (Welch 1951)",
    "anova": "Fisher's one-way ANOVA: ≥3 independent groups, continuous, equal variances",
    "kruskal": "Kruskal–Wallis H test: ≥3 independent groups, continuous or ordinal "
    "(Kruskal & Wallis 1952)",
    "paired_t": "paired t-test: two paired levels, continuous",
    "wilcoxon": "Wilcoxon signed-rank test: two paired levels, continuous or ordinal "
    "(Wilcoxon 1945)",
    "rm_anova": "repeated-measures ANOVA: ≥3 paired levels, continuous",
    "friedman": "Friedman test: ≥3 paired levels, continuous or ordinal (Friedman 1937)",
    "chi2": "Pearson's chi-square test: independent groups, categorical value "
    "(no continuity correction)",
    "fisher": "Fisher's exact test: independent groups, categorical value, small expected counts",
    "fisher_monte_carlo": "Fisher's exact test (Monte Carlo p-value): independent groups, "
    "categorical value, tables larger than 2×2",
    "mcnemar": "McNemar's test: two paired levels, binary value (McNemar 1947)",
    "cochran_q": "Cochran's Q test: ≥3 paired levels, binary value (Cochran 1950)",
}
#: The ``test=`` choices besides the names of :data:`TESTS`.
CHOICES = ("default", "parametric", "rank", "nonparametric", "pretest")
_FAMILY = {
    # (paired, many levels) -> (parametric, rank)
    (False, False): ("welch_t", "mann_whitney"),
    (False, True): ("welch_anova", "kruskal"),
    (True, False): ("paired_t", "wilcoxon"),
    (True, True): ("rm_anova", "friedman"),
}
_WHY_DEFAULT = {
    "welch_t": "pre-specified default for a continuous value in two groups: Welch's t keeps "
    "its error rate when the variances differ and loses little when they do not "
    "(Delacre et al. 2017)",
    "welch_anova": "pre-specified default for a continuous value in ≥3 groups: Welch's ANOVA "
    "keeps its error rate when the variances differ (Welch 1951; Delacre et al. 2019)",
    "paired_t": "pre-specified default for a continuous value at two paired levels",
    "rm_anova": "pre-specified default for a continuous value at ≥3 paired levels",
}

COLUMNS = [
    "value",
    "by",
    "paired",
    "unit_of_analysis",
    "groups",
    "n_units",
    "n_rows",
    "n_units_per_group",
    "n_rows_per_group",
    "aggregation",
    "test",
    "method",
    "why",
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
    "effect_ci_level",
    "effect_agrees_with_test",
    "omega_squared",
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
    "effect_ci_level",
    "omega_squared",
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
    unit: str | None = DEFAULT_UNIT,
    aggregate: str | None = None,
    per: str | Sequence[str] | None = None,
    test: str = "default",
    correction: str | None = None,
    order: Sequence[Any] | None = None,
    alpha_normality: float = 0.05,
    confidence: float = 0.95,
    n_resamples: int = 2000,
    seed: int = 0,
) -> pd.DataFrame:
    """Compare ``value`` between the levels of ``by``, one row per unit, with a pre-specified test.

    Parameters
    ----------
    table : DataFrame
        Long table, one row per observation.
    value : str
        Column to compare. Numeric → location tests; an *ordered* categorical →
        rank tests on its order; bool, 0/1, string or unordered categorical →
        tests of proportions.
    by : str
        Column whose levels are the groups (or, with ``paired``, the repeated
        conditions such as sessions).
    paired : str, optional
        Column identifying the unit measured at every level of ``by`` (e.g.
        ``"patient_id"`` across sessions). Units lacking a level are dropped
        (counted in ``note``).
    unit : str or None
        Column identifying the unit of analysis — the patient. Default
        ``"patient_id"`` when the table has it; otherwise every row is taken as a
        unit, and a :class:`~dentalkit.errors.DentalkitWarning`, ``note`` and
        ``unit_of_analysis="row"`` say so. ``None`` states that the rows are
        independent (warned and stated the same way).
        A unit that contributes more than one row to a group (two sessions, two
        teeth…) is refused with an :class:`~dentalkit.errors.InputError` unless
        ``aggregate`` is given; a unit found in two groups is always refused.
    aggregate : {"mean", "median"}, optional
        Reduce a numeric value to one per unit and group (per unit and level when
        paired) with this rule before testing; ``aggregation`` states it. For a
        session instead of an aggregate use
        :func:`dentalkit.stats.one_row_per_unit` first.
    per : str or list of str, optional
        Run one comparison per value of these columns (e.g. ``"fdi"`` or
        ``"measure"``); ``correction`` then adjusts across them.
    test : str
        ``"default"`` (the pre-specified test, below), ``"rank"`` (the rank test of
        the design; alias ``"nonparametric"``), ``"parametric"`` (the parametric
        test of the design; refused for ordinal values), ``"pretest"`` (opt-in
        normality pretest, below) or a name from :data:`TESTS`.
    correction : str, optional
        Multiple-comparison adjustment across the rows, any method of
        :func:`statsmodels.stats.multitest.multipletests` — ``"holm"``
        (Holm 1979, family-wise error) or ``"fdr_bh"`` (Benjamini & Hochberg
        1995, false discovery rate).
    order : sequence, optional
        Order of the ``by`` levels; differences and effect sizes are
        first − second. Default: categorical order, else sorted.
    alpha_normality : float
        Level of the Shapiro–Wilk checks of ``test="pretest"``.
    confidence : float
        Level of every confidence interval.
    n_resamples, seed : int
        Bootstrap resamples and seed for the rank-based effect-size intervals
        (0 resamples: no bootstrap, NaN intervals).

    Returns
    -------
    DataFrame
        One row per comparison: the ``per`` columns, then :data:`COLUMNS`:
        ``unit_of_analysis`` (the unit column, ``"row"`` when rows are the units), ``groups``
        (the levels compared, a list of str in test order), ``n_units`` and ``n_rows`` (units and rows tested), ``n_units_per_group``
        and ``n_rows_per_group`` (lists of int, in the order of ``groups``),
        ``aggregation`` (the rule applied, or None), ``test`` (name), ``method``
        (the test in words), ``why`` (why this test), statistic, df, p, adjusted
        p, effect size with CI and the CI's method, ``omega_squared`` (ANOVAs),
        raw difference with CI where defined, ``normality_p`` (pretest only),
        ``note``.

    Raises
    ------
    InputError
        Unknown columns or unit column, a unit repeated within a group without
        ``aggregate``, a unit in two groups, a test that does not fit the design, a
        paired comparison in which no unit has a value at every level (with ``per``:
        when no split pairs any unit; a split that pairs none otherwise gets a
        ``note`` saying so).

    Notes
    -----
    **The unit.** Between-group tests assume independent units. Sessions, teeth
    or images of one patient are not independent: testing them as rows inflates
    n and the false-positive rate (with two sessions per patient correlating at
    0.99, 0.16 (95 % CI 0.13–0.20) instead of 0.05 at α = 0.05 in 400 null
    simulations of 50 patients; ``benchmarks/units.py``). Repeated sessions belong in a
    mixed-effects model (``dentalkit.stats.growth``).

    **Pre-specified test.** Continuous values: Welch's t (two groups), Welch's
    ANOVA (≥3 groups), paired t / repeated-measures ANOVA (paired levels).
    Ordinal values (ordered categoricals) and ``test="rank"``: Mann–Whitney U,
    Kruskal–Wallis, Wilcoxon signed-rank, Friedman. Categorical values:
    Pearson's chi-square test unless expected counts are small (any < 5 in a
    2×2 table; otherwise any < 1 or more than 20 % < 5 — Cochran 1954), then
    Fisher's exact test (Monte Carlo p-value for tables larger than 2×2).
    Paired binary values: McNemar (exact when b + c < 25) or Cochran's Q.

    **Pretest (opt-in).** ``test="pretest"`` runs Shapiro–Wilk (Shapiro & Wilk
    1965) on every group (on the paired differences, or on the within-subject
    residuals for ≥3 paired levels) and switches to the rank test when any
    p < ``alpha_normality`` or normality cannot be assessed; ``why`` and
    ``normality_p`` report it. Pretesting changes the error rates of the test
    that follows (Rochon et al. 2012), which is why it is not the default.

    **Effect sizes agree with the test that was run** where one can be derived from
    its statistic, and ``effect_agrees_with_test`` says which: Cohen's d with SD
    √((s₁² + s₂²)/2) after Welch's t and Hedges' g after Student's t, each with the
    interval of the test's noncentral t (Bonett 2008; Hedges & Olkin 1985); Cohen's
    d_z (paired t, noncentral t); ω² = λ/(λ + N) of the F that was run — Welch's F
    after Welch's ANOVA, Fisher's after Fisher's — and partial η² (repeated measures),
    with the interval of that F's noncentral distribution at level 1 − 2α (90 % for a
    95 % test), whose lower end is the one-sided bound: above 0 exactly when p < α
    (Steiger 2004); ``effect_ci_level`` states the level. Not derived from the test
    (``effect_agrees_with_test`` False, said in ``effect_ci_method``): the
    rank-biserial correlation (Mann–Whitney; matched pairs for Wilcoxon, Kerby 2014),
    ε² (Kruskal–Wallis), Kendall's W (Friedman), each with a BCa bootstrap interval;
    the odds ratio with its exact CI and the difference in proportions with Newcombe's
    CI (2×2 tables), Cramér's V (larger tables), the conditional odds ratio b/c
    (McNemar).

    References
    ----------
    Delacre M, Lakens D, Leys C. Why psychologists should by default use Welch's
    t-test instead of Student's t-test. *Int Rev Soc Psychol* 2017;30:92–101.
    Rochon J, Gondan M, Kieser M. To test or not to test: preliminary assessment
    of normality when comparing two independent samples. *BMC Med Res Methodol*
    2012;12:81. Olejnik S, Algina J. Generalized eta and omega squared statistics.
    *Psychol Methods* 2003;8:434–447. Steiger JH. Beyond the F test. *Psychol
    Methods* 2004;9:164–182. Bonett DG. Confidence intervals for standardized linear
    contrasts of means. *Psychol Methods* 2008;13:99–109.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame(
    ...     {
    ...         "patient_id": [f"p{i}" for i in range(10)],
    ...         "group": ["a"] * 5 + ["b"] * 5,
    ...         "area": [10.1, 10.4, 9.8, 10.0, 10.2, 11.0, 11.3, 10.9, 11.4, 11.1],
    ...     }
    ... )
    >>> r = compare(t, "area", "group").iloc[0]
    >>> print(r["test"], r["n_units"], r["n_units_per_group"], round(float(r["difference"]), 2))
    welch_t 10 [5, 5] -1.04
    """
    require_columns(table, [value, by, *([paired] if paired else []), *as_list(per)], "table")
    if test == "auto":
        raise InputError(
            "test='auto' (the Shapiro–Wilk pretest rule) is no longer a choice by default: "
            "pretesting normality changes the error rates of the test that follows "
            "(Rochon et al. 2012). Use the pre-specified default (test='default'), the rank "
            "test (test='rank'), or opt in to the pretest with test='pretest'"
        )
    if test not in (*TESTS, *CHOICES):
        raise InputError(f"test={test!r} unknown; use one of {list(CHOICES)} or {list(TESTS)}")
    if aggregate is not None and aggregate not in AGGREGATES:
        raise InputError(
            f"aggregate={aggregate!r} is not allowed; use one of {AGGREGATES} "
            "(or pick one session per unit with stats.one_row_per_unit)"
        )
    if not 0 < confidence < 1:
        raise InputError(f"confidence={confidence!r} must be between 0 and 1")
    unit_col, unit_note = resolve_unit(table, unit)
    if unit_col is None and aggregate is not None:
        raise InputError(
            f"aggregate={aggregate!r} needs a unit column to aggregate over; "
            f"the table has no {unit!r} column (name it with unit=)"
        )
    kind = _kind(table[value])
    if aggregate is not None and kind != "continuous":
        raise InputError(
            f"aggregate={aggregate!r} applies to numeric values; {value!r} is {kind}: "
            "pick one session per unit with stats.one_row_per_unit(table, rule='first')"
        )
    spec = _Spec(
        value,
        by,
        paired,
        unit_col,
        unit_note,
        aggregate,
        kind,
        test,
        order,
        alpha_normality,
        confidence,
        n_resamples,
        seed,
    )
    per = as_list(per)
    if kind == "ordinal":
        codes = table[value].cat.codes.astype("float64").where(table[value].notna())
        table = table.assign(**{value: codes.to_numpy()})
    splits = table.groupby(per, sort=True, dropna=False, observed=True) if per else [((), table)]
    rows, unpaired = [], []
    for labels, sub in splits:
        labels = labels if isinstance(labels, tuple) else (labels,)
        where = dict(zip(per, labels, strict=True))
        try:
            rows.append({**where, **_one(sub, spec, where)})
        except NothingPairedError as exc:  # the others go on; all unpaired: raise
            unpaired.append(exc)
            rows.append({**where, **exc.row})
    if unpaired and len(unpaired) == len(rows):
        raise unpaired[0]
    out = pd.DataFrame(rows).reindex(columns=[*per, *COLUMNS])
    out[_FLOATS] = out[_FLOATS].astype("float64")
    out["n_units"] = out["n_units"].astype("int64")
    out["n_rows"] = out["n_rows"].astype("int64")
    return _adjust(out, correction)


class NothingPairedError(InputError):
    """A paired comparison in which no unit has a value at every level."""

    def __init__(self, message: str, row: dict[str, Any]) -> None:
        super().__init__(message)
        self.row = row


def _kind(values: pd.Series) -> str:
    if isinstance(values.dtype, pd.CategoricalDtype) and values.dtype.ordered:
        return "ordinal"
    if pd.api.types.is_bool_dtype(values):
        return "binary"
    if pd.api.types.is_numeric_dtype(values):
        observed = set(pd.unique(values.dropna()))
        return "binary" if observed and observed <= {0, 1} else "continuous"
    return "categorical"


def _levels(series: pd.Series, order: Sequence[Any] | None) -> list[Any]:
    if order is None:
        return present_levels(series)
    present = list(pd.unique(series.dropna()))
    unknown = [o for o in order if o not in present]
    missing = [p for p in present if p not in list(order)]
    if missing:
        raise InputError(f"order={list(order)} lacks level(s) {missing} of the by column")
    return [o for o in order if o not in unknown]


@dataclass(frozen=True)
class _Spec:
    """What one call of :func:`compare` asks for (shared by every comparison)."""

    value: str
    by: str
    paired: str | None
    unit: str | None
    unit_note: str | None
    aggregate: str | None
    kind: str
    test: str
    order: Sequence[Any] | None
    alpha: float
    confidence: float
    n_resamples: int
    seed: int


def _one(sub: pd.DataFrame, spec: _Spec, where: dict[str, Any]) -> dict[str, Any]:
    """One comparison (one row of the result)."""
    cols = list(dict.fromkeys([spec.by, spec.value, *[c for c in (spec.paired, spec.unit) if c]]))
    clean = sub[cols].dropna()
    notes: list[str] = [spec.unit_note] if spec.unit_note else []
    if len(clean) < len(sub):
        notes.append(f"{len(sub) - len(clean)} row(s) with a missing value dropped")
    levels = _levels(clean[spec.by], spec.order)
    unit, paired = spec.unit, spec.paired
    label = (
        "stats.compare("
        + ", ".join(f"{k}={v!r}" for k, v in {"value": spec.value, "by": spec.by, **where}.items())
        + ")"
    )
    n_rows = len(clean)
    rows_per_level = [int((clean[spec.by] == lv).sum()) for lv in levels]
    aggregation = None
    if unit is not None:
        if paired is None:
            check_group_fixed(clean, unit, spec.by, label)
        if spec.aggregate is not None:
            clean = aggregate_per_unit(clean, unit, [spec.by], spec.value, spec.aggregate)
            paired = unit if paired is not None else None
            aggregation = aggregation_text(spec.aggregate, unit, n_rows, clean[unit].nunique())
        else:
            refuse_repeats(clean, unit, spec.by, label, spec.value)
            if paired is not None and paired != unit:
                paired = unit  # one row per unit and level: the unit is the pair
    base: dict[str, Any] = {
        "value": spec.value,
        "by": spec.by,
        "paired": spec.paired,
        "unit_of_analysis": unit if unit is not None else "row",
        "groups": [str(v) for v in levels],
        "n_rows": n_rows,
        "aggregation": aggregation,
        "correction": None,
    }
    if len(levels) < 2:
        notes.append("fewer than two groups: no test")
        n_units = clean[unit].nunique() if unit is not None else len(clean)
        return {**base, "n_units": n_units, "note": "; ".join(notes)}
    if paired:
        result = _paired(clean, levels, spec, notes, paired, base, label)
        result["n_rows_per_group"] = rows_per_level  # rows before any aggregation
    else:
        units, _ = unit_counts(clean, unit, spec.by, levels)
        base.update(n_units_per_group=units, n_rows_per_group=rows_per_level)
        result = {"n_units": int(sum(units)), **_independent(clean, levels, spec, notes)}
    if "p_value" in result and not np.isfinite(result["p_value"]):
        notes.append("the test statistic is undefined for these data (e.g. no variation)")
    if result.get("test") in TESTS:
        result["method"] = TESTS[result["test"]]
    return {**base, **result, "note": "; ".join(notes) or None}


def _choose(paired: bool, many: bool, spec: _Spec, normal: bool | None) -> tuple[str, str]:
    """The test to run and why."""
    para, rank = _FAMILY[(paired, many)]
    test = spec.test
    if spec.kind == "ordinal":
        if test in ("default", "rank", "nonparametric", rank):
            return rank, "the value is ordinal (an ordered category): rank test on its order"
        raise InputError(
            f"test={test!r} does not fit the ordinal value {spec.value!r}; rank tests only "
            f"(test='rank' or {rank!r}), or recode it as numeric if its levels are equally spaced"
        )
    if test in ("default", "parametric"):
        return para, _WHY_DEFAULT[para] if test == "default" else "parametric test requested"
    if test in ("rank", "nonparametric"):
        return rank, "rank test requested"
    if test == "pretest":
        if normal:
            return para, "pretest (opt-in): Shapiro–Wilk p ≥ alpha in every group → parametric"
        if normal is None:
            return rank, (
                "pretest (opt-in): a group has < 3 values or no spread, normality not "
                "assessable → rank test"
            )
        return rank, "pretest (opt-in): Shapiro–Wilk p < alpha in a group → rank test"
    allowed = (
        {para, rank}
        | ({"student_t"} if para == "welch_t" else set())
        | ({"anova"} if para == "welch_anova" else set())
    )
    if test not in allowed:
        raise InputError(f"test={test!r} does not fit this design; use one of {sorted(allowed)}")
    return test, "requested by name"


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
    out: dict[str, Any] = {}
    if kind in ("continuous", "ordinal"):
        arrays = [g.to_numpy(dtype=float) for g in groups]
        many = len(levels) > 2
        normal, pmin = _normality(arrays, alpha) if test == "pretest" else (None, np.nan)
        name, why = _choose(False, many, spec, normal)
        out.update(why=why, normality_p=pmin)
        if min(sizes) < 2:
            small = [str(lv) for lv, s in zip(levels, sizes, strict=True) if s < 2]
            notes.append(
                f"group(s) {small} have fewer than 2 units: no test (a group of one patient "
                "has no spread to compare)"
            )
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
    if test not in ("default", "chi2", "fisher"):
        raise InputError(
            f"test={test!r} does not fit a categorical value; use 'default', 'chi2' or 'fisher'"
        )
    expected = stats.contingency.expected_freq(table)
    small = (
        (expected < 5).any()
        if table.shape == (2, 2)
        else ((expected < 1).any() or (expected < 5).mean() > 0.2)
    )
    use_fisher = test == "fisher" or (test == "default" and small)
    why = (
        "requested by name"
        if test != "default"
        else (
            "categorical value, small expected counts (Cochran 1954) → Fisher's exact test"
            if small
            else "categorical value, expected counts large enough (Cochran 1954) → chi-square"
        )
    )
    out.update(why=why)
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
    clean: pd.DataFrame,
    levels: list[Any],
    spec: _Spec,
    notes: list[str],
    paired: str,
    base: dict[str, Any],
    label: str,
) -> dict[str, Any]:
    value, by, kind, test = spec.value, spec.by, spec.kind, spec.test
    alpha, confidence, n_resamples, seed = spec.alpha, spec.confidence, spec.n_resamples, spec.seed
    dup = clean.duplicated([paired, by], keep=False)
    if dup.any():
        example = clean.loc[dup, [paired, by]].head(2).astype("object").to_dict("records")
        raise InputError(
            f"several rows for the same {paired} and {by}, e.g. {example}; a paired comparison "
            "needs one value per unit and level (aggregate='mean', or split with per=)"
        )
    wide = clean.pivot(index=paired, columns=by, values=value).reindex(columns=levels)
    complete = wide.dropna()
    if len(complete) < len(wide):
        notes.append(f"{len(wide) - len(complete)} {paired}(s) without every level dropped")
    k = len(complete)
    out: dict[str, Any] = {
        "n_units": k,
        "n_units_per_group": [k] * len(levels),
        "n_rows_per_group": [int((clean[by] == lv).sum()) for lv in levels],
    }
    many = len(levels) > 2
    if k == 0:
        raise _nothing_paired(wide, levels, spec, paired, base, out, notes, label)
    if len(complete) < 2:
        notes.append("fewer than 2 complete pairs: no test")
        return out
    if kind in ("continuous", "ordinal"):
        data = complete.to_numpy(dtype=float)
        normal, pmin = None, np.nan
        if test == "pretest" and many:
            resid = data - data.mean(axis=1, keepdims=True) - data.mean(axis=0) + data.mean()
            normal, pmin = _normality([resid.ravel()], alpha)
        elif test == "pretest":
            normal, pmin = _normality([data[:, 0] - data[:, 1]], alpha)
        name, why = _choose(True, many, spec, normal)
        out.update(why=why, normality_p=pmin)
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
        if test not in ("default", "cochran_q"):
            raise InputError(
                f"test={test!r} does not fit paired binary values over ≥3 levels; use 'cochran_q'"
            )
        out.update(why="paired binary value, ≥3 levels → Cochran's Q", **_tests.cochran_q(data))
        notes.append("no effect size for Cochran's Q")
        return out
    if test not in ("default", "mcnemar"):
        raise InputError(f"test={test!r} does not fit paired binary values; use 'mcnemar'")
    table = np.zeros((2, 2), dtype=np.int64)
    np.add.at(table, (data[:, 0], data[:, 1]), 1)
    out.update(why="paired binary value, 2 levels → McNemar", **_tests.mcnemar(table, confidence))
    return out


def _nothing_paired(
    wide: pd.DataFrame,
    levels: list[Any],
    spec: _Spec,
    paired: str,
    base: dict[str, Any],
    out: dict[str, Any],
    notes: list[str],
    label: str,
) -> NothingPairedError:
    """The error (and the result row, for a ``per`` split) of a comparison that pairs nothing."""
    present = wide.notna().sum()
    seen = ", ".join(f"{lv!r}: {int(present[lv])}" for lv in levels)
    reason = (
        f"no {paired} has a value at every level of {spec.by!r} ({paired}s with a value, by "
        f"level: {seen}), so nothing can be paired and no paired test runs"
    )
    message = (
        f"{label}: {reason}. A paired comparison compares the same units across the levels: "
        f"check that {spec.by!r} holds levels every {paired} was measured at (e.g. the "
        "session number, not the timestamp string of each patient's own dates), or compare "
        "independent groups without paired="
    )
    row = {**base, **out, "note": "; ".join([*notes, reason])}
    return NothingPairedError(message, row)


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
