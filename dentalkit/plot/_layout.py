"""Layout of journal figures: sizes in millimetres, saving, pixel views, clipped text.

The machinery behind :mod:`dentalkit.plot.style`'s :func:`figure` and :func:`savefig`
(which re-exports the public names of this module): figure sizes at journal column
widths, saving as vector and raster files at a final size, keeping the view of image
axes centred in their box whatever size a figure is drawn at, and finding text that
a saved file would cut off. It holds no colours or rcParams of the house style, and
imports nothing from the rest of ``dentalkit.plot``.
"""

from __future__ import annotations

import io
import logging
import weakref
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from dentalkit.errors import DentalkitWarning, InputError, require

__all__ = [
    "JOURNAL_WIDTHS_MM",
    "MM_PER_INCH",
    "PIXEL_VIEWS",
    "axes_box_inches",
    "clipped_text",
    "figure",
    "images_hidden",
    "pin_pixel_view",
    "root_figure",
    "savefig",
    "settle_pixel_views",
    "width_mm",
]

log = logging.getLogger("dentalkit")

MM_PER_INCH = 25.4

#: Journal column widths in millimetres: typical single- and double-column widths
#: (publishers differ by a few mm, e.g. Elsevier's artwork guide gives 90/190 mm and
#: Springer's 84/174 mm); pass a number of millimetres for a journal's exact width.
JOURNAL_WIDTHS_MM: dict[str, float] = {"single": 85.0, "double": 180.0}
#: Largest figure height in millimetres (the house style's; see :mod:`dentalkit.plot.house`).
MAX_HEIGHT_MM = 225.0


def width_mm(width: str | float) -> float:
    """Journal width name (``"single"``, ``"double"``) or millimetres → millimetres."""
    if isinstance(width, str):
        try:
            return JOURNAL_WIDTHS_MM[width]
        except KeyError:
            raise InputError(
                f"width {width!r} is not a journal width; use one of "
                f"{sorted(JOURNAL_WIDTHS_MM)} or a number of millimetres"
            ) from None
    try:
        mm = float(width)
    except (TypeError, ValueError):
        raise InputError(
            f"width must be 'single', 'double' or millimetres, got {width!r}"
        ) from None
    if not 20.0 <= mm <= 300.0:
        raise InputError(f"width {mm} mm is outside 20–300 mm; give millimetres, not inches")
    return mm


def figure(width: str | float = "single", height: float | None = None, **kwargs: Any):
    """A new matplotlib Figure at a journal width.

    Parameters
    ----------
    width : {"single", "double"} or float
        85 mm, 180 mm, or a width in millimetres.
    height : float, optional
        Height in millimetres; default 3/4 of the width.
    **kwargs
        Passed to :func:`matplotlib.pyplot.figure` (default ``layout="constrained"``).

    Returns
    -------
    matplotlib.figure.Figure
    """
    import matplotlib.pyplot as plt

    w = width_mm(width)
    h = 0.75 * w if height is None else float(height)
    if h <= 0:
        raise InputError(f"height must be positive millimetres, got {height!r}")
    kwargs.setdefault("layout", "constrained")
    return plt.figure(figsize=(w / MM_PER_INCH, h / MM_PER_INCH), **kwargs)


_FORMATS = ("pdf", "svg", "png", "tiff")
_RASTER = ("png", "tiff")


