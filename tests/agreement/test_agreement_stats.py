"""The statistics on arrays, against published worked examples and independent libraries."""

from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from agreement_fixtures import PEFR_MINI, PEFR_WRIGHT, SHROUT_FLEISS
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from dentalkit import agreement
from dentalkit.errors import InputError

# --------------------------------------------------------------------------- Bland–Altman

# Bland JM, Altman DG. Statistical methods for assessing agreement between two methods of
# clinical measurement. Lancet 1986;327(8476):307-310, PEFR example (first readings, 17
# subjects; difference = large Wright − mini Wright). Published: d̄ = −2.1 l/min,
# s = 38.8 l/min, limits d̄ ± 2s = −79.7 to 75.5; SE(d̄) = 9.4, t(16) = 2.12, bias CI
# −22.0 to 17.8; SE(limit) = sqrt(3s²/n) = 16.3, lower limit CI −114.3 to −45.1, upper
# 40.9 to 110.1.
PUBLISHED_1986 = {
    "bias": -2.1,
    "sd_diff": 38.8,
    "loa_low": -79.7,
    "loa_high": 75.5,
    "bias_ci_low": -22.0,
    "bias_ci_high": 17.8,
    "loa_low_ci_low": -114.3,
    "loa_low_ci_high": -45.1,
    "loa_high_ci_low": 40.9,
    "loa_high_ci_high": 110.1,
}
# The paper computes each value from intermediates rounded to 0.1 (d̄, s, SEs) and t = 2.12,
# then rounds to 0.1. Worst-case deviation from the exact value, from those half-units:
_H = 0.05  # half a unit of the 0.1 rounding
_TOL_1986 = {
    "bias": _H,
    "sd_diff": _H,
    "loa_low": _H + 2 * _H + _H,  # d̄ ± 2s from rounded d̄ and s, then rounded
    "loa_high": _H + 2 * _H + _H,
    # bias ± t·SE: rounded d̄, rounded SE times 2.12, t rounded to 2.12, final rounding
    "bias_ci_low": _H + 2.12 * _H + 0.005 * 9.4 + _H,
    "bias_ci_high": _H + 2.12 * _H + 0.005 * 9.4 + _H,
    "loa_low_ci_low": 3 * _H + 2.12 * _H + 0.005 * 16.3 + _H,
    "loa_low_ci_high": 3 * _H + 2.12 * _H + 0.005 * 16.3 + _H,
    "loa_high_ci_low": 3 * _H + 2.12 * _H + 0.005 * 16.3 + _H,
    "loa_high_ci_high": 3 * _H + 2.12 * _H + 0.005 * 16.3 + _H,
}


def test_bland_altman_reproduces_the_1986_pefr_example():
    res = agreement.bland_altman(PEFR_MINI, PEFR_WRIGHT, agreement=2, loa_ci="1986")
    assert res["n"] == 17
    for key, published in PUBLISHED_1986.items():
        assert res[key] == pytest.approx(published, abs=_TOL_1986[key]), key


def test_bland_altman_1999_limits_use_the_refined_standard_error():
    # Bland & Altman 1999: var(d̄ ± z s) ≈ (1/n + z²/(2(n−1))) s².
    d = np.asarray(PEFR_WRIGHT, float) - np.asarray(PEFR_MINI, float)
    n, s = d.size, d.std(ddof=1)
    res = agreement.bland_altman(PEFR_MINI, PEFR_WRIGHT)  # defaults: z = 1.96, "1999"
    se = s * np.sqrt(1 / n + 1.96**2 / (2 * (n - 1)))
    t = sps.t.ppf(0.975, n - 1)
    assert res["loa_se"] == pytest.approx(se, rel=1e-12)
    assert res["loa_low"] == pytest.approx(d.mean() - 1.96 * s, rel=1e-12)
    assert res["loa_high_ci_high"] == pytest.approx(d.mean() + 1.96 * s + t * se, rel=1e-12)
    # with z = 2 the 1986 shortcut sqrt(3/n) is close to, and below, the 1999 SE
    r86 = agreement.bland_altman(PEFR_MINI, PEFR_WRIGHT, agreement=2, loa_ci="1986")
    r99 = agreement.bland_altman(PEFR_MINI, PEFR_WRIGHT, agreement=2)
    assert r86["loa_se"] < r99["loa_se"] < 1.05 * r86["loa_se"]


