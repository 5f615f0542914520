"""The design of a study, stated once: groups, session rule, α, multiplicity, outputs.

A study file is a small TOML file (read with the standard library's :mod:`tomllib`);
every key is optional and has the documented default of :class:`Design`. The report
prints the design it ran with (:meth:`Design.lines`). docs/study.md has a worked file.

.. code-block:: toml

    title = "Arch widths by treatment group"
    out = "my-study"            # output folder, relative to the study file

    [groups]
    column = "treatment"        # a column of the patients table; default: skeletal class

    [statistics]
    session = "first"           # the session of each patient the group comparisons take
    alpha = 0.05                # 1 − the confidence level of every interval
    correction = "holm"         # across the measures of one question

    [analyses]
    run = ["ceph", "ceph_compare", "arch", "arch_groups", "growth", "teeth"]

    [figures]
    draw = ["ceph_tracing", "arch_forms", "mean_arch_forms"]
    dpi = 600
    formats = ["pdf", "png"]    # of pdf, svg, png, tiff
    width = "single"            # every figure: "single" (85 mm), "double" (180 mm) or mm

    [qc]
    policy = "exclude"          # exclude | flag | ignore: the AI's answers that fail QC

    [calibration]               # endpoint fallback: mm per pixel of images without their own
    ceph_lateral_points = 0.1
"""

from __future__ import annotations

import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from dentalkit.errors import InputError
from dentalkit.study.calibration import _check_endpoints

__all__ = ["CORRECTIONS", "QC_POLICIES", "SESSION_RULES", "Design", "read_design"]

#: The session of each patient a between-group comparison takes (one row per patient).
SESSION_RULES = ("first", "last")
#: Multiplicity corrections across the measures of one question (statsmodels'
#: ``multipletests`` names; ``none`` leaves the p-values unadjusted).
CORRECTIONS = ("holm", "bonferroni", "fdr_bh", "fdr_by", "sidak", "holm-sidak", "none")
#: How the report names each correction (with its reference).
CORRECTION_NAMES = {
    "holm": "Holm",
    "bonferroni": "Bonferroni",
    "fdr_bh": "Benjamini–Hochberg",
    "fdr_by": "Benjamini–Yekutieli",
    "sidak": "Šidák",
    "holm-sidak": "Holm–Šidák",
    "none": "none",
}
#: Quality-control policies (:func:`dentalkit.qc.apply`); a study's default is the first,
#: "exclude" (issue 28: the flagged items are left out, listed, and the main results are
#: given with and without them).
QC_POLICIES = ("exclude", "flag", "ignore")
#: What each policy does, in the report's words.
QC_POLICY_WORDS = {
    "flag": "items that fail a check are flagged and listed, and stay in the analyses",
    "exclude": (
        "the rows of items that fail a check are left out of every analysis; each excluded "
        "item is listed with its reason, and the main results are given with and without them"
    ),
    "ignore": "the checks run and are listed, but do not change the analyses",
}
#: TLE sensitivity: the factor varied, its levels and how many patients (one request per
#: patient and level; the demo's setting).
DEMO_SENSITIVITY = ("crowding", ("none", "mild", "moderate", "severe"), 12)


