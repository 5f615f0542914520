"""landmarks: spec shapes (169 lateral, 118 frontal), names, checks and strictness."""

from __future__ import annotations

import csv
import json
import math
from importlib import resources

import numpy as np
import pandas as pd
import pytest

from dentalkit import convert
from dentalkit.errors import DentalkitWarning, ResponseFormatError
from tests.convert._helpers import PID, TS, frame, load, row

pytestmark = pytest.mark.filterwarnings("error::dentalkit.errors.DentalkitWarning")

CATEGORICAL = ["patient_id", "timestamp", "endpoint", "model_version", "view", "landmark", "name"]


def shipped_names(view: str) -> dict[str, str]:
    """The default landmark map read straight from the CSV (not through dentalkit)."""
    text = resources.files("dentalkit.data").joinpath(f"landmark_map_{view}.csv").read_text("utf-8")
    return {r["key"]: r["name"] for r in csv.DictReader(text.splitlines())}


def test_lateral_169_landmarks_as_sent():
    lm = convert.landmarks(frame(row("ceph_lateral_points", load("ceph_lateral_points"))))
    assert len(lm) == 169
    n = np.arange(1, 170)
    assert lm["landmark"].tolist() == [f"Later_{k}" for k in n]
    # fixture coordinates: x = 1000 + n + n/8, y = 800 - 2n + 0.25 (exact in binary)
    np.testing.assert_array_equal(lm["x"].to_numpy(), 1000 + n + n / 8)
    np.testing.assert_array_equal(lm["y"].to_numpy(), 800 - 2 * n + 0.25)
    names = shipped_names("lateral")
    assert lm["name"].tolist() == [names[f"Later_{k}"] for k in n]
    assert set(lm["view"]) == {"lateral"}
    assert set(lm["endpoint"]) == {"ceph_lateral_points"}
    assert set(lm["model_version"]) == {"2024.1.3"}
    assert set(lm["patient_id"]) == {PID} and set(lm["timestamp"]) == {TS}
    assert (lm["session_time"] == pd.Timestamp("2024-03-01 09:30", tz="UTC")).all()


def test_frontal_118_landmarks_without_patient_echo():
    body = load("ceph_frontal_points")
    assert "PatientID" not in body  # the spec's quirk: frontal has no echo
    lm = convert.landmarks(frame(row("/ceph-frontal-points", body)))
    assert len(lm) == 118
    assert set(lm["view"]) == {"frontal"}
    assert set(lm["patient_id"]) == {PID}  # from the request
    names = shipped_names("frontal")
    assert lm["name"].tolist() == [names[k] for k in lm["landmark"]]
    sas = lm[lm["landmark"].str.startswith("SasFront_")]
    assert len(sas) == 18
    np.testing.assert_array_equal(sas["x"].to_numpy(), 700.25 + np.arange(1, 19))


def test_dtypes_and_memory_per_row():
    rows = []
    for p in range(60):
        body = load("ceph_lateral_points")
        body["PatientID"] = f"P{p:03d}"
        rows.append(row("ceph_lateral_points", body, patient_id=f"P{p:03d}"))
    lm = convert.landmarks(frame(*rows))
    for col in CATEGORICAL:
        assert isinstance(lm[col].dtype, pd.CategoricalDtype), col
    assert lm["x"].dtype == np.float64 and lm["y"].dtype == np.float64
    assert str(lm["session_time"].dtype) == "datetime64[ns, UTC]"
    assert list(lm["view"].cat.categories) == ["lateral", "frontal"]
    per_row = lm.memory_usage(deep=True).sum() / len(lm)
    assert per_row <= 48, per_row


def test_number_of_predicted_points_mismatch_is_kept_and_reported():
    body = load("ceph_lateral_points")
    del body["Results"]["Later_169"]
    with pytest.warns(DentalkitWarning, match="1 problem"):
        lm = convert.landmarks(frame(row("ceph_lateral_points", body)))
    assert len(lm) == 168  # rows kept
    probs = convert.tables(frame(row("ceph_lateral_points", body)))["problems"]
    assert probs["path"].tolist() == ["$.NumberOfPredictedPoints"]
    assert "169" in probs["reason"][0] and "168" in probs["reason"][0]
    assert probs["reason"][0].endswith("(rows kept)")


def test_empty_results_zero_rows_and_count_problem():
    body = load("ceph_lateral_points")
    body["Results"] = {}
    out = convert.tables(frame(row("ceph_lateral_points", body)))
    assert len(out["landmarks"]) == 0
    assert out["problems"]["path"].tolist() == ["$.NumberOfPredictedPoints"]


def test_key_of_the_wrong_view_keeps_row_with_null_name():
    body = load("ceph_lateral_points")
    body["Results"]["Front_3"] = {"x_coordinate": 1.5, "y_coordinate": 2.5}
    body["NumberOfPredictedPoints"] = 170
    out = convert.tables(frame(row("ceph_lateral_points", body)))
    lm = out["landmarks"]
    odd = lm[lm["landmark"] == "Front_3"]
    assert len(odd) == 1 and pd.isna(odd["name"].iloc[0])
    assert (odd[["x", "y"]].to_numpy() == [[1.5, 2.5]]).all()
    assert "Front_3" in out["problems"]["reason"][0]


