"""One figure drawn in the house style at a declared width, saved, closed (private)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from dentalkit.errors import InputError
from dentalkit.plot._layout import JOURNAL_WIDTHS_MM, figure, savefig
from dentalkit.plot.house import DPI_RANGE, FORMATS
from dentalkit.plot.style import style

__all__ = ["render"]


def render(
    draw: Callable[[Any], Any],
    path: str | Path,
    *,
    width: str = "single",
    formats: Sequence[str] = ("pdf", "png"),
    dpi: int = 600,
) -> list[Path]:
    """Draw a figure in the house style at a declared width, save it, close it.

    The study's way to make a figure file: ``draw(ax)`` draws on the Axes of a new figure
    made inside :func:`dentalkit.plot.style` at the width's column (the figure functions of
    :mod:`dentalkit.plot` then fit the height to what they draw, within
    :data:`dentalkit.plot.house.MAX_HEIGHT_MM`), and :func:`dentalkit.plot.savefig` writes
    each format at that width.

    Parameters
    ----------
    draw : callable
        ``draw(ax)``, e.g. ``lambda ax: plot.ceph_wiggle(z, ax=ax)``.
    path : str or Path
        Output path without suffix (``figures/ceph_wiggle``): one file per format.
    width : {"single", "double"}
        A declared width of :data:`dentalkit.plot.house.JOURNAL_WIDTHS_MM` (85 or 180 mm).
    formats : sequence of {"pdf", "svg", "png", "tiff"}
    dpi : int
        Resolution of PNG and TIFF files and of images inside PDFs: the house style's
        range is 300–600 (:data:`dentalkit.plot.house.DPI_RANGE`); up to 1200 is accepted
        for line art a journal asks for at that resolution.

    Returns
    -------
    list of Path
        The files written, in ``formats`` order.
    """
    import matplotlib.pyplot as plt

    if width not in JOURNAL_WIDTHS_MM:
        raise InputError(
            f"width {width!r} is not a declared width; choose one of {sorted(JOURNAL_WIDTHS_MM)} "
            f"({', '.join(f'{k} {v:g} mm' for k, v in JOURNAL_WIDTHS_MM.items())})"
        )
    bad = [f for f in formats if str(f).lower().lstrip(".") not in FORMATS]
    if bad:
        raise InputError(f"unsupported format(s) {bad}; choose from {list(FORMATS)}")
    if not DPI_RANGE[0] <= int(dpi) <= 1200:
        raise InputError(f"dpi={dpi} is outside {DPI_RANGE[0]}–1200 (house style: 300–600)")
    with style():
        fig = figure(width)
        try:
            draw(fig.add_subplot())
            return savefig(fig, Path(path), width=width, formats=tuple(formats), dpi=dpi)
        finally:
            plt.close(fig)
