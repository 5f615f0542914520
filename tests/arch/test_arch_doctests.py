"""The examples in the dentalkit.arch docstrings run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest


@pytest.mark.parametrize(
    "module",
    [
        "dentalkit.arch._fit",
        "dentalkit.arch._curve",
        "dentalkit.arch._frame",
        "dentalkit.arch._measures",
    ],
)
def test_docstring_examples(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0
    assert result.failed == 0
