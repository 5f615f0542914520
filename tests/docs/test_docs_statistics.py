"""docs/statistics.md: its examples run as written and their asserts hold."""

from __future__ import annotations

import re
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "statistics.md"
_TEXT = PAGE.read_text(encoding="utf-8")
# the growth section's examples are run by tests/stats/test_growth_docs.py (from the repo root)
_GROWTH = _TEXT.index("## Growth and change models")
_TEXT = _TEXT[:_GROWTH] + _TEXT[_TEXT.find("\n## ", _GROWTH + 1) :]
BLOCKS = re.findall(r"```python\n(.*?)```", _TEXT, flags=re.S)


def test_the_page_has_examples():
    assert len(BLOCKS) >= 4


@pytest.mark.parametrize("code", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_statistics_page_example_runs(code, capsys):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # include_unverified=True warns, as documented
        exec(compile(code, str(PAGE), "exec"), {})
    out = capsys.readouterr().out
    for expected in re.findall(r"# (?:no z: .*|mean per .*)$", code, flags=re.M):
        assert expected.removeprefix("# ") in out
