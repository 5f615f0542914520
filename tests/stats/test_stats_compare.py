"""stats.compare: every test path against scipy/statsmodels/pingouin called directly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pingouin as pg
import pytest
from scipy import special, stats
from statsmodels.stats.multitest import multipletests

from dentalkit.errors import InputError
from dentalkit.stats import COLUMNS, compare, describe

RNG = np.random.default_rng(20240101)


def _long(*samples, names=None):
    names = names or [f"g{i}" for i in range(len(samples))]
    return pd.DataFrame(
        {
            "v": np.concatenate(samples),
            "g": np.repeat(names, [len(s) for s in samples]),
        }
    )


def _nct_holds(t, df, scale, low, high, level=0.95):
    """The interval's ends solve P(T ≤ t | δ) = 1 − α/2 and α/2 (scipy's noncentral t)."""
    tail = (1 - level) / 2
    assert stats.nct.cdf(t, df, low / scale) == pytest.approx(1 - tail, abs=1e-6)
    assert stats.nct.cdf(t, df, high / scale) == pytest.approx(tail, abs=1e-6)


def test_welch_t_and_a_cohens_d_that_agrees_with_it():
    x, y = RNG.normal(10, 1, 14), RNG.normal(11, 2, 11)
    r = compare(_long(x, y), "v", "g", test="welch_t").iloc[0]
    ref = stats.ttest_ind(x, y, equal_var=False)
    assert r["statistic"] == pytest.approx(ref.statistic)
    assert r["p_value"] == pytest.approx(ref.pvalue)
    assert r["df"] == pytest.approx(ref.df)
    # Cohen's d with the SD √((s1² + s2²)/2) (Bonett 2008), by hand
    n1, n2, v1, v2 = len(x), len(y), x.var(ddof=1), y.var(ddof=1)
    d = (x.mean() - y.mean()) / np.sqrt((v1 + v2) / 2)
    assert r["effect_size_name"] == "cohens_d"
    assert r["effect_size"] == pytest.approx(d)
    scale = np.sqrt(v1 / n1 + v2 / n2) / np.sqrt((v1 + v2) / 2)  # d = t·scale
    _nct_holds(ref.statistic, ref.df, scale, r["effect_ci_low"], r["effect_ci_high"])
    assert r["effect_agrees_with_test"] and r["effect_ci_level"] == 0.95


def test_student_t_when_requested():
    x, y = RNG.normal(0, 1, 8), RNG.normal(1, 1, 9)
    r = compare(_long(x, y), "v", "g", test="student_t").iloc[0]
    ref = stats.ttest_ind(x, y)
    assert r["p_value"] == pytest.approx(ref.pvalue)
    assert r["df"] == 15
    # Hedges' g: pingouin's (an independent implementation) to its approximate J
    assert r["effect_size_name"] == "hedges_g"
    assert r["effect_size"] == pytest.approx(pg.compute_effsize(x, y, eftype="hedges"), rel=2e-3)
    j = np.exp(special.gammaln(7.5) - special.gammaln(7)) / np.sqrt(7.5)  # exact J, df 15
    _nct_holds(
        ref.statistic, 15, j * np.sqrt(1 / 8 + 1 / 9), r["effect_ci_low"], r["effect_ci_high"]
    )


def test_mann_whitney_and_rank_biserial():
    x, y = RNG.exponential(1, 12), RNG.exponential(2, 15)
    r = compare(_long(x, y), "v", "g", test="mann_whitney", n_resamples=500).iloc[0]
    ref = stats.mannwhitneyu(x, y, alternative="two-sided")
    assert r["statistic"] == ref.statistic
    assert r["p_value"] == pytest.approx(ref.pvalue)
    assert r["effect_size"] == pytest.approx(pg.mwu(x, y)["RBC"].iloc[0])
    # by hand: P(x > y) − P(x < y) over all pairs
    diff = np.sign(x[:, None] - y[None, :])
    assert r["effect_size"] == pytest.approx(diff.mean())
    assert r["effect_ci_low"] < r["effect_size"] < r["effect_ci_high"]
    again = compare(_long(x, y), "v", "g", test="mann_whitney", n_resamples=500).iloc[0]
    assert again["effect_ci_low"] == r["effect_ci_low"]  # seeded: reproducible


def _ncf_holds(f, df1, df2, n, low, high, level=0.90):
    """ω² ends λ/(λ + N) with λ solving P(F' ≥ f | λ) = α/2 and 1 − α/2 (scipy's ncf)."""
    lam_low, lam_high = low * n / (1 - low), high * n / (1 - high)
    tail = (1 - level) / 2
    if lam_low > 0:
        assert stats.ncf.sf(f, df1, df2, lam_low) == pytest.approx(tail, abs=1e-6)
    else:
        assert stats.f.sf(f, df1, df2) >= tail  # p ≥ α: the lower end is 0
    assert stats.ncf.sf(f, df1, df2, lam_high) == pytest.approx(1 - tail, abs=1e-6)


def test_welch_and_classic_anova_with_the_omega_squared_of_their_own_f():
    groups = [RNG.normal(m, s, n) for m, s, n in [(0, 1, 10), (0.8, 1, 12), (1.5, 2, 9)]]
    t = _long(*groups)
    r = compare(t, "v", "g", test="welch_anova").iloc[0]
    ref = pg.welch_anova(data=t, dv="v", between="g")
    assert r["statistic"] == pytest.approx(ref["F"].iloc[0])
    assert r["p_value"] == pytest.approx(ref["p_unc"].iloc[0])
    assert r["df2"] == pytest.approx(ref["ddof2"].iloc[0])
    lam = 2 * (r["statistic"] - 1)
    assert r["effect_size_name"] == "omega_squared"
    assert r["effect_size"] == pytest.approx(lam / (lam + 31))
    _ncf_holds(r["statistic"], 2, r["df2"], 31, r["effect_ci_low"], r["effect_ci_high"])
    c = compare(t, "v", "g", test="anova").iloc[0]
    f = stats.f_oneway(*groups)
    assert c["statistic"] == pytest.approx(f.statistic)
    assert c["p_value"] == pytest.approx(f.pvalue)
    # Fisher's F: ω² is Hays' (SS_b − df_b·MS_w)/(SS_t + MS_w), by hand
    allv = np.concatenate(groups)
    ssb = sum(len(g) * (g.mean() - allv.mean()) ** 2 for g in groups)
    sst = ((allv - allv.mean()) ** 2).sum()
    msw = (sst - ssb) / 28
    assert c["effect_size"] == pytest.approx((ssb - 2 * msw) / (sst + msw))
    _ncf_holds(f.statistic, 2, 28, 31, c["effect_ci_low"], c["effect_ci_high"])
    assert c["effect_ci_level"] == pytest.approx(0.90) and c["effect_agrees_with_test"]


def test_welch_anova_effect_size_agrees_with_welch_not_with_the_classic_f():
    """Issue 29: Welch p 0.022 beside η² [0.00, 0.19] from the classic F (p 0.263). Here
    Welch's p < 0.05 < the classic F's p; the interval is Welch's and excludes 0."""
    rng = np.random.default_rng(0)
    groups = [rng.normal(0, 0.5, 20), rng.normal(0.45, 0.5, 20), rng.normal(0, 6, 6)]
    t = _long(*groups)
    assert stats.f_oneway(*groups).pvalue > 0.05
    r = compare(t, "v", "g").iloc[0]
    assert r["test"] == "welch_anova" and r["p_value"] < 0.05
    assert r["effect_ci_low"] > 0 and r["effect_agrees_with_test"]
    assert "agrees with the test" in r["effect_ci_method"]


