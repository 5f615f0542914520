"""Arch-form fits: recovery of generating parameters, model choice, independent checks, problems."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dentalkit import arch
from dentalkit.arch import MODELS
from dentalkit.errors import InputError

from .helpers import CURVES, TRUTH, arch_table, beta_braun, catenary, random_arches


def _angle_diff(a_deg, b_deg):
    return (np.asarray(a_deg) - np.asarray(b_deg) + 180.0) % 360.0 - 180.0


@pytest.mark.parametrize("model", list(MODELS))
def test_exact_points_give_the_generating_parameters_back(model):
    rng = np.random.default_rng(7)
    pts, poses = random_arches(model, TRUTH[model], 12, rng)  # uneven spacing, random poses
    fits = arch.fit(pts, model)
    assert (fits["status"] == "ok").all(), fits[["status", "reason"]]
    for name, value in TRUTH[model].items():
        np.testing.assert_allclose(fits[name], value, rtol=1e-6)
    # the model frame is the placement: vertex at t, rotation as placed
    f = fits.merge(poses, on="patient_id")
    np.testing.assert_allclose(f["tx_x"], f["tx_y"], atol=1e-6 * 800)
    np.testing.assert_allclose(f["ty_x"], f["ty_y"], atol=1e-6 * 800)
    expected_rot = np.where(f["mirror"], np.degrees(f["theta"]), -np.degrees(f["theta"]))
    assert np.abs(_angle_diff(f["rotation_deg"], expected_rot)).max() < 1e-6
    assert (f["reflected"].astype(bool) == f["mirror"]).all()
    # no residual left
    assert (fits["rmse"] < 1e-6).all()


@pytest.mark.parametrize("model", list(MODELS))
def test_fixed_pose_recovers_symmetrically_sampled_arches(model):
    rng = np.random.default_rng(8)
    pts, _ = random_arches(model, TRUTH[model], 6, rng, symmetric=True, n_points=14)
    fits = arch.fit(pts, model, pose="fixed")
    assert (fits["status"] == "ok").all()
    for name, value in TRUTH[model].items():
        np.testing.assert_allclose(fits[name], value, rtol=1e-6)
    assert (fits["n_params"] == MODELS[model].k + 2).all()  # shape + y0 + sigma²


@pytest.mark.parametrize("model", list(MODELS))
def test_noisy_points_give_parameters_close_to_the_truth(model):
    rng = np.random.default_rng(9)
    pts, _ = random_arches(model, TRUTH[model], 60, rng, noise=1.0, n_points=18)
    fits = arch.fit(pts, model)
    ok = fits[fits["status"] == "ok"]
    assert len(ok) >= 55
    for name, value in TRUTH[model].items():
        est = ok[name].to_numpy()
        # unbiased to within 4 standard errors of the cohort mean, and individually close
        se = est.std(ddof=1) / np.sqrt(len(est))
        assert abs(est.mean() - value) < 4 * se + 1e-3 * abs(value), (name, est.mean(), value, se)
        assert np.median(np.abs(est / value - 1)) < 0.2
    # residual scale ≈ the noise added (σ = 1 px per coordinate; vertical residuals)
    assert 0.7 < np.median(ok["rmse"]) < 1.3


@pytest.mark.parametrize("model", list(MODELS))
def test_the_generating_model_wins_on_aic(model):
    rng = np.random.default_rng(10)
    pts, _ = random_arches(model, TRUTH[model], 30, rng, noise=0.1, n_points=20)
    fits = arch.fit(pts, "all", max_iter=100)
    ok = fits[fits["status"] == "ok"]
    best = ok.loc[ok.groupby("patient_id", observed=True)["aic"].idxmin(), "model"].astype(str)
    share = (best == model).mean()
    if model == "parabola":
        # the parabola is nested in poly4 (c4 = 0) and poly6 (c6 = 0): against one
        # nested rival AIC keeps the true, smaller model with P(χ²₁ < 2) ≈ 0.84, so
        # against two it wins roughly 3 times in 4, and more often than any rival
        assert share >= 0.6, best.value_counts()
        assert best.value_counts().idxmax() == "parabola", best.value_counts()
    else:
        assert share >= 0.8, best.value_counts()


def test_one_batched_call_equals_fitting_each_arch_alone():
    rng = np.random.default_rng(11)
    pts, _ = random_arches("catenary", TRUTH["catenary"], 3, rng, noise=1.0)
    together = arch.fit(pts, "all").set_index(["patient_id", "model"])
    for _, one in pts.groupby("patient_id"):
        alone = arch.fit(one, "all").set_index(["patient_id", "model"])
        for col in ("a", "depth", "width", "c2", "c4", "c6", "rss", "tx", "ty", "rotation_deg"):
            np.testing.assert_allclose(
                alone[col].to_numpy(float),
                together.loc[alone.index, col].to_numpy(float),
                rtol=1e-9,
                atol=1e-9,
            )


def test_linear_fits_match_statsmodels_ols_and_its_likelihood():
    sm = pytest.importorskip("statsmodels.api")
    rng = np.random.default_rng(12)
    x = np.linspace(-200, 200, 17)  # symmetric: the align frame is exact
    y = 0.003 * x**2 + 4e-8 * x**4
    pts = arch_table(x, y, theta=0.5, t=(300, 300))
    # noise along the canonical y direction only, so that the frame stays exact
    c, s = np.cos(0.5), np.sin(0.5)
    e = 0.8 * rng.standard_normal(len(x))
    e = (e + e[::-1]) / 2  # symmetric noise keeps the arch symmetric
    pts["x"] += -s * e
    pts["y"] += c * e
    fits = arch.fit(pts, ["parabola", "poly4", "poly6"], pose="fixed", residual="vertical")
    fits = fits.set_index("model")
    yy = y + e
    for model, cols, powers in (
        ("parabola", ["c2"], [2]),
        ("poly4", ["c2", "c4"], [2, 4]),
        ("poly6", ["c2", "c6"], [2, 6]),
    ):
        # OLS on x/200 (well conditioned), coefficients scaled back by hand
        X = np.column_stack([np.ones_like(x), *((x / 200) ** p for p in powers)])
        ols = sm.OLS(yy - yy[len(x) // 2], X).fit()
        coef = ols.params[1:] / 200.0 ** np.array(powers)
        np.testing.assert_allclose(fits.loc[model, cols].to_numpy(float), coef, rtol=1e-8)
        assert fits.loc[model, "rss"] == pytest.approx(ols.ssr, rel=1e-8)
        # our AIC counts sigma² as a parameter; statsmodels' does not
        k = fits.loc[model, "n_params"]
        assert k == len(powers) + 2
        assert fits.loc[model, "aic"] - 2 * k == pytest.approx(-2 * ols.llf, rel=1e-9)
        assert fits.loc[model, "bic"] == pytest.approx(-2 * ols.llf + k * np.log(len(x)), rel=1e-9)


def _exact_beta_distance(u, v, D, W):
    """Distance from points (u, v) to the beta curve, by grid search + bounded Brent (scipy)."""
    from scipy.optimize import minimize_scalar

    th = np.linspace(-np.pi / 2, np.pi / 2, 2001)
    cx, cy = W / 2 * np.sin(th), D * (1 - np.cos(th) ** 1.6)
    out = np.empty(len(u))
    for i, (a, b) in enumerate(zip(u, v, strict=True)):
        j = int(np.argmin((cx - a) ** 2 + (cy - b) ** 2))
        lo, hi = th[max(j - 1, 0)], th[min(j + 1, len(th) - 1)]
        res = minimize_scalar(
            lambda t, a=a, b=b: (
                (W / 2 * np.sin(t) - a) ** 2 + (D * (1 - np.cos(t) ** 1.6) - b) ** 2
            ),
            bounds=(lo, hi),
            method="bounded",
            options={"xatol": 1e-13},
        )
        out[i] = np.sqrt(min(res.fun, (cx[j] - a) ** 2 + (cy[j] - b) ** 2))
    return out


def test_nonlinear_fits_match_scipy_least_squares():
    from scipy.optimize import least_squares

    rng = np.random.default_rng(13)
    x = np.sort(rng.uniform(-250, 250, 18))
    y = catenary(x, 170.0) + 1.5 * rng.standard_normal(18)
    xi = x + 1.5 * rng.standard_normal(18)
    pts = arch_table(xi, y, theta=-1.2, t=(640, 480), mirror=True)
    fits = arch.fit(pts, ["catenary", "beta"]).set_index("model")

    # independent models of the curve with free vertex (x0, y0) and tilt φ, fitted to
    # the points in the frame they were generated in (the least-squares problem is
    # invariant to the placement); Jacobians by scipy
    def frame(p):
        x0, y0, phi = p[-3:]
        c, s = np.cos(phi), np.sin(phi)
        du, dv = xi - x0, y - y0
        return c * du + s * dv, -s * du + c * dv

    def cat_resid(p):  # first-order orthogonal distance (the smooth models)
        u, v = frame(p)
        return (v - catenary(u, p[0])) / np.sqrt(1 + np.sinh(u / p[0]) ** 2)

    def beta_resid(p):  # exact distance (the beta function)
        u, v = frame(p)
        return _exact_beta_distance(u, v, p[0], p[1])

    ref = least_squares(
        cat_resid, [150.0, 0, 0, 0], method="lm", xtol=1e-15, ftol=1e-15, gtol=1e-15
    )
    got = fits.loc["catenary"]
    assert got["status"] == "ok"
    assert got["a"] == pytest.approx(ref.x[0], rel=1e-6)
    assert got["rss"] == pytest.approx(2 * ref.cost, rel=1e-9)

    got = fits.loc["beta"]
    assert got["status"] == "ok", got["reason"]
    # start scipy near our solution: it must find nothing better, and the same point
    start = [got["depth"] * 1.01, got["width"] * 0.99, 0.3, -0.2, 0.002]
    ref = least_squares(beta_resid, start, x_scale=[100, 100, 1, 1, 0.01], xtol=1e-12, ftol=1e-14)
    assert 2 * ref.cost >= got["rss"] * (1 - 1e-9)
    np.testing.assert_allclose([got["depth"], got["width"]], ref.x[:2], rtol=1e-5)
    assert got["rss"] == pytest.approx(2 * ref.cost, rel=1e-7)


def test_residual_jacobians_match_finite_differences():
    from dentalkit.arch._engine import _Problem

    rng = np.random.default_rng(15)
    U = np.sort(rng.uniform(-1.2, 1.2, (3, 12)), axis=1)
    V = 0.5 * U**2 + 0.05 * rng.standard_normal((3, 12))
    prob = _Problem(U, V, np.ones((3, 12), bool), np.ones(3))
    starts = {
        "catenary": [1.1],
        "beta": [0.9, 3.1],
        "poly4": [0.4, 0.05],
        "poly6": [0.45, 0.01],
        "parabola": [0.5],
    }
    rows = np.arange(3)
    for name, shape in starts.items():
        for pose, extra in (("fit", [0.02, -0.03, 0.05]), ("fixed", [0.02])):
            for residual in ("orthogonal", "vertical"):
                fn = prob.residuals(MODELS[name], pose, residual)
                P = np.tile(shape + extra, (3, 1))
                _, J = fn(P, rows)
                for j in range(P.shape[1]):
                    h = 1e-6 * max(1.0, abs(P[0, j]))
                    Pp, Pm = P.copy(), P.copy()
                    Pp[:, j] += h
                    Pm[:, j] -= h
                    fd = (fn(Pp, rows)[0] - fn(Pm, rows)[0]) / (2 * h)
                    np.testing.assert_allclose(
                        J[j], fd, rtol=1e-5, atol=1e-7, err_msg=f"{name} {pose} {residual} p{j}"
                    )


def test_information_criteria_by_hand():
    x = np.linspace(-100, 100, 9)
    y = 0.01 * x**2
    y[[1, 7]] += 2.0  # symmetric bumps: rss by hand after the fit
    pts = arch_table(x, y)
    f = arch.fit(pts, "parabola", pose="fixed", residual="vertical").iloc[0]
    n, k, rss = 9, 3, f["rss"]
    aic = n * np.log(rss / n) + n * (np.log(2 * np.pi) + 1) + 2 * k
    assert f["aic"] == pytest.approx(aic, rel=1e-12)
    assert f["bic"] == pytest.approx(aic - 2 * k + k * np.log(n), rel=1e-12)
    assert f["aicc"] == pytest.approx(aic + 2 * k * (k + 1) / (n - k - 1), rel=1e-12)
    assert f["rmse"] == pytest.approx(np.sqrt(rss / n), rel=1e-12)
    # rss by hand: least squares of y - y0 = c2 x² with the bumps
    X = np.column_stack([np.ones(9), x**2])
    _, res, *_ = np.linalg.lstsq(X, y, rcond=None)
    assert rss == pytest.approx(res[0], rel=1e-9)


def test_mm_per_px_scales_parameters_by_their_length_powers():
    rng = np.random.default_rng(14)
    pts, _ = random_arches("poly4", TRUTH["poly4"], 3, rng, noise=0.5)
    px = arch.fit(pts, ["poly4", "catenary"]).set_index(["patient_id", "model"])
    mm = arch.fit(pts, ["poly4", "catenary"], mm_per_px=0.1).set_index(["patient_id", "model"])
    assert set(mm["unit"]) == {"mm"}
    np.testing.assert_allclose(mm["c2"], px["c2"] / 0.1, rtol=1e-7)
    np.testing.assert_allclose(mm["c4"], px["c4"] / 0.1**3, rtol=1e-7)
    np.testing.assert_allclose(mm["a"], px["a"] * 0.1, rtol=1e-7)
    np.testing.assert_allclose(mm["rss"], px["rss"] * 0.01, rtol=1e-7)
    # the transform still maps pixels (tx, ty in px)
    np.testing.assert_allclose(mm["tx"], px["tx"], rtol=1e-7)


def test_curve_in_image_frame_lies_on_the_generating_curve():
    x = np.linspace(-220, 220, 13)
    theta, t = 2.2, np.array([700.0, 500.0])
    pts = arch_table(x, catenary(x, 140.0), theta=theta, t=t, mirror=True)
    fits = arch.fit(pts, "catenary")
    cv = arch.curve(fits, n=25, frame="image")
    assert len(cv) == 25
    # undo the placement by hand: q = M · R(-θ) · (p − t)
    p = cv[["x_image", "y_image"]].to_numpy() - t
    c, s = np.cos(-theta), np.sin(-theta)
    q = p @ np.array([[c, -s], [s, c]]).T * np.array([-1.0, 1.0])
    np.testing.assert_allclose(q[:, 1], catenary(q[:, 0], 140.0), atol=1e-6)
    np.testing.assert_allclose([q[:, 0].min(), q[:, 0].max()], [-220, 220], atol=1e-6)
    # and in the model frame, y = f(x) with f(0) = 0
    at0 = arch.curve(fits, x=[0.0, 100.0])
    assert at0["y"].iloc[0] == pytest.approx(0.0, abs=1e-9)
    assert at0["y"].iloc[1] == pytest.approx(catenary(100.0, 140.0), rel=1e-9)


def test_failures_are_problem_rows_with_reasons():
    good = arch_table(
        np.linspace(-100, 100, 11), 0.01 * np.linspace(-100, 100, 11) ** 2, patient="ok"
    )
    few = arch_table(
        np.linspace(-100, 100, 4), 0.01 * np.linspace(-100, 100, 4) ** 2, patient="few"
    )
    line = arch_table(np.linspace(-100, 100, 9), np.zeros(9), patient="line")
    fits = arch.fit(pd.concat([good, few, line], ignore_index=True), "all")
    assert len(fits) == 15
    by = fits.set_index(["patient_id", "model"])
    assert (by.loc["ok", "status"].drop("beta") == "ok").all()
    # a parabola is the beta function's W → ∞ limit: no finite optimum, a reported boundary
    beta = by.loc[("ok", "beta")]
    assert beta["status"] == "boundary"
    assert "parabola limit" in beta["reason"]
    assert np.isinf(beta["width"]) and np.isinf(beta["depth"])
    # its sum of squares is the limit's, the parabola's (0 here), to the bound's 1e-7 relative
    # curve difference (y up to 100 px: 1e-5 px per point)
    assert beta["rss"] < 1e-9 and np.isfinite(beta["aicc"])
    assert (by.loc["few", "status"] == "too_few_points").all()
    assert "needs at least" in by.loc[("few", "poly4"), "reason"]
    assert (by.loc["line", "status"] == "degenerate").all()
    bad = fits[~fits["status"].isin(["ok", "boundary"])]
    assert bad[["a", "depth", "width", "c2", "c4", "c6", "rss", "aic"]].isna().all().all()
    assert bad["reason"].notna().all()


def test_output_schema_and_dtypes():
    x = np.linspace(-100, 100, 11)
    pts = arch_table(x, 0.01 * x**2)
    pts["session_time"] = pd.Timestamp("2024-01-01", tz="UTC")
    pts["patient_id"] = pts["patient_id"].astype("category")
    fits = arch.fit(pts, ["parabola", "catenary"])
    assert list(fits["model"]) == ["catenary", "parabola"]  # registry order
    for col in ("arch", "model", "status", "unit", "pose", "residual", "side_source"):
        assert isinstance(fits[col].dtype, pd.CategoricalDtype), col
    assert fits["n_points"].dtype == np.int64
    assert "session_time" in fits.columns
    for col in (
        "a",
        "depth",
        "width",
        "c2",
        "c4",
        "c6",
        "rss",
        "rmse",
        "aic",
        "aicc",
        "bic",
        "x_min",
        "x_max",
    ):
        assert fits[col].dtype == np.float64, col


def test_bad_arguments():
    x = np.linspace(-100, 100, 11)
    pts = arch_table(x, 0.01 * x**2)
    with pytest.raises(InputError, match="unknown arch model"):
        arch.fit(pts, "ellipse")
    with pytest.raises(InputError, match="pose must be"):
        arch.fit(pts, pose="free")
    with pytest.raises(InputError, match="residual must be"):
        arch.fit(pts, residual="radial")
    with pytest.raises(InputError, match="mm_per_px must be positive"):
        arch.fit(pts, mm_per_px=-1)


def test_models_registry_documents_every_model():
    assert list(MODELS) == ["catenary", "beta", "poly4", "poly6", "parabola"]
    for m in MODELS.values():
        assert m.formula
        assert m.reference
        assert len(m.params) == len(m.length_power)
        x = np.linspace(-1, 1, 5)[None, :]
        P = np.array([[0.9, 2.5]])[:, : m.k]
        assert m.f(np.zeros((1, 1)), P)[0, 0] == pytest.approx(0.0)  # vertex at the origin
        np.testing.assert_allclose(m.f(x, P), m.f(-x, P))  # symmetric
    # the beta model equals Braun's published form moved to the incisal origin
    u = np.linspace(-27, 27, 11)
    np.testing.assert_allclose(
        MODELS["beta"].f(u[None], np.array([[30.0, 56.0]]))[0],
        30.0 - beta_braun(u, 30.0, 56.0),
        rtol=1e-9,
        atol=1e-8,  # Braun's constant 3.0314 = 4**0.8 written to 10 digits in the helper
    )
    assert CURVES  # helpers define every model


def test_an_empty_table_gives_empty_results():
    empty = arch_table([0.0], [0.0]).iloc[:0]
    assert arch.align(empty).transforms.empty
    fits = arch.fit(empty)
    assert fits.empty
    assert "c2" in fits.columns
    assert arch.curve(fits).empty
    with pytest.raises(InputError, match="no catenary fit"):
        arch.mean_form(fits)