def test_bias_interval_and_p_value_match_scipy():
    d = np.asarray(PEFR_WRIGHT, float) - np.asarray(PEFR_MINI, float)
    res = agreement.bland_altman(PEFR_MINI, PEFR_WRIGHT, confidence=0.9)
    ci = sps.ttest_1samp(d, 0.0).confidence_interval(0.9)
    assert (res["bias_ci_low"], res["bias_ci_high"]) == pytest.approx((ci.low, ci.high))
    assert res["p_bias"] == pytest.approx(sps.ttest_rel(PEFR_WRIGHT, PEFR_MINI).pvalue)


def test_bland_altman_moments_is_vectorised_and_nan_below_two_pairs():
    out = agreement.bland_altman_moments(
        np.array([17, 1]), np.array([-2.1, 0.0]), np.array([38.8, 0.0])
    )
    assert out["loa_low"].shape == (2,)
    assert np.isfinite(out["loa_low"][0]) and np.isnan(out["loa_low"][1])


@pytest.mark.parametrize(
    "kwargs",
    [{"agreement": 0}, {"confidence": 1.5}, {"loa_ci": "2001"}],
)
def test_bland_altman_rejects_bad_settings(kwargs):
    with pytest.raises(InputError):
        agreement.bland_altman([1, 2, 3], [1, 2, 4], **kwargs)


def test_bland_altman_rejects_unpaired_or_missing_values():
    with pytest.raises(InputError, match="same length"):
        agreement.bland_altman([1, 2, 3], [1, 2])
    with pytest.raises(InputError, match="non-finite"):
        agreement.bland_altman([1, 2, np.nan], [1, 2, 3])
    with pytest.raises(InputError, match="at least 2"):
        agreement.bland_altman([1.0], [2.0])


# --------------------------------------------------------------------------- Dahlberg


def test_dahlberg_hand_computed():
    # d = 1, 0, 2 → Σd² = 5, n = 3 → sqrt(5 / 6)
    assert agreement.dahlberg([10, 20, 30], [11, 20, 32]) == pytest.approx(np.sqrt(5 / 6))


@settings(max_examples=50, deadline=None)
@given(
    st.lists(st.floats(-1e3, 1e3), min_size=1, max_size=30),
    st.floats(-50, 50),
)
def test_dahlberg_of_a_constant_shift_is_shift_over_root_two(values, shift):
    ref = np.asarray(values)
    assert agreement.dahlberg(ref, ref + shift) == pytest.approx(abs(shift) / np.sqrt(2), abs=1e-9)


# --------------------------------------------------------------------------- ICC


def _long(matrix: np.ndarray) -> pd.DataFrame:
    n, k = matrix.shape
    return pd.DataFrame(
        {
            "target": np.repeat(np.arange(n), k),
            "judge": np.tile(np.arange(k), n),
            "score": matrix.reshape(-1),
        }
    )


@pytest.mark.parametrize(
    ("form", "published"),
    [
        ("ICC(1,1)", 0.17),
        ("ICC(2,1)", 0.29),
        ("ICC(3,1)", 0.71),
        ("ICC(1,k)", 0.44),
        ("ICC(2,k)", 0.62),
        ("ICC(3,k)", 0.91),
    ],
)
def test_icc_reproduces_shrout_and_fleiss_table(form, published):
    # Shrout PE, Fleiss JL. Intraclass correlations: uses in assessing rater reliability.
    # Psychol Bull 1979;86:420-428 — Table 2 data, ICC values of their Table 4 (k = 4).
    res = agreement.icc(_long(SHROUT_FLEISS), "target", "judge", "score", form=form)
    assert round(res["icc"], 2) == published
    assert res["ci95_low"] <= res["icc"] <= res["ci95_high"]


