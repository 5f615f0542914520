"""Group statistics: proportions with confidence intervals and group comparisons.

statsmodels and pingouin (the ``stats`` extra) are imported lazily inside the
functions, so ``import dentalkit.stats`` stays light.
"""

from __future__ import annotations

from dentalkit.stats._proportions import proportion_ci

__all__ = ["proportion_ci"]
