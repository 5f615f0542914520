"""``dentalkit demo`` runs the whole study end to end and resumes from its store."""

from __future__ import annotations

import re
import socket

import pandas as pd
import pytest
from typer.testing import CliRunner

from dentalkit import io
from dentalkit.cli import app
from dentalkit.endpoints import image_endpoints
from dentalkit.fetch.store import read_responses
from dentalkit.study.demo import sandbox_calibration, sandbox_patients


@pytest.mark.timeout(900)  # a hang guard: two demo runs and every figure, on a loaded machine
def test_demo_runs_the_whole_study_and_a_second_run_is_served_from_its_store(tmp_path, demo_study):
    out, args, first = demo_study  # one run per session (tests/conftest.py)
    assert first.exit_code == 0, first.output
    assert "runs no AI model" in first.output
    # each stage says when it starts and, as soon as it ends, what it made and how long it
    # took (issue 23: no silence between the fetch and the end of the run)
    lines = first.output.splitlines()
    order = []
    for name in ("treatment length", "tables", "analyses", "figures", "report"):
        start = next(i for i, line in enumerate(lines) if line.startswith(f"{name}: "))
        assert lines[start].endswith(" …"), lines[start]
        end = next(i for i in range(start + 1, len(lines)) if lines[i].startswith(f"{name}: "))
        assert re.search(r"\[\d+\.\d s\]$", lines[end]), lines[end]
        order += [start, end]
    assert order == sorted(order)  # one after the other, each finished before the next
    assert re.match(r"analyses: \d+ tables in ", lines[order[5]]), lines[order[5]]

    responses = read_responses(out)
    # 3 patients x 2 sessions x 12 image endpoints, plus one /tle per patient.
    assert len(responses) == 3 * 2 * len(image_endpoints()) + 3
    assert responses["request_key"].is_unique

    tables = io.read_tables(out / "tables")
    assert set(tables["landmarks"]["view"]) == {"lateral", "frontal"}
    assert tables["landmarks"]["patient_id"].nunique() == 3
    assert len(tables["problems"]) == 0

    measures = pd.read_parquet(out / "analyses" / "ceph_measures.parquet")
    sna = measures[(measures["measure"] == "SNA") & (measures["view"] == "lateral")]
    assert len(sna) == 6
    assert sna["value"].between(60, 100).all()
    assert (measures.loc[measures["measure"] == "N_Me", "unit"] == "mm").all()

    figures = sorted(p.stem for p in (out / "figures").glob("*.png"))
    for expected in (
        "ceph_tracing",
        "ceph_superimposition",
        "arch_forms",
        "tooth_map",
        "tle_by_class",
    ):
        assert expected in figures
    report = (out / "report.md").read_text()
    for name in figures:
        assert f"figures/{name}.png" in report
    # the patient is the unit: one session per patient in summaries and group comparisons
    assert "The unit of analysis is the **patient** (3 patients, 6 lateral sessions)" in report
    summary = pd.read_parquet(out / "analyses" / "ceph_summary.parquet")
    sna_row = summary[summary["measure"] == "SNA"].iloc[0]
    assert (sna_row["n"], sna_row["n_units"], sna_row["session"]) == (3, 3, "first")
    changes = pd.read_parquet(out / "analyses" / "ceph_class_changes.parquet")
    assert len(changes) == 3 and (changes["n_sessions"] == 2).all()
    z = pd.read_parquet(out / "analyses" / "ceph_zscores.parquet")
    assert z["sex"].isin(["F", "M"]).all() and z["age"].between(5, 60).all()
    # versions per endpoint, the contract (no drift from the sandbox) and TMJ by patient
    assert "## Model versions per endpoint" in report and "2.3.0-sandbox" in report
    assert "no drift" in report and (out / "contract.md").exists()
    contract = pd.read_parquet(out / "contract.parquet")
    assert set(contract["endpoint"]) == {e.name for e in image_endpoints()} | {"tle"}
    assert "## TMJ findings (patients)" in report

    # The same study as shell steps: tables, analyze and figures.
    cal = sandbox_calibration()
    cli_out = tmp_path / "cli"
    step = CliRunner().invoke(app, ["tables", str(out), "--out", str(cli_out / "tables")])
    assert step.exit_code == 0, step.output
    assert f"{len(tables['landmarks']):9d} rows" in step.output
    assert f"tables: converting {len(responses):,} responses from {out} …" in step.output
    again_tables = io.read_tables(cli_out / "tables")
    assert again_tables.keys() == tables.keys()
    for name, table in tables.items():
        pd.testing.assert_frame_equal(again_tables[name], table, obj=name)
    step = CliRunner().invoke(app, ["tables", str(tmp_path / "nothing"), "--out", str(cli_out)])
    assert step.exit_code == 2 and "error:" in step.output
    record_csv = tmp_path / "patients.csv"
    sandbox_patients(sorted(tables["landmarks"]["patient_id"].astype(str).unique())).to_csv(
        record_csv, index=False
    )
    step = CliRunner().invoke(
        app,
        [
            "analyze",
            str(out / "tables"),
            "--out",
            str(cli_out / "analyses"),
            "--store",
            str(out),
            *[f"--mm-per-px={name}={value}" for name, value in cal.items()],
            "--patients",
            str(record_csv),
        ],
    )
    assert step.exit_code == 0, step.output
    again = pd.read_parquet(cli_out / "analyses" / "ceph_measures.parquet")
    pd.testing.assert_frame_equal(again, measures)
    # the same patient record through --patients: the same norm of each sex and age
    pd.testing.assert_frame_equal(
        pd.read_parquet(cli_out / "analyses" / "ceph_zscores.parquet"),
        pd.read_parquet(out / "analyses" / "ceph_zscores.parquet"),
    )
    step = CliRunner().invoke(
        app,
        [
            "figures",
            str(out / "tables"),
            str(cli_out / "analyses"),
            *["--out", str(cli_out / "fig"), "--dpi", "300"],
        ],
    )
    assert step.exit_code == 0, step.output
    assert re.search(r"figures: \d+ drawn \[\d+\.\d s\]", step.output)
    assert (cli_out / "fig" / "arch_forms.pdf").stat().st_size > 1000
    from PIL import Image

    with Image.open(out / "figures" / "arch_forms.png") as png:
        assert round(png.info["dpi"][0]) == 300
        assert abs(png.width - 85 / 25.4 * 300) < 3  # 85 mm single column

    # Export for R/SPSS users, pseudonymized with a secret read from the environment only.
    secret = "k3Jx9-vQ2mZp7LwR4tYb8NcH1sDf6GaE0uIo5"
    step = CliRunner().invoke(
        app,
        [
            "export",
            str(out / "tables"),
            str(cli_out / "analyses"),
            *["--out", str(cli_out / "export"), "--secret-env", "DK_TEST_SECRET"],
        ],
        env={"DK_TEST_SECRET": secret},
    )
    assert step.exit_code == 0, step.output
    exported = io.read_export(cli_out / "export")
    real_ids = set(tables["landmarks"]["patient_id"].astype(str))
    pseudonyms = set(exported["landmarks"]["patient_id"].astype(str))
    assert len(pseudonyms) == len(real_ids) and not pseudonyms & real_ids
    assert set(exported["ceph_measures"]["patient_id"].astype(str)) == pseudonyms  # joins
    everything = "".join(p.read_text() for p in (cli_out / "export").iterdir())
    assert secret not in everything and not any(i in everything for i in real_ids)
    step = CliRunner().invoke(
        app, ["export", str(out / "tables"), "--out", str(cli_out / "x"), "--secret-env", "NOPE"]
    )
    assert step.exit_code == 2 and "NOPE" in step.output

    # Second run: every request is already stored, nothing is sent again.
    second = CliRunner().invoke(app, args)
    assert second.exit_code == 0, second.output
    assert f"{len(responses)} already stored, 0 stored now" in second.output
    assert len(read_responses(out)) == len(responses)


