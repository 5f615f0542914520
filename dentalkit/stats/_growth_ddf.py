"""Satterthwaite degrees of freedom for the fixed effects of a growth model (private).

The t statistic of a contrast L'β̂ of a linear mixed model is referred to a t
distribution whose degrees of freedom come from Satterthwaite's (1946) moment match,
as lmerTest does for lme4 (Kuznetsova, Brockhoff & Christensen 2017; the derivation in
Christensen's note "Satterthwaite's method for degrees of freedom in linear mixed
models", lmerTestR ``pkg_notes``):

    ν = 2 f(φ̂)² / (∇f(φ̂)' A ∇f(φ̂)),    f(φ) = L' C(φ) L,

with C(φ) = (X'V(φ)⁻¹X)⁻¹ the covariance of β̂ as a function of the variance
parameters φ, and A = 2 H⁺ their asymptotic covariance, H the Hessian of the REML
(or ML) deviance −2ℓ in φ and H⁺ its Moore–Penrose inverse over the eigenvalues
above 1e-8 (lmerTest's rule). As in lmerTest, φ = (θ, σ): θ the lower-triangular
relative Cholesky factor of the random effects' covariance G = σ²ΛΛ' (lme4's
``theta``, column by column) and σ the residual SD; at a boundary (a variance at
zero) this parametrisation makes the component's derivatives vanish, as there.

Everything is computed analytically, per unit, with the model's own V_i = Z_iGZ_i' +
σ²I — no refit and no numerical differentiation: with τ = (the distinct elements of G,
σ²) V is linear in τ, so (P = V⁻¹ − V⁻¹XCX'V⁻¹, e = Py, V_j = ∂V/∂τ_j)

    ∂D/∂τ_j       = tr(P V_j) − e'V_j e
    ∂²D/∂τ_j∂τ_k  = −tr(P V_j P V_k) + 2 e'V_j P V_k e        (REML; W = V⁻¹ for ML)
    ∂C/∂τ_j       = C X'W V_j W X C

and the chain rule carries them to φ (the Hessian term Σ_k ∂D/∂τ_k ∂²τ_k/∂φ∂φ'
included, so the result does not depend on being exactly at the optimum).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: lmerTest's tolerance on the eigenvalues of the Hessian of the variance parameters.
EIGEN_TOL = 1e-8


@dataclass(frozen=True)
class Satterthwaite:
    """What a contrast's degrees of freedom need: C, its Jacobian in φ, and A = cov(φ)."""

    cov: np.ndarray  # (p, p)
    jac: np.ndarray  # (m, p, p): ∂C/∂φ_a
    acov: np.ndarray  # (m, m)
    dropped: int  # eigenvalues of H at or below the tolerance (not positive definite)

    def df(self, L: np.ndarray) -> np.ndarray:
        """Degrees of freedom of the contrasts in the rows of ``L`` (NaN if not formed)."""
        L = np.atleast_2d(np.asarray(L, dtype=float))
        f = np.einsum("ip,pq,iq->i", L, self.cov, L)
        g = np.einsum("ip,apq,iq->ia", L, self.jac, L)
        denom = np.einsum("ia,ab,ib->i", g, self.acov, g)
        with np.errstate(divide="ignore", invalid="ignore"):
            nu = 2.0 * f**2 / denom
        return np.where(np.isfinite(nu) & (nu > 0), nu, np.nan)


def _semidefinite_cholesky(m: np.ndarray) -> np.ndarray:
    """Lower-triangular L with LL' = m for a positive semi-definite m (zeros kept)."""
    q = m.shape[0]
    lo = np.zeros_like(m)
    for j in range(q):
        d = m[j, j] - lo[j, :j] @ lo[j, :j]
        lo[j, j] = np.sqrt(d) if d > 0 else 0.0
        for i in range(j + 1, q):
            r = m[i, j] - lo[i, :j] @ lo[j, :j]
            lo[i, j] = r / lo[j, j] if lo[j, j] > 0 else 0.0
    return lo


def _tril_units(q: int) -> list[tuple[int, int]]:
    """Positions of lme4's θ (and of the distinct elements of G): the lower triangle by column."""
    return [(i, j) for j in range(q) for i in range(j, q)]


def _blocks(groups: np.ndarray) -> list[np.ndarray]:
    """Row positions of the units, batched by the number of rows per unit (each (G_s, s))."""
    order = np.argsort(groups, kind="stable")
    g = groups[order]
    starts = np.flatnonzero(np.r_[True, g[1:] != g[:-1]])
    sizes = np.diff(np.r_[starts, len(g)])
    out = []
    for s in np.unique(sizes):
        first = starts[sizes == s]
        out.append(order[first[:, None] + np.arange(s)[None, :]])
    return out


