"""The examples in the converters' and io's docstrings run and say what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "dentalkit.convert",
    "dentalkit.convert._tables",
    "dentalkit.convert._tmj",
    "dentalkit.convert._toothkeys",
    "dentalkit.convert.schemas",
    "dentalkit.io",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
