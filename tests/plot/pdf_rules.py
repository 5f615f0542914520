"""The house style's rules, read from a PDF as a journal's production office would read it.

The text of a figure PDF is extracted with pdfplumber (pdfminer.six): every character's
font size at printed size (a figure PDF is saved at its final size, so one PDF point is one
printed point) and its box on the page. Three rules of ``dentalkit.plot.house``:

- no text under :data:`~dentalkit.plot.house.MIN_TEXT_PT`;
- no text drawn over other text (the boxes of two characters overlap by more than a
  third of the narrower one's width and half its height: kerned neighbours and
  neighbouring lines never do);
- the page is a declared width (85 or 180 mm) and at most the maximum height (225 mm);
  and no text runs past the page's edge (it would be cut off).

The values are read from ``dentalkit.plot.house`` but the measuring is pdfplumber's, so
these rules check the files, not the code that wrote them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from dentalkit.plot.house import JOURNAL_WIDTHS_MM, MAX_HEIGHT_MM, MIN_TEXT_PT

MM_PER_PT = 25.4 / 72.0
#: Slack for a page size: PDF writers round the page box to 1e-4 pt.
PAGE_TOLERANCE_MM = 0.1
#: Two characters overlap when their boxes share more than this share of the narrower
#: one's width and of the lower one's height.
OVERLAP_WIDTH_SHARE = 1 / 3
OVERLAP_HEIGHT_SHARE = 1 / 2


@dataclass(frozen=True)
class Word:
    """A run of characters in one direction, with its box (points, y down) and font size."""

    text: str
    x0: float
    top: float
    x1: float
    bottom: float
    size: float


def _char_size(c: dict) -> float:
    """Font size (pt) of a character: its box height upright, its box width rotated by 90°."""
    return float(c["size"]) if c["upright"] else float(c["x1"] - c["x0"])


def _rotated_words(chars: list[dict]) -> list[Word]:
    """Group characters rotated by ±90° (y-axis labels) into words: same column, contiguous."""
    words: list[Word] = []
    column: list[dict] = []

    def flush() -> None:
        if column:
            words.append(
                Word(
                    "".join(c["text"] for c in column),
                    min(c["x0"] for c in column),
                    min(c["top"] for c in column),
                    max(c["x1"] for c in column),
                    max(c["bottom"] for c in column),
                    min(_char_size(c) for c in column),
                )
            )
            column.clear()

    for c in chars:  # in content-stream order: a label's characters follow each other
        if column:
            last = column[-1]
            same_column = abs(c["x0"] - last["x0"]) < 0.5 and abs(c["x1"] - last["x1"]) < 0.5
            touching = min(abs(c["top"] - last["bottom"]), abs(c["bottom"] - last["top"])) < 1.5
            if not (same_column and touching) or c["text"] == " ":
                flush()
        if c["text"] != " ":
            column.append(c)
    flush()
    return words


def _boxes(chars: list[dict]) -> np.ndarray:
    """(n, 4) boxes x0, top, x1, bottom of the characters, in the reading frame of each.

    A character rotated by 90° is given the box of the same character set upright (its
    extent along the text line as width), so that the shares below mean the same.
    """
    b = np.array([[c["x0"], c["top"], c["x1"], c["bottom"]] for c in chars], dtype=float)
    return b.reshape(-1, 4)


def _overlapping(chars: list[dict]) -> list[tuple[int, int]]:
    """Pairs of characters drawn over each other (see the module's rule)."""
    chars = [c for c in chars if c["text"].strip()]
    if len(chars) < 2:
        return []
    b = _boxes(chars)
    up = np.array([c["upright"] for c in chars])
    w = b[:, 2] - b[:, 0]
    h = b[:, 3] - b[:, 1]
    along, across = np.where(up, w, h), np.where(up, h, w)  # along the text line, across it
    dx = np.minimum(b[:, None, 2], b[None, :, 2]) - np.maximum(b[:, None, 0], b[None, :, 0])
    dy = np.minimum(b[:, None, 3], b[None, :, 3]) - np.maximum(b[:, None, 1], b[None, :, 1])
    same = up[:, None] == up[None, :]
    d_along = np.where(up[:, None], dx, dy)
    d_across = np.where(up[:, None], dy, dx)
    narrow = np.minimum(along[:, None], along[None, :])
    low = np.minimum(across[:, None], across[None, :])
    hit = (d_along > OVERLAP_WIDTH_SHARE * narrow) & (d_across > OVERLAP_HEIGHT_SHARE * low)
    hit |= ~same & (dx > 0.5) & (dy > 0.5)  # rotated over upright text
    i, j = np.nonzero(np.triu(hit, 1))
    return [(chars[a], chars[c]) for a, c in zip(i, j, strict=True)]


def words(path: str | Path) -> tuple[tuple[float, float], list[Word]]:
    """Page size (mm) and the words of a one-page PDF."""
    import pdfplumber

    with pdfplumber.open(str(path)) as pdf:
        if len(pdf.pages) != 1:
            raise AssertionError(f"{path} has {len(pdf.pages)} pages; a figure has one")
        page = pdf.pages[0]
        upright = page.extract_words(
            x_tolerance=1.0, y_tolerance=1.0, keep_blank_chars=False, extra_attrs=["upright"]
        )
        out = []
        for w in upright:
            if not w["upright"]:
                continue
            chars = [
                c
                for c in page.chars
                if c["upright"]
                and w["x0"] - 0.01 <= c["x0"] <= w["x1"] + 0.01
                and w["top"] - 0.01 <= c["top"] <= w["bottom"] + 0.01
            ]
            size = min((_char_size(c) for c in chars), default=0.0)
            out.append(Word(w["text"], w["x0"], w["top"], w["x1"], w["bottom"], size))
        out += _rotated_words([c for c in page.chars if not c["upright"]])
    return (float(page.width) * MM_PER_PT, float(page.height) * MM_PER_PT), out


def problems(path: str | Path) -> list[str]:
    """Every breach of the three rules in the figure PDF ``path``, in words."""
    (width, height), found = words(path)
    name = Path(path).name
    out = []
    if not any(abs(width - w) <= PAGE_TOLERANCE_MM for w in JOURNAL_WIDTHS_MM.values()):
        out.append(
            f"{name}: page {width:.1f} mm wide, not a declared width "
            f"({', '.join(f'{w:g}' for w in JOURNAL_WIDTHS_MM.values())} mm)"
        )
    if height > MAX_HEIGHT_MM + PAGE_TOLERANCE_MM:
        out.append(f"{name}: page {height:.1f} mm tall, more than {MAX_HEIGHT_MM:g} mm")
    page_w, page_h = width / MM_PER_PT, height / MM_PER_PT
    for w in found:
        if w.size < MIN_TEXT_PT - 0.01:
            out.append(f"{name}: {w.text!r} at {w.size:.2f} pt, under {MIN_TEXT_PT:g} pt")
        if w.x0 < -0.5 or w.top < -0.5 or w.x1 > page_w + 0.5 or w.bottom > page_h + 0.5:
            out.append(f"{name}: {w.text!r} runs past the page's edge (cut off)")
    seen = set()
    for a, b in _overlapping(chars(path)):
        where = (round(a["x0"]), round(a["top"]))
        if where in seen:
            continue
        seen.add(where)
        inside = [w.text for w in found if _contains(w, a) or _contains(w, b)]
        out.append(
            f"{name}: text over text at ({a['x0']:.0f}, {a['top']:.0f}) pt: "
            f"{a['text']!r} and {b['text']!r} (in {' / '.join(dict.fromkeys(inside))})"
        )
    return out


def _contains(w: Word, c: dict) -> bool:
    return w.x0 - 0.01 <= c["x0"] <= w.x1 + 0.01 and w.top - 0.01 <= c["top"] <= w.bottom + 0.01


def chars(path: str | Path) -> list[dict]:
    """The characters of a one-page PDF (pdfplumber's dictionaries)."""
    import pdfplumber

    with pdfplumber.open(str(path)) as pdf:
        return list(pdf.pages[0].chars)
