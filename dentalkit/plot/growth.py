"""Growth figures: per-patient trajectories with the mixed model's fit and band per group.

- :func:`growth_lines` — one thin line per patient (its sessions joined), and per group
  the population-average fit of :func:`dentalkit.stats.growth` with its pointwise 95 %
  confidence band (:meth:`dentalkit.stats.GrowthResult.bands`).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from dentalkit.errors import InputError
from dentalkit.plot._common import new_axes, place_legend, require_columns
from dentalkit.plot.house import (
    LINE_PT,
    OKABE_ITO,
    ci_text,
    group_colours,
    group_order,
    unit_text,
    variable_label,
)

__all__ = ["growth_lines"]

SECONDS_PER_YEAR = 365.25 * 86400.0


def growth_lines(
    data: pd.DataFrame,
    bands: pd.DataFrame,
    measure: str,
    *,
    group: str | None = None,
    value: str = "value",
    unit: str = "patient_id",
    time: str = "years",
    ax: Any = None,
) -> Any:
    """Per-patient lines, and the model's fit with its confidence band per group.

    Parameters
    ----------
    data : DataFrame
        The long table the model was fitted on: ``unit``, ``measure``, ``value`` and the
        time — a ``time`` column, or ``session_time`` (years since each unit's first
        session of this measure, as :func:`dentalkit.stats.growth` computes them when
        the measure is present at every session) — plus ``group``.
    bands : DataFrame
        :meth:`dentalkit.stats.GrowthResult.bands` of that fit (``measure``, ``group``,
        ``time``, ``estimate``, ``ci_low``, ``ci_high``).
    measure : str
        The measure to draw.
    group : str, optional
        The group column of ``data`` (the model's ``group=``).
    value, unit, time : str
        Columns as in :func:`dentalkit.stats.growth`.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
        Thin lines: patients (coloured by group); thick line and shaded band: the
        population-average fit and its pointwise 95 % Wald band. Groups come in the house
        style's order and colours (:func:`dentalkit.plot.house.group_order`: skeletal
        classes I, II, III). The legend, above the axes, names the group variable and
        gives each group's number of patients.
    """
    require_columns(data, [unit, "measure", value, *([group] if group else [])], "data")
    require_columns(bands, ["measure", "group", "time", "estimate", "ci_low", "ci_high"], "bands")
    rows = data[data["measure"].astype(str) == str(measure)].dropna(subset=[value])
    fit = bands[bands["measure"].astype(str) == str(measure)]
    if rows.empty or fit.empty:
        raise InputError(f"measure {measure!r} has no rows in data or no fitted band in bands")
    t = _years(rows, time, unit)
    rows = rows.assign(_t=t).dropna(subset=["_t"])
    ax = new_axes(ax)
    levels = group_order(pd.unique(fit["group"]), group) if group else [None]
    colours = group_colours(levels, group) if group else {None: OKABE_ITO["blue"]}
    for level in levels:
        colour = colours[level]
        sub = rows if level is None else rows[rows[group] == level]
        n_units = sub[unit].nunique()
        for _, one in sub.sort_values("_t").groupby(unit, sort=False, observed=True):
            ax.plot(
                one["_t"], one[value], color=colour, lw=LINE_PT["individual"], alpha=0.45,
                zorder=1,
            )  # fmt: skip
        band = fit if level is None else fit[fit["group"] == level]
        ax.fill_between(
            band["time"], band["ci_low"], band["ci_high"], color=colour, alpha=0.25, lw=0, zorder=2
        )
        label = str(level) if level is not None else "all"
        ax.plot(
            band["time"],
            band["estimate"],
            color=colour,
            lw=LINE_PT["emphasis"],
            zorder=3,
            label=f"{label} (n = {n_units} patients)",
        )
    unit_label = ""
    if "unit" in rows.columns and unit != "unit":
        units = pd.unique(rows["unit"].dropna().astype(str))
        unit_label = f" ({unit_text(units[0])})" if len(units) == 1 else ""
    ax.set_xlabel("Years since first session" if time == "years" else time)
    ax.set_ylabel(f"{measure}{unit_label}")
    what = f"model fit and {ci_text(0.95)}; thin lines: patients"
    title = f"{variable_label(group)}: {what}" if group else what
    place_legend(ax, "above", ncols=3, title=title)
    return ax


def _years(rows: pd.DataFrame, time: str, unit: str) -> np.ndarray:
    if time in rows.columns:
        return pd.to_numeric(rows[time], errors="coerce").to_numpy(dtype=float)
    if time != "years" or "session_time" not in rows.columns:
        raise InputError(f"data lacks the time column {time!r} (or session_time for 'years')")
    st = pd.to_datetime(rows["session_time"], utc=True)
    first = st.groupby(rows[unit].astype("object"), sort=False).transform("min")
    return ((st - first).dt.total_seconds() / SECONDS_PER_YEAR).to_numpy(dtype=float)
