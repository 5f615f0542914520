"""Quality control in the study (issue 28, deliverable 3): the checks run on the tables the
study built, the pre-specified policy (exclude by default; flag; ignore) from the design or
the keyword, every excluded item listed, the sensitivity analysis, the report section and
the figure. The truth is hand-built: one session of a sandbox cohort with a landmark moved
40 mm (a landmark on the wrong structure), the others as the sandbox answered them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dentalkit import ceph, qc, study
from dentalkit.errors import InputError
from dentalkit.study import report
from dentalkit.study._not_run import Problems
from dentalkit.study.design import QC_POLICIES
from tests.qc.qc_cohort import lateral, move

SCALE = {"ceph_lateral_points": 0.1}
BAD = "QS-002"  # its A point moved 400 px = 40 mm: SNA and ANB far outside human ranges
N = 5


@pytest.fixture(scope="module")
def cohort() -> pd.DataFrame:
    return move(lateral(N, prefix="QS"), BAD, "A", 400.0, 0.0)


@pytest.fixture(scope="module")
def runs(cohort):
    """``study.analyze`` of the cohort under each policy (the ceph analyses only)."""
    design = study.Design(analyses=("ceph",))
    out = {}
    for policy in QC_POLICIES:
        out[policy] = study.analyze(
            {"landmarks": cohort}, SCALE, design=design, qc=policy, errors="collect"
        )
    return out


def _ids(table: pd.DataFrame) -> set[str]:
    return set(table["patient_id"].astype(str))


def test_the_design_holds_the_policy_exclude_by_default(tmp_path):
    assert study.Design().qc == "exclude" and QC_POLICIES == ("exclude", "flag", "ignore")
    with pytest.raises(InputError, match="qc='drop' is not one of exclude, flag, ignore"):
        study.Design(qc="drop")
    path = tmp_path / "study.toml"
    path.write_text('[qc]\npolicy = "exclude"\n', encoding="utf-8")
    assert study.read_design(path).qc == "exclude"
    path.write_text('[qc]\npolcy = "exclude"\n', encoding="utf-8")
    with pytest.raises(InputError, match="did you mean 'policy'"):
        study.read_design(path)
    path.write_text('[qc]\npolicy = "drop"\n', encoding="utf-8")
    with pytest.raises(InputError, match=r"study\.toml: study design: qc=.drop."):
        study.read_design(path)
    assert any("qc = 'exclude'" in line for line in study.Design(qc="exclude").lines())


def test_the_command_line_offers_the_design_policies():
    from dentalkit.cli import QcPolicy

    assert tuple(p.value for p in QcPolicy) == QC_POLICIES


def test_a_small_cohort_is_checked_by_single_session_rules_and_names_the_bad_session(runs):
    for policy in QC_POLICIES:
        checks = runs[policy]["qc"]
        assert len(checks) == N and set(checks["check"].astype(str)) == {"landmarks"}
        assert (checks["method"].astype(str) == "single-session rules").all()
        assert checks["method_reason"].astype(str).str.contains("too few").all()
        assert _ids(checks[checks["flagged"]]) == {BAD}
        assert "plausible range" in checks.loc[checks["flagged"], "failed_checks"].iloc[0]
        summary = runs[policy]["qc_summary"]
        assert summary[["n_items", "n_flagged", "n_patients_flagged"]].to_numpy().tolist() == [
            [N, 1, 1]
        ]


def test_exclude_leaves_the_flagged_session_out_of_every_analysis_and_lists_it(runs, cohort):
    res = runs["exclude"]
    ex = res["qc_excluded"]
    assert ex["patient_id"].astype(str).tolist() == [BAD]
    assert int(ex["n_rows"].iloc[0]) == int((cohort["patient_id"] == BAD).sum())
    assert "ANB" in ex["reason"].iloc[0] or "SNA" in ex["reason"].iloc[0]
    for name in ("ceph_measures", "ceph_classes", "ceph_zscores"):
        assert BAD not in _ids(res[name]), name
    summary = res["ceph_summary"].set_index("measure")
    assert int(summary.loc["ANB", "n_units"]) == N - 1
    for policy in ("flag", "ignore"):  # every row stays; nothing listed as excluded
        assert "qc_excluded" not in runs[policy] and "qc_sensitivity" not in runs[policy]
        assert BAD in _ids(runs[policy]["ceph_measures"])
        assert int(runs[policy]["ceph_summary"].set_index("measure").loc["ANB", "n_units"]) == N


def test_the_sensitivity_analysis_gives_the_means_with_and_without_the_excluded(runs, cohort):
    # the two arms by hand: ceph.measure of every session, and of the others
    measured = ceph.measure(cohort, ["SNA", "ANB", "SN_MP"], mm_per_px=0.1)
    sens = runs["exclude"]["qc_sensitivity"].set_index("measure")
    for m in ("SNA", "ANB", "SN_MP"):
        values = measured[measured["measure"] == m].set_index("patient_id")["value"]
        others = values.drop(BAD)
        row = sens.loc[m]
        assert (row["n_without_qc"], row["n_with_qc"]) == (N, N - 1)
        assert row["mean_without_qc"] == pytest.approx(values.mean())
        assert row["mean_with_qc"] == pytest.approx(others.mean())
        assert row["sd_with_qc"] == pytest.approx(others.std(ddof=1))
        assert row["difference"] == pytest.approx(others.mean() - values.mean())
        assert row["unit_of_analysis"] == "patient"
    assert abs(sens.loc["ANB", "difference"]) > 3  # the 40 mm error moved the mean ANB


def test_later_problem_rows_name_rows_of_the_table_as_given():
    problems = Problems()
    problems.kept_rows = {"landmarks": np.array([2, 5, 7])}
    found = pd.DataFrame(
        {
            "table": ["landmarks", "landmarks", "teeth"],
            "row": [0, 2, 1],
            "reason": ["r"] * 3,
            "severity": "error",
        }
    )
    problems.add("ceph.measure", found)
    assert problems.table(["ceph.measure"])["row"].tolist() == [2, 7, 1]


def test_the_report_section_states_the_policy_counts_methods_and_every_excluded_item(runs, cohort):
    design = study.Design(qc="exclude")
    text = report.qc_section(runs["exclude"], design)
    assert "qc = `exclude`" in text and f"1 of {N} patients" in text
    assert "single-session rules" in text and "too few" in text
    assert "Excluded items** (1;" in text and BAD in text
    assert "Sensitivity analysis" in text and "mean_with_qc" in text
    flagged = report.qc_section(runs["flag"], study.Design(qc="flag"))
    assert "qc = `flag`" in flagged and "Flagged items** (1;" in flagged and BAD in flagged
    assert "Sensitivity" not in flagged
    heads = [h for h, _ in report.sections({"landmarks": cohort}, runs["flag"], design=design)]
    assert "Quality control of the AI's answers" in heads


def test_the_qc_figure_is_drawn_with_the_cohort_model_and_skipped_without(tmp_path):
    spec = [f for f in study.FIGURES if f.name == "qc_outliers"]
    big = move(lateral(60, prefix="QF"), "QF-004", "Me", 120.0, 140.0)
    checks = qc.landmarks(big, mm_per_px=0.1)
    drawn = study.make_figures({}, {"qc": checks}, tmp_path / "a", figures=spec, dpi=300)
    assert sorted(p.suffix for p in drawn["qc_outliers"]) == [".pdf", ".png"]
    # the caption counts what the figure draws: the 60 lateral sessions, the flagged ones
    text = (tmp_path / "a" / "captions.md").read_text(encoding="utf-8")
    n_flagged = int(checks["flagged"].sum())
    assert "Procrustes distance" in text and "n = 60 sessions of 60 patients" in text, text
    assert f"{n_flagged} flagged" in text and n_flagged >= 1
    small = qc.landmarks(lateral(N, prefix="QS"), mm_per_px=0.1)  # no Procrustes distance
    assert study.make_figures({}, {"qc": small}, tmp_path / "b", figures=spec, dpi=300) == {}


def test_the_demo_writes_the_qc_tables_and_the_report_section(demo_study):
    out, _, result = demo_study  # 3 patients, sandbox without AI errors (tests/conftest.py)
    assert result.exit_code == 0, result.output
    checks = pd.read_parquet(out / "analyses" / "qc.parquet")
    summary = pd.read_parquet(out / "analyses" / "qc_summary.parquet")
    assert not checks["flagged"].any()  # the sandbox's answers have no AI error
    assert set(summary["check"].astype(str)) >= {"landmarks", "teeth", "arch_points"}
    lm = checks[checks["check"] == "landmarks"]
    assert (lm["method"] == "single-session rules").all()
    # the default policy, exclude: the listing is written, with no row (nothing flagged),
    # and there is nothing to compare with and without QC
    assert len(pd.read_parquet(out / "analyses" / "qc_excluded.parquet")) == 0
    assert not (out / "analyses" / "qc_sensitivity.parquet").exists()
    assert not (out / "analyses" / "qc_sensitivity_results.parquet").exists()
    text = Path(out / "report.md").read_text(encoding="utf-8")
    assert "## Quality control of the AI's answers" in text and "qc = `exclude`" in text
    assert "0 of 3 patients" in text
    assert not (out / "figures" / "qc_outliers.png").exists()  # no cohort model


def test_dentalkit_analyze_takes_the_policy(demo_study, tmp_path):
    from typer.testing import CliRunner

    from dentalkit.cli import app

    out, _, _ = demo_study
    dest = tmp_path / "analyses"
    args = ["analyze", str(out / "tables"), "--out", str(dest), "--qc", "exclude"]
    result = CliRunner().invoke(app, [*args, "--mm-per-px", "ceph_lateral_points=0.1"])
    assert result.exit_code == 0, result.output
    excluded = pd.read_parquet(dest / "qc_excluded.parquet")  # written, with 0 rows
    assert len(excluded) == 0 and "patient_id" in excluded.columns
    assert len(pd.read_parquet(dest / "qc.parquet"))
    bad = CliRunner().invoke(app, [*args[:-1], "drop"])
    assert bad.exit_code == 2 and "drop" in bad.output


def test_each_check_applies_to_the_table_it_checked_only():
    # a flagged lateral session and a flagged upper arch of patient P1: the teeth table has
    # the session and arch keys too, and must keep every row (qc.apply alone would match it)
    from dentalkit.study._qc import apply_policy

    common = {"patient_id": "P1", "timestamp": "t1", "flagged": True, "reason": "r"}
    checks = pd.DataFrame(
        [
            {**common, "check": "landmarks", "view": "lateral", "item": "lateral landmarks"},
            {**common, "check": "arch_points", "arch": "up", "item": "arch points up"},
        ]
    )
    key = {"patient_id": ["P1", "P1", "P2"], "timestamp": "t1"}
    tables = {
        "landmarks": pd.DataFrame({**key, "view": "lateral", "name": ["S", "N", "S"]}),
        "arch_points": pd.DataFrame({**key, "arch": ["up", "lo", "up"], "point": "c1"}),
        "teeth": pd.DataFrame({**key, "arch": "up", "source": "pano", "tooth": "u11"}),
    }
    kept, excluded, kept_rows = apply_policy(tables, checks, "exclude")
    assert kept["landmarks"]["patient_id"].tolist() == ["P2"]
    assert kept["arch_points"][["patient_id", "arch"]].to_numpy().tolist() == [
        ["P1", "lo"],
        ["P2", "up"],
    ]
    pd.testing.assert_frame_equal(kept["teeth"], tables["teeth"])
    assert excluded[["check", "n_rows"]].to_numpy().tolist() == [
        ["landmarks", 2],
        ["arch_points", 1],
    ]
    assert kept_rows["landmarks"].tolist() == [2] and kept_rows["arch_points"].tolist() == [1, 2]
    for policy in ("flag", "ignore"):
        same, none, _ = apply_policy(tables, checks, policy)
        assert len(none) == 0 and all(same[k] is tables[k] for k in tables)