def test_icc_2_1_matches_the_mcgraw_wong_formula_and_keeps_full_precision():
    import pingouin as pg

    # ICC(A,1) = (MSR − MSE) / (MSR + (k−1) MSE + k (MSC − MSE) / n)  (McGraw & Wong 1996)
    x = SHROUT_FLEISS
    n, k = x.shape
    grand = x.mean()
    msr = k * ((x.mean(axis=1) - grand) ** 2).sum() / (n - 1)
    msc = n * ((x.mean(axis=0) - grand) ** 2).sum() / (k - 1)
    sse = ((x - x.mean(axis=1, keepdims=True) - x.mean(axis=0) + grand) ** 2).sum()
    mse = sse / ((n - 1) * (k - 1))
    expected = (msr - mse) / (msr + (k - 1) * mse + k * (msc - mse) / n)
    before = dict(pg.options)
    res = agreement.icc(_long(x), "target", "judge", "score")
    assert res["icc"] == pytest.approx(expected, rel=1e-12)
    assert res["form"] == "ICC(2,1)" and "absolute agreement" in res["description"]
    assert round(res["ci95_low"], 2) != res["ci95_low"]  # pingouin's 2-decimal rounding is off
    assert dict(pg.options) == before  # and restored afterwards


def test_icc_rejects_unknown_form():
    with pytest.raises(InputError, match="ICC form"):
        agreement.icc(_long(SHROUT_FLEISS), "target", "judge", "score", form="ICC(4,1)")


# --------------------------------------------------------------------------- kappa


def test_kappa_hand_computed_and_se_from_statsmodels():
    from statsmodels.stats.inter_rater import cohens_kappa

    # 50 items: both "yes" 20, ref yes/test no 5, ref no/test yes 10, both "no" 15.
    # p_o = 35/50 = 0.7; p_e = 0.5·0.6 + 0.5·0.4 = 0.5 → κ = (0.7 − 0.5) / 0.5 = 0.4
    ref = ["yes"] * 25 + ["no"] * 25
    tst = ["yes"] * 20 + ["no"] * 5 + ["yes"] * 10 + ["no"] * 15
    res = agreement.cohens_kappa(ref, tst, ci="normal")
    assert res["kappa"] == pytest.approx(0.4)
    assert res["agreement"] == pytest.approx(0.7) and res["n_agree"] == 35
    direct = cohens_kappa(np.array([[15, 10], [5, 20]]))  # rows ref (no, yes), cols test
    assert res["kappa_se"] == pytest.approx(direct.std_kappa)
    assert res["kappa_ci_low"] == pytest.approx(0.4 - 1.959963984540054 * direct.std_kappa)


@pytest.mark.parametrize("weights", ["linear", "quadratic"])
def test_weighted_kappa_against_sklearn_and_the_fleiss_cohen_everitt_se(weights):
    from sklearn.metrics import cohen_kappa_score

    rng = np.random.default_rng(11)
    order = ["Class III", "Class I", "Class II"]
    a = rng.integers(0, 3, 80)
    b = np.clip(a + rng.choice([-1, 0, 0, 0, 1, 2], 80), 0, 2)
    ref, tst = [order[i] for i in a], [order[i] for i in b]
    res = agreement.cohens_kappa(ref, tst, categories=order, weights=weights, ci="normal")
    assert res["weights"] == weights
    assert res["kappa"] == pytest.approx(cohen_kappa_score(a, b, weights=weights))
    # Fleiss, Cohen & Everitt (1969), eq. for the large-sample variance of weighted kappa
    k, n = 3, 80
    p = np.zeros((k, k))
    np.add.at(p, (a, b), 1.0 / n)
    d = np.subtract.outer(np.arange(k), np.arange(k))
    w = 1 - (np.abs(d) / (k - 1) if weights == "linear" else d**2 / (k - 1) ** 2)
    pr, pc = p.sum(1), p.sum(0)
    pe = (w * np.outer(pr, pc)).sum()
    kw = ((w * p).sum() - pe) / (1 - pe)
    wi, wj = w @ pc, pr @ w
    var = ((p * (w - np.add.outer(wi, wj) * (1 - kw)) ** 2).sum() - (kw - pe * (1 - kw)) ** 2) / (
        n * (1 - pe) ** 2
    )
    assert res["kappa_se"] == pytest.approx(np.sqrt(var))
    z = 1.959963984540054
    assert res["kappa_ci_low"] == pytest.approx(kw - z * np.sqrt(var))
    with pytest.raises(InputError, match="weights="):
        agreement.cohens_kappa(ref, tst, weights="cubic")


