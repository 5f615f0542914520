"""Teeth: per-tooth measures, left/right symmetry and missing-teeth prevalence.

Pure functions over the ``teeth`` table (docs/data-contract.md), vectorized
over the whole cohort with shapely 2 array functions. See
docs/teeth-and-findings.md for the methods, choices and references.
"""

from __future__ import annotations

from dentalkit.teeth._measure import MEASURES, ToothMeasure, measure
from dentalkit.teeth._missing import COVERAGE, PATTERNS, MissingTeeth, ToothSet, missing
from dentalkit.teeth._symmetry import Symmetry, symmetry
from dentalkit.teeth._widths import SOURCE_VIEW, TOOTH_DIGIT

__all__ = [
    "COVERAGE",
    "MEASURES",
    "PATTERNS",
    "SOURCE_VIEW",
    "TOOTH_DIGIT",
    "MissingTeeth",
    "Symmetry",
    "ToothMeasure",
    "ToothSet",
    "measure",
    "missing",
    "symmetry",
]
