"""``dentalkit fetch`` says why on the terminal: a wrong key or an unreachable service is
named in one line with its own exit status, and the run stops instead of failing every
request the same way (issue 20, item 7)."""

from __future__ import annotations

import logging
import re
import socket

import pandas as pd
from typer.testing import CliRunner

from dentalkit.cli import app
from dentalkit.fetch.store import read_failures


def _manifest(path, n=12):
    pd.DataFrame(
        {
            "patient_id": [f"W{i:02d}" for i in range(n)],
            "timestamp": "2024-03-05",
            "image_url": [f"https://images.example.org/W{i}/x.png" for i in range(n)],
        }
    ).to_csv(path, index=False)
    return path


def _lines(result) -> list[str]:
    return [line for line in result.output.splitlines() if line.startswith("error:")]


#: Python names a terminal line must not show: a function call, an argument, a repr.
PYTHON_NAMES = re.compile(r"fetch_cohort|\w+\(\)|\b\w+=(True|False|None|'|\")|\bNone\b|<\w+")


def test_wrong_key_is_named_in_one_line_and_stops_the_run(fresh, tmp_path, caplog):
    runner = CliRunner()
    wrong = "not-the-key-" + "x" * 20
    env = {"DENTALKIT_API_KEY": wrong, "DENTALKIT_BASE_URL": fresh.base_url}
    out = tmp_path / "out"
    args = ["fetch", str(_manifest(tmp_path / "m.csv")), "--endpoint", "classifier", "--out", str(out), "--cache", "memory", "--no-progress", "--workers", "1"]  # fmt: skip
    result = runner.invoke(app, args, env=env)
    assert result.exit_code == 3, result.output
    (line,) = _lines(result)
    assert "rejected the API key" in line and "401" in line and "DENTALKIT_API_KEY" in line
    _no_duplicate(result)
    assert fresh.base_url.rsplit("/api/v2", 1)[0] in line
    assert wrong not in result.output  # the key itself is never printed
    # it stopped: far fewer than the 12 requests reached the service (window of 4 in flight)
    assert fresh.stats()["by_status"].get(401, 0) < 12
    assert (read_failures(out)["status_code"] == 401).all()
    logged = _stop_logs(caplog)
    assert any(
        m.startswith("the fetch stopped sending requests: the service rejected the API key")
        for m in logged
    ), logged
    assert not any(PYTHON_NAMES.search(m) for m in logged), logged
    # with errors=raise the same line, the same exit status
    raised = runner.invoke(app, [*args, "--errors", "raise"], env=env)
    assert raised.exit_code == 3 and len(_lines(raised)) == 1, raised.output
    _no_duplicate(raised)
    # both lines end with where the failures are and how to resume, in the terminal's words
    for said in (line, _lines(raised)[0]):
        assert said.endswith(
            f"the failed requests are listed in {out / 'failures.parquet'}; rerun the same "
            "command to resume once the key is fixed (the rejected requests are sent again) "
            "[exit 3]"
        ), said
        assert not PYTHON_NAMES.search(said), said
    assert "failures are listed in" not in result.output  # said once, in the stop line
    # with the right key, the rerun sends everything, the 401s included (not skipped)
    good = {**env, "DENTALKIT_API_KEY": fresh.api_key}
    fixed = runner.invoke(app, args, env=good)
    assert fixed.exit_code == 0, fixed.output
    assert "12 stored now" in fixed.output and "failed earlier" not in fixed.output


def _no_duplicate(result) -> None:
    """The stop is said once on the terminal: the CLI's error line, not also the log's."""
    assert "stopped sending requests" not in result.output, result.output
    assert not re.search(r"^ERROR dentalkit", result.output, re.M), result.output


def test_only_commands_with_their_own_stop_line_absorb_the_stop_record():
    from dentalkit.cli import _not_a_fetch_stop

    stop = logging.LogRecord("dentalkit.fetch", logging.ERROR, "", 0, "stopped", (), None)
    stop.fetch_stop = "auth"
    other = logging.LogRecord("dentalkit.fetch", logging.ERROR, "", 0, "other", (), None)
    assert not _not_a_fetch_stop(stop) and _not_a_fetch_stop(other)


def _stop_logs(caplog) -> list[str]:
    """The dentalkit log lines a CLI user sees (the CLI logs WARNING and above)."""
    return [
        r.getMessage()
        for r in caplog.records
        if r.name.startswith("dentalkit") and r.levelno >= logging.WARNING
    ]


