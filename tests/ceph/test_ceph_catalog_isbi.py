"""The catalogue as data (validation, sources, generated docs) and the ISBI 2015 reader."""

from __future__ import annotations

import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dentalkit.ceph import (
    landmark_names,
    load_measures,
    measure,
    read_isbi,
    reference_table,
    required_landmarks,
)
from dentalkit.ceph.reference import render_measures_doc
from dentalkit.errors import InputError

ROOT = Path(__file__).resolve().parents[2]


def test_every_measure_has_a_source_a_description_and_a_sign_convention():
    cat = load_measures()
    for col in ("source", "description", "sign_convention", "label", "analysis"):
        assert (cat[col].str.strip().str.len() > 5).all() or col == "analysis", col
        assert (cat[col].str.strip() != "").all(), col


def test_issue_measures_are_all_present():
    ids = set(load_measures()["id"])
    wanted = {
        "SNA", "SNB", "ANB", "SN_GoGn", "SN_MP", "FMA", "IMPA", "FMIA", "U1_SN", "U1_NA_deg",
        "U1_NA_mm", "L1_NB_deg", "L1_NB_mm", "Pog_NB", "interincisal", "OP_SN", "OP_FH",
        "facial_angle", "convexity_angle", "AB_plane", "Y_axis", "FH_SN", "Wits", "Co_A",
        "Co_Gn", "MMD", "A_Nperp", "Pog_Nperp", "ANS_Me", "N_Me", "S_Go", "Jarabak_ratio",
        "saddle_angle", "articular_angle", "gonial_angle", "Bjork_sum", "facial_axis",
        "E_line_upper_lip", "E_line_lower_lip", "nasolabial_angle", "ODI", "APDI",
        "L1_APog_mm", "nasal_width", "maxillary_width", "mandibular_width",
        "mx_md_width_difference", "UDM_midline_dev", "LDM_midline_dev", "Me_midline_dev",
        "ramus_asymmetry", "body_asymmetry",
    }  # fmt: skip
    assert wanted <= ids


@pytest.mark.parametrize(
    ("column", "value", "message"),
    [
        ("kind", "wiggle", "unknown kind"),
        ("points", "S N", "takes 3 points"),
        ("source", "", "'source' is empty"),
        ("sign", -1, "unsigned; sign must be 1"),
        ("view", "oblique", "view"),
    ],
)
def test_catalogue_validation_names_row_and_problem(column, value, message):
    cat = load_measures()
    i = int(np.flatnonzero(cat["id"] == "SNA")[0])
    cat.loc[i, column] = value
    with pytest.raises(InputError, match=message):
        load_measures(cat)


def test_circular_operands_are_rejected():
    cat = load_measures()
    cat.loc[cat["id"] == "ANB", "operands"] = "SNA -ODI"
    cat.loc[cat["id"] == "ODI", "operands"] = "AB_MP ANB"
    with pytest.raises(InputError, match="circular"):
        load_measures(cat)


def test_docs_measures_md_is_generated_from_the_csv():
    committed = (ROOT / "docs" / "measures.md").read_text(encoding="utf-8")
    assert committed == render_measures_doc(), (
        "docs/measures.md is stale: run python -c 'from dentalkit.ceph.reference import "
        "write_measures_doc; write_measures_doc()'"
    )


def test_reference_table_shows_norms_and_sources():
    ref = reference_table().set_index("id")
    assert "81.4 ± 3.79 (Kim" in ref.loc["APDI", "norm"]
    assert "unverified" in ref.loc["ODI", "norm"]
    assert ref.loc["SNA", "construction"] == "S N A"
    assert ref["source"].str.len().min() > 5


def test_landmark_helpers():
    assert required_landmarks(["Wits"])["Wits"] == sorted(
        ["A", "B", "U6_cusp", "L6_cusp", "U4_cusp", "L4_cusp"]
    )
    assert set(landmark_names("frontal")) >= {"J_R", "J_L", "Cg", "Z_R"}
    with pytest.raises(InputError, match="unknown measure"):
        required_landmarks(["nope"])


