"""The CLI's OpenAPI document is usable as it is (issue 20, item 8): valid OpenAPI 3.1,
``servers`` with a ``base_url`` variable (or the given URL), and request constraints equal
to what the sandbox enforces, so schemathesis's positive-data check passes against the
sandbox with the document exactly as ``dentalkit openapi`` writes it."""

from __future__ import annotations

import json

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from openapi_spec_validator import validate
from schemathesis.generation.modes import GenerationMode
from schemathesis.specs.openapi.checks import (
    positive_data_acceptance,
    response_schema_conformance,
)
from typer.testing import CliRunner

from dentalkit.cli import app
from dentalkit.openapi import DEFAULT_SERVER


def _cli_doc(tmp_path, *args: str) -> dict:
    path = tmp_path / "openapi.json"
    result = CliRunner().invoke(app, ["openapi", "--out", str(path), *args])
    assert result.exit_code == 0, result.output
    return json.loads(path.read_text())


def test_servers_hold_a_variable_or_the_given_url(tmp_path):
    doc = _cli_doc(tmp_path)
    validate(doc)
    (server,) = doc["servers"]
    assert server["url"] == "{base_url}"
    assert server["variables"]["base_url"]["default"] == DEFAULT_SERVER
    given_url = _cli_doc(tmp_path, "--base-url", "https://api.example.org/api/v2")
    assert given_url["servers"] == [{"url": "https://api.example.org/api/v2"}]
    validate(_cli_doc(tmp_path, "--spec-only"))


def test_constraints_match_what_the_sandbox_enforces(tmp_path):
    doc = _cli_doc(tmp_path)
    body = doc["paths"]["/classifier"]["post"]["requestBody"]["content"]["application/json"]
    props = body["schema"]["properties"]
    assert props["PatientID"]["minLength"] == 1 and props["TimeStamp"]["minLength"] == 1
    assert props["ImageName"]["pattern"].startswith("^https?://")
    params = {p["name"]: p["schema"] for p in doc["paths"]["/tle"]["get"]["parameters"]}
    assert params["p01"]["enum"][0] == "6" and params["p01"]["enum"][-1] == "80"
    assert params["p02"]["enum"] == ["F", "M"]
    open_doc = _cli_doc(tmp_path, "--spec-only")
    open_props = open_doc["paths"]["/classifier"]["post"]["requestBody"]["content"][
        "application/json"
    ]["schema"]["properties"]
    assert "minLength" not in open_props["PatientID"]


@pytest.fixture(scope="module")
def cli_schema(tmp_path_factory):
    return schemathesis.openapi.from_dict(_cli_doc(tmp_path_factory.mktemp("doc")))


def test_positive_data_is_accepted_by_the_sandbox(cli_schema, sandbox):
    operations = [r.ok() for r in cli_schema.get_all_operations()]
    assert len(operations) == 13
    for operation in operations:

        @given(case=operation.as_strategy(generation_mode=GenerationMode.POSITIVE))
        @settings(
            max_examples=3,
            deadline=None,
            suppress_health_check=list(HealthCheck),
            derandomize=True,
            database=None,
        )
        def check(case):
            case.call_and_validate(
                base_url=sandbox.base_url,
                headers={"x-api-key": sandbox.api_key},
                checks=[positive_data_acceptance, response_schema_conformance],
            )

        check()
