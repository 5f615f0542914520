"""``dentalkit study``: a user's cohort end to end on the sandbox, its design, its reruns.

One study of 4 sandbox patients in two treatment groups (the study file names the group
column, α = 0.1 and Benjamini–Hochberg), run once per module through the command line,
then again to check that nothing stored is sent twice. The group comparison is checked
against scipy (Welch's t on each patient's first session) and statsmodels (the
correction), and its 90 % interval against the Welch–Satterthwaite interval by hand.
"""

from __future__ import annotations

import socket

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

from dentalkit.cli import app
from dentalkit.endpoints import image_endpoints
from dentalkit.fetch.store import read_responses
from dentalkit.study.report import problems_line

N = 4
STUDY = """
title = "Expansion study (sandbox)"
out = "out"

[groups]
column = "treatment"

[statistics]
alpha = 0.1
correction = "fdr_bh"

[figures]
draw = ["mean_arch_forms"]
dpi = 300
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def study_run(tmp_path_factory):
    from dentalkit.sandbox import running
    from dentalkit.study.demo import demo_manifest, demo_patients, sandbox_calibration

    folder = tmp_path_factory.mktemp("study")
    port = _free_port()
    patients = demo_patients(N).drop(columns="observed_months")
    patients["treatment"] = ["A", "B"] * (N // 2)
    with running(port=port) as sb:  # the image URLs of the sandbox the study will start
        manifest = demo_manifest(sb, patients)
    manifest.to_csv(folder / "manifest.csv", index=False)
    patients.to_csv(folder / "patients.csv", index=False)
    calibration = "\n".join(f"{k} = {v}" for k, v in sandbox_calibration().items())
    (folder / "study.toml").write_text(STUDY + "\n[calibration]\n" + calibration + "\n")
    args = [
        "study",
        str(folder / "manifest.csv"),
        *("--patients", str(folder / "patients.csv")),
        *("--design", str(folder / "study.toml")),
        *("--sandbox", "--port", str(port), "--no-progress"),
    ]
    first = CliRunner().invoke(app, args)
    return folder, args, first


def test_the_study_runs_every_stage_and_says_where_everything_is(study_run):
    folder, _, first = study_run
    out = folder / "out"  # the study file's out, relative to the file
    assert first.exit_code == 0, first.output
    lines = first.output.splitlines()
    for name in ("tables", "contract", "analyses", "figures", "report"):
        assert any(line.startswith(f"{name}: ") and line.endswith("s]") for line in lines), name
    # nothing was left out; what 4 patients cannot give (e.g. a treatment-length calibration
    # without observed durations) is a study.analyze row saying why, counted in the line
    problems = pd.read_parquet(out / "analyses" / "analysis_problems.parquet")
    assert set(problems["producer"].astype(str)) <= {"study.analyze"}
    assert problems_line(problems, out / "analyses") in lines
    assert lines[-1] == f"report: {out / 'report.md'}"
    # the images of the manifest plus one /tle query per patient, added by the study
    responses = read_responses(out)
    assert len(responses) == N * 2 * len(image_endpoints()) + N
    assert (responses["endpoint"].astype(str) == "tle").sum() == N
    estimates = pd.read_parquet(out / "analyses" / "tle_estimates.parquet")
    assert estimates["estimate_length_months"].notna().sum() == N
    assert sorted(p.name for p in (out / "figures").iterdir()) == [
        "captions.md",  # the caption of each figure drawn, beside them
        "mean_arch_forms.pdf",
        "mean_arch_forms.png",
    ]
    applied = pd.read_parquet(out / "analyses" / "calibration_applied.parquet")
    assert set(applied["calibration"].astype(str)) == {"endpoint"}  # every image endpoint
    assert applied["mm_per_px"].gt(0).all()


def test_the_report_prints_the_design_and_names_the_groups(study_run):
    folder, _, _ = study_run
    report = (folder / "out" / "report.md").read_text(encoding="utf-8")
    assert report.startswith("# Expansion study (sandbox)\n")
    design = report.split("## Design\n", 1)[1].split("\n## ", 1)[0]
    assert "- Groups: the column `treatment` of the patients table." in design
    assert "α = 0.1 (intervals at 90 %); multiplicity: Benjamini–Hochberg" in design
    applied = pd.read_parquet(folder / "out" / "analyses" / "calibration_applied.parquet")
    n = len(applied)  # every image of the tables, each by its endpoint's fallback
    assert (
        f"Calibration applied to {n} images: 0 with their own mm per pixel, {n} with their "
        "endpoint's fallback, 0 in pixels"
    ) in design
    assert "A patient's group is their value of `treatment` in the patients table." in report
    assert "## Cephalometric measures by `treatment`" in report
    assert "SNA, SNB, ANB and Wits are tested too" in report
    assert "skeletal classes, on the" not in report


def test_the_group_comparison_follows_the_design(study_run):
    folder, _, _ = study_run
    out = folder / "out"
    cmp = pd.read_parquet(out / "analyses" / "ceph_compare.parquet")
    assert "ANB" in set(cmp["measure"])  # the sagittal measures do not define these groups
    measures = pd.read_parquet(out / "analyses" / "ceph_measures.parquet")
    groups = pd.read_csv(folder / "patients.csv").set_index("patient_id")["treatment"]
    first = measures[(measures["view"] == "lateral")].sort_values("timestamp")
    first = first.drop_duplicates(["patient_id", "measure"])  # each patient's first session
    p_values = []
    for row in cmp.itertuples():
        values = first[first["measure"] == row.measure].set_index("patient_id")["value"]
        a = values[groups.reindex(values.index) == "A"].to_numpy()
        b = values[groups.reindex(values.index) == "B"].to_numpy()
        welch = sps.ttest_ind(a, b, equal_var=False)
        assert row.p_value == pytest.approx(welch.pvalue, rel=1e-9), row.measure
        p_values.append(welch.pvalue)
        # the 90 % interval of the difference A − B (α = 0.1), Welch–Satterthwaite by hand
        va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
        df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
        half = sps.t.ppf(0.95, df) * np.sqrt(va + vb)
        diff = a.mean() - b.mean()
        assert row.difference == pytest.approx(diff, rel=1e-9)
        assert (row.difference_ci_low, row.difference_ci_high) == pytest.approx(
            (diff - half, diff + half), rel=1e-9
        )
    from statsmodels.stats.multitest import multipletests

    adjusted = multipletests(p_values, method="fdr_bh")[1]
    assert cmp["p_adjusted"].to_numpy() == pytest.approx(adjusted, rel=1e-9)
    assert set(cmp["correction"]) == {"fdr_bh"}


def test_a_rerun_sends_nothing_stored_and_rewrites_the_later_stages(study_run):
    folder, args, first = study_run
    assert first.exit_code == 0, first.output
    out = folder / "out"
    (out / "report.md").unlink()
    stored = len(read_responses(out))
    again = CliRunner().invoke(app, args)
    assert again.exit_code == 0, again.output
    assert f"{stored} already stored, 0 stored now" in again.output
    assert len(read_responses(out)) == stored
    assert (out / "report.md").exists()


def test_a_wrong_study_file_stops_before_anything_is_sent(tmp_path):
    (tmp_path / "m.csv").write_text("patient_id,timestamp,endpoint,image_url\n")
    (tmp_path / "study.toml").write_text("[statistics]\naplha = 0.1\n")
    ran = CliRunner().invoke(
        app,
        ["study", str(tmp_path / "m.csv"), "--design", str(tmp_path / "study.toml"), "--sandbox"],
    )
    assert ran.exit_code == 2
    assert "error: " in ran.output and "did you mean 'alpha'?" in ran.output
    assert "Traceback" not in ran.output
    assert not (tmp_path / "dentalkit-study").exists()


def test_an_unreachable_service_stops_the_study_with_the_fetch_line(tmp_path, monkeypatch):
    monkeypatch.setenv("DENTALKIT_API_KEY", "k-not-a-real-key")
    manifest = tmp_path / "m.csv"
    manifest.write_text(
        "patient_id,timestamp,endpoint,image_url\n"
        "P1,2024-03-05T10:00:00Z,ceph_lateral_points,https://example.org/a.png\n"
    )
    url = f"http://127.0.0.1:{_free_port()}/api/v2"  # nothing listens there
    ran = CliRunner().invoke(
        app,
        ["study", str(manifest), "--out", str(tmp_path / "o"), "--base-url", url,
         "--cache", "memory", "--no-progress"],
    )  # fmt: skip
    assert ran.exit_code == 4, ran.output
    assert "cannot reach the service at http://127.0.0.1" in ran.output
    assert not (tmp_path / "o" / "tables").exists()  # nothing after the fetch was written
    assert "k-not-a-real-key" not in ran.output


def test_the_help_names_the_inputs_and_the_sandbox():
    ran = CliRunner().invoke(app, ["study", "--help"], terminal_width=200)
    assert ran.exit_code == 0
    for option in ("--patients", "--design", "--sandbox", "--mm-per-px", "--out", "--port"):
        assert option in ran.output
    assert "DENTALKIT_API_KEY" in ran.output and "Resumable" in ran.output
