"""Standard errors, confidence intervals, AICc weights, convergence and bad input of arch.fit.

References are independent of dentalkit.arch: ``scipy.optimize.curve_fit``'s ``pcov`` on
independently written residuals, the Monte-Carlo spread of estimates over replicated
noise, the generating parameters, and Akaike weights by the hand formula.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dentalkit import arch

from .helpers import arch_table, beta_canonical, catenary


def _frame(xi, y, p):
    x0, y0, phi = p[-3:]
    c, s = np.cos(phi), np.sin(phi)
    du, dv = xi - x0, y - y0
    return c * du + s * dv, -s * du + c * dv


def _noisy_catenary(seed=13, n=18):
    rng = np.random.default_rng(seed)
    x = np.sort(rng.uniform(-250, 250, n))
    y = catenary(x, 170.0) + 1.5 * rng.standard_normal(n)
    xi = x + 1.5 * rng.standard_normal(n)
    return xi, y


def test_standard_errors_and_cis_equal_curve_fit_pcov():
    from scipy.optimize import curve_fit

    xi, y = _noisy_catenary()
    pts = arch_table(xi, y, theta=-1.2, t=(640, 480), mirror=True)
    got = arch.fit(pts, "catenary").iloc[0]

    def resid(_x, *p):  # first-order orthogonal distance, free vertex and tilt
        u, v = _frame(xi, y, p)
        return (v - catenary(u, p[0])) / np.sqrt(1 + np.sinh(u / p[0]) ** 2)

    popt, pcov = curve_fit(resid, None, np.zeros(len(xi)), p0=[150.0, 0, 0, 0], method="lm")
    assert got["a"] == pytest.approx(popt[0], rel=1e-6)
    se = np.sqrt(pcov[0, 0])
    assert got["a_se"] == pytest.approx(se, rel=1e-4)
    t = stats.t.ppf(0.975, len(xi) - 4)  # df: 18 points − (a, x0, y0, φ)
    assert got["a_ci_lower"] == pytest.approx(popt[0] - t * se, rel=1e-4)
    assert got["a_ci_upper"] == pytest.approx(popt[0] + t * se, rel=1e-4)
    assert got["ci_level"] == 0.95 and got["not_identified"] == []  # every parameter identified
    # another level: the t quantile changes, the SE does not
    g90 = arch.fit(pts, "catenary", level=0.9).iloc[0]
    t90 = stats.t.ppf(0.95, len(xi) - 4)
    assert g90["a_ci_upper"] - g90["a"] == pytest.approx(t90 * got["a_se"], rel=1e-9)


def test_beta_standard_errors_in_depth_and_width_equal_curve_fit_pcov():
    """The beta is fitted as (κ, v); its (D, W) SEs by the delta method equal a direct fit's."""
    from scipy.optimize import curve_fit

    from .test_arch_fit import _exact_beta_distance

    rng = np.random.default_rng(5)
    x = np.sort(rng.uniform(-270, 270, 14))
    y = beta_canonical(x, 260.0, 600.0) + 2.0 * rng.standard_normal(14)
    xi = x + 2.0 * rng.standard_normal(14)
    got = arch.fit(arch_table(xi, y, theta=0.4, t=(500, 500)), "beta").iloc[0]
    assert got["status"] == "ok", got["reason"]

    def resid(_x, *p):
        u, v = _frame(xi, y, p)
        return _exact_beta_distance(u, v, p[0], p[1])

    # start at our optimum: scipy must stay there, and its pcov is the reference
    start = [got["depth"], got["width"], 0.0, 0.0, 0.0]
    fr = arch.fit(arch_table(xi, y), "beta").iloc[0]  # the same fit in the points' own frame
    start[2:] = [fr["tx"], fr["ty"], np.deg2rad(fr["rotation_deg"])]  # close; scipy refines
    popt, pcov = curve_fit(
        resid, None, np.zeros(len(xi)), p0=start, method="trf", x_scale=[100, 100, 1, 1, 0.01],
        xtol=1e-12, ftol=1e-14, diff_step=1e-7,
    )  # fmt: skip
    np.testing.assert_allclose([got["depth"], got["width"]], popt[:2], rtol=1e-5)
    np.testing.assert_allclose(
        [got["depth_se"], got["width_se"]], np.sqrt(np.diag(pcov)[:2]), rtol=2e-3
    )


