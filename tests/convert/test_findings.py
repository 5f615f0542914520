"""findings and finding_counts (clinical and panoramic)."""

from __future__ import annotations

import pytest

from dentalkit import convert
from dentalkit.errors import ResponseFormatError
from tests.convert._helpers import frame, load, row

pytestmark = pytest.mark.filterwarnings("error::dentalkit.errors.DentalkitWarning")


def test_clinical_detections_and_counts():
    out = convert.tables(frame(row("clinical-images", load("clinical_images"))))
    f = out["findings"]
    assert f["class_name"].astype(str).tolist() == ["decay", "decay", "restoration"]
    assert f[["x0", "y0", "x1", "y1"]].to_numpy().tolist() == [
        [120.0, 80.0, 160.5, 118.25],
        [300.0, 95.0, 331.0, 140.0],
        [410.5, 60.0, 470.0, 121.5],
    ]
    assert set(f["source"]) == {"clinical"}
    c = out["finding_counts"]
    assert list(zip(c["class_name"].astype(str), c["count"], strict=True)) == [
        ("decay", 2),
        ("restoration", 1),
    ]
    assert c["count"].dtype == "int32"
    assert len(out["problems"]) == 0


def test_pano_empty_results_is_zero_rows_not_an_error():
    body = load("panos_findings")
    assert body["Results"] == {}
    out = convert.tables(frame(row("panos_findings", body)))
    assert len(out["findings"]) == 0 and len(out["finding_counts"]) == 0
    assert len(out["problems"]) == 0


def test_pano_detections_use_the_pano_source():
    body = load("panos_findings")
    body["Results"] = {
        "caries": [{"ClassName": "caries", "TopLeft": [1, 2], "BottomRight": [3, 4]}]
    }
    f = convert.findings(frame(row("/panos-findings", body)))
    assert f["source"].astype(str).tolist() == ["pano"]
    assert f[["x0", "y0", "x1", "y1"]].to_numpy().tolist() == [[1.0, 2.0, 3.0, 4.0]]


@pytest.mark.parametrize(
    ("mutate", "path", "text"),
    [
        (lambda b: b["ImageContents"].__setitem__("decay", 3), "$.ImageContents.decay", "counts 3"),
        (lambda b: b["ImageContents"].pop("restoration"), "$.ImageContents.restoration", "counts 0"),
        (lambda b: b["Results"]["decay"][0].__setitem__("ClassName", "caries"), "$.Results.decay[0].ClassName", "differs"),
        (lambda b: b["Results"]["decay"][0].__setitem__("TopLeft", [200, 80]), "$.Results.decay[0]", "above-left"),
    ],
)  # fmt: skip
def test_inconsistencies_are_reported_and_rows_kept(mutate, path, text):
    body = load("clinical_images")
    mutate(body)
    out = convert.tables(frame(row("clinical_images", body)))
    assert len(out["findings"]) == 3
    assert out["problems"]["path"].tolist() == [path]
    assert text in out["problems"]["reason"][0]


@pytest.mark.parametrize(
    ("mutate", "path"),
    [
        (lambda b: b.pop("ImageContents"), "$.ImageContents"),
        (lambda b: b["ImageContents"].__setitem__("decay", 2.0), "$.ImageContents.decay"),
        (lambda b: b["ImageContents"].__setitem__("decay", True), "$.ImageContents.decay"),
        (lambda b: b["ImageContents"].__setitem__("decay", -1), "$.ImageContents.decay"),
        (lambda b: b["Results"].__setitem__("decay", {}), "$.Results.decay"),
        (lambda b: b["Results"]["decay"][1].pop("BottomRight"), "$.Results.decay[1].BottomRight"),
        (lambda b: b["Results"]["decay"][1].__setitem__("TopLeft", [1, 2, 3]), "$.Results.decay[1].TopLeft"),
        (lambda b: b["Results"]["decay"][1].__setitem__("Score", 0.9), "$.Results.decay[1]"),
        (lambda b: b["Results"]["decay"][1].__setitem__("ClassName", None), "$.Results.decay[1].ClassName"),
    ],
)  # fmt: skip
def test_malformed_findings(mutate, path):
    body = load("clinical_images")
    mutate(body)
    with pytest.raises(ResponseFormatError) as info:
        convert.findings(frame(row("clinical_images", body)))
    assert info.value.path == path
    out = convert.tables(frame(row("clinical_images", body)), errors="collect")
    assert out["problems"]["table"].tolist() == ["findings", "finding_counts"]
