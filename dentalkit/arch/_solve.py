"""Batched solvers: one stacked linear least-squares solve, and a vectorized Levenberg–Marquardt.

Both work on padded arrays of many arches at once; rows beyond an arch's
points are masked out (their residuals and Jacobian rows are zero).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

#: Relative cut-off of the linear solve (rank deficiency → degenerate).
RCOND = 1e-7
#: Smallest Cholesky pivot of the scaled J^T J of an identifiable fit (cond ≲ 1e12).
SINGULAR = 1e-12


def batched_lstsq(
    A: np.ndarray, b: np.ndarray, mask: np.ndarray, *, masked: bool = False
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Least squares ``min ‖A β − b‖`` for a stack of problems in one call.

    Parameters
    ----------
    A : ndarray (m, N, k)
        Design matrices; rows where ``mask`` is False are ignored.
    b : ndarray (m, N)
    mask : ndarray of bool (m, N)
    masked : bool
        ``A`` is already zero where ``mask`` is False (skips masking it again).

    Returns
    -------
    beta : ndarray (m, k)
    rss : ndarray (m,)
        Residual sum of squares.
    rank_ok : ndarray of bool (m,)
        False where the design is (numerically) rank-deficient: a column is
        explained by the others up to a fraction ``RCOND`` of its norm
        (``beta`` is then NaN).

    Notes
    -----
    Normal equations of the column-equilibrated design (each column divided by
    its norm, so the Gram matrix has a unit diagonal), solved by one Cholesky
    factorisation vectorized over the stack (:func:`spd_solve`). The squared
    Cholesky pivots are the fractions of each column's norm² not explained by
    the columns before it: below ``RCOND``² the problem is rank-deficient.
    """
    w = mask.astype(float)
    cols = np.moveaxis(A if masked else np.where(mask[..., None], A, 0.0), 2, 0)  # (k, m, N)
    bm = np.where(mask, b, 0.0)
    G = _gram(cols)
    k = G.shape[0]
    idx = np.arange(k)
    norm = np.sqrt(G[idx, idx])
    with np.errstate(divide="ignore", invalid="ignore"):
        Gs = G / (norm[:, None, :] * norm[None, :, :])
        rhs = _jtr(cols, bm) / norm
    x, piv = spd_solve(Gs, rhs, return_pivots=True)
    rank_ok = (piv > RCOND**2).all(axis=0) & (norm > 0).all(axis=0)
    beta = (x / norm).T
    beta[~rank_ok] = np.nan
    r = (np.einsum("kmn,mk->mn", cols, np.nan_to_num(beta)) - bm) * w
    return beta, (r * r).sum(axis=1), rank_ok


#: ``residuals(P, rows) -> (r, J)``: residuals (len(rows), N) and Jacobian (k, len(rows), N)
#: of the arches ``rows`` at parameters ``P`` (len(rows), k); masked entries zero.
ResidualFn = Callable[[np.ndarray, np.ndarray], tuple[np.ndarray, np.ndarray]]
#: ``abandon(P, rows) -> bool``: arches to stop early (parameters running away).
AbandonFn = Callable[[np.ndarray, np.ndarray], np.ndarray]


@dataclass
class LMResult:
    """Outcome of :func:`levenberg_marquardt` for every arch."""

    params: np.ndarray
    rss: np.ndarray
    converged: np.ndarray
    singular: np.ndarray
    abandoned: np.ndarray
    iterations: np.ndarray
    #: ``J^T J`` at the final parameters (m, k, k): the Gauss–Newton information.
    jtj: np.ndarray | None = None
    #: Parameters held on their lower bound at the end (m, k).
    at_bound: np.ndarray | None = None


def _finite_per_arch(J: np.ndarray) -> np.ndarray:
    """Whether every entry of each arch's Jacobian (k, m, N) is finite, shape (m,).

    One pass summing over k and N (a NaN or inf makes the sum non-finite); einsum's
    reduction is several times faster than ``ndarray.sum`` over two non-adjacent axes.
    """
    return np.isfinite(np.einsum("kmn->m", J))


def _gram(J: np.ndarray) -> np.ndarray:
    """``J^T J`` per arch, from J of shape (k, m, N), as shape (k, k, m)."""
    k, m, _ = J.shape
    H = np.empty((k, k, m))
    for a in range(k):
        for b in range(a, k):
            H[a, b] = H[b, a] = np.einsum("mn,mn->m", J[a], J[b])
    return H


def _jtr(J: np.ndarray, r: np.ndarray) -> np.ndarray:
    """``J^T r`` per arch, shape (k, m)."""
    return np.einsum("kmn,mn->km", J, r)


