"""stats.simulate_power: simulated power of a planned growth study, checked against the
closed form of Diggle, Heagerty, Liang & Zeger (2002, §2.4) and the exact t-test power
(scipy's noncentral t) — never against itself."""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dentalkit.errors import InputError
from dentalkit.stats import growth, simulate_power

PILOT = {"sd_intercept": 3.0, "sd_slope": 0.4, "correlation": 0.2, "sd_residual": 0.8}
TIMES = np.array([0.0, 1.0, 2.0, 3.0])


def _xi(comp=PILOT, t=TIMES):
    """Variance of one patient's least-squares slope: σ²_slope + σ²_res/Σ(t − t̄)²."""
    return comp["sd_slope"] ** 2 + comp["sd_residual"] ** 2 / ((t - t.mean()) ** 2).sum()


def _exact_t_power(m, effect, alpha=0.05):
    """Power of the two-sample t test of the slopes, m per group (noncentral t)."""
    df = 2 * m - 2
    delta = effect / np.sqrt(2 * _xi() / m)
    crit = stats.t.ppf(1 - alpha / 2, df)
    return stats.nct.sf(crit, df, delta) + stats.nct.cdf(-crit, df, delta)


def test_power_for_given_n_matches_the_closed_forms():
    m, effect, sims = 30, 0.4, 4000
    row = simulate_power(PILOT, effect=effect, n_per_group=m, n_sims=sims).iloc[0]
    exact = _exact_t_power(m, effect)
    se = np.sqrt(exact * (1 - exact) / sims)
    assert row["power"] == pytest.approx(exact, abs=3.5 * se)
    # Diggle et al.: Φ(|δ|/√(2ξ/m) − z) — normal theory, a little above the t test's
    diggle = stats.norm.cdf(effect / np.sqrt(2 * _xi() / m) - stats.norm.ppf(0.975))
    assert row["closed_form_power"] == pytest.approx(diggle, rel=1e-12)
    assert row["power"] == pytest.approx(diggle, abs=0.03)
    assert row["power_ci_low"] < row["power"] < row["power_ci_high"]
    assert row["n_per_group"] == [30, 30] and row["times"] == [0.0, 1.0, 2.0, 3.0]
    assert row["why"].startswith(f"Power {row['power']:.2f}")


def test_n_for_a_given_power_matches_diggles_sample_size():
    target, effect = 0.8, 0.5
    row = simulate_power(PILOT, effect=effect, power=target, n_sims=3000).iloc[0]
    m = row["n_per_group"][0]
    z = stats.norm.ppf(0.975) + stats.norm.ppf(target)
    diggle_n = np.ceil(2 * z**2 * _xi() / effect**2)  # m = 2(z_α/2 + z_β)² ξ / δ²
    assert row["closed_form_n"] == diggle_n
    assert diggle_n <= m <= diggle_n + 2  # the t test needs as many or slightly more
    assert row["power"] >= target
    below = simulate_power(PILOT, effect=effect, n_per_group=m - 1, n_sims=3000).iloc[0]
    assert below["power"] < target  # the smallest such n (same seed: same draws)


def test_components_come_from_a_fitted_pilot():
    rng = np.random.default_rng(5)
    rows = []
    for i in range(30):
        b0, b1 = rng.normal(0, 3), rng.normal(0, 0.4)
        for t in TIMES:
            rows.append((f"p{i}", t, 80 + b0 + (0.2 + b1) * t + rng.normal(0, 0.8), "deg"))
    table = pd.DataFrame(rows, columns=["patient_id", "years", "value", "unit"])
    table["measure"] = "SNB"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = growth(table)
    var = fit.variance.set_index("component")["estimate"]
    row = simulate_power(fit, effect=0.5, n_per_group=(12, 15), n_sims=200).iloc[0]
    assert row["measure"] == "SNB" and row["unit"] == "deg/year"
    assert row["sd_slope"] == pytest.approx(var["patient_id: slope on years"])
    assert row["sd_residual"] == pytest.approx(var["residual"])
    assert row["n_per_group"] == [12, 15] and "12 and 15 patients" in row["why"]
    assert "0.5 deg/year" in row["why"]
    flat = growth(table, random_slope=False)
    note = simulate_power(flat, effect=0.5, n_per_group=12, n_sims=50).iloc[0]["note"]
    assert "random intercept only" in note
    with pytest.raises(InputError, match="no fitted model for measure='ANB'"):
        simulate_power(fit, effect=0.5, n_per_group=10, measure="ANB")


def test_model_analysis_gives_the_slope_test_on_balanced_studies():
    """The default analysis is the growth model's own test for a balanced design: fitting
    stats.growth to each simulated study gives the same decisions (few studies: slow)."""
    slopes = simulate_power(PILOT, effect=0.6, n_per_group=8, n_sims=12, seed=3).iloc[0]
    model = simulate_power(
        PILOT, effect=0.6, n_per_group=8, n_sims=12, seed=3, analysis="model"
    ).iloc[0]
    assert abs(model["power"] - slopes["power"]) <= 1 / 12 + 1e-12


def test_bad_requests_say_what_to_give():
    with pytest.raises(InputError, match="either n_per_group"):
        simulate_power(PILOT, effect=0.5)
    with pytest.raises(InputError, match="either n_per_group"):
        simulate_power(PILOT, effect=0.5, n_per_group=10, power=0.8)
    with pytest.raises(InputError, match="≥ 2 distinct"):
        simulate_power(PILOT, effect=0.5, n_per_group=10, times=[1.0, 1.0])
    with pytest.raises(InputError, match="lack"):
        simulate_power({"sd_slope": 0.3}, effect=0.5, n_per_group=10)
    with pytest.raises(InputError, match="≥ 2 each"):
        simulate_power(PILOT, effect=0.5, n_per_group=1)
