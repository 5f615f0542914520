"""Figures of landmark and measure agreement (matplotlib).

Every function takes ``ax=None`` (a new figure when omitted) and returns the Axes
(:func:`bland_altman_grid` returns the Figure). Colours are the Okabe–Ito palette of
:mod:`dentalkit.plot.style`, which stays distinguishable with the common colour-vision
deficiencies (Okabe & Ito 2008, *Color Universal Design*; Wong 2011, *Nat Methods*
8:441); sizes and fonts follow the house style (``with dentalkit.plot.style():``).

- :func:`landmark_errors` — per-landmark test − reference offsets drawn around each
  landmark's mean position, with 95 % ellipses, over the mean reference tracing.
- :func:`bland_altman` / :func:`bland_altman_grid` — difference against mean, bias and
  limits of agreement with their confidence intervals as bands.
- :func:`sdr_bars` — success detection rate per landmark and radius, Wilson intervals.

Examples
--------
>>> import pandas as pd
>>> from dentalkit import agreement
>>> from dentalkit.plot import agreement as plot_agreement
>>> ref = pd.DataFrame({"patient_id": list("abcd"), "measure": "SNA", "value": [80.0, 82, 84, 86]})
>>> res = agreement.measure(ref, ref.assign(value=[81.0, 82, 85, 86]), errors="collect")
>>> ax = plot_agreement.bland_altman(res, "SNA")
>>> ax.get_ylabel()
'Test − reference'
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats as sps

from dentalkit.errors import InputError
from dentalkit.plot._common import new_axes, text_scale
from dentalkit.plot._layout import figure
from dentalkit.plot.house import ci_text, fontsize, unit_text, with_unit
from dentalkit.plot.style import OKABE_ITO

__all__ = [
    "LATERAL_LINKS",
    "OKABE_ITO",
    "bland_altman",
    "bland_altman_grid",
    "landmark_errors",
    "sdr_bars",
]

_RADIUS_COLOURS = [
    OKABE_ITO[c]
    for c in ("blue", "sky_blue", "bluish_green", "orange", "reddish_purple", "vermillion")
]

#: Lines drawn between named lateral landmarks to sketch the mean tracing (drawn when
#: both ends are present): cranial base, Frankfort and palatal planes, ramus and
#: mandibular border, symphysis, incisors and soft-tissue profile.
LATERAL_LINKS = (
    ("S", "N"),
    ("Po", "Or"),
    ("PNS", "ANS"),
    ("S", "Ar"),
    ("Ar", "Go"),
    ("Go", "Me"),
    ("Me", "Gn"),
    ("Gn", "Pog"),
    ("Pog", "B"),
    ("ANS", "A"),
    ("A", "U1_tip"),
    ("B", "L1_tip"),
    ("Sn", "Ls"),
    ("Ls", "Li"),
    ("Li", "Pog'"),
)


def _axes(ax, size_mm=(85.0, 65.0)):
    """``ax``, or a new journal-column figure (see :func:`dentalkit.plot.style.figure`)."""
    return new_axes(ax, size_mm)


def _tidy(ax) -> None:
    for side in ("top", "right"):
        ax.spines[side].set_visible(False)


def _ellipse_axes(cov: np.ndarray, level: float) -> tuple[float, float, float]:
    """Width, height (full axes) and angle (deg) of the ``level`` ellipse of N(0, cov)."""
    vals, vecs = np.linalg.eigh(cov)
    vals = np.clip(vals, 0.0, None)
    k = np.sqrt(sps.chi2.ppf(level, 2))
    angle = float(np.degrees(np.arctan2(vecs[1, 1], vecs[0, 1])))
    return 2 * k * float(np.sqrt(vals[1])), 2 * k * float(np.sqrt(vals[0])), angle


def landmark_errors(
    result: Any,
    *,
    ax=None,
    view: str = "lateral",
    magnify: float = 5.0,
    level: float = 0.95,
    names: Sequence[str] | None = None,
    links: Sequence[tuple[str, str]] | None = None,
    label: bool = True,
):
    """Offsets (test − reference) around each landmark's mean position, with ellipses.

    Parameters
    ----------
    result : LandmarkAgreement
        From :func:`dentalkit.agreement.landmarks`.
    ax : matplotlib Axes, optional
    view : {"lateral", "frontal"}
    magnify : float
        Offsets and ellipses are drawn ``magnify`` times larger than the tracing (the
        factor is written on the figure); the tracing itself is at scale.
    level : float
        Coverage of the ellipses: the ``level`` prediction ellipse of a bivariate
        normal with the offsets' mean and covariance (radius √χ²₂(level)).
    names : list of str, optional
        Only these landmarks.
    links : list of (str, str), optional
        Landmark pairs joined to sketch the tracing (default :data:`LATERAL_LINKS` for
        lateral; contour groups ``<group>_NN`` are always drawn as polylines).
    label : bool
        Write the landmark names.

    Returns
    -------
    matplotlib Axes
    """
    from matplotlib.patches import Ellipse

    by = result.by
    p = result.pairs[result.pairs["view"].astype(object) == view]
    if names is not None:
        p = p[p[by].astype(object).isin(list(names))]
    if not len(p):
        raise InputError(f"no paired landmarks of view {view!r} to draw")
    ax = _axes(ax, (85.0, 85.0))
    key = p[by].astype(object).to_numpy()
    mean = p.groupby(key, sort=False)[["frame_x", "frame_y"]].mean()
    centre = mean.loc[key].to_numpy()
    off = p[["dx", "dy"]].to_numpy(float)
    unit = result.unit
    # mean tracing: contour polylines, then links between named landmarks
    grey = "#9A9A9A"
    groups: dict[str, list[tuple[int, str]]] = {}
    for n in mean.index:
        head, _, tail = str(n).rpartition("_")
        if head and tail.isdigit() and len(tail) == 2:
            groups.setdefault(head, []).append((int(tail), n))
    for members in groups.values():
        pts = mean.loc[[n for _, n in sorted(members)]].to_numpy()
        ax.plot(pts[:, 0], pts[:, 1], color=grey, lw=0.8, zorder=1)
    chosen = LATERAL_LINKS if links is None and view == "lateral" else (links or ())
    for a, b in chosen:
        if a in mean.index and b in mean.index:
            seg = mean.loc[[a, b]].to_numpy()
            ax.plot(seg[:, 0], seg[:, 1], color=grey, lw=0.8, zorder=1)
    ax.scatter(
        centre[:, 0] + magnify * off[:, 0],
        centre[:, 1] + magnify * off[:, 1],
        s=4,
        color=OKABE_ITO["sky_blue"],
        alpha=0.5,
        linewidths=0,
        zorder=2,
        label=f"offsets (×{magnify:g})",
    )
    n_ell = 0
    for n, grp in pd.DataFrame(off, columns=["dx", "dy"]).groupby(key, sort=False):
        if len(grp) < 3:
            continue
        bias = grp.mean().to_numpy()
        w, h, angle = _ellipse_axes(np.cov(grp.to_numpy().T), level)
        ax.add_patch(
            Ellipse(
                mean.loc[n].to_numpy() + magnify * bias,
                magnify * w,
                magnify * h,
                angle=angle,
                fill=False,
                edgecolor=OKABE_ITO["vermillion"],
                lw=1.0,
                zorder=3,
                label=f"{level * 100:g} % ellipse" if n_ell == 0 else None,
            )
        )
        n_ell += 1
    ax.scatter(
        mean["frame_x"], mean["frame_y"], s=10, color="black", zorder=4, label="mean reference"
    )
    if label:
        for n, (x, y) in mean.iterrows():
            if n in groups or any(str(n).startswith(g + "_") for g in groups):
                continue
            ax.annotate(
                str(n),
                (x, y),
                xytext=(4, 4),
                textcoords="offset points",
                fontsize=fontsize("note"),
                zorder=5,
            )
    ax.set_aspect("equal", adjustable="datalim")
    if result.frame == "image":
        ax.invert_yaxis()
        ax.set_xlabel(f"x ({unit_text(unit)}, image)")
        ax.set_ylabel(f"y ({unit_text(unit)}, image, down)")
    else:
        ax.set_xlabel(
            f"{'anterior' if view == 'lateral' else 'patient left'} → ({unit_text(unit)})"
        )
        ax.set_ylabel(f"superior → ({unit_text(unit)})")
    ax.set_title(f"Landmark offsets, test − reference\n({view}; offsets ×{magnify:g})")
    ax.legend(frameon=False, loc="best")
    _tidy(ax)
    return ax


def _measure_rows(result: Any, measure: str, view: str | None):
    s = result.summary
    sel = s["measure"].astype(object) == measure
    if view is not None and "view" in s.columns:
        sel &= s["view"].astype(object) == view
    if not sel.any():
        raise InputError(
            f"measure {measure!r} is not in the agreement summary; have "
            f"{sorted(set(s['measure'].astype(str)))}"
        )
    row = s.loc[sel].iloc[0]
    p = result.pairs
    sel = p["measure"].astype(object) == measure
    if "view" in p.columns:
        sel &= p["view"].astype(object) == row["view"]
    pts = p[sel]
    return row, pts


def bland_altman(
    result: Any, measure: str, *, ax=None, view: str | None = None, label: bool = True
):
    """Bland–Altman plot of one measure: difference (test − reference) against the mean.

    Draws the pairs, a zero line, the bias and both limits of agreement, each with its
    confidence interval as a shaded band (values from ``result.summary``).

    Parameters
    ----------
    result : MeasureAgreement
        From :func:`dentalkit.agreement.measure`.
    measure : str
        Measure id (e.g. ``"ANB"``).
    ax : matplotlib Axes, optional
    view : str, optional
        When the measure exists in both views.
    label : bool
        Write the values of the bias and limits at the right edge.

    Returns
    -------
    matplotlib Axes
    """
    row, pts = _measure_rows(result, measure, view)
    ax = _axes(ax)
    unit = row["unit"] if isinstance(row["unit"], str) else None
    z = float(result.settings.get("agreement", 1.96))
    conf = float(result.settings.get("confidence", 0.95))
    blue, red = OKABE_ITO["blue"], OKABE_ITO["vermillion"]
    ax.axhline(0.0, color="#7F7F7F", lw=0.8, ls=":", zorder=1)
    bands = [
        (row["bias_ci_low"], row["bias_ci_high"], blue),
        (row["loa_low_ci_low"], row["loa_low_ci_high"], red),
        (row["loa_high_ci_low"], row["loa_high_ci_high"], red),
    ]
    for lo, hi, colour in bands:
        if np.isfinite(lo) and np.isfinite(hi):
            ax.axhspan(lo, hi, color=colour, alpha=0.15, lw=0, zorder=0)
    ax.axhline(row["bias"], color=blue, lw=1.4, zorder=2)
    for v in (row["loa_low"], row["loa_high"]):
        if np.isfinite(v):
            ax.axhline(v, color=red, lw=1.2, ls="--", zorder=2)
    ax.scatter(
        pts["mean"], pts["difference"], s=14, color="black", alpha=0.7, linewidths=0, zorder=3
    )
    if label:

        def num(v: float) -> str:  # typographic minus, as on the axes; the house's unit
            return with_unit(f"{v:.2f}".replace("-", "−"), unit)

        texts = [
            (row["bias"], f"bias {num(row['bias'])}", blue),
            (row["loa_high"], f"+{z:g} SD {num(row['loa_high'])}", red),
            (row["loa_low"], f"−{z:g} SD {num(row['loa_low'])}", red),
        ]
        for y, text, colour in texts:
            if np.isfinite(y):
                ax.annotate(
                    text,
                    (1.0, y),
                    xycoords=("axes fraction", "data"),
                    xytext=(-2, 2),
                    textcoords="offset points",
                    ha="right",
                    va="bottom",
                    fontsize=fontsize("note"),
                    color=colour,
                )
    u = f" ({unit_text(unit)})" if unit else ""
    ax.set_xlabel(f"Mean of reference and test{u}")
    ax.set_ylabel(f"Test − reference{u}")
    ax.set_title(f"{measure} (n = {row['n']}; bands: {ci_text(conf)})")
    _tidy(ax)
    return ax


def bland_altman_grid(
    result: Any,
    measures: Sequence[str] | None = None,
    *,
    ncols: int = 3,
    panel_mm: tuple[float, float] = (60.0, 50.0),
):
    """One Bland–Altman panel per measure (default all measures with ≥ 2 pairs).

    ``panel_mm`` is each panel's size in millimetres in the house style (three 60 mm
    panels fill a double journal column); larger fonts enlarge it in proportion.

    Returns
    -------
    matplotlib Figure
    """
    s = result.summary
    ids = (
        list(measures) if measures is not None else list(s.loc[s["n"] >= 2, "measure"].astype(str))
    )
    if not ids:
        raise InputError("no measure with at least 2 pairs to plot")
    ncols = max(1, min(ncols, len(ids)))
    nrows = -(-len(ids) // ncols)
    k = text_scale()
    fig = figure(min(300.0, k * panel_mm[0] * ncols), k * panel_mm[1] * nrows)
    axes = fig.subplots(nrows, ncols, squeeze=False)
    for ax, m in zip(axes.flat, ids, strict=False):
        bland_altman(result, m, ax=ax)
    for ax in axes.flat[len(ids) :]:
        ax.set_visible(False)
    return fig


def sdr_bars(
    result: Any,
    *,
    ax=None,
    view: str = "lateral",
    names: Sequence[str] | None = None,
    overall: bool = True,
):
    """Success detection rate per landmark, one bar per radius, with Wilson intervals.

    Parameters
    ----------
    result : LandmarkAgreement
        From :func:`dentalkit.agreement.landmarks` **with** ``mm_per_px`` (SDR radii
        are in mm).
    ax : matplotlib Axes, optional
    view : {"lateral", "frontal"}
    names : list of str, optional
        Only these landmarks (default all, in the summary's order).
    overall : bool
        Add the all-landmarks bars (no interval: landmarks of one image are not
        independent).

    Returns
    -------
    matplotlib Axes
    """
    from dentalkit.agreement import OVERALL

    if result.unit != "mm" or result.sdr.empty:
        raise InputError(
            "SDR needs millimetres: compute the agreement with mm_per_px (e.g. "
            "agreement.landmarks(ref, test, mm_per_px=0.1))"
        )
    by = result.by
    d = result.sdr[result.sdr["view"].astype(object) == view]
    items = [c for c in d[by].cat.categories if c != OVERALL and (d[by] == c).any()]
    if names is not None:
        items = [c for c in items if c in set(names)]
    if overall:
        items.append(OVERALL)
    if not items:
        raise InputError(f"no SDR rows of view {view!r} to draw")
    radii = sorted(d["radius_mm"].unique())
    ax = _axes(ax, (min(180.0, max(85.0, 2.3 * len(items) * len(radii) + 30.0)), 65.0))
    width = 0.8 / len(radii)
    x = np.arange(len(items))
    table = d.set_index([d[by].astype(object), "radius_mm"])
    for j, r in enumerate(radii):
        rows = table.reindex([(i, r) for i in items])
        h = rows["sdr_pct"].to_numpy(float)
        lo = rows["ci_low_pct"].to_numpy(float)
        hi = rows["ci_high_pct"].to_numpy(float)
        err = np.vstack(
            [np.where(np.isfinite(lo), h - lo, 0.0), np.where(np.isfinite(hi), hi - h, 0.0)]
        )
        err = np.clip(err, 0.0, None)  # Wilson limits at 0 %/100 % may miss by an ulp
        ax.bar(
            x + (j - (len(radii) - 1) / 2) * width,
            h,
            width=width,
            color=_RADIUS_COLOURS[j % len(_RADIUS_COLOURS)],
            label=f"≤ {r:g} mm",
            yerr=err,
            error_kw={"elinewidth": 0.6, "capsize": 0, "ecolor": "#333333"},
            zorder=2,
        )
    ax.set_xticks(x, [str(i) for i in items], rotation=60, ha="right", fontsize=fontsize("tick"))
    ax.set_ylim(0, 105)
    ax.set_ylabel("SDR (%)")
    ax.yaxis.grid(True, color="#E5E5E5", lw=0.6, zorder=0)
    ax.set_axisbelow(True)
    ax.set_title(
        f"Success detection rate ({view}; Wilson {ci_text(result.confidence)})",
        loc="left",
    )
    ax.legend(
        frameon=False,
        ncols=len(radii),
        loc="lower right",
        bbox_to_anchor=(1.0, 1.0),
        handlelength=1.0,
        columnspacing=1.0,
    )
    _tidy(ax)
    return ax