@pytest.mark.parametrize("seed", range(6))
def test_effect_interval_excludes_zero_exactly_when_p_is_below_alpha(seed):
    rng = np.random.default_rng(100 + seed)
    shift = rng.uniform(0, 0.9)
    groups = [rng.normal(0, 1, 9), rng.normal(shift, 1.5, 8), rng.normal(shift / 2, 1, 7)]
    for test, data in (("welch_anova", groups), ("anova", groups), ("welch_t", groups[:2])):
        r = compare(_long(*data), "v", "g", test=test).iloc[0]
        excludes = (
            r["effect_ci_low"] > 0
            if test != "welch_t"
            else (r["effect_ci_low"] > 0 or r["effect_ci_high"] < 0)
        )
        assert excludes == (r["p_value"] < 0.05), (test, r["p_value"])


def test_kruskal_epsilon_squared():
    groups = [RNG.exponential(s, n) for s, n in [(1, 10), (2, 11), (3, 9)]]
    r = compare(_long(*groups), "v", "g", test="kruskal", n_resamples=300).iloc[0]
    h = stats.kruskal(*groups)
    assert r["statistic"] == pytest.approx(h.statistic)
    assert r["p_value"] == pytest.approx(h.pvalue)
    assert r["effect_size"] == pytest.approx(h.statistic / (30 - 1))


