"""The docstring examples of the plot modules run and give what they show."""

from __future__ import annotations

import doctest
import importlib

import pytest

MODULES = [
    "dentalkit.plot",
    "dentalkit.plot.style",
    "dentalkit.plot._layout",
    "dentalkit.plot.ceph",
    "dentalkit.plot._ceph_superimposition",
    "dentalkit.plot.house",
    "dentalkit.plot.captions",
]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples that save write here
    module = importlib.import_module(name)
    if name == "dentalkit.plot.style":  # the package attribute is the context manager
        import sys

        module = sys.modules[name]
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0
