"""The fitting engine: residuals and Jacobians of every model, starting values, one model's batched fit.

Private to :mod:`dentalkit.arch`; :func:`dentalkit.arch.fit` drives it.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from dentalkit.arch._models import BETA_EXPONENT, MODELS, ArchModel, beta_foot
from dentalkit.arch._solve import batched_lstsq, levenberg_marquardt, spd_solve
from dentalkit.arch._tables import Stacked
from dentalkit.errors import InputError

#: Pose parameters estimated with the shape, per ``pose`` choice.
POSE_PARAMS = {"fit": ("y0", "x0", "phi"), "fixed": ("y0",)}
#: Residual definitions.
RESIDUALS = ("orthogonal", "vertical")
#: Newton iterations of each foot-point search of the exact beta distance.
_FOOT_ITERATIONS = 12
#: Lower bound of the beta's v = 4/W² times the points' largest x²: W ≤ 1000× their span.
_BETA_V_FLOOR = 1e-6
#: A converged beta fit with v below this multiple of its floor is reported at the boundary.
_BETA_NEAR_FLOOR = 10.0
#: Iterations of Gauss–Newton–Levenberg–Marquardt before a beta fit switches to the full
#: Hessian (see :func:`dentalkit.arch._solve.levenberg_marquardt`).
_NEWTON_AFTER = 10
#: Iterations after which a beta fit also stops on the Bates–Watts relative offset ≤ 1e-3.
_OFFSET_AFTER = 40
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

    def take(self, rows: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``U``, ``V``, ``mask`` of the arches ``rows`` (sorted, unique): views when all."""
        if rows.size == len(self.U):
            return self.U, self.V, self.mask
        return self.U[rows], self.V[rows], self.mask[rows]

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

        beta = model.name == "beta"
        where: list = [None]

        def fn(P: np.ndarray, rows: np.ndarray):
            if beta:  # fitted as (κ, v); the curve code takes (D, W)
                r, J = core(np.concatenate([beta_native(P[:, :k]), P[:, k:]], axis=1), rows)
                kap, v = P[:, 0, None], P[:, 1, None]
                with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
                    D, W = kap / (BETA_EXPONENT * v), 2.0 / np.sqrt(v)
                    jd, jw = J[0].copy(), J[1].copy()
                    J[0] = jd / (BETA_EXPONENT * v)
                    # chain rule through (D, W): two terms of size κx²/v that cancel to
                    # κx⁴/10 near the parabola limit; there (t = v·x² < ½) the curve held
                    # at its abscissa gives ∂r/∂v without the cancellation
                    J[1] = -(jd * D + jw * W / 2.0) / v
                    xf, factor = where[0]
                    t = v * xf * xf
                    inner = t < 0.5
                    direct = factor * kap * xf**4 * _beta_q(np.where(inner, t, 0.0))
                    J[1] = np.where(inner & np.isfinite(direct), direct, J[1])
                bad = ~((P[:, 0] > 0) & (P[:, 1] > 0))
                if bad.any():
                    r[bad] = np.inf
                return r, J
            return core(P, rows)

        def core(P: np.ndarray, rows: np.ndarray):
            if rows.size == len(self.U):  # every arch (rows is sorted, unique): no copies
                U, V, w = self.U, self.V, self.weight
            else:
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
                r, J, ft = _exact_residuals(model, xp, yp, shape, w, J, npose, c, s)
                # where the beta is fitted as (κ, v): the foot's abscissa and normal for
                # the cancellation-free ∂/∂v (see fn)
                where[0] = (ft.dcx[1] * shape[:, 1, None], -ft.ny * w)
                return r, J
            where[0] = (xp, -w)  # vertical residual: r = y' − f(x'), ∂r/∂v = −∂f/∂v
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
                # written into J in place, each product and sum as in the formulas
                # (fewer temporaries of size m × N; the same rounding)
                neg_sw = -sw
                for j in range(k):
                    np.multiply(neg_sw, d.dp[j], out=J[j])
                    if orth:
                        J[j] -= t * d.d1p[j]
                if npose == 3:
                    np.multiply(d.d1, s, out=J[k])
                    J[k] -= c
                    J[k] *= sw
                    np.multiply(d.d1, c, out=J[k + 1])
                    J[k + 1] += s
                    J[k + 1] *= sw
                    np.multiply(d.d1, yp, out=J[k + 2])
                    np.add(xp, J[k + 2], out=J[k + 2])
                    J[k + 2] *= neg_sw
                    if orth:
                        td2 = t * d.d2
                        J[k] += td2 * s
                        J[k + 1] += td2 * c
                        J[k + 2] -= td2 * yp
                else:
                    J[k] = -sw
            return r * w, J

        return fn


