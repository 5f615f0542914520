"""Group statistics: proportions with confidence intervals, group comparisons, growth models
and the power of a planned growth study.

Between-group comparisons take one row per unit of analysis (the patient):
:func:`compare` refuses repeated rows of a unit unless told how to aggregate them,
and :func:`one_row_per_unit` picks one session (or an aggregate) per patient first.

statsmodels and pingouin (the ``stats`` extra) are imported lazily inside the
functions, so ``import dentalkit.stats`` stays light.
"""

from __future__ import annotations

from dentalkit.stats._compare import COLUMNS, TESTS, compare
from dentalkit.stats._describe import describe
from dentalkit.stats._growth import GrowthResult, growth
from dentalkit.stats._power import simulate_power
from dentalkit.stats._proportions import proportion_ci
from dentalkit.stats._units import one_row_per_unit

__all__ = [
    "COLUMNS",
    "TESTS",
    "GrowthResult",
    "compare",
    "describe",
    "growth",
    "one_row_per_unit",
    "proportion_ci",
    "simulate_power",
]
