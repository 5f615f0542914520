"""teeth.measure against closed-form geometry (no expected value comes from the code)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import shapely

from dentalkit.errors import InputError
from dentalkit.teeth import MEASURES, measure
from tests.teeth.factory import (
    rect,
    regular_polygon,
    teeth_table,
    tooth_row,
)

ANTERIOR_UP = ["c_rgt_up", "i2_rgt_up", "i1_rgt_up", "i1_lft_up", "i2_lft_up", "c_lft_up"]


def test_axis_aligned_rectangle_exact_values():
    # 8 × 20 px incisor on a panoramic image: MD along x (no neighbours → image x axis).
    t = teeth_table([tooth_row("i1_rgt_up", shapely.box(10, 30, 18, 50))])
    m = measure(t).iloc[0]
    assert m["area"] == pytest.approx(160.0)
    assert m["perimeter"] == pytest.approx(56.0)
    assert m["md_width"] == pytest.approx(8.0)
    assert m["height"] == pytest.approx(20.0)
    assert np.isnan(m["bl_width"])  # a panoramic radiograph never shows BL
    assert m["centroid_x"] == pytest.approx(14.0)
    assert m["centroid_y"] == pytest.approx(40.0)
    assert m["compactness"] == pytest.approx(math.pi * 8 * 20 / (8 + 20) ** 2)
    assert m["unit"] == "px"
    assert m["md_axis"] == "image_x"
    assert np.isnan(m["mm_per_px"])


@pytest.mark.parametrize("n", [3, 4, 5, 6, 8, 12, 50])
def test_regular_polygons_area_perimeter_compactness(n):
    R = 7.5
    t = teeth_table([tooth_row("c_lft_lo", regular_polygon(n, R, 100, 200, phase=0.3))])
    m = measure(t, measures=["area", "perimeter", "compactness", "centroid_x", "centroid_y"]).iloc[
        0
    ]
    assert m["area"] == pytest.approx(n / 2 * R**2 * math.sin(2 * math.pi / n), rel=1e-12)
    assert m["perimeter"] == pytest.approx(2 * n * R * math.sin(math.pi / n), rel=1e-12)
    assert m["compactness"] == pytest.approx(math.pi / (n * math.tan(math.pi / n)), rel=1e-12)
    assert (m["centroid_x"], m["centroid_y"]) == pytest.approx((100, 200), abs=1e-9)


def test_compactness_of_many_sided_polygon_approaches_circle():
    t = teeth_table([tooth_row("c_lft_lo", regular_polygon(2000, 3.0))])
    assert measure(t)["compactness"].iloc[0] == pytest.approx(1.0, abs=1e-5)


def test_ellipse_polygon_area_and_widths_on_an_occlusogram():
    # Affine image of a regular n-gon inscribed in the ellipse x²/a² + y²/b² = 1,
    # vertices at half-step parametric angles so hull edges are axis-aligned:
    # area = (n/2)·a·b·sin(2π/n); extents 2a·cos(π/n) and 2b·cos(π/n).
    n, a, b = 400, 5.0, 3.5
    t0 = np.pi / n
    theta = t0 + 2 * np.pi * np.arange(n) / n
    ell = shapely.Polygon(np.c_[50 + a * np.cos(theta), 80 + b * np.sin(theta)])
    # neighbours to the left and right along x make the arch tangent the x axis
    rows = [
        tooth_row("p1_lft_up", rect(30, 80, 7, 9), source="occlusogram_upper"),
        tooth_row("p2_lft_up", ell, source="occlusogram_upper"),
        tooth_row("m1_lft_up", rect(70, 80, 10, 11), source="occlusogram_upper"),
    ]
    m = measure(teeth_table(rows)).iloc[1]
    assert m["area"] == pytest.approx(n / 2 * a * b * math.sin(2 * math.pi / n), rel=1e-12)
    assert m["md_width"] == pytest.approx(2 * a * math.cos(math.pi / n), rel=1e-9)
    assert m["bl_width"] == pytest.approx(2 * b * math.cos(math.pi / n), rel=1e-9)
    assert np.isnan(m["height"])
    assert m["md_axis"] == "arch"
    # closed-form ellipse area is the n → ∞ limit
    assert m["area"] == pytest.approx(math.pi * a * b, rel=1e-3)


def test_occlusal_arch_md_follows_the_arch_not_the_long_side():
    # Teeth on a circle of radius 40 px, each rectangle's MD side along the arch tangent.
    # Premolars and molars are wider buccolingually than mesiodistally, so "long side = MD"
    # would swap them; the arch-tangent rule must not.
    types = ["m2", "m1", "p2", "p1", "c", "i2", "i1"]
    md = {"m2": 9.0, "m1": 10.0, "p2": 6.5, "p1": 7.0, "c": 7.5, "i2": 6.5, "i1": 8.5}
    bl = {"m2": 11.0, "m1": 11.5, "p2": 9.0, "p1": 9.5, "c": 8.0, "i2": 6.0, "i1": 7.0}
    keys = [f"{k}_rgt_lo" for k in types] + [f"{k}_lft_lo" for k in reversed(types)]
    angles = np.linspace(200, 340, len(keys))  # degrees around the arch centre
    rows = []
    for key, ang in zip(keys, angles, strict=True):
        kind = key.split("_")[0]
        cx, cy = 40 * math.cos(math.radians(ang)), 40 * math.sin(math.radians(ang))
        rows.append(
            tooth_row(key, rect(cx, cy, md[kind], bl[kind], ang + 90), source="occlusogram_lower")
        )
    m = measure(teeth_table(rows))
    expected_md = [md[k.split("_")[0]] for k in keys]
    expected_bl = [bl[k.split("_")[0]] for k in keys]
    np.testing.assert_allclose(m["md_width"], expected_md, rtol=1e-9)
    np.testing.assert_allclose(m["bl_width"], expected_bl, rtol=1e-9)
    assert (m["md_axis"] == "arch").all()
    assert m["height"].isna().all()


def test_rotated_row_of_teeth_on_a_facial_view():
    # Teeth along a line tilted 25° (a tilted occlusal plane on the image); each tooth
    # also rotated a few degrees on its own. MD = side nearer the row direction.
    theta = 25.0
    u = np.array([math.cos(math.radians(theta)), math.sin(math.radians(theta))])
    spec = [
        ("c_rgt_up", 7.6, 10.0, 4.0),
        ("i2_rgt_up", 6.6, 9.0, -3.0),
        ("i1_rgt_up", 8.6, 11.0, 2.0),
    ]
    rows = []
    for k, (key, mdw, h, tilt) in enumerate(spec):
        cx, cy = 100 + 12 * k * u
        rows.append(tooth_row(key, rect(cx, cy, mdw, h, theta + tilt), source="frontal"))
    m = measure(teeth_table(rows))
    np.testing.assert_allclose(m["md_width"], [s[1] for s in spec], rtol=1e-9)
    np.testing.assert_allclose(m["height"], [s[2] for s in spec], rtol=1e-9)
    np.testing.assert_allclose(m["area"], [s[1] * s[2] for s in spec], rtol=1e-9)


def test_missing_teeth_keep_rows_and_never_contribute():
    rows = [
        tooth_row(k, None if k == "i2_lft_up" else rect(10 * i, 0, 8, 10), source="frontal")
        for i, k in enumerate(ANTERIOR_UP)
    ]
    t = teeth_table(rows)
    m = measure(t)
    assert len(m) == len(t)
    assert m.loc[4, "tooth"] == "i2_lft_up"
    measured = [c.name for c in MEASURES]
    assert m.loc[4, measured].isna().all()
    assert pd.isna(m.loc[4, "md_axis"])
    assert m["area"].sum() == pytest.approx(5 * 80.0)
    assert m["area"].mean() == pytest.approx(80.0)
    assert m["area"].count() == 5
    # the neighbour of the missing tooth still gets an arch tangent (from the next tooth)
    assert m.loc[5, "md_axis"] == "arch"


def test_occlusal_tooth_without_neighbours_has_no_widths():
    t = teeth_table([tooth_row("m1_rgt_up", rect(0, 0, 10, 11), source="occlusogram_upper")])
    m = measure(t).iloc[0]
    assert m["md_axis"] == "none"
    assert np.isnan(m["md_width"])
    assert np.isnan(m["bl_width"])
    assert m["area"] == pytest.approx(110.0)


def test_images_are_separate_for_tangents():
    # Same tooth keys in two sessions and two arches: neighbours never cross images.
    rows = []
    for ts in ("2024-01-01", "2025-01-01"):
        rows.append(
            tooth_row("i1_rgt_up", rect(0, 0, 8, 10), timestamp=ts, source="occlusogram_upper")
        )
        rows.append(
            tooth_row("i1_lft_up", rect(0, 9, 8, 10), timestamp=ts, source="occlusogram_upper")
        )
    # In each image the two incisors are stacked along y, so the tangent is the y axis
    # and MD is the 10 px side; were images mixed, the order would still give y here,
    # so add a third image where they lie along x:
    rows.append(
        tooth_row("i1_rgt_up", rect(0, 0, 8, 10), timestamp="2026", source="occlusogram_upper")
    )
    rows.append(
        tooth_row("i1_lft_up", rect(9, 0, 8, 10), timestamp="2026", source="occlusogram_upper")
    )
    m = measure(teeth_table(rows))
    np.testing.assert_allclose(m["md_width"], [10, 10, 10, 10, 8, 8])
    np.testing.assert_allclose(m["bl_width"], [8, 8, 8, 8, 10, 10])


def test_categorical_keys_give_the_same_result():
    rows = [
        tooth_row(k, rect(10 * i, 0, 8, 10), source="frontal") for i, k in enumerate(ANTERIOR_UP)
    ]
    plain = measure(teeth_table(rows))
    cat = measure(teeth_table(rows, categorical=True))
    cols = [m.name for m in MEASURES]
    pd.testing.assert_frame_equal(plain[cols], cat[cols])


def test_multipolygon_is_measured_as_a_whole():
    mp = shapely.MultiPolygon([shapely.box(0, 0, 2, 3), shapely.box(5, 0, 6, 3)])
    t = teeth_table([tooth_row("m1_rgt_lo", mp)])
    m = measure(t).iloc[0]
    assert m["area"] == pytest.approx(9.0)
    assert m["perimeter"] == pytest.approx(10 + 8)
    assert m["md_width"] == pytest.approx(6.0)  # rectangle around both parts
    assert m["height"] == pytest.approx(3.0)


def test_measure_subset_and_input_not_modified():
    t = teeth_table([tooth_row("i1_rgt_up", shapely.box(0, 0, 8, 20))])
    before = t.copy()
    m = measure(t, measures=["area"])
    assert "perimeter" not in m
    assert "md_axis" not in m
    assert "geometry" not in m
    pd.testing.assert_frame_equal(t, before)
    with pytest.raises(InputError, match="unknown tooth measure"):
        measure(t, measures=["volume"])
