"""findings.prevalence on hand-built detections; intervals checked against statsmodels."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from dentalkit.errors import DentalkitWarning, InputError
from dentalkit.findings import analysed_images, prevalence
from tests.teeth.factory import one_row


def _det(pid, cls, box, source="clinical", ts="2024-01-01", **extra):
    x0, y0, x1, y1 = box
    return {
        "patient_id": pid,
        "timestamp": ts,
        "source": source,
        "class_name": cls,
        "x0": x0,
        "y0": y0,
        "x1": x1,
        "y1": y1,
        **extra,
    }


def _count(pid, cls, n, source="clinical", ts="2024-01-01", **extra):
    return {
        "patient_id": pid,
        "timestamp": ts,
        "source": source,
        "class_name": cls,
        "count": n,
        **extra,
    }


def _images(*items):
    return pd.DataFrame([{"patient_id": p, "timestamp": ts, "source": s} for p, s, ts in items])


@pytest.fixture
def data():
    findings = pd.DataFrame(
        [
            _det("a", "decay", (10, 10, 20, 30)),  # 10 × 20
            _det("a", "decay", (50, 50, 56, 54)),  # 6 × 4
            _det("a", "restoration", (0, 0, 8, 8)),  # 8 × 8
            _det("c", "decay", (0, 0, 4, 10)),  # 4 × 10
            _det("a", "decay", (0, 0, 30, 40), source="pano"),  # 30 × 40
        ]
    )
    counts = pd.DataFrame(
        [
            _count("a", "decay", 2),
            _count("a", "restoration", 1),
            _count("b", "decay", 0),
            _count("c", "decay", 1),
        ]
    )
    images = _images(
        ("a", "clinical", "2024-01-01"),
        ("b", "clinical", "2024-01-01"),
        ("c", "clinical", "2024-01-01"),
        ("d", "clinical", "2024-01-01"),  # nothing detected, ImageContents {}: no row anywhere
        ("a", "pano", "2024-01-01"),
        ("d", "pano", "2024-01-01"),  # Results {} on the pano
    )
    return findings, counts, images


def test_images_without_detections_count_in_denominators(data):
    findings, counts, images = data
    res = prevalence(findings, counts, images=images)
    decay = one_row(res.prevalence, source="clinical", class_name="decay")
    assert (decay["n_units"], decay["n_units_with"]) == (4, 2)  # a and c of a, b, c, d
    assert decay["prevalence"] == pytest.approx(0.5)
    lo, hi = proportion_confint(2, 4, method="wilson")
    assert (decay["ci_low"], decay["ci_high"]) == pytest.approx((lo, hi))
    assert decay["n_images"] == 4
    assert decay["n_detections"] == 3
    assert decay["detections_per_image"] == pytest.approx(3 / 4)
    resto = one_row(res.prevalence, source="clinical", class_name="restoration")
    assert (resto["n_units"], resto["n_units_with"]) == (4, 1)
    pano = one_row(res.prevalence, source="pano", class_name="decay")
    assert (pano["n_units"], pano["n_units_with"]) == (2, 1)
    assert pano["detections_per_image"] == pytest.approx(0.5)
    assert res.images.set_index(["patient_id", "source"]).loc[("d", "pano"), "n_detections"] == 0


def test_inferring_images_warns_and_misses_empty_images(data):
    findings, counts, _ = data
    with pytest.warns(DentalkitWarning, match="images in which nothing was detected"):
        res = prevalence(findings, counts)
    decay = one_row(res.prevalence, source="clinical", class_name="decay")
    # b is known from its ImageContents row; d (nothing at all) is invisible
    assert (decay["n_units"], decay["n_units_with"]) == (3, 2)
    pano = one_row(res.prevalence, source="pano", class_name="decay")
    assert (pano["n_units"], pano["n_units_with"]) == (1, 1)


def test_box_sizes_and_calibration(data):
    findings, counts, images = data
    res = prevalence(findings, counts, images=images)
    b = res.boxes
    np.testing.assert_allclose(b["box_width"], [10, 6, 8, 4, 30])
    np.testing.assert_allclose(b["box_height"], [20, 4, 8, 10, 40])
    np.testing.assert_allclose(b["box_area"], [200, 24, 64, 40, 1200])
    sizes = res.box_sizes
    area = one_row(sizes, source="clinical", class_name="decay", measure="area")
    vals = np.array([200.0, 24.0, 40.0])
    assert area["n"] == 3
    assert area["mean"] == pytest.approx(vals.mean())
    assert area["median"] == pytest.approx(40.0)
    assert area["sd"] == pytest.approx(vals.std(ddof=1))
    assert (area["q1"], area["q3"]) == pytest.approx(tuple(np.quantile(vals, [0.25, 0.75])))
    assert area["unit"] == "px²"
    mm = prevalence(findings, counts, images=images, mm_per_px={"clinical": 0.5, "pano": 0.1})
    np.testing.assert_allclose(mm.boxes["box_area"], [50, 6, 16, 10, 12])
    assert one_row(mm.box_sizes, source="pano", class_name="decay", measure="width")["unit"] == "mm"


def test_consistency_lists_every_mismatch(data):
    findings, counts, images = data
    counts = pd.concat(
        [
            counts.replace({"count": {2: 3}}),  # a: decay reported 3, detected 2
            pd.DataFrame([_count("b", "bracket", 2)]),  # reported, never detected
        ],
        ignore_index=True,
    )
    counts = counts[~((counts["patient_id"] == "a") & (counts["class_name"] == "restoration"))]
    res = prevalence(findings, counts, images=images)
    c = res.consistency.set_index(["patient_id", "class_name"])
    assert len(c) == 3
    assert tuple(c.loc[("a", "decay"), ["count_reported", "n_detections", "difference"]]) == (
        3,
        2,
        1,
    )
    assert tuple(c.loc[("b", "bracket"), ["count_reported", "n_detections"]]) == (2, 0)
    # a restoration detected but not in ImageContents
    assert tuple(c.loc[("a", "restoration"), ["count_reported", "n_detections"]]) == (0, 1)
    assert set(res.consistency["source"]) == {"clinical"}  # pano has no ImageContents
    agree = prevalence(*data[:2], images=data[2]).consistency
    assert agree.empty


def test_units_patient_session_image():
    findings = pd.DataFrame(
        [
            _det("a", "decay", (0, 0, 1, 1), ts="t1", image_name="front.jpg"),
            _det("a", "decay", (0, 0, 1, 1), ts="t2", image_name="left.jpg"),
        ]
    )
    images = pd.DataFrame(
        {
            "patient_id": ["a", "a", "a", "a", "b"],
            "timestamp": ["t1", "t1", "t2", "t2", "t1"],
            "source": ["clinical"] * 5,
            "image_name": ["front.jpg", "left.jpg", "front.jpg", "left.jpg", "front.jpg"],
        }
    )
    counts = pd.DataFrame(
        [
            _count("a", "decay", 1, ts="t1", image_name="front.jpg"),
            _count("a", "decay", 1, ts="t2", image_name="left.jpg"),
        ]
    )
    by_unit = {
        u: one_row(
            prevalence(findings, counts, images=images, unit=u).prevalence, class_name="decay"
        )
        for u in ("patient", "session", "image")
    }
    assert (by_unit["patient"]["n_units"], by_unit["patient"]["n_units_with"]) == (2, 1)
    assert (by_unit["session"]["n_units"], by_unit["session"]["n_units_with"]) == (3, 2)
    assert (by_unit["image"]["n_units"], by_unit["image"]["n_units_with"]) == (5, 2)
    assert by_unit["image"]["detections_per_image"] == pytest.approx(2 / 5)


def test_classes_never_detected_and_groups(data):
    findings, counts, images = data
    groups = pd.DataFrame({"patient_id": list("abcd"), "arm": ["x", "x", "y", "y"]})
    res = prevalence(findings, counts, images=images, by="arm", groups=groups, classes=["calculus"])
    calc = one_row(res.prevalence, arm="x", source="clinical", class_name="calculus")
    assert (calc["n_units"], calc["n_units_with"], calc["prevalence"]) == (2, 0, 0.0)
    assert calc["ci_low"] == 0.0
    assert calc["ci_high"] == pytest.approx(proportion_confint(0, 2, method="wilson")[1])
    x = one_row(res.prevalence, arm="x", source="clinical", class_name="decay")
    y = one_row(res.prevalence, arm="y", source="clinical", class_name="decay")
    assert (x["n_units"], x["n_units_with"]) == (2, 1)
    assert (y["n_units"], y["n_units_with"]) == (2, 1)


def test_bad_rows_raise_or_are_collected(data):
    findings, counts, images = data
    bad = pd.concat(
        [
            findings,
            pd.DataFrame(
                [
                    _det("zz", "decay", (0, 0, 1, 1)),  # image not analysed
                    _det("c", "decay", (10, 0, 5, 5)),  # x1 < x0
                ]
            ),
        ],
        ignore_index=True,
    )
    bad_counts = pd.concat(
        [counts, pd.DataFrame([_count("c", "restoration", -1)])], ignore_index=True
    )
    with pytest.raises(InputError, match="3 problem") as info:
        prevalence(bad, bad_counts, images=images)
    assert "zz" in str(info.value)
    res = prevalence(bad, bad_counts, images=images, errors="collect")
    p = res.problems
    assert sorted(zip(p["table"], p["row"], strict=True)) == [
        ("finding_counts", 4),
        ("findings", 5),
        ("findings", 6),
    ]
    decay = one_row(res.prevalence, source="clinical", class_name="decay")
    # the malformed box still is a detection of c; the unknown image is left out
    assert (decay["n_units"], decay["n_units_with"], decay["n_detections"]) == (4, 2, 4)
    assert np.isnan(res.boxes["box_area"].iloc[-1])


def test_argument_checks(data):
    findings, counts, images = data
    with pytest.raises(InputError, match="unit="):
        prevalence(findings, counts, images=images, unit="tooth")
    with pytest.raises(InputError, match="x1"):
        prevalence(findings.drop(columns="x1"), counts, images=images)
    with pytest.raises(InputError, match="count"):
        prevalence(findings, counts.drop(columns="count"), images=images)
    with pytest.raises(InputError, match="images needs"):
        prevalence(findings, counts, images=images.drop(columns="source"))
    with pytest.raises(InputError, match="group column"):
        prevalence(findings, counts, images=images, by="arm")


def test_analysed_images_from_responses():
    responses = pd.DataFrame(
        {
            "patient_id": ["a", "b", "c", "d", "e"],
            "timestamp": ["t"] * 5,
            "endpoint": [
                "clinical_images",
                "panos_findings",
                "panos_findings",
                "pano_segmentation",
                "clinical_images",
            ],
            "status_code": [200, 200, 429, 200, 200],
            "error": [None, None, "HTTP 429", None, None],
        }
    )
    out = analysed_images(responses)
    assert out[["patient_id", "source"]].to_numpy().tolist() == [
        ["a", "clinical"],
        ["b", "pano"],
        ["e", "clinical"],
    ]


def test_analysed_images_reads_the_stored_image_name_from_the_body():
    responses = pd.DataFrame(
        {
            "patient_id": ["a", "a", "a"],
            "timestamp": ["t", "t", "t"],
            "endpoint": ["clinical_images"] * 3,
            "status_code": [200, 200, 200],
            "error": [None, None, None],
            "body": [
                '{"Version": "1", "ImageName": "front.jpg", "Results": {}}',
                '{"Version": "1", "ImageName": "left.jpg", "Results": {}}',
                "not json",
            ],
        }
    )
    out = analysed_images(responses)
    assert out["image_name"].iloc[:2].tolist() == ["front.jpg", "left.jpg"]
    assert pd.isna(out["image_name"].iloc[2])  # unreadable body: no name, row kept


def test_no_counts_means_nothing_to_compare(data):
    findings, _, images = data
    res = prevalence(findings, images=images)
    assert res.consistency.empty
    assert one_row(res.prevalence, source="clinical", class_name="decay")["n_units_with"] == 2
