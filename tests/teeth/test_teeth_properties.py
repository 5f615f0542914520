"""Property tests: tooth measures are invariant to moving the image, and scale with calibration."""

from __future__ import annotations

import numpy as np
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from dentalkit.teeth import measure
from tests.teeth.factory import rect, teeth_table, tooth_row

KEYS = ["p1_rgt_lo", "c_rgt_lo", "i2_rgt_lo", "i1_rgt_lo", "i1_lft_lo", "i2_lft_lo", "c_lft_lo"]
SHAPE = ["area", "perimeter", "md_width", "bl_width", "height", "compactness"]

tooth = st.tuples(
    st.floats(4, 12),  # MD (px)
    st.floats(4, 12),  # the other extent
    st.floats(-20, 20),  # own tilt relative to the row (deg)
    st.integers(0, 2),  # shape: rectangle, hexagon-ish, rounded
)


def _shape(kind, md, other, angle, cx, cy):
    if kind == 1:  # cut corners: an octagon with the same extents
        d = 0.2 * min(md, other)
        return rect(cx, cy, md - 2 * d, other - 2 * d, angle).buffer(d, join_style="bevel")
    if kind == 2:
        return shapely.affinity.rotate(
            shapely.affinity.scale(shapely.Point(cx, cy).buffer(0.5, 32), md, other),
            angle,
            origin=(cx, cy),
        )
    return rect(cx, cy, md, other, angle)


def _row(teeth, row_angle, source):
    u = np.array([np.cos(np.deg2rad(row_angle)), np.sin(np.deg2rad(row_angle))])
    rows = []
    for k, (md, other, tilt, kind) in enumerate(teeth):
        cx, cy = 14.0 * k * u
        g = _shape(kind, md, other, row_angle + tilt, cx, cy)
        rows.append(tooth_row(KEYS[k], g, source=source))
    return teeth_table(rows)


@settings(max_examples=25, deadline=None)
@given(
    teeth=st.lists(tooth, min_size=2, max_size=len(KEYS)),
    row_angle=st.floats(-40, 40),
    rotation=st.floats(-180, 180),
    shift=st.tuples(st.floats(-5000, 5000), st.floats(-5000, 5000)),
    source=st.sampled_from(["pano", "occlusogram_lower"]),
)
def test_measures_invariant_to_rotation_and_translation(teeth, row_angle, rotation, shift, source):
    t = _row(teeth, row_angle, source)
    moved = t.copy()
    moved["geometry"] = [
        shapely.affinity.translate(shapely.affinity.rotate(g, rotation, origin=(0, 0)), *shift)
        for g in t["geometry"]
    ]
    a = measure(t)
    b = measure(moved)
    np.testing.assert_allclose(b[SHAPE], a[SHAPE], rtol=1e-7, atol=1e-7)
    # the centroid moves with the image
    c = np.deg2rad(rotation)
    x, y = a["centroid_x"], a["centroid_y"]
    np.testing.assert_allclose(b["centroid_x"], np.cos(c) * x - np.sin(c) * y + shift[0], atol=1e-6)
    np.testing.assert_allclose(b["centroid_y"], np.sin(c) * x + np.cos(c) * y + shift[1], atol=1e-6)


@settings(max_examples=25, deadline=None)
@given(teeth=st.lists(tooth, min_size=2, max_size=5), s=st.floats(0.01, 2.0))
def test_calibration_scales_area_by_square_and_lengths_linearly(teeth, s):
    t = _row(teeth, 0.0, "pano")
    px = measure(t)
    mm = measure(t, s)
    np.testing.assert_allclose(mm["area"], px["area"] * s**2, rtol=1e-12)
    for c in ("perimeter", "md_width", "height", "centroid_x", "centroid_y"):
        np.testing.assert_allclose(mm[c], px[c] * s, rtol=1e-12)
    np.testing.assert_allclose(mm["compactness"], px["compactness"], rtol=1e-12)
    # the same as measuring an image whose pixels are s mm wide
    scaled = t.copy()
    scaled["geometry"] = [shapely.affinity.scale(g, s, s, origin=(0, 0)) for g in t["geometry"]]
    np.testing.assert_allclose(measure(scaled)["area"], mm["area"], rtol=1e-9)
