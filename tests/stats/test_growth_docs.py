"""docs/statistics.md, "Growth and change models": the sleepstudy example runs and prints
what the page shows (the numbers themselves are checked against lme4 in test_growth.py)."""

from __future__ import annotations

import contextlib
import io
import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "statistics.md"


def _section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("## Growth and change models")
    end = text.find("\n## ", start + 1)
    return text[start : end if end > 0 else None]


def test_sleepstudy_block_prints_what_the_page_shows(monkeypatch):
    section = _section()
    blocks = re.findall(r"```(\w*)\n(.*?)```", section, flags=re.S)
    i = next(k for k, (lang, code) in enumerate(blocks) if "sleepstudy.csv" in code)
    lang, code = blocks[i]
    shown_lang, shown = blocks[i + 1]
    assert (lang, shown_lang) == ("python", "text")
    monkeypatch.chdir(ROOT)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, str(PAGE), "exec"), {})
    assert out.getvalue() == shown
    assert os.path.exists(ROOT / "tests" / "data" / "README.md")
