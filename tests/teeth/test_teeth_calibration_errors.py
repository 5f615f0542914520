"""Calibration forms and bad input of teeth.measure."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
import shapely

from dentalkit.errors import InputError
from dentalkit.teeth import measure
from tests.teeth.factory import rect, teeth_table, tooth_row


def _two_sources():
    return teeth_table(
        [
            tooth_row("i1_rgt_up", shapely.box(0, 0, 10, 20), source="pano"),
            tooth_row("i1_rgt_up", shapely.box(0, 0, 10, 20), source="frontal"),
            tooth_row("i2_rgt_up", None, source="frontal"),
        ]
    )


@pytest.mark.parametrize(
    "calibration",
    [
        {"pano": 0.1, "frontal": 0.2},
        "scale",
        pd.DataFrame({"source": ["pano", "frontal"], "mm_per_px": [0.1, 0.2]}),
        pd.DataFrame(
            {
                "patient_id": ["p1", "p1"],
                "timestamp": ["2024-01-01", "2024-01-01"],
                "source": ["pano", "frontal"],
                "mm_per_px": [0.1, 0.2],
            }
        ),
        pd.Series(
            [0.1, 0.2],
            index=pd.MultiIndex.from_tuples(
                [("2024-01-01", "pano"), ("2024-01-01", "frontal")], names=["timestamp", "source"]
            ),
        ),
    ],
    ids=["mapping", "column", "per-source-table", "per-session-table", "keyed-series"],
)
def test_calibration_forms(calibration):
    t = _two_sources()
    t["scale"] = [0.1, 0.2, np.nan]  # the missing tooth needs no scale
    m = measure(t, calibration)
    assert list(m["unit"]) == ["mm"] * 3
    np.testing.assert_allclose(m["area"][:2], [200 * 0.01, 200 * 0.04])
    np.testing.assert_allclose(m["perimeter"][:2], [60 * 0.1, 60 * 0.2])
    np.testing.assert_allclose(m["md_width"][:2], [1.0, 2.0])
    np.testing.assert_allclose(m["height"][:2], [2.0, 4.0])
    np.testing.assert_allclose(m["centroid_x"][:2], [0.5, 1.0])
    np.testing.assert_allclose(m["compactness"][:2], [math.pi * 200 / 900] * 2)
    np.testing.assert_allclose(m["mm_per_px"][:2], [0.1, 0.2])
    assert m.loc[2, ["area", "mm_per_px"]].isna().all()


def test_uncovered_row_is_an_error_not_left_in_pixels():
    t = _two_sources()
    with pytest.raises(InputError, match="no calibration") as info:
        measure(t, {"pano": 0.1})
    assert list(info.value.problems["row"]) == [1]
    m, problems = measure(t, {"pano": 0.1}, errors="collect")
    assert list(problems["row"]) == [1]
    assert m.loc[0, "area"] == pytest.approx(2.0)
    assert np.isnan(m.loc[1, "area"])  # never a pixel value among millimetres


@pytest.mark.parametrize("bad", [0, -0.1, float("nan"), float("inf"), "0.1", True])
def test_bad_scalar_calibration(bad):
    t = _two_sources()
    with pytest.raises(InputError):
        measure(t, bad)


def test_bad_calibration_tables():
    t = _two_sources()
    with pytest.raises(InputError, match="several rows"):
        measure(t, pd.DataFrame({"source": ["pano", "pano"], "mm_per_px": [0.1, 0.2]}))
    with pytest.raises(InputError, match="not columns"):
        measure(t, pd.DataFrame({"device": ["x"], "mm_per_px": [0.1]}))
    with pytest.raises(InputError, match="mm_per_px' column"):
        measure(t, pd.DataFrame({"source": ["pano"]}))
    with pytest.raises(InputError, match="named index"):
        measure(t, pd.Series([0.1, 0.2]))
    t["scale"] = [0.1, -1.0, np.nan]
    with pytest.raises(InputError, match="finite and > 0"):
        measure(t, "scale")


def test_missing_columns_named():
    t = _two_sources().drop(columns=["geometry", "side"])
    with pytest.raises(InputError, match=r"\['side', 'geometry'\]"):
        measure(t)
    with pytest.raises(InputError, match="DataFrame"):
        measure([1, 2])


def test_bad_rows_are_named_and_collected():
    bowtie = shapely.Polygon([(0, 0), (10, 10), (10, 0), (0, 10)])
    rows = [
        tooth_row("i1_rgt_up", shapely.box(0, 0, 8, 10), patient_id="ok"),
        tooth_row("i1_lft_up", bowtie, patient_id="p-bowtie"),
        tooth_row("i2_lft_up", None, patient_id="p-none", missing=False),
        tooth_row("i2_rgt_up", shapely.box(0, 0, 1, 1), patient_id="p-flag", missing=True),
        tooth_row("c_rgt_up", shapely.LineString([(0, 0), (1, 1)]), patient_id="p-line"),
        tooth_row("c_lft_up", "POLYGON ((0 0, 1 0, 1 1, 0 0))", patient_id="p-wkt"),
        tooth_row("p1_lft_up", shapely.box(0, 0, 8, 10), patient_id="p-src", source="ceph"),
        tooth_row("p2_lft_up", shapely.Polygon(), patient_id="p-empty"),
    ]
    t = teeth_table(rows)
    with pytest.raises(InputError) as info:
        measure(t)
    text = str(info.value)
    assert "7 problem(s)" in text
    for who in ("p-bowtie", "p-none", "p-flag", "p-line", "p-wkt", "p-src", "p-empty"):
        assert who in text
    assert "Self-intersection" in text
    assert "errors='collect'" in text
    m, problems = measure(t, errors="collect")
    assert sorted(problems["row"]) == [1, 2, 3, 4, 5, 6, 7]
    assert list(problems.columns) == [
        "table",
        "endpoint",
        "patient_id",
        "timestamp",
        "row",
        "field",
        "path",
        "value",
        "reason",
        "severity",
    ]
    assert m.loc[0, "area"] == pytest.approx(80.0)
    assert m.loc[1:, "area"].isna().all()


def test_invalid_polygon_still_gets_widths_when_only_widths_requested():
    # Validity matters for area-like measures; a rectangle around the points is still defined.
    bowtie = shapely.Polygon([(0, 0), (10, 20), (10, 0), (0, 20)])
    t = teeth_table([tooth_row("i1_lft_up", bowtie)])
    m = measure(t, measures=["md_width", "height"])
    assert m.loc[0, "md_width"] == pytest.approx(10.0)
    assert m.loc[0, "height"] == pytest.approx(20.0)
    with pytest.raises(InputError, match="invalid"):
        measure(t, measures=["area"])


def test_duplicate_tooth_in_one_image():
    rows = [
        tooth_row("i1_rgt_up", rect(0, 0, 8, 10)),
        tooth_row("i1_rgt_up", rect(0, 0, 8, 10)),
    ]
    with pytest.raises(InputError, match="appears twice"):
        measure(teeth_table(rows))


def test_errors_argument_checked():
    with pytest.raises(
        InputError, match=r"errors='skip' is not allowed.*'raise', 'collect', 'warn'"
    ):
        measure(_two_sources(), errors="skip")


def test_null_missing_flag_is_reported():
    t = _two_sources()
    t["missing"] = pd.array([False, None, True], dtype="boolean")
    with pytest.raises(InputError, match="missing flag is null"):
        measure(t)


def test_nan_placeholder_counts_as_no_geometry():
    t = _two_sources()
    t["geometry"] = t["geometry"].astype(object)
    t.loc[2, "geometry"] = np.nan  # e.g. read back from a file: missing tooth without outline
    m = measure(t)
    assert np.isnan(m.loc[2, "area"])
    assert m.loc[0, "area"] == pytest.approx(200.0)