@dataclass(frozen=True)
class Design:
    """What a study runs and how: every choice a reviewer asks about, with its default.

    Parameters
    ----------
    title : str
        The report's title.
    groups : str, optional
        Column of the patients table whose values are the groups compared. Default
        (None): the skeletal class (ANB) of each patient's first lateral session.
    session : {"first", "last"}
        The session of each patient that summaries and group comparisons take (the
        patient is the unit: one row per patient). Growth models use every session.
    alpha : float
        Significance level: intervals are at 1 − alpha (default 0.05: 95 %).
    correction : str
        Multiplicity correction across the measures of one question (one of
        :data:`CORRECTIONS`; default ``"holm"``).
    analyses : tuple of str, optional
        Names of :data:`dentalkit.study.ANALYSES` to run (default: all the data allow).
    figures : tuple of str, optional
        Names of :data:`dentalkit.study.FIGURES` to draw (default: all the data allow).
    dpi : int
        Resolution of the raster figures (PNG, TIFF) and of images inside PDF and SVG
        files (300–1200).
    formats : tuple of str
        The files written of each figure, of ``pdf``, ``svg``, ``png``, ``tiff`` (default
        PDF and PNG).
    width : {"single", "double"}, float, optional
        One width for every figure (85 mm, 180 mm or millimetres). Default (None): each
        figure's declared width (:data:`dentalkit.plot.house.FIGURE_WIDTHS`).
    mm_per_px : mapping of str to float
        Endpoint fallback calibration (endpoint registry name → mm per pixel) for the
        images without a value of their own.
    out : path
        Output folder.
    sensitivity : tuple, optional
        ``(factor, levels, n_patients)`` of the treatment-length sensitivity curves
        (hypothetical ``/tle`` queries: one request per patient and level). Default None:
        none (the demo sets :data:`DEMO_SENSITIVITY`).
    intro : str, optional
        The report's first paragraph (default: one written from the cohort).
    qc : {"flag", "exclude", "ignore"}
        The pre-specified quality-control policy for the AI's answers (docs/qc.md):
        ``"exclude"`` (default) leaves the rows of flagged items out, lists each with its
        reason and adds the results without QC beside the main ones, ``"flag"`` keeps
        every row and lists the flagged items,
        ``"ignore"`` runs the checks without applying them.
    """

    title: str = "dentalkit study"
    groups: str | None = None
    session: str = "first"
    alpha: float = 0.05
    correction: str = "holm"
    analyses: tuple[str, ...] | None = None
    figures: tuple[str, ...] | None = None
    dpi: int = 600
    formats: tuple[str, ...] = ("pdf", "png")
    width: str | float | None = None
    mm_per_px: Mapping[str, float] = field(default_factory=dict)
    out: Path = Path("dentalkit-study")
    sensitivity: tuple[str, tuple[str, ...], int] | None = None
    intro: str | None = None
    qc: str = "exclude"

    def __post_init__(self) -> None:
        if self.qc not in QC_POLICIES:
            raise InputError(f"study design: qc={self.qc!r} is not one of {', '.join(QC_POLICIES)}")
        if self.session not in SESSION_RULES:
            raise InputError(
                f"study design: session={self.session!r} is not one of {', '.join(SESSION_RULES)}"
            )
        if not (isinstance(self.alpha, int | float) and 0 < float(self.alpha) < 0.5):
            raise InputError(
                f"study design: alpha={self.alpha!r} is not a number between 0 and 0.5 (e.g. 0.05)"
            )
        if self.correction not in CORRECTIONS:
            raise InputError(
                f"study design: correction={self.correction!r} is not one of "
                f"{', '.join(CORRECTIONS)}"
            )
        if not (isinstance(self.dpi, int) and 300 <= self.dpi <= 1200):
            raise InputError(f"study design: dpi={self.dpi!r} is not an integer from 300 to 1200")
        from dentalkit.plot._layout import width_mm
        from dentalkit.study.figures import check_formats

        try:
            object.__setattr__(self, "formats", check_formats(self.formats))
            if self.width is not None:
                width_mm(self.width)
        except InputError as exc:
            raise InputError(f"study design: {exc}") from None
        object.__setattr__(self, "out", Path(self.out))
        object.__setattr__(self, "mm_per_px", _check_endpoints(self.mm_per_px))

    @property
    def confidence(self) -> float:
        """Level of every interval: 1 − alpha."""
        return 1.0 - float(self.alpha)

    @property
    def adjust(self) -> str | None:
        """The correction as the statistics functions take it (None for ``"none"``)."""
        return None if self.correction == "none" else self.correction

    def with_(self, **changes: Any) -> Design:
        """A copy with ``changes`` (e.g. the command line's options over the file's)."""
        return replace(self, **changes)

    def lines(self) -> list[str]:
        """The design in words, one item each (the report's "Design" section)."""
        groups = (
            f"the column `{self.groups}` of the patients table"
            if self.groups
            else "the skeletal class (ANB) of each patient's first lateral session"
        )
        cal = (
            ", ".join(f"`{e}` {v:g} mm/px" for e, v in sorted(self.mm_per_px.items()))
            if self.mm_per_px
            else "none"
        )
        return [
            f"Groups: {groups}.",
            f"Session compared: the {self.session} session of each patient (the patient is "
            "the unit; growth models use every session).",
            f"α = {self.alpha:g} (intervals at {100 * self.confidence:g} %); multiplicity: "
            + (
                "no correction."
                if self.correction == "none"
                else f"{CORRECTION_NAMES[self.correction]} across the measures of one question."
            ),
            "Analyses: "
            + (", ".join(self.analyses) if self.analyses else "every one the data allow")
            + "; figures: "
            + (", ".join(self.figures) if self.figures else "every one the data allow")
            + f" ({self.dpi} dpi; {', '.join(f.upper() for f in self.formats)}; "
            + f"{self.width_text()}).",
            f"Endpoint fallback calibration: {cal} (an image's own mm_per_px goes first).",
            f"Quality control of the AI's answers (pre-specified): qc = {self.qc!r}: "
            f"{QC_POLICY_WORDS[self.qc]}.",
        ]

    def width_text(self) -> str:
        """The figures' width in words (the report's design line, the run's output)."""
        if self.width is None:
            return "each figure at its declared width"
        from dentalkit.plot._layout import width_mm

        return f"every figure {width_mm(self.width):g} mm wide"