@pytest.mark.parametrize("model", ["catenary", "poly4"])
def test_standard_errors_match_the_monte_carlo_spread_and_cis_cover(model):
    """400 noisy replicates of one arch: SD of the estimates ≈ median SE; 95 % CIs cover."""
    rng = np.random.default_rng(21 if model == "catenary" else 22)
    x = np.linspace(-24.0, 24.0, 12) + rng.uniform(-1, 1, 12)
    truth = {"catenary": {"a": 12.0}, "poly4": {"c2": 0.03, "c4": 1.2e-5}}[model]
    y = catenary(x, 12.0) if model == "catenary" else 0.03 * x**2 + 1.2e-5 * x**4
    reps = []
    for i in range(400):
        xi = x + 0.25 * rng.standard_normal(12)
        yi = y + 0.25 * rng.standard_normal(12)
        reps.append(arch_table(xi, yi, theta=rng.uniform(-3, 3), t=(50, 50), patient=f"r{i}"))
    f = arch.fit(pd.concat(reps, ignore_index=True), model)
    assert (f["status"] == "ok").all()
    for p, true in truth.items():
        est, se = f[p].to_numpy(), f[f"{p}_se"].to_numpy()
        # the SD of 400 estimates has a relative SE of ~1/√800 = 3.5 %: allow 15 %
        assert np.median(se) == pytest.approx(est.std(ddof=1), rel=0.15), p
        cover = ((f[f"{p}_ci_lower"] <= true) & (true <= f[f"{p}_ci_upper"])).mean()
        # binomial SD of a 95 % coverage over 400: 1.1 %
        assert 0.91 <= cover <= 0.99, (p, cover)


def test_aicc_and_akaike_weights_by_hand():
    xi, y = _noisy_catenary(seed=3, n=14)
    f = arch.fit(arch_table(xi, y), "all")
    scored = f[f["status"].isin(["ok", "boundary"])]
    assert len(scored) == 5
    n = 14
    for _, row in scored.iterrows():
        k = row["n_params"]
        aic = n * np.log(row["rss"] / n) + n * (np.log(2 * np.pi) + 1) + 2 * k
        assert row["aicc"] == pytest.approx(aic + 2 * k * (k + 1) / (n - k - 1), rel=1e-12)
    aicc = scored["aicc"].to_numpy()
    w = np.exp(-(aicc - aicc.min()) / 2)
    np.testing.assert_allclose(scored["aicc_weight"], w / w.sum(), rtol=1e-12)
    np.testing.assert_allclose(scored["delta_aicc"], aicc - aicc.min(), atol=1e-12)
    assert f["aicc_weight"].sum() == pytest.approx(1.0)


def test_weights_are_per_arch_and_skip_failed_fits():
    x = np.linspace(-100, 100, 11)
    a = arch_table(x, 0.01 * x**2 + np.sin(x), patient="a")
    few = arch_table(x[:5], 0.01 * x[:5] ** 2, patient="few")  # too few for 2-shape models
    f = arch.fit(pd.concat([a, few], ignore_index=True), "all")
    sums = f.groupby("patient_id")["aicc_weight"].sum()
    assert sums["a"] == pytest.approx(1.0)
    # 5 points: no model leaves a degree of freedom for AICc (n − k − 1 > 0 fails)
    assert f.loc[f["patient_id"] == "few", "aicc_weight"].isna().all()


def test_the_parabola_limit_is_a_reported_boundary_and_vague_widths_are_flagged():
    rng = np.random.default_rng(8)
    out = []
    for i in range(30):
        x = np.sort(rng.uniform(-25, 25, 12))
        y = 0.045 * x**2
        out.append(
            arch_table(
                x + 0.25 * rng.standard_normal(12),
                y + 0.25 * rng.standard_normal(12),
                theta=rng.uniform(-3, 3),
                patient=f"p{i}",
            )
        )
    f = arch.fit(pd.concat(out, ignore_index=True), "beta")
    st = f["status"].astype(str)
    # every fit converges: to a finite beta curve or to the parabola limit
    assert st.isin(["ok", "boundary"]).all(), f.loc[~st.isin(["ok", "boundary"]), "reason"]
    edge = f[st == "boundary"]
    assert np.isinf(edge["width"]).all() and edge["aicc"].notna().all()
    assert edge["reason"].str.contains("parabola limit").all()
    assert edge["not_identified"].isna().all()  # no SEs at the limit: not assessed
    # a parabola has no finite width: a fit either reports the limit or, where noise
    # leaves it a finite W, mostly flags W as not identified (26 of 30 here; in the other
    # 4 the noise bends the points enough that a finite W looks determined — the flag
    # reports the data, it does not know the truth)
    flagged = f["not_identified"].map(lambda v: v is not None and "width" in v) & (st == "ok")
    assert (st == "boundary").mean() >= 0.5
    assert ((st == "boundary") | flagged).mean() >= 0.8


