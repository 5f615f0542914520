"""The docstring examples of the stats modules run and give what they show."""

from __future__ import annotations

import doctest

import pytest

import dentalkit.stats._compare
import dentalkit.stats._describe
import dentalkit.stats._power
import dentalkit.stats._proportions
import dentalkit.stats._units


@pytest.mark.parametrize(
    "module",
    [
        dentalkit.stats._compare,
        dentalkit.stats._describe,
        dentalkit.stats._power,
        dentalkit.stats._proportions,
        dentalkit.stats._units,
    ],
    ids=lambda m: m.__name__,
)
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