def savefig(
    fig: Any,
    path: str | Path,
    width: str | float | None = "single",
    *,
    height: float | None = None,
    dpi: int = 600,
    formats: Sequence[str] | None = None,
    transparent: bool = False,
) -> list[Path]:
    """Save a figure at a journal width, as vector (PDF, SVG) and raster (PNG, TIFF) files.

    Parameters
    ----------
    fig : matplotlib Figure, Axes or SubFigure
        What to save (an Axes saves its figure).
    path : str or Path
        Output path. With a suffix (``fig1.pdf``) and no ``formats``, that format
        only; without one (``figures/fig1``), one file per format.
    width : {"single", "double"}, float or None
        Final width: 85 mm, 180 mm, or millimetres. ``None`` keeps the figure's size.
    height : float, optional
        Final height in millimetres; default keeps the figure's aspect ratio. A figure
        taller than :data:`MAX_HEIGHT_MM` (225 mm) is saved at that height, with a
        warning.
    dpi : int
        Resolution of the raster formats (and of images embedded in vector
        formats), 300–1200; default 600 (combination artwork; line art may need
        1000–1200).
    formats : sequence of {"pdf", "svg", "png", "tiff"}, optional
        Default: the path's suffix, else all four.
    transparent : bool
        Transparent background (PNG/SVG/PDF only; TIFF is always flattened on white).

    Returns
    -------
    list of Path
        The files written, in ``formats`` order.

    Warns
    -----
    DentalkitWarning
        When text would be cut off at the figure's edge at the final size (see
        :func:`clipped_text`), naming it.

    Notes
    -----
    Text stays text: TrueType fonts are embedded in PDF (``pdf.fonttype`` 42) and
    SVG text is not converted to paths, so journals and editors can edit it.
    TIFF files are RGB (no alpha channel), LZW-compressed, with the resolution
    tag set to ``dpi``; they need Pillow. The figure's size is restored after
    saving, and the caller's rcParams are not changed.
    """
    import matplotlib as mpl

    fig = root_figure(fig)
    if not 300 <= int(dpi) <= 1200:
        raise InputError(f"dpi={dpi} is outside 300–1200 (journal artwork resolutions)")
    path = Path(path)
    suffix = path.suffix.lower().lstrip(".")
    if formats is None:
        formats = (suffix,) if suffix else _FORMATS
    formats = tuple(f.lower().lstrip(".") for f in formats)
    bad = [f for f in formats if f not in _FORMATS]
    if bad:
        raise InputError(f"unsupported format(s) {bad}; choose from {list(_FORMATS)}")
    stem = path.with_suffix("") if suffix in _FORMATS else path
    if "tiff" in formats:
        require("PIL", "sandbox")

    old = fig.get_size_inches().copy()
    if width is not None:
        w = width_mm(width) / MM_PER_INCH
        h = height / MM_PER_INCH if height is not None else w * old[1] / old[0]
        fig.set_size_inches(w, h)
    elif height is not None:
        fig.set_size_inches(old[0], height / MM_PER_INCH)
    if fig.get_figheight() * MM_PER_INCH > MAX_HEIGHT_MM + 0.05:
        import warnings

        warnings.warn(
            f"the figure is {fig.get_figheight() * MM_PER_INCH:.0f} mm tall at "
            f"{fig.get_figwidth() * MM_PER_INCH:.0f} mm; it is saved {MAX_HEIGHT_MM:g} mm tall, "
            "the house style's largest height (give height= or a wider width)",
            DentalkitWarning,
            stacklevel=2,
        )
        fig.set_figheight(MAX_HEIGHT_MM / MM_PER_INCH)
    settle_pixel_views(fig)
    from dentalkit import __version__

    cut = clipped_text(fig)
    if cut:
        import warnings

        names = "; ".join(repr(t) for t in cut[:3]) + (" …" if len(cut) > 3 else "")
        warnings.warn(
            f"text runs past the figure's edge at {fig.get_size_inches()[0] * MM_PER_INCH:.0f} "
            f"mm and will be cut off: {names}. Shorten it, break it into lines, or save wider",
            DentalkitWarning,
            stacklevel=2,
        )
    written: list[Path] = []
    rc = {
        "pdf.fonttype": 42,
        "ps.fonttype": 42,
        "svg.fonttype": "none",
        "svg.hashsalt": "dentalkit",
    }
    try:
        with mpl.rc_context(rc):
            for fmt in formats:
                out = stem.with_name(stem.name + "." + ("tif" if fmt == "tiff" else fmt))
                out.parent.mkdir(parents=True, exist_ok=True)
                if fmt == "tiff":
                    _save_tiff(fig, out, dpi)
                else:
                    fig.savefig(
                        out,
                        format=fmt,
                        dpi=dpi,
                        transparent=transparent,
                        metadata=_metadata(fmt, __version__),
                    )
                log.info("wrote %s", out)
                written.append(out)
    finally:
        fig.set_size_inches(old)
    return written


#: The view each pixel-data axes should show (x0, y0, x1, y1 in data units), registered by
#: the figure functions; see :func:`settle_pixel_views`.
PIXEL_VIEWS: weakref.WeakKeyDictionary[Any, tuple[float, float, float, float]] = (
    weakref.WeakKeyDictionary()
)
#: The limits settle_pixel_views last set on an axes (changed since: the caller's).
_SETTLED: weakref.WeakKeyDictionary[Any, tuple[tuple, tuple]] = weakref.WeakKeyDictionary()