def test_kappa_interval_is_truncated_to_its_range():
    # 9 of 10 agree: κ = 0.8 with a normal interval that would pass 1
    ref = ["I"] * 5 + ["II"] * 5
    tst = ["I"] * 5 + ["II"] * 4 + ["I"]
    res = agreement.cohens_kappa(ref, tst, ci="normal")
    assert res["kappa"] == pytest.approx(0.8)
    assert res["kappa"] + 1.96 * res["kappa_se"] > 1 and res["kappa_ci_high"] == 1.0


def test_kappa_is_nan_when_chance_agreement_is_one_and_categories_are_checked():
    res = agreement.cohens_kappa(["I"] * 5, ["I"] * 5, categories=["III", "I", "II"])
    assert res["agreement"] == 1.0 and np.isnan(res["kappa"])
    with pytest.raises(InputError, match="not among categories"):
        agreement.cohens_kappa(["I", "IV"], ["I", "I"], categories=["I", "II"])
    with pytest.raises(InputError, match="missing"):
        agreement.cohens_kappa(["I", None], ["I", "I"])


def test_kappa_with_categories_unused_by_one_rater_gives_a_square_table():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = agreement.cohens_kappa(["I", "II", "III", "I"], ["I", "II", "II", "I"])
    # p_o = 3/4; ref marginals (I .5, II .25, III .25), test (I .5, II .5, III 0)
    p_e = 0.5 * 0.5 + 0.25 * 0.5 + 0.25 * 0.0
    assert res["kappa"] == pytest.approx((0.75 - p_e) / (1 - p_e))


def test_one_bland_altman_implementation_serves_tle_calibration_and_the_exact_interval():
    # tle.calibration takes its limits from agreement.bland_altman_moments (issue 23): the
    # same numbers for every CI method, and the exact interval equals non-central t
    # quantiles computed here directly (Carkeet 2015: (d̄ − θ)√n/s ~ t'(n−1, −z√n)).
    from dentalkit.tle import calibration

    predicted, observed = np.asarray(PEFR_WRIGHT, float), np.asarray(PEFR_MINI, float)
    d = predicted - observed
    n, s = d.size, d.std(ddof=1)
    for ours, theirs in (("1999", "bland-altman-1999"), ("1986", "bland-altman-1986"),
                         ("exact", "exact")):  # fmt: skip
        res = agreement.bland_altman(observed, predicted, loa_ci=ours)
        cal = calibration(predicted, observed, loa_ci=theirs).set_index("statistic")
        assert cal.loc["loa_upper", ["ci_low", "ci_high"]].tolist() == pytest.approx(
            [res["loa_high_ci_low"], res["loa_high_ci_high"]], rel=1e-12
        )
        assert cal.loc["bias", ["ci_low", "ci_high"]].tolist() == pytest.approx(
            [res["bias_ci_low"], res["bias_ci_high"]], rel=1e-12
        )
    exact = agreement.bland_altman(observed, predicted, loa_ci="exact")
    k = sps.nct.ppf([0.025, 0.975], n - 1, 1.96 * np.sqrt(n)) / np.sqrt(n)
    assert [exact["loa_high_ci_low"], exact["loa_high_ci_high"]] == pytest.approx(
        d.mean() + k * s, rel=1e-10
    )
    assert np.isnan(exact["loa_se"])
    # 1986 at z = 1.96: s·sqrt((1 + z²/2)/n), which is sqrt(3s²/n) only at z = 2
    r86 = agreement.bland_altman(observed, predicted, loa_ci="1986")
    assert r86["loa_se"] == pytest.approx(s * np.sqrt((1 + 1.96**2 / 2) / n), rel=1e-12)


# ------------------------------------------------ kappa: order and small-sample interval

SKELETAL = ["Class III", "Class I", "Class II"]


