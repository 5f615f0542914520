"""Area, perimeter, centroid and a fast validity proof for tooth outlines, in numpy.

shapely's array functions (``shapely.area``, ``shapely.length``, ``shapely.centroid``,
``shapely.is_valid``) still pay a GEOS call per geometry: about 2 µs per tooth for the
three shape kernels plus 2–3 µs for ``is_valid``. Tooth outlines are single rings
(polygons without holes), so all four can be had from the flat coordinate array that
``shapely.get_coordinates`` returns in one call:

* area and centroid by the shoelace (surveyor's) formula over the ring's edges, with
  coordinates taken relative to a point of the ring's own (its vertex mean) so that the
  products stay small and no precision is lost far from the image origin (O'Rourke 1998,
  §1.3; Bourke 1988);
* perimeter as the sum of edge lengths;
* validity: a ring is simple (so the polygon is valid) if, seen from one point, every edge
  turns the direction strictly forward and the ring winds around that point exactly once —
  it is then star-shaped with that point in its kernel, and every ray from the point meets
  the ring exactly once (Preparata & Shamos 1985, §2.2.1). The test point is the vertex
  mean; the edge test is the sign of the same cross products the shoelace sums. Outlines
  that pass are valid without a GEOS call. The test is sufficient, not necessary: a valid
  but non-star-shaped outline (a two-rooted molar on a panoramic radiograph, say) simply
  fails it and is checked by ``shapely.is_valid`` as before. To stay on the safe side of
  rounding, an edge counts as turning forward only if its cross product exceeds 1e-9 of
  the ring's squared half-perimeter, far above rounding error.

Everything else (holes, MultiPolygons) goes to shapely. Rings are grouped by vertex count
and each group is laid out as a (vertex, polygon) array, so that every sum over a ring
runs across polygons with unit stride, in blocks of a few thousand polygons so that the
temporaries stay in the CPU cache (one pass over a million polygons is three times
slower than the same work in blocks).

References
----------
Bourke P. Calculating the area and centroid of a polygon. 1988.
https://paulbourke.net/geometry/polygonmesh/
O'Rourke J. Computational Geometry in C, 2nd ed. Cambridge University Press; 1998.
Preparata FP, Shamos MI. Computational Geometry: An Introduction. Springer; 1985.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import shapely

__all__ = ["OutlineShape", "outline_shape"]

_POLYGONAL = (shapely.GeometryType.POLYGON, shapely.GeometryType.MULTIPOLYGON)
#: Polygons per block: temporaries of ~25 vertices × 2,048 × 8 bytes stay cache-resident.
BLOCK = 2048
#: An edge turns "forward" only if its cross product exceeds this share of the squared
#: half-perimeter (a bound on the ring's squared radius; plus a rounding term, see the code).
MIN_TURN = 1e-9
_EPS = np.finfo(np.float64).eps


@dataclass(frozen=True)
class OutlineShape:
    """Shape kernels of an array of geometries (NaN where not a non-empty polygon).

    Attributes
    ----------
    area, perimeter, centroid_x, centroid_y : ndarray of float64
        In the geometries' own units (px², px, px).
    proven_valid : ndarray of bool
        True where the fast star-shape test proved the outline valid; False means
        "not proven" (check with ``shapely.is_valid``), never "invalid".
    """

    area: np.ndarray
    perimeter: np.ndarray
    centroid_x: np.ndarray
    centroid_y: np.ndarray
    proven_valid: np.ndarray


def outline_shape(
    geoms: np.ndarray,
    block: int = BLOCK,
    *,
    type_id: np.ndarray | None = None,
    counts: np.ndarray | None = None,
) -> OutlineShape:
    """Area, perimeter and area centroid of each geometry, and a validity proof.

    Parameters
    ----------
    geoms : ndarray of shapely geometries or None
        Polygons (single rings go through numpy), MultiPolygons or polygons with holes
        (through shapely), anything else (None, empty, points) gives NaN.
    block : int
        Polygons per vectorised block.
    type_id, counts : ndarray of int, optional
        ``shapely.get_type_id(geoms)`` and ``shapely.get_num_coordinates(geoms)`` when
        the caller has them already.

    Returns
    -------
    OutlineShape

    Examples
    --------
    >>> import numpy as np, shapely
    >>> s = outline_shape(np.array([shapely.box(0, 0, 4, 2), None]))
    >>> s.area.tolist(), s.perimeter.tolist(), s.centroid_x.tolist(), s.proven_valid.tolist()
    ([8.0, nan], [12.0, nan], [2.0, nan], [True, False])
    """
    geoms = np.asarray(geoms, dtype=object)
    n = len(geoms)
    area = np.full(n, np.nan)
    perimeter = np.full(n, np.nan)
    cx = np.full(n, np.nan)
    cy = np.full(n, np.nan)
    proven = np.zeros(n, dtype=bool)

    if type_id is None:
        type_id = shapely.get_type_id(geoms)
    if counts is None:
        counts = shapely.get_num_coordinates(geoms)  # 0 for None and empty geometries
    polygonal = np.isin(type_id, [int(t) for t in _POLYGONAL]) & (counts > 0)
    ring = polygonal & (type_id == int(shapely.GeometryType.POLYGON))
    ring[ring] = shapely.get_num_interior_rings(geoms[ring]) == 0

    # group the single rings by vertex count: a group is a dense (count, polygons) array,
    # so every sum runs across polygons with unit stride instead of one short ring at a time
    rows = np.flatnonzero(ring)
    order = rows[np.argsort(counts[rows], kind="stable")]
    sorted_counts = counts[order]
    edges = np.flatnonzero(np.diff(sorted_counts)) + 1
    for lo, hi in zip(np.r_[0, edges], np.r_[edges, len(order)], strict=True):
        for start in range(lo, hi, block):
            r = order[start : min(start + block, hi)]
            k = int(sorted_counts[start])
            area[r], perimeter[r], cx[r], cy[r], proven[r] = _single_rings(geoms[r], k)

    # zero-area rings (no area centroid; GEOS falls back to the line's) and the rest
    other = np.flatnonzero(polygonal & ~(ring & np.isfinite(cx)))
    if len(other):
        g = geoms[other]
        c = shapely.centroid(g)
        area[other] = shapely.area(g)
        perimeter[other] = shapely.length(g)
        cx[other] = shapely.get_x(c)
        cy[other] = shapely.get_y(c)
    return OutlineShape(area, perimeter, cx, cy, proven)


def _single_rings(geoms: np.ndarray, count: int) -> tuple[np.ndarray, ...]:
    """Kernels of polygons without holes, each with ``count`` coordinates (closed ring)."""
    m = len(geoms)
    # (count, m) arrays: row i holds vertex i of every ring. Binary operations are ufunc
    # calls with ``out=`` where a temporary would be large: numpy's operator path checks
    # whether it may reuse a large temporary by walking the C stack, which costs more than
    # the arithmetic here.
    xy = np.ascontiguousarray(shapely.get_coordinates(geoms).reshape(m, count, 2).T)
    x, y = xy[0], xy[1]
    ox = x[:-1].sum(axis=0) / (count - 1)  # vertex mean (the closing vertex once)
    oy = y[:-1].sum(axis=0) / (count - 1)
    x -= ox
    y -= oy
    xa, xb, ya, yb = x[:-1], x[1:], y[:-1], y[1:]  # edge i runs (xa, ya)[i] -> (xb, yb)[i]

    # twice the signed area of each triangle (origin, a, b)
    cross = np.multiply(xa, yb)
    cross -= np.multiply(xb, ya)

    dx = np.subtract(xb, xa)
    dy = np.subtract(yb, ya)
    dx *= dx
    dy *= dy
    dx += dy
    perimeter = np.sqrt(dx, out=dx).sum(axis=0)

    # validity proof: every edge turns forward (one sign, with a margin far above rounding
    # error) and the ring winds once around the origin. No vertex is farther than half the
    # perimeter from the origin (a vertex mean), so with R = perimeter / 2 the rounding
    # error of a cross product is below a few ulps of R² plus that of subtracting the
    # origin from coordinates of size |origin|.
    half = perimeter / 2.0
    margin = MIN_TURN * half * half + 16 * _EPS * (np.abs(ox) + np.abs(oy)) * half
    star = (cross.min(axis=0) > margin) | (cross.max(axis=0) < -margin)
    upper = y >= 0
    crossings = np.sum(upper[1:] > upper[:-1], axis=0, dtype=np.int32)  # upward, of y = 0
    star &= crossings == 1

    twice_area = cross.sum(axis=0)
    mx = np.add(xa, xb)
    mx *= cross
    my = np.add(ya, yb)
    my *= cross
    with np.errstate(divide="ignore", invalid="ignore"):
        cx = mx.sum(axis=0) / (3.0 * twice_area) + ox
        cy = my.sum(axis=0) / (3.0 * twice_area) + oy
    return np.abs(twice_area) / 2.0, perimeter, cx, cy, star
