"""Generalised Procrustes superimposition of 2-D landmark configurations (numpy only).

The method of Gower (1975, *Psychometrika* 40:33–51) as Rohlf & Slice (1990, *Syst Zool*
39:40–59) and geomorph's ``gpagen`` apply it: every configuration is centred and scaled to
unit centroid size, then rotated onto the consensus (partial Procrustes fit: rotation only,
least squares), the consensus is recomputed as the mean of the rotated configurations and
rescaled to unit centroid size, until it changes by less than ``tol``; finally everything
is turned so that the consensus lies on its principal axes (``gpagen``'s ``PrinAxes``).
Reflections are not allowed (give configurations in one handedness, e.g. the anatomical
frame of :mod:`dentalkit.ceph`).

Points are complex numbers ``x + iy``: the rotation that brings a centred configuration
``z`` closest to the consensus ``m`` is ``exp(i·arg Σ conj(z)·m)``, one vectorised
expression for all configurations at once (no SVD per configuration). Absent points (NaN)
are left out of their configuration's centroid, size and fit, and of the consensus where
absent.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["Superimposition", "superimpose", "superimpose_inplace"]


@dataclass(frozen=True)
class Superimposition:
    """Result of :func:`superimpose`.

    Attributes
    ----------
    coords : numpy.ndarray
        ``(n, p)`` complex: aligned configurations (Procrustes shape coordinates, unit
        centroid size); NaN where a point is absent.
    consensus : numpy.ndarray
        ``(p,)`` complex: the mean shape, unit centroid size (NaN where absent everywhere).
    centroid_size : numpy.ndarray
        ``(n,)``: centroid size of each configuration in its input units (px or mm).
    distance : numpy.ndarray
        ``(n,)``: Procrustes distance of each configuration from the consensus (square
        root of the summed squared differences over its present points; unit-size
        units, as geomorph's ``plotOutliers``).
    rotation : numpy.ndarray
        ``(n,)`` complex of modulus 1: the rotation applied to each configuration.
    centre : numpy.ndarray
        ``(n,)`` complex: the centroid removed from each configuration (input units).
    iterations : int
    """

    coords: np.ndarray
    consensus: np.ndarray
    centroid_size: np.ndarray
    distance: np.ndarray
    rotation: np.ndarray
    centre: np.ndarray
    iterations: int


def _unit(z: np.ndarray) -> np.ndarray:
    """Scale a (p,) complex configuration to unit centroid size (NaN-aware)."""
    size = np.sqrt(np.nansum(np.abs(z) ** 2))
    return z / size if size > 0 else z


def superimpose(points: np.ndarray, *, max_iter: int = 10, tol: float = 1e-7) -> Superimposition:
    """Generalised Procrustes superimposition (centre, scale to unit size, rotate).

    Parameters
    ----------
    points : numpy.ndarray
        ``(n, p)`` complex (``x + iy``) or ``(n, p, 2)`` real configurations; NaN marks an
        absent point. Configurations with fewer than 2 points present are left unrotated
        (distance NaN).
    max_iter : int
        Most consensus updates (``gpagen`` stops at a handful; 3–4 usually suffice).
    tol : float
        Stop when the Procrustes sum of squares changes by less than ``tol`` × n.

    Returns
    -------
    Superimposition
    """
    z = np.asarray(points)
    if not np.iscomplexobj(z):
        z = z[..., 0] + 1j * z[..., 1]
    return superimpose_inplace(np.array(z, dtype=np.complex128), max_iter=max_iter, tol=tol)
    # (the public function works in double precision; qc.landmarks passes complex64)


def superimpose_inplace(z: np.ndarray, *, max_iter: int = 10, tol: float = 1e-7) -> Superimposition:
    """:func:`superimpose` of a complex (n, p) array that it may overwrite (no copy: the
    result's ``coords`` is ``z``; complex64 or complex128, sums in the array's precision).

    A configuration with absent points is fitted on the points it has: after its rotation
    it is scaled to the consensus's size over those points and moved onto their centroid
    (its own centroid and size, taken over fewer points, would otherwise shift it).
    """
    present = ~np.isnan(z)
    complete = bool(present.all())
    if not complete:
        z[~present] = 0  # absent points weigh nothing below; NaN again at the end
    count = present.sum(axis=1)
    centre = z.sum(axis=1) / np.maximum(count, 1)
    z -= centre[:, None]
    if not complete:
        z[~present] = 0
    size = np.sqrt(_squared_norms(z))
    usable = (count >= 2) & (size > 0)
    z *= (1.0 / np.where(usable, size, 1.0)).astype(z.real.dtype)[:, None]
    weight = usable.astype(z.real.dtype)  # unusable configurations leave the consensus alone
    gaps = np.flatnonzero(usable & (count < z.shape[1]))  # usable, with absent points
    present_gaps = present[gaps].astype(np.float64)
    n_present = (present & usable[:, None]).sum(axis=0).astype(np.float64)
    factor = weight.astype(np.complex128)  # ρ_s R_s: scale and rotation of each configuration
    offset = np.zeros(len(gaps), dtype=np.complex128)  # c_s of the configurations with gaps
    consensus = _consensus(_total(z, factor, gaps, offset, present_gaps), n_present)
    iterations = 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 (reported)
        m = np.nan_to_num(consensus)
        cross = np.conj(z @ np.conj(m).astype(z.dtype)).astype(np.complex128)  # Σ conj(z) m
        rotation = np.where(
            usable & (np.abs(cross) > 0), cross / np.maximum(np.abs(cross), 1e-300), 1.0 + 0j
        )
        factor = rotation * weight
        if len(gaps):  # size and centroid of the consensus over each one's present points
            k = present_gaps.sum(axis=1)
            offset = (present_gaps @ m) / k
            own = np.maximum(present_gaps @ np.abs(m) ** 2 - k * np.abs(offset) ** 2, 0.0)
            factor[gaps] *= np.sqrt(own)
        new = _consensus(_total(z, factor, gaps, offset, present_gaps), n_present)
        change = float(np.nanmax(np.abs(new - consensus))) if np.isfinite(new).any() else 0.0
        consensus = new
        if change < tol:
            break
    turn = _principal_axes(consensus)  # the frame: the consensus on its principal axes
    consensus = consensus * turn
    factor *= turn
    z *= factor.astype(z.dtype)[:, None]
    if len(gaps):
        z[gaps] += (offset * turn).astype(z.dtype)[:, None]
    m = np.nan_to_num(consensus)
    m2 = np.abs(m) ** 2
    # |a − m|² summed over each configuration's points: |a|² − 2 Re Σ a conj(m) + Σ |m|²
    own_size = np.abs(factor) ** 2  # Σ_p |ρ R z_sp|² (z has unit size)
    cross = (z @ np.conj(m).astype(z.dtype)).real.astype(np.float64)
    distance = own_size - 2 * cross + m2.sum()
    if len(gaps):
        a = z[gaps].astype(np.complex128)
        distance[gaps] = (present_gaps * np.abs(a - m[None, :]) ** 2).sum(axis=1)
    distance = np.sqrt(np.maximum(distance, 0.0))
    distance[~usable] = np.nan
    if not complete:
        z[~present] = np.nan
    return Superimposition(
        coords=z,
        consensus=consensus,
        centroid_size=np.where(usable, size, np.nan),
        distance=distance,
        rotation=np.where(usable, rotation if max_iter else 1.0 + 0j, 1.0 + 0j),
        centre=centre,
        iterations=iterations,
    )


def _principal_axes(consensus: np.ndarray) -> complex:
    """The rotation that puts the consensus's first principal axis along +x (its direction
    chosen so that the points' third moment along it is positive), as geomorph's
    ``gpagen(PrinAxes = TRUE)``: the superimposed coordinates then do not depend on how
    the cohort as a whole was turned."""
    c = consensus[np.isfinite(consensus)]
    if len(c) < 2:
        return 1.0 + 0j
    cov = np.cov(np.stack([c.real, c.imag]))
    _, vectors = np.linalg.eigh(cov)
    u = complex(vectors[0, -1], vectors[1, -1])
    proj = (c * np.conj(u)).real
    if np.sum(proj**3) < 0:
        u = -u
    return np.conj(u) / abs(u)


def _total(
    z: np.ndarray,
    factor: np.ndarray,
    gaps: np.ndarray,
    offset: np.ndarray,
    present_gaps: np.ndarray,
) -> np.ndarray:
    """Σ_s (ρ_s R_s z_sp + c_s at its present points): the numerator of the consensus."""
    total = (factor.astype(z.dtype) @ z).astype(np.complex128)
    if len(gaps):
        total += present_gaps.T @ offset
    return total


def _squared_norms(z: np.ndarray) -> np.ndarray:
    """Σ_p |z_sp|² per row, without an (n, p) temporary."""
    re, im = z.real, z.imag
    return (np.einsum("sp,sp->s", re, re) + np.einsum("sp,sp->s", im, im)).astype(np.float64)


def _consensus(total: np.ndarray, n: np.ndarray) -> np.ndarray:
    """Mean configuration (sum ``total`` over ``n`` present), centred, unit centroid size."""
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = np.where(n > 0, total / np.maximum(n, 1), np.nan + 0j)
    mean = mean - np.nanmean(mean) if np.isfinite(mean).any() else mean
    return _unit(mean)