def test_user_landmark_map_replaces_names():
    user = pd.DataFrame({"key": ["Later_1", "Later_2"], "name": ["Sella", "Nasion"]})
    lm = convert.landmarks(
        frame(row("ceph_lateral_points", load("ceph_lateral_points"))), landmark_map=user
    )
    assert lm["name"].iloc[:2].tolist() == ["Sella", "Nasion"]
    assert lm["name"].iloc[2:].isna().all()  # unmapped → null
    as_dict = convert.landmarks(
        frame(row("ceph_lateral_points", load("ceph_lateral_points"))),
        landmark_map={"Later_3": "Orbitale"},
    )
    assert as_dict["name"].iloc[2] == "Orbitale" and as_dict["name"].isna().sum() == 168


def test_legit_zero_and_one_coordinates_survive_the_recheck():
    body = load("ceph_lateral_points")
    body["Results"]["Later_5"] = {"x_coordinate": 0, "y_coordinate": 1.0}
    body["Results"]["Later_6"] = {"x_coordinate": 1, "y_coordinate": 0.0}
    lm = convert.landmarks(frame(row("ceph_lateral_points", body)))
    got = lm.set_index("landmark").loc[["Later_5", "Later_6"], ["x", "y"]].to_numpy()
    np.testing.assert_array_equal(got, [[0.0, 1.0], [1.0, 0.0]])


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda b: b.pop("Results"), "$.Results"),
        (lambda b: b.__setitem__("Results", []), "$.Results"),
        (lambda b: b.pop("NumberOfPredictedPoints"), "$.NumberOfPredictedPoints"),
        (lambda b: b.__setitem__("NumberOfPredictedPoints", 169.0), "$.NumberOfPredictedPoints"),
        (lambda b: b.pop("Version"), "$.Version"),
        (
            lambda b: b["Results"]["Later_12"].__setitem__("x_coordinate", "12.5"),
            "$.Results.Later_12.x_coordinate",
        ),
        (
            lambda b: b["Results"]["Later_12"].__setitem__("y_coordinate", True),
            "$.Results.Later_12.y_coordinate",
        ),
        (
            lambda b: b["Results"]["Later_12"].__setitem__("y_coordinate", None),
            "$.Results.Later_12.y_coordinate",
        ),
        (
            lambda b: b["Results"]["Later_12"].__setitem__("x_coordinate", 1e300),
            "$.Results.Later_12.x_coordinate",
        ),
        (
            lambda b: b["Results"]["Later_12"].__setitem__("x_coordinate", [1, 2]),
            "$.Results.Later_12.x_coordinate",
        ),
        (lambda b: b["Results"]["Later_12"].pop("y_coordinate"), "$.Results.Later_12.y_coordinate"),
        (lambda b: b["Results"]["Later_12"].__setitem__("z", 3), "$.Results.Later_12"),
        (lambda b: b["Results"].__setitem__("Later_12", [1, 2]), "$.Results.Later_12"),
        (lambda b: b["Results"].__setitem__("Later_12", "x"), "$.Results.Later_12"),
    ],
)
def test_malformed_landmark_bodies_name_the_path(mutate, path):
    body = load("ceph_lateral_points")
    mutate(body)
    good_body = load("ceph_lateral_points")
    good_body["PatientID"] = "P000"
    good = row("ceph_lateral_points", good_body, patient_id="P000")
    bad = row("ceph_lateral_points", body)
    with pytest.raises(ResponseFormatError) as info:
        convert.landmarks(frame(good, bad))
    err = info.value
    assert (err.path, err.endpoint, err.patient_id, err.timestamp, err.row) == (
        path,
        "ceph_lateral_points",
        PID,
        TS,
        1,
    )
    assert path in str(err)
    # collect mode: the bad response becomes a problem, the good one converts
    out = convert.tables(frame(good, bad), errors="collect")
    assert set(out["landmarks"]["patient_id"]) == {"P000"} and len(out["landmarks"]) == 169
    probs = out["problems"]
    assert probs["path"].tolist() == [path] and probs["row"].tolist() == [1]
    assert probs["reason"][0].endswith("(response dropped)")


def test_non_finite_number_in_a_parsed_dict_body():
    body = load("ceph_lateral_points")
    body["Results"]["Later_7"]["x_coordinate"] = math.nan
    responses = frame(row("ceph_lateral_points", "{}"))
    responses["body"] = pd.Series([body], dtype=object)  # parsed dict: JSON text cannot hold NaN
    with pytest.raises(ResponseFormatError, match="finite") as info:
        convert.landmarks(responses)
    assert info.value.path == "$.Results.Later_7.x_coordinate"


def test_nan_literal_in_json_text_is_not_valid_json():
    text = json.dumps(load("ceph_lateral_points")).replace("1001.125", "NaN", 1)
    with pytest.raises(ResponseFormatError, match="not valid JSON") as info:
        convert.landmarks(frame(row("ceph_lateral_points", text)))
    assert info.value.path == "$"