def _isbi_file(path: Path, coords: np.ndarray) -> Path:
    lines = [f"{x:.0f},{y:.0f}" for x, y in coords] + ["1", "2", "1", "3"]
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


ISBI_ORDER = ["S", "N", "Or", "Po", "A", "B", "Pog", "Me", "Gn", "Go", "L1_tip", "U1_tip",
              "Ls", "Li", "Sn", "Pog'", "PNS", "ANS", "Ar"]  # fmt: skip


def test_isbi_reader_maps_names_and_calibration(tmp_path):
    from ceph_fixtures import LATERAL

    xy = np.array([LATERAL[n] for n in ISBI_ORDER])
    img = np.column_stack([xy[:, 0] * 10 + 800, -xy[:, 1] * 10 + 900])  # 0.1 mm/px
    d = tmp_path / "senior"
    d.mkdir()
    _isbi_file(d / "001.txt", img)
    _isbi_file(d / "002.txt", img + 3)
    t = read_isbi(d, annotator="senior")
    assert t["patient_id"].astype(str).unique().tolist() == ["001", "002"]
    assert t["name"].astype(str).tolist()[:19] == ISBI_ORDER
    out, prob = measure(
        t, ["SNA", "S_N", "E_line_upper_lip", "Wits"], mm_per_px="mm_per_px", errors="collect"
    )
    sub = out[out["patient_id"] == "001"]
    got = pd.Series(sub["value"].to_numpy(), index=sub["measure"].astype(str))
    sna = math.degrees(
        math.acos(
            ((0 - 70) * (68 - 70) + (0 - 5) * (-45 - 5)) / (math.hypot(70, 5) * math.hypot(2, 50))
        )
    )
    assert got["SNA"] == pytest.approx(sna)
    assert got["S_N"] == pytest.approx(math.hypot(70, 5))
    assert math.isnan(got["E_line_upper_lip"])  # ISBI has no pronasale
    assert math.isnan(got["Wits"])  # nor molar / premolar cusps
    assert set(prob["landmark"].dropna()) >= {"Prn", "U6_cusp"}


def test_isbi_reader_rejects_short_files(tmp_path):
    f = tmp_path / "bad.txt"
    f.write_text("1,2\n3,4\n", encoding="utf-8")
    with pytest.raises(InputError, match="19"):
        read_isbi(f)
    g = tmp_path / "worse.txt"
    g.write_text("\n".join(["1;2"] * 19), encoding="utf-8")
    with pytest.raises(InputError, match="line 1"):
        read_isbi(g)


def test_benchmark_smoke_runs_and_agrees_with_the_loop():
    res = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "ceph.py"), "--smoke"],
        capture_output=True, text=True, timeout=240, cwd=ROOT,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    assert "speed-up" in res.stdout


def test_two_annotators_as_separate_sessions(tmp_path):
    from ceph_fixtures import LATERAL

    xy = np.array([LATERAL[n] for n in ISBI_ORDER])
    img = np.column_stack([xy[:, 0] * 10 + 800, -xy[:, 1] * 10 + 900])
    (tmp_path / "s").mkdir()
    (tmp_path / "j").mkdir()
    _isbi_file(tmp_path / "s" / "001.txt", img)
    _isbi_file(tmp_path / "j" / "001.txt", img + 20)
    t = pd.concat(
        [
            read_isbi(tmp_path / "s", annotator="senior"),
            read_isbi(tmp_path / "j", annotator="junior"),
        ],
        ignore_index=True,
    )
    out = measure(t, ["SNA"], session_cols=["patient_id", "annotator"], errors="raise")
    assert len(out) == 2
    assert out["value"].iloc[0] == pytest.approx(out["value"].iloc[1])  # a pure translation
