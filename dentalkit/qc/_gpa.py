"""Generalised Procrustes superimposition of 2-D landmark configurations (numpy only).

The method of Gower (1975, *Psychometrika* 40:33–51) as Rohlf & Slice (1990, *Syst Zool*
39:40–59) and geomorph's ``gpagen`` apply it: every configuration is centred and scaled to
unit centroid size, then rotated onto the consensus (partial Procrustes fit: rotation only,
least squares), the consensus is recomputed as the mean of the rotated configurations and
rescaled to unit centroid size, until the Procrustes sum of squares changes by less than
``tol``. Reflections are not allowed (give configurations in one handedness, e.g. the
anatomical frame of :mod:`dentalkit.ceph`).

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
    result's ``coords`` is ``z``; complex64 or complex128, sums in the array's precision)."""
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
    n_present = present.sum(axis=0).astype(np.float64)
    gaps = np.flatnonzero(count < z.shape[1])  # configurations with absent points
    own_size = np.where(usable, 1.0, np.where(size > 0, size**2, 0.0))  # Σ_p |z_sp|² now
    ss_z = float(own_size.sum())
    rotation = np.ones(len(z), dtype=z.dtype)
    consensus = _consensus((rotation @ z).astype(np.complex128), n_present)
    previous = np.inf
    iterations = 0
    for iterations in range(1, max_iter + 1):  # noqa: B007 (reported)
        m = np.where(np.isnan(consensus), 0, consensus).astype(z.dtype)
        cross = np.conj(z @ np.conj(m)).astype(np.complex128)  # Σ_p conj(z_sp) m_p, all at once
        rotation = np.where(usable & (np.abs(cross) > 0), cross / np.abs(cross), 1.0 + 0j)
        total = (rotation.astype(z.dtype) @ z).astype(np.complex128)  # Σ_s rotation_s z_sp
        consensus = _consensus(total, n_present)
        c = np.where(np.isnan(consensus), 0, consensus)
        # Σ_s Σ_p |rotation_s z_sp − c_p|² over present points, without an (n, p) array
        ss = ss_z - 2 * float(np.real(np.conj(c) @ total)) + float(n_present @ np.abs(c) ** 2)
        if abs(previous - ss) < tol * max(len(z), 1):
            break
        previous = ss
    z *= rotation.astype(z.dtype)[:, None]
    c = np.where(np.isnan(consensus), 0, consensus)
    c2 = np.abs(c) ** 2
    own = np.full(len(z), c2.sum())  # Σ |c_p|² over each configuration's present points
    own[gaps] = present[gaps] @ c2
    cross = (z @ np.conj(c).astype(z.dtype)).real.astype(np.float64)
    distance = np.sqrt(np.maximum(own_size - 2 * cross + own, 0.0))  # rotations keep sizes
    distance[~usable] = np.nan
    if not complete:
        z[~present] = np.nan
    return Superimposition(
        coords=z,
        consensus=consensus,
        centroid_size=np.where(usable, size, np.nan),
        distance=distance,
        rotation=rotation,
        centre=centre,
        iterations=iterations,
    )


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