@contextmanager
def images_hidden(fig: Any) -> Iterator[None]:
    """Hide the figure's images while it is only laid out (``draw_without_rendering``).

    A layout pass draws every artist with a null renderer, and an image is resampled even
    then (a radiograph: 5 megapixels, every pass). Images take no part in the layout, so
    passes run without them; they are shown again on exit.
    """
    from matplotlib.image import AxesImage

    shown = [im for im in fig.findobj(AxesImage) if im.get_visible()]
    for im in shown:
        im.set_visible(False)
    try:
        yield
    finally:
        for im in shown:
            im.set_visible(True)


def axes_box_inches(ax: Any) -> tuple[float, float]:
    """Width and height (inches) of ``ax``'s box as last laid out (before an aspect shrank it)."""
    pos = ax.get_position(original=True)
    return pos.width * ax.figure.get_figwidth(), pos.height * ax.figure.get_figheight()


def settle_pixel_views(fig: Any) -> None:
    """Pin each registered pixel view of ``fig`` to its box, centred, at the figure's size.

    Pixel axes keep the equal aspect with ``adjustable="datalim"``: matplotlib widens the
    view to the shape of the axes box. It does so from the *current* view at every layout
    pass, and constrained layout makes several passes per draw, so the widening drifts —
    off centre and beyond the box — when a figure is drawn at several sizes (``savefig``
    resizes it). Setting the limits to the box widened once, symmetrically, to the axes
    box's aspect leaves matplotlib nothing to change. Limits the caller set are kept.

    Once pinned, an axes keeps its aspect with ``adjustable="box"``: its limits are fixed
    now, and with ``"datalim"`` matplotlib would override fixed limits (logging "Ignoring
    fixed x limits to fulfill fixed data aspect …") whenever a later layout pass, or the
    text metrics of another output format, moves the box by a hair. With ``"box"`` the box
    gives way by that hair instead. The box is measured as the layout placed it
    (``get_position(original=True)``), before any aspect adjustment.
    """
    pixel = [(ax, PIXEL_VIEWS[ax]) for ax in fig.axes if ax in PIXEL_VIEWS]
    if not pixel:  # nothing to settle: no layout passes for other figures
        return
    with images_hidden(fig):
        _settle(fig, pixel)


def pin_pixel_view(ax: Any) -> None:
    """Set ``ax``'s limits to its registered pixel view exactly, and keep them.

    For a figure sized to the view (:func:`dentalkit.plot._common.fit_height_to_view`):
    its axes box has the view's shape already, so the view is shown as it is — no
    widening, which would accumulate over constrained layout's passes at every later
    draw. The axes keeps the aspect with ``adjustable="box"`` (the box gives way by the
    hair a later pass moves it), and the limits count as :func:`settle_pixel_views`' own:
    saved at another size, the view is widened to the new box, centred.
    """
    view = PIXEL_VIEWS.get(ax)
    if view is None:
        return
    x0, y0, x1, y1 = view
    ax.set_xlim(x0, x1)
    ax.set_ylim(y1, y0)  # y down
    ax.set_adjustable("box")
    _SETTLED[ax] = (ax.get_xlim(), ax.get_ylim())


def _settle(fig: Any, pixel: list) -> None:
    for _ in range(3):  # the layout at this size, the limits for it; new ticks move it a bit
        fig.draw_without_rendering()
        for ax, view in pixel:
            ours = _SETTLED.get(ax)
            if ours is None:
                if not (ax.get_autoscalex_on() and ax.get_autoscaley_on()):
                    continue  # limits set by the caller
            elif ours != (ax.get_xlim(), ax.get_ylim()):
                continue  # changed by the caller since we set them
            x0, y0, x1, y1 = view
            pos = ax.get_position(original=True)  # the layout's box, before the aspect
            box_w, box_h = pos.width * fig.get_figwidth(), pos.height * fig.get_figheight()
            if not (box_w > 0 and box_h > 0 and x1 > x0 and y1 > y0):
                continue
            # widen one direction, centred, to the box's shape; the other is the view itself
            cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
            if (y1 - y0) / (x1 - x0) < box_h / box_w:
                half = (x1 - x0) * box_h / box_w / 2
                ax.set_xlim(x0, x1)
                ax.set_ylim(cy + half, cy - half)  # y down
            else:
                half = (y1 - y0) * box_w / box_h / 2
                ax.set_xlim(cx - half, cx + half)
                ax.set_ylim(y1, y0)  # y down
            ax.set_adjustable("box")  # fixed limits: the box keeps the aspect from now on
            _SETTLED[ax] = (ax.get_xlim(), ax.get_ylim())


