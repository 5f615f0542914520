"""Quality-control figures.

- :func:`qc_outliers` — every session's Procrustes distance from the cohort's mean shape,
  largest first, the sessions :func:`dentalkit.qc.landmarks` flagged marked, in the spirit
  of geomorph's ``plotOutliers`` (Adams & Otárola-Castillo 2013, *Methods Ecol Evol*
  4:393–399): median and upper fence (third quartile + 1.5 × the interquartile range) as
  reference lines.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dentalkit.errors import InputError
from dentalkit.plot._common import new_axes, place_legend, require_columns
from dentalkit.plot.style import OKABE_ITO

__all__ = ["qc_outliers"]

#: Colours: flagged sessions and the sessions that passed.
FLAGGED, PASSED = OKABE_ITO["vermillion"], "#8C8C8C"


def qc_outliers(qc: pd.DataFrame, *, view: str = "lateral", ax: Any = None) -> Any:
    """Procrustes distance of each session from the mean shape, flagged sessions marked.

    Parameters
    ----------
    qc : DataFrame
        The ``qc_landmarks`` table of :func:`dentalkit.qc.landmarks` (``view``,
        ``procrustes_distance``, ``flagged``).
    view : {"lateral", "frontal"}, default "lateral"
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
        One point per session, ordered by distance (largest left); vermillion: flagged by
        the quality control (cohort shape model or plausible-range rules), grey: passed
        (counts in the legend). Solid line: median distance; dashed: upper fence
        (Q3 + 1.5 × IQR), geomorph's outlier line. No title: the caption carries it. A session far out need not be flagged (an unusual but consistent
        anatomy), and a flagged one need not be far out (one landmark wrong moves the
        whole shape little): the figure shows how the two relate.

    Raises
    ------
    InputError
        No session of ``view`` has a Procrustes distance (the cohort model was not used:
        too few sessions).
    """
    require_columns(qc, ["view", "procrustes_distance", "flagged"], "qc")
    rows = qc[(qc["view"].astype(str) == view) & qc["procrustes_distance"].notna()]
    if rows.empty:
        raise InputError(
            f"no {view} session has a Procrustes distance: the cohort shape model was not "
            "used (too few sessions); the figure needs it"
        )
    order = np.argsort(-rows["procrustes_distance"].to_numpy(float), kind="stable")
    d = rows["procrustes_distance"].to_numpy(float)[order]
    flagged = rows["flagged"].to_numpy(bool)[order]
    rank = np.arange(1, len(d) + 1)
    ax = new_axes(ax)
    size = 6.0 if len(d) <= 500 else 2.0
    ax.scatter(rank[~flagged], d[~flagged], s=size, color=PASSED, lw=0,
               label=f"passed ({int((~flagged).sum())})", zorder=2)  # fmt: skip
    ax.scatter(rank[flagged], d[flagged], s=size * 1.6, color=FLAGGED, lw=0,
               label=f"flagged by QC ({int(flagged.sum())})", zorder=3)  # fmt: skip
    q1, median, q3 = np.percentile(d, [25, 50, 75])
    fence = q3 + 1.5 * (q3 - q1)
    ax.axhline(median, color=OKABE_ITO["black"], lw=0.7, zorder=1, label="median")
    ax.axhline(fence, color=OKABE_ITO["black"], lw=0.7, ls="--", zorder=1, label="Q3 + 1.5 IQR")
    ax.set_xlim(0, len(d) + 1)
    ax.set_ylim(0, float(d.max()) * 1.05)
    ax.set_xlabel(f"Session, ordered by distance ({len(d)} {view} sessions)")
    ax.set_ylabel("Procrustes distance from mean shape")
    place_legend(ax, "above", ncols=2)
    return ax
