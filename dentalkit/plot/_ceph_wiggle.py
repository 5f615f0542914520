"""The cohort z-score ("wiggle") chart against norms (private)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch
from matplotlib.ticker import MaxNLocator
from scipy import stats as sps

from dentalkit import ceph as _ceph
from dentalkit.errors import InputError
from dentalkit.plot._ceph_geometry import short_label
from dentalkit.plot._common import (
    new_axes,
    number,
    owns_figure,
    place_legend,
    require_columns,
    set_height,
)
from dentalkit.plot.house import (
    LINE_PT,
    ci_text,
    fontsize,
    group_colours,
    group_order,
    with_unit,
)
from dentalkit.plot.style import CATEGORICAL

#: Fewest patients whose mean gets a t interval (with 1 degree of freedom, t is 12.7).
MIN_N_INTERVAL = 3
#: Row names longer than this are broken into lines.
NAME_WIDTH = 20
#: The band shades (±2 SD, ±1 SD) and the patients' lines.
_BAND2, _BAND1, _PATIENT = "#EBEBEB", "#D4D4D4", "#9A9A9A"

__all__ = ["wiggle"]


def wiggle(
    zscores: pd.DataFrame,
    *,
    measures: Sequence[str] | None = None,
    by: str | None = None,
    individuals: bool | None = None,
    level: float = 0.95,
    session_cols: Sequence[str] = ("patient_id", "timestamp"),
    ax: Any = None,
) -> Any:
    """Cohort z-scores against norms: one row per measure, the "wiggle" polygon chart.

    Parameters
    ----------
    zscores : DataFrame
        Output of :func:`dentalkit.ceph.zscores` (``measure``, ``z``, ``norm_mean``,
        ``norm_sd``, ``unit`` and the session columns), plus ``by`` if given.
    measures : sequence of str, optional
        Rows, top to bottom (default: every measure with a z-score, catalogue order).
    by : str, optional
        Group column: one mean line per group (e.g. ``"sex"``, ``"class"``).
    individuals : bool, optional
        Draw each session's own z profile as a thin grey line (default: when there
        are at most 50 sessions).
    level : float
        Confidence level of the mean's t interval (error bars).
    session_cols : sequence of str
        Columns identifying a session (for the individual lines).
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
        x: z-score (SD units from the norm mean), y: measures (first on top). Shaded
        bands at ±1 and ±2 SD; the right-hand column, under its header, gives each
        measure's norm (mean ± SD and unit) as :func:`~dentalkit.ceph.zscores` matched
        it and, in brackets, the number of patients with a z-score. The legend explains
        the bands, the patients' lines and the means. A mean over fewer than
        :data:`MIN_N_INTERVAL` patients is drawn without an interval. When ``ax`` is
        the only Axes of its figure (or none is given) the figure gets the height its
        rows need.

    Notes
    -----
    The polygon chart plots a patient's values against the norm's range so that a
    whole analysis reads at a glance (Hellman's "wiggle", 1937; Vorhies JM, Adams JW.
    Polygonic interpretation of cephalometric findings. *Angle Orthod*
    1951;21:194–197). Here every measure is on the common z scale, so the norm band
    is the same width on every row. Group means come with t intervals,
    mean ± t(1 − α/2, n − 1)·SD/√n.
    """
    require_columns(
        zscores,
        ["measure", "z", "norm_mean", "norm_sd", "unit"],
        "zscores",
        "Pass the output of dentalkit.ceph.zscores().",
    )
    if by is not None:
        require_columns(zscores, [by], "zscores")
    if not 0 < level < 1:
        raise InputError(f"level must be between 0 and 1, got {level!r}")
    table = zscores.assign(measure=zscores["measure"].astype(str))
    scored = table[np.isfinite(table["z"].to_numpy(dtype=float))]
    if measures is None:
        order = {m: i for i, m in enumerate(_ceph.load_measures()["id"])}
        present = scored["measure"].unique().tolist()
        measures = sorted(present, key=lambda m: (order.get(m, len(order)), m))
    measures = list(measures)
    without = [m for m in measures if m not in set(scored["measure"])]
    if without:
        raise InputError(
            f"no z-scores for measure(s) {without}: no matching norm with an SD (see "
            "dentalkit.ceph.zscores and load_norms)"
        )
    if not measures:
        raise InputError("the zscores table has no finite z-score to draw")
    ypos = {m: i for i, m in enumerate(measures)}
    data = scored[scored["measure"].isin(measures)].copy()
    data["_y"] = data["measure"].map(ypos).astype(float)

    created = ax is None
    height = 30.0 + 6.0 * len(measures)
    ax = new_axes(ax, (85.0, height))
    if owns_figure(ax, created):
        set_height(ax, height)
    top, bottom = -0.6, len(measures) - 0.4
    ax.axvspan(-2, 2, color=_BAND2, lw=0, zorder=0)
    ax.axvspan(-1, 1, color=_BAND1, lw=0, zorder=0)
    ax.axvline(0, color="black", lw=LINE_PT["reference"], zorder=1)

    keys = [c for c in session_cols if c in data.columns]
    n_sessions = len(data[keys].drop_duplicates()) if keys else len(data)
    if individuals is None:
        individuals = n_sessions <= 50
    if individuals and keys:
        for _, s in data.sort_values("_y").groupby(keys, sort=False, observed=True):
            ax.plot(s["z"], s["_y"], color=_PATIENT, lw=0.4, alpha=0.6, zorder=2)

    if by is None:
        groups = [(None, data)]
        colours = {None: CATEGORICAL[0]}
    else:
        levels = group_order(data[by].dropna().unique(), by)
        groups = [(g, data[data[by] == g]) for g in levels]
        colours = group_colours(levels, by)
    k = len(groups)
    offsets = (np.arange(k) - (k - 1) / 2) * (0.5 / max(k, 1)) if k > 1 else np.zeros(1)
    for gi, (g, part) in enumerate(groups):
        stat = part.groupby("measure", observed=True)["z"].agg(["mean", "std", "count"])
        stat = stat.reindex(measures)
        t = sps.t.ppf((1 + level) / 2, np.maximum(stat["count"].to_numpy(dtype=float) - 1, 1))
        count = stat["count"].to_numpy(dtype=float)
        half = np.where(
            count >= MIN_N_INTERVAL, t * stat["std"].to_numpy(dtype=float) / np.sqrt(count), np.nan
        )
        y = np.arange(len(measures)) + offsets[gi]
        colour = colours[g]
        label = f"mean, {ci_text(level)}" if g is None else f"{g}: mean, {ci_text(level)}"
        ax.errorbar(
            stat["mean"].to_numpy(dtype=float),
            y,
            xerr=half,
            color=colour,
            lw=1.0,
            marker="o",
            ms=3,
            capsize=1.5,
            elinewidth=0.7,
            label=label,
            zorder=4,
        )
    lim = max(3.0, float(np.ceil(np.nanmax(np.abs(data["z"])))) + 0.5)
    ax.set_xlim(-lim, lim)
    ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))  # whole SDs
    ax.set_ylim(bottom, top)
    catalog = _ceph.load_measures()
    names = [textwrap.fill(short_label(catalog, m), NAME_WIDTH) for m in measures]
    ax.set_yticks(range(len(measures)), names)
    ax.tick_params(axis="y", length=0)
    ax.set_xlabel("z-score (SD from the norm mean)")
    counts = data.drop_duplicates([*keys[:1], "measure"]) if keys else data
    n = counts.groupby("measure", observed=True).size()
    right = ax.secondary_yaxis("right")
    right.set_yticks(
        range(len(measures)), [f"{_norm_text(data, m)} ({n.get(m, 0)})" for m in measures]
    )
    right.tick_params(length=0, labelsize=fontsize("note"))
    right.spines["right"].set_visible(False)
    ax.annotate(
        "Norm (n)",
        (1.0, 1.0),
        xycoords="axes fraction",
        xytext=(3.5, 2.0),
        textcoords="offset points",
        ha="left",
        va="bottom",
        fontsize=fontsize("note"),
        fontweight="bold",
    )
    handles, _ = ax.get_legend_handles_labels()
    if individuals and keys:
        handles.append(Line2D([], [], color=_PATIENT, lw=0.6, label="patients"))
    handles += [
        Patch(facecolor=_BAND1, label="±1 SD"),
        Patch(facecolor=_BAND2, label="±2 SD"),
    ]
    place_legend(ax, "above", ncols=2, handles=handles)
    return ax


def _norm_text(data: pd.DataFrame, measure: str) -> str:
    row = data[data["measure"] == measure].iloc[0]
    sd = with_unit(number(row["norm_sd"], ".2g"), row["unit"])
    return f"{number(row['norm_mean'], '.4g')} ± {sd}"
