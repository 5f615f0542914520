"""stats.compare against published worked examples (answers as printed in the sources)."""

from __future__ import annotations

from math import comb

import pandas as pd
import pytest
from scipy import stats

from dentalkit.stats import compare

# Student (1908) / Cushny & Peebles sleep data, as R's datasets::sleep: extra hours of
# sleep of 10 patients under two drugs.
DRUG_1 = [0.7, -1.6, -0.2, -1.2, -0.1, 3.4, 3.7, 0.8, 0.0, 2.0]
DRUG_2 = [1.9, 0.8, 1.1, 0.1, -0.1, 4.4, 5.5, 1.6, 4.6, 3.4]
SLEEP = pd.DataFrame(
    {"extra": [*DRUG_1, *DRUG_2], "group": [1] * 10 + [2] * 10, "ID": list(range(1, 11)) * 2}
)


def test_welch_t_sleep_as_printed_by_r():
    # R: t.test(extra ~ group, data = sleep)
    # t = -1.8608, df = 17.776, p-value = 0.07939; 95 % CI -3.3654832 0.2054832
    r = compare(SLEEP, "extra", "group", test="welch_t").iloc[0]
    assert r["statistic"] == pytest.approx(-1.8608, abs=5e-5)
    assert r["df"] == pytest.approx(17.776, abs=5e-4)
    assert r["p_value"] == pytest.approx(0.07939, abs=5e-6)
    assert r["difference"] == pytest.approx(0.75 - 2.33)
    assert r["difference_ci_low"] == pytest.approx(-3.3654832, abs=5e-8)
    assert r["difference_ci_high"] == pytest.approx(0.2054832, abs=5e-8)


def test_paired_t_sleep_as_printed_by_r():
    # R: t.test(extra ~ group, data = sleep, paired = TRUE)   (Student 1908's analysis)
    # t = -4.0621, df = 9, p-value = 0.002833; 95 % CI -2.4598858 -0.7001142; mean diff -1.58
    r = compare(SLEEP, "extra", "group", paired="ID", test="paired_t").iloc[0]
    assert r["statistic"] == pytest.approx(-4.0621, abs=5e-5)
    assert r["df"] == 9
    assert r["p_value"] == pytest.approx(0.002833, abs=5e-7)
    assert r["difference"] == pytest.approx(-1.58)
    assert (r["difference_ci_low"], r["difference_ci_high"]) == pytest.approx(
        (-2.4598858, -0.7001142), abs=5e-8
    )
    assert r["n_units"] == 10 and r["unit_of_analysis"] == "row"


def test_kruskal_wallis_hollander_wolfe_as_printed_by_r():
    # Hollander & Wolfe (1973), p. 116, mucociliary efficiency; R: kruskal.test(list(x, y, z))
    # Kruskal-Wallis chi-squared = 0.77143, df = 2, p-value = 0.68
    x = [2.9, 3.0, 2.5, 2.6, 3.2]
    y = [3.8, 2.7, 4.0, 2.4]
    z = [2.8, 3.4, 3.7, 2.2, 2.0]
    t = pd.DataFrame({"v": x + y + z, "g": ["normal"] * 5 + ["airway"] * 4 + ["asbestosis"] * 5})
    r = compare(t, "v", "g", test="kruskal", n_resamples=0).iloc[0]
    assert r["statistic"] == pytest.approx(0.77143, abs=5e-6)
    assert r["df"] == 2
    assert r["p_value"] == pytest.approx(0.68, abs=5e-3)
    assert r["effect_size"] == pytest.approx(0.77143 / 13, abs=1e-6)  # ε² = H/(n − 1)


