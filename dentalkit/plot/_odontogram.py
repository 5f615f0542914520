"""The FDI odontogram heat map (private; public as :func:`dentalkit.plot.teeth.odontogram`)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from matplotlib.collections import PolyCollection
from matplotlib.patches import Patch

from dentalkit.errors import InputError
from dentalkit.plot._common import (
    colormap,
    fit_height_to_view,
    new_axes,
    owns_figure,
    require_columns,
    text_colour_on,
    value_norm,
)
from dentalkit.plot.house import LINE_PT, fontsize
from dentalkit.plot.style import MISSING_COLOUR

__all__ = ["ODONTOGRAM_LAYOUT", "odontogram"]


def _layout() -> pd.DataFrame:
    rows = []
    for q, row, digits in (
        (1, 0, range(8, 0, -1)),
        (2, 0, range(1, 9)),
        (4, 1, range(8, 0, -1)),
        (3, 1, range(1, 9)),
    ):
        start = 0 if q in (1, 4) else 8
        for j, d in enumerate(digits):
            col = start + j
            rows.append((q * 10 + d, row, col + (0.35 if col >= 8 else 0.0)))
    return pd.DataFrame(rows, columns=["fdi", "row", "x"])


#: Where each FDI tooth sits on the chart: ``row`` 0 = upper arch (top), 1 = lower;
#: ``x`` grows to the viewer's right. Quadrant 1 (patient's upper right) is at the top
#: left, 2 top right, 3 bottom right, 4 bottom left — the patient's right on the
#: viewer's left, as a clinician facing the patient charts it (ISO 3950).
ODONTOGRAM_LAYOUT: pd.DataFrame = _layout()


def odontogram(
    table: pd.DataFrame,
    value: str = "prevalence",
    *,
    fdi: str = "fdi",
    cmap: Any = None,
    vmin: float | None = None,
    vmax: float | None = None,
    center: float | None = None,
    percent: bool | None = None,
    annotate: bool = True,
    label: str | None = None,
    ax: Any = None,
) -> Any:
    """FDI odontogram heat map: one value per tooth on the 32-tooth chart.

    Parameters
    ----------
    table : DataFrame
        One row per FDI tooth with the ``fdi`` column and ``value`` — e.g.
        ``dentalkit.teeth.missing(teeth).by_fdi`` (prevalence of missing teeth), or
        any per-tooth summary (mean area, findings per tooth …). Filter to one group
        first if the table has several.
    value : str
        Column to show (default ``"prevalence"``).
    fdi : str
        Column with the ISO 3950 tooth number (11–48).
    cmap : str or Colormap, optional
        Default viridis (RdBu_r with ``center``).
    vmin, vmax : float, optional
        Colour limits; default 0 … max for proportions, else the data range.
    center : float, optional
        Centre of a diverging map.
    percent : bool, optional
        Show proportions as percentages (default: when ``value`` is ``prevalence``
        or every value lies in [0, 1]).
    annotate : bool
        Write each tooth's value in its cell.
    label : str, optional
        Colour bar label (default: the value's name, its unit and that the cells show it,
        e.g. "Prevalence (%), in the cells").
    ax : matplotlib Axes, optional
        When it is the only Axes of its figure (or none is given), the figure's height is
        fitted to the chart.

    Returns
    -------
    matplotlib Axes
        R and L mark the patient's right and left. Cells form a ``PolyCollection`` (gid
        ``"odontogram"``) in the order of :data:`ODONTOGRAM_LAYOUT`; teeth absent from
        ``table`` or with a NaN value are grey ("not assessed"). The values written in
        the cells are in the colour bar's unit (per cent for proportions).
    """
    require_columns(table, [fdi, value], "table")
    t = table[[fdi, value]].copy()
    t[fdi] = pd.to_numeric(t[fdi], errors="coerce")
    bad = t[fdi].notna() & ~t[fdi].isin(ODONTOGRAM_LAYOUT["fdi"])
    if bad.any():
        raise InputError(
            f"{fdi} values {sorted(t.loc[bad, fdi].astype(int).unique())[:8]} are not "
            "permanent FDI teeth (11–18, 21–28, 31–38, 41–48)"
        )
    if t[fdi].duplicated().any():
        raise InputError(
            f"table has several rows per FDI tooth (e.g. one per group); keep one group, "
            f"e.g. table[table['sex'] == 'F'], before drawing (duplicated: "
            f"{sorted(t.loc[t[fdi].duplicated(), fdi].astype(int).unique())[:8]})"
        )
    lay = ODONTOGRAM_LAYOUT.merge(t, left_on="fdi", right_on=fdi, how="left", suffixes=("", "_t"))
    vals = pd.to_numeric(lay[value], errors="coerce").to_numpy(dtype=float)
    finite = vals[np.isfinite(vals)]
    is_prop = finite.size > 0 and finite.min() >= 0 and finite.max() <= 1
    if percent is None:
        percent = value == "prevalence" or is_prop
    if vmin is None and is_prop and center is None:
        vmin = 0.0
    created = ax is None
    ax = new_axes(ax, (85.0, 32.0))
    w, h = 0.86, 0.8
    x0 = lay["x"].to_numpy() - w / 2
    y0 = lay["row"].to_numpy() * 1.0 - h / 2
    verts = [
        np.array([[a, b], [a + w, b], [a + w, b + h], [a, b + h]])
        for a, b in zip(x0, y0, strict=True)
    ]
    coll = PolyCollection(verts, edgecolors="#333333", linewidths=LINE_PT["individual"])
    coll.set_gid("odontogram")
    coll.set_array(vals)
    coll.set_cmap(colormap(cmap, center))
    coll.set_norm(value_norm(vals, vmin, vmax, center))
    ax.add_collection(coll)
    colours = coll.to_rgba(vals)
    for i, r in lay.iterrows():
        ax.text(
            r["x"],
            r["row"] + (-0.55 if r["row"] == 0 else 0.55),
            str(int(r["fdi"])),
            ha="center",
            va="bottom" if r["row"] == 0 else "top",
            fontsize=fontsize("note"),
            color="#333333",
        )
        if annotate and np.isfinite(vals[i]):
            v = vals[i] * (100 if percent else 1)
            text = f"{v:.0f}" if percent or abs(v) >= 10 else f"{v:.2g}"
            ax.text(
                r["x"],
                r["row"],
                text,
                ha="center",
                va="center",
                fontsize=fontsize("note"),
                color=text_colour_on(colours[i]),
            )
    left, right = -0.55, 15.9  # outer edges of the outermost cells (+ a little)
    ax.plot([7.675, 7.675], [-0.75, 1.75], color="black", lw=0.8)  # midline
    ax.plot([left, right], [0.5, 0.5], color="black", lw=0.8)  # occlusal plane
    ax.text(left - 0.15, 0.5, "R", ha="right", va="center", fontweight="bold")
    ax.text(right + 0.15, 0.5, "L", ha="left", va="center", fontweight="bold")
    ax.set_xlim(left - 1.0, right + 1.0)
    ax.set_ylim(2.15, -1.15)  # upper arch on top; the FDI numbers inside the view
    ax.set_aspect("equal")
    ax.set_axis_off()
    cax = ax.inset_axes([0.3, -0.1, 0.4, 0.06])
    cb = ax.get_figure().colorbar(coll, cax=cax, orientation="horizontal")
    default = value.replace("_", " ") + (" (%)" if percent else "")
    default = default[0].upper() + default[1:] + (", in the cells" if annotate else "")
    cb.set_label(label or default)
    if percent:
        from matplotlib.ticker import PercentFormatter

        cb.ax.xaxis.set_major_formatter(PercentFormatter(1.0, decimals=0, symbol=" %"))
    if np.isnan(vals).any():
        ax.legend(
            handles=[Patch(facecolor=MISSING_COLOUR, edgecolor="#333333", label="not assessed")],
            loc="lower right",
            bbox_to_anchor=(1.0, 1.0),
            frameon=False,
        )
    if owns_figure(ax, created):  # as tall as the chart (and its colour bar) needs
        fit_height_to_view(ax, min_mm=20.0)
    return ax
