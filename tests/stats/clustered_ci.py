"""The clustered proportion interval computed by hand, for tests (independent of dentalkit)."""

from __future__ import annotations

import numpy as np
import statsmodels.api as sm
from scipy import stats


def clustered_wilson(y, groups, confidence: float = 0.95) -> tuple[float, float, float]:
    """(p, low, high): statsmodels' cluster-robust variance of the mean → Kish's effective
    n = p(1 − p)/V (G clusters when V = 0; at most the observations) → times
    (z/t_{G−1})² (Korn & Graubard 1998) → Wilson's (1927) formula on that n."""
    y = np.asarray(y, dtype=float)
    r = sm.OLS(y, np.ones(len(y))).fit(cov_type="cluster", cov_kwds={"groups": groups})
    p, var, g = float(r.params[0]), float(r.bse[0]) ** 2, len(np.unique(groups))
    z = stats.norm.ppf(0.5 + confidence / 2)
    n = min(p * (1 - p) / var if var > 0 else g, len(y))
    n *= (z / stats.t.ppf(0.5 + confidence / 2, g - 1)) ** 2
    centre = (p + z**2 / (2 * n)) / (1 + z**2 / n)
    half = z * np.sqrt(p * (1 - p) / n + z**2 / (4 * n**2)) / (1 + z**2 / n)
    return p, max(centre - half, 0.0), min(centre + half, 1.0)