def test_a_busy_port_is_a_clear_error(tmp_path):
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen(1)
        port = str(busy.getsockname()[1])
        result = CliRunner().invoke(
            app, ["demo", "--patients", "1", "--out", str(tmp_path), "--port", port]
        )
    assert result.exit_code == 2
    assert "busy" in result.output


def test_a_bad_calibration_option_names_the_fix(tmp_path):
    result = CliRunner().invoke(
        app, ["analyze", str(tmp_path), "--out", str(tmp_path / "a"), "--mm-per-px", "ceph=0.1"]
    )
    assert result.exit_code == 2
    assert "Invalid value for '--mm-per-px': 'ceph' is not an endpoint name" in result.output
    assert "ceph_lateral_points" in result.output  # the names to choose from


def test_report_tables_come_from_to_markdown_and_keep_labels_as_text():
    from dentalkit.study.report import _markdown

    table = pd.DataFrame(
        {
            "label": ["07", "2.3"],  # text that looks like a number stays as written
            "n": [3, 12],
            "mean": [1.23456, float("nan")],  # missing: blank, not "nan"
        }
    )
    assert _markdown(table).splitlines() == [
        "| label   |   n |   mean |",
        "|:--------|----:|-------:|",
        "| 07      |   3 |   1.23 |",
        "| 2.3     |  12 |        |",
    ]


