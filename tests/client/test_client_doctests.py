"""The docstring examples of the client, cohort and store modules run and are right."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "dentalkit.fetch._http",
        "dentalkit.fetch.store",
        "dentalkit.fetch.client",
        "dentalkit.fetch.cohort",
        "dentalkit.fetch._schedule",
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
