"""Labels on the data that overlap no other label (private).

Each label has candidate placements (an anchor in data coordinates, an offset in points
and an alignment). Labels are placed in order, greedily, in display space: the first
candidate of least cost whose text box meets no placed label and stays inside the axes
wins. The cost counts the obstacles the box covers (line segments it crosses, points it
hides). Text sizes are measured once per label, so trying a candidate is arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["Candidate", "compass", "place_labels"]


@dataclass(frozen=True)
class Candidate:
    """A placement: text at ``xy`` (data) moved by ``offset`` (points), aligned ``ha``/``va``."""

    xy: tuple[float, float]
    offset: tuple[float, float]
    ha: str
    va: str


def compass(xy: tuple[float, float], radii: Sequence[float] = (3.0, 7.0)) -> list[Candidate]:
    """Eight directions around a point at each radius (points), east first."""
    out = []
    for r in radii:
        for a in np.deg2rad(np.arange(0, 360, 45)):
            dx, dy = r * np.cos(a), r * np.sin(a)
            ha = "left" if dx > 0.5 else ("right" if dx < -0.5 else "center")
            va = "bottom" if dy > 0.5 else ("top" if dy < -0.5 else "center")
            out.append(Candidate(tuple(xy), (float(dx), float(dy)), ha, va))
    return out


def _box(c: Candidate, size: tuple[float, float], to_display, pt: float) -> np.ndarray:
    """(x0, y0, x1, y1) of the text box of candidate ``c`` in display units."""
    x, y = to_display([c.xy])[0]
    x += c.offset[0] * pt
    y += c.offset[1] * pt
    w, h = size
    x0 = x - {"left": 0.0, "center": w / 2, "right": w}[c.ha]
    y0 = y - {"bottom": 0.0, "center": h / 2, "top": h, "baseline": 0.2 * h}[c.va]
    return np.array([x0, y0, x0 + w, y0 + h])


def _crossings(box: np.ndarray, segments: np.ndarray) -> int:
    """How many segments (n, 2, 2) meet the rectangle (Liang–Barsky clipping, vectorized)."""
    if not len(segments):
        return 0
    p0, p1 = segments[:, 0], segments[:, 1]
    d = p1 - p0
    t0 = np.zeros(len(d))
    t1 = np.ones(len(d))
    ok = np.ones(len(d), dtype=bool)
    for k, (lo, hi) in enumerate(((box[0], box[2]), (box[1], box[3]))):
        for p, q in ((-d[:, k], p0[:, k] - lo), (d[:, k], hi - p0[:, k])):
            parallel = np.abs(p) < 1e-12
            ok &= ~(parallel & (q < 0))
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(parallel, 0.0, q / np.where(parallel, 1.0, p))
            t0 = np.where(~parallel & (p < 0), np.maximum(t0, r), t0)
            t1 = np.where(~parallel & (p > 0), np.minimum(t1, r), t1)
    return int(np.sum(ok & (t0 <= t1)))


def place_labels(
    ax: Any,
    texts: Sequence[str],
    candidates: Sequence[Sequence[Candidate]],
    *,
    segments: np.ndarray | None = None,
    points: np.ndarray | None = None,
    pad_pt: float = 1.0,
    occupied: list[np.ndarray] | None = None,
    **text_kw: Any,
) -> list[Any]:
    """Add each text at its best candidate; return the Text artists, in order.

    Parameters
    ----------
    ax : matplotlib Axes
        With its limits and size final (placement is decided in display space).
    texts : sequence of str
    candidates : sequence of sequences of Candidate
        Per text, in order of preference.
    segments : array (n, 2, 2), optional
        Line segments in data coordinates that labels should not cross.
    points : array (m, 2), optional
        Points in data coordinates that labels should not hide.
    pad_pt : float
        Space kept between labels (points).
    occupied : list, optional
        Display boxes of labels placed by earlier calls (labels of another style); the
        boxes of this call's labels are appended to it.
    **text_kw
        Passed to :meth:`matplotlib.axes.Axes.annotate` (``fontsize``, ``color``,
        ``bbox`` …).
    """
    fig = ax.get_figure(root=True)
    renderer = fig.canvas.get_renderer()
    to_display = ax.transData.transform
    pt = fig.dpi / 72.0
    pad = pad_pt * pt
    frame = ax.get_window_extent(renderer)
    segs = (
        to_display(np.asarray(segments, float).reshape(-1, 2)).reshape(-1, 2, 2)
        if segments is not None and len(segments)
        else np.zeros((0, 2, 2))
    )
    pts = (
        to_display(np.asarray(points, float).reshape(-1, 2))
        if points is not None and len(points)
        else np.zeros((0, 2))
    )
    placed: list[np.ndarray] = [] if occupied is None else occupied
    artists = []
    for text, options in zip(texts, candidates, strict=True):
        if not options:
            continue
        first = options[0]
        artist = ax.annotate(
            text,
            first.xy,
            xytext=first.offset,
            textcoords="offset points",
            ha=first.ha,
            va=first.va,
            **text_kw,
        )
        ext = artist.get_window_extent(renderer)
        size = (ext.width + 2 * pad, ext.height + 2 * pad)
        best, best_cost = None, None
        for c in options:
            box = _box(c, size, to_display, pt)
            inside = (
                box[0] >= frame.x0
                and box[1] >= frame.y0
                and box[2] <= frame.x1
                and box[3] <= frame.y1
            )
            clash = any(
                box[0] < o[2] and o[0] < box[2] and box[1] < o[3] and o[1] < box[3] for o in placed
            )
            if clash or not inside:
                continue
            hidden = int(
                np.sum(
                    (pts[:, 0] > box[0])
                    & (pts[:, 0] < box[2])
                    & (pts[:, 1] > box[1])
                    & (pts[:, 1] < box[3])
                )
            )
            cost = _crossings(box, segs) + 2 * hidden
            if best_cost is None or cost < best_cost:
                best, best_cost = c, cost
                if cost == 0:
                    break
        if best is None:  # nowhere free: the first choice, and the PDF test will say so
            best = first
        artist.xy = best.xy
        artist.set_position(best.offset)
        artist.set_ha(best.ha)
        artist.set_va(best.va)
        placed.append(_box(best, size, to_display, pt))
        artists.append(artist)
    return artists
