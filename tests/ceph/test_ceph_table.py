"""measure() on real-shaped tables: names, keys, maps, sessions, calibration, problems."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from ceph_fixtures import FRONTAL, LATERAL, image_table

from dentalkit.ceph import load_name_map, measure, rename_landmarks
from dentalkit.errors import DentalkitWarning, InputError
from dentalkit.landmark_map import load_landmark_map

IDS = ["SNA", "SNB", "ANB", "S_N", "Wits"]


def _by_id(out):
    return dict(zip(out["measure"].astype(str), out["value"], strict=True))


def _cohort():
    a = image_table(LATERAL, patient_id="p2", timestamp="2021-05-01")
    b = image_table(LATERAL, patient_id="p1", timestamp="2020-01-01", mirror=True)
    c = image_table(FRONTAL, view="frontal", patient_id="p1", timestamp="2020-01-01")
    return pd.concat([a, b, c], ignore_index=True)


def test_output_schema_and_order():
    out = measure(_cohort(), [*IDS, "maxillary_width"], mm_per_px=0.1)
    assert list(out.columns) == [
        "patient_id",
        "timestamp",
        "view",
        "measure",
        "value",
        "unit",
        "analysis",
    ]
    for col in ("view", "measure", "unit", "analysis"):
        assert isinstance(out[col].dtype, pd.CategoricalDtype), col
    assert out["value"].dtype == np.float64
    lat = out[out["view"] == "lateral"]
    assert lat["patient_id"].tolist() == ["p1"] * 5 + ["p2"] * 5  # sorted by session key
    assert lat["measure"].astype(str).tolist() == IDS * 2
    fro = out[out["view"] == "frontal"]
    assert fro["measure"].astype(str).tolist() == ["maxillary_width"]
    assert fro["value"].item() == pytest.approx(63.0)  # J-J of the fixture


def test_categorical_input_gives_same_numbers_as_strings():
    t = _cohort()
    cat = t.astype({c: "category" for c in ("patient_id", "timestamp", "view", "name")})
    a = measure(t, IDS, mm_per_px=0.1)
    b = measure(cat, IDS, mm_per_px=0.1)
    np.testing.assert_array_equal(a["value"].to_numpy(), b["value"].to_numpy())


def test_null_names_fall_back_to_the_landmark_map():
    m = load_landmark_map("lateral")
    key_of = dict(zip(m["name"], m["key"], strict=True))
    t = image_table(LATERAL)
    t["landmark"] = t["name"].map(key_of)
    t["name"] = None
    got = _by_id(measure(t, IDS, mm_per_px=0.1))
    want = _by_id(measure(image_table(LATERAL), IDS, mm_per_px=0.1))
    assert got == pytest.approx(want)


def test_user_landmark_map_is_used_for_keys():
    t = image_table({"S": (0.0, 0.0), "N": (70.0, 0.0), "A": (70.0, -50.0)})
    t["landmark"] = ["K1", "K2", "K3"]
    t["name"] = None
    user_map = pd.DataFrame({"key": ["Later_1", "Later_2", "Later_3"], "name": ["S", "N", "A"]})
    t["landmark"] = ["Later_1", "Later_2", "Later_3"]
    out = measure(t, ["SNA"], landmark_map=user_map, errors="raise")
    assert out["value"].item() == pytest.approx(90.0)


def test_foreign_names_through_a_name_map():
    t = image_table({"S": (0.0, 0.0), "N": (70.0, 0.0), "A": (70.0, -50.0)})
    t["name"] = ["Sella", "Nasion", "Subspinale"]
    nm = pd.DataFrame({"source_name": ["Sella", "Nasion", "Subspinale"], "name": ["S", "N", "A"]})
    assert measure(t, ["SNA"], name_map=nm, errors="raise")["value"].item() == pytest.approx(90.0)
    renamed = rename_landmarks(t, nm)
    assert renamed["name"].tolist() == ["S", "N", "A"]
    assert measure(renamed, ["SNA"], errors="raise")["value"].item() == pytest.approx(90.0)
    assert len(load_name_map("isbi2015")) == 19


def test_missing_landmark_gives_nan_and_a_problem_row():
    t = image_table(LATERAL)
    t = t[t["name"] != "B"]
    out, prob = measure(t, IDS, mm_per_px=0.1, errors="collect")
    got = _by_id(out)
    assert math.isnan(got["SNB"])
    assert math.isnan(got["ANB"])
    assert math.isnan(got["Wits"])
    assert not math.isnan(got["SNA"])
    row = prob[prob["landmark"] == "B"]
    assert len(row) == 1
    assert row["patient_id"].item() == "p1"
    assert row["measures"].item() == ["SNB", "ANB", "Wits"]  # a list column, not joined text
    assert "B" in row["reason"].item()


def test_errors_modes():
    t = image_table(LATERAL)
    t = t[t["name"] != "B"]
    with pytest.warns(DentalkitWarning, match="problem"):
        measure(t, IDS, errors="warn")
    # not given: "raise", the package's one default; the message names patient, session,
    # view/landmark and says how to go on, and the error holds the table collect returns
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(InputError, match=r"patient 'p1', session .*lateral/B: landmark 'B' absent") as info:  # fmt: skip
            measure(t, IDS)
    assert "errors='collect'" in str(info.value)
    pd.testing.assert_frame_equal(info.value.problems, measure(t, IDS, errors="collect")[1])
    with pytest.raises(InputError, match="landmark 'B' absent"):
        measure(t, IDS, errors="raise")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _, prob = measure(t, IDS, errors="collect")
    assert len(prob) == 1
    # the old spelling "ignore" is gone (issue 32): refused like any other value
    with pytest.raises(InputError, match="errors='ignore' is not allowed"):
        measure(t, IDS, errors="ignore")
    with pytest.raises(InputError, match="'raise', 'collect', 'warn'"):
        measure(t, IDS, errors="sometimes")


def test_duplicate_landmark_is_treated_as_absent():
    t = image_table(LATERAL)
    t = pd.concat([t, t[t["name"] == "A"].assign(x=0.0)], ignore_index=True)
    out, prob = measure(t, ["SNA", "SNB"], errors="collect")
    got = _by_id(out)
    assert math.isnan(got["SNA"])
    assert not math.isnan(got["SNB"])
    assert prob["reason"].str.contains("more than once").any()


def test_non_finite_coordinates_are_absent():
    t = image_table(LATERAL)
    t.loc[t["name"] == "A", "x"] = np.inf
    out, prob = measure(t, ["SNA"], errors="collect")
    assert math.isnan(out["value"].item())
    assert (prob["landmark"] == "A").any()


def test_mm_per_px_column_and_series():
    t = _cohort()
    t["cal"] = np.where(t["patient_id"] == "p1", 0.1, 0.2)
    out = measure(t, ["S_N"], mm_per_px="cal", view="lateral")
    sn = math.hypot(70, 5)
    assert out["value"].tolist() == pytest.approx([sn, 2 * sn])
    s = pd.Series([0.1, 0.2], index=pd.Index(["p1", "p2"], name="patient_id"))
    out2 = measure(t, ["S_N"], mm_per_px=s, view="lateral")
    assert out2["value"].tolist() == pytest.approx([sn, 2 * sn])
    partial = pd.Series([0.1], index=pd.Index(["p1"], name="patient_id"))
    out3, prob = measure(t, ["S_N", "SNA"], mm_per_px=partial, view="lateral", errors="collect")
    assert math.isnan(out3["value"].iloc[2])  # p2 S_N: no calibration → NaN, still unit mm
    assert not math.isnan(out3["value"].iloc[3])  # p2 SNA is an angle
    assert set(out3["unit"].astype(str)) == {"mm", "deg"}
    assert prob["reason"].str.contains("mm_per_px").any()
    t.loc[0, "cal"] = 0.3
    with pytest.raises(InputError, match="varies within session"):
        measure(t, ["S_N"], mm_per_px="cal")
    with pytest.raises(InputError, match="positive"):
        measure(t, ["S_N"], mm_per_px=-1.0)
    with pytest.raises(InputError, match="indexed by session columns"):
        measure(t, ["S_N"], mm_per_px=pd.Series([0.1, 0.2]))


def test_analysis_names_select_measures_and_unknown_ids_are_reported():
    out = measure(image_table(LATERAL), ["McNamara"], mm_per_px=0.1)
    assert set(out["analysis"].astype(str)) == {"McNamara"}
    with pytest.raises(InputError, match="did you mean"):
        measure(image_table(LATERAL), ["SNAA"])


def test_bad_tables_raise_specific_errors():
    t = image_table(LATERAL)
    with pytest.raises(InputError, match="'x'"):
        measure(t.drop(columns="x"))
    with pytest.raises(InputError, match="session"):
        measure(t.drop(columns=["patient_id", "timestamp"]))
    with pytest.raises(InputError, match="'name' or a 'landmark'"):
        measure(t.drop(columns="name"))
    assert len(measure(t.drop(columns=["patient_id", "timestamp"]), session_cols=["view"])) > 0


def test_adding_a_row_adds_a_measure():
    from dentalkit.ceph import load_measures

    cat = load_measures()
    row = {
        "id": "N_A_dist",
        "label": "N-A",
        "view": "lateral",
        "analysis": "custom",
        "kind": "distance",
        "points": "N A",
        "operands": "",
        "sign": 1,
        "quantity": "length",
        "sign_convention": "unsigned",
        "description": "Distance N to A.",
        "source": "test",
    }
    cat = pd.concat([cat, pd.DataFrame([row])], ignore_index=True)
    out = measure(image_table(LATERAL), cat, mm_per_px=0.1)
    got = _by_id(out)
    assert got["N_A_dist"] == pytest.approx(math.hypot(2, 50))


def test_no_rows_of_a_view_give_no_rows():
    out = measure(image_table(FRONTAL, view="frontal"), ["SNA", "maxillary_width"])
    assert out["measure"].astype(str).tolist() == ["maxillary_width"]


def test_row_order_does_not_matter():
    t = _cohort()
    t["endpoint"] = "ceph_lateral_points"
    shuffled = t.sample(frac=1.0, random_state=3).reset_index(drop=True)
    a, pa = measure(t, IDS, mm_per_px=0.1, errors="collect")
    b, pb = measure(shuffled, IDS, mm_per_px=0.1, errors="collect")
    pd.testing.assert_frame_equal(a, b)
    assert len(pa) == len(pb)


def test_mm_per_px_table_form_matches_the_series_form():
    # the calibration forms are shared with teeth.measure (dentalkit._calibration)
    t = _cohort()
    s = pd.Series([0.1, 0.2], index=pd.Index(["p1", "p2"], name="patient_id"))
    frame = pd.DataFrame({"patient_id": ["p1", "p2"], "mm_per_px": [0.1, 0.2]})
    a = measure(t, ["S_N"], mm_per_px=s, view="lateral")
    b = measure(t, ["S_N"], mm_per_px=frame, view="lateral")
    sn = math.hypot(70, 5)
    assert b["value"].tolist() == pytest.approx([sn, 2 * sn])
    pd.testing.assert_frame_equal(a, b)
    with pytest.raises(InputError, match="several rows for the same key"):
        measure(t, ["S_N"], mm_per_px=pd.concat([frame, frame]), view="lateral")


def test_problem_rows_list_the_measures_they_leave_nan():
    # context column 'measures' is a list per row (issue 23), whatever the problem
    a = image_table(LATERAL, patient_id="p1", timestamp="2020-01-01").assign(cal=np.nan)
    b = image_table(LATERAL, patient_id="p2", timestamp="2021-05-01").assign(cal=np.nan)
    b = b[b["name"] != "B"]
    out, prob = measure(pd.concat([a, b]), IDS, mm_per_px="cal", errors="collect")
    lengths = out[out["unit"].astype(str) == "mm"]["measure"].astype(str).unique().tolist()
    assert sorted(lengths) == ["S_N", "Wits"]  # the length measures among IDS
    cal = prob[prob["reason"].str.startswith("no valid mm_per_px")]
    assert len(cal) == 2
    assert all(cell == ["S_N", "Wits"] for cell in cal["measures"])
    cal["measures"].iloc[0].append("changed")  # one fresh list per row
    assert cal["measures"].iloc[1] == ["S_N", "Wits"]
    absent = prob[prob["landmark"] == "B"]
    assert absent["measures"].item() == ["SNB", "ANB", "Wits"]
    assert all(isinstance(cell, list) for cell in prob["measures"])