def test_report_names_the_compared_levels_from_the_groups_list():
    # groups is a list column (issue 23): the report names the levels, in test order,
    # as words, and n per group in the same order
    from dentalkit.stats import compare
    from dentalkit.study.report import sections as _sections

    first = pd.DataFrame(
        {
            "patient_id": [f"p{i}" for i in range(9)],
            "arch": ["up"] * 9,
            "measure": ["intercanine_width"] * 9,
            "skeletal_class": ["Class I"] * 4 + ["Class II"] * 3 + ["Class III"] * 2,
            "value": [30.1, 31.0, 29.5, 30.7, 28.9, 29.2, 30.0, 32.5, 31.9],
        }
    )
    cmp = compare(first, "value", "skeletal_class", per=["arch", "measure"])
    assert cmp["groups"].iloc[0] == ["Class I", "Class II", "Class III"]
    [body] = [b for title, b in _sections({}, {"arch_compare": cmp}) if "by skeletal" in title]
    assert "in the order Class I, Class II, Class III)" in body
    assert re.search(r"\| +4, 3, 2 +\|", body)


def test_every_demo_table_gives_a_patient_the_sex_and_age_of_the_sandbox_record(demo_study):
    """One sex and one age per patient across the demo's outputs: the sandbox's record.

    The /tle inputs used to draw sex and age independently of the sandbox patient whose
    anatomy the z-scores use, so a patient could be female in ceph_zscores and male in
    tle_estimates. Spellings differ by producer (the record's F/M, the codebook's
    female/male); both are read through the codebook's own labels and aliases.
    """
    from datetime import UTC, datetime

    from dentalkit import tle
    from dentalkit.sandbox import truth
    from dentalkit.tle.codebook import normalize_spelling

    out, _, first = demo_study
    assert first.exit_code == 0, first.output
    p02 = tle.load_codebook()["p02"]
    code_of = {label: code for label, code in p02.levels}

    def as_code(value: object) -> str:
        return code_of[p02.lookup[normalize_spelling(str(value))]]

    carrying = {}
    for path in sorted((out / "analyses").glob("*.parquet")) + sorted(
        (out / "tables").glob("*.parquet")
    ):
        table = pd.read_parquet(path)
        if {"patient_id", "sex"} <= set(table.columns):
            carrying[path.stem] = table
    assert {"ceph_zscores", "tle_estimates"} <= set(carrying)

    session = "2024-03-05T10:00:00Z"  # the demo's first session, that of its /tle rows
    when = datetime(2024, 3, 5, 10, tzinfo=UTC)
    for pid in carrying["ceph_zscores"]["patient_id"].astype(str).unique():
        record = truth(pid, session)["patient"]
        sexes = {
            name: {as_code(v) for v in t.loc[t["patient_id"].astype(str) == pid, "sex"]}
            for name, t in carrying.items()
        }
        assert all(s == {record["sex"]} for s in sexes.values()), (pid, record, sexes)
        # age at the /tle session, by hand from the record's birth date (365.25-day years)
        born = datetime.fromisoformat(record["birth_date"]).replace(tzinfo=UTC)
        age = (when - born).total_seconds() / (365.25 * 86400)
        est = carrying["tle_estimates"]
        [tle_age] = est.loc[est["patient_id"].astype(str) == pid, "age_years"]
        assert tle_age == pytest.approx(age, abs=1e-9)
        z = carrying["ceph_zscores"]
        first_session = z[(z["patient_id"].astype(str) == pid) & (z["timestamp"] == session)]
        assert first_session["age"].to_numpy() == pytest.approx(age, abs=1e-9)


