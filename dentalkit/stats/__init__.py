"""Group statistics: proportions with confidence intervals, group comparisons and growth models.

statsmodels and pingouin (the ``stats`` extra) are imported lazily inside the
functions, so ``import dentalkit.stats`` stays light.
"""

from __future__ import annotations

from dentalkit.stats._compare import COLUMNS, TESTS, compare
from dentalkit.stats._describe import describe
from dentalkit.stats._growth import GrowthResult, growth
from dentalkit.stats._proportions import proportion_ci

__all__ = ["COLUMNS", "TESTS", "GrowthResult", "compare", "describe", "growth", "proportion_ci"]