def test_fisher_lady_tasting_tea():
    # Fisher (1935), The Design of Experiments: 8 cups, 4 with milk first; she names 3 of them.
    # Two-sided p = 34/70; R fisher.test: conditional MLE odds ratio 6.408309,
    # 95 % CI 0.2117329 621.9337505.
    rows = [("milk", True)] * 3 + [("milk", False)] * 1 + [("tea", True)] * 1 + [("tea", False)] * 3
    t = pd.DataFrame(rows, columns=["poured_first", "guessed_milk"])
    r = compare(t, "guessed_milk", "poured_first").iloc[0]
    assert r["test"] == "fisher"  # expected counts of 2 < 5 → exact test
    assert r["p_value"] == pytest.approx(34 / 70)
    assert r["effect_size_name"] == "odds_ratio"

    # The conditional MLE and exact (Cornfield) limits solve equations in Fisher's noncentral
    # hypergeometric distribution of the top-left cell X (margins 4, 4; weights C(4,x)C(4,4-x)ψ^x):
    # E_ψ[X] = 3 at the MLE, P_ψ(X ≥ 3) = 0.025 at the lower and P_ψ(X ≤ 3) = 0.025 at the upper limit.
    def dist(psi):
        w = [comb(4, x) * comb(4, 4 - x) * psi**x for x in range(5)]
        return [v / sum(w) for v in w]

    assert sum(x * p for x, p in enumerate(dist(r["effect_size"]))) == pytest.approx(3.0, abs=1e-9)
    assert sum(dist(r["effect_ci_low"])[3:]) == pytest.approx(0.025, abs=1e-9)
    assert sum(dist(r["effect_ci_high"])[:4]) == pytest.approx(0.025, abs=1e-9)
    # R prints 6.408309 (0.2117329, 621.9337505); its uniroot tolerance (~1e-4 on the 1/ψ scale
    # for the upper limit) leaves the upper limit 0.7 % short of the root.
    assert r["effect_size"] == pytest.approx(6.408309, rel=1e-5)
    assert r["effect_ci_low"] == pytest.approx(0.2117329, rel=1e-4)
    assert r["effect_ci_high"] == pytest.approx(621.9337505, rel=1e-2)
    assert r["difference"] == pytest.approx(3 / 4 - 1 / 4)


# R's datasets::PlantGrowth (Dobson 1983, table 7.1): dried weight of plants, control and
# two treatments, 10 plants each.
PLANT = {
    "ctrl": [4.17, 5.58, 5.18, 6.11, 4.50, 4.61, 5.17, 4.53, 5.33, 5.14],
    "trt1": [4.81, 4.17, 4.41, 3.59, 5.87, 3.83, 6.03, 4.89, 4.32, 4.69],
    "trt2": [6.31, 5.12, 5.54, 5.50, 5.37, 5.29, 4.92, 6.15, 5.80, 5.26],
}


def test_welch_anova_and_omega_squared_plant_growth_as_printed_by_r():
    # R: oneway.test(weight ~ group, data = PlantGrowth)
    #    F = 5.181, num df = 2.000, denom df = 17.128, p-value = 0.01739
    # R: summary(aov(weight ~ group, data = PlantGrowth))
    #    group Sum Sq 3.766, Residuals Sum Sq 10.492 → η² = 3.766 / 14.258 = 0.2641
    t = pd.DataFrame(
        {
            "weight": [w for ws in PLANT.values() for w in ws],
            "group": [g for g in PLANT for _ in range(10)],
        }
    )
    r = compare(t, "weight", "group").iloc[0]
    assert r["test"] == "welch_anova"
    assert r["statistic"] == pytest.approx(5.181, abs=5e-4)
    assert r["df2"] == pytest.approx(17.128, abs=5e-4)
    assert r["p_value"] == pytest.approx(0.01739, abs=5e-6)
    # the effect size is ω² of Welch's F: λ̂ = 2·(5.181 − 1), ω² = λ̂/(λ̂ + 30) = 0.218
    # (not η² = SS_b/SS_t = 0.264 with the classic F's interval, as before issue 29)
    assert r["effect_size_name"] == "omega_squared"
    assert r["effect_size"] == pytest.approx(2 * (5.181 - 1) / (2 * (5.181 - 1) + 30), abs=5e-5)
    # its 90 % interval inverts Welch's F on (2, 17.128) df: P(F' ≥ 5.181 | λ_low) = 0.05
    lam_low = r["effect_ci_low"] * 30 / (1 - r["effect_ci_low"])
    assert stats.ncf.sf(5.181, 2, 17.128, lam_low) == pytest.approx(0.05, abs=5e-4)
    assert 0 < r["effect_ci_low"] < r["effect_size"] < r["effect_ci_high"]  # p = 0.017 < 0.05
    assert r["effect_ci_level"] == pytest.approx(0.90)
