"""``dentalkit first-contact`` against the sandbox (issue 20, item 3): one request per
endpoint from a small manifest, the cost printed and asked for, then the contract report."""

from __future__ import annotations

import pandas as pd
from typer.testing import CliRunner

from dentalkit import tle
from dentalkit.cli import app
from dentalkit.endpoints import ENDPOINTS
from dentalkit.fetch.cohort import first_contact_plan
from dentalkit.fetch.store import read_responses
from dentalkit.sandbox.render import default_image_kind


def _manifest(sb, path):
    rows = []
    for pid in ("F1", "F2"):  # two images per endpoint: only the first is sent
        for ep in ENDPOINTS.values():
            if ep.is_image:
                url = sb.image_url(default_image_kind(ep), pid, "2024-03-05")
                rows.append({"patient_id": pid, "timestamp": "2024-03-05", "endpoint": ep.name, "image_url": url})  # fmt: skip
    query = tle.encode(tle.example_patients(1)).iloc[0].to_dict()
    rows.append({"patient_id": "F1", "timestamp": "2024-03-05", "endpoint": "tle", **query})
    rows.append({"patient_id": "F1", "timestamp": "2024-03-05", "endpoint": "classifier", "image_url": "not-a-url"})  # fmt: skip
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def test_plan_takes_the_first_valid_row_per_endpoint(fresh, tmp_path):
    plan = first_contact_plan(_manifest(fresh, tmp_path / "m.csv"))
    assert plan.manifest["endpoint"].tolist() == list(ENDPOINTS)
    assert set(plan.manifest["patient_id"]) == {"F1"}
    assert plan.missing == [] and len(plan.problems) == 1  # the bad classifier row


def test_asks_before_sending_then_writes_the_contract(fresh, tmp_path):
    runner = CliRunner()
    env = {"DENTALKIT_API_KEY": fresh.api_key, "DENTALKIT_BASE_URL": fresh.base_url}
    out = tmp_path / "first"
    args = ["first-contact", str(_manifest(fresh, tmp_path / "m.csv")), "--out", str(out), "--cache", "memory"]  # fmt: skip
    declined = runner.invoke(app, args, env=env, input="n\n")
    assert declined.exit_code == 0, declined.output
    assert "cost: 13 request(s) to send" in declined.output and "Send them?" in declined.output
    assert "nothing sent" in declined.output and fresh.stats()["total"] == 0
    sent = runner.invoke(app, args, env=env, input="y\n")
    assert sent.exit_code == 0, sent.output
    assert fresh.stats()["total"] == 13
    assert sorted(fresh.stats()["by_path"]) == sorted(e.path for e in ENDPOINTS.values())
    assert len(read_responses(out)) == 13
    assert (out / "contract.md").exists() and (out / "contract.parquet").exists()
    assert "0 drift" in sent.output and fresh.api_key not in sent.output
    again = runner.invoke(app, [*args, "--yes"], env=env)
    assert again.exit_code == 0 and "cost: 0 request(s) to send (13 already stored" in again.output
    assert "Send them?" not in again.output and fresh.stats()["total"] == 13


def test_yes_skips_the_question_and_a_wrong_key_is_named(fresh, tmp_path):
    env = {"DENTALKIT_API_KEY": "wrong-key-123", "DENTALKIT_BASE_URL": fresh.base_url}
    args = ["first-contact", str(_manifest(fresh, tmp_path / "m.csv")), "--out", str(tmp_path / "o"), "--cache", "memory", "--yes"]  # fmt: skip
    result = CliRunner().invoke(app, args, env=env)
    assert result.exit_code == 3, result.output
    assert "Send them?" not in result.output and "rejected the API key" in result.output