def spd_solve(A: np.ndarray, b: np.ndarray, return_pivots: bool = False):
    """Solve ``A x = b`` for a stack of small symmetric positive-definite systems.

    ``A`` has shape (k, k, m) and ``b`` (k, m): the stack is the *last* axis,
    so each step of the Cholesky factorisation and of the two triangular solves
    is one vector operation over all m systems (k ≤ 6 here: a few dozen numpy
    operations instead of m LAPACK calls). Non-positive pivots give NaN, which
    the caller treats as a failed step. With ``return_pivots`` also returns the
    squared pivots (k, m).
    """
    k = A.shape[0]
    L = np.zeros_like(A)
    piv = np.empty_like(b)
    with np.errstate(invalid="ignore", divide="ignore"):
        for j in range(k):
            s = A[j, j] - (L[j, :j] ** 2).sum(0)
            piv[j] = s
            L[j, j] = np.sqrt(s)
            for i in range(j + 1, k):
                L[i, j] = (A[i, j] - (L[i, :j] * L[j, :j]).sum(0)) / L[j, j]
        y = np.empty_like(b)
        for i in range(k):
            y[i] = (b[i] - (L[i, :i] * y[:i]).sum(0)) / L[i, i]
        x = np.empty_like(b)
        for i in reversed(range(k)):
            x[i] = (y[i] - (L[i + 1 :, i] * x[i + 1 :]).sum(0)) / L[i, i]
    return (x, piv) if return_pivots else x


