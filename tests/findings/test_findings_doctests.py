"""The docstring examples of dentalkit.findings run and give what they show."""

from __future__ import annotations

import doctest

import dentalkit.findings


def test_docstring_examples():
    result = doctest.testmod(dentalkit.findings, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