def test_unreachable_service_is_named_in_one_line(tmp_path, caplog):
    with socket.socket() as s:  # a loopback port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    base = f"http://127.0.0.1:{port}/api/v2"
    env = {"DENTALKIT_API_KEY": "k", "DENTALKIT_BASE_URL": base}
    runner = CliRunner()
    args = ["fetch", str(_manifest(tmp_path / "m.csv", n=3)), "--endpoint", "classifier", "--out", str(tmp_path / "out"), "--cache", "memory", "--no-progress", "--workers", "1"]  # fmt: skip
    from dentalkit import settings

    old = settings.max_retries, settings.backoff_base
    settings.max_retries, settings.backoff_base = 0, 0.0
    try:
        result = runner.invoke(app, args, env=env)
    finally:
        settings.max_retries, settings.backoff_base = old
    assert result.exit_code == 4, result.output
    (line,) = _lines(result)
    assert f"cannot reach the service at http://127.0.0.1:{port}" in line
    _no_duplicate(result)
    assert "--base-url" in line
    assert "(POST /classifier for patient 'W00': Connection refused)" in line
    assert not PYTHON_NAMES.search(line), line
    assert line.endswith(
        f"the failed requests are listed in {tmp_path / 'out' / 'failures.parquet'}; rerun "
        "the same command to resume (stored answers are not sent again), adding "
        "--retry-failed to resend the failed requests [exit 4]"
    ), line
    assert (read_failures(tmp_path / "out")["error_type"] == "TransportError").all()
    # the log line says what stopped in the user's words, not a Python function's name
    logged = _stop_logs(caplog)
    assert any(
        m.startswith("the fetch stopped sending requests: the service could not be reached")
        for m in logged
    ), logged
    assert not any(PYTHON_NAMES.search(m) for m in logged), logged


def test_other_failures_are_summarised_by_kind(sb, tmp_path):
    from dentalkit.sandbox import running

    with running(faults={"error_rate": 1.0}) as failing:
        from dentalkit import settings

        old = settings.max_retries, settings.backoff_base
        settings.max_retries, settings.backoff_base = 0, 0.0
        try:
            env = {"DENTALKIT_API_KEY": failing.api_key, "DENTALKIT_BASE_URL": failing.base_url}
            args = ["fetch", str(_manifest(tmp_path / "m.csv", n=3)), "--endpoint", "classifier", "--out", str(tmp_path / "out"), "--cache", "memory", "--no-progress"]  # fmt: skip
            result = CliRunner().invoke(app, args, env=env)
        finally:
            settings.max_retries, settings.backoff_base = old
    assert result.exit_code == 1, result.output
    import re

    kinds = re.findall(r"^(\d+) failed: ServerError \(HTTP 5\d\d\): .+$", result.output, re.M)
    assert kinds and sum(int(k) for k in kinds) == 3, result.output


def test_a_first_failure_under_errors_raise_is_named_with_its_file_and_resume(tmp_path):
    # neither a rejected key nor an unreachable service: the line says which request
    # failed, how, where it is listed and how to go on (issue: the hidden log line used
    # to be the only one naming OUT/failures.parquet)
    from dentalkit import settings
    from dentalkit.sandbox import running

    out = tmp_path / "out"
    with running(faults={"error_rate": 1.0}) as failing:
        old = settings.max_retries, settings.backoff_base
        settings.max_retries, settings.backoff_base = 0, 0.0
        try:
            env = {"DENTALKIT_API_KEY": failing.api_key, "DENTALKIT_BASE_URL": failing.base_url}
            args = ["fetch", str(_manifest(tmp_path / "m.csv", n=3)), "--endpoint", "classifier", "--out", str(out), "--cache", "memory", "--no-progress", "--workers", "1", "--errors", "raise"]  # fmt: skip
            result = CliRunner().invoke(app, args, env=env)
        finally:
            settings.max_retries, settings.backoff_base = old
    assert result.exit_code == 1, result.output
    (line,) = _lines(result)
    failures = read_failures(out)
    # the line names the first failure (the requests already in flight are listed too)
    first = failures.sort_values("failed_at").iloc[0]
    status = int(first["status_code"])
    assert first["error_type"] == "ServerError" and 500 <= status < 600
    assert line.startswith(
        "error: the run stopped at its first failure (--errors raise): "
        f"{first['endpoint']} (POST /classifier) for patient {first['patient_id']!r}: the service answered HTTP {status} ("
    ), line
    assert line.endswith(
        f"the failed requests are listed in {out / 'failures.parquet'}; rerun the same "
        "command to resume (stored answers are not sent again), adding --retry-failed to "
        "resend the failed requests, or pass --errors collect to fetch past failures [exit 1]"
    ), line
    assert not PYTHON_NAMES.search(line) and "settings." not in line, line
    _no_duplicate(result)
