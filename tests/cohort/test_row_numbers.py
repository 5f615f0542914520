"""The row-number rule of docs/conventions.md holds for the tables a fetch writes.

A manifest's problems and the store's failures count manifest data rows from 1, so the
offending line of the CSV file is row + 1 (the header is line 1). The lines are read here
as plain text, not through pandas.
"""

from __future__ import annotations

from pathlib import Path

from dentalkit import fetch_cohort
from dentalkit.fetch.store import read_failures

PAGE = Path(__file__).resolve().parents[2] / "docs" / "conventions.md"


def _rule(starts: str) -> str:
    """The row of the page's row-number table that starts with ``starts``."""
    section = PAGE.read_text(encoding="utf-8").split("## Row numbers", 1)[1].split("\n## ", 1)[0]
    [line] = [ln for ln in section.splitlines() if ln.startswith(f"| {starts}")]
    return line


def test_the_page_states_the_bases():
    manifest = _rule("problems of a manifest")
    assert "`failures.parquet`" in manifest and "manifest-problems.csv" in manifest
    assert "| 1-based | line = row + 1 |" in manifest
    assert "| 0-based | line = row + 2" in _rule("every other problems table")


def test_manifest_problems_and_failures_point_at_csv_line_row_plus_one(
    make_client, fresh, tmp_path, monkeypatch
):
    import dentalkit.fetch._schedule as schedule
    from dentalkit.errors import TransportError

    real = schedule._fetch_one

    def flaky(client, payload):  # the requests of patient F7 fail, as a lost connection would
        if payload[1]["PatientID"] == "F7":
            return TransportError("simulated: connection reset")
        return real(client, payload)

    monkeypatch.setattr(schedule, "_fetch_one", flaky)
    url = "https://images.example.org/{}/x.png"
    lines = [
        "patient_id,timestamp,image_url",
        f"A1,2024-03-05,{url.format('A1')}",
        f"B2,,{url.format('B2')}",  # no timestamp: a bad row
        f"F7,2024-03-05,{url.format('F7')}",  # fails
        f"C3,2024-03-05,{url.format('C3')}",
        f"A1,2024-03-05,{url.format('A1')}",  # duplicate of the first data row
        "D4,2024-03-05,",  # no image: a bad row
    ]
    path = tmp_path / "manifest.csv"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")

    report = fetch_cohort(path, "classifier", tmp_path / "out", client=make_client(max_retries=0), progress=False, errors="collect")  # fmt: skip

    def line(n: int) -> str:  # the n-th line of the file, the header being line 1
        return lines[n - 1]

    problems = report.problems
    assert sorted(problems["row"].tolist()) == [2, 5, 6]
    for rec in problems.to_dict("records"):
        assert line(rec["row"] + 1).startswith(f"{rec['patient_id']},"), rec
    assert line(problems.loc[problems["field"] == "request", "row"].item() + 1) == lines[1]
    assert "manifest row 1" in problems.loc[problems["field"] == "request", "reason"].item()

    failures = read_failures(tmp_path / "out")
    assert failures["patient_id"].tolist() == ["F7"]
    [row] = failures["row"].tolist()
    assert line(row + 1).startswith("F7,")
