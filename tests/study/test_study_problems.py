"""study.analyze keeps every analysis' problems in one table (issue 23 item 2).

A cohort of the demo (3 sandbox patients, the session fixture ``demo_study``) with two bad
rows put in by hand: one absent landmark (B point) and one non-finite tooth point (the
right upper canine's centroid). Which patient, session and row they are is known here
from the rows changed, not from the code under test.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from dentalkit import io, study
from dentalkit.cli import app
from dentalkit.errors import PROBLEM_COLUMNS, PROBLEM_SCHEMA, DentalkitWarning, InputError
from dentalkit.io._dictionary import load_catalogue
from dentalkit.study.demo import sandbox_calibration
from tests.schema_check import check_file

# ISBI 2015 challenge numbering (Wang et al. 2016, Med Image Anal 31:63-76), used by the
# service's lateral landmarks: landmark 6 is the supramentale, Downs' B point.
B_POINT = "Later_6"


@pytest.fixture(scope="module")
def clean(demo_tables):
    return demo_tables


@pytest.fixture(scope="module")
def bad(clean):
    """The clean tables with the two bad rows, and where they are."""
    tables = dict(clean)
    lm = tables["landmarks"].copy()
    lm_row = int(np.flatnonzero((lm["view"] == "lateral") & (lm["landmark"] == B_POINT))[0])
    lm.loc[lm.index[lm_row], ["x", "y"]] = np.nan
    tk = tables["tooth_keypoints"].copy()
    canine = (tk["tooth"] == "c_rgt_up") & (tk["point"] == "centroid") & ~tk["missing"]
    tk_row = int(np.flatnonzero(canine)[0])
    tk.loc[tk.index[tk_row], "x"] = np.inf
    tables["landmarks"], tables["tooth_keypoints"] = lm, tk
    where = {
        "landmark": (str(lm["patient_id"].iloc[lm_row]), str(lm["timestamp"].iloc[lm_row])),
        "tooth": (str(tk["patient_id"].iloc[tk_row]), str(tk["timestamp"].iloc[tk_row]), tk_row),
    }
    return tables, where


def _analyze(tables, errors):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DentalkitWarning)
        return study.analyze(tables, sandbox_calibration(), errors=errors)


def test_raise_names_every_bad_row_with_its_analysis_patient_and_row(bad):
    tables, where = bad
    with pytest.raises(InputError) as info:
        study.analyze(tables, sandbox_calibration())  # the default is raise
    text = str(info.value)
    lm_pid, lm_ts = where["landmark"]
    tk_pid, tk_ts, tk_row = where["tooth"]
    assert "met 2 problem(s): ceph.measure 1, arch.measure 1" in text
    lines = text.splitlines()
    ceph_line = next(line for line in lines if "ceph.measure (ceph_measures)" in line)
    assert f"patient {lm_pid!r}" in ceph_line and f"session {lm_ts!r}" in ceph_line
    assert "lateral/B" in ceph_line and "landmark 'B' absent" in ceph_line
    arch_line = next(line for line in lines if "arch.measure (tooth_keypoints)" in line)
    assert f"patient {tk_pid!r}" in arch_line and f"session {tk_ts!r}" in arch_line
    assert f"row {tk_row} (0-based position)" in arch_line and "x='inf'" in arch_line
    assert "c_rgt_up" in arch_line
    assert lines[-1] == study.ANALYZE_HINT and "errors='collect'" in lines[-1]
    # the error carries the table collect returns
    assert list(info.value.problems.columns) == [*PROBLEM_COLUMNS, "producer"]
    assert len(info.value.problems) == 2


def test_collect_analyses_the_other_rows_and_lists_the_problems(clean, bad, tmp_path):
    tables, where = bad
    ok = _analyze(clean, "collect")
    got = _analyze(tables, "collect")
    assert len(ok["analysis_problems"]) == 0
    assert set(got) == set(ok)

    problems = got["analysis_problems"]
    lm_pid, lm_ts = where["landmark"]
    tk_pid, tk_ts, tk_row = where["tooth"]
    rows = problems[["producer", "table", "patient_id", "timestamp", "row", "field", "value"]]
    assert rows.astype(object).where(rows.notna(), None).to_numpy().tolist() == [
        ["ceph.measure", "ceph_measures", lm_pid, lm_ts, None, None, None],
        ["arch.measure", "tooth_keypoints", tk_pid, tk_ts, tk_row, "x", "inf"],
    ]
    assert problems["path"].iloc[0] == "lateral/B"
    assert problems["endpoint"].tolist() == ["ceph_lateral_points", "occlusogram_upper_points"]
    assert (problems["severity"] == "error").all()

    # the other sessions are measured as in the clean run; the bad one loses only what
    # needs B point
    key = ["patient_id", "timestamp", "view", "measure"]
    both = ok["ceph_measures"].merge(got["ceph_measures"], on=key, suffixes=("_ok", "_bad"))
    assert len(both) == len(ok["ceph_measures"])
    session = (both["patient_id"].astype(str) == lm_pid) & (both["timestamp"].astype(str) == lm_ts)
    lateral = session & (both["view"] == "lateral")
    needs_b = lateral & both["measure"].astype(str).isin(["SNB", "ANB", "Wits"])
    assert both.loc[needs_b, "value_bad"].isna().all()
    assert both.loc[needs_b, "value_ok"].notna().all()
    same = ~session | (lateral & both["measure"].astype(str).isin(["SNA", "SN_MP"]))
    np.testing.assert_array_equal(both.loc[same, "value_bad"], both.loc[same, "value_ok"])

    # the canine's arch has a bad_input intercanine width (and so the session's upper -
    # lower difference has none); every other row is unchanged
    am_ok, am_bad = ok["arch_measures"], got["arch_measures"]
    session = (am_bad["patient_id"].astype(str) == tk_pid) & (
        am_bad["timestamp"].astype(str) == tk_ts
    )
    width = session & (am_bad["arch"].astype(str) == "up")
    width &= am_bad["measure"].astype(str) == "intercanine_width"
    diff = session & (am_bad["measure"].astype(str) == "intercanine_width_difference")
    assert width.sum() == 1 and am_bad.loc[width, "status"].item() == "bad_input"
    assert diff.sum() == 1 and am_ok.loc[diff, "value"].notna().all()
    hit = (width | diff).to_numpy()
    assert am_bad.loc[hit, "value"].isna().all()
    np.testing.assert_array_equal(am_bad.loc[~hit, "value"], am_ok.loc[~hit, "value"])
    assert len(got["arch_fits"]) == len(ok["arch_fits"])

    # written with its declaration, like every analysis table
    study.write_analyses({"analysis_problems": problems}, tmp_path)
    path = tmp_path / "analysis_problems.parquet"
    assert check_file(path, "analysis_problems") == []
    schema = pq.read_schema(path)
    assert schema.names == [*PROBLEM_COLUMNS, "producer"]
    assert schema.field("row").type == pa.int64()
    assert schema.field("producer").type == pa.dictionary(pa.int32(), pa.string())
    assert not schema.field("producer").nullable and not schema.field("reason").nullable
    assert pd.read_parquet(path)["row"].tolist() == [pd.NA, tk_row]


def test_warn_collects_and_warns_once_with_the_count_per_analysis(bad):
    tables, _ = bad
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        got = study.analyze(tables, sandbox_calibration(), errors="warn")
    ours = [w for w in caught if issubclass(w.category, DentalkitWarning)]
    assert len(ours) == 1
    assert "2 problem(s): ceph.measure 1, arch.measure 1" in str(ours[0].message)
    assert ours[0].filename == __file__  # points at the caller
    assert len(got["analysis_problems"]) == 2


def test_errors_takes_the_package_values_only():
    with pytest.raises(InputError, match=r"errors='skip' is not allowed.*'raise', 'collect'"):
        study.analyze({}, errors="skip")
    assert study.analyze({}, errors="collect")["analysis_problems"].empty
    assert study.analyze({}) == {}


def test_a_bad_box_of_the_clinical_subset_is_named_by_its_row_in_the_findings_table(clean):
    # without responses the findings prevalence counts the clinical photographs only: the
    # row must still be the position in the findings table given, not in that subset
    det = clean["findings"].copy()
    row = int(np.flatnonzero(det["source"] == "clinical")[2])
    assert (det["source"].iloc[:row] != "clinical").any()  # the subset starts later
    det.loc[det.index[row], "x0"] = np.nan
    got = _analyze({"findings": det, "finding_counts": clean["finding_counts"]}, "collect")
    problems = got["analysis_problems"]
    assert problems[["producer", "table", "row", "field"]].to_numpy().tolist() == [
        ["findings.prevalence", "findings", row, "x0"]
    ]
    assert problems["patient_id"].item() == str(det["patient_id"].iloc[row])


def test_the_declaration_is_the_problems_schema_plus_producer():
    cat = load_catalogue()
    rows = cat[cat["table"] == "analysis_problems"].set_index("column")
    assert list(rows.index) == [*PROBLEM_COLUMNS, "producer"]
    arrow = {"str": "string", "Int64": "int64", "category": "category"}
    for col in PROBLEM_SCHEMA:
        row = rows.loc[col.name]
        assert row["type"] == arrow[col.dtype], col.name
        assert row["nullable"] == ("yes" if col.nullable else "no"), col.name
        if col.name not in ("table", "row"):  # those two say what they hold here
            assert row["description"] == col.description, col.name
    assert rows.loc["severity", "values"] == "error;warning"
    assert tuple(rows.loc["producer", "values"].split(";")) == study.ANALYSIS_PROBLEM_PRODUCERS
    assert rows.loc["producer", "nullable"] == "no"


def test_cli_analyze_collects_by_default_and_raise_writes_nothing(bad, tmp_path):
    tables, where = bad
    # the contract does not allow a null x in a written landmarks table: B is left out
    lm = tables["landmarks"]
    tables = {**tables, "landmarks": lm[lm["x"].notna()].reset_index(drop=True)}
    io.write_tables(tables, tmp_path / "tables")
    cal = ["--mm-per-px", "ceph_lateral_points=0.1"]
    out = tmp_path / "analyses"
    runner = CliRunner()
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DentalkitWarning)
        result = runner.invoke(app, ["analyze", str(tmp_path / "tables"), "--out", str(out), *cal])
    assert result.exit_code == 1, result.output
    line = "2 problem(s): ceph.measure 1, arch.measure 1; see " + str(
        out / "analysis_problems.parquet"
    )
    assert line in result.stdout.splitlines()
    assert len(pd.read_parquet(out / "analysis_problems.parquet")) == 2
    assert (out / "ceph_measures.parquet").exists()

    raised = tmp_path / "raised"
    result = runner.invoke(
        app, ["analyze", str(tmp_path / "tables"), "--out", str(raised), "--errors", "raise"]
    )
    assert result.exit_code == 2
    text = result.stderr
    assert f"row {where['tooth'][2]} (0-based position)" in text
    assert "arch.measure (tooth_keypoints)" in text and "ceph.measure (ceph_measures)" in text
    assert "--errors collect" in text and "errors='collect'" not in text
    assert (
        "\nerror: the analyses met 2 problem(s): ceph.measure 1, arch.measure 1; nothing was "
        "written:\n"
    ) in text
    assert "dentalkit.study" not in text
    assert not raised.exists()


def test_an_endpoint_without_calibration_is_measured_in_pixels(clean, tmp_path):
    # the module's promise: lengths of an uncalibrated endpoint in pixels, not NaN
    # (before, a NaN mm_per_px made them NaN, now a listed problem); the frontal ceph at
    # 0.1 mm per pixel gives the lengths of the full calibration times 10
    cal = sandbox_calibration()
    assert cal["ceph_frontal_points"] == 0.1
    full = _analyze(clean, "collect")
    part = study.analyze(clean, {"ceph_lateral_points": 0.1}, errors="collect")
    assert part["analysis_problems"].empty
    key = ["patient_id", "timestamp", "view", "measure"]
    both = full["ceph_measures"].merge(part["ceph_measures"], on=key, suffixes=("_mm", "_px"))
    assert len(both) == len(full["ceph_measures"]) == len(part["ceph_measures"])
    lengths = both["unit_mm"] == "mm"
    frontal = lengths & (both["view"] == "frontal")
    lateral = lengths & (both["view"] == "lateral")
    assert frontal.any() and lateral.any()
    assert (both.loc[frontal, "unit_px"] == "px").all()
    np.testing.assert_allclose(both.loc[frontal, "value_px"], both.loc[frontal, "value_mm"] * 10)
    assert (both.loc[lateral, "unit_px"] == "mm").all()
    np.testing.assert_array_equal(both.loc[lateral, "value_px"], both.loc[lateral, "value_mm"])
    teeth = part["tooth_measures"]
    assert (teeth["unit"] == "px").all() and teeth["area"].notna().any()
    study.write_analyses(part, tmp_path)  # the joined parts keep their declared types
    assert check_file(tmp_path / "ceph_measures.parquet", "ceph_measures") == []
