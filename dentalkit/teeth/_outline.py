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

Everything else (holes, MultiPolygons) goes to shapely.

Two implementations of the same arithmetic, in the same order of operations:

* **compiled** (with the optional ``fast`` extra, numba): one pass over each block's flat
  coordinate array, ring by ring — about 0.05 µs per 24-vertex ring, so that copying the
  coordinates out of GEOS (``shapely.get_coordinates``, ~0.2 µs) is most of the cost;
* **numpy** (the core install): rings are grouped by vertex count and each group is laid
  out as a (vertex, polygon) array, so that every sum over a ring runs across polygons
  with unit stride, in blocks of a few thousand polygons so that the temporaries stay in
  the CPU cache (one pass over a million polygons is three times slower than the same
  work in blocks) — about 0.3 µs per ring, some 25 passes over the block.

Both give the same numbers (bit for bit on the machines we test; tested against each other
and against GEOS), so ``engine="auto"`` may pick either by size alone: the compiled kernel
when numba imports, the environment variable ``DENTALKIT_NUMBA`` is not ``0`` and either it
is already loaded in this process or there are at least :data:`COMPILE_MIN_RINGS` rings —
loading it costs 0.5–1.5 s once per process (importing numba, compiling or reading numba's
on-disk cache), which only a large table pays back.

References
----------
Bourke P. Calculating the area and centroid of a polygon. 1988.
https://paulbourke.net/geometry/polygonmesh/
O'Rourke J. Computational Geometry in C, 2nd ed. Cambridge University Press; 1998.
Preparata FP, Shamos MI. Computational Geometry: An Introduction. Springer; 1985.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any, Literal

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
#: ``engine="auto"`` loads the compiled kernel for this many single rings or more (about
#: 0.45 µs saved per ring against ~1 s to load it once per process).
COMPILE_MIN_RINGS = 200_000


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
    engine: Literal["auto", "numpy", "compiled", "python"] = "auto",
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
    engine : {"auto", "numpy", "compiled", "python"}
        ``"compiled"``: the numba kernel (ImportError without numba); ``"numpy"``: the
        grouped numpy kernels; ``"python"``: the compiled kernel's source run by the
        interpreter (slow; for tests); ``"auto"``: compiled when available.

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
    kernel = _ring_kernel(engine, int(ring.sum()))
    if kernel is None:  # the compiled kernel finds holes itself (and leaves them as NaN)
        ring[ring] = shapely.get_num_interior_rings(geoms[ring]) == 0

    rows = np.flatnonzero(ring)
    if kernel is not None:  # ring by ring over each block's flat coordinates
        for start in range(0, len(rows), block):
            r = rows[start : start + block]
            _run_rings(kernel, geoms, r, counts[r], (area, perimeter, cx, cy, proven))
    else:
        # group the single rings by vertex count: a group is a dense (count, polygons)
        # array, so every sum runs across polygons with unit stride instead of one short
        # ring at a time
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