def beta_native(kv: np.ndarray) -> np.ndarray:
    """Beta parameters (κ, v) → (D, W): D = κ/(e·v), W = 2/√v (NaN where v ≤ 0).

    κ = 4eD/W² is the curvature coefficient at the vertex (y ≈ κx² near x = 0)
    and v = 4/W²; the curve is y = κ/(e·v)·(1 − (1 − v·x²)^e), which tends to
    the parabola y = κx² as v → 0 (W → ∞). In (κ, v) that limit is the
    boundary v = 0 of a well-posed problem instead of a runaway of D and W.
    """
    kap, v = kv[:, 0], kv[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        D = np.where(v > 0, kap / (BETA_EXPONENT * v), np.nan)
        W = np.where(v > 0, 2.0 / np.sqrt(np.where(v > 0, v, 1.0)), np.nan)
    return np.stack([D, W], axis=1)


def beta_kv(dw: np.ndarray) -> np.ndarray:
    """Beta parameters (D, W) → (κ, v), the inverse of :func:`beta_native`."""
    D, W = dw[:, 0], dw[:, 1]
    with np.errstate(divide="ignore", invalid="ignore"):
        v = 4.0 / (W * W)
    return np.stack([BETA_EXPONENT * D * v, v], axis=1)


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
    return r, J, ft


#: Below this t = v·x², Q(t) by its Taylor series (see _beta_q).
_Q_SERIES = 5e-3


def _beta_q(t: np.ndarray) -> np.ndarray:
    """Q(t) = [(1 − t)^(e−1) − (1 − (1 − t)^e)/(e·t)] / t, so that ∂f/∂v = κ·x⁴·Q(v·x²).

    f = κ/(e·v)·(1 − (1 − v·x²)^e) is the beta curve in (κ, v). Q(0) = (1 − e)/2; for
    t < 5e-3 its Taylor series (1 − e)/2 + (1 − e)(2 − e)/3·t + (1 − e)(2 − e)(3 − e)/8·t²
    + … to t⁴ (relative error ~1e-12, where the closed form loses ~1e-16/t²), else the
    closed form.
    """
    e = BETA_EXPONENT
    # coefficient of t^k: (1 − e)(2 − e)…(k + 1 − e)/(k + 1)! · (k + 1)/(k + 2)
    series = np.zeros_like(t, dtype=float)
    coef = 1.0
    for k in range(5):
        coef *= (k + 1 - e) / (k + 1)
        series = series + coef * (k + 1) / (k + 2) * t**k
    tt = np.where(t >= _Q_SERIES, t, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        closed = ((1.0 - tt) ** (e - 1.0) - (1.0 - (1.0 - tt) ** e) / (e * tt)) / tt
    return np.where(t < _Q_SERIES, series, closed)


def _linear_init(prob: _Problem, powers: tuple[int, ...], rows: np.ndarray):
    """Stacked least squares of v = y0 + Σ c_p u^p (one call): returns (c, y0, rss, rank_ok)."""
    U, V, msk = prob.take(rows)
    # the design (m, N, k) filled column by column, padding already zero: the same
    # values and memory layout (so the same rounding in the solver's sums) as stacking
    # the columns and masking them on the short trailing axis, which numpy does slowly
    A = np.empty((*U.shape, len(powers) + 1))
    for j, q in enumerate(powers):
        np.copyto(A[..., j], np.where(msk, np.nan_to_num(U**q), 0.0))
    A[..., -1] = msk
    beta, rss, rank_ok = batched_lstsq(A, np.nan_to_num(V), msk, masked=True)
    return beta[:, :-1], beta[:, -1], rss, rank_ok


def _grid_init(prob: _Problem, model: ArchModel, rows: np.ndarray) -> np.ndarray:
    """Starting shape and y0 of the nonlinear models by a 1-D grid, y0 (and D) in closed form."""
    U, V, msk = prob.take(rows)
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
            vh = V0 - h
            y0 = vh.sum(1) / n
            rss = np.where(msk, (vh - y0[:, None]) ** 2, 0.0).sum(1)
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
    start: np.ndarray | None = None,
) -> dict[str, np.ndarray]:
    """Fit one model to all fittable arches (``start``: starting parameters where finite).

    Returns the normalised shape-and-pose parameters ``P`` (beta: D, W), their
    covariance ``cov`` (m, kk, kk) = s²·(JᵀJ)⁻¹ with s² = rss/(n − kk) (beta:
    in (D, W) by the delta method), statuses and reasons (None where the fit
    is fine, "boundary" for the beta function's parabola limit).
    """
    m = len(fittable)
    npose = len(POSE_PARAMS[pose])
    kk = model.k + npose
    P = np.full((m, kk), np.nan)
    cov = np.full((m, kk, kk), np.nan)
    rss = np.full(m, np.nan)
    status = np.full(m, None, dtype=object)
    reason = np.full(m, None, dtype=object)
    iters = np.zeros(m, np.int64)
    rows = np.flatnonzero(fittable)
    out = {"P": P, "cov": cov, "rss": rss, "status": status, "reason": reason, "iterations": iters}
    if rows.size == 0:
        return out
    n_pts = prob.mask.sum(1).astype(float)
    if model.linear_powers is not None:
        c, y0, rss0, rank_ok = _linear_init(prob, model.linear_powers, rows)
        init = np.concatenate([c, y0[:, None]], axis=1)
    else:
        init = _grid_init(prob, model, rows)
        rank_ok = np.isfinite(init).all(1)
        rss0 = None
    if pose == "fixed" and residual == "vertical" and model.linear_powers is not None:
        P[rows] = init
        rss[rows] = rss0
        U, msk = prob.U[rows], prob.mask[rows]
        A = np.stack([*(-(U**q) for q in model.linear_powers), -np.ones_like(U)], axis=0)
        A = np.where(msk[None], A, 0.0)
        cov[rows] = _covariance(np.einsum("amn,bmn->mab", A, A), rss0, n_pts[rows], kk)
        bad = rows[~rank_ok]
        status[bad] = "degenerate"
        reason[bad] = "design matrix is rank-deficient (points do not determine the curve)"
        cov[bad] = np.nan
        return out
    p0 = np.zeros((m, kk))
    p0[rows, : model.k + 1] = np.nan_to_num(init)
    if start is not None:
        given = np.isfinite(start).all(1) & fittable
        p0[given] = start[given]
    lower = None
    abandon = None
    newton_after = None
    if model.name == "beta":
        p0[rows, :2] = np.nan_to_num(beta_kv(init[:, :2]), nan=1.0)
        half = np.where(prob.mask, np.abs(prob.U), 0.0).max(1)
        lower = np.full((m, kk), -np.inf)
        # v ≥ v_floor: W ≤ 1000× the points' span; there the curve differs from
        # the parabola y = κx² by a relative 0.1·v·x² ≤ 1e-7 over the points
        lower[:, 1] = _BETA_V_FLOOR / np.where(half > 0, half, 1.0) ** 2
        p0[:, 1] = np.maximum(p0[:, 1], lower[:, 1])
        newton_after = _NEWTON_AFTER
        if residual == "vertical":
            outside_for = np.zeros(m, np.int64)

            def abandon(Pa: np.ndarray, r: np.ndarray) -> np.ndarray:
                W = beta_native(Pa[:, :2])[:, 1]
                U, V = prob.U[r], prob.V[r]
                if npose == 3:
                    y0, x0, phi = Pa[:, 2, None], Pa[:, 3, None], Pa[:, 4, None]
                    xp = np.cos(phi) * (U - x0) + np.sin(phi) * (V - y0)
                else:
                    xp = U
                edge = np.abs(W[:, None]) / 2.0 * (1.0 - _BETA_EDGE)
                outside = (prob.mask[r] & ~(np.abs(xp) < edge)).any(1)
                outside_for[r] = np.where(outside, outside_for[r] + 1, 0)
                return outside_for[r] >= _BETA_OUTSIDE_ITERS

    lm = levenberg_marquardt(
        prob.residuals(model, pose, residual),
        p0,
        fittable,
        max_iter=max_iter,
        abandon=abandon,
        lower=lower,
        newton_after=newton_after,
        n_obs=n_pts,
        offset_after=_OFFSET_AFTER if model.name == "beta" else None,
    )
    P[rows] = lm.params[rows]
    rss[rows] = lm.rss[rows]
    iters[rows] = lm.iterations[rows]
    cov[rows] = _covariance(lm.jtj[rows], lm.rss[rows], n_pts[rows], kk)
    notconv = rows[~lm.converged[rows]]
    status[notconv] = "not_converged"
    reason[notconv] = f"Levenberg–Marquardt did not converge within {max_iter} iterations"
    stuck = rows[lm.abandoned[rows]]
    status[stuck] = None  # flagged out_of_domain with the count of points beyond ±W/2
    sing = rows[lm.converged[rows] & lm.singular[rows]]
    status[sing] = "degenerate"
    reason[sing] = "parameters not identifiable from these points (singular Jacobian)"
    if model.name == "beta":
        kv = P[:, :2].copy()
        P[:, :2] = beta_native(kv)
        # delta method: ∂(D, W)/∂(κ, v) = [[1/(e v), −D/v], [0, −W/(2v)]]
        G = np.zeros((m, kk, kk))
        G[:, np.arange(kk), np.arange(kk)] = 1.0
        with np.errstate(divide="ignore", invalid="ignore"):
            G[:, 0, 0] = 1.0 / (BETA_EXPONENT * kv[:, 1])
            G[:, 0, 1] = -P[:, 0] / kv[:, 1]
            G[:, 1, 1] = -P[:, 1] / (2.0 * kv[:, 1])
        cov[:] = G @ cov @ G.transpose(0, 2, 1)
        # on the bound, or converged within a factor 10 of it (W > ~300× the span, where
        # the curve is the parabola to 1e-6 relative and LM may stop just short of v_floor)
        near = lm.at_bound[:, 1] | (lm.params[:, 1] <= _BETA_NEAR_FLOOR * lower[:, 1])
        edge = rows[near[rows] & lm.converged[rows] & (status[rows] == None)]  # noqa: E711
        status[edge] = "boundary"
        reason[edge] = (
            "the best beta curve is the parabola limit W → ∞ (fitted as v = 4/W² on its "
            "bound): the points are closer to a parabola than to any beta curve; depth and "
            "width are infinite, rss and AIC are those of the limit"
        )
        P[edge, :2] = np.inf
        cov[edge] = np.nan
    out["p0"] = p0
    return out


def _covariance(jtj: np.ndarray, rss: np.ndarray, n: np.ndarray, kk: int) -> np.ndarray:
    """s²·(JᵀJ)⁻¹ per arch (m, kk, kk), s² = rss/(n − kk); NaN where singular or no df.

    The asymptotic covariance of nonlinear least-squares estimates (Bates DM,
    Watts DG. Nonlinear Regression Analysis and Its Applications. Wiley 1988,
    §2.3), the same as ``scipy.optimize.curve_fit``'s ``pcov``.
    """
    A = np.ascontiguousarray(np.asarray(jtj, float).transpose(1, 2, 0))
    inv = np.stack(
        [
            spd_solve(A, np.broadcast_to(np.eye(kk)[j][:, None], (kk, A.shape[2])).copy())
            for j in range(kk)
        ],
        axis=1,
    )  # (kk, kk, m): column j of the inverse
    with np.errstate(divide="ignore", invalid="ignore"):
        s2 = np.where(n - kk > 0, rss / (n - kk), np.nan)
        return inv.transpose(2, 0, 1) * s2[:, None, None]


def _problem(
    st: Stacked, ex: np.ndarray, ey: np.ndarray, origin: np.ndarray, framed: np.ndarray
) -> _Problem:
    """Points in the frame (ex, ey, origin), divided by their RMS radius ``s``."""
    # per coordinate (arrays of shape (m, N)): numpy is slow on a trailing axis of length 2
    msk = st.mask
    dx = np.where(msk, st.xy[..., 0] - origin[:, 0, None], 0.0)
    dy = np.where(msk, st.xy[..., 1] - origin[:, 1, None], 0.0)
    ex, ey = np.nan_to_num(ex), np.nan_to_num(ey)
    U = dx * ex[:, 0, None] + dy * ex[:, 1, None]
    V = dx * ey[:, 0, None] + dy * ey[:, 1, None]
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
