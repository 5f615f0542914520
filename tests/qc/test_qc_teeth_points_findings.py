"""qc.teeth, qc.arch_points, qc.findings and qc.tle_inputs: each rule on hand-built cases
whose answer is known by construction, and on sandbox answers (plain: nothing to flag;
with an injected error: found, as the error records say)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from shapely import box

from dentalkit import convert, qc
from dentalkit.errors import InputError
from tests.qc.qc_cohort import responses

# ---- teeth ------------------------------------------------------------------------------


def _row(fdi: int, x0: float, *, pid: str = "P1", source: str = "pano", missing: bool = False,
         width: float = 8.0, height: float = 20.0) -> dict:  # fmt: skip
    quadrant, digit = divmod(fdi, 10)
    types = ("i1", "i2", "c", "p1", "p2", "m1", "m2", "m3")
    side = "rgt" if quadrant in (1, 4) else "lft"
    arch = "up" if quadrant in (1, 2) else "lo"
    return {
        "patient_id": pid, "timestamp": "t1", "source": source,
        "tooth": f"{types[digit - 1]}_{side}_{arch}", "fdi": fdi, "missing": missing,
        "geometry": None if missing else box(x0, 0, x0 + width, height), "repaired": False,
    }  # fmt: skip


def _upper_row(pid: str = "P1", order=(13, 12, 11, 21, 22, 23)) -> list[dict]:
    """Upper teeth in a row, left to right on the image (patient's right first)."""
    return [_row(f, 10.0 * i, pid=pid) for i, f in enumerate(order)]


def test_teeth_in_order_pass_and_swapped_numbers_are_out_of_order():
    ok = qc.teeth(pd.DataFrame(_upper_row()))
    assert not ok["flagged"].any()
    assert set(ok["method"]) == {"single-session rules"}
    swapped = qc.teeth(pd.DataFrame(_upper_row(order=(13, 11, 12, 21, 22, 23))))
    assert swapped.loc[swapped["flagged"], "fdi"].tolist() == [11, 12]
    assert swapped.loc[swapped["fdi"] == 11, "failed_checks"].iloc[0] == ["order"]
    assert "out of order with FDI 12" in swapped.loc[swapped["fdi"] == 11, "reason"].iloc[0]


def test_a_tooth_outlined_twice_overlaps_its_neighbour():
    rows = _upper_row()
    rows[3]["geometry"] = box(21.0, 0, 29.0, 20)  # 21 drawn on top of 11 (x 20-28)
    out = qc.teeth(pd.DataFrame(rows))
    assert out.loc[out["flagged"], "fdi"].tolist() == [11, 21]
    assert "overlaps FDI 21 by 88 %" in out.loc[out["fdi"] == 11, "reason"].iloc[0]


def test_a_present_tooth_without_outline_fails_the_outline_rule():
    rows = _upper_row()
    rows[0]["geometry"] = None
    out = qc.teeth(pd.DataFrame(rows))
    assert out.loc[out["flagged"], "failed_checks"].tolist() == [["outline"]]


def test_missing_status_is_compared_across_the_images_of_a_session():
    pano = _upper_row()
    occl = [dict(r, source="occlusogram_upper") for r in _upper_row()]
    front = [dict(r, source="frontal") for r in _upper_row()]
    front[1] = dict(front[1], missing=True, geometry=None)  # 12 missed on the photo only
    out = qc.teeth(pd.DataFrame(pano + occl + front))
    hit = out[out["flagged"]]
    assert hit[["source", "fdi"]].to_numpy().tolist() == [["frontal", 12]]
    assert (
        "missing in frontal but present in 2 of the session's other 2 image(s)"
        in hit["reason"].iloc[0]
    )
    # two images that disagree: neither can be believed over the other
    out = qc.teeth(pd.DataFrame(pano + front))
    assert sorted(out.loc[out["flagged"], "source"].astype(str)) == ["frontal", "pano"]


def test_an_area_far_from_the_cohorts_for_its_number_is_flagged():
    rows = []
    for i in range(30):
        rows += _upper_row(pid=f"P{i}")
    rows[1] = dict(rows[1], geometry=box(10, 0, 18, 60))  # P0's 12: three times as long
    out = qc.teeth(pd.DataFrame(rows), min_sessions=30)
    hit = out[out["flagged"]]
    assert hit["patient_id"].astype(str).tolist() == ["P0"]
    assert "area" in hit["failed_checks"].iloc[0] and hit["fdi"].iloc[0] == 12
    assert set(out["method"]) == {"cohort model and single-session rules"}
    few = qc.teeth(pd.DataFrame(rows[:60]), min_sessions=30)
    assert set(few["method"]) == {"single-session rules"}
    assert "fewer than 30 images" in few["method_reason"].iloc[0]


def test_sandbox_segmentations_pass_and_their_injected_errors_are_found():
    pids = [f"QTT-{i}" for i in range(40)]
    plain = convert.teeth(responses("pano_segmentation", pids)[0])
    assert not qc.teeth(plain)["flagged"].any()
    resp, rec = responses("occlusogram_upper_seg", pids, mode="gross", seed=5)
    out = qc.teeth(convert.teeth(resp)).set_index(["patient_id", "tooth"])
    swaps = rec[rec["kind"] == "fdi_swap"]
    assert len(swaps) >= 5
    for _, r in swaps.iterrows():
        assert out.loc[[(r["patient_id"], t) for t in r["teeth"]], "flagged"].all()


def test_teeth_input_is_checked():
    with pytest.raises(InputError, match="lacks column"):
        qc.teeth(pd.DataFrame({"patient_id": ["P"]}))
    rows = _upper_row()
    rows[0]["fdi"] = None
    with pytest.raises(InputError, match="without an FDI number"):
        qc.teeth(pd.DataFrame(rows))
    out, problems = qc.teeth(pd.DataFrame(rows), errors="collect")
    assert out["method"].iloc[0] == "not checked" and len(problems) == 1


# ---- arch points ------------------------------------------------------------------------


def test_sandbox_arch_points_pass_and_points_given_out_of_order_are_found():
    pids = [f"QTA-{i}" for i in range(60)]
    plain = qc.arch_points(convert.arch_points(responses("occlusogram_upper_points", pids)[0]))
    assert not plain["flagged"].any() and len(plain) == 60
    resp, rec = responses("occlusogram_lower_points", pids, mode="gross", seed=2)
    out = qc.arch_points(convert.arch_points(resp)).set_index("patient_id")
    injected = rec[rec["kind"] == "arch_points_out_of_order"]
    assert len(injected) >= 3
    for _, r in injected.iterrows():
        row = out.loc[r["patient_id"]]
        assert row["flagged"] and set(r["points"]) <= set(row["suspect_points"])
    assert out["flagged"].sum() == injected["patient_id"].nunique()


def test_a_point_given_twice_breaks_the_spacing():
    pts = convert.arch_points(responses("occlusogram_upper_points", ["QTA-X"])[0])
    pts.loc[pts["point"] == "t15", ["x", "y"]] = pts.loc[
        pts["point"] == "t14", ["x", "y"]
    ].to_numpy()
    out = qc.arch_points(pts)
    assert out["flagged"].iloc[0] and "spacing" in out["failed_checks"].iloc[0]


# ---- findings ---------------------------------------------------------------------------


def test_boxes_outside_the_image_and_duplicates():
    f = pd.DataFrame({
        "patient_id": "P1", "timestamp": "t1", "source": ["pano", "pano", "pano", "clinical", "clinical"],
        "class_name": ["caries", "caries", "caries", "decay", "decay"],
        "x0": [10.0, 200.0, 2790.0, -5.0, 300.0], "y0": [10.0, 10.0, 10.0, 10.0, 10.0],
        "x1": [60.0, 260.0, 2830.0, 40.0, 300.0], "y1": [50.0, 50.0, 50.0, 50.0, 80.0],
    })  # fmt: skip
    out = qc.findings(f, image_sizes={"pano": (2800, 1400), "clinical": (1600, 1200)})
    assert out["failed_checks"].tolist() == [None, None, ["outside"], ["outside"], ["box"]]
    sizes = pd.DataFrame({"source": ["pano"], "width": [2800], "height": [1400]})
    assert qc.findings(f, image_sizes=sizes)["flagged"].tolist() == [False, False, True, True, True]
    dup = pd.concat([f.iloc[[0]], f.iloc[[0]].assign(x0=11.0, x1=61.0)], ignore_index=True)
    out = qc.findings(dup)
    assert out["failed_checks"].tolist() == [None, ["duplicate"]]
    assert "intersection over union 0.96" in out["reason"].iloc[1]


def test_a_box_with_a_missing_corner_is_left_to_the_analyses_not_flagged():
    # a missing coordinate is a hole in the data, not a misplaced box: the analyses name its
    # row and field as a problem; flagged, qc="exclude" would drop it with a wrong reason
    # ("box with no area") before any analysis could name it
    f = pd.DataFrame({
        "patient_id": "P1", "timestamp": "t1", "source": "pano", "class_name": "caries",
        "x0": [10.0, np.nan, 300.0], "y0": [10.0, 10.0, 10.0],
        "x1": [60.0, 260.0, 300.0], "y1": [50.0, 50.0, 80.0],
    })  # fmt: skip
    out = qc.findings(f, image_sizes={"pano": (2800, 1400)})
    assert out["flagged"].tolist() == [False, False, True]
    assert out["failed_checks"].tolist() == [None, None, ["box"]]


def test_sandbox_findings_pass_and_added_boxes_are_found():
    pids = [f"QTF-{i}" for i in range(60)]
    plain = qc.findings(
        convert.findings(responses("panos_findings", pids)[0]), image_sizes={"pano": (2800, 1400)}
    )
    assert not plain["flagged"].any()
    resp, rec = responses("panos_findings", pids, mode="gross", seed=3)
    out = qc.findings(convert.findings(resp), image_sizes={"pano": (2800, 1400)})
    added = rec[(rec["kind"] == "box_added") & rec["how"].isin(["duplicate", "outside"])]
    assert len(added) >= 3
    key = out.set_index(["patient_id", "x0", "y0", "x1", "y1"])["flagged"]
    for _, r in added.iterrows():
        assert key.loc[(r["patient_id"], *map(float, r["box"]))].all()


# ---- treatment-length inputs ------------------------------------------------------------


def _encoded(**changes) -> pd.DataFrame:
    row = {"patient_id": "P1", **{f"p{i:02d}": v for i, v in enumerate(
        ["14", "F", "2", "1", "0", "4.3", "3.0", "0", "0", "1", "6.5"], start=1)}}  # fmt: skip
    return pd.DataFrame([{**row, **changes}])


def test_codes_and_numbers_outside_the_codebook_are_named():
    assert not qc.tle_inputs(_encoded())["flagged"].any()
    out = qc.tle_inputs(_encoded(p06="24.5", p03="7", p11=None))
    row = out.iloc[0]
    assert row["suspect_parameters"] == ["p03", "p06", "p11"] and row["score"] == 3
    assert "24.5 is outside -10 … 20 mm" in row["reason"]
    assert "p03 (Malocclusion class)" in row["reason"]
    assert "missing value" in row["reason"]


def test_typed_inputs_are_checked_against_the_same_codebook():
    from dentalkit import tle

    typed = tle.example_patients(3)
    assert not qc.tle_inputs(typed)["flagged"].any()
    typed.loc[1, "age_years"] = 91
    out = qc.tle_inputs(typed)
    assert out["flagged"].tolist() == [False, True, False]
    assert "is outside 6 … 80 years" in out["reason"].iloc[1]
    with pytest.raises(InputError, match="neither p01"):
        qc.tle_inputs(pd.DataFrame({"patient_id": ["P"]}))


def test_every_check_returns_numbers_with_a_threshold_of_one():
    out = qc.findings(pd.DataFrame({
        "patient_id": ["P"], "timestamp": "t", "source": "pano", "class_name": "caries",
        "x0": [1.0], "y0": [1.0], "x1": [0.5], "y1": [2.0]}))  # fmt: skip
    assert out["threshold"].tolist() == [1.0] and np.isclose(out["score"], 1.0).all()
