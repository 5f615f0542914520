"""The CLI fails loudly, in the user's words (issue 23, item 4).

Wrong or empty folders are errors with the documented exit status (docs/getting-started.md:
0 done, 1 done but something is missing, 2 the command could not run); numeric options and
choices are checked by the CLI framework; messages and help texts carry no Python names.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest
from typer.testing import CliRunner

from dentalkit import io, study
from dentalkit.cli import app

PYTHON_NAMES = re.compile(r"\bNone\b|\.problems\b|endpoints=|Client\(|Traceback|``")


def _run(args: list[str], **kw) -> tuple[int, str]:
    result = CliRunner().invoke(app, args, **kw)
    return result.exit_code, result.output


def _empty_tables(folder) -> None:
    """Every contract table written with its schema and no row (a store with no answers)."""
    from dentalkit import convert

    empty = pd.DataFrame(
        {c: pd.Series(dtype="object") for c in ("endpoint", "patient_id", "timestamp", "body")}
    )
    io.write_tables(convert.tables(empty, errors="collect"), folder)


def test_analyze_on_a_folder_without_tables_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    code, out = _run(["analyze", str(tmp_path / "empty"), "--out", str(tmp_path / "a")])
    assert code == 2
    assert "holds no tables written by dentalkit tables" in out
    assert "dentalkit tables STORE --out" in out  # how to fix it
    assert not (tmp_path / "a").exists()
    code, out = _run(["analyze", str(tmp_path / "missing"), "--out", str(tmp_path / "a")])
    assert code == 2 and "is not a folder" in out
    assert not PYTHON_NAMES.search(out)


def test_analyze_on_tables_without_rows_writes_nothing_and_exits_1(tmp_path):
    _empty_tables(tmp_path / "tables")
    code, out = _run(["analyze", str(tmp_path / "tables"), "--out", str(tmp_path / "a")])
    assert code == 1, out
    assert "no rows to analyse" in out and "wrote 0" not in out
    assert not list((tmp_path / "a").glob("*.parquet")) if (tmp_path / "a").exists() else True


def test_figures_on_empty_folders_is_an_error(tmp_path):
    (tmp_path / "empty").mkdir()
    empty = str(tmp_path / "empty")
    code, out = _run(["figures", empty, empty, "--out", str(tmp_path / "f")])
    assert code == 2 and "holds no tables written by dentalkit tables" in out
    _empty_tables(tmp_path / "tables")
    code, out = _run(["figures", str(tmp_path / "tables"), empty, "--out", str(tmp_path / "f")])
    assert code == 2 and "holds no analysis tables" in out and "dentalkit analyze" in out
    assert "wrote 0" not in out


def test_figures_that_draw_nothing_exit_1(tmp_path):
    _empty_tables(tmp_path / "tables")
    versions = pd.DataFrame(
        {
            "endpoint": ["tle"],
            "model_version": ["(none)"],
            "n_sessions": [1],
            "n_patients": [1],
            "pooled": [False],
        }
    )
    study.write_analyses({"model_versions": versions}, tmp_path / "analyses")
    args = ["figures", str(tmp_path / "tables"), str(tmp_path / "analyses")]
    code, out = _run([*args, "--out", str(tmp_path / "f"), "--no-progress"])
    assert code == 1, out
    assert "no figure could be drawn" in out and "wrote 0" not in out


def test_tables_on_a_store_without_responses_is_an_error(tmp_path, monkeypatch):
    # every manifest row is bad: the store exists but nothing was ever fetched into it
    monkeypatch.setenv("DENTALKIT_API_KEY", "not-sent-anywhere")
    manifest = tmp_path / "m.csv"
    manifest.write_text("patient_id,timestamp,image_url\nP1,,http://x.example/a.png\n")
    base = ["--base-url", "http://127.0.0.1:9/api/v2", "--no-progress", "--cache", "memory"]
    store = tmp_path / "store"
    args = ["fetch", str(manifest), "--out", str(store), "--endpoint", "tle", *base]
    assert _run(args)[0] == 1
    code, out = _run(["tables", str(store), "--out", str(tmp_path / "t")])
    assert code == 2 and "holds no responses yet" in out and "dentalkit fetch" in out
    assert not (tmp_path / "t").exists() and "wrote" not in out


def test_tables_on_a_folder_that_is_not_a_store_is_an_error(tmp_path):
    (tmp_path / "notastore").mkdir()
    (tmp_path / "notastore" / "landmarks.parquet").write_bytes(b"")
    code, out = _run(["tables", str(tmp_path / "notastore"), "--out", str(tmp_path / "t")])
    assert code == 2 and "is not a dentalkit responses store" in out
    assert not PYTHON_NAMES.search(out)


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["fetch", "m.csv", "--out", "o", "--workers", "0"], "--workers"),
        (["fetch", "m.csv", "--out", "o", "--errors", "ignore"], "--errors"),
        (["tables", "s", "--out", "o", "--errors", "warn"], "--errors"),
        (["demo", "--patients", "0"], "--patients"),
        (["demo", "--port", "70000"], "--port"),
        (["sandbox", "--port", "0"], "--port"),
        (["sandbox", "--latency", "-1"], "--latency"),
        (["figures", "t", "a", "--out", "f", "--dpi", "72"], "--dpi"),
        (["analyze", "t", "--out", "a", "--patients", "no-such-file.csv"], "--patients"),
        (["contract", "s", "--out", "o", "--tmj-phrases", "no-such-file.csv"], "--tmj-phrases"),
        (["export", "no-such-folder", "--out", "o"], "folders"),
    ],
)
def test_bad_option_values_are_refused_by_the_cli_framework(args, option, tmp_path):
    code, out = _run(args)
    assert code == 2, out
    assert f"Invalid value for '{option}'" in out


def _one_line(out: str) -> str:
    """The framework's error box as one line of text (frame and wrapping removed)."""
    return " ".join(re.sub("[│╭╮╰╯─]", " ", out).split())


