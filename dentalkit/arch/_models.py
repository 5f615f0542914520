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
    return Derivs(a * (ch - 1.0), sh, ch / a, (ch - 1.0 - z * sh,), (-z * ch / a,))


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
