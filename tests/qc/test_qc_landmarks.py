"""qc.landmarks on sandbox cohorts: a landmark moved onto another structure is found and
named, the method and its reason follow the cohort size, the rules read the shipped
ranges, the result does not depend on how the films lie or on the table's row order, and
bad input is named."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dentalkit import qc
from dentalkit.errors import InputError
from dentalkit.qc._table import COMMON_COLUMNS
from tests.qc.qc_cohort import lateral, move


@pytest.fixture(scope="module")
def cohort() -> pd.DataFrame:
    return lateral(80, prefix="QCL")


@pytest.fixture(scope="module")
def checked(cohort) -> pd.DataFrame:
    return qc.landmarks(cohort, mm_per_px=0.1, measures=["ANB", "SN_MP"])


def test_the_table_has_the_declared_columns(checked, cohort):
    assert list(checked.columns[: len(COMMON_COLUMNS) + 1]) == [
        "check", "patient_id", "timestamp", "session_time", "endpoint", "view", "item",
        "flagged", "score", "threshold", "reason", "failed_checks", "method", "method_reason",
    ][: len(COMMON_COLUMNS) + 1]  # fmt: skip
    assert len(checked) == cohort[["patient_id", "timestamp"]].drop_duplicates().shape[0]
    assert set(checked["method"]) == {"cohort model and single-session rules"}
    assert "80 sessions of the lateral view ≥ min_sessions = 50" in checked["method_reason"][0]
    by_rule = checked["failed_checks"].map(lambda f: "plausible range" in (f or ()))
    by_model = checked["score"] >= checked["threshold"]
    assert (checked["flagged"] == (by_model | by_rule)).all()
    assert checked["procrustes_distance"].notna().all()
    assert (checked["unit"] == "mm").all()


@pytest.mark.parametrize(("name", "dx", "dy"), [("Go", 150.0, -60.0), ("N", -80.0, 90.0)])
def test_a_landmark_moved_far_is_flagged_and_named(cohort, checked, name, dx, dy):
    pid = "QCL-017"
    out = qc.landmarks(move(cohort, pid, name, dx, dy), mm_per_px=0.1, measures=["ANB", "SN_MP"])
    row = out[out["patient_id"] == pid].iloc[0]
    assert row["flagged"]
    assert row["suspect_landmarks"][0] == name
    assert row["failed_checks"] == ["shape model"]
    assert row["displacement"] == pytest.approx(np.hypot(dx, dy) * 0.1, rel=0.25)  # mm
    assert name in row["reason"]
    # the other sessions keep their verdicts (a few may change with the refitted model)
    others = out["patient_id"] != pid
    same = out.loc[others, "flagged"].to_numpy() == checked.loc[others, "flagged"].to_numpy()
    assert same.mean() >= 0.95


def test_a_landmark_the_measures_do_not_use_names_a_suspect_without_flagging(cohort):
    pid = "QCL-021"
    out = qc.landmarks(move(cohort, pid, "Prn", 160.0, 120.0), mm_per_px=0.1, measures=["ANB"])
    row = out[out["patient_id"] == pid].iloc[0]
    assert "Prn" in row["suspect_landmarks"]
    assert not row["flagged"]
    assert "not used by the measures checked" in row["reason"]


def test_too_few_sessions_use_the_single_session_rules(cohort):
    few = cohort[cohort["patient_id"].isin([f"QCL-{i:03d}" for i in range(12)])]
    out = qc.landmarks(few, mm_per_px=0.1)
    assert set(out["method"]) == {"single-session rules"}
    assert "12 sessions of the lateral view < min_sessions = 50" in out["method_reason"][0]
    assert "too few for a cohort shape model" in out["method_reason"][0]
    assert out["procrustes_distance"].isna().all() and out["score"].isna().all()


def test_a_measure_outside_its_plausible_range_is_flagged_by_the_rules(cohort):
    few = cohort[cohort["patient_id"].isin([f"QCL-{i:03d}" for i in range(10)])]
    # A moved so that SNA is 115° (verified range 58-106°: Steiner's 82 ± 8 × 3)
    bad = move(few, "QCL-003", "A", 0.0, 0.0)
    hit = (bad["patient_id"] == "QCL-003") & (bad["name"].isin(["A"]))
    s, n = (
        bad[(bad["patient_id"] == "QCL-003") & (bad["name"] == k)][["x", "y"]].iloc[0] for k in "SN"
    )
    a = bad.loc[hit, ["x", "y"]].iloc[0]
    # put A where SNA = 115°: rotate N→S by 115° and keep the N–A distance
    v = np.array([s["x"] - n["x"], s["y"] - n["y"]])
    r = np.hypot(a["x"] - n["x"], a["y"] - n["y"]) / np.hypot(*v)
    for sign in (1, -1):
        t = np.radians(115.0) * sign
        rot = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]]) @ v * r
        trial = bad.copy()
        trial.loc[hit, ["x", "y"]] = [n["x"] + rot[0], n["y"] + rot[1]]
        out = qc.landmarks(trial, mm_per_px=0.1, measures=["SNA"])
        row = out[out["patient_id"] == "QCL-003"].iloc[0]
        if row["flagged"]:
            break
    assert row["flagged"] and row["failed_checks"] == ["plausible range"]
    assert "SNA 115.0 deg outside the plausible range 58–106 deg" in row["reason"]
    assert "Steiner" in row["reason"]
    assert not out.loc[out["patient_id"] != "QCL-003", "flagged"].any()


def test_the_verdicts_do_not_depend_on_how_the_films_lie(cohort, checked):
    # every film mirrored (facing the other way), turned and scaled: the same shapes
    t = cohort.copy()
    angle = np.radians(17.0)
    x, y = -t["x"].to_numpy(), t["y"].to_numpy()
    t["x"] = 2.5 * (np.cos(angle) * x - np.sin(angle) * y) + 4000
    t["y"] = 2.5 * (np.sin(angle) * x + np.cos(angle) * y) + 100
    out = qc.landmarks(t, mm_per_px=0.04, measures=["ANB", "SN_MP"])
    assert (out["flagged"].to_numpy() == checked["flagged"].to_numpy()).all()
    assert np.allclose(out["score"], checked["score"], rtol=1e-3)
    assert np.allclose(out["displacement"], checked["displacement"], rtol=1e-3, equal_nan=True)


def test_the_row_order_does_not_matter(cohort, checked):
    # shuffled rows take the general path (ceph's scatter), in order the block layout
    shuffled = cohort.sample(frac=1.0, random_state=3)
    out = qc.landmarks(shuffled, mm_per_px=0.1, measures=["ANB", "SN_MP"])
    out = out.set_index("patient_id").loc[checked["patient_id"]]
    assert (out["flagged"].to_numpy() == checked["flagged"].to_numpy()).all()
    assert np.allclose(out["score"], checked["score"], rtol=1e-4)


def test_absent_landmarks_are_imputed_and_a_bare_session_is_a_problem(cohort):
    t = cohort[~((cohort["patient_id"] == "QCL-005") & cohort["name"].isin(["Go", "Ar"]))]
    t = t[~((t["patient_id"] == "QCL-006") & ~t["name"].isin(["S", "N"]))]
    with pytest.raises(InputError, match=r"QCL-006.*fewer than 3 landmarks"):
        qc.landmarks(t, mm_per_px=0.1)
    out, problems = qc.landmarks(t, mm_per_px=0.1, errors="collect")
    assert problems["patient_id"].tolist() == ["QCL-006"]
    row = out.set_index("patient_id").loc["QCL-006"]
    assert row["method"] == "not checked" and not row["flagged"]
    assert out.set_index("patient_id").loc["QCL-005", "n_landmarks"] < out["n_landmarks"].max()


def test_bad_input_is_named(cohort):
    with pytest.raises(InputError, match="lacks column 'x'"):
        qc.landmarks(cohort.drop(columns="x"))
    with pytest.raises(InputError, match="unknown measure or analysis 'SNZ'"):
        qc.landmarks(cohort, measures=["SNZ"])
    with pytest.raises(InputError, match="alpha"):
        qc.landmarks(cohort, alpha=2.0)
