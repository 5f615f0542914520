"""`dentalkit verify`, and `dentalkit fetch` on damaged stores, locked stores and hostile
manifests: clear messages and exit codes, damaged files moved aside, no bare formulas in the
problems CSV, lone surrogates as problem rows."""

from __future__ import annotations

import csv

import pandas as pd
import pytest
from typer.testing import CliRunner

from dentalkit.errors import ManifestError
from dentalkit.fetch.cohort import fetch_cohort
from dentalkit.fetch.store import read_responses, store_lock
from tests.damage import garbled_middle

SURROGATE = "\ud800"


def manifest_csv(path, n=4, extra=None):
    ids = [f"V{i}" for i in range(n)]
    m = pd.DataFrame(
        {
            "patient_id": ids,
            "timestamp": "2024-03-05",
            "image_url": [f"https://images.example.org/{p}.png" for p in ids],
        }
    )
    if extra is not None:
        m = pd.concat([m, extra], ignore_index=True)
    m.to_csv(path, index=False)
    return path


def run(args, fresh):
    env = {"DENTALKIT_API_KEY": fresh.api_key, "DENTALKIT_BASE_URL": fresh.base_url}
    from dentalkit.cli import app

    return CliRunner().invoke(app, args, env=env)


def test_verify_names_damage_without_changing_anything_and_fetch_repairs(fresh, tmp_path):
    out, cache = tmp_path / "out", tmp_path / "c.sqlite"
    fetch = ["fetch", str(manifest_csv(tmp_path / "m.csv")), "--endpoint", "classifier", "--out", str(out), "--cache", str(cache), "--no-progress"]  # fmt: skip
    assert run(fetch, fresh).exit_code == 0
    ok = run(["verify", str(out), "--cache", str(cache)], fresh)
    assert ok.exit_code == 0 and "0 damaged; 4 stored rows readable" in ok.output, ok.output
    (part,) = (out / "responses").glob("part-*.parquet")
    garbled_middle(part)
    damaged = part.read_bytes()
    bad = run(["verify", str(out)], fresh)
    assert bad.exit_code == 1 and "DAMAGED" in bad.output and part.name in bad.output
    assert part.read_bytes() == damaged  # verify changes nothing
    tables = run(["tables", str(out), "--out", str(tmp_path / "tables")], fresh)
    assert tables.exit_code == 2 and part.name in tables.output and "Traceback" not in tables.output
    again = run(fetch, fresh)
    assert again.exit_code == 0 and "moved to" in again.output and "4 stored now" in again.output
    assert run(["verify", str(out)], fresh).exit_code == 0
    assert len(read_responses(out)) == 4
    assert run(["verify", str(tmp_path / "nothing")], fresh).exit_code == 2


def test_a_second_fetch_into_a_locked_store_refuses_with_a_clear_message(fresh, tmp_path):
    out = tmp_path / "out"
    fetch = ["fetch", str(manifest_csv(tmp_path / "m.csv")), "--endpoint", "classifier", "--out", str(out), "--cache", "memory", "--no-progress"]  # fmt: skip
    lock = store_lock(out)  # another writer
    try:
        refused = run(fetch, fresh)
    finally:
        lock.release()
    assert refused.exit_code == 2 and "another fetch is writing" in refused.output
    assert fresh.stats()["total"] == 0
    assert run(fetch, fresh).exit_code == 0


def test_problems_csv_of_a_hostile_manifest_has_no_bare_formulas(fresh, tmp_path):
    hostile = pd.DataFrame(
        {
            "patient_id": ["=cmd|' /C calc'!A0", "@SUM(A1)", "+1+1"],
            "timestamp": ["=1+1", "2024-03-05", "-2+3"],
            "image_url": ['=HYPERLINK("http://x")', "\tnot-a-url", "x\x00.png"],
        }
    )
    out = tmp_path / "out"
    args = ["fetch", str(manifest_csv(tmp_path / "m.csv", extra=hostile)), "--endpoint", "classifier", "--out", str(out), "--cache", "memory", "--no-progress"]  # fmt: skip
    res = run(args, fresh)
    # 3 rows, 5 problems: two timestamps are not dates, and TAB and NUL in URLs are refused
    assert res.exit_code == 1 and "3 bad manifest row(s)" in res.output, res.output
    assert "their 5 problem(s)" in res.output
    with open(out / "manifest-problems.csv", encoding="utf-8", newline="") as fh:
        rows = list(csv.reader(fh))
    assert len(rows) == 1 + 5
    for row in rows:
        for cell in row:
            assert not cell.startswith(("=", "+", "-", "@", "\t", "\r")), cell
            assert "\x00" not in cell


def test_lone_surrogates_anywhere_in_a_manifest_become_problem_rows(make_client, tmp_path):
    client = make_client(cache="memory")
    base = {"patient_id": "P1", "timestamp": "2024-03-05", "image_url": "https://a.b/c.png"}
    good = {"patient_id": "P2", "timestamp": "2024-03-05", "image_url": "https://a.b/d.png"}
    for field in ("patient_id", "timestamp", "image_url", "endpoint"):
        bad = {**base, "endpoint": "classifier", field: base.get(field, "classifier") + SURROGATE}
        rows = [bad, {**good, "endpoint": "classifier"}]
        for manifest in (rows, pd.DataFrame(rows, dtype=object)):
            rep = fetch_cohort(
                manifest, None, tmp_path / "out", client=client, progress=False, errors="collect"
            )
            assert rep.problems["field"].tolist() == [field], field
            assert rep.requested == 1
    with pytest.raises(ManifestError, match="column name is not valid Unicode"):
        fetch_cohort([{**base, "note" + SURROGATE: 1}], "classifier", tmp_path / "out", client=client, progress=False)  # fmt: skip
