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
    owns_figure,
    place_legend,
    require_columns,
    select_session,
    show_image,
    text_colour_on,
)
from dentalkit.plot._identity import Identity, check_identity, session_label
from dentalkit.plot._labels import Candidate, place_labels
from dentalkit.plot.house import LINE_PT, ci_text, fontsize, group_colours, variable_label
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
    identity: Identity = "pseudonym",
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
        Write the class name at each box (underscores shown as spaces): above its top
        left corner, or at another corner, inside or outside, wherever it covers no
        other label and as few box edges as can be.
    crop : bool
        With an image, show only the boxes' region.
    show_axes : bool
    legend : {"above", "right", "inside"} or None
    identity : "pseudonym", "raw", None or mapping
        How the legend's title names the image's session (see
        :func:`dentalkit.plot.ceph_tracing`).
    ax : matplotlib Axes, optional
        When it is the only Axes of its figure (or none is given), the figure's height is
        fitted to the view, so the axes end where the image ends.

    Returns
    -------
    matplotlib Axes
        Image coordinates, **y inverted**; the boxes of each class form one unfilled
        ``PolyCollection`` (gid ``"boxes:<class_name>"``, corners TopLeft, TopRight,
        BottomRight, BottomLeft); the legend's title names the session and its entries
        give each class's number of boxes.
    """
    check_identity(identity)
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
            linewidths=LINE_PT["data"],
        )
        coll.set_gid(f"boxes:{cls}")
        ax.add_collection(coll)
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
    keyed = {"patient_id", "timestamp"} <= set(rows.columns)
    who = (
        session_label(findings, rows["patient_id"].iloc[0], rows["timestamp"].iloc[0], identity)
        if keyed
        else ""
    )
    place_legend(ax, legend, handles=handles, title=who or None)
    if legend is None and who:
        ax.set_title(who, fontsize=fontsize("legend"), fontweight="normal")
    if owns_figure(ax, created):  # as tall as the view needs (the legend's space included)
        fit_height_to_view(ax)
    if labels:  # after the limits and the size: placed in display space
        _label_boxes(ax, xy, classes_drawn, palette)
    return ax


def _label_boxes(ax: Any, xy: np.ndarray, classes: np.ndarray, palette: dict) -> None:
    """Class names at the boxes, each where it covers no other name (see ``boxes``)."""
    if not len(xy):
        return
    edges = np.concatenate(
        [np.stack([xy[:, [0, 1]], xy[:, [2, 1]]], 1), np.stack([xy[:, [2, 1]], xy[:, [2, 3]]], 1),
         np.stack([xy[:, [2, 3]], xy[:, [0, 3]]], 1), np.stack([xy[:, [0, 3]], xy[:, [0, 1]]], 1)]
    )  # fmt: skip
    # y grows downward in the data but upward in points: +dy moves a label up the screen
    occupied: list[np.ndarray] = []  # every name placed so far, whatever its class
    for b in np.argsort(xy[:, 1], kind="stable"):  # top boxes first
        x0, y0, x1, y1 = xy[b]
        colour = palette.get(classes[b], "black")
        options = [
            Candidate((x0, y0), (0.0, 1.5), "left", "bottom"),  # above, top left
            Candidate((x1, y0), (0.0, 1.5), "right", "bottom"),  # above, top right
            Candidate((x0, y1), (0.0, -1.5), "left", "top"),  # below, bottom left
            Candidate((x1, y1), (0.0, -1.5), "right", "top"),  # below, bottom right
            Candidate((x0, y0), (1.5, -1.5), "left", "top"),  # inside, top left
            Candidate((x0, y1), (1.5, 1.5), "left", "bottom"),  # inside, bottom left
            Candidate((x1, y0), (2.0, 0.0), "left", "top"),  # right of the box
            Candidate((x0, y0), (-2.0, 0.0), "right", "top"),  # left of the box
        ]
        place_labels(
            ax,
            [str(classes[b]).replace("_", " ")],
            [options],
            segments=edges,
            fontsize=fontsize("note"),
            color=text_colour_on(colour),
            zorder=4,
            bbox={"boxstyle": "square,pad=0.15", "lw": 0, "fc": colour},
            pad_pt=1.0,
            occupied=occupied,
        )


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
        Lower and upper CI columns (e.g. Wilson intervals), drawn as whiskers (named in
        the legend's title, with the level when a ``level``, ``confidence`` or
        ``ci_level`` column gives it).
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
        (× 100 with ``percent``). Groups keep the house style's colours
        (:func:`dentalkit.plot.house.group_colours`).
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
    colours = group_colours(groups, group_col) if group_col else {None: CATEGORICAL[0]}
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
        colour = colours[g]
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
                        fontsize=fontsize("note"),
                    )
    ax.set_yticks(base, [o.replace("_", " ") for o in order])
    ax.tick_params(axis="y", length=0)
    ax.set_ylim(-0.6, len(order) - 0.4)
    ax.set_xlim(0, (right or 1.0) * 1.15)  # room for the counts at the bar ends
    ax.set_xlabel(xlabel or (f"{value.replace('_', ' ').capitalize()} (%)" if percent else value))
    if group_col is not None:
        whiskers = f"; whiskers: {_interval(t)}" if ci else ""
        place_legend(ax, "above", title=f"{variable_label(by)}{whiskers}")
    return ax


def _interval(table: pd.DataFrame) -> str:
    """The interval's name: "95 % CI" when the table says its level, else "CI"."""
    for col in ("level", "confidence", "ci_level"):
        if col in table.columns and table[col].notna().any():
            return ci_text(float(table[col].dropna().iloc[0]))
    return "CI"
