"""The docstring examples of the findings modules run and give what they show."""

from __future__ import annotations

import doctest

import pytest

import dentalkit.findings._images
import dentalkit.findings._prevalence


@pytest.mark.parametrize(
    "module",
    [dentalkit.findings._images, dentalkit.findings._prevalence],
    ids=lambda m: m.__name__,
)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
