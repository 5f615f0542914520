"""Arch-form models: each a formula in canonical coordinates, declared once.

Every model is a curve ``y = f(x)`` in the canonical frame (origin at the
incisal point, midline on the y-axis, +y posterior, see ``docs/arch.md``) with
its vertex at the origin: ``f(0) = 0``. Parameters have lengths in the unit of
the coordinates (px or mm); polynomial coefficients have unit
``length^(1 − power)``.

Each record gives the formula, the literature reference, the parameter names
(the fit table's columns), how each parameter scales with length (used to fit
in normalised coordinates), and vectorized ``f``, ``∂f/∂x`` and the
derivatives the fits need, over arrays of shape ``(m, N)`` with parameters of
shape ``(m, k)``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import NamedTuple

import numpy as np

Array = np.ndarray
#: Exponent of Braun's beta function.
BETA_EXPONENT = 0.8
#: Braun et al.'s constant 3.0314 is 4**0.8 = 3.031433…, so that y(0) = D.
BETA_CONSTANT = 4.0**BETA_EXPONENT
#: Floor of (1 − (2x/W)²) in the beta derivatives (they are infinite at x = ±W/2).
_BETA_FLOOR = 1e-12
_LOG_FLOOR = float(np.log(_BETA_FLOOR))
#: Largest |x/a| fed to cosh (beyond, the catenary is infinite for our purposes).
_COSH_MAX = 700.0


class Derivs(NamedTuple):
    """A model and its derivatives at x (arrays shaped like x; tuples: one per parameter)."""

    f: Array
    d1: Array  #: ∂f/∂x
    d2: Array  #: ∂²f/∂x²
    dp: tuple[Array, ...]  #: ∂f/∂p_j
    d1p: tuple[Array, ...]  #: ∂²f/∂x∂p_j


@dataclass(frozen=True, slots=True)
class ArchModel:
    """One arch-form model (see ``docs/arch.md`` for the full statement).

    Attributes
    ----------
    name : str
        Key used by :func:`dentalkit.arch.fit` (``"catenary"``).
    params : tuple of str
        Shape parameters, in the order of the arrays; also the fit table's columns.
    length_power : tuple of int
        Power of length in each parameter's unit (``a`` → 1, ``c4`` → −3).
    formula : str
        The curve in canonical coordinates.
    reference : str
        Where the model comes from.
    linear_powers : tuple of int or None
        For models linear in their parameters: the powers of x of the basis.
    f, dfdx : callable
        ``f(x, P)`` and ``∂f/∂x (x, P)`` for x of shape (m, N) and parameters
        P of shape (m, k).
    derivs : callable
        ``derivs(x, P) -> Derivs``: f with its first and second x-derivatives
        and the parameter derivatives of f and of ∂f/∂x (used by the fits).
    """

    name: str
    params: tuple[str, ...]
    length_power: tuple[int, ...]
    formula: str
    reference: str
    linear_powers: tuple[int, ...] | None
    f: Callable[[Array, Array], Array]
    dfdx: Callable[[Array, Array], Array]
    derivs: Callable[[Array, Array], Derivs]

    @property
    def k(self) -> int:
        """Number of shape parameters."""
        return len(self.params)


def _p(P: Array, j: int) -> Array:
    return P[..., j, None]


# --- even polynomials: y = Σ c_q x^q ------------------------------------------------


def _powers(x, top: int) -> dict[int, Array]:
    """x**q for q = 0 … top, by multiplication."""
    out = {0: np.ones_like(x), 1: x}
    for q in range(2, top + 1):
        out[q] = out[q - 1] * x
    return out


def _poly(powers: tuple[int, ...]):
    top = max(powers)

    def f(x, P):
        xp = _powers(x, top)
        return sum(_p(P, j) * xp[q] for j, q in enumerate(powers))

    def dfdx(x, P):
        xp = _powers(x, top)
        return sum(q * _p(P, j) * xp[q - 1] for j, q in enumerate(powers))

    def derivs(x, P):
        xp = _powers(x, top)
        c = [_p(P, j) for j in range(len(powers))]
        return Derivs(
            sum(cj * xp[q] for cj, q in zip(c, powers, strict=True)),
            sum(q * cj * xp[q - 1] for cj, q in zip(c, powers, strict=True)),
            sum(q * (q - 1) * cj * xp[q - 2] for cj, q in zip(c, powers, strict=True)),
            tuple(xp[q] for q in powers),
            tuple(q * xp[q - 1] for q in powers),
        )

    return f, dfdx, derivs


# --- catenary: y = a (cosh(x/a) − 1) -------------------------------------------------


def _cat_z(x, P):
    return np.clip(x / _p(P, 0), -_COSH_MAX, _COSH_MAX)


def _cat_f(x, P):
    return _p(P, 0) * (np.cosh(_cat_z(x, P)) - 1.0)


def _cat_dfdx(x, P):
    return np.sinh(_cat_z(x, P))


def _cat_derivs(x, P):
    a = _p(P, 0)
    z = _cat_z(x, P)
    ch, sh = np.cosh(z), np.sinh(z)
    chm1 = ch - 1.0
    return Derivs(a * chm1, sh, ch / a, (chm1 - z * sh,), (-z * ch / a,))


# --- Braun's beta function in the canonical frame ------------------------------------
# Braun: y_B = 3.0314·D·[(1/2 + x/W)(1/2 − x/W)]^0.8, origin midway between the molars,
# incisors at y_B = D. Canonical (incisal point at 0, +y posterior): y = D − y_B, i.e.
# y = D·(1 − g^e) with g = 1 − u², u = 2x/W, e = 0.8, for |x| < W/2; y = D beyond
# (a continuation, flagged as out_of_domain by the fit when points lie there).
# Derivatives (e = 0.8):
#   f'  = 4eDu·g^(e−1)/W            f'' = 8eD·g^(e−2)·(1 + (1 − 2e)u²)/W²
#   ∂f/∂D = 1 − g^e                 ∂f/∂W = −2eDu²·g^(e−1)/W
#   ∂f'/∂D = 4eu·g^(e−1)/W          ∂f'/∂W = −8eDu·g^(e−2)·(1 − eu²)/W²
# with g floored at 1e-12 in the negative powers (they are infinite at x = ±W/2).


def _beta_parts(x, P):
    D, W = _p(P, 0), _p(P, 1)
    u = 2.0 * x / W
    g = 1.0 - u * u
    inside = g > 0
    lg = np.log(np.where(inside, g, 1.0))
    ge = np.where(inside, np.exp(BETA_EXPONENT * lg), 0.0)
    lgf = np.maximum(lg, _LOG_FLOOR)
    gm1 = np.where(inside, np.exp((BETA_EXPONENT - 1.0) * lgf), 0.0)
    return D, W, u, inside, ge, gm1, lgf


def _beta_f(x, P):
    D, _, _, _, ge, _, _ = _beta_parts(x, P)
    return D * (1.0 - ge)


def _beta_dfdx(x, P):
    D, W, u, _, _, gm1, _ = _beta_parts(x, P)
    return 4.0 * BETA_EXPONENT * D * u * gm1 / W


def _beta_derivs(x, P):
    e = BETA_EXPONENT
    D, W, u, inside, ge, gm1, lgf = _beta_parts(x, P)
    gm2 = np.where(inside, np.exp((e - 2.0) * lgf), 0.0)
    u2 = u * u
    return Derivs(
        D * (1.0 - ge),
        4.0 * e * D * u * gm1 / W,
        8.0 * e * D * gm2 * (1.0 + (1.0 - 2.0 * e) * u2) / (W * W),
        (1.0 - ge, -2.0 * e * D * u2 * gm1 / W),
        (4.0 * e * u * gm1 / W, -8.0 * e * D * u * gm2 * (1.0 - e * u2) / (W * W)),
    )


class Foot(NamedTuple):
    """Exact signed distance from points to a curve and what its Jacobian needs."""

    d: Array  #: signed distance (+ on the +y / concave side)
    nx: Array  #: ∂d/∂x' of the point
    ny: Array  #: ∂d/∂y' of the point
    dcx: tuple[Array, ...]  #: ∂C_x/∂p_j at the foot point (curve point held at its parameter)
    dcy: tuple[Array, ...]  #: ∂C_y/∂p_j


def _newton_1d(t, lo, hi, point, x, y, iterations):
    """Safeguarded Newton minimisation of |C(t) − (x, y)|² over t ∈ [lo, hi], per point.

    ``point(t, i)`` returns (C_x, C_y, C_x', C_y', C_x'', C_y'') for the points
    ``i``. Gauss–Newton replaces Newton where its model is not convex; a step is
    taken only if it does not increase the distance (else it is shortened 4×).
    Points leave the iteration once an accepted step is below 1e-15 (relative)
    or their step has shrunk to nothing, so the work falls with convergence.
    """
    all_i = np.arange(t.size)
    cx, cy, *_ = point(t, all_i)
    cur = (cx - x) ** 2 + (cy - y) ** 2
    alpha = np.ones_like(t)
    active = all_i
    for _ in range(iterations):
        if active.size == 0:
            break
        i = active
        ti, ai = t[i], alpha[i]
        cx, cy, dx, dy, ddx, ddy = point(ti, i)
        ex, ey = cx - x[i], cy - y[i]
        g2 = dx * dx + dy * dy
        phi = dx * ex + dy * ey
        dphi = g2 + ddx * ex + ddy * ey
        den = np.where(dphi > 0.2 * g2, dphi, g2)
        tn = np.clip(ti - ai * phi / np.maximum(den, 1e-300), lo, hi)
        cxn, cyn, *_ = point(tn, i)
        dn = (cxn - x[i]) ** 2 + (cyn - y[i]) ** 2
        take = dn <= cur[i]
        step = np.abs(tn - ti)
        t[i] = np.where(take, tn, ti)
        cur[i] = np.where(take, dn, cur[i])
        alpha[i] = np.where(take, np.minimum(1.0, 2.0 * ai), 0.25 * ai)
        done = (take & (step <= 1e-15 * (1.0 + np.abs(tn)))) | (alpha[i] < 1e-12)
        active = i[~done]
    return t, cur


def beta_foot(xp: Array, yp: Array, P: Array, iterations: int = 12) -> Foot:
    """Exact distance from points (x', y') to Braun's beta curve, ends included.

    The curve has an infinite slope and an infinite curvature at its ends
    (x = ±W/2, y = D), so no single parametrisation is regular everywhere. The
    foot point is searched twice, by safeguarded Newton: over u = 2x/W ∈ [−1, 1]
    (regular on the flat front) and, on the point's side b = sign(x'), over the
    depth z = 1 − y/D ∈ [0, 1], C(z) = (b·W/2·√(1 − z^{1/e}), D·(1 − z))
    (regular at the end, which is z = 0). The nearer of the two feet is kept. By
    the envelope theorem the derivatives of the distance are n·∂P/∂q − n·∂C/∂p
    at the foot, with n the unit vector from the foot to the point (the curve
    normal when the point is on the curve); ∂C/∂p is the same in both
    parametrisations (∂C/∂D = (0, 1 − g^e), ∂C/∂W = (u/2, 0)).
    """
    e = BETA_EXPONENT
    shape = np.broadcast_shapes(np.shape(xp), np.shape(yp), np.shape(_p(P, 0)))
    X = np.broadcast_to(xp, shape).ravel()
    Y = np.broadcast_to(yp, shape).ravel()
    Dv = np.broadcast_to(_p(P, 0), shape).ravel()
    Hv = np.broadcast_to(_p(P, 1) / 2.0, shape).ravel()
    side = np.where(X >= 0, 1.0, -1.0)
    with np.errstate(invalid="ignore", divide="ignore", over="ignore"):

        def by_u(u, i):
            D, h = Dv[i], Hv[i]
            g = np.clip(1.0 - u * u, 0.0, None)
            lg = np.log(np.maximum(g, 1e-300))
            ge1 = np.where(g > 0, np.exp((e - 1.0) * lg), 0.0)
            ge = g * ge1
            ge2 = np.where(g > 0, ge1 / np.maximum(g, 1e-300), 0.0)
            dy = 2.0 * e * D * u * ge1
            ddy = 2.0 * e * D * (ge1 - 2.0 * (e - 1.0) * u * u * ge2)
            zero = np.zeros_like(u)
            return h * u, D * (1.0 - ge), h, dy, zero, ddy

        def by_z(z, i):
            D, h, b = Dv[i], Hv[i], side[i]
            zz = np.clip(z, 0.0, 1.0)
            lz = np.log(np.maximum(zz, 1e-300))
            zi1 = np.where(zz > 0, np.exp((1.0 / e - 1.0) * lz), 0.0)  # z^(1/e − 1)
            zi = zz * zi1  # z^(1/e)
            zi2 = np.where(zz > 0, zi1 / np.maximum(zz, 1e-300), 0.0)  # z^(1/e − 2)
            q = np.maximum(1.0 - zi, 1e-300)
            r = np.sqrt(q)
            dq = -zi1 / e
            ddq = -(1.0 / e) * (1.0 / e - 1.0) * zi2
            dx = b * h * dq / (2.0 * r)
            ddx = b * h * (ddq / (2.0 * r) - dq * dq / (4.0 * q * r))
            zero = np.zeros_like(z)
            return b * h * r, D * (1.0 - zz), dx, -D, ddx, zero

        u0 = np.clip(X / Hv, -1.0 + 1e-9, 1.0 - 1e-9)
        u, du = _newton_1d(u0, -1.0, 1.0, by_u, X, Y, iterations)
        z0 = np.clip(1.0 - Y / Dv, 0.0, 1.0 - 1e-9)
        z, dz = _newton_1d(z0, 0.0, 1.0, by_z, X, Y, iterations)
        idx = np.arange(X.size)
        use_z = dz < du
        cxu, cyu, txu, tyu, *_ = by_u(u, idx)
        cxz, cyz, txz, tyz, *_ = by_z(z, idx)
        cx, cy = np.where(use_z, cxz, cxu), np.where(use_z, cyz, cyu)
        # tangent oriented with increasing x (z decreases with x on the right branch)
        tx = np.where(use_z, -side * txz, txu)
        ty = np.where(use_z, -side * tyz, tyu)
        tn = np.sqrt(tx * tx + ty * ty)
        ok_t = tn > 0
        nux = np.where(ok_t, -ty / np.where(ok_t, tn, 1.0), -side)
        nuy = np.where(ok_t, tx / np.where(ok_t, tn, 1.0), 0.0)
        vx, vy = X - cx, Y - cy
        dist = np.sqrt(vx * vx + vy * vy)
        sigma = np.where(nux * vx + nuy * vy < 0, -1.0, 1.0)
        far = dist > 0
        dd = np.where(far, dist, 1.0)
        nx = np.where(far, sigma * vx / dd, nux)
        ny = np.where(far, sigma * vy / dd, nuy)
        d = sigma * dist
        uf = cx / Hv  # u at the foot
        dcy_dd = cy / Dv  # ∂C_y/∂D = 1 − g^e at the foot
    zeros = np.zeros(shape)

    def back(a):
        return a.reshape(shape)

    return Foot(back(d), back(nx), back(ny), (zeros, back(uf) / 2.0), (back(dcy_dd), zeros))


_RECORDS = (
    ArchModel(
        "catenary",
        ("a",),
        (1,),
        "y = a·(cosh(x/a) − 1)",
        "MacConaill MA, Scher EA. The ideal form of the human dental arcade, with some "
        "prosthetic application. Dent Rec 1949;69:285-302",
        None,
        _cat_f,
        _cat_dfdx,
        _cat_derivs,
    ),
    ArchModel(
        "beta",
        ("depth", "width"),
        (1, 1),
        "y = D·(1 − (1 − (2x/W)²)^0.8) for |x| < W/2 "
        "(Braun's y = 3.0314·D·[(1/2 + x/W)(1/2 − x/W)]^0.8 moved to the incisal origin: y = D − y_Braun)",
        "Braun S, Hnat WP, Fender DE, Legan HL. The form of the human dental arch. "
        "Angle Orthod 1998;68(1):29-36",
        None,
        _beta_f,
        _beta_dfdx,
        _beta_derivs,
    ),
    ArchModel(
        "poly4",
        ("c2", "c4"),
        (-1, -3),
        "y = c2·x² + c4·x⁴",
        "Even (symmetric) fourth-order polynomial; AlHarbi S, Alkofide EA, AlMadi A. "
        "Mathematical analyses of dental arch curvature in normal occlusion. "
        "Angle Orthod 2008;78(2):281-287",
        (2, 4),
        *_poly((2, 4)),
    ),
    ArchModel(
        "poly6",
        ("c2", "c6"),
        (-1, -5),
        "y = c6·x⁶ + c2·x²  (Noroozi's Y = A·X⁶ + B·X²: A = c6, B = c2)",
        "Noroozi H, Hosseinzadeh Nik T, Saeeda R. The dental arch form revisited. "
        "Angle Orthod 2001;71(5):386-389",
        (2, 6),
        *_poly((2, 6)),
    ),
    ArchModel(
        "parabola",
        ("c2",),
        (-1,),
        "y = c2·x²",
        "Parabola with its vertex at the incisal point (classical arch-form model; "
        "see e.g. the review in AlHarbi et al. 2008)",
        (2,),
        *_poly((2,)),
    ),
)

#: The arch-form models by name, in a fixed order (read-only).
MODELS: MappingProxyType[str, ArchModel] = MappingProxyType({m.name: m for m in _RECORDS})

#: Every shape-parameter column of the fit table, in a fixed order.
PARAM_COLUMNS: tuple[str, ...] = ("a", "depth", "width", "c2", "c4", "c6")