def _paired(a, b, c=None):
    n = len(a)
    cols = {"s1": a, "s2": b} | ({"s3": c} if c is not None else {})
    wide = pd.DataFrame(cols).assign(pid=[f"p{i}" for i in range(n)])
    return wide.melt(id_vars="pid", var_name="session", value_name="v")


def test_paired_t_and_cohen_dz():
    a = RNG.normal(10, 1, 15)
    b = a + RNG.normal(0.4, 0.5, 15)
    r = compare(_paired(a, b), "v", "session", paired="pid", test="paired_t").iloc[0]
    ref = stats.ttest_rel(a, b)
    assert r["statistic"] == pytest.approx(ref.statistic)
    assert r["p_value"] == pytest.approx(ref.pvalue)
    d = a - b
    assert r["effect_size"] == pytest.approx(d.mean() / d.std(ddof=1))
    assert r["difference"] == pytest.approx(d.mean())


def test_wilcoxon_and_matched_pairs_rank_biserial():
    a = RNG.exponential(1, 14)
    b = a * RNG.lognormal(0.3, 0.4, 14)
    r = compare(_paired(a, b), "v", "session", paired="pid", test="wilcoxon", n_resamples=300).iloc[
        0
    ]
    ref = stats.wilcoxon(a, b)
    assert r["statistic"] == ref.statistic
    assert r["p_value"] == pytest.approx(ref.pvalue)
    assert r["effect_size"] == pytest.approx(pg.wilcoxon(a, b)["RBC"].iloc[0])


def test_repeated_measures_anova_and_friedman():
    a = RNG.normal(10, 1, 12)
    b = a + RNG.normal(0.5, 0.5, 12)
    c = a + RNG.normal(1.0, 0.5, 12)
    t = _paired(a, b, c)
    r = compare(t, "v", "session", paired="pid", test="rm_anova").iloc[0]
    ref = pg.rm_anova(data=t, dv="v", within="session", subject="pid")
    assert r["statistic"] == pytest.approx(ref["F"].iloc[0])
    assert r["p_value"] == pytest.approx(ref["p_unc"].iloc[0])
    assert (r["df"], r["df2"]) == (2, 22)
    # partial η² = SS_effect / (SS_effect + SS_error) = F·df1 / (F·df1 + df2)
    assert r["effect_size"] == pytest.approx(ref["F"].iloc[0] * 2 / (ref["F"].iloc[0] * 2 + 22))
    f = compare(t, "v", "session", paired="pid", test="friedman", n_resamples=200).iloc[0]
    fr = stats.friedmanchisquare(a, b, c)
    assert f["statistic"] == pytest.approx(fr.statistic)
    assert f["effect_size"] == pytest.approx(
        pg.friedman(data=t, dv="v", within="session", subject="pid")["W"].iloc[0]
    )


def test_chi_square_and_cramers_v():
    g = np.repeat(["a", "b", "c"], 40)
    v = np.concatenate([RNG.random(40) < p for p in (0.2, 0.4, 0.6)])
    t = pd.DataFrame({"g": g, "decay": v})
    r = compare(t, "decay", "g", n_resamples=200).iloc[0]
    table = pd.crosstab(t["g"], t["decay"]).to_numpy()
    ref = stats.chi2_contingency(table, correction=False)
    assert r["test"] == "chi2"
    assert r["statistic"] == pytest.approx(ref.statistic)
    assert r["p_value"] == pytest.approx(ref.pvalue)
    assert r["df"] == 2
    assert r["effect_size"] == pytest.approx(np.sqrt(ref.statistic / (120 * 1)))


def test_two_by_two_chi_square_orientation():
    # group a: 30/50 positive, group b: 15/50 positive
    t = pd.DataFrame(
        {
            "g": ["a"] * 50 + ["b"] * 50,
            "x": [1] * 30 + [0] * 20 + [1] * 15 + [0] * 35,
        }
    )
    r = compare(t, "x", "g").iloc[0]
    assert r["test"] == "chi2"
    assert r["statistic"] == pytest.approx(
        stats.chi2_contingency([[30, 20], [15, 35]], correction=False).statistic
    )
    assert r["difference"] == pytest.approx(0.6 - 0.3)
    # conditional MLE is close to, not equal to, the sample odds ratio (30·35)/(20·15) = 3.5
    assert r["effect_size"] == pytest.approx(3.5, rel=0.05)
    flipped = compare(t, "x", "g", order=["b", "a"]).iloc[0]
    assert flipped["difference"] == pytest.approx(-0.3)
    assert flipped["effect_size"] == pytest.approx(1 / r["effect_size"])


