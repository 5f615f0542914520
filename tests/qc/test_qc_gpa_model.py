"""The superimposition and the shape model against independent computations.

GPA: configurations that are exact similarity transforms of one shape superimpose onto it
(distance 0, the known sizes and rotations); two shapes meet at the distance scipy's
orthogonal Procrustes analysis gives; a mirror image is not undone. Model: the
leave-one-landmark-out residual from the precision matrix equals the conditional mean
computed directly (Σ₁₂ Σ₂₂⁻¹), and on Gaussian data the scale makes d² χ²₂-distributed.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.spatial import procrustes as scipy_procrustes
from scipy.stats import chi2

from dentalkit.qc import superimpose
from dentalkit.qc._model import ShapeModel, fit_model, threshold


def _shape(p: int = 12, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    return rng.normal(size=p) + 1j * rng.normal(size=p)


def test_similarity_transforms_of_one_shape_superimpose_exactly():
    base = _shape()
    rng = np.random.default_rng(1)
    angles = rng.uniform(-np.pi, np.pi, 20)
    sizes = rng.uniform(50, 500, 20)
    shifts = rng.normal(size=20) * 300 + 1j * rng.normal(size=20) * 300
    z = base[None] * (sizes * np.exp(1j * angles))[:, None] + shifts[:, None]
    sup = superimpose(z)
    assert np.allclose(sup.distance, 0, atol=1e-6)  # √ of a cancellation: ~1e-8
    assert np.allclose(sup.coords, sup.coords[0][None], atol=1e-9)
    centred = base - base.mean()
    assert np.allclose(sup.centroid_size, sizes * np.sqrt((np.abs(centred) ** 2).sum()))
    # rotations differ by exactly the angles applied (up to the common frame)
    relative = sup.rotation * np.exp(1j * angles)
    assert np.allclose(relative, relative[0])
    assert np.isclose(np.sqrt((np.abs(sup.consensus) ** 2).sum()), 1.0)


def test_two_shapes_meet_at_scipys_procrustes_distance():
    # scipy fits rotations *or reflections*: shapes alike enough that a rotation is best
    a = _shape(10, 2)
    b = 3.0 * np.exp(0.7j) * (a + 0.3 * _shape(10, 3)) + (5 - 2j)
    sup = superimpose(np.stack([a, b]), max_iter=200, tol=1e-13)
    _, _, disparity = scipy_procrustes(
        np.column_stack([a.real, a.imag]), np.column_stack([b.real, b.imag])
    )
    # full Procrustes disparity sin²ρ, partial distance between unit shapes 2 − 2 cos ρ
    partial = np.sum(np.abs(sup.coords[0] - sup.coords[1]) ** 2)
    assert partial == pytest.approx(2 - 2 * np.sqrt(1 - disparity), rel=1e-7)


def test_a_mirror_image_is_not_superimposed_away():
    base = _shape()
    sup = superimpose(np.stack([base, base, np.conj(base)]))
    assert sup.distance[2] > 0.1 and sup.distance[0] < sup.distance[2]


def test_absent_points_are_left_out_and_stay_absent():
    base = _shape()
    z = np.stack([base * k for k in (1.0, 2.0, 3.0)])
    z[1, 4] = np.nan
    sup = superimpose(z)
    assert np.isnan(sup.coords[1, 4]) and not np.isnan(sup.coords[1]).sum() > 1
    assert np.allclose(sup.distance[[0, 2]], 0, atol=1e-6)


def _model(p: int, k: int, seed: int = 0) -> ShapeModel:
    rng = np.random.default_rng(seed)
    w = rng.normal(size=(2 * p, k))
    psi = rng.uniform(0.2, 1.0, 2 * p)
    mean = rng.normal(size=2 * p)
    core = np.linalg.inv(np.eye(k) + (w.T / psi) @ w)
    from dentalkit.qc._model import _block_inverse

    b = _block_inverse(psi, w, core)
    return ShapeModel(mean, psi, w, core, b, np.linalg.inv(b), k, 0)


def test_leave_one_out_residuals_equal_the_conditional_mean():
    p, k = 7, 3
    m = _model(p, k)
    sigma = m.w @ m.w.T + np.diag(m.psi)
    x = np.random.default_rng(5).normal(size=(4, 2 * p)) * 2
    e, d2 = m.residuals(x)
    for j in range(p):
        mine = [2 * j, 2 * j + 1]
        rest = [i for i in range(2 * p) if i not in mine]
        s12 = sigma[np.ix_(mine, rest)]
        s22 = sigma[np.ix_(rest, rest)]
        s11 = sigma[np.ix_(mine, mine)]
        pred = m.mean[mine] + (x[:, rest] - m.mean[rest]) @ np.linalg.solve(s22, s12.T)
        cond = s11 - s12 @ np.linalg.solve(s22, s12.T)
        assert np.allclose(e[:, j], x[:, mine] - pred)
        r = x[:, mine] - pred
        assert np.allclose(d2[:, j], np.einsum("na,ab,nb->n", r, np.linalg.inv(cond), r))
    assert np.allclose(m.scores(x), d2)


def test_on_gaussian_shapes_the_scores_are_chi2_with_2_df():
    m = _model(15, 4, seed=2)
    sigma = m.w @ m.w.T + np.diag(m.psi)
    x = np.random.default_rng(9).multivariate_normal(m.mean, sigma, size=2400)
    fitted = fit_model(x)
    which = fitted.model_for(len(x))
    d2 = np.concatenate([fitted.models[k].scores(x[which == k]) for k in (0, 1)])
    assert np.median(d2) == pytest.approx(chi2.ppf(0.5, 2), rel=0.08)
    assert (d2 > chi2.ppf(0.99, 2)).mean() == pytest.approx(0.01, abs=0.004)


def test_the_threshold_is_the_prediction_bound_and_tends_to_chi2():
    assert threshold(0.05, 1, 10**7) == pytest.approx(chi2.ppf(0.95, 2), rel=1e-4)
    # Hotelling: with n = 20 the 95 % bound of a new 2-D observation, by hand
    from scipy.stats import f

    assert threshold(0.05, 1, 20) == pytest.approx(2 * 19 * 21 / (20 * 18) * f.ppf(0.95, 2, 18))
    assert threshold(0.05, 10, 100) > threshold(0.05, 1, 100)  # Bonferroni over 10
