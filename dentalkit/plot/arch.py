"""Arch-form figures: one arch's points with fitted curves, and group mean arch forms.

- :func:`forms` — the ``arch_points`` of one arch with the curve of every fitted model
  (from :func:`dentalkit.arch.fit` / :func:`dentalkit.arch.curve`), in image pixels.
- :func:`mean_forms` — group mean arch forms with their pointwise confidence bands
  (from :func:`dentalkit.arch.mean_form`), in the canonical arch frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

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
)
from dentalkit.plot._identity import Identity, check_identity, session_label
from dentalkit.plot.house import (
    LINE_PT,
    ci_text,
    fontsize,
    group_colours,
    group_order,
    unit_text,
    variable_label,
)
from dentalkit.plot.style import CATEGORICAL

__all__ = ["forms", "mean_forms"]

_ARCH_NAME = {"up": "upper", "lo": "lower"}
_MODEL_ORDER = ("catenary", "beta", "poly4", "poly6", "parabola")
#: Line style of each model, so that curves that coincide stay visible (dashes show the
#: curve drawn under them); the catenary, solid, is drawn on top.
MODEL_STYLES = {
    "catenary": "-",
    "beta": (0, (5.0, 2.0)),
    "poly4": (0, (1.2, 1.6)),
    "poly6": (0, (5.0, 1.5, 1.2, 1.5)),
    "parabola": (0, (2.5, 2.5)),
}


def _curves_from(fits_or_curves: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame | None]:
    """Curve points in image pixels, and the fits (for RMSE) when fits were given."""
    cols = set(fits_or_curves.columns)
    if {"x_image", "y_image", "model"} <= cols:
        return fits_or_curves, None
    if {"model", "status"} <= cols:
        from dentalkit import arch as _arch  # lazy: the arch module is optional here

        return _arch.curve(fits_or_curves, frame="image"), fits_or_curves
    raise InputError(
        "fits must be the output of dentalkit.arch.fit (model, status, parameters, "
        "transform) or of dentalkit.arch.curve(..., frame='image') (model, x_image, "
        f"y_image); got columns {sorted(cols)}"
    )


def forms(
    arch_points: pd.DataFrame,
    fits: pd.DataFrame | None = None,
    session: Any = None,
    *,
    arch: str | None = None,
    models: Sequence[str] | None = None,
    image: Any = None,
    number_points: bool = False,
    show_axes: bool = True,
    legend: str | None = "above",
    identity: Identity = "pseudonym",
    ax: Any = None,
) -> Any:
    """Catenary points of one arch with the fitted curve of each model.

    Parameters
    ----------
    arch_points : DataFrame
        The ``arch_points`` table (``patient_id``, ``timestamp``, ``arch``, ``index``,
        ``x``, ``y`` in pixels, y down).
    fits : DataFrame, optional
        Output of :func:`dentalkit.arch.fit` (curves are evaluated with
        :func:`dentalkit.arch.curve` in image pixels, and the legend gives each
        model's RMSE in brackets), or a curve table with ``model``, ``x_image``,
        ``y_image``. Without it only the points are drawn. When the fits are in mm
        (their ``scale`` column holds the image's mm per pixel) the axes are in mm too,
        the unit of the RMSE.
    session : str, tuple or mapping, optional
        Which session (see :func:`dentalkit.plot.ceph.tracing`).
    arch : {"up", "lo"}, optional
        Which arch; needed when the session has both.
    models : sequence of str, optional
        Models to draw (default: every model with a curve, in the order catenary,
        beta, poly4, poly6, parabola).
    image : array, PIL image, PNG bytes or path, optional
        The dental-model photograph underneath.
    number_points : bool
        Write each point's ``index`` next to it.
    show_axes : bool
    legend : {"above", "right", "inside"} or None
    identity : "pseudonym", "raw", None or mapping
        How the legend's title names the session (see :func:`dentalkit.plot.ceph_tracing`).
    ax : matplotlib Axes, optional
        Where to draw. When it is the only Axes of its figure, the figure's height is
        fitted to the view (as for a figure made here), so the axes show the data
        rather than blank bands beside it.

    Returns
    -------
    matplotlib Axes
        Image coordinates (pixels, or mm with calibrated fits), equal aspect, **y
        inverted**; one line per model, each with its own dash pattern
        (:data:`MODEL_STYLES`) so that coinciding curves stay visible.
    """
    check_identity(identity)
    require_columns(arch_points, ["arch", "x", "y"], "arch_points")
    every = _one_arch(arch_points, arch)
    pts = select_session(
        every,
        session,
        what="arch_points",
        keys=("patient_id", "timestamp", "arch"),
    )
    key = {c: pts[c].iloc[0] for c in ("patient_id", "timestamp", "arch") if c in pts}
    if "index" in pts.columns:
        pts = pts.sort_values("index", kind="stable")
    created = ax is None
    ax = new_axes(ax, (85.0, 75.0))
    curves = fit_table = None
    k, unit = 1.0, "px"
    if fits is not None:
        curves, fit_table = _curves_from(fits)
        mask = np.ones(len(curves), dtype=bool)
        for c, v in key.items():
            if c in curves.columns:
                mask &= (curves[c].astype(str) == str(v)).to_numpy()
        curves = curves[mask]
        k, unit = _scale(fit_table, key)
    has_image = image is not None
    shape = None
    if has_image:
        shape = show_image(ax, image, scale=k).shape
    xs, ys = [pts["x"].to_numpy(float) * k], [pts["y"].to_numpy(float) * k]
    if curves is not None:
        present = [m for m in _MODEL_ORDER if m in set(curves["model"].astype(str))]
        present += sorted(set(curves["model"].astype(str)) - set(present))
        chosen = present if models is None else list(models)
        absent = [m for m in chosen if m not in present]
        if absent:
            raise InputError(f"no fitted curve of model(s) {absent} for {key}; have {present}")
        for i, m in enumerate(chosen):
            c = curves[curves["model"].astype(str) == m]
            label = m + _rmse_text(fit_table, key, m)
            ax.plot(
                c["x_image"] * k,
                c["y_image"] * k,
                color=CATEGORICAL[i % len(CATEGORICAL)],
                lw=LINE_PT["data"],
                ls=MODEL_STYLES.get(m, "-"),
                label=label,
                zorder=3.5 if m == "catenary" else 3,
                gid=f"model:{m}",
            )
            xs.append(c["x_image"].to_numpy(float) * k)
            ys.append(c["y_image"].to_numpy(float) * k)
    ax.scatter(
        pts["x"] * k,
        pts["y"] * k,
        s=9,
        color="white" if has_image else "black",
        edgecolors="black",
        linewidths=0.4,
        zorder=4,
        label="arch points",
        gid="arch_points",
    )
    if number_points and "index" in pts.columns:
        for x, y, i in zip(pts["x"] * k, pts["y"] * k, pts["index"], strict=True):
            ax.annotate(
                str(i), (x, y), xytext=(2, 2), textcoords="offset points",
                fontsize=fontsize("note"),
            )  # fmt: skip
    finish_pixel_axes(
        ax,
        np.concatenate(xs),
        np.concatenate(ys),
        image_shape=shape,
        crop=False,
        unit=unit,
        scale=k,
        show_axes=show_axes,
    )
    arch_name = _ARCH_NAME.get(str(key.get("arch")), key.get("arch"))
    # compact: the RMSE in brackets after each model, said once in the title
    rmse = fit_table is not None and "rmse" in fit_table.columns
    title = f"{arch_name} arch" + (" (model: RMSE)" if rmse else "")
    if {"patient_id", "timestamp"} <= set(key):
        who = session_label(every, key["patient_id"], key["timestamp"], identity)
        title = f"{who}\n{title}" if who else title
    place_legend(ax, legend, ncols=3, title=title)
    if owns_figure(ax, created):
        # our figure, or one holding just this plot: as tall as the view needs (the
        # legend's space included), so the axes show the data, not blank bands
        fit_height_to_view(ax)
    return ax


def _one_arch(table: pd.DataFrame, arch: str | None) -> pd.DataFrame:
    if arch is not None:
        rows = table[table["arch"].astype(str) == arch]
        if not len(rows):
            raise InputError(f"no rows of arch {arch!r}; arches: {sorted(table['arch'].unique())}")
        return rows
    return table


def _scale(fits: pd.DataFrame | None, key: dict) -> tuple[float, str]:
    """Millimetres per pixel of the session's fits when they are in mm, else (1, "px")."""
    if fits is None or not {"scale", "unit"} <= set(fits.columns):
        return 1.0, "px"
    mask = np.ones(len(fits), dtype=bool)
    for c, v in key.items():
        if c in fits.columns:
            mask &= (fits[c].astype(str) == str(v)).to_numpy()
    hit = fits.loc[mask & (fits["unit"].astype(str) == "mm").to_numpy(), "scale"]
    scale = pd.to_numeric(hit, errors="coerce").dropna().unique()
    if len(scale) == 1 and np.isfinite(scale[0]) and scale[0] > 0:
        return float(scale[0]), "mm"
    return 1.0, "px"


def _rmse_text(fits: pd.DataFrame | None, key: dict, model: str) -> str:
    if fits is None or "rmse" not in fits.columns:
        return ""
    mask = fits["model"].astype(str) == model
    for c, v in key.items():
        if c in fits.columns:
            mask &= fits[c].astype(str) == str(v)
    hit = fits.loc[mask]
    if not len(hit) or not np.isfinite(hit["rmse"].iloc[0]):
        return ""
    unit = unit_text(hit["unit"].iloc[0]) if "unit" in hit.columns else ""
    return f" ({hit['rmse'].iloc[0]:.2g} {unit})".replace(" )", ")")


def mean_forms(
    mean_form: pd.DataFrame,
    *,
    by: str | None = None,
    arch: str | None = None,
    band: bool = True,
    legend: str | None = "above",
    ax: Any = None,
) -> Any:
    """Group mean arch forms with pointwise confidence bands, one panel per arch.

    Parameters
    ----------
    mean_form : DataFrame
        Output of :func:`dentalkit.arch.mean_form`: the ``by`` columns, ``arch``,
        ``model``, ``x``, ``y_mean``, ``y_lower``, ``y_upper``, ``unit``, ``level``,
        and a count column (``n_patients``, ``n`` or ``n_arches``, the first present)
        used in the labels.
    by : str, optional
        The grouping column used for ``mean_form`` (one colour per group).
    arch : {"up", "lo"}, optional
        Only this arch (default: every arch present).
    band : bool
        Shade the pointwise confidence band ``y_lower`` … ``y_upper`` (at fixed x, as
        ``mean_form`` computes it).
    legend : {"above", "right", "inside"} or None
        Where the legend goes (one for both panels, at the first; each panel names its
        arch in its top left corner).
    ax : matplotlib Axes, optional
        Where to draw. With both arches present its place in the figure is split
        into two panels (upper arch above, lower below).

    Returns
    -------
    matplotlib Axes
        The first panel (upper arch when present); with two arches the figure holds
        both (``gid`` ``"panel:up"`` and ``"panel:lo"``), at the same scale and with
        the same limits so the forms compare directly. x: toward the patient's left;
        y: posterior, drawn **downward** so the incisors are at the top and the arch
        opens toward the bottom (an occlusal view with the patient's right on the
        viewer's left). Equal aspect; the limits are the curves and bands with a small
        margin.
    """
    require_columns(
        mean_form,
        ["arch", "model", "x", "y_mean", "y_lower", "y_upper", "unit"],
        "mean_form",
        "Pass the output of dentalkit.arch.mean_form().",
    )
    table = mean_form
    if by is not None:
        require_columns(table, [by], "mean_form")
    if arch is not None:
        table = _one_arch(table, arch)
    models = table["model"].astype(str).unique()
    if len(models) > 1:
        raise InputError(f"mean_form holds several models {list(models)}; give one")
    units = table["unit"].astype(str).unique()
    unit = units[0] if len(units) == 1 else "mixed units"
    arches = [a for a in ("up", "lo") if a in set(table["arch"].astype(str))]
    arches += sorted(set(table["arch"].astype(str)) - set(arches))
    count = next(
        (c for c in ("n_units", "n_patients", "n", "n_arches") if c in table.columns), None
    )
    if by is None:
        groups = [(None, table)]
        colours = {None: CATEGORICAL[0]}
    else:  # the house style's order and colours (skeletal classes I, II, III)
        levels = group_order(table[by].dropna().unique(), by)
        groups = [(g, table[table[by] == g]) for g in levels]
        colours = group_colours(levels, by)
    # one view for every panel: the curves and their bands, plus a margin
    ys = table[["y_mean", "y_lower", "y_upper"] if band else ["y_mean"]].to_numpy(float)
    xs = table["x"].to_numpy(float)
    x0, x1 = np.nanmin(xs), np.nanmax(xs)
    y0, y1 = np.nanmin(ys), np.nanmax(ys)
    pad = 0.04 * max(x1 - x0, y1 - y0, 1e-9)
    view = (x0 - pad, x1 + pad, y0 - pad, y1 + pad)
    axes = _panels(ax, len(arches), view)
    level = table["level"].iloc[0] if "level" in table.columns else None
    what = f"{models[0].capitalize()} mean" + (
        f" and {ci_text(level)}" if band and level is not None else ""
    )
    if by is not None:
        what = f"{what} by {variable_label(by).lower()}"
    for pa, a in zip(axes, arches, strict=True):
        pa.set_gid(f"panel:{a}")
        for g, part in groups:
            seg = part[part["arch"].astype(str) == a].sort_values("x")
            if not len(seg):
                continue
            colour = colours[g]
            n = seg[count].iloc[0] if count is not None else None
            name = "mean" if g is None else str(g)
            label = name + (f" (n = {n} patients)" if n is not None else "")
            pa.plot(
                seg["x"], seg["y_mean"], color=colour, lw=LINE_PT["data"], label=label, zorder=3,
                gid=f"mean:{g}:{a}",
            )  # fmt: skip
            if band:
                pa.fill_between(
                    seg["x"], seg["y_lower"], seg["y_upper"], color=colour, alpha=0.22, lw=0,
                    zorder=2, gid=f"band:{g}:{a}",
                )  # fmt: skip
        pa.set_aspect("equal", adjustable="box")
        pa.set_xlim(view[0], view[1])
        pa.set_ylim(view[3], view[2])  # posterior down: incisors on top
        pa.axvline(0.0, color="#9A9A9A", lw=0.5, ls=":", zorder=1)
        pa.set_ylabel(f"y, posterior ({unit_text(unit)})")
        pa.text(
            0.02, 0.98, f"{_ARCH_NAME.get(a, a)} arch", transform=pa.transAxes, ha="left",
            va="top", fontsize=fontsize("legend"), fontweight="bold",
        )  # fmt: skip  # the corner beside the incisors is empty: the arch opens downward
    # one legend for both panels (the groups are the same), above the first
    place_legend(axes[0], legend, ncols=3, title=what)
    for pa in axes[:-1]:
        pa.tick_params(labelbottom=False)
    axes[-1].set_xlabel(f"patient's right ← x → patient's left ({unit_text(unit)})")
    return axes[0]


def _panels(ax: Any, k: int, view: tuple[float, float, float, float]) -> list[Any]:
    """k panels stacked vertically: a new figure sized to the view, or ``ax``'s place split."""
    from dentalkit.plot._common import text_scale
    from dentalkit.plot._layout import MAX_HEIGHT_MM, MM_PER_INCH, figure

    # each panel's axes as tall as the view's aspect asks at the figure's width (less
    # ~23 mm of tick labels), plus the gap between panels, the legend above the first and
    # the x label under the last
    aspect = (view[3] - view[2]) / (view[1] - view[0])
    t = text_scale()

    def height(width_mm: float) -> float:
        h = k * ((width_mm - 23.0 * t) * aspect + 6.0 * t) + 26.0 * t
        return min(max(h, 50.0), MAX_HEIGHT_MM)

    if ax is None:
        fig = figure("single")
        fig.set_figheight(height(fig.get_figwidth() * MM_PER_INCH) / MM_PER_INCH)
        return list(fig.subplots(k, 1, squeeze=False)[:, 0])
    fig = ax.figure
    if len(fig.axes) == 1 and ax.get_subplotspec() is not None:
        # the figure is just this plot: give it the height the view needs
        fig.set_figheight(height(fig.get_figwidth() * MM_PER_INCH) / MM_PER_INCH)
    if k == 1:
        return [ax]
    spec = ax.get_subplotspec()
    if spec is None:  # an Axes not made on a grid: split its box
        boxes = [[0.0, 1.0 - (i + 1) / k + 0.04, 1.0, 1.0 / k - 0.08] for i in range(k)]
        return [ax.inset_axes(b) for b in boxes]
    ax.remove()
    sub = spec.subgridspec(k, 1)
    return [fig.add_subplot(sub[i, 0]) for i in range(k)]
