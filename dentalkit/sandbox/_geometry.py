"""Small forward-geometry helpers of the simulator (private; no analysis code).

Only what the simulator needs to *build* shapes: unit vectors, polyline
resampling, corner cutting, polygon area, and the image transform that maps
anatomical millimetres to image pixels.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

__all__ = [
    "ImageTransform",
    "chaikin",
    "place",
    "place_points",
    "resample",
    "shoelace_area",
    "unit",
]


def unit(deg: float) -> np.ndarray:
    """Unit vector at ``deg`` degrees counter-clockwise from +x (y-up frame)."""
    r = math.radians(deg)
    return np.array([math.cos(r), math.sin(r)])


def resample(poly: np.ndarray, n: int, *, inner: bool = True) -> np.ndarray:
    """``n`` points equally spaced by arc length along an open polyline.

    With ``inner`` the points sit at fractions ``(k + 0.5) / n`` of the length
    (never on the end points), otherwise at ``k / (n - 1)``.
    """
    seg = np.hypot(*np.diff(poly, axis=0).T)
    cum = np.concatenate([[0.0], np.cumsum(seg)])
    frac = (np.arange(n) + 0.5) / n if inner else np.linspace(0.0, 1.0, n)
    s = frac * cum[-1]
    return np.column_stack([np.interp(s, cum, poly[:, 0]), np.interp(s, cum, poly[:, 1])])


def chaikin(poly: np.ndarray, iterations: int = 2) -> np.ndarray:
    """Chaikin corner cutting of an open polyline (end points kept)."""
    p = poly
    for _ in range(iterations):
        q = 0.75 * p[:-1] + 0.25 * p[1:]
        r = 0.25 * p[:-1] + 0.75 * p[1:]
        mid = np.empty((2 * len(q), 2))
        mid[0::2] = q
        mid[1::2] = r
        p = np.vstack([p[:1], mid, p[-1:]])
    return p


def shoelace_area(poly: np.ndarray) -> float:
    """Area of a simple polygon (vertices in order, not repeated), by the shoelace formula."""
    x, y = poly[:, 0], poly[:, 1]
    return 0.5 * abs(float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1))))


@dataclass(frozen=True)
class ImageTransform:
    """Map anatomical millimetres to image pixels.

    ``pixel = R(rotation_deg) @ (F @ p_mm / mm_per_px) + translation_px`` where
    ``F = diag(flip_x, flip_y)`` (each ±1) turns the anatomical frame into
    image axes (x right, y down) and ``R(θ) = [[cos θ, −sin θ], [sin θ, cos θ]]``
    rotates in image coordinates (positive θ turns clockwise on screen, since
    y points down).
    """

    mm_per_px: float
    rotation_deg: float
    flip_x: int
    flip_y: int
    translation_px: tuple[float, float]
    width: int
    height: int

    def __post_init__(self) -> None:
        # computed once: the transposed linear part (points are row vectors) and the offset
        m = _linear_part(self.mm_per_px, self.rotation_deg, self.flip_x, self.flip_y)
        t = np.array(self.translation_px, dtype=float)
        t.flags.writeable = False
        object.__setattr__(self, "_linear_t", m.T)
        object.__setattr__(self, "_offset", t)

    def matrix(self) -> np.ndarray:
        """The 2×2 linear part ``R @ F / mm_per_px``."""
        return self._linear_t.T.copy()

    def linear(self, points_mm: np.ndarray) -> np.ndarray:
        """The linear part only: ``points_mm @ matrix().T`` (no translation)."""
        return points_mm @ self._linear_t

    def apply(self, points_mm: np.ndarray) -> np.ndarray:
        """Pixels of an ``(n, 2)`` array of anatomical points (mm)."""
        return points_mm @ self._linear_t + self._offset

    def invert(self, points_px: np.ndarray) -> np.ndarray:
        """Anatomical millimetres of an ``(n, 2)`` array of pixels."""
        return (np.asarray(points_px) - np.asarray(self.translation_px)) @ np.linalg.inv(
            self.matrix()
        ).T

    def to_dict(self) -> dict[str, Any]:
        return {
            "mm_per_px": self.mm_per_px,
            "rotation_deg": self.rotation_deg,
            "flip": [self.flip_x, self.flip_y],
            "translation_px": list(self.translation_px),
            "image_size_px": [self.width, self.height],
            "formula": "pixel = R(rotation_deg) @ (diag(flip) @ p_mm / mm_per_px) + translation_px",
        }


@lru_cache(maxsize=64)  # a transform is placed, then built with the same linear part
def _linear_part(mm_per_px: float, rotation_deg: float, flip_x: int, flip_y: int) -> np.ndarray:
    """``R(rotation_deg) @ diag(flip_x, flip_y) / mm_per_px`` (read-only 2×2).

    Written out element by element as the matrix product computes it: each entry
    is the sum of two products, one of them with a zero of ``diag``.
    """
    r = math.radians(rotation_deg)
    c, s = math.cos(r), math.sin(r)
    fx, fy = float(flip_x), float(flip_y)
    m = np.array([
        (c * fx + -s * 0.0) / mm_per_px, (c * 0.0 + -s * fy) / mm_per_px,
        (s * fx + c * 0.0) / mm_per_px, (s * 0.0 + c * fy) / mm_per_px,
    ]).reshape(2, 2)  # fmt: skip
    m.flags.writeable = False
    return m


def place(
    rng: np.random.Generator,
    points_mm: np.ndarray,
    *,
    mm_per_px: float,
    rotation_deg: float,
    flip_x: int,
    flip_y: int,
    width: int,
    height: int,
    margin_px: float,
) -> ImageTransform:
    """An :class:`ImageTransform` whose random translation keeps every point inside.

    The translation is uniform over the positions that keep the bounding box of
    ``points_mm`` at least ``margin_px`` from every edge (centred when the
    shape is too large for the margin).
    """
    return place_points(
        rng, points_mm, mm_per_px=mm_per_px, rotation_deg=rotation_deg, flip_x=flip_x,
        flip_y=flip_y, width=width, height=height, margin_px=margin_px,
    )[0]  # fmt: skip


def place_points(
    rng: np.random.Generator,
    points_mm: np.ndarray,
    *,
    mm_per_px: float,
    rotation_deg: float,
    flip_x: int,
    flip_y: int,
    width: int,
    height: int,
    margin_px: float,
) -> tuple[ImageTransform, np.ndarray]:
    """:func:`place`, also returning ``points_mm`` in pixels (``transform.apply(points_mm)``)."""
    q = points_mm @ _linear_part(mm_per_px, rotation_deg, flip_x, flip_y).T
    t = []
    for k, size in enumerate((width, height)):
        col = q[:, k]
        lo, hi = float(col.min()), float(col.max())
        a = margin_px - lo
        b = size - 1 - margin_px - hi
        t.append(float(rng.uniform(a, b)) if b > a else (size - 1 - hi - lo) / 2)
    tr = ImageTransform(
        mm_per_px, rotation_deg, flip_x, flip_y, (round(t[0], 3), round(t[1], 3)), width, height
    )
    return tr, q + tr._offset
