"""teeth: keys, ISO 3950 numbers, polygons, missing teeth, repair rules and strictness."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import shapely

from dentalkit import convert
from dentalkit.errors import ResponseFormatError
from tests.convert._helpers import FDI_32, PID, frame, load, row

pytestmark = pytest.mark.filterwarnings("error::dentalkit.errors.DentalkitWarning")


def seg(results: dict, endpoint: str = "pano_segmentation", **kw) -> pd.DataFrame:
    body = {"Version": "2024.1.3", "PatientID": PID, "Results": results}
    return frame(row(endpoint, body, **kw))


def square(x0: float, y0: float, side: float) -> list[list[float]]:
    return [[x0, y0], [x0 + side, y0], [x0 + side, y0 + side], [x0, y0 + side]]


def test_fdi_for_all_32_permanent_teeth():
    results = {k: {"missing": False, "points": square(10 * j, 0, 5)} for j, k in enumerate(FDI_32)}
    teeth = convert.teeth(seg(results))
    assert dict(zip(teeth["tooth"], teeth["fdi"], strict=True)) == FDI_32
    assert str(teeth["fdi"].dtype) == "Int16"
    parts = teeth["tooth"].astype(str).str.split("_", expand=True)
    assert (teeth["tooth_type"].astype(str) == parts[0]).all()
    assert (teeth["side"].astype(str) == parts[1]).all()
    assert (teeth["arch"].astype(str) == parts[2]).all()
    assert convert.fdi_number("m1_rgt_up") == 16 and convert.fdi_number("c_lft_lo") == 33


def test_spec_fixtures_areas_and_missing_teeth():
    rows = [
        row(name, load(name))
        for name in (
            "frontal_segmentation",
            "pano_segmentation",
            "occlusogram_upper_seg",
            "occlusogram_lower_seg",
        )
    ]
    teeth = convert.teeth(frame(*rows)).set_index("tooth")
    # hand-computed areas: 40×50 square; shoelace of (300,120),(330,110),(345,160),
    # (310,175) = 3725/2; 20×25 rectangle; right triangle 6×8/2; 10×8 rectangle
    expected = {
        "i1_rgt_up": 2000.0,
        "c_lft_up": 1862.5,
        "m1_rgt_lo": 500.0,
        "m2_rgt_up": 24.0,
        "i1_lft_lo": 80.0,
    }
    for tooth, area in expected.items():
        assert teeth.loc[tooth, "geometry"].area == area
        assert teeth.loc[tooth, "geometry"].geom_type == "Polygon"
    for tooth in ("m3_lft_lo", "p2_lft_up", "m1_lft_up"):
        assert bool(teeth.loc[tooth, "missing"]) and teeth.loc[tooth, "geometry"] is None
    assert not teeth["repaired"].any()
    assert teeth["source"].astype(str).to_dict() == {
        "i1_rgt_up": "frontal",
        "c_lft_up": "frontal",
        "m3_lft_lo": "frontal",
        "m1_rgt_lo": "pano",
        "p2_lft_up": "pano",
        "m2_rgt_up": "occlusogram_upper",
        "m1_lft_up": "occlusogram_upper",
        "i1_lft_lo": "occlusogram_lower",
    }
    # occlusogram segmentation responses carry no PatientID: the key is the request's
    assert set(teeth["patient_id"]) == {PID}


def test_polygons_equal_an_independent_shapely_construction():
    rng = np.random.default_rng(7)
    results = {}
    for j, key in enumerate(FDI_32):
        n = int(rng.integers(3, 40))
        angles = np.sort(rng.uniform(0, 2 * np.pi, n))
        radius = rng.uniform(5, 20, n)
        pts = np.column_stack([100 * j + radius * np.cos(angles), 50 + radius * np.sin(angles)])
        results[key] = {"missing": False, "points": np.round(pts, 3).tolist()}
    teeth = convert.teeth(seg(results))
    for key, geom in zip(teeth["tooth"], teeth["geometry"], strict=True):
        want = shapely.Polygon(results[key]["points"])  # one by one, the plain way
        assert shapely.equals_exact(geom, want, tolerance=0), key


def test_open_and_closed_rings_give_the_same_polygon():
    open_ring = square(0, 0, 3)
    closed = [*open_ring, open_ring[0]]
    teeth = convert.teeth(
        seg(
            {
                "m1_rgt_up": {"missing": False, "points": open_ring},
                "m2_rgt_up": {"missing": False, "points": closed},
            }
        )
    )
    a, b = teeth["geometry"]
    assert shapely.equals_exact(a, b, tolerance=0) and a.area == 9.0


def test_missing_tooth_with_real_points_is_kept_and_reported():
    out = convert.tables(seg({"m1_rgt_up": {"missing": True, "points": square(0, 0, 4)}}))
    t = out["teeth"]
    assert bool(t["missing"][0]) and t["geometry"][0] is None
    assert out["problems"]["path"].tolist() == ["$.Results.m1_rgt_up.points"]
    assert "missing tooth" in out["problems"]["reason"][0]


@pytest.mark.parametrize(
    "points",
    [[[0, 0]], [], [[1, 1], [1, 1], [2, 2]], [[5, 5], [6, 6], [5, 5], [6, 6]]],
)
def test_fewer_than_three_distinct_points_give_no_geometry_and_a_problem(points):
    out = convert.tables(seg({"c_rgt_lo": {"missing": False, "points": points}}))
    t = out["teeth"]
    assert len(t) == 1 and t["geometry"][0] is None and not bool(t["missing"][0])
    assert "fewer than 3 distinct" in out["problems"]["reason"][0]


def test_spike_is_repaired_to_the_one_polygon_with_area():
    spike = [[0, 0], [4, 0], [4, 4], [2, 4], [2, 8], [2, 4], [0, 4]]
    out = convert.tables(seg({"m1_rgt_up": {"missing": False, "points": spike}}))
    t = out["teeth"]
    assert bool(t["repaired"][0])
    assert t["geometry"][0].geom_type == "Polygon" and t["geometry"][0].area == 16.0
    assert shapely.is_valid(t["geometry"][0])
    assert len(out["problems"]) == 0


@pytest.mark.parametrize(
    ("points", "what"),
    [
        ([[0, 0], [2, 2], [2, 0], [0, 2]], "splits into 2 polygons"),  # figure of eight
        ([[0, 0], [1, 0], [2, 0], [3, 0]], "no area"),  # collinear
    ],
)
def test_unrepairable_outlines_give_no_geometry_and_a_problem(points, what):
    out = convert.tables(seg({"m1_rgt_up": {"missing": False, "points": points}}))
    t = out["teeth"]
    assert t["geometry"][0] is None and not bool(t["repaired"][0])
    assert what in out["problems"]["reason"][0]


def test_unknown_prefixes_are_kept_with_null_fdi_and_reported():
    results = {
        "m1_rgt_up": {"missing": False, "points": square(0, 0, 2)},
        "x9_rgt_up": {"missing": False, "points": square(5, 0, 2)},
        "m4_lft_lo": {"missing": True, "points": [[0, 0]]},
        "foo": {"missing": False, "points": square(9, 0, 2)},
    }
    out = convert.tables(seg(results))
    t = out["teeth"].set_index("tooth")
    assert len(t) == 4  # never dropped
    assert t["fdi"].isna().tolist() == [False, True, True, True]
    assert t.loc["x9_rgt_up", ["side", "arch"]].tolist() == ["rgt", "up"]
    assert pd.isna(t.loc["x9_rgt_up", "tooth_type"]) and pd.isna(t.loc["foo", "side"])
    assert t.loc["foo", "geometry"].area == 4.0
    reported = out["problems"]["path"].tolist()
    assert reported == ["$.Results.x9_rgt_up", "$.Results.m4_lft_lo", "$.Results.foo"]


def test_occlusogram_key_of_the_other_arch_is_reported():
    body = load("occlusogram_upper_seg")
    body["Results"]["i1_rgt_lo"] = {"missing": False, "points": square(0, 0, 1)}
    out = convert.tables(frame(row("occlusogram_upper_seg", body)))
    assert out["problems"]["path"].tolist() == ["$.Results.i1_rgt_lo"]
    assert "'up' arch" in out["problems"]["reason"][0]
    assert len(out["teeth"]) == 3


def test_integer_and_zero_coordinates_on_present_teeth():
    out = convert.teeth(seg({"i1_rgt_up": {"missing": False, "points": [[0, 0], [1, 0], [0, 1]]}}))
    assert out["geometry"][0].area == 0.5


@pytest.mark.parametrize(
    ("results", "path"),
    [
        ({"m1_rgt_up": {"missing": False}}, "$.Results.m1_rgt_up.points"),
        ({"m1_rgt_up": {"points": [[0, 0]]}}, "$.Results.m1_rgt_up.missing"),
        ({"m1_rgt_up": {"missing": 0, "points": [[0, 0]]}}, "$.Results.m1_rgt_up.missing"),
        ({"m1_rgt_up": {"missing": False, "points": "[[0,0]]"}}, "$.Results.m1_rgt_up.points"),
        ({"m1_rgt_up": {"missing": False, "points": [[0, 0], [1, 0, 2], [0, 1]]}}, "$.Results.m1_rgt_up.points[1]"),
        ({"m1_rgt_up": {"missing": False, "points": [[0, 0], [1], [0, 1], [2, 2, 2]]}}, "$.Results.m1_rgt_up.points[1]"),
        ({"m1_rgt_up": {"missing": False, "points": [[0, 0], ["1", 0], [0, 1]]}}, "$.Results.m1_rgt_up.points[1][0]"),
        ({"m1_rgt_up": {"missing": False, "points": [[0, 0], [True, 0], [0, 1]]}}, "$.Results.m1_rgt_up.points[1][0]"),
        ({"m1_rgt_up": {"missing": True, "points": [[False, False]]}}, "$.Results.m1_rgt_up.points[0][0]"),
        ({"m1_rgt_up": {"missing": False, "points": [[0, 0], [2e6, 0], [0, 1]]}}, "$.Results.m1_rgt_up.points[1][0]"),
        ({"m1_rgt_up": {"missing": False, "points": [[0, 0], {"x": 1, "y": 2}, [0, 1]]}}, "$.Results.m1_rgt_up.points[1]"),
        ({"m1_rgt_up": {"missing": False, "points": [[0, 0]], "area": 3}}, "$.Results.m1_rgt_up"),
        ({"m1_rgt_up": [[0, 0]]}, "$.Results.m1_rgt_up"),
    ],
)  # fmt: skip
def test_malformed_tooth_records_name_the_path(results, path):
    with pytest.raises(ResponseFormatError) as info:
        convert.teeth(seg(results))
    assert info.value.path == path
    assert info.value.endpoint == "pano_segmentation" and info.value.row == 0
    out = convert.tables(seg(results), errors="collect")
    assert len(out["teeth"]) == 0 and out["problems"]["path"].tolist() == [path]


def test_empty_results_give_no_rows():
    out = convert.tables(seg({}))
    assert len(out["teeth"]) == 0 and len(out["problems"]) == 0
