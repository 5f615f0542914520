"""The study: manifest → fetch → tables → analyses → figures → ``report.md``.

The top floors of the data flow, as data: the analyses (:data:`ANALYSES`, one
:class:`AnalysisSpec` each), the figures (:data:`FIGURES`, one :class:`FigureSpec` each),
the one calibration policy (:class:`Calibration`: an image's own scale, else its
endpoint's, else pixels), the design (:class:`Design`, from a TOML study file with
:func:`read_design`) and the report (:mod:`dentalkit.study.report`). :func:`run` runs a
whole study (``dentalkit study``); ``dentalkit demo`` is the same run on the sandbox's
synthetic cohort (:mod:`dentalkit.study.demo`). See docs/study.md.

Examples
--------
>>> import dentalkit as dk
>>> dk.study.Design(groups="treatment").confidence
0.95
"""

from __future__ import annotations

from dentalkit.study._tle import tle_inputs
from dentalkit.study.analyses import (
    ANALYSES,
    ANALYSIS_PROBLEM_PRODUCERS,
    ANALYZE_HINT,
    CEPH_COMPARED,
    NOT_RUN,
    AnalysisInputs,
    AnalysisSpec,
    analyze,
    left_out,
    model_versions,
    problems_summary,
    read_analyses,
    write_analyses,
)
from dentalkit.study.calibration import CALIBRATION_LEVELS, Calibration, calibration_policy
from dentalkit.study.design import Design, read_design
from dentalkit.study.figures import FIGURES, FigureInputs, FigureSpec, make_figures
from dentalkit.study.groups import GROWTH_ARCH, GROWTH_CEPH, growth_by_group
from dentalkit.study.planning import SMALL_GROUP, plan, power_lines, read_pilot
from dentalkit.study.report import write_report
from dentalkit.study.run import StudyResult, read_patients, run, sandbox_service

__all__ = [
    "ANALYSES",
    "ANALYSIS_PROBLEM_PRODUCERS",
    "ANALYZE_HINT",
    "CALIBRATION_LEVELS",
    "CEPH_COMPARED",
    "FIGURES",
    "GROWTH_ARCH",
    "GROWTH_CEPH",
    "NOT_RUN",
    "SMALL_GROUP",
    "AnalysisInputs",
    "AnalysisSpec",
    "Calibration",
    "Design",
    "FigureInputs",
    "FigureSpec",
    "StudyResult",
    "analyze",
    "calibration_policy",
    "growth_by_group",
    "left_out",
    "make_figures",
    "model_versions",
    "plan",
    "power_lines",
    "problems_summary",
    "read_analyses",
    "read_design",
    "read_patients",
    "read_pilot",
    "run",
    "sandbox_service",
    "tle_inputs",
    "write_analyses",
    "write_report",
]