def _classes(seed=3, n=20):
    rng = np.random.default_rng(seed)
    truth = rng.normal(2.5, 2.5, n)
    cut = np.array([0.0, 4.0])
    a = np.searchsorted(cut, truth + rng.normal(0, 1, n), side="right")
    b = np.searchsorted(cut, truth + rng.normal(0, 1, n), side="right")
    return a, b, [SKELETAL[i] for i in a], [SKELETAL[i] for i in b]


def test_weighted_kappa_needs_an_order():
    """Issue 29: without categories= the labels were sorted alphabetically (Class I <
    Class II < Class III), silently giving another weighted kappa."""
    from sklearn.metrics import cohen_kappa_score

    from dentalkit import ceph

    a, b, ref, tst = _classes()
    with pytest.raises(InputError, match=r"needs the order of the classes.*class_order"):
        agreement.cohens_kappa(ref, tst, weights="linear")
    assert ceph.class_order("skeletal_class") == SKELETAL  # declared once, by the bands
    given = agreement.cohens_kappa(ref, tst, categories=ceph.class_order(), weights="linear")
    assert given["kappa"] == pytest.approx(cohen_kappa_score(a, b, weights="linear"))
    assert given["categories"] == SKELETAL
    alphabetical = sorted(SKELETAL)
    wrong = cohen_kappa_score(
        [alphabetical.index(r) for r in ref], [alphabetical.index(t) for t in tst], weights="linear"
    )
    assert wrong != pytest.approx(given["kappa"])  # the order matters
    typed = [pd.Categorical(v, categories=SKELETAL, ordered=True) for v in (ref, tst)]
    assert agreement.cohens_kappa(*typed, weights="linear")["kappa"] == given["kappa"]
    unweighted = agreement.cohens_kappa(ref, tst)  # nominal: no order needed
    assert unweighted["kappa"] == pytest.approx(cohen_kappa_score(a, b))


def _mover_by_hand(a, b, w, confidence=0.95):
    """κ = 1 − d/q, Zou & Donner's MOVER-R with Wilson (statsmodels) on Kish's effective n
    for the disagreement d and a delta-method normal interval for q = 1 − p_e."""
    from statsmodels.stats.proportion import proportion_confint

    n, k = len(a), w.shape[0]
    s = 1 - w[a, b]
    d = s.mean()
    var_d = ((s - d) ** 2).sum() / (n * (n - 1))
    n_eff = d * (1 - d) / var_d if var_d > 0 else n
    l1, u1 = proportion_confint(d * n_eff, n_eff, alpha=1 - confidence, method="wilson")
    r, c = np.bincount(a, minlength=k) / n, np.bincount(b, minlength=k) / n
    pe = r @ w @ c
    infl = (w @ c)[a] + (r @ w)[b] - 2 * pe
    se_q = np.sqrt((infl**2).sum() / (n * (n - 1)))
    q = 1 - pe
    z = sps.norm.ppf(0.5 + confidence / 2)
    l2, u2 = q - z * se_q, q + z * se_q
    lower = (d * q - np.sqrt((d * q) ** 2 - l1 * u2 * (2 * d - l1) * (2 * q - u2))) / (
        u2 * (2 * q - u2)
    )
    upper = (d * q + np.sqrt((d * q) ** 2 - u1 * l2 * (2 * d - u1) * (2 * q - l2))) / (
        l2 * (2 * q - l2)
    )
    return 1 - upper, 1 - lower


@pytest.mark.parametrize("weights", [None, "linear"])
def test_kappa_interval_is_mover_by_default(weights):
    a, b, ref, tst = _classes(seed=7)
    res = agreement.cohens_kappa(ref, tst, categories=SKELETAL, weights=weights)
    i = np.arange(3)
    w = np.eye(3) if weights is None else 1 - np.abs(i[:, None] - i[None, :]) / 2
    low, high = _mover_by_hand(a, b, w)
    assert (res["kappa_ci_low"], res["kappa_ci_high"]) == pytest.approx((low, high), rel=1e-9)
    assert res["kappa_ci_low"] < res["kappa"] < res["kappa_ci_high"]
    assert res["kappa_ci_method"].startswith("MOVER")


