"""Small and odd cohorts never crash (issue 32, item 5).

The study (:func:`dentalkit.study.run`, and ``dentalkit study`` / ``dentalkit analyze`` on
the command line) on sandbox cohorts of 1, 2, 3 and 6 patients, a group of 0 and of 1
patient, one session only, an endpoint missing entirely and a cohort without a single
finding. For each: no traceback, the summary lines, and nothing silently missing — every
table an analysis declares (:attr:`AnalysisSpec.writes`) is either written or named by a
``study.analyze`` row of ``analysis_problems`` that says why, and the report says it too.

One sandbox and one HTTP cache serve every case (a case re-asks only what an earlier one
did not); figures are left out of the cases (drawn once, for one patient, by the
command-line case) to keep each case a few seconds.
"""

from __future__ import annotations

import socket
from pathlib import Path

import pandas as pd
import pytest
from typer.testing import CliRunner

from dentalkit.cli import app
from dentalkit.study import NOT_RUN, Design, run
from dentalkit.study.analyses import selected_analyses
from dentalkit.study.demo import (
    SESSIONS,
    demo_manifest,
    demo_patients,
    sandbox_calibration,
    sandbox_patients,
)
from dentalkit.study.run import NOT_WRITTEN

#: A sandbox patient none of whose images has a finding (clinical photographs and
#: panoramic findings both empty at both sessions: checked on its tables below).
NO_FINDINGS = "DEMO-039"
#: Tables the design's QC policy makes only when qc='exclude' (the default) excluded rows
#: (and qc_excluded under exclude only): not written, and not a table "not made".
BY_POLICY = ("qc_excluded", "qc_sensitivity", "qc_sensitivity_results")
#: The figures drawn from per-group and per-cohort summaries (those a small cohort can
#: empty); the tracings and image figures draw one patient as well as many.
SMALL_FIGURES = (
    "ceph_wiggle",
    "mean_arch_forms",
    "odontogram_missing",
    "growth_by_class",
    "findings_prevalence",
    "tle_by_class",
    "tle_bland_altman",
)


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def cohort(tmp_path_factory):
    """(sandbox, client, patients of 6, their manifest, folder): shared by every case."""
    from dentalkit.fetch.client import Client
    from dentalkit.sandbox import running

    folder = tmp_path_factory.mktemp("small")
    with running(port=_free_port()) as sb:
        client = Client(sb.base_url, api_key=sb.api_key, cache=folder / "http-cache.sqlite")
        patients = demo_patients(6)
        manifest = demo_manifest(sb, patients)
        try:
            yield sb, client, patients, manifest, folder
        finally:
            client.close()


def _of(table: pd.DataFrame, ids) -> pd.DataFrame:
    return table[table["patient_id"].astype(str).isin(list(ids))].reset_index(drop=True)


def _study(cohort, name: str, manifest: pd.DataFrame, patients: pd.DataFrame | None, **design):
    """Run the study of one case; check what every case must hold; return its outputs."""
    _, client, _, _, folder = cohort
    plan = Design(out=folder / name, figures=(), dpi=300, mm_per_px=sandbox_calibration(), **design)
    lines: list[str] = []
    result = run(manifest, patients=patients, design=plan, client=client, echo=lines.append)
    assert result.stopped is None
    out = plan.out
    analyses = out / "analyses"
    problems = pd.read_parquet(analyses / "analysis_problems.parquet")
    not_run = problems[problems["producer"].astype(str) == NOT_RUN]
    said = set(not_run["table"].astype(str))
    # nothing silently missing: every declared table is written or has a row saying why
    for spec in selected_analyses(plan.analyses):
        for table in spec.writes:
            if table in NOT_WRITTEN or table in BY_POLICY:
                continue
            written = (analyses / f"{table}.parquet").is_file()
            assert written or table in said, f"{spec.name}: {table} neither written nor explained"
    # every such row says why, and so does the report
    assert not_run["reason"].astype(str).str.match(r"^not (run|made|tested|fitted)").all()
    report = (out / "report.md").read_text(encoding="utf-8")
    for table in said:
        assert f"`{table}`" in report, table
    for reason in set(not_run["reason"].astype(str)):
        assert reason in report, reason
    # the summary lines: every stage ended, the analyses' line counts the problems
    assert any(line.startswith("analyses: ") and "problem" in line for line in lines), lines
    assert any(line.startswith("report: ") for line in lines), lines
    assert result.left_out == 0, problems[problems["producer"].astype(str) != NOT_RUN]
    return out, problems, not_run


