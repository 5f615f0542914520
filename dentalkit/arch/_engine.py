"""The fitting engine: residuals and Jacobians of every model, starting values, one model's batched fit.

Private to :mod:`dentalkit.arch`; :func:`dentalkit.arch.fit` drives it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dentalkit.arch._models import BETA_EXPONENT, MODELS, ArchModel, beta_foot
from dentalkit.arch._solve import batched_lstsq, levenberg_marquardt
from dentalkit.arch._tables import Stacked
from dentalkit.errors import InputError

#: Pose parameters estimated with the shape, per ``pose`` choice.
POSE_PARAMS = {"fit": ("y0", "x0", "phi"), "fixed": ("y0",)}
#: Residual definitions.
RESIDUALS = ("orthogonal", "vertical")
#: Newton iterations of each foot-point search of the exact beta distance.
_FOOT_ITERATIONS = 12
#: A beta fit whose width W exceeds this multiple of the points' span is abandoned.
_BETA_RUNAWAY = 4.0
#: With vertical residuals, a beta fit with points beyond ±W/2 for this many iterations
#: in a row is stopped (its optimum lies on the edge of the function's domain).
_BETA_OUTSIDE_ITERS = 20
#: Relative distance from x = ±W/2 below which a point counts as on the beta's end.
_BETA_EDGE = 1e-6


def _models_arg(model: str | Sequence[str]) -> list[ArchModel]:
    names = list(MODELS) if model == "all" else [model] if isinstance(model, str) else list(model)
    unknown = [m for m in names if m not in MODELS]
    if unknown or not names:
        raise InputError(
            f"unknown arch model(s) {unknown or names}; choose from {list(MODELS)} or 'all'"
        )
    return [MODELS[m] for m in names]


class _Problem:
    """Padded canonical coordinates of the arches, normalised for conditioning."""

    def __init__(self, U: np.ndarray, V: np.ndarray, mask: np.ndarray, s: np.ndarray):
        self.U, self.V, self.mask, self.s = U, V, mask, s
        self.weight = mask.astype(float)

    def residuals(self, model: ArchModel, pose: str, residual: str = "orthogonal"):
        """Residual/Jacobian function of ``model`` for :func:`levenberg_marquardt`.

        Parameters are (shape…, y0[, x0, φ]); the model frame is the current
        frame moved to (x0, y0) and turned by φ: x' = c(u − x0) + s(v − y0),
        y' = c(v − y0) − s(u − x0). The vertical residual is r = y' − f(x');
        the orthogonal one r/√(1 + f'(x')²) (first-order distance to the curve).
        """
        npose = len(POSE_PARAMS[pose])
        k = model.k
        orth = residual == "orthogonal"
        exact = orth and model.name == "beta"

        def fn(P: np.ndarray, rows: np.ndarray):
            U, V, w = self.U[rows], self.V[rows], self.weight[rows]
            shape = P[:, :k]
            y0 = P[:, k, None]
            if npose == 3:
                x0, phi = P[:, k + 1, None], P[:, k + 2, None]
                c, s = np.cos(phi), np.sin(phi)
                du, dv = U - x0, V - y0
                xp = c * du + s * dv
                yp = c * dv - s * du
            else:
                xp, yp = U, V - y0
                c = s = None
            J = np.empty((k + npose, *U.shape))
            if exact:
                return _exact_residuals(model, xp, yp, shape, w, J, npose, c, s)
            with np.errstate(over="ignore", invalid="ignore"):
                d = model.derivs(xp, shape)
                r = yp - d.f
                if orth:
                    sf = 1.0 / np.sqrt(1.0 + d.d1 * d.d1)
                    t = r * sf**3 * d.d1 * w
                    r = r * sf
                    sw = sf * w
                else:
                    sw = w
                for j in range(k):
                    J[j] = -sw * d.dp[j]
                    if orth:
                        J[j] -= t * d.d1p[j]
                if npose == 3:
                    J[k] = sw * (d.d1 * s - c)
                    J[k + 1] = sw * (d.d1 * c + s)
                    J[k + 2] = -sw * (xp + d.d1 * yp)
                    if orth:
                        J[k] += t * d.d2 * s
                        J[k + 1] += t * d.d2 * c
                        J[k + 2] -= t * d.d2 * yp
                else:
                    J[k] = -sw
            return r * w, J

        return fn


def _exact_residuals(model, xp, yp, shape, w, J, npose, c, s):
    """Exact signed distances (beta) and their Jacobian by the envelope theorem."""
    k = model.k
    bad = ~((shape[:, 0] > 0) & (shape[:, 1] > 0))
    ft = beta_foot(xp, yp, shape, iterations=_FOOT_ITERATIONS)
    r = ft.d * w
    for j in range(k):
        J[j] = -(ft.nx * ft.dcx[j] + ft.ny * ft.dcy[j]) * w
    if npose == 3:
        J[k] = -(ft.nx * s + ft.ny * c) * w
        J[k + 1] = (ft.ny * s - ft.nx * c) * w
        J[k + 2] = (ft.nx * yp - ft.ny * xp) * w
    else:
        J[k] = -ft.ny * w
    if bad.any():
        r[bad] = np.inf
    return r, J


def _linear_init(prob: _Problem, powers: tuple[int, ...], rows: np.ndarray):
    """Stacked least squares of v = y0 + Σ c_p u^p (one call): returns (c, y0, rss, rank_ok)."""
    U, V, msk = prob.U[rows], prob.V[rows], prob.mask[rows]
    A = np.stack([*(U**q for q in powers), np.ones_like(U)], axis=-1)
    beta, rss, rank_ok = batched_lstsq(np.nan_to_num(A), np.nan_to_num(V), msk)
    return beta[:, :-1], beta[:, -1], rss, rank_ok


def _grid_init(prob: _Problem, model: ArchModel, rows: np.ndarray) -> np.ndarray:
    """Starting shape and y0 of the nonlinear models by a 1-D grid, y0 (and D) in closed form."""
    U, V, msk = prob.U[rows], prob.V[rows], prob.mask[rows]
    U0, V0 = np.where(msk, U, 0.0), np.where(msk, V, 0.0)
    n = msk.sum(1)
    best = np.full(len(rows), np.inf)
    out = np.full((len(rows), model.k + 1), np.nan)
    if model.name == "catenary":
        c2, _, _, _ = _linear_init(prob, (2,), rows)
        a0 = np.where(c2[:, 0] > 1e-6, 1.0 / (2.0 * np.abs(c2[:, 0])), 1e6)
        for f in 2.0 ** np.linspace(-3.0, 3.0, 13):
            a = a0 * f
            with np.errstate(over="ignore", invalid="ignore"):
                h = np.where(msk, model.f(U0, a[:, None]), 0.0)
            y0 = (V0 - h).sum(1) / n
            rss = np.where(msk, (V0 - h - y0[:, None]) ** 2, 0.0).sum(1)
            take = np.isfinite(rss) & (rss < best)
            best = np.where(take, rss, best)
            out[take] = np.stack([a, y0], axis=1)[take]
    elif model.name == "beta":
        e = np.where(msk, np.abs(U0), 0.0).max(1)
        for f in 1.0 + np.geomspace(1e-3, 3.0, 40):
            W = 2.0 * e * f
            g = np.clip(1.0 - (2.0 * U0 / W[:, None]) ** 2, 0.0, None)
            h = np.where(msk, 1.0 - g**BETA_EXPONENT, 0.0)
            sh, shh = h.sum(1), (h * h).sum(1)
            sv, shv = V0.sum(1), (h * V0).sum(1)
            det = n * shh - sh * sh
            with np.errstate(divide="ignore", invalid="ignore"):
                D = (n * shv - sh * sv) / det
                y0 = (sv - D * sh) / n
            rss = np.where(msk, (V0 - y0[:, None] - D[:, None] * h) ** 2, 0.0).sum(1)
            take = np.isfinite(rss) & (rss < best)
            best = np.where(take, rss, best)
            out[take] = np.stack([D, W, y0], axis=1)[take]
    else:  # pragma: no cover - linear models never come here
        raise AssertionError(model.name)
    return out


def _fit_model(
    prob: _Problem,
    model: ArchModel,
    pose: str,
    fittable: np.ndarray,
    max_iter: int,
    residual: str = "orthogonal",
) -> dict[str, np.ndarray]:
    """Fit one model to all fittable arches. Returns normalised parameters and statuses."""
    m = len(fittable)
    npose = len(POSE_PARAMS[pose])
    kk = model.k + npose
    P = np.full((m, kk), np.nan)
    rss = np.full(m, np.nan)
    status = np.full(m, None, dtype=object)
    reason = np.full(m, None, dtype=object)
    iters = np.zeros(m, np.int64)
    rows = np.flatnonzero(fittable)
    if rows.size == 0:
        return {"P": P, "rss": rss, "status": status, "reason": reason, "iterations": iters}
    if model.linear_powers is not None:
        c, y0, rss0, rank_ok = _linear_init(prob, model.linear_powers, rows)
        start = np.concatenate([c, y0[:, None]], axis=1)
    else:
        start = _grid_init(prob, model, rows)
        rank_ok = np.isfinite(start).all(1)
        rss0 = None
    if pose == "fixed" and residual == "vertical" and model.linear_powers is not None:
        P[rows] = start
        rss[rows] = rss0
        bad = rows[~rank_ok]
        status[bad] = "degenerate"
        reason[bad] = "design matrix is rank-deficient (points do not determine the curve)"
        return {"P": P, "rss": rss, "status": status, "reason": reason, "iterations": iters}
    p0 = np.zeros((m, kk))
    p0[rows, : model.k + 1] = np.nan_to_num(start)
    out_p0 = p0
    abandon = None
    runaway = np.zeros(m, bool)
    if model.name == "beta":
        half = np.where(prob.mask, np.abs(prob.U), 0.0).max(1)
        outside_for = np.zeros(m, np.int64)

        def abandon(Pa: np.ndarray, r: np.ndarray) -> np.ndarray:
            W = Pa[:, 1]
            run = ~(np.abs(W) < _BETA_RUNAWAY * 2.0 * half[r])
            U, V = prob.U[r], prob.V[r]
            if npose == 3:
                y0, x0, phi = Pa[:, 2, None], Pa[:, 3, None], Pa[:, 4, None]
                xp = np.cos(phi) * (U - x0) + np.sin(phi) * (V - y0)
            else:
                xp = U
            edge = np.abs(W[:, None]) / 2.0 * (1.0 - _BETA_EDGE)
            out = (prob.mask[r] & ~(np.abs(xp) < edge)).any(1)
            outside_for[r] = np.where(out, outside_for[r] + 1, 0)
            runaway[r] |= run
            if residual == "orthogonal":  # exact distances: points beyond the ends are fine
                return run
            return run | (outside_for[r] >= _BETA_OUTSIDE_ITERS)

    lm = levenberg_marquardt(
        prob.residuals(model, pose, residual), p0, fittable, max_iter=max_iter, abandon=abandon
    )
    P[rows] = lm.params[rows]
    rss[rows] = lm.rss[rows]
    iters[rows] = lm.iterations[rows]
    notconv = rows[~lm.converged[rows]]
    status[notconv] = "not_converged"
    reason[notconv] = f"Levenberg–Marquardt did not converge within {max_iter} iterations"
    ran = rows[lm.abandoned[rows] & runaway[rows]]
    reason[ran] = (
        f"beta width W ran past {_BETA_RUNAWAY:g}× the points' span (W → ∞ is the "
        "parabola limit: the points are closer to a parabola than to any beta curve)"
    )
    stuck = rows[lm.abandoned[rows] & ~runaway[rows]]
    status[stuck] = None  # flagged out_of_domain with the count of points beyond ±W/2
    sing = rows[lm.converged[rows] & lm.singular[rows]]
    status[sing] = "degenerate"
    reason[sing] = "parameters not identifiable from these points (singular Jacobian)"
    return {
        "P": P,
        "rss": rss,
        "status": status,
        "reason": reason,
        "iterations": iters,
        "p0": out_p0,
    }


def _problem(
    st: Stacked, ex: np.ndarray, ey: np.ndarray, origin: np.ndarray, framed: np.ndarray
) -> _Problem:
    """Points in the frame (ex, ey, origin), divided by their RMS radius ``s``."""
    d = np.where(st.mask[..., None], st.xy - origin[:, None, :], 0.0)
    U = np.einsum("mnj,mj->mn", d, np.nan_to_num(ex))
    V = np.einsum("mnj,mj->mn", d, np.nan_to_num(ey))
    cnt = np.maximum(st.n, 1)
    cu, cv = U.sum(1) / cnt, V.sum(1) / cnt
    s = np.sqrt(
        np.where(st.mask, (U - cu[:, None]) ** 2 + (V - cv[:, None]) ** 2, 0.0).sum(1) / cnt
    )
    s = np.where(framed & (s > 0), s, 1.0)
    return _Problem(np.nan_to_num(U) / s[:, None], np.nan_to_num(V) / s[:, None], st.mask, s)


def _compose(ex, ey, origin, x0, y0, phi):
    """Frame whose origin is (x0, y0) of the frame (ex, ey, origin), axes turned by phi."""
    c, s = np.cos(phi)[:, None], np.sin(phi)[:, None]
    o2 = origin + x0[:, None] * ex + y0[:, None] * ey
    return c * ex + s * ey, -s * ex + c * ey, o2