def test_tle_inputs_take_sex_and_age_from_the_record_and_keep_the_rest():
    from datetime import UTC, datetime

    from dentalkit import tle
    from dentalkit.errors import InputError
    from dentalkit.sandbox import truth
    from dentalkit.study import tle_inputs

    drawn = tle.example_patients(50)
    ids = drawn["patient_id"].astype(str)
    record = pd.DataFrame(
        [{"patient_id": p, **truth(p, "2024-03-05T10:00:00Z")["patient"]} for p in ids]
    )[["patient_id", "sex", "birth_date"]]
    typed = tle_inputs(drawn, record, "2024-03-05T10:00:00Z")
    # the draws disagreed with the sandbox for many of the 50 (22 before the fix)
    assert (drawn["sex"].astype(str).str[0].str.upper() != record["sex"]).sum() > 10
    assert (
        typed["sex"].astype(str).tolist()
        == record["sex"].map({"F": "female", "M": "male"}).tolist()
    )
    born = [datetime.fromisoformat(b).replace(tzinfo=UTC) for b in record["birth_date"]]
    when = datetime(2024, 3, 5, 10, tzinfo=UTC)
    ages = [(when - b).total_seconds() / (365.25 * 86400) for b in born]
    assert typed["age_years"].to_numpy() == pytest.approx(ages, abs=1e-9)
    # p01 floors to completed years, p02 sends the record's code
    queries = tle.encode(typed)
    assert queries["p02"].tolist() == record["sex"].tolist()
    assert queries["p01"].astype(int).tolist() == [int(a) for a in ages]
    rest = [c for c in drawn.columns if c not in ("sex", "age_years")]
    pd.testing.assert_frame_equal(typed[rest], drawn[rest])

    with pytest.raises(InputError, match="no row for patient_id DEMO-050"):
        tle_inputs(drawn, record.head(49), "2024-03-05T10:00:00Z")
    with pytest.raises(InputError, match=r"patient DEMO-001: the record's sex 'X'"):
        tle_inputs(drawn, record.assign(sex=["X", *record["sex"][1:]]), "2024-03-05T10:00:00Z")


def test_the_demo_says_it_met_no_problems_and_writes_the_empty_problems_table(demo_study):
    # README's output list: analyses/analysis_problems.parquet in every run, 0 rows here
    out, _, first = demo_study
    assert first.exit_code == 0, first.output
    problems = pd.read_parquet(out / "analyses" / "analysis_problems.parquet")
    assert len(problems) == 0
    [line] = [s for s in first.output.splitlines() if s.startswith("analyses: 2")]
    assert "; no problems (in analysis_problems.parquet) [" in line
    report = (out / "report.md").read_text(encoding="utf-8")
    section = report.split("## Problems", 1)[1].split("\n## ", 1)[0]
    assert section.strip().splitlines() == [
        "- Converting the responses: no problems (`tables/problems.parquet` has 0 rows).",
        "- Analyses: no problems (`analyses/analysis_problems.parquet` has 0 rows).",
    ]


def test_the_report_counts_problems_per_analysis_and_says_where_they_are():
    from dentalkit.errors import problems_frame
    from dentalkit.study.report import _problems_section

    found = problems_frame(
        pd.DataFrame(
            {
                "table": ["tooth_keypoints", "ceph_measures", "ceph_measures"],
                "reason": ["non-finite x", "landmark absent", "landmark absent"],
            }
        ),
        severity="error",
    ).assign(producer=["arch.measure", "ceph.measure", "ceph.measure"])
    text = _problems_section(found.iloc[:1].drop(columns="producer"), found)
    assert text.splitlines() == [
        "- Converting the responses: 1 problem row(s) (`tables/problems.parquet`).",
        "- Analyses: 3 problem(s): ceph.measure 2, arch.measure 1; the rows each analysis "
        "could not use are in `analyses/analysis_problems.parquet`.",
    ]