def test_bad_input_gives_rows_with_reasons_never_solver_errors():
    x = np.linspace(-100, 100, 11)
    good = arch_table(x, 0.01 * x**2, patient="good")
    dup = arch_table(np.repeat(x[:4], 3), np.repeat(0.01 * x[:4] ** 2, 3), patient="dup")
    same = arch_table(np.zeros(9), np.zeros(9), patient="same")
    line = arch_table(x, 0.5 * x, patient="line")
    nonfinite = arch_table(x, 0.01 * x**2, patient="nan")
    nonfinite.loc[3, "x"] = np.inf
    few = arch_table(x[:4], 0.01 * x[:4] ** 2, patient="few")
    pts = pd.concat([good, dup, same, line, nonfinite, few], ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # no RuntimeWarning from deep inside either
        f = arch.fit(pts, "all", errors="collect")
    by = f.set_index(["patient_id", "model"])["status"].astype(str).unstack()
    assert (by.loc["dup"] == "too_few_points").all()  # 12 rows, 4 distinct points
    reason = f.loc[(f["patient_id"] == "dup") & (f["model"] == "catenary"), "reason"].iloc[0]
    assert "only 4 distinct" in reason
    assert (by.loc["same"] == "degenerate").all()
    assert (by.loc["line"] == "degenerate").all()
    assert (by.loc["nan"] == "bad_input").all()
    assert (by.loc["few"] == "too_few_points").all()
    assert f.loc[f["status"] != "ok", "reason"].notna().all()


def test_bad_point_rows_are_also_rows_of_the_one_problems_table():
    from dentalkit.errors import PROBLEM_COLUMNS, InputError

    x = np.linspace(-100, 100, 11)
    good = arch_table(x, 0.01 * x**2, patient="good")
    nonfinite = arch_table(x, 0.01 * x**2, patient="nan", arch="lo")
    nonfinite.loc[3, "y"] = np.nan
    dup = arch_table(x, 0.01 * x**2, patient="dup")
    dup.loc[5, "index"] = dup.loc[4, "index"]
    pts = pd.concat([good, nonfinite, dup], ignore_index=True)
    pts.index = [f"r{i}" for i in range(len(pts))]  # labels differ from positions
    f = arch.fit(pts, "parabola", errors="collect")
    # the fit table is as before: one status row per arch × model
    by = f.set_index("patient_id")["status"].astype(str)
    assert by.to_dict() == {"dup": "bad_input", "good": "ok", "nan": "bad_input"}
    prob = arch.problems(f)
    assert tuple(prob.columns) == (*PROBLEM_COLUMNS, "arch", "index_label")
    # one row per offending input row, at its 0-based position (counted by hand above);
    # of two rows with one point number the repeat is the offending one, as in the error
    assert prob["row"].tolist() == [11 + 3, 22 + 5]
    assert prob["index_label"].tolist() == ["r14", "r27"]
    assert prob["patient_id"].tolist() == ["nan", "dup"]
    assert prob["arch"].tolist() == ["lo", "up"]
    assert prob["field"].tolist() == ["y", "index"]
    assert prob["value"].tolist() == ["nan", "24"]
    assert (prob["table"] == "arch_points").all() and (prob["severity"] == "error").all()
    assert prob["reason"].str.contains("bad_input").all()
    # no problem: an empty table of the same shape; a table not from fit: a named error
    assert len(arch.problems(arch.fit(good, "parabola", errors="collect"))) == 0
    with pytest.raises(InputError, match=r"arch\.fit"):
        arch.problems(pd.DataFrame({"x": [1]}))
