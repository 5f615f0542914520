"""Findings figures: detection boxes over an image, and prevalence bar charts with CIs.

- :func:`boxes` — the detections of one image (``findings`` table) as labelled boxes,
  one colour per class, over the photograph or radiograph.
- :func:`prevalence_bars` — proportions with their confidence intervals, e.g.
  :func:`dentalkit.findings.prevalence` or the ``patterns`` / ``by_type`` tables of
  :func:`dentalkit.teeth.missing`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.collections import PolyCollection
from matplotlib.lines import Line2D

from dentalkit.errors import InputError
from dentalkit.plot._common import (
    finish_pixel_axes,
    fit_height_to_view,
    new_axes,
    place_legend,
    require_columns,
    select_session,
    show_image,
)
from dentalkit.plot.style import CATEGORICAL, colour_for

__all__ = ["boxes", "prevalence_bars"]

_BOX = ("x0", "y0", "x1", "y1")


def boxes(
    findings: pd.DataFrame,
    session: Any = None,
    *,
    image: Any = None,
    classes: Sequence[str] | None = None,
    colours: Mapping[str, str] | None = None,
    labels: bool = True,
    crop: bool = False,
    show_axes: bool = True,
    legend: str | None = "above",
    ax: Any = None,
) -> Any:
    """Detection boxes of one image, coloured by class.

    Parameters
    ----------
    findings : DataFrame
        The ``findings`` table: session key, ``source``, (``image_name``),
        ``class_name``, ``x0``, ``y0``, ``x1``, ``y1`` (TopLeft, BottomRight; pixels).
    session : str, tuple or mapping, optional
        Which image: ``(patient_id, timestamp, source[, image_name])`` or a mapping;
        optional when the table holds one image.
    image : array, PIL image, PNG bytes or path, optional
        The analysed image underneath (its whole extent is shown).
    classes : sequence of str, optional
        Only these classes; they also fix the colour order.
    colours : mapping, optional
        ``{class_name: colour}``. Default: palette colours in the sorted order of all
        classes in ``findings``, so a class keeps its colour across the images of one
        table.
    labels : bool
        Write the class name above each box (underscores shown as spaces).
    crop : bool
        With an image, show only the boxes' region.
    show_axes : bool
    legend : {"above", "right", "inside"} or None
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
        Image coordinates, **y inverted**; the boxes of each class form one unfilled
        ``PolyCollection`` (gid ``"boxes:<class_name>"``, corners TopLeft, TopRight,
        BottomRight, BottomLeft) and the legend gives each class's number of boxes.
    """
    require_columns(findings, ["class_name", *_BOX], "findings")
    keys = [k for k in ("patient_id", "timestamp", "source", "image_name") if k in findings]
    all_classes = sorted(findings["class_name"].dropna().astype(str).unique())
    order = list(classes) if classes is not None else all_classes
    palette = colour_for(order)
    if colours:
        palette.update(colours)
    rows = select_session(findings, session, what="findings", keys=keys)
    rows = rows[rows["class_name"].notna()]
    if classes is not None:
        rows = rows[rows["class_name"].astype(str).isin(order)]
    xy = rows[list(_BOX)].to_numpy(dtype=float)
    bad = ~np.isfinite(xy).all(axis=1) | (xy[:, 2] < xy[:, 0]) | (xy[:, 3] < xy[:, 1])
    if bad.any():
        raise InputError(
            f"findings rows {rows.index[bad].tolist()[:5]} have boxes that are not finite or "
            "whose BottomRight is above/left of TopLeft (x1 < x0 or y1 < y0)"
        )
    created = ax is None
    ax = new_axes(ax, (85.0, 65.0))
    has_image = image is not None
    shape = None
    if has_image:
        shape = show_image(ax, image).shape
    classes_drawn = rows["class_name"].astype(str).to_numpy()
    corners = np.stack(  # (n, 4, 2): TopLeft, TopRight, BottomRight, BottomLeft
        [xy[:, [0, 1]], xy[:, [2, 1]], xy[:, [2, 3]], xy[:, [0, 3]]], axis=1
    )
    counts: dict[str, int] = {}
    for cls in order:
        mine = classes_drawn == cls
        if not mine.any():
            continue
        counts[cls] = int(mine.sum())
        coll = PolyCollection(
            list(corners[mine]),
            facecolors="none",
            zorder=3,
            edgecolors=palette.get(cls, "black"),
            linewidths=1.0,
        )
        coll.set_gid(f"boxes:{cls}")
        ax.add_collection(coll)
    if labels:
        for (x0, y0), cls in zip(xy[:, :2], classes_drawn, strict=True):
            ax.text(
                x0,
                y0,
                cls.replace("_", " "),
                color="white",
                fontsize="xx-small",
                va="bottom",
                ha="left",
                zorder=4,
                bbox={"boxstyle": "square,pad=0.1", "lw": 0, "fc": palette.get(cls, "black")},
            )
    finish_pixel_axes(
        ax,
        np.r_[xy[:, 0], xy[:, 2]],
        np.r_[xy[:, 1], xy[:, 3]],
        image_shape=shape,
        crop=crop,
        show_axes=show_axes,
    )
    handles = [
        Line2D(
            [],
            [],
            color=palette.get(c, "black"),
            lw=2,
            label=f"{c.replace('_', ' ')} ({counts[c]})",
        )
        for c in order
        if c in counts
    ]
    place_legend(ax, legend, handles=handles)
    if created:  # our figure: as tall as the view needs (the legend's space included)
        fit_height_to_view(ax)
    return ax


def prevalence_bars(
    table: pd.DataFrame,
    label: str | Sequence[str] = "class_name",
    *,
    by: str | None = None,
    value: str = "prevalence",
    ci: tuple[str, str] | None = ("ci_low", "ci_high"),
    percent: bool = True,
    sort: bool = True,
    counts: tuple[str, str] | None = ("n_units_with", "n_units"),
    xlabel: str | None = None,
    ax: Any = None,
) -> Any:
    """Horizontal bars of proportions with confidence-interval whiskers.

    Parameters
    ----------
    table : DataFrame
        One row per category (and group): e.g. ``FindingsPrevalence.prevalence``
        (``class_name``, ``prevalence``, ``ci_low``, ``ci_high``, ``n_units``,
        ``n_units_with``) or ``MissingTeeth.patterns`` (``label="pattern"``,
        ``counts=("n_affected", "n_assessed")``).
    label : str or sequence of str
        Column(s) naming the bars; several are joined with " · " (e.g.
        ``["source", "class_name"]``).
    by : str, optional
        Group column: bars of the groups side by side, one colour each.
    value : str
        The proportion column.
    ci : (str, str) or None
        Lower and upper CI columns (e.g. Wilson intervals), drawn as whiskers.
    percent : bool
        Axis in percent.
    sort : bool
        Largest value on top (by the mean over groups).
    counts : (str, str) or None
        Numerator and denominator columns written at the bar end as ``k/n`` (skipped
        when absent).
    xlabel : str, optional
        Default "Prevalence (%)" / the value name.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
        One ``BarContainer`` per group (``ax.containers``); bar widths are the values
        (× 100 with ``percent``).
    """
    labels = [label] if isinstance(label, str) else list(label)
    need = [*labels, value] + (list(ci) if ci else []) + ([by] if by else [])
    require_columns(table, need, "table")
    t = table.copy()
    t["_label"] = t[labels].astype(str).agg(" · ".join, axis=1)
    group_col = by if by else None
    dup = t.duplicated(["_label"] + ([group_col] if group_col else []))
    if dup.any():
        raise InputError(
            f"several rows share the bar label {t.loc[dup, '_label'].unique()[:3].tolist()}: "
            "add the distinguishing column to label= (e.g. ['source', 'class_name']) or by="
        )
    cats = t.groupby("_label", sort=False)[value].mean()
    cats = cats.sort_values(ascending=True, kind="stable") if sort else cats.iloc[::-1]
    order = list(cats.index)  # bottom to top
    groups = [None] if group_col is None else list(pd.unique(t[group_col]))
    k = len(groups)
    height = 0.8 / k
    scale = 100.0 if percent else 1.0
    ax = new_axes(ax, (85.0, 15.0 + 5.0 * len(order) * max(1, 0.6 * k)))
    base = np.arange(len(order), dtype=float)
    right = 0.0
    for gi, g in enumerate(groups):
        part = t if g is None else t[t[group_col] == g]
        part = part.set_index("_label").reindex(order)
        y = base - (gi - (k - 1) / 2) * height  # first group on top within a category
        v = part[value].to_numpy(dtype=float) * scale
        colour = CATEGORICAL[gi % len(CATEGORICAL)]
        bars = ax.barh(y, v, height=height * 0.9, color=colour, label=None if g is None else str(g))
        for patch in bars:
            patch.set_gid(f"bar:{g}")
        if ci:
            lo = part[ci[0]].to_numpy(dtype=float) * scale
            hi = part[ci[1]].to_numpy(dtype=float) * scale
            err = np.vstack([np.clip(v - lo, 0, None), np.clip(hi - v, 0, None)])
            ax.errorbar(
                v, y, xerr=err, fmt="none", ecolor="black", elinewidth=0.6, capsize=1.5, zorder=3
            )
        ends = hi if ci else v
        right = max(right, float(np.nanmax(ends, initial=0.0)))
        if counts and all(c in part.columns for c in counts):
            for yy, e, a, n in zip(y, ends, part[counts[0]], part[counts[1]], strict=True):
                if pd.notna(a) and pd.notna(n) and np.isfinite(e):
                    ax.annotate(
                        f"{int(a)}/{int(n)}",
                        (e, yy),
                        xytext=(2, 0),
                        textcoords="offset points",
                        va="center",
                        fontsize="x-small",
                    )
    ax.set_yticks(base, [o.replace("_", " ") for o in order])
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(-0.6, len(order) - 0.4)
    ax.set_xlim(0, (right or 1.0) * 1.15)  # room for the counts at the bar ends
    ax.set_xlabel(xlabel or (f"{value.replace('_', ' ').capitalize()} (%)" if percent else value))
    if group_col is not None:
        place_legend(ax, "above", title=str(by))
    return ax
