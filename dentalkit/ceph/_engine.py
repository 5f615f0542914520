"""The one vectorized evaluator: every measure of every session in one pass per kind.

Input: the sessions × landmarks × xy coordinates in the *anatomical frame* (anterior /
patient's left = +x, superior = +y; see :mod:`dentalkit.ceph._frame`), stored
landmark-major as ``(2, n_landmarks, n_sessions)``, NaN where a landmark is absent.
Output: an ``(n_measures, n_sessions)`` array.

Each geometric kind is one numpy expression over all sessions and all measures of
that kind at once (fancy indexing gathers the points); derived kinds
(combination, ratio, asymmetry) are evaluated level by level on the value array.
There is no per-measure branch: a measure is a row of index arrays.

Formulas (u, v vectors; × the 2-D cross product, · the dot product):

- ``angle3`` P V Q: ∠(P − V, Q − V) = atan2(|u × v|, u · v), degrees in [0, 180]
- ``vector_angle`` A B C D: ∠(B − A, D − C), degrees in [0, 180]
- ``line_angle`` A B C D: min(θ, 180 − θ) with θ = ∠(B − A, D − C), in [0, 90]
- ``signed_angle`` A B C D: sign · atan2(u × v, u · v), u = B − A, v = D − C;
  counter-clockwise positive in the anatomical frame, degrees in (−180, 180]
- ``distance`` A B: |B − A|
- ``point_line_distance`` P A B: sign · ((B − A) × (P − A)) / |B − A| (+ = left of
  the directed line A → B in the anatomical frame)
- ``along`` P Q A B: sign · (P − Q) · (B − A) / |B − A|
- ``combination``: Σ coefᵢ · valueᵢ (coefficients ±1 from the operand signs)
- ``ratio`` a b: 100 · a / b
- ``asymmetry`` a b: 100 · (a − b) / (a + b)

A zero-length direction (coincident landmarks) gives NaN, never a silent 0.
"""

from __future__ import annotations

import numpy as np

from dentalkit.ceph._catalog import CompiledView

__all__ = ["evaluate"]


def _cross(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return u[0] * v[1] - u[1] * v[0]


def _dot(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    return u[0] * v[0] + u[1] * v[1]


def _norm(u: np.ndarray) -> np.ndarray:
    return np.hypot(u[0], u[1])


def _nonzero(n: np.ndarray) -> np.ndarray:
    return np.where(n > 0, n, np.nan)


def _unsigned_angle(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    deg = np.degrees(np.arctan2(np.abs(_cross(u, v)), _dot(u, v)))
    degenerate = (_norm(u) == 0) | (_norm(v) == 0)
    return np.where(degenerate, np.nan, deg)


def _signed_angle(u: np.ndarray, v: np.ndarray) -> np.ndarray:
    deg = np.degrees(np.arctan2(_cross(u, v), _dot(u, v)))
    degenerate = (_norm(u) == 0) | (_norm(v) == 0)
    return np.where(degenerate, np.nan, deg)


def _geometric(kind: str, Q: np.ndarray, idx: np.ndarray, sign: np.ndarray) -> np.ndarray:
    """Evaluate all measures of one kind: Q (2, p, s), idx (m, k) → (m, s)."""
    P = [Q[:, idx[:, j], :] for j in range(idx.shape[1])]  # each (2, m, s)
    sign = sign[:, None]
    if kind == "angle3":
        return _unsigned_angle(P[0] - P[1], P[2] - P[1])
    if kind == "vector_angle":
        return _unsigned_angle(P[1] - P[0], P[3] - P[2])
    if kind == "line_angle":
        theta = _unsigned_angle(P[1] - P[0], P[3] - P[2])
        return np.minimum(theta, 180.0 - theta)
    if kind == "signed_angle":
        return sign * _signed_angle(P[1] - P[0], P[3] - P[2])
    if kind == "distance":
        return _norm(P[1] - P[0])
    if kind == "point_line_distance":
        d = P[2] - P[1]
        return sign * _cross(d, P[0] - P[1]) / _nonzero(_norm(d))
    if kind == "along":
        d = P[3] - P[2]
        return sign * _dot(P[0] - P[1], d) / _nonzero(_norm(d))
    raise ValueError(f"unknown geometric kind {kind!r}")  # catalogue validation prevents this


def _derived(kind: str, V: np.ndarray, op_idx: np.ndarray, coef: np.ndarray) -> np.ndarray:
    ops = V[op_idx]  # (m, k, s)
    if kind == "combination":
        return np.einsum("mks,mk->ms", ops, coef)
    if kind == "ratio":
        return 100.0 * ops[:, 0] / np.where(ops[:, 1] != 0, ops[:, 1], np.nan)
    if kind == "asymmetry":
        total = ops[:, 0] + ops[:, 1]
        return 100.0 * (ops[:, 0] - ops[:, 1]) / np.where(total != 0, total, np.nan)
    raise ValueError(f"unknown derived kind {kind!r}")


def evaluate(
    coords: np.ndarray, compiled: CompiledView, length_scale: np.ndarray | None = None
) -> np.ndarray:
    """Evaluate every compiled measure for every session.

    Parameters
    ----------
    coords : numpy.ndarray
        ``(2, len(compiled.landmarks), n_sessions)`` in the anatomical frame.
    compiled : CompiledView
    length_scale : numpy.ndarray, optional
        Per-session factor applied to geometric length measures before derived
        measures are formed (``mm_per_px``); ``None`` keeps pixels.

    Returns
    -------
    numpy.ndarray
        ``(len(compiled.ids), n_sessions)`` float64, NaN where a needed landmark is
        absent or the geometry is degenerate.
    """
    n_s = coords.shape[2]
    if len(compiled.derived_points):
        members = compiled.derived_points
        valid = members >= 0
        weights = valid / valid.sum(axis=1, keepdims=True)
        gathered = coords[:, np.where(valid, members, 0), :]  # (2, d, k, s)
        # padded slots carry weight 0; a missing member makes the point missing (NaN)
        gathered = np.where(valid[None, :, :, None], gathered, 0.0)
        derived_pts = np.einsum("cdks,dk->cds", gathered, weights)
        Q = np.concatenate([coords, derived_pts], axis=1)
    else:
        Q = coords
    V = np.full((len(compiled.ids) + 1, n_s), np.nan)
    V[-1] = 0.0  # padding row for combination operands
    for kind, (cols, idx, sign) in compiled.geometric.items():
        V[cols] = _geometric(kind, Q, idx, sign)
    if length_scale is not None:
        rows = np.flatnonzero(compiled.is_length)
        V[rows] *= np.asarray(length_scale, dtype=float)[None, :]
    for level in compiled.derived:
        for kind, cols, op_idx, coef in level:
            V[cols] = _derived(kind, V, op_idx, coef)
    return V[:-1]
