"""Confidence intervals of proportions (Wilson score by default, via statsmodels)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from dentalkit.errors import InputError, require

__all__ = ["proportion_ci"]


def proportion_ci(
    count: ArrayLike, nobs: ArrayLike, confidence: float = 0.95, method: str = "wilson"
) -> tuple[np.ndarray, np.ndarray]:
    """Confidence interval of ``count / nobs``, element-wise.

    Parameters
    ----------
    count, nobs : array_like of int
        Successes and trials; ``nobs == 0`` gives NaN bounds.
    confidence : float
        Two-sided confidence level (0.95 → 95 % interval).
    method : str
        Any method of :func:`statsmodels.stats.proportion.proportion_confint`;
        default ``"wilson"`` (score interval, Wilson 1927), which keeps its
        coverage near the nominal level for small samples and proportions near
        0 or 1 (Newcombe 1998, Stat Med 17:857–872).

    Returns
    -------
    low, high : ndarray of float

    Examples
    --------
    >>> low, high = proportion_ci([0, 5], [20, 10])
    >>> [round(float(v), 4) for v in (*low, *high)]
    [0.0, 0.2366, 0.1611, 0.7634]
    """
    if not 0 < confidence < 1:
        raise InputError(f"confidence={confidence!r} must be between 0 and 1 (e.g. 0.95)")
    proportion = require("statsmodels.stats.proportion", "stats")
    count = np.asarray(count, dtype=float)
    nobs = np.asarray(nobs, dtype=float)
    if np.any(count < 0) or np.any(count > nobs):
        raise InputError("proportion_ci needs 0 <= count <= nobs for every element")
    ok = nobs > 0
    low = np.full(np.broadcast(count, nobs).shape, np.nan)
    high = low.copy()
    if np.any(ok):
        c, n = np.broadcast_arrays(count, nobs)
        lo, hi = proportion.proportion_confint(c[ok], n[ok], alpha=1 - confidence, method=method)
        low[ok] = lo
        high[ok] = hi
    return low, high
