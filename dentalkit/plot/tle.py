"""Treatment-length figures: distributions by group, sensitivity curves, agreement.

- :func:`distribution` — predicted months per group: box, points and the mean with its
  bootstrap CI from :func:`dentalkit.tle.summarize`.
- :func:`sensitivity` — partial-dependence curves from :func:`dentalkit.tle.sensitivity`.
- :func:`bland_altman` — predicted − observed against their mean, bias and limits of
  agreement with CIs exactly as :func:`dentalkit.tle.calibration` computes them.
- :func:`calibration_plot` — observed against predicted with the identity line and the
  calibration (OLS) line of :func:`dentalkit.tle.calibration`.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from dentalkit import tle as _tle
from dentalkit.errors import InputError
from dentalkit.plot._common import new_axes, number, place_legend, require_columns
from dentalkit.plot._layout import figure
from dentalkit.plot.house import (
    LINE_PT,
    MIN_N_BOX,
    OKABE_ITO,
    ci_text,
    fontsize,
    group_colours,
    group_order,
    variable_label,
)
from dentalkit.tle.stats import PREDICTED, paired_months

__all__ = ["bland_altman", "calibration_plot", "distribution", "sensitivity"]

_MONTHS = "Predicted treatment length (months)"


def distribution(
    estimates: pd.DataFrame,
    by: str | None = None,
    *,
    value: str = PREDICTED,
    summary: pd.DataFrame | None = None,
    points: bool = True,
    n_resamples: int = 9999,
    seed: int = 0,
    ax: Any = None,
) -> Any:
    """Distribution of predicted treatment length, overall or per group.

    Parameters
    ----------
    estimates : DataFrame
        Output of :func:`dentalkit.tle.estimate` (or any table with ``value`` in
        months), with the ``by`` column.
    by : str, optional
        Group column (e.g. ``"malocclusion_class"``); categories keep their order.
    value : str
        Column of months (default ``estimate_length_months``).
    summary : DataFrame, optional
        :func:`dentalkit.tle.summarize` of the same table and ``by`` (computed when
        omitted, with ``n_resamples`` and ``seed``).
    points : bool
        Draw every estimate (deterministic horizontal jitter).
    n_resamples, seed
        Passed to :func:`dentalkit.tle.summarize` when it is computed here.
    ax : matplotlib Axes, optional

    Returns
    -------
    matplotlib Axes
        One box per group of at least :data:`dentalkit.plot.house.MIN_N_BOX` patients
        (median, quartiles by linear interpolation as in ``summary``, whiskers to the
        furthest value within 1.5 IQR of the box — Tukey 1977); smaller groups are
        drawn as their points only (a box of a handful of values misleads). Every
        estimate is a point, and the mean is a diamond with its bootstrap CI. Groups come
        in the house style's order and colours (malocclusion classes I, II/1, II/2, III).
        The legend, above the axes, explains each mark.
    """
    require_columns(estimates, [value] + ([by] if by else []), "estimates")
    table = estimates[estimates[value].notna()]
    if summary is None:
        summary = _tle.summarize(table, by, value=value, n_resamples=n_resamples, seed=seed)
    require_columns(
        summary,
        ([by] if by else []) + ["mean", "ci_low", "ci_high"],
        "summary",
        "Pass the output of dentalkit.tle.summarize() for the same table and by.",
    )
    if by is None:
        groups = [("all", table)]
        stats = summary.iloc[[0]].assign(_g="all")
    else:
        col = table[by]
        cats = (
            list(col.cat.categories)
            if isinstance(col.dtype, pd.CategoricalDtype)
            else group_order(col.dropna().unique().tolist(), by)
        )
        groups = [(c, table[col == c]) for c in cats if (col == c).any()]
        stats = summary.assign(_g=summary[by])
    colours = group_colours([g for g, _ in groups], by)
    ax = new_axes(ax, (85.0, 65.0))
    data = [g[value].to_numpy(dtype=float) for _, g in groups]
    pos = np.arange(1, len(groups) + 1)
    boxed = [i for i, d in enumerate(data) if d.size >= MIN_N_BOX]
    if boxed:
        lw = LINE_PT["reference"]
        bp = ax.boxplot(
            [data[i] for i in boxed],
            positions=pos[boxed],
            widths=0.55,
            whis=1.5,
            showfliers=False,
            patch_artist=True,
            medianprops={"color": "black", "lw": LINE_PT["data"]},
            boxprops={"lw": lw},
            whiskerprops={"lw": lw},
            capprops={"lw": lw},
        )
        for i, box in zip(boxed, bp["boxes"], strict=True):
            box.set_facecolor(_light(colours[groups[i][0]]))
            box.set_gid(f"box:{groups[i][0]}")
    rng = np.random.default_rng(0)
    for i, d in enumerate(data):
        if not points and i in boxed:
            continue  # the box shows it; small groups always show their points
        jitter = rng.uniform(-0.16, 0.16, d.size)
        ax.scatter(
            pos[i] + jitter,
            d,
            s=5 if i in boxed else 9,
            color=colours[groups[i][0]],
            alpha=0.75,
            linewidths=0,
            zorder=3,
            gid=f"points:{groups[i][0]}",
        )
    for i, (g, _) in enumerate(groups):
        row = stats[stats["_g"].astype(str) == str(g)]
        if len(row):
            m, lo, hi = (float(row[c].iloc[0]) for c in ("mean", "ci_low", "ci_high"))
            ax.errorbar(
                pos[i] + 0.36,
                m,
                yerr=[[m - lo], [hi - m]] if np.isfinite(lo) else None,
                fmt="D",
                ms=3,
                color="black",
                elinewidth=0.8,
                capsize=1.5,
                zorder=4,
                gid=f"mean:{g}",
            )
    ax.set_xticks(pos, [f"{g}\n(n = {len(d)})" for (g, _), d in zip(groups, data, strict=True)])
    ax.set_xlim(0.4, len(groups) + 0.75)
    ax.set_ylabel(_MONTHS if value == PREDICTED else value)
    if by:
        ax.set_xlabel(variable_label(by) + " (n patients)")
    handles = [Line2D([], [], ls="", marker="o", ms=2.5, color="#555555", label="patients")]
    if boxed:
        handles.append(
            Patch(facecolor="#E0E0E0", edgecolor="black", lw=0.6,
                  label=f"box: median, quartiles, 1.5 IQR (n ≥ {MIN_N_BOX})")
        )  # fmt: skip
    handles.append(
        Line2D([], [], ls="", marker="D", ms=3, color="black",
               label=f"mean, {ci_text(0.95, 'bootstrap')}")
    )  # fmt: skip
    place_legend(ax, "above", ncols=2, handles=handles)
    return ax


def _light(colour: str, amount: float = 0.65) -> tuple[float, float, float]:
    from matplotlib.colors import to_rgb

    r, g, b = to_rgb(colour)
    return (r + (1 - r) * amount, g + (1 - g) * amount, b + (1 - b) * amount)


def sensitivity(
    curves: pd.DataFrame | Sequence[pd.DataFrame],
    *,
    individuals: bool = True,
    ax: Any = None,
) -> Any:
    """Partial-dependence curves of predicted treatment length.

    Parameters
    ----------
    curves : DataFrame or sequence of DataFrames
        Output of :func:`dentalkit.tle.sensitivity` (``curve``, ``patient``,
        ``column``, ``value``, ``estimate_length_months``), or several of them (a list,
        or concatenated): one panel per factor.
    individuals : bool
        Draw each patient's curve (thin grey) under the cohort mean.
    ax : matplotlib Axes, optional
        Only for a single factor.

    Returns
    -------
    matplotlib Axes, or Figure for several factors
        x: the factor's values (categories in the order tried, numbers on a numeric
        axis); y: predicted months. The mean curve (gid ``"mean:<column>"``) is the
        mean over patients at each value (Friedman 2001).
    """
    if isinstance(curves, list | tuple):
        parts = []
        for c in curves:
            c = c.copy(deep=False)
            c.attrs = {}  # problem tables in attrs would make pandas compare them
            parts.append(c)
        curves = pd.concat(parts, ignore_index=True)
    require_columns(
        curves,
        ["curve", "column", "value", PREDICTED],
        "curves",
        "Pass the output of dentalkit.tle.sensitivity().",
    )
    factors = list(pd.unique(curves["column"].astype(str)))
    if len(factors) > 1:
        if ax is not None:
            raise InputError(
                f"curves hold {len(factors)} factors {factors}; pass ax=None for a panel "
                "figure, or filter one factor"
            )
        ncols = min(3, len(factors))
        nrows = int(np.ceil(len(factors) / ncols))
        fig = figure(180.0 if ncols > 1 else 85.0, 55.0 * nrows)
        axes = fig.subplots(nrows, ncols, sharey=True, squeeze=False).ravel()
        for i, (a, f) in enumerate(zip(axes, factors, strict=False)):
            _one_factor(curves[curves["column"].astype(str) == f], a, individuals)
            if i % ncols:
                a.set_ylabel("")  # the rows share their y axis
        for a in axes[len(factors) :]:
            a.set_visible(False)
        return fig
    ax = new_axes(ax, (85.0, 60.0))
    _one_factor(curves, ax, individuals)
    return ax


def _one_factor(curves: pd.DataFrame, ax: Any, individuals: bool) -> None:
    column = str(curves["column"].iloc[0])
    kind = curves["curve"].astype(str)
    mean = curves[kind == "mean"]
    if not len(mean):
        raise InputError(f"curves of {column!r} have no 'mean' rows")
    values = list(mean["value"])
    numeric = all(
        isinstance(v, int | float | np.integer | np.floating) and not isinstance(v, bool)
        for v in values
    )
    pos = {v: float(v) for v in values} if numeric else {v: float(i) for i, v in enumerate(values)}
    if individuals:
        for _, c in curves[kind == "patient"].groupby("patient", sort=False):
            ax.plot(c["value"].map(pos), c[PREDICTED], color="#A8A8A8", lw=0.4, alpha=0.7, zorder=2)

    n = mean["n_patients"].max() if "n_patients" in mean.columns else None
    ax.plot(
        mean["value"].map(pos),
        mean[PREDICTED],
        color=OKABE_ITO["blue"],
        lw=LINE_PT["emphasis"],
        marker="o",
        ms=3,
        zorder=3,
        gid=f"mean:{column}",
        label="mean" + (f" of {int(n)} patients" if n is not None and pd.notna(n) else ""),
    )
    if not numeric:
        ax.set_xticks(list(pos.values()), [str(v) for v in values])
        ax.set_xlim(-0.4, len(values) - 0.6)
    ax.set_xlabel(variable_label(column))
    ax.set_ylabel(_MONTHS)
    handles, _ = ax.get_legend_handles_labels()
    if individuals:
        handles.append(Line2D([], [], color="#A8A8A8", lw=0.6, label="patients"))
    place_legend(ax, "above", ncols=2, handles=handles)


def bland_altman(
    estimates: pd.DataFrame | Sequence[float] | np.ndarray,
    observed_months: str | pd.Series | Sequence[float] | np.ndarray,
    *,
    predicted: str = PREDICTED,
    confidence_level: float = 0.95,
    loa_z: float = 1.96,
    loa_ci: str = "bland-altman-1999",
    ax: Any = None,
) -> Any:
    """Bland–Altman plot of predicted against observed treatment length.

    Parameters are those of :func:`dentalkit.tle.calibration`, which computes every
    line drawn here. Differences are **predicted − observed** (months).

    Returns
    -------
    matplotlib Axes
        Points at (mean of the pair, difference); horizontal lines at the bias (gid
        ``"bias"``) and the limits of agreement bias ± ``loa_z``·SD (gids
        ``"loa_lower"``, ``"loa_upper"``), each with its CI as a shaded band; the
        values are written at the right.

    References
    ----------
    Bland JM, Altman DG. Statistical methods for assessing agreement between two
    methods of clinical measurement. *Lancet* 1986;i:307–310. Bland JM, Altman DG.
    Measuring agreement in method comparison studies. *Stat Methods Med Res*
    1999;8:135–160.
    """
    stats = _tle.calibration(
        estimates,
        observed_months,
        predicted=predicted,
        confidence_level=confidence_level,
        loa_z=loa_z,
        loa_ci=loa_ci,
    )
    pred, obs = paired_months(estimates, observed_months, predicted)
    ok = np.isfinite(pred) & np.isfinite(obs)
    mean, diff = (pred[ok] + obs[ok]) / 2, pred[ok] - obs[ok]
    s = stats.set_index("statistic")
    ax = new_axes(ax, (85.0, 65.0))
    ax.scatter(
        mean, diff, s=6, color=OKABE_ITO["blue"], alpha=0.75, linewidths=0, zorder=3, gid="pairs"
    )
    texts = {"bias": "bias", "loa_lower": f"−{loa_z:g} SD", "loa_upper": f"+{loa_z:g} SD"}
    for name, ls in (("bias", "-"), ("loa_lower", "--"), ("loa_upper", "--")):
        est, lo, hi = (float(s.loc[name, c]) for c in ("estimate", "ci_low", "ci_high"))
        ax.axhline(est, color="black", lw=0.8, ls=ls, zorder=2, gid=name)
        if np.isfinite(lo) and np.isfinite(hi):
            ax.axhspan(
                lo,
                hi,
                color="#BDBDBD" if name == "bias" else "#E0E0E0",
                lw=0,
                zorder=1,
                gid=f"{name}_ci",
            )
        ax.annotate(
            f"{texts[name]}: {number(est, '+.1f')}",
            (1.0, est),
            xycoords=("axes fraction", "data"),
            xytext=(2, 0),
            textcoords="offset points",
            va="center",
            fontsize=fontsize("note"),
        )
    ax.axhline(0.0, color="#7F7F7F", lw=0.5, ls=":", zorder=1)
    ax.set_xlabel("Mean of predicted and observed (months)")
    ax.set_ylabel("Predicted − observed (months)")
    n = int(s.loc["n_pairs", "estimate"])
    ax.set_title(
        f"n = {n} patients; shaded: {ci_text(confidence_level)} of each line",
        loc="left",
        fontsize=fontsize("legend"),
        fontweight="normal",
    )
    return ax


def calibration_plot(
    estimates: pd.DataFrame | Sequence[float] | np.ndarray,
    observed_months: str | pd.Series | Sequence[float] | np.ndarray,
    *,
    predicted: str = PREDICTED,
    ax: Any = None,
) -> Any:
    """Observed against predicted months, with the identity and the calibration line.

    The calibration line is ``observed = intercept + slope × predicted`` from
    :func:`dentalkit.tle.calibration` (OLS); perfect calibration is the identity.

    Returns
    -------
    matplotlib Axes
        Equal scales on both axes; lines with gids ``"identity"`` and ``"calibration"``.
    """
    stats = _tle.calibration(estimates, observed_months, predicted=predicted).set_index("statistic")
    pred, obs = paired_months(estimates, observed_months, predicted)
    ok = np.isfinite(pred) & np.isfinite(obs)
    ax = new_axes(ax, (85.0, 80.0))
    ax.scatter(
        pred[ok],
        obs[ok],
        s=6,
        color=OKABE_ITO["blue"],
        alpha=0.75,
        linewidths=0,
        zorder=3,
        gid="pairs",
    )
    lo = float(min(pred[ok].min(), obs[ok].min()))
    hi = float(max(pred[ok].max(), obs[ok].max()))
    pad = 0.05 * (hi - lo or 1.0)
    grid = np.array([lo - pad, hi + pad])
    ax.plot(grid, grid, color="#7F7F7F", lw=0.7, ls="--", label="identity", gid="identity")
    b0 = float(stats.loc["calibration_intercept", "estimate"])
    b1 = float(stats.loc["calibration_slope", "estimate"])
    if np.isfinite(b0) and np.isfinite(b1):
        ax.plot(
            grid,
            b0 + b1 * grid,
            color=OKABE_ITO["vermillion"],
            lw=1.0,
            label=f"calibration: {number(b0, '.1f')} + {number(b1, '.2f')} × predicted",
            gid="calibration",
        )
    ax.set_xlim(*grid)
    ax.set_ylim(*grid)
    ax.set_aspect("equal")
    ax.set_xlabel(_MONTHS)
    ax.set_ylabel("Observed treatment length (months)")
    handles, _ = ax.get_legend_handles_labels()
    handles.append(
        Line2D([], [], ls="", marker="o", ms=2.5, color=OKABE_ITO["blue"], label="patients")
    )
    place_legend(ax, "above", ncols=2, handles=handles)
    return ax