def satterthwaite(
    y: np.ndarray,
    X: np.ndarray,
    Z: np.ndarray,
    groups: np.ndarray,
    beta: np.ndarray,
    cov_re: np.ndarray,
    scale: float,
    reml: bool = True,
) -> Satterthwaite:
    """The pieces of Satterthwaite's df at a fitted model (see the module docstring).

    ``cov_re`` is G on the scale of the data (statsmodels' ``cov_re``), ``scale`` σ²,
    ``groups`` integer unit codes of the rows of ``y``, ``X`` and ``Z``.
    """
    p, q = X.shape[1], Z.shape[1]
    units = _tril_units(q)
    m_g = len(units)
    m = m_g + 1  # τ: G's distinct elements, then σ²
    G = np.atleast_2d(np.asarray(cov_re, dtype=float))
    xwx = np.zeros((p, p))
    blocks = []
    for rows in _blocks(groups):
        Xb, Zb, yb = X[rows], Z[rows], y[rows]
        s = rows.shape[1]
        V = np.einsum("gsa,ab,gtb->gst", Zb, G, Zb) + scale * np.eye(s)
        W = np.linalg.inv(V)
        WX = W @ Xb
        xwx += np.einsum("gsp,gsq->pq", Xb, WX)
        # ∂V/∂τ_j: Z E_j Z' for G's elements, the identity for σ²
        dV = np.empty((m, *V.shape))
        for j, (a, b) in enumerate(units):
            outer = Zb[:, :, a, None] * Zb[:, None, :, b]
            dV[j] = outer + outer.transpose(0, 2, 1) if a != b else outer
        dV[m_g] = np.eye(s)
        blocks.append((W, WX, yb - Xb @ beta, dV))
    C = np.linalg.inv(xwx)
    Q = np.zeros((m, p, p))
    tr_wv = np.zeros(m)
    eve = np.zeros(m)
    svec = np.zeros((m, p))
    t1 = np.zeros((m, m))
    r_jk = np.zeros((m, m, p, p))
    fwf = np.zeros((m, m))
    for W, WX, resid, dV in blocks:
        e = np.einsum("gst,gt->gs", W, resid)
        U = dV @ WX  # (m, G, s, p): V_j W X
        Q += np.einsum("gsp,jgsq->jpq", WX, U)
        wv = W @ dV  # (m, G, s, s): W V_j
        tr_wv += np.einsum("jgss->j", wv)
        f = np.einsum("jgst,gt->jgs", dV, e)  # V_j e
        eve += np.einsum("gs,jgs->j", e, f)
        svec += np.einsum("gsp,jgs->jp", WX, f)
        t1 += np.einsum("jgab,kgba->jk", wv, wv)
        r_jk += np.einsum("jgsp,gst,kgtq->jkpq", U, W, U)
        fwf += np.einsum("jgs,gst,kgt->jk", f, W, f)
    cq = np.einsum("pr,jrq->jpq", C, Q)  # C Q_j
    dC = np.einsum("jpr,rq->jpq", cq, C)  # ∂C/∂τ_j = C Q_j C
    quad = fwf - svec @ C @ svec.T  # e'V_j P V_k e
    if reml:
        tr_pv = tr_wv - np.einsum("jpp->j", cq)
        tr_pvpv = t1 - 2.0 * np.einsum("pq,jkqp->jk", C, r_jk) + np.einsum("jpq,kqp->jk", cq, cq)
    else:
        tr_pv, tr_pvpv = tr_wv, t1
    grad_tau = tr_pv - eve
    hess_tau = -tr_pvpv + 2.0 * quad
    # φ = (θ, σ): G = σ² ΛΛ', Λ lower triangular (θ by column); τ = (vech G, σ²)
    sigma = float(np.sqrt(scale))
    lam = _semidefinite_cholesky(G / scale)
    unit_mats = []
    for a, b in units:
        e_ab = np.zeros((q, q))
        e_ab[a, b] = 1.0
        unit_mats.append(e_ab)
    dG = np.empty((m, q, q))  # ∂G/∂φ_a
    d2G = np.zeros((m, m, q, q))  # ∂²G/∂φ_a∂φ_b
    for a, ea in enumerate(unit_mats):
        dG[a] = scale * (ea @ lam.T + lam @ ea.T)
        for b, eb in enumerate(unit_mats):
            d2G[a, b] = scale * (ea @ eb.T + eb @ ea.T)
        d2G[a, m_g] = d2G[m_g, a] = 2.0 * sigma * (ea @ lam.T + lam @ ea.T)
    dG[m_g] = 2.0 * sigma * (lam @ lam.T)
    d2G[m_g, m_g] = 2.0 * (lam @ lam.T)
    rows_g = np.array([i for i, _ in units])
    cols_g = np.array([j for _, j in units])
    J = np.zeros((m, m))  # ∂τ_j/∂φ_a
    J[:m_g] = dG[:, rows_g, cols_g].T
    J[m_g, m_g] = 2.0 * sigma
    d2tau = np.zeros((m, m, m))  # ∂²τ_k/∂φ_a∂φ_b
    d2tau[:m_g] = d2G[:, :, rows_g, cols_g].transpose(2, 0, 1)
    d2tau[m_g, m_g, m_g] = 2.0
    hess = J.T @ hess_tau @ J + np.einsum("k,kab->ab", grad_tau, d2tau)
    hess = (hess + hess.T) / 2.0
    vals, vecs = np.linalg.eigh(hess)
    pos = vals > EIGEN_TOL
    h_inv = (vecs[:, pos] / vals[pos]) @ vecs[:, pos].T
    jac = np.einsum("jpq,ja->apq", dC, J)
    return Satterthwaite(cov=C, jac=jac, acov=2.0 * h_inv, dropped=int((~pos).sum()))