def levenberg_marquardt(
    residuals: ResidualFn,
    p0: np.ndarray,
    active: np.ndarray,
    *,
    max_iter: int = 200,
    xtol: float = 1e-10,
    gtol: float = 1e-10,
    ftol: float = 1e-12,
    lam0: float = 1e-3,
    abandon: AbandonFn | None = None,
    lower: np.ndarray | None = None,
    newton_after: int | None = None,
    n_obs: np.ndarray | None = None,
    offset_after: int | None = None,
    offset_tol: float = 1e-3,
) -> LMResult:
    """Vectorized Levenberg–Marquardt over many independent small problems.

    Every arch has its own damping λ and its own accept/reject decision; all
    arches still iterating are advanced together with batched linear algebra
    (``J^T J`` per arch, the damped normal equations by a Cholesky solve
    vectorized over the arches, :func:`spd_solve`). Marquardt's scaling: the damping term is
    ``λ · diag(J^T J)`` (floored to keep it positive definite); λ follows
    Nielsen's gain-ratio rule (Madsen, Nielsen & Tingleff, *Methods for
    non-linear least squares problems*, 2nd ed., 2004, §3.2).

    Convergence (per arch), as in MINPACK: an accepted step with
    ``‖δ‖ ≤ xtol·(‖p‖ + xtol)``; or the residual vector orthogonal to the
    Jacobian columns to ``gtol`` (``max_j |J_jᵀ r| / (‖J_j‖ ‖r‖) ≤ gtol``); or a
    step whose actual and predicted decreases of the sum of squares are both
    below ``ftol`` times it (MINPACK's ftol test); or a residual that is zero
    to rounding. When λ exceeds 1e16 (no step lowers the
    sum of squares any more) the arch stops and counts as converged only if
    that cosine is below 1e-6.

    Parameters
    ----------
    residuals : callable
        See :data:`ResidualFn`.
    p0 : ndarray (m, k)
        Starting parameters.
    active : ndarray of bool (m,)
        Arches to fit; the others are returned untouched and not converged.
    abandon : callable, optional
        Stops arches whose parameters run away (reported as ``abandoned``).
    lower : ndarray (m, k), optional
        Lower bounds (``-inf`` for none). Steps are projected onto them, and a
        parameter on its bound (for a positive bound: below 3× it) whose gradient
        points outward is held (an active set): the arch converges there when the
        remaining parameters do (``at_bound`` of the result).
    newton_after : int, optional
        After this many iterations, an arch still iterating replaces ``J^T J``
        by the full Hessian of ½·rss, ``J^T J + Σ r_i ∇²r_i``, from forward
        differences of the analytic gradient ``J^T r`` (k extra residual
        calls per iteration for those arches only). Gauss–Newton converges
        only linearly ("creeps") where the second-order term is large — for the
        exact distance to the beta curve near its singular ends it is about
        ten times ``J^T J`` — while the damped Newton step converges
        quadratically. The same idea of switching to an augmented Hessian when
        the Gauss–Newton model fails is NL2SOL's (Dennis JE, Gay DM, Welsch
        RE. An adaptive nonlinear least-squares algorithm. ACM Trans Math
        Softw 1981;7(3):348-368).
    n_obs, offset_after, offset_tol : optional
        With the number of residuals per arch ``n_obs`` (m,): after
        ``offset_after`` iterations an arch also stops when the Bates–Watts
        relative offset — the length of the Gauss–Newton step measured against
        the residual standard error, √(gᵀ(JᵀJ)⁻¹g / p) / √((rss − gᵀ(JᵀJ)⁻¹g)/(n − p))
        — is below ``offset_tol`` (1e-3, their recommendation): the estimate
        is then within 0.1 % of its standard error of the optimum (Bates DM,
        Watts DG. A relative offset orthogonality convergence criterion for
        nonlinear least squares. Technometrics 1981;23(2):179-183). It ends the
        creeping of fits along flat valleys, e.g. the beta function near its
        parabola limit where W is not determined by the points.

    Returns
    -------
    LMResult
    """
    m, k = p0.shape
    P = p0.astype(float).copy()
    rss = np.full(m, np.nan)
    conv = np.zeros(m, bool)
    gave_up = np.zeros(m, bool)
    iters = np.zeros(m, np.int64)
    jtj = np.full((m, k, k), np.nan)
    lam = np.full(m, lam0)
    nu = np.full(m, 2.0)
    rows = np.flatnonzero(active)
    if rows.size:
        r, J = residuals(P[rows], rows)
        cur = (r * r).sum(1)
        finite = np.isfinite(cur) & _finite_per_arch(J)
        rss[rows] = cur
        rows, r, J, cur = rows[finite], r[finite], J[:, finite], cur[finite]
    lo = None if lower is None else np.asarray(lower, float)
    held = np.zeros((m, k), bool)
    idx = np.arange(k)
    for _ in range(max_iter):
        if rows.size == 0:
            break
        H = _gram(J)
        g = g_raw = _jtr(J, r)
        diag = np.einsum("kkm->km", H)
        d = np.maximum(diag, 1e-15 * np.maximum(diag.max(axis=0), 1e-300))
        if lo is not None:
            # active set: on the bound (or, for a positive bound, within a factor 3 of it)
            # with the descent direction (−g) pointing out; without the margin a step
            # clamped to the bound from just above it is rejected again and again
            near = np.where(lo[rows] > 0, 3.0 * lo[rows], lo[rows])
            hold = (P[rows] <= near).T & (g > 0)
            held[rows] = hold.T
            g = np.where(hold, 0.0, g)
        offset_ok = np.zeros(rows.size, bool)
        if n_obs is not None and offset_after is not None:
            late = iters[rows] >= offset_after
            if late.any():
                free = k - (hold.sum(0) if lo is not None else 0)
                with np.errstate(divide="ignore", invalid="ignore"):
                    step = spd_solve(H[:, :, late], g[:, late])
                    dec = (g[:, late] * step).sum(0)
                    df = n_obs[rows[late]] - free[late] if lo is not None else n_obs[rows[late]] - k
                    fr = free[late] if lo is not None else k
                    ro2 = (dec / fr) / ((cur[late] - dec) / df)
                offset_ok[late] = (dec >= 0) & (df > 0) & (ro2 <= offset_tol**2)
        if newton_after is not None:
            late = iters[rows] >= newton_after
            if late.any():
                H = H.copy()
                H[:, :, late] = _full_hessian(residuals, P[rows[late]], rows[late], g_raw[:, late])
        with np.errstate(divide="ignore", invalid="ignore"):
            cosine = np.abs(g) / np.sqrt(diag * cur)
        # largest cosine per arch, NaN entries ignored (0 where all are NaN)
        cosine = np.fmax.reduce(cosine, axis=0)
        cosine[np.isnan(cosine)] = 0.0
        stop = (cur <= 1e-30 * r.shape[1]) | (cosine <= gtol) | offset_ok
        lr = lam[rows]
        A = H.copy()
        A[idx, idx] += lr * d
        if lo is not None and hold.any():
            # held parameters: their row and column replaced by the identity (δ_j = 0)
            hj = hold[:, None, :] | hold[None, :, :]
            A = np.where(hj, 0.0, A)
            A[idx, idx] = np.where(hold, 1.0, A[idx, idx])
        delta = -spd_solve(A, g)
        Pn = P[rows] + delta.T
        if lo is not None:
            Pn = np.maximum(Pn, lo[rows])
            delta = (Pn - P[rows]).T
        rn, Jn = residuals(Pn, rows)
        new = (rn * rn).sum(1)
        # gain ratio: actual / predicted decrease of the sum of squares, whose
        # quadratic model is rss + 2gᵀδ + δᵀHδ (for the undamped, unprojected
        # step this equals δᵀHδ + 2λ·δᵀdiag(d)δ)
        Hd = (H * delta[None, :, :]).sum(1)
        pred = -2.0 * (g * delta).sum(0) - (delta * Hd).sum(0)
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = (cur - new) / pred
        cur_before = cur.copy()
        better = np.isfinite(new) & (new <= cur) & ~stop & ~(rho < 0)
        better &= _finite_per_arch(Jn)
        small = np.sqrt((delta**2).sum(0)) <= xtol * (np.sqrt((P[rows] ** 2).sum(1)) + xtol)
        if better.all():  # the common case: take the new arrays, no copying
            P[rows] = Pn
            r, J, cur = rn, Jn, new.copy()
        else:
            P[rows[better]] = Pn[better]
            # most steps are accepted: keep the new arrays, the rejected arches' old rows
            # copied into them (fewer rows to move than the other way round)
            worse = ~better
            rn[worse] = r[worse]
            Jn[:, worse] = J[:, worse]
            r, J = rn, Jn
            cur[better] = new[better]
        # Nielsen's damping update
        rho_c = np.clip(np.nan_to_num(rho, nan=0.0), 0.0, 1.0)
        shrink = np.maximum(1.0 / 3.0, 1.0 - (2.0 * rho_c - 1.0) ** 3)
        lam[rows] = np.where(better, np.maximum(lr * shrink, 1e-15), lr * nu[rows])
        nu[rows] = np.where(better, 2.0, nu[rows] * 2.0)
        iters[rows] += 1
        stuck = lam[rows] > 1e16
        # MINPACK's ftol test: actual and predicted relative decrease both below ftol
        actual = np.where(better, cur_before - cur, 0.0)
        # (pred ≥ 0: a projected step predicted to raise the sum is a failed step, not "flat")
        flat = (pred >= 0) & (pred <= ftol * cur_before) & (actual <= ftol * cur_before)
        flat &= ~(rho > 2.0)
        conv_now = stop | (better & small) | flat | (stuck & (cosine <= 1e-6))
        leave = conv_now | stuck
        if abandon is not None:
            run = abandon(P[rows], rows) & ~conv_now
            gave_up[rows[run]] = True
            leave |= run
        conv[rows[conv_now]] = True
        rss[rows] = cur
        if leave.any():
            jtj[rows[leave]] = _gram(J[:, leave]).transpose(2, 0, 1)
        if leave.any():
            keep = ~leave
            rows, r, J, cur = rows[keep], r[keep], J[:, keep], cur[keep]
    if rows.size:
        jtj[rows] = _gram(J).transpose(2, 0, 1)
    singular = np.zeros(m, bool)
    ok = np.isfinite(jtj).all(axis=(1, 2))
    if ok.any():
        # Cholesky pivots of the correlation form of J^T J: the fraction of each
        # column not explained by the others; ~0 means not identifiable
        Hs = np.ascontiguousarray(jtj[ok].transpose(1, 2, 0))
        dd = np.sqrt(np.maximum(np.einsum("kkm->km", Hs), 1e-300))
        C = Hs / (dd[:, None, :] * dd[None, :, :])
        _, piv = spd_solve(C, np.zeros((k, C.shape[2])), return_pivots=True)
        singular[np.flatnonzero(ok)] = ~(piv.min(axis=0) > SINGULAR)
    at_bound = held if lo is not None else np.zeros((m, k), bool)
    return LMResult(P, rss, conv, singular, gave_up, iters, jtj, at_bound)


def _full_hessian(
    residuals: ResidualFn, P: np.ndarray, rows: np.ndarray, g: np.ndarray
) -> np.ndarray:
    """Hessian of ½·rss (k, k, len(rows)) by forward differences of the gradient ``J^T r``.

    Step ``h_j = 1e-6·max(|p_j|, 1)``: the parameters are of order 1 in the
    normalised coordinates, and a smaller step would drown the difference in the
    gradient's rounding (~1e-10 near the parabola limit); the result is symmetrised.
    """
    k = P.shape[1]
    H = np.empty((k, k, len(rows)))
    for j in range(k):
        h = 1e-6 * np.maximum(np.abs(P[:, j]), 1.0)
        Pj = P.copy()
        Pj[:, j] += h
        rj, Jj = residuals(Pj, rows)
        H[:, j, :] = (_jtr(Jj, rj) - g) / h
    return 0.5 * (H + H.transpose(1, 0, 2))
