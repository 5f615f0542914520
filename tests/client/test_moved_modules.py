"""The fetch modules moved to dentalkit.fetch (issue 24); the old paths work for one release."""

from __future__ import annotations

import importlib
import sys

import pytest

import dentalkit as dk
from dentalkit.fetch import client, cohort, store


@pytest.mark.parametrize(
    ("old", "new", "name"),
    [
        ("dentalkit.client", client, "Client"),
        ("dentalkit.cohort", cohort, "fetch_cohort"),
        ("dentalkit.store", store, "read_responses"),
    ],
)
def test_old_path_warns_and_is_the_moved_module(monkeypatch, old, new, name):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.warns(DeprecationWarning, match=rf"{old} moved to dentalkit\.fetch\."):
        module = importlib.import_module(old)
    # the very module object: functions, private helpers and patches are shared
    assert module is new
    assert getattr(module, name) is getattr(new, name)


def test_public_names_unchanged():
    assert dk.Client is client.Client
    assert dk.fetch_cohort is cohort.fetch_cohort
    assert dk.read_responses is store.read_responses
    assert dk.read_failures is store.read_failures
    assert dk.download_output_image is client.download_output_image
    assert dk.ApiResult is client.ApiResult
    assert dk.FetchReport is cohort.FetchReport
    assert client.OUTPUT_LINK_TTL.total_seconds() == 72 * 3600  # spec, "Limits"