def clipped_text(fig: Any, tolerance_pt: float = 0.5) -> list[str]:
    """Texts of ``fig`` that run past its edges at its current size (so a file would cut them).

    The figure is laid out without rendering; if the bounding box of everything drawn
    (what ``bbox_inches="tight"`` would use) leaves the figure, the texts that stick out
    are named. Axis labels centred under an axes pushed aside by long tick labels are
    the usual case.

    Parameters
    ----------
    fig : matplotlib Figure, SubFigure or Axes
    tolerance_pt : float
        Overhang (points) still accepted: antialiasing and rounding.

    Returns
    -------
    list of str
        The offending texts (empty when everything fits).

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import matplotlib.pyplot as plt
    >>> fig, ax = plt.subplots(figsize=(2, 1.5), layout="constrained")
    >>> _ = ax.set_xlabel("a label far too long to fit under such a small axes, surely")
    >>> clipped_text(fig)
    ['a label far too long to fit under such a small axes, surely']
    >>> _ = ax.set_xlabel("short")
    >>> clipped_text(fig)
    []
    >>> plt.close(fig)
    """
    from matplotlib.text import Text

    fig = root_figure(fig)
    with images_hidden(fig):
        fig.draw_without_rendering()
    renderer = fig.canvas.get_renderer()
    tol = tolerance_pt / 72.0 * fig.dpi  # display units (pixels)
    box = fig.bbox
    tight = fig.get_tightbbox(renderer)
    if tight is None:
        return []
    inch = fig.dpi
    if (
        tight.x0 * inch >= box.x0 - tol
        and tight.y0 * inch >= box.y0 - tol
        and tight.x1 * inch <= box.x1 + tol
        and tight.y1 * inch <= box.y1 + tol
    ):
        return []
    # labels of ticks outside the view limits exist but are not drawn
    hidden = set()
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            lo, hi = sorted(axis.get_view_interval())
            slack = 1e-9 * max(abs(lo), abs(hi), 1.0)
            for tick in [*axis.get_major_ticks(), *axis.get_minor_ticks()]:
                if not lo - slack <= tick.get_loc() <= hi + slack:
                    hidden.update((id(tick.label1), id(tick.label2)))
    out = []
    for t in fig.findobj(Text):
        if id(t) in hidden or not (t.get_visible() and t.get_text().strip() and t.get_in_layout()):
            continue
        e = t.get_window_extent(renderer)
        if e.width == 0 or e.height == 0:
            continue
        if e.x0 < box.x0 - tol or e.y0 < box.y0 - tol or e.x1 > box.x1 + tol or e.y1 > box.y1 + tol:
            out.append(t.get_text())
    return out


def root_figure(obj: Any):
    """The top-level Figure of a Figure, SubFigure or Axes."""
    from matplotlib.figure import Figure

    seen = 0
    while not isinstance(obj, Figure):
        parent = getattr(obj, "figure", None)
        if parent is None or parent is obj or seen > 8:
            raise InputError(f"expected a matplotlib Figure or Axes, got {type(obj).__name__}")
        obj, seen = parent, seen + 1
    return obj


def _metadata(fmt: str, version: str) -> dict[str, Any]:
    creator = f"dentalkit {version} (matplotlib)"
    if fmt == "pdf":
        return {"Creator": creator, "CreationDate": None}
    if fmt == "svg":
        return {"Creator": creator, "Date": None}
    return {"Software": creator}


def _save_tiff(fig: Any, out: Path, dpi: int) -> None:
    from PIL import Image

    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, facecolor="white", transparent=False)
    buf.seek(0)
    with Image.open(buf) as img:
        img.convert("RGB").save(out, format="TIFF", compression="tiff_lzw", dpi=(dpi, dpi))
