"""Batched arch-form fits (all arches of a cohort at once) and evaluation of fitted curves."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dentalkit.arch._frame import (
    SIDE_SOURCES,
    STATUSES,
    TRANSFORM_COLUMNS,
    _notnone,
    align_stacked,
    matrices,
    matrices_from,
    transform_params,
)
from dentalkit.arch._models import BETA_EXPONENT, MODELS, PARAM_COLUMNS, ArchModel, beta_foot
from dentalkit.arch._solve import batched_lstsq, levenberg_marquardt
from dentalkit.arch._tables import ARCH_KEY, CARRIED, Errors, Stacked, require_columns, stack_points
from dentalkit.errors import InputError

#: Pose parameters estimated with the shape, per ``pose`` choice.
POSE_PARAMS = {"fit": ("y0", "x0", "phi"), "fixed": ("y0",)}
#: Residual definitions.
RESIDUALS = ("orthogonal", "vertical")
_LOG2PI1 = np.log(2.0 * np.pi) + 1.0
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


def fit(
    arch_points: pd.DataFrame,
    model: str | Sequence[str] = "all",
    *,
    pose: str = "fit",
    residual: str = "orthogonal",
    tooth_keypoints: pd.DataFrame | None = None,
    mm_per_px: float | pd.DataFrame | None = None,
    first_point_side: str = "right",
    point_keys: str = "auto",
    max_iter: int = 200,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """Fit arch-form models to every arch of a cohort in one batched computation.

    Parameters
    ----------
    arch_points : DataFrame
        The ``arch_points`` table (session key, ``arch``, ``index``/``point``,
        ``x``, ``y`` in pixels; points ordered along the arch by ``index``).
    model : str or list of str
        ``"catenary"``, ``"beta"``, ``"poly4"``, ``"poly6"``, ``"parabola"``, a
        list of them, or ``"all"`` (default). See :data:`MODELS` and ``docs/arch.md``.
    pose : {"fit", "fixed"}
        ``"fit"`` (default): the curve's vertex ``(x0, y0)`` and axis tilt φ in
        the :func:`align` frame are estimated with the shape (3 extra
        parameters), so the result does not depend on how the points are
        spaced. ``"fixed"``: the :func:`align` frame is kept and only a vertical
        offset ``y0`` is estimated (1 extra parameter).
    residual : {"orthogonal", "vertical"}
        ``"orthogonal"`` (default): residuals are distances to the curve,
        ``(y' − f(x')) / √(1 + f'(x')²)`` (first-order orthogonal distance),
        right for points with noise in both coordinates and steep arch ends.
        ``"vertical"``: ``y' − f(x')``, the classical least squares of the
        arch-form literature. With ``pose="fixed"`` and ``"vertical"`` the
        polynomial models are exactly linear and solved by one stacked
        least-squares call for the whole cohort.
    tooth_keypoints : DataFrame, optional
        Used only to tell the patient's left from right (see :func:`align`).
    mm_per_px : float or DataFrame, optional
        Calibration (one number, or per image); parameters are then in mm.
    first_point_side, point_keys : str
        How the patient's sides and the order along the arch are read (see
        :func:`align`).
    max_iter : int
        Iteration limit of the Levenberg–Marquardt solver.
    errors : {"raise", "collect"}
        Bad point rows raise, or with "collect" become problem rows.

    Returns
    -------
    DataFrame
        One row per arch × model (wide): session key (+ ``session_time``,
        ``endpoint``, ``model_version`` when present), ``arch``, ``model``,
        ``status`` ("ok" or the problem), ``reason``, ``pose``, ``residual``, ``n_points``,
        ``n_params`` (all estimated parameters, pose and σ² included),
        ``unit``; the shape parameters ``a`` (catenary), ``depth``, ``width``
        (beta D, W), ``c2``, ``c4``, ``c6`` (polynomials; NaN for parameters the
        model lacks); ``rss``, ``rmse`` (√(rss/n)), ``aic``, ``aicc``, ``bic``;
        ``x_min``, ``x_max`` (extent of the points along the model's x-axis);
        the model frame ``rotation_deg``, ``reflected``, ``tx``, ``ty``,
        ``scale`` (image → model coordinates as in :func:`to_canonical`);
        ``side_source``; ``iterations``. Rows whose ``status`` is not "ok" carry
        NaN parameters and say why in ``reason``; no exception is raised for
        arches that cannot be fitted.

    Notes
    -----
    ``rss`` is the sum of squared residuals (orthogonal or vertical as chosen),
    in the model's own frame. Information criteria use the Gaussian
    likelihood of the residuals with σ² = rss/n:
    ``AIC = n·ln(rss/n) + n·(ln 2π + 1) + 2k``, ``BIC = … + k·ln n``,
    ``AICc = AIC + 2k(k+1)/(n−k−1)``, with ``k = n_params``.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> x = np.linspace(-20, 20, 11)
    >>> pts = pd.DataFrame(
    ...     {
    ...         "patient_id": "p1",
    ...         "timestamp": "t",
    ...         "arch": "up",
    ...         "index": np.arange(11),
    ...         "x": 100 + x,
    ...         "y": 200 - 0.05 * x**2,
    ...     }
    ... )
    >>> f = fit(pts, "parabola")
    >>> float(f["c2"].iloc[0].round(9)), f["status"].iloc[0]
    (0.05, 'ok')
    """
    if pose not in POSE_PARAMS:
        raise InputError(f"pose must be 'fit' or 'fixed', got {pose!r}")
    if residual not in RESIDUALS:
        raise InputError(f"residual must be 'orthogonal' or 'vertical', got {residual!r}")
    models = _models_arg(model)
    st = stack_points(arch_points, mm_per_px=mm_per_px, errors=errors, point_keys=point_keys)
    return _fit_stacked(st, models, pose, residual, tooth_keypoints, first_point_side, max_iter)


@dataclass
class _Prepared:
    """Frames and normalised coordinates of every arch, ready for the model fits."""

    source: np.ndarray
    frame_reason: np.ndarray
    framed: np.ndarray
    ex: np.ndarray
    ey: np.ndarray
    origin: np.ndarray
    prob: _Problem


def _prepare(
    st: Stacked,
    pose: str,
    residual: str,
    tooth_keypoints: pd.DataFrame | None,
    first_point_side: str,
    max_iter: int,
) -> _Prepared:
    params, source, frame_reason = align_stacked(st, tooth_keypoints, first_point_side)
    m = len(st.n)
    framed = np.array([r is None for r in frame_reason], dtype=bool)
    M0, _, _ = matrices_from(
        params["rotation_deg"], params["reflected"], np.zeros((m, 2)), np.ones(m)
    )
    ex, ey = M0[:, 0, :], M0[:, 1, :]
    origin = np.stack([params["tx"], params["ty"]], 1) * st.scale[:, None]
    prob = _problem(st, ex, ey, origin, framed)
    if pose == "fit":
        # Second pass of the starting frame: a parabola with free vertex and tilt
        # (robust, few local minima) corrects the geometric frame when the points
        # are not spaced symmetrically; every model then starts from it.
        par = MODELS["parabola"]
        res = _fit_model(prob, par, "fit", framed & (st.n >= 5), max_iter, residual)
        good = (res["status"] == None) & np.isfinite(res["P"]).all(1)  # noqa: E711
        good &= np.abs(res["P"][:, par.k + 2]) < np.pi / 4
        if good.any():
            s = prob.s
            ex2, ey2, o2 = _compose(
                ex, ey, origin, res["P"][:, 2] * s, res["P"][:, 1] * s, res["P"][:, 3]
            )
            ex = np.where(good[:, None], ex2, ex)
            ey = np.where(good[:, None], ey2, ey)
            origin = np.where(good[:, None], o2, origin)
            prob = _problem(st, ex, ey, origin, framed)
    return _Prepared(source, frame_reason, framed, ex, ey, origin, prob)


def _fit_stacked(
    st: Stacked,
    models: list[ArchModel],
    pose: str,
    residual: str,
    tooth_keypoints: pd.DataFrame | None,
    first_point_side: str,
    max_iter: int,
) -> pd.DataFrame:
    pre = _prepare(st, pose, residual, tooth_keypoints, first_point_side, max_iter)
    source, frame_reason, framed = pre.source, pre.frame_reason, pre.framed
    ex, ey, origin, prob = pre.ex, pre.ey, pre.origin, pre.prob
    m = len(st.n)
    npose = len(POSE_PARAMS[pose])
    frames = []
    for mod in models:
        kk = mod.k + npose
        enough = st.n >= kk + 1
        fittable = framed & enough
        res = _fit_model(prob, mod, pose, fittable, max_iter, residual)
        status = res["status"].copy()
        reason = res["reason"].copy()
        few = framed & ~enough
        status[few] = "too_few_points"
        reason[few] = f"{mod.name} with pose={pose!r} needs at least {kk + 1} points"
        nofr = ~framed
        status[nofr] = np.where(_notnone(st.bad[nofr]), "bad_input", "degenerate")
        reason[nofr] = frame_reason[nofr]
        P = res["P"]
        s = prob.s
        shape = P[:, : mod.k] * s[:, None] ** np.array(mod.length_power, dtype=float)
        y0 = P[:, mod.k] * s
        x0 = P[:, mod.k + 1] * s if npose == 3 else np.zeros(m)
        phi = P[:, mod.k + 2] if npose == 3 else np.zeros(m)
        # model frame: origin at the vertex, axes tilted by phi (in calibrated units)
        ex2, ey2, o2 = _compose(ex, ey, origin, x0, y0, phi)
        tp = transform_params(ex2, ey2, o2, st.scale)
        d = st.xy - o2[:, None, :]
        xm = np.einsum("mnj,mj->mn", d, ex2)
        xmin = np.where(st.mask, xm, np.inf).min(1)
        xmax = np.where(st.mask, xm, -np.inf).max(1)
        if mod.name == "beta" and residual == "vertical":
            half = shape[:, 1] / 2.0
            # at (to rounding) or beyond the ends: the fit ended on the domain's edge
            edge = half[:, None] * (1.0 - _BETA_EDGE)
            outside = np.where(st.mask, ~(np.abs(xm) < edge), False).sum(1)
            fitted = np.isin(status, [None, "degenerate", "not_converged"]) & framed & enough
            hit = fitted & (outside > 0) & np.isfinite(half)
            status[hit] = "out_of_domain"
            reason[hit] = [
                f"{k} point(s) lie at or beyond x = ±W/2, the ends of the beta function: "
                "its best fit ends on the data (no interior optimum)"
                for k in outside[hit]
            ]
        if mod.name == "beta":
            negative = (status == None) & ~((shape[:, 0] > 0) & (shape[:, 1] > 0))  # noqa: E711
            status[negative] = "degenerate"
            reason[negative] = "fitted depth D or width W is not positive"
        finite = np.isfinite(shape).all(1) & np.isfinite(res["rss"])
        lost = (status == None) & ~finite  # noqa: E711
        status[lost] = "not_converged"
        reason[lost] = "fit ended on non-finite values"
        status[status == None] = "ok"  # noqa: E711
        ok = status == "ok"
        rss = res["rss"] * s**2
        n = st.n.astype(float)
        k_all = kk + 1
        with np.errstate(divide="ignore", invalid="ignore"):
            loglik_part = n * np.log(rss / n) + n * _LOG2PI1
            aic = loglik_part + 2 * k_all
            bic = loglik_part + k_all * np.log(n)
            aicc = np.where(
                n - k_all - 1 > 0, aic + 2 * k_all * (k_all + 1) / (n - k_all - 1), np.nan
            )
            rmse = np.sqrt(rss / n)
        out = st.keys.copy()
        out["model"] = mod.name
        out["status"] = status
        out["reason"] = reason
        out["pose"] = pose
        out["residual"] = residual
        out["n_points"] = st.n.astype(np.int64)
        out["n_params"] = np.int64(k_all)
        out["unit"] = st.unit
        for col in PARAM_COLUMNS:
            out[col] = np.nan
        for j, col in enumerate(mod.params):
            out[col] = np.where(ok, shape[:, j], np.nan)
        for col, val in (
            ("rss", rss),
            ("rmse", rmse),
            ("aic", aic),
            ("aicc", aicc),
            ("bic", bic),
            ("x_min", xmin),
            ("x_max", xmax),
        ):
            out[col] = np.where(ok, val, np.nan)
        for col in ("rotation_deg", "tx", "ty"):
            out[col] = np.where(ok, tp[col], np.nan)
        out["reflected"] = pd.array(np.where(ok, tp["reflected"], False), dtype="boolean")
        out.loc[~ok, "reflected"] = pd.NA
        out["scale"] = st.scale
        out["side_source"] = np.where(ok, source, None)
        out["iterations"] = res["iterations"]
        frames.append(out)
    table = pd.concat(frames, ignore_index=True)
    order = {name: i for i, name in enumerate(MODELS)}
    table["_o"] = table["model"].map(order)
    table["_a"] = np.tile(np.arange(m), len(models))
    table = table.sort_values(["_a", "_o"], kind="stable").drop(columns=["_a", "_o"])
    table = table.reset_index(drop=True)
    return _dtypes(table)


def _dtypes(table: pd.DataFrame) -> pd.DataFrame:
    table["arch"] = pd.Categorical(table["arch"].astype(str), categories=["up", "lo"])
    table["model"] = pd.Categorical(table["model"], categories=list(MODELS))
    table["status"] = pd.Categorical(table["status"], categories=STATUSES)
    table["reason"] = pd.array(table["reason"].tolist(), dtype="string")
    table["pose"] = pd.Categorical(table["pose"], categories=list(POSE_PARAMS))
    table["residual"] = pd.Categorical(table["residual"], categories=list(RESIDUALS))
    table["unit"] = pd.Categorical(table["unit"], categories=["px", "mm"])
    table["side_source"] = pd.Categorical(table["side_source"], categories=SIDE_SOURCES)
    return table


def _param_matrix(fits: pd.DataFrame, model: ArchModel) -> np.ndarray:
    return fits[list(model.params)].to_numpy(dtype=float)


def evaluate(model: ArchModel, x: np.ndarray, P: np.ndarray) -> np.ndarray:
    """``f(x)`` of ``model`` for parameter rows ``P`` (m, k) and x (m, n)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return model.f(x, P)


def curve(
    fits: pd.DataFrame,
    x: np.ndarray | Sequence[float] | None = None,
    *,
    n: int = 101,
    frame: str = "model",
) -> pd.DataFrame:
    """Evaluate fitted arch forms: a tidy table of curve points for plotting or measuring.

    Parameters
    ----------
    fits : DataFrame
        Output of :func:`fit` (any models; rows whose ``status`` is not "ok"
        are skipped).
    x : array-like, optional
        Abscissae in the model frame (the fit's unit) used for every curve.
        Default: ``n`` points from each fit's ``x_min`` to ``x_max`` (the span of
        its own points; for the beta function at most its ends ±W/2, beyond
        which it is not defined and ``y`` is NaN).
    n : int
        Points per curve when ``x`` is not given.
    frame : {"model", "image"}
        "model": ``x``, ``y`` in each model's canonical frame (vertex at the
        origin, +y posterior, +x patient's left). "image": also ``x_image``,
        ``y_image`` in image pixels (through the fit's transform).

    Returns
    -------
    DataFrame
        Session key, ``arch``, ``model``, ``x``, ``y`` (+ ``x_image``,
        ``y_image``), one row per curve point.

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame(
    ...     {
    ...         "patient_id": ["p"],
    ...         "timestamp": ["t"],
    ...         "arch": ["up"],
    ...         "model": ["parabola"],
    ...         "status": ["ok"],
    ...         "c2": [0.5],
    ...         "x_min": [-2.0],
    ...         "x_max": [2.0],
    ...     }
    ... )
    >>> curve(f, n=3)[["x", "y"]].values.tolist()
    [[-2.0, 2.0], [0.0, 0.0], [2.0, 2.0]]
    """
    if frame not in ("model", "image"):
        raise InputError(f"frame must be 'model' or 'image', got {frame!r}")
    require_columns(fits, [*ARCH_KEY, "model", "status"], "fits")
    ok = fits[fits["status"].astype(str).eq("ok")]
    keep = [c for c in (*ARCH_KEY[:2], *CARRIED) if c in ok.columns and c != "arch"]
    parts = []
    for name, grp in ok.groupby(ok["model"].astype(str), sort=False):
        if name not in MODELS:
            raise InputError(f"fits has unknown model {name!r}; models are {list(MODELS)}")
        mod = MODELS[name]
        require_columns(grp, list(mod.params), "fits")
        P = _param_matrix(grp, mod)
        if x is None:
            require_columns(grp, ["x_min", "x_max"], "fits")
            t = np.linspace(0.0, 1.0, n)
            lo, hi = grp["x_min"].to_numpy(float), grp["x_max"].to_numpy(float)
            if name == "beta":  # the curve ends at x = ±W/2
                lo, hi = np.maximum(lo, -P[:, 1] / 2.0), np.minimum(hi, P[:, 1] / 2.0)
            X = lo[:, None] + (hi - lo)[:, None] * t[None, :]
        else:
            xv = np.asarray(x, dtype=float).ravel()
            X = np.broadcast_to(xv, (len(grp), xv.size))
        Y = evaluate(mod, X, P)
        if name == "beta":
            Y = np.where(np.abs(X) <= P[:, 1:2] / 2.0, Y, np.nan)
        rep = np.repeat(np.arange(len(grp)), X.shape[1])
        part = grp[[*keep, "arch"]].iloc[rep].reset_index(drop=True)
        part["model"] = name
        part["x"] = X.ravel()
        part["y"] = Y.ravel()
        if frame == "image":
            require_columns(grp, list(TRANSFORM_COLUMNS), "fits")
            M, t, sc = matrices(grp)
            q = np.stack([X, Y], axis=-1)
            p = t[:, None, :] + np.einsum("mji,mnj->mni", M, q) / sc[:, None, None]
            part["x_image"] = p[..., 0].ravel()
            part["y_image"] = p[..., 1].ravel()
        parts.append(part)
    if not parts:
        cols = [*keep, "arch", "model", "x", "y"] + (
            ["x_image", "y_image"] if frame == "image" else []
        )
        return pd.DataFrame({c: [] for c in cols})
    out = pd.concat(parts, ignore_index=True)
    out["model"] = pd.Categorical(out["model"], categories=list(MODELS))
    return out