def test_mcnemar_exact():
    # 20 patients: decay at session 1 / session 2. b = 1→0 (6), c = 0→1 (1)
    s1 = [1] * 6 + [0] * 1 + [1] * 5 + [0] * 8
    s2 = [0] * 6 + [1] * 1 + [1] * 5 + [0] * 8
    t = pd.DataFrame(
        {"pid": list(range(20)) * 2, "session": ["t1"] * 20 + ["t2"] * 20, "decay": s1 + s2}
    )
    r = compare(t, "decay", "session", paired="pid").iloc[0]
    assert r["test"] == "mcnemar"
    assert r["p_value"] == pytest.approx(min(1.0, 2 * stats.binom.cdf(1, 7, 0.5)))
    assert r["effect_size"] == pytest.approx(6 / 1)


def test_cochran_q():
    t = pd.DataFrame(
        {
            "pid": list(range(8)) * 3,
            "s": ["a"] * 8 + ["b"] * 8 + ["c"] * 8,
            "y": [*(1, 1, 0, 1, 0, 1, 1, 1), *(0, 1, 0, 0, 0, 1, 0, 1), *(0, 0, 0, 0, 0, 1, 0, 0)],
        }
    )
    r = compare(t, "y", "s", paired="pid").iloc[0]
    x = t.pivot(index="pid", columns="s", values="y").to_numpy()
    k = 3
    col, row = x.sum(axis=0), x.sum(axis=1)
    q = (k - 1) * (k * (col**2).sum() - col.sum() ** 2) / (k * row.sum() - (row**2).sum())
    assert r["test"] == "cochran_q"
    assert r["statistic"] == pytest.approx(q)
    assert r["p_value"] == pytest.approx(stats.chi2.sf(q, k - 1))


def test_pretest_rule_picks_by_normality_only_when_asked():
    # its own generator: drawn from the module's, the samples depended on which tests ran
    # before (with -k or xdist one of the "normal" samples failed Shapiro–Wilk)
    rng = np.random.default_rng(216)
    normal = _long(rng.normal(0, 1, 40), rng.normal(0.3, 1, 40))
    skewed = _long(rng.lognormal(0, 1.2, 40), rng.lognormal(0.3, 1.2, 40))
    rn = compare(normal, "v", "g", test="pretest", n_resamples=0).iloc[0]
    rs = compare(skewed, "v", "g", test="pretest", n_resamples=0).iloc[0]
    assert rn["test"] == "welch_t"
    assert "pretest" in rn["why"] and "parametric" in rn["why"]
    assert rn["normality_p"] == pytest.approx(
        min(stats.shapiro(g["v"]).pvalue for _, g in normal.groupby("g"))
    )
    assert rs["test"] == "mann_whitney"
    assert "rank test" in rs["why"]
    three = compare(
        _long(rng.normal(0, 1, 20), rng.normal(0, 1, 20), rng.normal(1, 1, 20)),
        "v",
        "g",
        test="pretest",
    )
    assert three["test"].iloc[0] == "welch_anova"
    tiny = compare(
        _long(np.array([1.0, 2.0]), np.array([3.0, 4.5, 5.0])),
        "v",
        "g",
        test="pretest",
        n_resamples=0,
    )
    assert tiny["test"].iloc[0] == "mann_whitney"
    assert "not assessable" in tiny["why"].iloc[0]
    # the default is pre-specified: Welch's t on skewed data too, no normality p computed
    default = compare(skewed, "v", "g").iloc[0]
    assert default["test"] == "welch_t" and "pre-specified" in default["why"]
    assert np.isnan(default["normality_p"])
    rank = compare(skewed, "v", "g", test="rank", n_resamples=0).iloc[0]
    assert rank["test"] == "mann_whitney"
    with pytest.raises(InputError, match="pretest"):
        compare(skewed, "v", "g", test="auto")


