"""The table conversion counts its responses on a bar (issue 23 item 3), where one is watched."""

from __future__ import annotations

import io
import re
import sys

from dentalkit import convert


class Terminal(io.StringIO):
    """Captured stderr that says it is a terminal (tqdm draws only on one)."""

    def isatty(self) -> bool:
        return True


def test_bar_counts_responses_kind_by_kind_on_a_terminal(all_endpoints_frame, monkeypatch):
    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    out = convert.tables(all_endpoints_frame, progress=True)
    assert len(out["problems"]) == 0
    text = err.getvalue()
    # The fixture has one response per endpoint: 2 findings, 4 segmentation, 2 keypoints,
    # 2 landmarks, then classifier, tmj and tle with one each (13), converted in Kind order;
    # each kind is named as its turn starts, with the responses done before it.
    done_before = [
        ("findings", 0),
        ("segmentation", 2),
        ("keypoints", 6),
        ("landmarks", 8),
        ("classifier", 10),
        ("tmj", 11),
        ("tle", 12),
    ]
    for kind, n in done_before:
        assert re.search(rf"tables: .*\b{n}/13 .*\b{kind}\]", text), (kind, text)
    assert "response" in text


def test_no_bar_off_a_terminal_or_when_turned_off(all_endpoints_frame, monkeypatch, capsys):
    convert.tables(all_endpoints_frame, progress=True)  # pytest's capture is no terminal
    assert capsys.readouterr().err == ""
    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    convert.tables(all_endpoints_frame)  # a library call is silent by default
    convert.tables(all_endpoints_frame, progress=False)
    assert err.getvalue() == ""