@pytest.mark.parametrize(
    ("args", "option", "wrong"),
    [
        (["demo", "--drift", "typo"], "--drift", "typo"),
        (["sandbox", "--drift", "all", "--drift", "typo"], "--drift", "typo"),
        (["sandbox", "--host", "0.0.0.0"], "--host", "0.0.0.0"),
        (["fetch", "m.csv", "--out", "o", "--endpoint", "ceph"], "--endpoint", "ceph"),
    ],
)
def test_choices_come_from_the_declarations(args, option, wrong):
    from dentalkit.endpoints import ENDPOINTS
    from dentalkit.sandbox.drift import SCENARIOS

    code, out = _run(args, terminal_width=200)
    assert code == 2, out
    text = _one_line(out)
    assert f"Invalid value for '{option}'" in text
    declared = {
        "--drift": [*SCENARIOS, "all"],
        "--host": ["127.0.0.1", "localhost", "::1"],
        "--endpoint": list(ENDPOINTS),
    }[option]
    choices = ", ".join(f"'{c}'" for c in declared)
    assert f"'{wrong}' is not one of {choices}." in text  # every declared choice, in order


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0.1", "'0.1' is not of the form ENDPOINT=MM_PER_PX; write, for example, "
         "ceph_lateral_points=0.1."),
        ("ceph=0.1", "'ceph' is not an endpoint name; the endpoints are clinical_images,"),
        ("ceph_lateral_points=0", "'0' for ceph_lateral_points is not a positive number"),
        ("ceph_lateral_points=-0.1", "'-0.1' for ceph_lateral_points is not a positive number"),
        ("ceph_lateral_points=nan", "'nan' for ceph_lateral_points is not a positive number"),
        ("ceph_lateral_points=inf", "'inf' for ceph_lateral_points is not a positive number"),
        ("ceph_lateral_points=", "'' for ceph_lateral_points is not a positive number"),
        ("ceph_lateral_points=0,1", "'0,1' for ceph_lateral_points is not a positive number"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("command", ["analyze", "figures"])
def test_bad_calibrations_are_refused_by_the_framework_with_a_sentence(command, value, message):
    folders = ["t"] if command == "analyze" else ["t", "a"]
    code, out = _run([command, *folders, "--out", "o", "--mm-per-px", value], terminal_width=200)
    assert code == 2, out
    assert f"Invalid value for '--mm-per-px': {message}" in _one_line(out)
    assert not PYTHON_NAMES.search(out)


def test_one_endpoint_calibrated_twice_is_refused_unless_the_values_agree(tmp_path, monkeypatch):
    _empty_tables(tmp_path / "tables")
    seen = []

    def analyze(tables, cal, **kw):
        seen.append(cal)
        return {}

    monkeypatch.setattr(study, "analyze", analyze)
    args = ["analyze", str(tmp_path / "tables"), "--out", str(tmp_path / "a")]
    twice = ["--mm-per-px", "ceph_lateral_points=0.1", "--mm-per-px", "ceph_lateral_points=0.2"]
    code, out = _run([*args, *twice], terminal_width=200)
    assert code == 2 and "ceph_lateral_points is given twice, as 0.1 and 0.2" in _one_line(out)
    assert seen == []
    ok = ["--mm-per-px", "ceph_lateral_points=0.1", "--mm-per-px=pano_segmentation=0.25"]
    code, out = _run([*args, *ok, "--mm-per-px", "ceph_lateral_points=0.1"])
    assert code == 1, out  # parsed; the (patched) analysis found nothing to write
    assert seen == [{"ceph_lateral_points": 0.1, "pano_segmentation": 0.25}]


def test_drift_all_reaches_the_sandbox_as_every_scenario(monkeypatch):
    import dentalkit.sandbox
    from dentalkit.sandbox.drift import SCENARIOS

    served = {}
    monkeypatch.setattr(dentalkit.sandbox, "serve", lambda **kw: served.update(kw))
    code, out = _run(["sandbox", "--drift", "new_labels", "--drift", "other_version"])
    assert code == 0, out
    assert served["drift"] == ("new_labels", "other_version") and served["host"] == "127.0.0.1"
    code, out = _run(["sandbox", "--drift", "all", "--host", "localhost"])
    assert code == 0, out
    assert served["drift"] == tuple(SCENARIOS) and served["host"] == "localhost"


def test_fetch_without_a_service_url_names_the_option_and_the_variable(tmp_path, monkeypatch):
    from dentalkit import settings

    monkeypatch.delenv(settings.base_url_env, raising=False)
    monkeypatch.setattr(settings, "base_url", None)
    manifest = tmp_path / "m.csv"
    manifest.write_text("patient_id,timestamp,image_url\nP1,2024-01-01,http://x.example/a\n")
    for command in (["fetch", "--endpoint", "tle"], ["first-contact"]):
        code, out = _run([command[0], str(manifest), "--out", str(tmp_path / "s"), *command[1:]])
        assert code == 2, out
        assert "no service URL: pass --base-url URL" in out and settings.base_url_env in out
        assert not PYTHON_NAMES.search(out) and "settings." not in out
    assert not (tmp_path / "s").exists()


def test_manifest_errors_name_rows_and_fields_without_python_names(tmp_path, monkeypatch):
    monkeypatch.setenv("DENTALKIT_API_KEY", "not-sent-anywhere")
    base = ["--base-url", "http://127.0.0.1:9/api/v2", "--no-progress", "--cache", "memory"]
    manifest = tmp_path / "m.csv"
    manifest.write_text(
        "patient_id,timestamp,image_url\nP1,,http://x.example/a.png\nP2,2024-01-01,\n"
    )
    # no endpoint column and no --endpoint: the manifest as a whole
    code, out = _run(["fetch", str(manifest), "--out", str(tmp_path / "s1"), *base])
    assert code == 2
    assert "the manifest as a whole: endpoint: no endpoint column" in out
    assert "--endpoint" in out and not PYTHON_NAMES.search(out)
    # bad rows with --errors raise: row and field, no "None"
    args = [*base, "--endpoint", "ceph_lateral_points", "--errors", "raise"]
    code, out = _run(["fetch", str(manifest), "--out", str(tmp_path / "s2"), *args])
    assert code == 2
    # manifest rows count data rows from 1, and the CSV line is said (docs/conventions.md)
    assert "manifest row 1 (CSV line 2): timestamp: missing field" in out
    assert "manifest row 2 (CSV line 3): image_url: missing field" in out
    assert "Or pass --errors collect" in out and "errors='collect'" not in out
    assert not PYTHON_NAMES.search(out)
    # collected: the summary names the skipped rows, the CSV lists them
    args = [*base, "--endpoint", "ceph_lateral_points"]
    code, out = _run(["fetch", str(manifest), "--out", str(tmp_path / "s3"), *args])
    assert code == 1
    assert "2 bad manifest row(s) skipped" in out and "manifest-problems.csv" in out
    assert "CSV line = row + 1" in out
    assert not PYTHON_NAMES.search(out)
    assert not (tmp_path / "s3" / "failures.parquet").exists()  # only when something failed


def test_no_key_message_names_the_environment_variable_not_python(tmp_path, monkeypatch):
    monkeypatch.delenv("DENTALKIT_API_KEY", raising=False)
    manifest = tmp_path / "m.csv"
    manifest.write_text("patient_id,timestamp,image_url\nP1,2024-01-01,http://x.example/a\n")
    args = ["fetch", str(manifest), "--out", str(tmp_path / "s"), "--endpoint", "tle"]
    code, out = _run([*args, "--base-url", "http://127.0.0.1:9/api/v2"])
    assert code == 2 and "DENTALKIT_API_KEY" in out
    assert not PYTHON_NAMES.search(out)


def test_help_texts_read_as_sentences():
    names = [info.name or info.callback.__name__ for info in app.registered_commands]
    assert len(names) >= 10
    for info in app.registered_commands:
        # each paragraph one flowing text: the terminal wraps it, not the source's line breaks
        assert all("\n" not in p for p in info.help.split("\n\n")), info.name
    for name in names:
        code, out = _run([name.replace("_", "-"), "--help"], terminal_width=100)
        assert code == 0, (name, out)
        assert "``" not in out, name
        assert "…│" not in out, name  # no option help cut off by the layout
        assert "<list[str]>" not in out, name  # repeatable options name what they take


@pytest.mark.parametrize(
    ("url", "words"),
    [
        ("ftp://svc.example.org/api/v2", "is not an http(s) URL with a host"),
        ("svc.example.org/api/v2", "is not an http(s) URL with a host"),
        ("http://svc.example.org/api/v2", "refusing plain http://"),
        ("http://evil.localhost/api/v2", "refusing plain http://"),
    ],
)
def test_openapi_refuses_a_server_url_the_client_would_refuse(url, words, tmp_path):
    # the servers entry is where a generated client sends the key: the client's rule
    code, out = _run(["openapi", "--base-url", url, "--out", str(tmp_path / "o.json")])
    assert code == 2, out
    flat = " ".join(out.replace("│", " ").split())
    assert "Invalid value for '--base-url'" in flat and words in flat, flat
    assert not (tmp_path / "o.json").exists()


@pytest.mark.parametrize(
    "url",
    ["https://svc.example.org/api/v2", "http://127.0.0.1:8765/api/v2", "http://[::1]:1/api/v2"],
)
def test_openapi_takes_https_or_loopback_http_as_the_server(url, tmp_path):
    import json

    code, out = _run(["openapi", "--base-url", url, "--out", str(tmp_path / "o.json")])
    assert code == 0, out
    assert json.loads((tmp_path / "o.json").read_text())["servers"] == [{"url": url}]


def test_tables_with_errors_raise_names_the_response_without_python_names(tmp_path, monkeypatch):
    # a malformed response under --errors raise: the terminal gets the option, not errors=
    import dentalkit.convert
    import dentalkit.fetch.store
    from dentalkit.errors import ResponseFormatError

    responses = pd.DataFrame({"endpoint": ["classifier"], "patient_id": ["P1"]})
    monkeypatch.setattr(dentalkit.fetch.store, "read_responses", lambda store: responses)

    def malformed(*args, **kwargs):
        raise ResponseFormatError(
            "expected a number, got 'abc'",
            endpoint="classifier",
            patient_id="P1",
            timestamp="2024-03-05",
            path="$.Results.Class_II",
            row=0,
        )

    monkeypatch.setattr(dentalkit.convert, "tables", malformed)
    args = ["tables", str(tmp_path), "--out", str(tmp_path / "t"), "--errors", "raise"]
    code, out = _run([*args, "--no-progress"])
    assert code == 2, out
    assert (
        "malformed response (classifier, patient P1, session 2024-03-05; responses row 0, "
        "0-based position in the store) at $.Results.Class_II: expected a number" in out
    ), out
    assert "--errors collect" in out and "errors=" not in out and "errors='" not in out
    assert not PYTHON_NAMES.search(out) and "row=" not in out


def test_warnings_reach_the_terminal_as_one_line_without_python_source(tmp_path, monkeypatch):
    # Python's form names the file, line and source line (cli.py:288 … fetch_cohort()
    import warnings

    monkeypatch.setenv("DENTALKIT_API_KEY", "not-sent-anywhere")
    manifest = tmp_path / "m.csv"
    manifest.write_text("patient_id,timestamp,image_url,colour\nP1,,http://x.example/a\n")
    args = ["fetch", str(manifest), "--out", str(tmp_path / "s"), "--endpoint", "classifier"]
    args += ["--base-url", "http://127.0.0.1:9/api/v2", "--errors", "raise", "--cache", "memory"]
    with warnings.catch_warnings():
        warnings.simplefilter("default")  # shown, as outside pytest
        code, out = _run(args)
    assert code == 2, out
    assert (
        "warning: manifest columns ignored (not a key, endpoint, option or calibration column): "
        "colour; "
        "the option columns are DrawContours, PlotLabels" in out
    ), out
    assert "DentalkitWarning" not in out and "fetch_cohort" not in out and ".py:" not in out
    assert "['" not in out  # no list repr
    assert not PYTHON_NAMES.search(out)


def test_skipped_failures_are_named_with_the_cli_option(tmp_path, monkeypatch):
    # fetch_cohort's log line advises retry_failed=True; on the terminal it is the option
    from dentalkit import settings

    monkeypatch.setattr(settings, "max_retries", 0)  # one refused attempt, no backoff
    monkeypatch.setenv("DENTALKIT_API_KEY", "not-sent-anywhere")
    manifest = tmp_path / "m.csv"
    manifest.write_text("patient_id,timestamp,image_url\nP1,2024-01-02,http://x.example/a\n")
    args = ["fetch", str(manifest), "--out", str(tmp_path / "s"), "--endpoint", "classifier"]
    args += ["--base-url", "http://127.0.0.1:9/api/v2", "--no-progress", "--cache", "memory"]
    code, out = _run(args)
    assert code == 4, out
    code, out = _run(args)  # the same process: the first command's stream is not reused
    assert code == 1, out
    assert (
        "dentalkit: 1 request(s) failed in an earlier run and are skipped; rerun with "
        "--retry-failed to retry them" in out
    ), out
    assert "retry_failed" not in out and "Logging error" not in out
    assert not PYTHON_NAMES.search(out)


def test_the_cli_words_replace_phrases_the_fetch_code_still_writes():
    # a reworded log message would otherwise reach the terminal in Python's words again
    from pathlib import Path

    from dentalkit import cli

    source = "".join(
        p.read_text() for p in Path(cli.__file__).parent.joinpath("fetch").glob("*.py")
    )
    for phrase in cli.CLI_WORDS:
        assert phrase in source, phrase


def test_an_unverified_certificate_says_how_to_name_the_ca_on_the_command_line(
    tmp_path, monkeypatch
):
    trustme = pytest.importorskip("trustme")
    from dentalkit.sandbox import running

    cert = trustme.CA().issue_cert("127.0.0.1")
    chain, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    cert.private_key_and_cert_chain_pem.write_to_path(chain)
    cert.private_key_pem.write_to_path(key)
    monkeypatch.delenv("REQUESTS_CA_BUNDLE", raising=False)
    monkeypatch.delenv("CURL_CA_BUNDLE", raising=False)
    manifest = tmp_path / "m.csv"
    manifest.write_text("patient_id,timestamp,image_url\nP1,2024-01-02,https://x.example/a\n")
    with running(tls=(str(chain), str(key))) as sb:
        monkeypatch.setenv("DENTALKIT_API_KEY", sb.api_key)
        for mode in ("collect", "raise"):
            args = ["fetch", str(manifest), "--out", str(tmp_path / mode), "--errors", mode]
            args += ["--endpoint", "classifier", "--base-url", sb.base_url, "--cache", "memory"]
            code, out = _run([*args, "--no-progress"])
            assert code == 4, out
            assert (
                "the server's TLS certificate could not be verified (unable to get local "
                "issuer certificate)" in out
            ), out
            assert "set REQUESTS_CA_BUNDLE to that CA's bundle file (PEM)" in out
            assert "the network and the proxy" not in out  # not the unreachable advice
            failures = tmp_path / mode / "failures.parquet"
            assert f"the failed requests are listed in {failures}; rerun the same" in out, out
            assert "adding --retry-failed to resend the failed requests [exit 4]" in out, out
            assert "HTTPSConnectionPool" not in out and not PYTHON_NAMES.search(out)
