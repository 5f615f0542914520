"""tooth_keypoints and arch_points from the occlusogram keypoint responses."""

from __future__ import annotations

import pandas as pd
import pytest

from dentalkit import convert
from dentalkit.errors import ResponseFormatError
from tests.convert._helpers import PID, frame, load, row

pytestmark = pytest.mark.filterwarnings("error::dentalkit.errors.DentalkitWarning")


def both() -> dict[str, pd.DataFrame]:
    return convert.tables(
        frame(
            row("occlusogram_upper_points", load("occlusogram_upper_points")),
            row("/occlusogram-lower-points", load("occlusogram_lower_points")),
        )
    )


def test_tooth_keypoints_from_the_spec_shapes():
    tk = both()["tooth_keypoints"]
    got = list(
        zip(
            tk["arch"].astype(str),
            tk["tooth"].astype(str),
            tk["fdi"].tolist(),
            tk["missing"].tolist(),
            tk["point"].astype(str),
            tk["x"].tolist(),
            tk["y"].tolist(),
            strict=True,
        )
    )
    assert got == [
        ("up", "m1_rgt_up", 16, False, "centroid", 212.37, 401.92),
        ("up", "m1_rgt_up", 16, False, "t01", 200.5, 390.25),
        ("up", "m1_rgt_up", 16, False, "t02", 224.0, 413.5),
        ("up", "m3_lft_up", 28, True, "centroid", 0.0, 0.0),  # missing tooth: centroid as sent
        ("lo", "c_rgt_lo", 43, False, "centroid", 120.5, 80.25),
        ("lo", "c_rgt_lo", 43, False, "t01", 118.0, 78.5),
    ]
    assert set(tk["patient_id"]) == {PID}  # the lower response has no PatientID echo


def test_arch_points_with_integer_index():
    ap = both()["arch_points"]
    assert ap["point"].astype(str).tolist() == ["t25", "t27", "t05"]
    assert ap["index"].tolist() == [25, 27, 5] and ap["index"].dtype == "int16"
    assert ap["arch"].astype(str).tolist() == ["up", "up", "lo"]
    assert ap[["x", "y"]].to_numpy().tolist() == [[150.5, 300.25], [180.75, 250.5], [100.0, 90.0]]


def test_keypoint_responses_carry_the_newer_version_label():
    out = convert.tables(
        frame(
            row("occlusogram_upper_points", load("occlusogram_upper_points")),
            row("occlusogram_upper_seg", load("occlusogram_upper_seg")),
        )
    )
    kp = out["tooth_keypoints"]["model_version"].iloc[0]
    seg = out["teeth"]["model_version"].iloc[0]
    # spec "Versioning" 3: the keypoint label's second numeric part is higher
    assert int(kp.split(".")[1]) > int(seg.split(".")[1])


def test_empty_maps_give_no_rows():
    body = load("occlusogram_lower_points")
    body["Teeth"] = {}
    body["CatenaryPoints"] = {}
    out = convert.tables(frame(row("occlusogram_lower_points", body)))
    assert len(out["tooth_keypoints"]) == 0 and len(out["arch_points"]) == 0
    assert len(out["problems"]) == 0


def test_unknown_point_name_and_tooth_prefix_are_kept_and_reported():
    body = load("occlusogram_upper_points")
    body["Teeth"]["m1_rgt_up"]["cusp_mb"] = [1.0, 2.0]
    body["Teeth"]["q7_rgt_up"] = {"missing": False, "centroid": [3.0, 4.0]}
    body["Teeth"]["i1_lft_lo"] = {"missing": False, "centroid": [5.0, 6.0]}
    out = convert.tables(frame(row("occlusogram_upper_points", body)))
    tk = out["tooth_keypoints"]
    assert "cusp_mb" in set(tk["point"].astype(str))
    assert tk.loc[tk["tooth"] == "q7_rgt_up", "fdi"].isna().all()
    assert out["problems"]["path"].tolist() == [
        "$.Teeth.m1_rgt_up.cusp_mb",
        "$.Teeth.q7_rgt_up",
        "$.Teeth.i1_lft_lo",
    ]


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda b: b.pop("Teeth"), "$.Teeth"),
        (lambda b: b.pop("CatenaryPoints"), "$.CatenaryPoints"),
        (lambda b: b["Teeth"]["m1_rgt_up"].pop("centroid"), "$.Teeth.m1_rgt_up.centroid"),
        (lambda b: b["Teeth"]["m1_rgt_up"].pop("missing"), "$.Teeth.m1_rgt_up.missing"),
        (lambda b: b["Teeth"]["m1_rgt_up"].__setitem__("t01", [1.0]), "$.Teeth.m1_rgt_up.t01"),
        (
            lambda b: b["Teeth"]["m1_rgt_up"].__setitem__("missing", "no"),
            "$.Teeth.m1_rgt_up.missing",
        ),
        (lambda b: b["CatenaryPoints"].__setitem__("t25", ["1", 2]), "$.CatenaryPoints.t25[0]"),
        (lambda b: b["CatenaryPoints"].__setitem__("tx", [1, 2]), "$.CatenaryPoints.tx"),
        (lambda b: b["CatenaryPoints"].__setitem__("t99999", [1, 2]), "$.CatenaryPoints.t99999"),
        (lambda b: b.pop("Version"), "$.Version"),
    ],
)
def test_malformed_keypoint_bodies(mutate, path):
    body = load("occlusogram_upper_points")
    mutate(body)
    with pytest.raises(ResponseFormatError) as info:
        convert.arch_points(frame(row("occlusogram_upper_points", body)))
    assert info.value.path == path
    out = convert.tables(frame(row("occlusogram_upper_points", body)), errors="collect")
    assert len(out["tooth_keypoints"]) == 0 and len(out["arch_points"]) == 0
    # a dropped response is reported against both tables it feeds
    assert out["problems"]["table"].tolist() == ["tooth_keypoints", "arch_points"]
    assert out["problems"]["path"].tolist() == [path, path]
