"""summarize() and calibration() checked against published numbers and direct computations."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from dentalkit.errors import DentalkitWarning, InputError
from dentalkit.tle import calibration, summarize

# Bland & Altman (1986, Lancet 1:307-310), Table 1: first PEFR readings (l/min) of 17
# subjects with the Wright and the mini Wright peak flow meter.
WRIGHT = np.array(
    [494, 395, 516, 434, 476, 557, 413, 442, 650, 433, 417, 656, 267, 478, 178, 423, 427.0]
)
MINI = np.array(
    [512, 430, 520, 428, 500, 600, 364, 380, 658, 445, 432, 626, 260, 477, 259, 350, 451.0]
)


def stat(table: pd.DataFrame, name: str) -> pd.Series:
    return table.set_index("statistic").loc[name]


# --- calibration: the published worked example -----------------------------------------
def test_bland_altman_1986_worked_example():
    # Published (rounded) values: mean difference -2.1, SD 38.8, limits d ± 2s =
    # -79.7 and 75.5; 95% CI of the bias -22.1 to 17.9; SE of a limit √(3s²/n) = 16.3,
    # CIs -114.3 to -45.1 and 40.9 to 110.1 (t16 = 2.12). The paper computed the CIs from
    # rounded intermediate values, hence the 0.2 tolerance on them.
    cal = calibration(WRIGHT, MINI, loa_z=2, loa_ci="bland-altman-1986")
    assert stat(cal, "bias")["estimate"] == pytest.approx(-2.1, abs=0.05)
    assert stat(cal, "sd_difference")["estimate"] == pytest.approx(38.8, abs=0.05)
    assert stat(cal, "loa_lower")["estimate"] == pytest.approx(-79.7, abs=0.1)
    assert stat(cal, "loa_upper")["estimate"] == pytest.approx(75.5, abs=0.1)
    bias = stat(cal, "bias")
    assert (bias["ci_low"], bias["ci_high"]) == pytest.approx((-22.1, 17.9), abs=0.2)
    lower, upper = stat(cal, "loa_lower"), stat(cal, "loa_upper")
    assert (lower["ci_low"], lower["ci_high"]) == pytest.approx((-114.3, -45.1), abs=0.2)
    assert (upper["ci_low"], upper["ci_high"]) == pytest.approx((40.9, 110.1), abs=0.2)
    # the half-width is exactly t16 × √(3 s²/n)
    s = np.std(WRIGHT - MINI, ddof=1)
    half = sps.t.ppf(0.975, 16) * np.sqrt(3 * s**2 / 17)
    assert upper["ci_high"] - upper["estimate"] == pytest.approx(half, rel=1e-12)


def test_bland_altman_1999_limits_and_ci_formula():
    cal = calibration(WRIGHT, MINI)  # defaults: z = 1.96, 1999 CI
    d = WRIGHT - MINI
    n, mean, s = d.size, d.mean(), d.std(ddof=1)
    se = np.sqrt((1 / n + 1.96**2 / (2 * (n - 1))) * s**2)
    t = sps.t.ppf(0.975, n - 1)
    lower, upper = stat(cal, "loa_lower"), stat(cal, "loa_upper")
    assert lower["estimate"] == pytest.approx(mean - 1.96 * s)
    assert upper["estimate"] == pytest.approx(mean + 1.96 * s)
    assert (lower["ci_low"], lower["ci_high"]) == pytest.approx(
        (mean - 1.96 * s - t * se, mean - 1.96 * s + t * se)
    )
    assert (upper["ci_low"], upper["ci_high"]) == pytest.approx(
        (mean + 1.96 * s - t * se, mean + 1.96 * s + t * se)
    )
    assert cal.attrs["difference"].startswith("predicted − observed")


def test_direct_numpy_scipy_statsmodels_on_the_same_numbers():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(7)
    observed = rng.normal(23, 5, 60).clip(8, 40)
    predicted = 4 + 0.8 * observed + rng.normal(0, 2.5, 60)
    cal = calibration(pd.DataFrame({"estimate_length_months": predicted}), observed)
    d = predicted - observed
    assert stat(cal, "n_pairs")["estimate"] == 60
    assert stat(cal, "mean_predicted")["estimate"] == pytest.approx(predicted.mean())
    assert stat(cal, "mean_observed")["estimate"] == pytest.approx(observed.mean())
    assert stat(cal, "mae")["estimate"] == pytest.approx(np.mean(np.abs(d)))
    assert stat(cal, "rmse")["estimate"] == pytest.approx(np.sqrt(np.mean(d**2)))
    bias = stat(cal, "bias")
    ci = sps.ttest_1samp(d, 0).confidence_interval(0.95)
    assert (bias["estimate"], bias["ci_low"], bias["ci_high"]) == pytest.approx(
        (d.mean(), ci.low, ci.high)
    )
    ols = sm.OLS(observed, sm.add_constant(predicted)).fit()
    (int_lo, int_hi), (sl_lo, sl_hi) = ols.conf_int(0.05)
    slope, intercept = stat(cal, "calibration_slope"), stat(cal, "calibration_intercept")
    assert (slope["estimate"], slope["ci_low"], slope["ci_high"]) == pytest.approx(
        (ols.params[1], sl_lo, sl_hi)
    )
    assert (intercept["estimate"], intercept["ci_low"], intercept["ci_high"]) == pytest.approx(
        (ols.params[0], int_lo, int_hi)
    )
    r = stat(cal, "pearson_r")
    z = np.arctanh(np.corrcoef(predicted, observed)[0, 1])
    half = sps.norm.ppf(0.975) / np.sqrt(60 - 3)
    assert (r["estimate"], r["ci_low"], r["ci_high"]) == pytest.approx(
        (np.tanh(z), np.tanh(z - half), np.tanh(z + half))
    )
    # Lin's CCC two ways: the definition, and precision × accuracy (r · C_b, Lin 1989)
    ccc = stat(cal, "ccc")["estimate"]
    cov = np.cov(predicted, observed, ddof=0)[0, 1]
    direct = (
        2 * cov / (predicted.var() + observed.var() + (predicted.mean() - observed.mean()) ** 2)
    )
    v = predicted.std() / observed.std()
    u = (predicted.mean() - observed.mean()) / np.sqrt(predicted.std() * observed.std())
    c_b = 2 / (v + 1 / v + u**2)
    assert ccc == pytest.approx(direct) and ccc == pytest.approx(np.tanh(z) * c_b)


def test_exact_limit_ci_has_nominal_coverage():
    # Differences ~ N(1, 2²): true upper 95 % limit = 1 + 1.96·2. Exact (Carkeet 2015) CIs
    # cover it ≈95 % of the time: checked by simulation, independent of the formula.
    from dentalkit.tle.stats import _loa_ci

    rng = np.random.default_rng(3)
    n, trials = 25, 4000
    d = rng.normal(1, 2, (trials, n))
    bias, sd = d.mean(axis=1), d.std(axis=1, ddof=1)
    (lo_low, lo_high), (up_low, up_high) = _loa_ci(bias, sd, n, 1.96, 0.95, "exact")
    upper_cover = np.mean((up_low <= 1 + 3.92) & (up_high >= 1 + 3.92))
    lower_cover = np.mean((lo_low <= 1 - 3.92) & (lo_high >= 1 - 3.92))
    assert 0.935 <= upper_cover <= 0.965 and 0.935 <= lower_cover <= 0.965
    # the public function uses the same interval
    observed = rng.normal(22, 4, n)
    up = stat(calibration(observed + d[0], observed, loa_ci="exact"), "loa_upper")
    assert (up["ci_low"], up["ci_high"]) == pytest.approx((up_low[0], up_high[0]))


def test_ccc_ci_has_roughly_nominal_coverage():
    # bivariate normal with known CCC: x ~ N(20, 4²), y = 0.9x + 3 + N(0, 2²)
    from dentalkit.tle.stats import _lin_ccc

    sx, noise = 4.0, 2.0
    var_y = 0.81 * sx**2 + noise**2
    mean_x, mean_y = 20.0, 0.9 * 20 + 3
    truth = 2 * 0.9 * sx**2 / (sx**2 + var_y + (mean_x - mean_y) ** 2)
    rng = np.random.default_rng(4)
    n, trials, hits = 40, 1500, 0
    for _ in range(trials):
        x = rng.normal(mean_x, sx, n)
        y = 0.9 * x + 3 + rng.normal(0, noise, n)
        _, (low, high) = _lin_ccc(x, y, np.corrcoef(x, y)[0, 1], 0.95)
        hits += low <= truth <= high
    assert 0.92 <= hits / trials <= 0.97


def test_missing_pairs_are_excluded_and_counted():
    pred = np.array([20.0, np.nan, 25, 30, 18, 22])
    obs = np.array([21.0, 24, np.nan, 28, 18, 25])
    cal = calibration(pred, obs)
    assert stat(cal, "n_pairs")["estimate"] == 4
    assert stat(cal, "n_excluded")["estimate"] == 2
    keep = ~(np.isnan(pred) | np.isnan(obs))
    assert stat(cal, "bias")["estimate"] == pytest.approx(np.mean(pred[keep] - obs[keep]))


def test_series_is_aligned_by_label_and_column_names_work():
    table = pd.DataFrame(
        {"estimate_length_months": [20.0, 25, 30, 18], "obs": [21.0, 24, 28, 18]},
        index=["a", "b", "c", "d"],
    )
    shuffled = table["obs"].iloc[[2, 0, 3, 1]]
    by_label = calibration(table, shuffled)
    by_column = calibration(table, "obs")
    pd.testing.assert_frame_equal(by_label, by_column)
    with pytest.raises(InputError, match="index labels differ"):
        calibration(table, table["obs"].set_axis(["a", "b", "c", "x"]))
    with pytest.raises(InputError, match="one observed duration per estimate"):
        calibration(table, [1.0, 2.0])
    with pytest.raises(InputError, match="predicted column 'pred'"):
        calibration(table, "obs", predicted="pred")


def test_bad_inputs():
    with pytest.raises(InputError, match="at least 3 complete"):
        calibration([1.0, 2.0], [1.0, 2.0])
    with pytest.raises(InputError, match="non-numeric"):
        calibration([1.0, 2.0, 3.0], ["a", 2.0, 3.0])
    with pytest.raises(InputError, match="infinite"):
        calibration([1.0, np.inf, 3.0], [1.0, 2.0, 3.0])
    with pytest.raises(InputError, match="loa_ci must be"):
        calibration([1.0, 2.0, 3.0], [1.0, 2.0, 3.0], loa_ci="1986")


def test_constant_predictions_warn_and_leave_association_undefined():
    with pytest.warns(DentalkitWarning, match="all predicted values are equal"):
        cal = calibration([22.0] * 5, [20.0, 21, 25, 23, 30])
    assert stat(cal, "calibration_slope")[["estimate", "ci_low"]].isna().all()
    assert np.isnan(stat(cal, "ccc")["estimate"])
    assert stat(cal, "bias")["estimate"] == pytest.approx(22 - np.mean([20.0, 21, 25, 23, 30]))


def test_perfect_agreement():
    x = np.array([14.0, 18, 22, 30])
    cal = calibration(x, x)
    assert stat(cal, "ccc")[["estimate", "ci_low", "ci_high"]].tolist() == [1.0, 1.0, 1.0]
    assert stat(cal, "bias")["estimate"] == 0 and stat(cal, "mae")["estimate"] == 0


# --- summary ---------------------------------------------------------------------------
def test_summary_against_numpy_and_scipy_bootstrap():
    rng = np.random.default_rng(1)
    values = rng.normal(23, 4, 40)
    values[[3, 9]] = np.nan
    table = pd.DataFrame({"estimate_length_months": values})
    row = summarize(table, n_resamples=2000, seed=5).iloc[0]
    ok = values[~np.isnan(values)]
    assert (row["n"], row["n_missing"]) == (38, 2)
    assert row["mean"] == pytest.approx(ok.mean())
    assert row["sd"] == pytest.approx(np.std(ok, ddof=1))
    assert row["median"] == pytest.approx(np.median(ok))
    q1, q3 = np.percentile(ok, [25, 75])
    assert (row["q1"], row["q3"], row["iqr"]) == pytest.approx((q1, q3, q3 - q1))
    assert (row["min"], row["max"]) == (ok.min(), ok.max())
    ref = sps.bootstrap((ok,), np.mean, n_resamples=2000, rng=np.random.default_rng(5))
    assert (row["ci_low"], row["ci_high"]) == pytest.approx(tuple(ref.confidence_interval))
    # and the BCa interval is close to the t interval for normal data
    t_ci = sps.ttest_1samp(ok, 0).confidence_interval()
    assert row["ci_low"] == pytest.approx(t_ci.low, abs=0.4)
    assert "BCa" in summarize(table, n_resamples=100).attrs["ci"]


def test_summary_hand_computed_and_percentile_method():
    table = pd.DataFrame({"estimate_length_months": [20.0, 22.0, 24.0, 30.0]})
    row = summarize(table, method="percentile", n_resamples=500).iloc[0]
    # type-7 quartiles by hand: q1 = 20 + 0.75·2 = 21.5, q3 = 24 + 0.25·6 = 25.5
    assert (row["mean"], row["median"], row["q1"], row["q3"]) == (24.0, 23.0, 21.5, 25.5)
    assert row["sd"] == pytest.approx(np.sqrt((16 + 4 + 0 + 36) / 3))
    assert 20 <= row["ci_low"] < 24 < row["ci_high"] <= 30


def test_summary_by_groups_equals_summary_of_each_subset():
    rng = np.random.default_rng(2)
    table = pd.DataFrame(
        {
            "estimate_length_months": rng.normal(22, 5, 30),
            "sex": pd.Categorical(
                rng.choice(["female", "male"], 30), categories=["female", "male", "x"]
            ),
            "extraction": rng.choice([True, False], 30),
        }
    )
    out = summarize(table, by=["sex", "extraction"], n_resamples=300)
    assert out["sex"].dtype == "category" and "x" not in set(out["sex"])
    assert len(out) == 4
    for _, row in out.iterrows():
        subset = table[(table["sex"] == row["sex"]) & (table["extraction"] == row["extraction"])]
        alone = summarize(subset, n_resamples=300).iloc[0]
        for col in ("n", "mean", "sd", "median", "ci_low", "ci_high"):
            assert row[col] == pytest.approx(alone[col]), col


def test_summary_small_and_constant_groups():
    table = pd.DataFrame(
        {"g": ["a", "b", "b", "b", "c"], "estimate_length_months": [20.0, 18, 18, 18, np.nan]}
    )
    out = summarize(table, by="g").set_index("g")
    assert np.isnan(out.loc["a", "sd"]) and np.isnan(out.loc["a", "ci_low"])
    assert out.loc["a", "mean"] == 20
    assert (out.loc["b", "ci_low"], out.loc["b", "ci_high"], out.loc["b", "sd"]) == (18, 18, 0)
    assert (out.loc["c", "n"], out.loc["c", "n_missing"]) == (0, 1)
    assert np.isnan(out.loc["c", "mean"])


def test_summary_bad_inputs():
    table = pd.DataFrame({"estimate_length_months": [1.0, 2.0], "months_text": ["a", "2"]})
    with pytest.raises(InputError, match=r"lacks column\(s\) \['grp'\]"):
        summarize(table, by="grp")
    with pytest.raises(InputError, match="non-numeric values"):
        summarize(table, value="months_text")
    with pytest.raises(InputError, match="confidence_level"):
        summarize(table, confidence_level=95)
    with pytest.raises(InputError, match="must be a DataFrame"):
        summarize([1.0, 2.0])
