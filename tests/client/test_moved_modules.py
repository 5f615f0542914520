"""The fetch modules moved to dentalkit.fetch (issue 24); the old paths are gone (issue 32:
no release shipped them, so they were removed instead of deprecated)."""

from __future__ import annotations

import importlib
import sys

import pytest

import dentalkit as dk
from dentalkit.fetch import client, cohort, store


@pytest.mark.parametrize(
    "old", ["dentalkit.client", "dentalkit.cohort", "dentalkit.store", "dentalkit.pipeline"]
)
def test_old_path_is_gone(monkeypatch, old):
    monkeypatch.delitem(sys.modules, old, raising=False)
    with pytest.raises(ModuleNotFoundError, match=old.replace(".", r"\.")):
        importlib.import_module(old)


def test_public_names_unchanged():
    assert dk.Client is client.Client
    assert dk.fetch_cohort is cohort.fetch_cohort
    assert dk.read_responses is store.read_responses
    assert dk.read_failures is store.read_failures
    assert dk.download_output_image is client.download_output_image
    assert dk.ApiResult is client.ApiResult
    assert dk.FetchReport is cohort.FetchReport
    assert client.OUTPUT_LINK_TTL.total_seconds() == 72 * 3600  # spec, "Limits"
