"""The docstring examples of the teeth modules run and give what they show."""

from __future__ import annotations

import doctest

import pytest

import dentalkit.teeth._measure
import dentalkit.teeth._missing
import dentalkit.teeth._symmetry


@pytest.mark.parametrize(
    "module",
    [dentalkit.teeth._measure, dentalkit.teeth._symmetry, dentalkit.teeth._missing],
    ids=lambda m: m.__name__,
)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