def test_kappa_interval_when_every_pair_agrees_is_not_a_point():
    """All 12 pairs agree: κ = 1, and the interval still says how low it could be."""
    ref = ["Class I"] * 6 + ["Class II"] * 4 + ["Class III"] * 2
    res = agreement.cohens_kappa(ref, ref, categories=SKELETAL, weights="linear")
    assert res["kappa"] == pytest.approx(1.0) and res["kappa_ci_high"] == 1.0
    assert res["kappa_ci_low"] < 0.8
    normal = agreement.cohens_kappa(ref, ref, categories=SKELETAL, ci="normal")
    assert normal["kappa_ci_low"] == normal["kappa_ci_high"] == 1.0  # what it was before


def test_kappa_clustered_on_units():
    """The same pairs twice per patient: clustering on the patient widens the interval
    back to about that of one pair per patient (the copies add no information)."""
    _, _, ref, tst = _classes(seed=11, n=20)
    one = agreement.cohens_kappa(ref, tst, categories=SKELETAL)
    units = [f"p{i}" for i in range(20)] * 2
    twice = agreement.cohens_kappa(ref * 2, tst * 2, categories=SKELETAL, units=units)
    naive = agreement.cohens_kappa(ref * 2, tst * 2, categories=SKELETAL)
    assert twice["n"] == 40 and twice["n_units"] == 20
    assert twice["kappa"] == pytest.approx(one["kappa"])
    width = lambda r: r["kappa_ci_high"] - r["kappa_ci_low"]  # noqa: E731
    assert width(naive) < width(one) <= width(twice)
    with pytest.raises(InputError, match="one unit per pair"):
        agreement.cohens_kappa(ref, tst, units=units)
    with pytest.raises(InputError, match="ci="):
        agreement.cohens_kappa(ref, tst, ci="bootstrap")


# ------------------------------------------- Bland & Altman 2007: repeated measurements

DATA = Path(__file__).resolve().parents[1] / "data"


def test_repeated_measures_limits_reproduce_bland_altman_2007():
    """§3 of the paper: 60 pairs of 12 subjects (RV − IC): mean difference 0.6021667, SD
    0.99062408, limits −1.3394565 to 2.5437899 (as printed)."""
    t = pd.read_csv(DATA / "ba2007_cardiac.csv", comment="#")
    r = agreement.bland_altman_repeated(t["ic"], t["rv"], t["subject"])
    assert (r["n"], r["n_units"]) == (60, 12)
    assert r["bias"] == pytest.approx(0.6021667, abs=5e-8)
    assert r["sd_total"] == pytest.approx(0.99062408, abs=5e-8)
    assert (r["loa_low"], r["loa_high"]) == pytest.approx((-1.3394565, 2.5437899), abs=5e-7)
    # treating the 60 pairs as 60 subjects understates the SD
    assert np.std(t["rv"] - t["ic"], ddof=1) < r["sd_total"]


def test_repeated_measures_components_equal_a_variance_components_fit():
    """Balanced (3 pairs per subject): the ANOVA components are the REML estimates of a
    random-intercept model of the differences (statsmodels MixedLM)."""
    from statsmodels.regression.mixed_linear_model import MixedLM

    rng = np.random.default_rng(29)
    subjects = np.repeat(np.arange(15), 3)
    d = 0.4 + np.repeat(rng.normal(0, 0.8, 15), 3) + rng.normal(0, 0.5, 45)
    r = agreement.bland_altman_repeated(np.zeros(45), d, subjects)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = MixedLM(d, np.ones((45, 1)), subjects).fit(reml=True)
    assert r["sd_between"] == pytest.approx(np.sqrt(float(np.asarray(fit.cov_re)[0, 0])), rel=1e-4)
    assert r["sd_within"] == pytest.approx(np.sqrt(fit.scale), rel=1e-4)
    assert r["bias"] == pytest.approx(float(np.asarray(fit.fe_params)[0]), rel=1e-8)
    assert r["bias_ci_high"] - r["bias"] == pytest.approx(
        sps.t.ppf(0.975, 14) * float(np.asarray(fit.bse_fe)[0]), rel=1e-4
    )
    with pytest.raises(InputError, match="more pairs than subjects"):
        agreement.bland_altman_repeated([1.0, 2.0], [1.0, 2.5], ["a", "b"])
