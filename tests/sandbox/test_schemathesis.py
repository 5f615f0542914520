"""Property-based conformance: schemathesis drives the generated OpenAPI document.

No request may produce a server error, and every response — success or error — must
conform to the document (status codes, content types, body schemas, the error shape).
The sandbox variant of the document narrows what the spec leaves open (URL, /tle codes),
so generated valid requests must succeed (positive data acceptance) and generated
invalid ones must be rejected with a documented 4xx (negative data rejection).
"""

from __future__ import annotations

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from openapi_spec_validator import validate
from schemathesis.generation.modes import GenerationMode

from dentalkit.openapi import openapi_document

SCHEMA = schemathesis.openapi.from_dict(openapi_document("http://127.0.0.1/api/v2", sandbox=True))
OPERATIONS = [result.ok() for result in SCHEMA.get_all_operations()]


def test_generated_documents_are_valid_openapi_3_1(sandbox):
    validate(openapi_document(sandbox.base_url, sandbox=True))
    doc = openapi_document(sandbox.base_url)
    validate(doc)
    assert doc["openapi"].startswith("3.1")
    assert len(OPERATIONS) == 13


@pytest.mark.parametrize("mode", [GenerationMode.POSITIVE, GenerationMode.NEGATIVE])
@pytest.mark.parametrize("operation", OPERATIONS, ids=lambda op: op.label)
def test_no_server_errors_and_responses_conform(operation, mode, sandbox):
    strategy = operation.as_strategy(generation_mode=mode)

    @given(case=strategy)
    @settings(
        max_examples=12,
        deadline=None,
        suppress_health_check=list(HealthCheck),
        derandomize=True,
        database=None,
    )
    def check(case):
        case.call_and_validate(base_url=sandbox.base_url, headers={"x-api-key": sandbox.api_key})

    check()
