"""The figure set is declared as data and make_figures walks it (issue 24 item 3)."""

from __future__ import annotations

import logging

import pandas as pd

from dentalkit import study
from dentalkit.study import FIGURES, FigureSpec, make_figures


def test_standard_figure_set_names_and_order():
    # The names and order the dozen `if …: draw(...)` blocks drew before the declaration,
    # then the treatment-length figures (the demo's before issue 32; now every study's) and
    # the QC outliers (issue 28)
    assert [f.name for f in FIGURES] == [
        "ceph_tracing",
        "ceph_superimposition",
        "ceph_wiggle",
        "arch_forms",
        "mean_arch_forms",
        "tooth_map",
        "odontogram_missing",
        "finding_boxes",
        "growth_by_class",
        "findings_prevalence",
        "tle_by_class",
        "tle_sensitivity_crowding",
        "tle_bland_altman",
        "qc_outliers",
    ]
    assert [f.name for f in FIGURES if f.width == "double"] == ["tooth_map"]


def test_make_figures_walks_the_declaration(tmp_path, caplog):
    seen: list[str] = []

    def line(name):
        def plan(inputs):
            seen.append(name)
            return lambda ax: ax.plot(inputs.analyses["a"]["x"])

        return plan

    def nothing(inputs):
        seen.append("empty")
        return None

    def broken(inputs):
        def draw(ax):
            raise ValueError("no such column")

        return draw

    figures = (
        FigureSpec("second", line("second"), analyses=("a",)),
        FigureSpec("needs_b", line("needs_b"), analyses=("b",)),  # b missing: skipped
        FigureSpec("needs_table", line("needs_table"), tables=("t",)),  # t missing
        FigureSpec("empty", nothing, analyses=("a",)),  # nothing to show
        FigureSpec("broken", broken, analyses=("a",)),  # logged, others still drawn
        FigureSpec("first", line("first"), analyses=("a",), width="double"),
    )
    analyses = {"a": pd.DataFrame({"x": [1.0, 2.0, 3.0]})}
    with caplog.at_level(logging.WARNING, logger="dentalkit"):
        written = make_figures({}, analyses, tmp_path, dpi=300, figures=figures)
    assert seen == ["second", "empty", "first"]  # plans of skipped figures never run
    assert list(written) == ["second", "first"]  # declaration order, not name order
    assert sorted(p.name for p in written["first"]) == ["first.pdf", "first.png"]
    assert all(p.exists() for paths in written.values() for p in paths)
    assert "figure broken was not drawn: no such column" in caplog.text


def test_standard_set_skips_figures_without_inputs(tmp_path):
    # No tables and no analyses: every declared figure lacks a required input.
    assert study.make_figures({}, {}, tmp_path, dpi=300) == {}


def test_figures_bar_counts_out_of_the_planned_figures(tmp_path, monkeypatch):
    import io
    import re
    import sys

    class Terminal(io.StringIO):
        def isatty(self) -> bool:  # tqdm draws only on a terminal
            return True

    def line(inputs):
        return lambda ax: ax.plot(inputs.analyses["a"]["x"])

    figures = (
        FigureSpec("one", line, analyses=("a",)),
        FigureSpec("skipped", line, analyses=("b",)),  # input missing: not planned
        FigureSpec("empty", lambda inputs: None, analyses=("a",)),  # nothing to show
        FigureSpec("two", line, analyses=("a",)),
    )
    analyses = {"a": pd.DataFrame({"x": [1.0, 2.0]})}
    err = Terminal()
    monkeypatch.setattr(sys, "stderr", err)
    extra = {"three": lambda ax: ax.plot([0, 1])}
    written = make_figures(
        {}, analyses, tmp_path, dpi=300, figures=figures, progress=True, extra=extra
    )
    assert list(written) == ["one", "two", "three"]
    text = err.getvalue()
    # the total is known from the start: two declared figures planned plus one extra
    for done, name in ((0, "one"), (1, "two"), (2, "three")):
        assert re.search(rf"figures: .*\b{done}/3 .*\b{name}\]", text), (name, text)
    assert "skipped" not in text and "empty" not in text
    err.truncate(0)
    make_figures({}, analyses, tmp_path, dpi=300, figures=figures, progress=False)
    assert err.getvalue() == ""
