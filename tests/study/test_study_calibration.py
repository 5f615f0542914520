"""The study's one calibration policy: an image's own scale, else its endpoint's, else none.

Hand-made tables (the ``calibration`` table comes from the manifest's ``mm_per_px``
column; CONTRACTS.md): each expected value is the hand product of a pixel distance and
the scale the contract says the image should get.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from dentalkit.errors import InputError
from dentalkit.study import Calibration, Design, analyze, calibration_policy

LAT = "ceph_lateral_points"


def _images(rows):
    return pd.DataFrame(rows, columns=["patient_id", "timestamp", "endpoint", "mm_per_px"])


def test_the_image_comes_first_then_the_endpoint_then_pixels():
    images = _images([("P1", "t1", LAT, 0.125)]).assign(calibration_source=["dicom:PixelSpacing"])
    cal = Calibration({LAT: 0.1, "pano_segmentation": 0.2}, images)
    table = pd.DataFrame(
        {
            "patient_id": ["P1", "P1", "P2", "P1", "P1"],
            "timestamp": ["t1", "t1", "t1", "t2", "t1"],
            "endpoint": [LAT, LAT, LAT, LAT, "occlusogram_upper_points"],
        },
        index=[10, 11, 12, 13, 14],  # any index: the result is aligned to it
    )
    got = cal.resolve(table)
    assert got.index.tolist() == [10, 11, 12, 13, 14]
    assert got["mm_per_px"].tolist()[:4] == [0.125, 0.125, 0.1, 0.1]
    assert math.isnan(got["mm_per_px"].iloc[4])
    assert got["calibration"].astype(str).tolist() == [
        "image",
        "image",
        "endpoint",
        "endpoint",
        "none",
    ]
    assert got["calibration_source"].iloc[:4].tolist() == [
        "dicom:PixelSpacing",
        "dicom:PixelSpacing",
        "endpoint fallback",
        "endpoint fallback",
    ]
    assert pd.isna(got["calibration_source"].iloc[4])
    assert cal.of_session(LAT, "P1", "t1") == 0.125
    assert cal.of_session("occlusogram_upper_points", "P1", "t1") is None


def test_a_source_is_manifest_when_the_table_has_none_and_keys_match_as_text():
    # categorical keys in the tables, plain text in the calibration table
    images = _images([("P1", "2024-03-05T10:00:00Z", LAT, 0.11)])
    table = pd.DataFrame(
        {
            "patient_id": pd.Categorical(["P1"]),
            "timestamp": pd.Categorical(["2024-03-05T10:00:00Z"]),
            "endpoint": pd.Categorical([LAT]),
        }
    )
    got = Calibration({}, images).resolve(table)
    assert got["mm_per_px"].tolist() == [0.11]
    assert got["calibration_source"].tolist() == ["manifest"]


@pytest.mark.parametrize(
    ("endpoints", "images", "message"),
    [
        ({"ceph": 0.1}, None, "'ceph' is not an endpoint name"),
        ({LAT: 0}, None, "0 for endpoint ceph_lateral_points is not a positive number"),
        ({LAT: float("nan")}, None, "not a positive number"),
        ({LAT: True}, None, "not a positive number"),
        ({}, pd.DataFrame({"patient_id": ["P1"]}), "has no column timestamp, endpoint, mm_per_px"),
        (
            {},
            _images([("P1", "t1", LAT, 0.1), ("P2", "t9", LAT, -1.0)]),
            r"row 1 \(0-based; patient P2, session t9, endpoint ceph_lateral_points\): "
            r"mm_per_px=-1.0",
        ),
        (
            {},
            _images([("P1", "t1", LAT, 0.1), ("P1", "t1", LAT, 0.2)]),
            "patient P1, session t1, endpoint ceph_lateral_points 2 different scales",
        ),
    ],
)
def test_bad_calibrations_are_refused_with_where_and_why(endpoints, images, message):
    with pytest.raises(InputError, match=message):
        Calibration(endpoints, images)


def test_the_same_value_twice_for_one_image_is_one_value():
    images = _images([("P1", "t1", LAT, 0.1), ("P1", "t1", LAT, 0.1)])
    assert len(Calibration({}, images).by_image) == 1


def test_the_policy_takes_the_tables_calibration_table():
    images = _images([("P1", "t1", LAT, 0.125)])
    cal = calibration_policy({LAT: 0.1}, {"calibration": images})
    assert cal.endpoints == {LAT: 0.1} and len(cal.by_image) == 1
    assert calibration_policy(cal, {}) is cal  # a policy is kept as given
    assert calibration_policy(None).describe() == "none: every image in pixels"


def _lateral(pid: str, ts: str, s_n_px: float) -> pd.DataFrame:
    """S and N of one lateral session, ``s_n_px`` apart (the rest of the film absent)."""
    return pd.DataFrame(
        {
            "patient_id": pid,
            "timestamp": ts,
            "endpoint": LAT,
            "view": "lateral",
            "landmark": ["Later_1", "Later_2"],
            "name": ["S", "N"],
            "x": [100.0, 100.0 + 0.6 * s_n_px],
            "y": [200.0, 200.0 - 0.8 * s_n_px],  # a 3-4-5 triangle: the distance is s_n_px
        }
    )


def test_the_analyses_measure_each_image_at_its_own_scale():
    landmarks = pd.concat(
        [_lateral("P1", "t1", 560.0), _lateral("P2", "t1", 560.0), _lateral("P3", "t1", 500.0)],
        ignore_index=True,
    )
    images = _images([("P1", "t1", LAT, 0.125)])
    tables = {"landmarks": landmarks, "calibration": images}
    only_ceph = Design(analyses=("ceph",))
    out = analyze(tables, {LAT: 0.1}, design=only_ceph, errors="collect")
    s_n = out["ceph_measures"].query("measure == 'S_N'").set_index("patient_id")
    # P1 its own 0.125 mm/px, P2 and P3 the endpoint's 0.1 mm/px
    assert s_n.loc["P1", "value"] == pytest.approx(560.0 * 0.125)
    assert s_n.loc["P2", "value"] == pytest.approx(560.0 * 0.1)
    assert s_n.loc["P3", "value"] == pytest.approx(500.0 * 0.1)
    assert set(s_n["unit"].astype(str)) == {"mm"}
    applied = out["calibration_applied"].set_index("patient_id")
    assert applied["calibration"].astype(str).to_dict() == {
        "P1": "image",
        "P2": "endpoint",
        "P3": "endpoint",
    }
    # no fallback: P1 still in mm by its own value; P2 and P3 in pixels, never NaN
    out = analyze(tables, None, design=only_ceph, errors="collect")
    s_n = out["ceph_measures"].query("measure == 'S_N'").set_index("patient_id")
    assert s_n.loc["P1", "value"] == pytest.approx(70.0) and s_n.loc["P1", "unit"] == "mm"
    assert s_n.loc["P2", "value"] == pytest.approx(560.0) and s_n.loc["P2", "unit"] == "px"
    assert np.isfinite(s_n["value"]).all()
    levels = out["calibration_applied"].set_index("patient_id")["calibration"].astype(str)
    assert levels.to_dict() == {"P1": "image", "P2": "none", "P3": "none"}
