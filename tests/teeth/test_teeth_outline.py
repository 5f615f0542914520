"""The outline kernels (teeth._outline) against hand geometry and against shapely/GEOS.

The kernels replace ``shapely.area/length/centroid`` and most ``shapely.is_valid`` calls in
``teeth.measure``. Two promises are pinned here: the numbers equal GEOS's, and the fast
validity proof never calls an invalid outline valid (it may only fail to prove a valid one).
Every test runs each engine: the grouped numpy kernels, the compiled per-ring kernel
(numba, in the dev install) and that kernel's source run by the interpreter.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from dentalkit.teeth import _outline, measure
from dentalkit.teeth._outline import outline_shape
from tests.teeth.factory import teeth_table, tooth_row

ENGINES = ("numpy", "compiled", "python")


def _geos(geoms):
    c = shapely.centroid(geoms)
    return shapely.area(geoms), shapely.length(geoms), shapely.get_x(c), shapely.get_y(c)


def _assert_matches_geos(geoms, shape):
    area, length, cx, cy = _geos(geoms)
    scale = np.sqrt(area) + shapely.length(geoms)  # px
    np.testing.assert_allclose(shape.area, area, rtol=1e-9, atol=1e-9 * scale.max() ** 2)
    np.testing.assert_allclose(shape.perimeter, length, rtol=1e-12)
    offset = np.abs(shapely.get_coordinates(geoms)).max()  # centroids are far from 0 here
    np.testing.assert_allclose(shape.centroid_x, cx, rtol=0, atol=1e-9 * (offset + 1))
    np.testing.assert_allclose(shape.centroid_y, cy, rtol=0, atol=1e-9 * (offset + 1))


# ---- hand-computed geometry -------------------------------------------------------------


@pytest.mark.parametrize("engine", ENGINES)
def test_box_triangle_and_nothing_by_hand(engine):
    geoms = np.array(
        [
            shapely.box(0, 0, 4, 2),  # 8, 12, (2, 1)
            shapely.Polygon([(0, 0), (6, 0), (0, 3)]),  # 9, 9 + √45, (2, 1)
            shapely.box(0, 0, 4, 2).reverse(),  # clockwise: same values
            None,
            shapely.Polygon(),
            shapely.Point(1, 1),
        ],
        dtype=object,
    )
    s = outline_shape(geoms, engine=engine)
    np.testing.assert_allclose(s.area[:3], [8.0, 9.0, 8.0], rtol=1e-15)
    np.testing.assert_allclose(s.perimeter[:3], [12.0, 9.0 + math.sqrt(45.0), 12.0], rtol=1e-15)
    np.testing.assert_allclose(s.centroid_x[:3], [2.0, 2.0, 2.0], rtol=1e-15)
    np.testing.assert_allclose(s.centroid_y[:3], [1.0, 1.0, 1.0], rtol=1e-15)
    assert s.proven_valid.tolist() == [True, True, True, False, False, False]
    assert np.isnan(s.area[3:]).all() and np.isnan(s.centroid_x[3:]).all()


@pytest.mark.parametrize("engine", ENGINES)
def test_hole_and_multipolygon_by_hand(engine):
    # 10×10 square with a 2×2 hole at (6..8, 6..8): area 96, centroid from moments
    holed = shapely.Polygon(
        [(0, 0), (10, 0), (10, 10), (0, 10)], [[(6, 6), (8, 6), (8, 8), (6, 8)]]
    )
    two = shapely.MultiPolygon([shapely.box(0, 0, 1, 1), shapely.box(3, 0, 5, 2)])  # 1 + 4
    # a hole touching the shell at the shell's first vertex (valid): triangle of area 1.5
    touching = shapely.Polygon(
        [(0, 0), (10, 0), (10, 10), (0, 10)], [[(0, 0), (2, 1), (1, 2), (0, 0)]]
    )
    assert shapely.is_valid(touching)
    s = outline_shape(np.array([holed, two, touching], dtype=object), engine=engine)
    np.testing.assert_allclose(s.area, [96.0, 5.0, 98.5])
    hole = 2 * math.sqrt(5.0) + math.sqrt(2.0)
    np.testing.assert_allclose(s.perimeter, [48.0, 4.0 + 8.0, 40.0 + hole])
    np.testing.assert_allclose(
        s.centroid_x, [(100 * 5 - 4 * 7) / 96, (1 * 0.5 + 4 * 4) / 5, (500 - 1.5) / 98.5]
    )
    np.testing.assert_allclose(
        s.centroid_y, [(100 * 5 - 4 * 7) / 96, (1 * 0.5 + 4 * 1) / 5, (500 - 1.5) / 98.5]
    )
    assert not s.proven_valid.any()  # not single rings: left to shapely.is_valid


@pytest.mark.parametrize("engine", ENGINES)
def test_invalid_outlines_are_never_proven_valid(engine):
    bowtie = shapely.Polygon([(0, 0), (2, 2), (2, 0), (0, 2)])
    spike = shapely.Polygon([(0, 0), (4, 0), (4, 4), (2, 4), (2, 9), (2, 4), (0, 4)])
    # a radial spike seen from the vertex mean: zero-width, out and back on one line
    radial = shapely.Polygon([(-1, -1), (1, -1), (1, 1), (3, 3), (1, 1), (-1, 1)])
    double = shapely.Polygon(  # winds twice around the origin (a pentagram-like ring)
        [(math.cos(4 * math.pi * k / 5), math.sin(4 * math.pi * k / 5)) for k in range(5)]
    )
    flat = shapely.Polygon([(0, 0), (1, 0), (2, 0)])  # zero area
    geoms = np.array([bowtie, spike, radial, double, flat], dtype=object)
    assert not shapely.is_valid(geoms).any()
    s = outline_shape(geoms, engine=engine)
    assert not s.proven_valid.any()
    assert s.area[-1] == 0.0
    assert s.centroid_x[-1] == pytest.approx(shapely.centroid(flat).x)  # GEOS's line centroid


@pytest.mark.parametrize("engine", ENGINES)
def test_valid_but_not_star_shaped_is_left_to_shapely(engine):
    # a "two-rooted" outline: a crown on two roots; the vertex mean sees a root edge backwards
    molar = shapely.Polygon([(0, 0), (2, 0), (2, 6), (4, 6), (4, 0), (6, 0), (6, 10), (0, 10)])
    dup = shapely.Polygon([(0, 0), (4, 0), (4, 0), (4, 4), (0, 4)])  # repeated vertex: valid
    geoms = np.array([molar, dup], dtype=object)
    assert shapely.is_valid(geoms).all()
    s = outline_shape(geoms, engine=engine)
    assert not s.proven_valid.any()
    _assert_matches_geos(geoms, s)


# ---- against GEOS, generated ----------------------------------------------------------------

coordinate = st.floats(-50, 50, allow_nan=False)
offset = st.tuples(st.floats(-1e5, 1e5), st.floats(-1e5, 1e5))


@st.composite
def rings(draw):
    """Arbitrary rings (often self-intersecting), star rings and convex rings."""
    kind = draw(st.sampled_from(["random", "star", "convex", "holed"]))
    n = draw(st.integers(3, 20))
    dx, dy = draw(offset)
    if kind == "random":
        pts = draw(st.lists(st.tuples(coordinate, coordinate), min_size=n, max_size=n))
        pts = np.array(pts) + np.array([dx, dy])
    else:  # one vertex in each of n equal sectors around (dx, dy): distinct angles
        jitter = np.array(draw(st.lists(st.floats(0.0, 0.5), min_size=n, max_size=n)))
        angles = 2 * np.pi * (np.arange(n) + jitter) / n
        radii = np.array(draw(st.lists(st.floats(1, 50), min_size=n, max_size=n)))
        if kind != "star":
            radii[:] = radii[0]
        pts = np.c_[dx + radii * np.cos(angles), dy + radii * np.sin(angles)]
        if draw(st.booleans()):
            pts = pts[::-1]
    if kind == "holed":  # a convex ring around a triangular hole (a third of its radius)
        h = radii[0] / 3.0
        return kind, shapely.Polygon(pts, [[(dx - h, dy - h), (dx + h, dy - h), (dx, dy + h)]])
    return kind, shapely.Polygon(pts)


@settings(max_examples=120, deadline=None)
@given(st.lists(rings(), min_size=1, max_size=12))
def test_kernels_equal_geos_and_the_proof_never_lies(drawn):
    kinds = [k for k, _ in drawn]
    geoms = np.array([g for _, g in drawn], dtype=object)
    s = outline_shape(geoms, block=5, engine="numpy")  # several blocks and count groups
    valid = shapely.is_valid(geoms)
    assert not (s.proven_valid & ~valid).any()
    measurable = shapely.area(geoms) > 1e-6 * shapely.length(geoms) ** 2
    for engine in ("compiled", "python"):  # the same arithmetic, summed in another order
        other = outline_shape(geoms, block=5, engine=engine)
        assert not (other.proven_valid & ~valid).any()
        if measurable.any():
            _assert_matches_geos(geoms[measurable], _subset(other, measurable))
        for kind, proven in zip(kinds, other.proven_valid, strict=True):
            assert proven or kind != "convex"
    if measurable.any():
        _assert_matches_geos(geoms[measurable], _subset(s, measurable))
    # the fast path is the common path: convex rings are always proven valid
    for kind, proven in zip(kinds, s.proven_valid, strict=True):
        if kind == "convex":
            assert proven


def _subset(s, mask):
    return type(s)(*(getattr(s, f)[mask] for f in s.__dataclass_fields__))


# ---- through teeth.measure --------------------------------------------------------------------


def test_measure_flags_exactly_what_geos_calls_invalid():
    keys = ["m1_rgt_up", "p2_rgt_up", "p1_rgt_up", "c_rgt_up", "i2_rgt_up", "i1_rgt_up"]
    geoms = [
        shapely.box(0, 0, 10, 8),  # valid, star: fast path
        shapely.Polygon([(0, 0), (2, 0), (2, 6), (4, 6), (4, 0), (6, 0), (6, 10), (0, 10)]),
        shapely.Polygon([(0, 0), (2, 2), (2, 0), (0, 2)]),  # bow-tie
        shapely.Polygon([(0, 0), (4, 0), (4, 4), (2, 4), (2, 9), (2, 4), (0, 4)]),  # spike
        shapely.Polygon([(0, 0), (4, 0), (4, 0), (4, 4), (0, 4)]),  # repeated vertex
        shapely.Polygon([(0, 0), (6, 0), (0, 3)]),
    ]
    t = teeth_table([tooth_row(k, g) for k, g in zip(keys, geoms, strict=True)])
    out, problems = measure(t, measures=["area", "perimeter"], errors="collect")
    invalid = ~shapely.is_valid(np.array(geoms, dtype=object))
    assert sorted(problems["row"]) == np.flatnonzero(invalid).tolist() == [2, 3]
    assert problems["reason"].str.startswith("geometry is invalid").all()
    assert out["area"].isna().tolist() == invalid.tolist()
    np.testing.assert_allclose(out["area"][~invalid], shapely.area(np.array(geoms)[~invalid]))


def test_auto_engine_loads_the_compiled_kernel_only_for_large_tables(monkeypatch):
    monkeypatch.setattr(_outline, "_COMPILED", [])  # as in a fresh process
    assert _outline._ring_kernel("auto", 1_000) is None  # small: numpy, nothing to load
    assert not _outline._COMPILED
    assert _outline._ring_kernel("auto", _outline.COMPILE_MIN_RINGS) is not None
    assert _outline._ring_kernel("auto", 10) is not None  # loaded now: used from then on
    monkeypatch.setenv("DENTALKIT_NUMBA", "0")
    assert _outline._ring_kernel("auto", 10**7) is None


def test_compiled_engine_without_numba_says_how_to_install_it(monkeypatch):
    monkeypatch.setattr(_outline, "_COMPILED", [None])  # numba did not import
    assert _outline._ring_kernel("auto", 10**7) is None
    with pytest.raises(ImportError, match=r"dentalkit\[fast\]"):
        outline_shape(np.array([shapely.box(0, 0, 1, 1)]), engine="compiled")
    with pytest.raises(ValueError, match="engine"):
        outline_shape(np.array([shapely.box(0, 0, 1, 1)]), engine="fortran")
