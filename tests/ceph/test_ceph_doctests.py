"""The docstring examples of the ceph modules touched by issue 29 run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "name", ["dentalkit.ceph.classify", "dentalkit.ceph.norms", "dentalkit.ceph.baseline"]
)
def test_docstring_examples(name):
    result = doctest.testmod(
        importlib.import_module(name), optionflags=doctest.NORMALIZE_WHITESPACE
    )
    assert result.attempted > 0
    assert result.failed == 0
