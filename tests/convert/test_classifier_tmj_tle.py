"""classifications, tmj and tle."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from dentalkit import convert
from dentalkit.errors import ResponseFormatError
from tests.convert._helpers import TLE_OPTIONS, frame, load, row, tle_row

pytestmark = pytest.mark.filterwarnings("error::dentalkit.errors.DentalkitWarning")


def test_classification_row():
    c = convert.classifications(frame(row("classifier", load("classifier"))))
    assert c[["image_name", "category", "confidence"]].astype(object).to_numpy().tolist() == [
        ["P001_ceph_0001.png", "lateral_ceph", 0.9731]
    ]
    assert c["model_version"].isna().all()  # the classifier carries no Version
    assert str(c["image_name"].dtype) == "str"


def test_confidence_outside_unit_interval_is_reported():
    body = load("classifier")
    body["Classification"]["confidence"] = 1.5
    out = convert.tables(frame(row("classifier", body)))
    assert out["classifications"]["confidence"].tolist() == [1.5]
    assert out["problems"]["path"].tolist() == ["$.Classification.confidence"]


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda b: b.pop("Classification"), "$.Classification"),
        (lambda b: b.pop("ImageName"), "$.ImageName"),
        (lambda b: b["Classification"].pop("category"), "$.Classification.category"),
        (
            lambda b: b["Classification"].__setitem__("confidence", "0.9"),
            "$.Classification.confidence",
        ),
        (lambda b: b["Classification"].__setitem__("category", ""), "$.Classification.category"),
        (lambda b: b.__setitem__("Version", 3), "$.Version"),
    ],
)
def test_malformed_classifier(mutate, path):
    body = load("classifier")
    mutate(body)
    with pytest.raises(ResponseFormatError) as info:
        convert.classifications(frame(row("classifier", body)))
    assert info.value.path == path


def test_tmj_row_and_spec_sentence():
    t = convert.tmj(frame(row("tmj_xsectional", load("tmj_xsectional"))))
    assert t["image_name"].tolist() == ["P001_tmj_0001.png"]
    assert t["finding"].tolist() == ["No findings were detected."]
    assert t["has_finding"].tolist() == [False]
    assert t["model_version"].isna().all()


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("No findings were detected.", False),
        ("No findings detected", False),
        ("no finding detected.", False),
        ("  No   significant findings were found in the image. ", False),
        ("There are no findings.", False),
        ("No TMJ abnormality detected", False),
        ("No abnormalities were identified!", False),
        ("Nothing detected", False),
        ("None", False),
        ("Findings: none", False),
        ("Flattening of the left condylar head.", True),
        ("Erosion of the articular surface detected", True),
        ("No effusion; condyle flattened.", True),
        ("No findings detected on the left; erosion on the right.", True),
        ("Osteophyte present", True),
    ],
)
def test_has_finding_rule(sentence, expected):
    assert convert.has_finding(sentence) is expected
    body = load("tmj_xsectional")
    body["Results"]["Finding"] = sentence
    assert convert.tmj(frame(row("tmj_xsectional", body)))["has_finding"].tolist() == [expected]


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda b: b.pop("Results"), "$.Results"),
        (lambda b: b["Results"].pop("Finding"), "$.Results.Finding"),
        (lambda b: b["Results"].__setitem__("Finding", ""), "$.Results.Finding"),
        (lambda b: b["Results"].__setitem__("Finding", ["a"]), "$.Results.Finding"),
        (lambda b: b["Results"].__setitem__("Finding", "x" * 2_000_000), "$.Results.Finding"),
    ],
)
def test_malformed_tmj(mutate, path):
    body = load("tmj_xsectional")
    mutate(body)
    with pytest.raises(ResponseFormatError) as info:
        convert.tmj(frame(row("tmj_xsectional", body)))
    assert info.value.path == path
    assert len(str(info.value)) < 500  # a 2 MB string stays out of the message


def test_tle_row_inputs_as_sent():
    t = convert.tle(frame(tle_row()))
    assert [t[f"p{i:02d}"].iloc[0] for i in range(1, 12)] == list(TLE_OPTIONS.values())
    assert t["app"].tolist() == ["treatment-length-estimator"]
    assert t["estimate_length_months"].tolist() == [22.5]
    assert t["patient_id"].isna().all() and t["session_time"].isna().all()


def test_tle_numbers_in_options_become_query_text():
    options = dict(TLE_OPTIONS, p01=14, p06=4.5)
    t = convert.tle(frame(tle_row(options=options)))
    assert t["p01"].tolist() == ["14"] and t["p06"].tolist() == ["4.5"]


def test_tle_with_a_session_key():
    t = convert.tle(frame(tle_row(patient_id="P9", timestamp="2024-05-01")))
    assert t["patient_id"].tolist() == ["P9"]
    assert t["session_time"].tolist() == [pd.Timestamp("2024-05-01", tz="UTC")]


def test_negative_estimate_is_reported():
    out = convert.tables(frame(tle_row(body={"app": "x", "estimate_length": -2})))
    assert out["tle"]["estimate_length_months"].tolist() == [-2.0]
    assert out["problems"]["path"].tolist() == ["$.estimate_length"]


@pytest.mark.parametrize(
    ("body", "options", "path"),
    [
        ({"app": "x"}, TLE_OPTIONS, "$.estimate_length"),
        ({"estimate_length": 3}, TLE_OPTIONS, "$.app"),
        ({"app": "x", "estimate_length": "22"}, TLE_OPTIONS, "$.estimate_length"),
        ({"app": "x", "estimate_length": 3}, {k: v for k, v in TLE_OPTIONS.items() if k != "p05"}, "options.p05"),
        ({"app": "x", "estimate_length": 3}, dict(TLE_OPTIONS, p02=True), "options.p02"),
        ({"app": "x", "estimate_length": 3}, dict(TLE_OPTIONS, p02=["F"]), "options.p02"),
        ({"app": "x", "estimate_length": 3}, [], "options"),
    ],
)  # fmt: skip
def test_malformed_tle(body, options, path):
    with pytest.raises(ResponseFormatError) as info:
        convert.tle(frame(tle_row(body=body, options=options)))
    assert info.value.path == path


def test_tle_without_options_column():
    responses = frame(row("tle", json.dumps(load("tle")), patient_id=None, timestamp=None))
    with pytest.raises(ResponseFormatError, match="options") as info:
        convert.tle(responses)
    assert info.value.path == "options"