def _table(data: Mapping[str, Any], key: str, where: Path) -> dict[str, Any]:
    value = data.get(key, {})
    if not isinstance(value, Mapping):
        raise InputError(f"{where}: [{key}] must be a table (a [{key}] section)")
    return dict(value)


def _names(value: Any, key: str, where: Path) -> tuple[str, ...] | None:
    if value is None:
        return None
    if isinstance(value, str) or not isinstance(value, Sequence):
        raise InputError(f'{where}: {key} must be a list of names, e.g. ["ceph", "arch"]')
    return tuple(str(v) for v in value)


#: The keys a study file may hold, by section ("" = top level).
KEYS = {
    "": {"title", "out", "intro", "groups", "statistics", "analyses", "figures", "calibration",
         "tle", "qc"},
    "groups": {"column"},
    "statistics": {"session", "alpha", "correction"},
    "analyses": {"run"},
    "figures": {"draw", "dpi", "formats", "width"},
    "tle": {"sensitivity", "levels", "patients"},
    "qc": {"policy"},
}  # fmt: skip


def _unknown_keys(data: Mapping[str, Any], where: Path) -> None:
    import difflib

    for section, allowed in KEYS.items():
        keys = data if not section else data.get(section, {})
        if section == "" or isinstance(keys, Mapping):
            for key in keys:
                if key not in allowed:
                    near = difflib.get_close_matches(str(key), sorted(allowed), n=1)
                    name = f"[{section}] {key}" if section else key
                    raise InputError(
                        f"{where}: unknown key {name!r}"
                        + (f" (did you mean {near[0]!r}?)" if near else "")
                        + f"; the keys are {', '.join(sorted(allowed))}"
                    )


def read_design(path: str | Path) -> Design:
    """Read a study file (TOML) into a :class:`Design`; missing keys keep their defaults.

    Parameters
    ----------
    path : path
        The study file. ``out`` in it is relative to the file's folder.

    Returns
    -------
    Design

    Raises
    ------
    InputError
        The file cannot be read or parsed, a key is unknown (the message suggests the
        closest one) or a value is out of range.
    """
    path = Path(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InputError(f"cannot read the study file {path}: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise InputError(f"the study file {path} is not valid TOML: {exc}") from None
    _unknown_keys(data, path)
    stats = _table(data, "statistics", path)
    figures = _table(data, "figures", path)
    tle = _table(data, "tle", path)
    calibration = _table(data, "calibration", path)
    changes: dict[str, Any] = {
        "groups": _table(data, "groups", path).get("column"),
        "analyses": _names(_table(data, "analyses", path).get("run"), "[analyses] run", path),
        "figures": _names(figures.get("draw"), "[figures] draw", path),
        "mm_per_px": calibration,
    }
    if "policy" in _table(data, "qc", path):
        changes["qc"] = data["qc"]["policy"]
    for key in ("title", "intro"):
        if key in data:
            changes[key] = str(data[key])
    if "out" in data:
        changes["out"] = path.parent / str(data["out"])
    for key in ("session", "alpha", "correction"):
        if key in stats:
            changes[key] = stats[key]
    for key in ("dpi", "width"):
        if key in figures:
            changes[key] = figures[key]
    if "formats" in figures:
        changes["formats"] = _names(figures["formats"], "[figures] formats", path)
    if "sensitivity" in tle:
        levels = _names(tle.get("levels"), "[tle] levels", path)
        if not levels:
            raise InputError(
                f'{path}: [tle] sensitivity needs levels, e.g. levels = ["none", "mild"]'
            )
        n = tle.get("patients", 12)
        if not isinstance(n, int) or isinstance(n, bool) or n < 1:
            raise InputError(f"{path}: [tle] patients must be a positive whole number")
        changes["sensitivity"] = (str(tle["sensitivity"]), levels, n)
    try:
        return Design(**changes)
    except InputError as exc:
        raise InputError(f"{path}: {exc}") from None
