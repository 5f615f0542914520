"""House style, colour-blind-safe palette and journal-ready saving.

The colours and rcParams are defined here; sizing at journal widths, :func:`savefig`
and the layout of pixel views live in :mod:`dentalkit.plot._layout` and are
re-exported under their usual names. Nothing here changes matplotlib's global state on import. :func:`style` applies the
house rcParams only inside a ``with`` block (it is :func:`matplotlib.rc_context`),
and :func:`savefig` writes a figure at a journal column width without touching the
caller's rcParams or leaving the figure resized.

Examples
--------
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> from dentalkit import plot
>>> with plot.style():
...     fig = plot.figure("single", height=60)
...     ax = fig.subplots()
...     _ = ax.plot([0, 1], [0, 1])
>>> round(float(fig.get_figwidth()) * 25.4, 1)
85.0
>>> paths = plot.savefig(fig, "figure1", formats=("pdf",))  # doctest: +SKIP

Note that ``dentalkit.plot.style`` (the package attribute) is the context manager;
import this module's other names with ``from dentalkit.plot.style import ...``.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

# Sizing, saving and pixel-view layout live in ``_layout`` (no colours or rcParams
# there); their names stay importable from here (``X as X``: an explicit re-export).
from dentalkit.plot._layout import JOURNAL_WIDTHS_MM, figure, savefig
from dentalkit.plot._layout import MM_PER_INCH as MM_PER_INCH
from dentalkit.plot._layout import PIXEL_VIEWS as PIXEL_VIEWS
from dentalkit.plot._layout import axes_box_inches as axes_box_inches
from dentalkit.plot._layout import clipped_text as clipped_text
from dentalkit.plot._layout import root_figure as root_figure
from dentalkit.plot._layout import settle_pixel_views as settle_pixel_views
from dentalkit.plot._layout import width_mm as width_mm
from dentalkit.plot.house import CATEGORICAL, LINE_PT, OKABE_ITO, TEXT_PT

__all__ = [
    "CATEGORICAL",
    "DIVERGING_CMAP",
    "JOURNAL_WIDTHS_MM",
    "MISSING_COLOUR",
    "OKABE_ITO",
    "RC_PARAMS",
    "SEQUENTIAL_CMAP",
    "colour_for",
    "figure",
    "savefig",
    "style",
]

#: Sequential colour map for magnitudes (prevalence, area): viridis, perceptually
#: uniform and readable with colour-vision deficiencies and in greyscale (van der Walt
#: S, Smith N. matplotlib colormaps, SciPy 2015).
SEQUENTIAL_CMAP = "viridis"
#: Diverging colour map for signed values centred on a reference (z-scores):
#: ColorBrewer RdBu, reversed so that positive is red; rated colour-blind safe by
#: ColorBrewer (Harrower M, Brewer CA. *Cartogr J* 2003;40:27–37).
DIVERGING_CMAP = "RdBu_r"
#: Fill of cells and teeth without a value (not assessed, no data).
MISSING_COLOUR = "#D9D9D9"

#: The house rcParams applied by :func:`style`, from the declared house style
#: (:mod:`dentalkit.plot.house`): 7 pt sans-serif text, tick and legend text 6.5 pt, none
#: under 6 pt at final size; thin lines, no top/right spines, Okabe–Ito colour cycle,
#: embedded TrueType fonts in PDF/PS (editable text, never Type 3 bitmaps), text kept
#: as text in SVG, deterministic SVG ids, constrained layout. :func:`style` adds the
#: colour cycle (``axes.prop_cycle`` = :data:`CATEGORICAL`).
RC_PARAMS: dict[str, Any] = {
    "font.family": "sans-serif",
    "font.sans-serif": ["Arial", "Helvetica", "Liberation Sans", "DejaVu Sans"],
    "font.size": TEXT_PT["body"],
    "axes.titlesize": TEXT_PT["title"],
    "axes.labelsize": TEXT_PT["body"],
    "xtick.labelsize": TEXT_PT["tick"],
    "ytick.labelsize": TEXT_PT["tick"],
    "legend.fontsize": TEXT_PT["legend"],
    "legend.title_fontsize": TEXT_PT["legend"],
    "figure.titlesize": TEXT_PT["title"],
    "axes.linewidth": LINE_PT["axis"],
    "axes.spines.top": False,
    "axes.spines.right": False,
    "axes.titleweight": "bold",
    "axes.titlelocation": "left",
    "xtick.major.width": LINE_PT["axis"],
    "ytick.major.width": LINE_PT["axis"],
    "xtick.major.size": 2.5,
    "ytick.major.size": 2.5,
    "lines.linewidth": LINE_PT["data"],
    "lines.markersize": 3.0,
    "patch.linewidth": 0.5,
    "hatch.linewidth": 0.6,
    "legend.frameon": False,
    "legend.handlelength": 1.6,
    "image.cmap": SEQUENTIAL_CMAP,
    "figure.dpi": 150,
    "figure.constrained_layout.use": True,
    "savefig.dpi": 600,
    "pdf.fonttype": 42,
    "ps.fonttype": 42,
    "svg.fonttype": "none",
    "svg.hashsalt": "dentalkit",
}


def _rc(overrides: Mapping[str, Any] | None = None) -> dict[str, Any]:
    from cycler import cycler

    rc = dict(RC_PARAMS)
    rc["axes.prop_cycle"] = cycler(color=list(CATEGORICAL))
    if overrides:
        rc.update(overrides)
    return rc


@contextmanager
def style(rc: Mapping[str, Any] | None = None) -> Iterator[None]:
    """Apply dentalkit's house style inside a ``with`` block (or as a decorator).

    Parameters
    ----------
    rc : mapping, optional
        rcParams that override the house style (e.g. ``{"font.size": 8}``).

    Notes
    -----
    This is :func:`matplotlib.rc_context` with :data:`RC_PARAMS`: the previous
    rcParams are restored on exit, so nothing leaks into the rest of a session.
    Figures must be *created* inside the block to pick up sizes and layout; save
    them inside it too (or with :func:`savefig`, which sets the output parameters
    itself).

    Examples
    --------
    >>> import matplotlib
    >>> before = matplotlib.rcParams["font.size"]
    >>> with style():
    ...     matplotlib.rcParams["font.size"]
    7.0
    >>> matplotlib.rcParams["font.size"] == before
    True
    """
    import matplotlib as mpl

    with mpl.rc_context(_rc(rc)):
        yield


def colour_for(categories: Sequence[Any]) -> dict[Any, str]:
    """Map categories to palette colours in order (cycling after eight).

    >>> colour_for(["I", "II", "III"])["II"]
    '#E69F00'
    """
    return {c: CATEGORICAL[i % len(CATEGORICAL)] for i, c in enumerate(categories)}
