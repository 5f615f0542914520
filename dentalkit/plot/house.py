"""dentalkit's house style for figures, declared once as data.

Every figure of :mod:`dentalkit.plot` follows these values, and a test reads the PDFs the
demo writes to enforce them (``tests/plot/pdf_rules.py``). The study layer reads them to
offer widths, formats and resolutions, and to order and colour groups.

Text
    :data:`MIN_TEXT_PT` (6 pt at printed size: journals ask for 6–8 pt) and the sizes of
    :data:`TEXT_PT` by role; :func:`fontsize` scales them when a caller's rcParams use
    larger fonts (the figure is then made larger in proportion).
Size
    :data:`JOURNAL_WIDTHS_MM` (single column 85 mm, double 180 mm) and
    :data:`MAX_HEIGHT_MM` (225 mm: the type area of an A4 or US letter journal page less a
    few caption lines; publishers give 225–240 mm for full-page artwork);
    :data:`FIGURE_WIDTHS` says which figure has which width.
Lines
    :data:`LINE_PT` by role, none thinner than :data:`MIN_LINE_PT`.
Output
    :data:`FORMATS` and :data:`DPI_RANGE` (raster files and images inside PDFs).
Words
    One spelling of units (:data:`UNIT_TEXT`, :func:`unit_text`: ``°``, ``mm``, ``mm²``)
    and of intervals (:func:`ci_text`: "95 % CI", a space before the per cent sign as
    ISO 80000-1 writes it).
Groups
    Levels and colours declared once per grouping variable (:data:`GROUP_LEVELS`):
    skeletal classes in their natural order **I, II, III** (Angle's numbering), colours
    from the Okabe–Ito palette (colour-blind safe). :func:`group_order` and
    :func:`group_colours` give the same order and colour to a level in every figure of a
    study. Small groups: fewer than :data:`MIN_N_BOX` patients are drawn as points, not
    boxes.

Examples
--------
>>> ci_text(0.95)
'95 % CI'
>>> group_order(["Class III", "Class I", "Class II"])
['Class I', 'Class II', 'Class III']
>>> group_colours(["III", "I"])["III"] == GROUP_LEVELS["skeletal_class"]["III"]
True
>>> unit_text("deg"), unit_text("mm2")
('°', 'mm²')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any

from dentalkit.plot._layout import JOURNAL_WIDTHS_MM, MAX_HEIGHT_MM

__all__ = [
    "CATEGORICAL",
    "DPI_RANGE",
    "FIGURE_WIDTHS",
    "FORMATS",
    "GROUP_LEVELS",
    "JOURNAL_WIDTHS_MM",
    "LINE_PT",
    "MAX_HEIGHT_MM",
    "MIN_LINE_PT",
    "MIN_N_BOX",
    "MIN_TEXT_PT",
    "OKABE_ITO",
    "TEXT_PT",
    "UNIT_TEXT",
    "VARIABLE_LABELS",
    "ci_text",
    "fontsize",
    "group_colours",
    "group_order",
    "unit_text",
    "variable_label",
    "with_unit",
]

#: Smallest text at printed size, in points (journals ask for 6–8 pt).
MIN_TEXT_PT = 6.0
#: Text size by role, in points at printed size; none below :data:`MIN_TEXT_PT`.
TEXT_PT: Mapping[str, float] = MappingProxyType(
    {
        "title": 8.0,  # panel titles, figure titles
        "body": 7.0,  # axis labels, the default text size
        "tick": 6.5,  # tick labels
        "legend": 6.5,  # legend entries and titles
        "note": 6.0,  # labels on the data: landmark names, FDI numbers, counts, values
    }
)

#: The width of each figure of the standard figure set (``"single"`` 85 mm or
#: ``"double"`` 180 mm): a panoramic tooth map needs the page width to keep its 32 FDI
#: numbers legible; every other figure fits one column.
FIGURE_WIDTHS: Mapping[str, str] = MappingProxyType(
    {
        "ceph_tracing": "single",
        "ceph_superimposition": "single",
        "ceph_wiggle": "single",
        "arch_forms": "single",
        "mean_arch_forms": "single",
        "tooth_map": "double",
        "odontogram_missing": "single",
        "finding_boxes": "single",
        "growth_by_class": "single",
        "findings_prevalence": "single",
        "tle_by_class": "single",
        "tle_sensitivity_crowding": "single",
        "tle_bland_altman": "single",
        "qc_outliers": "single",
    }
)

#: Line weights by role, in points at printed size.
LINE_PT: Mapping[str, float] = MappingProxyType(
    {
        "axis": 0.6,  # spines and ticks
        "data": 1.0,  # a measure, a fitted curve, a group's line
        "emphasis": 1.6,  # a mean or model fit drawn over individual lines
        "individual": 0.5,  # one patient's line under a group's
        "reference": 0.6,  # norms, zero lines, registration lines, outlines
        "construction": 0.6,  # dashed helper lines
    }
)
#: Thinnest line drawn (points): thinner lines vanish in print.
MIN_LINE_PT = 0.25

#: Output formats of :func:`dentalkit.plot.savefig` (vector: PDF, SVG; raster: PNG, TIFF).
FORMATS = ("pdf", "svg", "png", "tiff")
#: Resolution of raster files and of images inside PDFs, dots per inch: journals ask for
#: 300 (photographs) to 600 (combination artwork). ``savefig`` also accepts up to 1200
#: for line art a journal asks for at that resolution.
DPI_RANGE = (300, 600)

#: Groups of fewer patients than this are drawn as their points (with the mean and its
#: interval), not as a box plot: quartiles of a handful of values mislead (Weissgerber TL
#: et al. Beyond bar and line graphs. *PLoS Biol* 2015;13:e1002128).
MIN_N_BOX = 10

#: The Okabe–Ito palette: eight colours that stay distinct under the common
#: colour-vision deficiencies (Okabe M, Ito K. *Color Universal Design*, 2002/2008;
#: Wong B. Points of view: Color blindness. *Nat Methods* 2011;8:441).
OKABE_ITO: Mapping[str, str] = MappingProxyType(
    {
        "black": "#000000",
        "orange": "#E69F00",
        "sky_blue": "#56B4E9",
        "bluish_green": "#009E73",
        "yellow": "#F0E442",
        "blue": "#0072B2",
        "vermillion": "#D55E00",
        "reddish_purple": "#CC79A7",
    }
)

#: Order in which categories without a declared colour (models, sessions, classes of
#: findings) receive colours: the Okabe–Ito colours with the best contrast on white first;
#: black (also used for reference lines and norms) and yellow (weak on white) come last.
CATEGORICAL: tuple[str, ...] = tuple(
    OKABE_ITO[k]
    for k in (
        "blue",
        "orange",
        "bluish_green",
        "vermillion",
        "reddish_purple",
        "sky_blue",
        "black",
        "yellow",
    )
)

_I, _II, _III = OKABE_ITO["blue"], OKABE_ITO["orange"], OKABE_ITO["bluish_green"]
#: Declared levels of the grouping variables, in their order, with their colours. A level
#: is matched after :func:`_key` (case, spaces, underscores and a leading "Class" are
#: ignored: "Class II", "II" and "class_ii" are one level). Skeletal classes are in the
#: natural order I, II, III; malocclusion divisions II/1 and II/2 share Class II's hue
#: family (orange, vermillion).
GROUP_LEVELS: Mapping[str, Mapping[str, str]] = MappingProxyType(
    {
        "skeletal_class": MappingProxyType({"I": _I, "II": _II, "III": _III}),
        "malocclusion_class": MappingProxyType(
            {"I": _I, "II/1": _II, "II/2": OKABE_ITO["vermillion"], "III": _III}
        ),
        "sex": MappingProxyType(
            {"female": OKABE_ITO["reddish_purple"], "male": OKABE_ITO["sky_blue"]}
        ),
    }
)
_SEX_CODES = {"f": "female", "m": "male", "girl": "female", "boy": "male"}

#: Readable names of grouping columns for legend titles and axis labels.
VARIABLE_LABELS: Mapping[str, str] = MappingProxyType(
    {
        "skeletal_class": "Skeletal class",
        "malocclusion_class": "Malocclusion class",
        "sex": "Sex",
        "source": "Image",
        "group": "Group",
    }
)

#: How each unit is written after a number and in axis labels: one spelling everywhere.
UNIT_TEXT: Mapping[str, str] = MappingProxyType(
    {
        "deg": "°",
        "degree": "°",
        "degrees": "°",
        "°": "°",
        "mm": "mm",
        "mm2": "mm²",
        "mm^2": "mm²",
        "mm²": "mm²",
        "px": "px",
        "px2": "px²",
        "px²": "px²",
        "%": "%",
        "percent": "%",
        "months": "months",
        "years": "years",
        "ratio": "",
        "": "",
    }
)


def unit_text(unit: Any) -> str:
    """The house spelling of a unit (``deg`` → ``°``, ``mm2`` → ``mm²``); unknown: as given."""
    text = "" if unit is None else str(unit)
    return UNIT_TEXT.get(text, UNIT_TEXT.get(text.lower(), text))


def with_unit(value_text: str, unit: Any) -> str:
    """A number with its unit: ``81.1°`` (no space before the degree sign), ``2.0 mm``."""
    u = unit_text(unit)
    if not u:
        return value_text
    return f"{value_text}{u}" if u == "°" else f"{value_text} {u}"


def ci_text(level: float = 0.95, method: str | None = None) -> str:
    """The interval's name, spelled one way: ``"95 % CI"``, ``"95 % bootstrap CI"``.

    ``level`` is a proportion (0.95) or a percentage (95).
    """
    pct = level * 100 if level <= 1 else level
    name = f"{method} CI" if method else "CI"
    return f"{pct:g} % {name}"


def variable_label(column: str | None) -> str:
    """A grouping column as a reader sees it: ``skeletal_class`` → "Skeletal class"."""
    if column is None:
        return ""
    text = VARIABLE_LABELS.get(str(column))
    if text is None:
        text = str(column).replace("_", " ").strip()
        text = text[:1].upper() + text[1:]
    return text


def _key(level: Any) -> str:
    text = re.sub(r"[\s_]+", " ", str(level)).strip().lower()
    text = re.sub(r"^class\s+", "", text)
    return _SEX_CODES.get(text, text)


def _declared(levels: list[Any], variable: str | None) -> Mapping[str, str] | None:
    """The declared level → colour map that holds every level (or the named variable's)."""
    if variable is not None and variable in GROUP_LEVELS:
        return GROUP_LEVELS[variable]
    keys = {_key(v) for v in levels}
    for declared in GROUP_LEVELS.values():
        if keys and keys <= {_key(k) for k in declared}:
            return declared
    return None


def group_order(levels: Iterable[Any], variable: str | None = None) -> list[Any]:
    """``levels`` (distinct, in their given form) in the declared order of their variable.

    Levels of a declared variable (:data:`GROUP_LEVELS`; found from ``variable`` or from
    the levels themselves) come in its order; others follow in natural order (numbers by
    value: "patient 2" before "patient 10").
    """
    seen = list(dict.fromkeys(levels))
    declared = _declared(seen, variable)
    rank = {} if declared is None else {_key(k): i for i, k in enumerate(declared)}

    def natural(v: Any) -> tuple:
        return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", _key(v)))

    return sorted(seen, key=lambda v: (rank.get(_key(v), len(rank)), natural(v)))


def group_colours(levels: Iterable[Any], variable: str | None = None) -> dict[Any, str]:
    """Colour of each level: the declared one, else the next unused palette colour.

    The same level gets the same colour in every figure (Class II is orange in the growth
    chart, the mean arch forms and the treatment-length chart alike); undeclared levels
    take the palette (:data:`CATEGORICAL`) in :func:`group_order`, skipping
    colours already taken.
    """
    ordered = group_order(levels, variable)
    declared = _declared(ordered, variable) or {}
    by_key = {_key(k): c for k, c in declared.items()}
    out: dict[Any, str] = {}
    for level in ordered:
        if _key(level) in by_key:
            out[level] = by_key[_key(level)]
    free = [c for c in CATEGORICAL if c not in out.values()] or list(CATEGORICAL)
    for i, level in enumerate(v for v in ordered if v not in out):
        out[level] = free[i % len(free)]
    return out


def fontsize(role: str) -> float:
    """Text size of ``role`` (:data:`TEXT_PT`) in points, for the current rcParams.

    Inside :func:`dentalkit.plot.style` this is the declared size; with larger fonts
    (matplotlib's default 10 pt) it grows in proportion, as figures made here do.
    """
    import matplotlib as mpl

    scale = max(1.0, float(mpl.rcParams["font.size"]) / TEXT_PT["body"])
    return TEXT_PT[role] * scale