def test_per_comparisons_and_multiple_testing_correction():
    rows = []
    for fdi, shift in [(11, 0.0), (12, 0.2), (21, 1.5), (22, 3.0)]:
        for grp, m in (("ctrl", 0.0), ("case", shift)):
            for v in RNG.normal(m, 1, 15):
                rows.append({"fdi": fdi, "group": grp, "area": v})
    rows.append({"fdi": 99, "group": "ctrl", "area": 1.0})  # a comparison that cannot run
    t = pd.DataFrame(rows)
    holm = compare(t, "area", "group", per="fdi", test="welch_t", correction="holm")
    assert list(holm["fdi"]) == [11, 12, 21, 22, 99]
    assert list(holm.columns) == ["fdi", *COLUMNS]
    ok = holm["p_value"].notna()
    assert ok.sum() == 4
    assert "fewer than two groups" in holm.loc[~ok, "note"].iloc[0]
    expected = multipletests(holm.loc[ok, "p_value"], method="holm")[1]
    np.testing.assert_allclose(holm.loc[ok, "p_adjusted"], expected)
    assert holm.loc[~ok, "p_adjusted"].isna().all()
    bh = compare(t, "area", "group", per="fdi", test="welch_t", correction="fdr_bh")
    np.testing.assert_allclose(
        bh.loc[ok, "p_adjusted"], multipletests(bh.loc[ok, "p_value"], method="fdr_bh")[1]
    )
    assert (holm["correction"] == "holm").all()
    none = compare(t, "area", "group", per="fdi", test="welch_t")
    assert none["p_adjusted"].isna().all()
    with pytest.raises(InputError, match="correction"):
        compare(t, "area", "group", per="fdi", correction="bogus")


def test_missing_values_and_incomplete_pairs_are_reported():
    t = _long(np.array([1.0, 2.0, np.nan, 4.0]), np.array([2.0, 3.0, 5.0]))
    r = compare(t, "v", "g", test="welch_t").iloc[0]
    assert (r["n_units"], r["n_rows"]) == (6, 6)
    assert r["n_units_per_group"] == [3, 3]
    assert "1 row(s) with a missing value dropped" in r["note"]
    p = _paired(np.array([1.0, 2.0, 3.0, 4.0]), np.array([1.5, 2.0, 3.9, 4.4]))
    p = p.drop(index=p.index[-1])
    r = compare(p, "v", "session", paired="pid", test="paired_t").iloc[0]
    assert r["n_units"] == 3
    assert "1 pid(s) without every level dropped" in r["note"]


def test_compare_bad_input():
    t = _long(RNG.normal(0, 1, 5), RNG.normal(0, 1, 5))
    with pytest.raises(InputError, match="test="):
        compare(t, "v", "g", test="magic")
    with pytest.raises(InputError, match="does not fit"):
        compare(t, "v", "g", test="kruskal")
    with pytest.raises(InputError, match="lacks column"):
        compare(t, "w", "g")
    dup = _paired(np.arange(4.0), np.arange(4.0) + 1)
    with pytest.raises(InputError, match="several rows for the same pid"):
        compare(pd.concat([dup, dup]), "v", "session", paired="pid")
    with pytest.raises(InputError, match="lacks level"):
        compare(t, "v", "g", order=["g0"])


def test_describe_matches_pandas_and_wilson():
    t = _long(np.array([1.0, 2.0, 4.0]), np.array([3.0, 5.0]))
    d = describe(t, "v", "g").set_index("g")
    assert d.loc["g0", "mean"] == pytest.approx(7 / 3)
    assert d.loc["g0", "sd"] == pytest.approx(np.std([1, 2, 4], ddof=1))
    assert d.loc["g1", "median"] == 4.0
    b = describe(pd.DataFrame({"g": ["a"] * 4, "y": [True, False, True, True]}), "y", "g").iloc[0]
    from statsmodels.stats.proportion import proportion_confint

    assert (b["n"], b["n_positive"], b["proportion"]) == (4, 3, 0.75)
    assert (b["ci_low"], b["ci_high"]) == pytest.approx(proportion_confint(3, 4, method="wilson"))


def test_undefined_statistic_is_noted():
    t = _long(np.array([2.0, 2.0, 2.0]), np.array([2.0, 2.0, 2.0]))
    r = compare(t, "v", "g", test="welch_t").iloc[0]
    assert np.isnan(r["p_value"])
    assert "undefined" in r["note"]
