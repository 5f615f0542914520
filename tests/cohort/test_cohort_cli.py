"""``dentalkit fetch`` on the command line (the demo has tests/test_demo.py)."""

from __future__ import annotations

import pandas as pd
from typer.testing import CliRunner

from dentalkit.cli import app
from dentalkit.fetch.store import read_responses


def _manifest(path, bad_row=False):
    m = pd.DataFrame(
        {
            "patient_id": ["C1", "C2", "C3"],
            "timestamp": "2024-03-05",
            "image_url": [f"https://images.example.org/C{i}/x.png" for i in (1, 2, 3)],
        }
    )
    if bad_row:
        m.loc[2, "image_url"] = "x.png"
    m.to_csv(path, index=False)
    return path


def test_fetch_command_fetches_resumes_and_reports(fresh, tmp_path):
    runner = CliRunner()
    env = {"DENTALKIT_API_KEY": fresh.api_key, "DENTALKIT_BASE_URL": fresh.base_url}
    manifest = _manifest(tmp_path / "m.csv")
    args = ["fetch", str(manifest), "--endpoint", "classifier", "--endpoint", "tmj_xsectional", "--out", str(tmp_path / "out"), "--cache", str(tmp_path / "c.sqlite"), "--no-progress"]  # fmt: skip
    first = runner.invoke(app, args, env=env)
    assert first.exit_code == 0, first.output
    assert "6 stored now" in first.output
    again = runner.invoke(app, args, env=env)
    assert again.exit_code == 0 and "6 already stored" in again.output
    assert fresh.stats()["total"] == 6
    assert len(read_responses(tmp_path / "out")) == 6
    assert fresh.api_key not in first.output + again.output


def test_fetch_command_exit_codes(fresh, tmp_path):
    runner = CliRunner()
    env = {"DENTALKIT_API_KEY": fresh.api_key, "DENTALKIT_BASE_URL": fresh.base_url}
    manifest = _manifest(tmp_path / "m.csv", bad_row=True)
    out = tmp_path / "out"
    args = ["fetch", str(manifest), "--endpoint", "classifier", "--out", str(out), "--cache", "memory", "--no-progress"]  # fmt: skip
    collected = runner.invoke(app, args, env=env)
    assert collected.exit_code == 1 and "manifest-problems.csv" in collected.output
    assert pd.read_csv(out / "manifest-problems.csv")["row"].tolist() == [3]
    raised = runner.invoke(app, [*args, "--errors", "raise"], env=env)
    assert raised.exit_code == 2 and "row 3" in raised.output
    no_key = runner.invoke(app, args, env={"DENTALKIT_API_KEY": "", "DENTALKIT_BASE_URL": fresh.base_url})  # fmt: skip
    assert no_key.exit_code == 2 and "DENTALKIT_API_KEY" in no_key.output
