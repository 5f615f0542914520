"""Confidence intervals of proportions (Wilson score by default, via statsmodels)."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from dentalkit.errors import InputError, require

__all__ = ["cluster_proportion_ci", "proportion_ci"]


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


def cluster_proportion_ci(
    values: ArrayLike,
    clusters: ArrayLike,
    groups: ArrayLike | None = None,
    confidence: float = 0.95,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Proportion of 0/1 ``values`` per group with a cluster-robust (patient) Wald interval.

    For units nested in patients (sessions, teeth, images) the units of one patient are
    not independent, and a Wilson interval over them is too narrow. The variance of
    p̂ = Σy/N is the cluster-robust (sandwich) variance of the intercept of the
    intercept-only linear model, clustered on ``clusters`` with the usual small-sample
    factor G/(G − 1) (Liang & Zeger 1986; the same as statsmodels
    ``OLS(...).fit(cov_type="cluster")``): V = G/(G − 1) · Σ_c (Σ_{i∈c} (y_i − p̂))² / N².
    The interval is p̂ ± z·√V, clipped to [0, 1] (a Wald interval: with few clusters or
    p̂ near 0 or 1 its coverage is below nominal).

    Parameters
    ----------
    values : array_like of bool or 0/1
        One value per unit.
    clusters : array_like
        Cluster (patient) of each unit.
    groups : array_like, optional
        Group of each unit (one proportion per group); default one group.
    confidence : float
        Two-sided confidence level.

    Returns
    -------
    proportion, low, high, n_clusters : ndarray
        One element per group, groups in sorted order (``np.unique``).

    Examples
    --------
    >>> p, lo, hi, g = cluster_proportion_ci([1, 1, 0, 0, 1, 0], ["a", "a", "b", "b", "c", "c"])
    >>> round(float(p[0]), 3), int(g[0])
    (0.5, 3)
    """
    from scipy import stats

    if not 0 < confidence < 1:
        raise InputError(f"confidence={confidence!r} must be between 0 and 1 (e.g. 0.95)")
    y = np.asarray(values, dtype=float)
    if np.any((y != 0) & (y != 1)):
        raise InputError("cluster_proportion_ci needs 0/1 (or bool) values")
    _, c = np.unique(np.asarray(clusters, dtype=object).astype(str), return_inverse=True)
    if groups is None:
        g = np.zeros(len(y), dtype=np.int64)
        n_groups = 1
    else:
        _, g = np.unique(np.asarray(groups, dtype=object).astype(str), return_inverse=True)
        n_groups = int(g.max()) + 1 if len(g) else 0
    n = np.bincount(g, minlength=n_groups).astype(float)
    with np.errstate(invalid="ignore", divide="ignore"):
        p = np.bincount(g, weights=y, minlength=n_groups) / n
    resid = y - p[g]
    # residual sums per (group, cluster) cell, then squared and summed per group
    cell = g * (int(c.max()) + 1 if len(c) else 1) + c
    cell_ids, cell_idx = np.unique(cell, return_inverse=True)
    sums = np.bincount(cell_idx, weights=resid)
    cell_group = cell_ids // (int(c.max()) + 1 if len(c) else 1)
    n_clusters = np.bincount(cell_group, minlength=n_groups).astype(float)
    ss = np.bincount(cell_group, weights=sums**2, minlength=n_groups)
    with np.errstate(invalid="ignore", divide="ignore"):
        var = np.where(n_clusters > 1, n_clusters / (n_clusters - 1) * ss / n**2, np.nan)
    z = stats.norm.ppf(0.5 + confidence / 2)
    half = z * np.sqrt(var)
    low = np.clip(p - half, 0.0, 1.0)
    high = np.clip(p + half, 0.0, 1.0)
    return p, low, high, n_clusters.astype(np.int64)