def _rings_one_by_one(
    xy: np.ndarray,
    offsets: np.ndarray,
    rows: np.ndarray,
    min_turn: float,
    area: np.ndarray,
    perimeter: np.ndarray,
    cx: np.ndarray,
    cy: np.ndarray,
    proven: np.ndarray,
) -> None:
    """:func:`_single_rings` for rings of any length, one ring at a time (numba's source).

    Polygon ``p``'s coordinates are ``xy[offsets[p]:offsets[p + 1]]``; its results go to
    row ``rows[p]`` of the output arrays. The same arithmetic in the same order as the
    numpy kernel (vertex mean, edges relative to it, sequential sums), so both give the
    same numbers to rounding. Compiled by :func:`_ring_kernel`; plain Python it is slow.

    A polygon with holes lists its closed exterior ring first, so its first coordinate
    comes back before the last one; any polygon where it does (a hole, or a ring through
    its own first vertex: invalid) is left NaN and unproven for shapely to measure. This
    spares a GEOS call per polygon (``get_num_interior_rings``).
    """
    eps16 = 16.0 * 2.220446049250313e-16  # 16 ulps of 1, as _EPS in _single_rings
    for p in range(len(offsets) - 1):
        lo = offsets[p]
        hi = offsets[p + 1]
        k = hi - lo - 1  # vertices, the closing one counted once
        x0 = xy[lo, 0]
        y0 = xy[lo, 1]
        ox = x0
        oy = y0
        single = True
        for i in range(lo + 1, hi - 1):
            ox += xy[i, 0]
            oy += xy[i, 1]
            if xy[i, 0] == x0 and xy[i, 1] == y0:
                single = False
        if not single:
            row = rows[p]
            area[row] = perimeter[row] = cx[row] = cy[row] = np.nan
            proven[row] = False
            continue
        ox /= k
        oy /= k
        twice_area = 0.0
        mx = 0.0
        my = 0.0
        length = 0.0
        lowest = np.inf
        highest = -np.inf
        crossings = 0
        xa = xy[lo, 0] - ox
        ya = xy[lo, 1] - oy
        for i in range(lo + 1, hi):
            xb = xy[i, 0] - ox
            yb = xy[i, 1] - oy
            cross = xa * yb - xb * ya
            twice_area += cross
            mx += (xa + xb) * cross
            my += (ya + yb) * cross
            dx = xb - xa
            dy = yb - ya
            length += np.sqrt(dx * dx + dy * dy)
            lowest = min(lowest, cross)
            highest = max(highest, cross)
            if yb >= 0.0 and not ya >= 0.0:  # crosses y = 0 upwards
                crossings += 1
            xa = xb
            ya = yb
        half = length / 2.0
        margin = min_turn * half * half + eps16 * (abs(ox) + abs(oy)) * half
        row = rows[p]
        proven[row] = (lowest > margin or highest < -margin) and crossings == 1
        area[row] = abs(twice_area) / 2.0
        perimeter[row] = length
        cx[row] = mx / (3.0 * twice_area) + ox  # NaN / inf for a zero area: see caller
        cy[row] = my / (3.0 * twice_area) + oy


def _run_rings(
    kernel: Any,
    geoms: np.ndarray,
    rows: np.ndarray,
    counts: np.ndarray,
    out: tuple[np.ndarray, ...] | None = None,
) -> tuple[np.ndarray, ...]:
    """Run the per-ring ``kernel`` on ``geoms[rows]`` (single rings of ``counts`` coordinates),
    writing rows ``rows`` of ``out`` (area, perimeter, cx, cy, proven; new arrays if None)."""
    if out is None:
        n = int(rows.max()) + 1
        out = (np.empty(n), np.empty(n), np.empty(n), np.empty(n), np.zeros(n, dtype=bool))
    rows = np.ascontiguousarray(rows, dtype=np.int64)
    offsets = np.zeros(len(rows) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    xy = shapely.get_coordinates(geoms[rows])
    with np.errstate(divide="ignore", invalid="ignore"):  # zero areas: see outline_shape
        kernel(xy, offsets, rows, MIN_TURN, *out)
    return out


_COMPILED: list[Any] = []  # [kernel] once compiled, [None] when numba is unavailable


def _ring_kernel(engine: str, rings: int) -> Any:
    """The per-ring kernel for ``engine`` and ``rings`` rings, or None for numpy's."""
    if engine == "numpy":
        return None
    if engine == "python":
        return _rings_one_by_one
    if engine not in ("auto", "compiled"):
        raise ValueError(f"engine must be 'auto', 'numpy', 'compiled' or 'python', not {engine!r}")
    if engine == "auto" and (
        os.environ.get("DENTALKIT_NUMBA", "1") == "0"
        or (not _COMPILED and rings < COMPILE_MIN_RINGS)
    ):
        return None
    if not _COMPILED:
        try:
            import numba
        except ImportError:
            _COMPILED.append(None)
        else:
            # error_model="numpy": a zero-area ring gives NaN/inf (as numpy), not an error
            kernel = numba.njit(cache=True, nogil=True, error_model="numpy")(_rings_one_by_one)
            _run_rings(kernel, np.array([shapely.box(0, 0, 1, 1)]), np.array([0]), np.array([5]))
            _COMPILED.append(kernel)  # compiled (or read from numba's cache) by that call
    if _COMPILED[0] is None and engine == "compiled":
        raise ImportError("engine='compiled' needs numba: pip install 'dentalkit[fast]'")
    return _COMPILED[0]