def _reasons(not_run: pd.DataFrame, table: str) -> list[str]:
    return not_run.loc[not_run["table"].astype(str) == table, "reason"].astype(str).tolist()


def _first_classes(out: Path) -> pd.Series:
    """Patients per skeletal class at the first session, counted from the written classes."""
    classes = pd.read_parquet(out / "analyses" / "ceph_classes.parquet")
    first = classes.sort_values("timestamp").drop_duplicates("patient_id")
    return first["skeletal_class"].astype(str).value_counts()


@pytest.mark.parametrize("n", [1, 2, 3, 6])
def test_cohorts_of_1_2_3_and_6_patients(cohort, n):
    _, _, patients, manifest, _ = cohort
    ids = patients["patient_id"].head(n)
    out, _, not_run = _study(cohort, f"n{n}", _of(manifest, ids), _of(patients, ids))
    counts = _first_classes(out)
    assert counts.sum() == n
    if len(counts) < 2:  # one class: nothing to compare, and each comparison says so
        for table in ("ceph_compare", "arch_compare"):
            assert not (out / "analyses" / f"{table}.parquet").exists()
            assert any("two groups" in r for r in _reasons(not_run, table)), table
    if n < 3:  # a treatment-length summary needs three estimates
        assert _reasons(not_run, "tle_summary") == [
            f"not made: it needs 3 patients with an estimate; found {n}"
        ]
    else:
        assert (out / "analyses" / "tle_summary.parquet").is_file()


def test_a_skeletal_class_of_one_patient(cohort):
    """The issue's crash: a class of one patient left ceph_compare with a null test, and
    writing it raised (``column 'test' may not be null``). Now each untested comparison
    is a row saying why, and ``dentalkit analyze`` on the same tables exits 0."""
    _, _, patients, manifest, folder = cohort
    ids = patients["patient_id"].head(5)
    out, _, not_run = _study(cohort, "class-of-one", _of(manifest, ids), _of(patients, ids))
    counts = _first_classes(out)
    single = counts[counts == 1].index.tolist()
    assert single and (counts >= 2).any(), counts  # the case: a class of one patient
    rows = not_run[not_run["table"].astype(str) == "ceph_compare"]
    assert len(rows) == 7  # the vertical and size measures compared between classes
    assert rows["path"].str.startswith("measure=").all()
    assert rows["reason"].str.contains(f"\\['{single[0]}'\\] have fewer than 2 units").all()
    assert rows["value"].str.contains(f"{single[0]}: 1").all()
    assert not (out / "analyses" / "ceph_compare.parquet").exists()
    # the growth models of a class x time design with a class of one patient are not
    # fitted: their rows are written (converged null) and each says why
    models = pd.read_parquet(out / "analyses" / "growth_models.parquet")
    unfitted = models[models["status"] != "ok"]
    assert len(unfitted) and unfitted["converged"].isna().all()
    assert len(_reasons(not_run, "growth_models")) == len(unfitted)
    assert all("single patient" in r for r in _reasons(not_run, "growth_models"))
    again = CliRunner().invoke(
        app, ["analyze", str(out / "tables"), "--out", str(folder / "class-of-one-cli")]
    )
    assert again.exit_code == 0, again.output
    assert again.exception is None or isinstance(again.exception, SystemExit)
    assert "study.analyze" in again.output  # the summary line counts the rows saying why
    written = {p.stem for p in (folder / "class-of-one-cli").glob("*.parquet")}
    assert {"ceph_measures", "arch_fits", "growth_fixed", "analysis_problems"} <= written


