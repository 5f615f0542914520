"""The figure set is declared as data and make_figures walks it (issue 24 item 3)."""

from __future__ import annotations

import logging

import pandas as pd

from dentalkit import demo, pipeline
from dentalkit.pipeline import FIGURES, FigureSpec, make_figures


def test_standard_figure_set_names_and_order():
    # The names and order the dozen `if …: draw(...)` blocks drew before the declaration.
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
    ]
    assert [f.name for f in FIGURES if f.width == "double"] == ["tooth_map"]
    assert [f.name for f in demo.DEMO_FIGURES] == [
        "tle_by_class",
        "tle_sensitivity_crowding",
        "tle_bland_altman",
    ]


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
    assert pipeline.make_figures({}, {}, tmp_path, dpi=300) == {}