@pytest.mark.parametrize("sizes", [(3, 0), (3, 1)])
def test_a_design_group_of_0_or_1_patient(cohort, sizes):
    """Groups from a patients-table column: group B has no patient with images, or one."""
    _, _, patients, manifest, _ = cohort
    a, b = sizes
    table = patients.head(a + 2).assign(treatment=["A"] * a + ["B"] * 2)
    ids = table["patient_id"].head(a + b)  # the other B patients have no images
    out, _, not_run = _study(
        cohort, f"groups-{a}-{b}", _of(manifest, ids), table, groups="treatment"
    )
    for name in ("ceph_compare", "arch_compare"):
        assert not (out / "analyses" / f"{name}.parquet").exists()
        reasons = _reasons(not_run, name)
        if b == 0:
            assert any("found A: 3 patient(s)" in r for r in reasons), reasons
        else:
            assert reasons and all("['B'] have fewer than 2 units" in r for r in reasons)


def test_one_session_only(cohort):
    _, _, patients, manifest, _ = cohort
    ids = patients["patient_id"].head(3)
    first = _of(manifest, ids)
    first = first[first["timestamp"] == SESSIONS[0]]
    out, _, not_run = _study(cohort, "one-session", first, _of(patients, ids))
    for name in ("growth_fixed", "growth_models", "growth_data"):
        assert not (out / "analyses" / f"{name}.parquet").exists()
        assert any("two sessions" in r for r in _reasons(not_run, name)), name


def test_an_endpoint_missing_entirely(cohort):
    """No lateral cephalogram: no skeletal class, hence no groups to compare by default."""
    _, _, patients, manifest, _ = cohort
    ids = patients["patient_id"].head(3)
    without = _of(manifest, ids)
    without = without[without["endpoint"] != "ceph_lateral_points"]
    out, _, not_run = _study(cohort, "no-lateral", without, _of(patients, ids))
    assert (out / "analyses" / "ceph_measures.parquet").is_file()  # the frontal views
    for name in ("ceph_classes", "ceph_summary"):
        assert any("no lateral cephalogram" in r for r in _reasons(not_run, name)), name
    for name in ("ceph_compare", "arch_mean_forms", "growth_fixed"):
        assert any("no groups to compare" in r for r in _reasons(not_run, name)), name


def test_no_finding_in_any_image(cohort):
    sb, _, _, _, _ = cohort
    patients = sandbox_patients([NO_FINDINGS])
    out, _, not_run = _study(cohort, "no-findings", demo_manifest(sb, patients), patients)
    assert len(pd.read_parquet(out / "tables" / "findings.parquet")) == 0  # the case
    assert len(pd.read_parquet(out / "analyses" / "findings_prevalence.parquet")) == 0
    analysed = 2 * 2  # two sessions of the two findings endpoints (clinical, panoramic)
    assert _reasons(not_run, "findings_prevalence") == [
        f"not made (no rows): no finding was detected in the {analysed} image(s) of 1 "
        "patient(s) analysed for findings, so no class has a prevalence to show"
    ]


def test_the_command_line_study_of_one_patient_exits_0_with_a_summary(cohort, tmp_path):
    """``dentalkit study --sandbox`` on one patient, figures included: exit 0, the summary
    names the rows saying why, the report lists them."""
    _, _, patients, manifest, _ = cohort
    one = _of(manifest, ["DEMO-001"])
    one.to_csv(tmp_path / "manifest.csv", index=False)
    _of(patients, ["DEMO-001"]).to_csv(tmp_path / "patients.csv", index=False)
    calibration = "\n".join(f"{k} = {v}" for k, v in sandbox_calibration().items())
    (tmp_path / "study.toml").write_text(
        'out = "out"\n[figures]\ndpi = 300\ndraw = '
        + str(list(SMALL_FIGURES)).replace("'", '"')
        + "\n[calibration]\n"
        + calibration
        + "\n"
    )
    args = [
        "study",
        str(tmp_path / "manifest.csv"),
        *("--patients", str(tmp_path / "patients.csv")),
        *("--design", str(tmp_path / "study.toml")),
        *("--sandbox", "--port", str(_free_port()), "--no-progress"),
    ]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    assert "Traceback" not in result.output
    assert "study.analyze" in result.output and "report: " in result.output
    report = (tmp_path / "out" / "report.md").read_text(encoding="utf-8")
    assert "Not made on this cohort, and why:" in report
