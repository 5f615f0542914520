"""The study's figures, declared as data: one :class:`FigureSpec` record each.

:func:`make_figures` walks :data:`FIGURES` in order: a figure whose inputs are missing,
or whose plan finds nothing to show, is skipped; one that fails while drawing is logged
and skipped, so it does not cost the others. Every figure comes from ``dentalkit.plot``
(85 mm single column unless declared double, PDF + PNG unless asked otherwise), and
``captions.md`` beside them: each figure's caption (:func:`dentalkit.plot.caption`, from
the same inputs the figure was drawn from), ready to paste.
"""

from __future__ import annotations

import logging
import warnings
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dentalkit._progress import bar
from dentalkit.errors import DentalkitWarning, InputError
from dentalkit.study._qc import drawn_without
from dentalkit.study.calibration import Calibration, calibration_policy
from dentalkit.study.groups import GROWTH_DATA_COLUMNS

__all__ = [
    "FIGURES",
    "Draw",
    "FigureInputs",
    "FigureSpec",
    "check_formats",
    "make_figures",
    "write_captions",
]

log = logging.getLogger("dentalkit")


@dataclass(frozen=True)
class FigureSpec:
    """One figure of a study's figure set, declared as data.

    Parameters
    ----------
    name : str
        File stem of the figure (``<name>.pdf``, ``<name>.png``) and its key in the
        result of :func:`make_figures`.
    plan : callable
        ``plan(inputs)`` → ``draw(ax)``, or ``None`` when the inputs hold nothing to show
        (e.g. no patient with two sessions for a superimposition). The standard plans
        return a :class:`Draw`: a figure function with its inputs, which also gives the
        figure's caption.
    tables, analyses : tuple of str
        Tables (of :func:`dentalkit.convert.tables`) and analysis tables (of
        :func:`analyze`) the figure cannot be drawn without; it is skipped when any of
        them is missing.
    optional : tuple of str
        Analysis tables it reads when they are present.
    width : str
        ``"single"`` (85 mm) or ``"double"`` (180 mm) column, as :func:`dentalkit.plot.figure`.
    sources : tuple of str
        The study tables its data come from (directly or through the analyses): when
        ``qc="exclude"`` left rows of one out, its caption says so (``qc_outliers`` has
        none: it draws every session checked, the flagged ones marked).
    """

    name: str
    plan: Callable[[FigureInputs], Callable[[Any], Any] | None]
    tables: tuple[str, ...] = ()
    analyses: tuple[str, ...] = ()
    optional: tuple[str, ...] = ()
    width: str = "single"
    sources: tuple[str, ...] = ()


@dataclass(frozen=True)
class FigureInputs:
    """What a :class:`FigureSpec` plans from: the tables, the analyses, the calibration
    policy (or its endpoint fallback, a mapping) and the images to draw under tracings
    (or ``None``)."""

    tables: Mapping[str, pd.DataFrame]
    analyses: Mapping[str, pd.DataFrame]
    calibration: Calibration | Mapping[str, float] | None = None
    image_for: Callable[[str, str, str], Any] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "calibration", calibration_policy(self.calibration, self.tables))

    def mm_per_px(self, endpoint: str, pid: str, ts: str) -> float | None:
        """The scale of one session's image of ``endpoint`` (None: pixels)."""
        return self.calibration.of_session(endpoint, pid, ts)  # type: ignore[union-attr]

    def image(self, kind: str, pid: str, ts: str) -> Any:
        """The image of ``kind`` for one session, or ``None`` (blank canvas)."""
        return None if self.image_for is None else self.image_for(kind, pid, ts)


@dataclass(frozen=True)
class Draw:
    """A figure function of :mod:`dentalkit.plot` with its inputs: draws the figure on an
    axes and gives its caption from the same inputs (:func:`dentalkit.plot.caption`).

    Parameters
    ----------
    func : callable
        The figure function (``plot.ceph_tracing`` …).
    args : tuple
        Its positional inputs.
    kwargs : mapping
        Its keyword inputs (``ax`` excluded).
    image : callable, optional
        ``image()`` → the image drawn under the figure, loaded when the figure is drawn
        (not when it is planned); passed as ``image=``.
    after : callable, optional
        ``after(ax)``: finishing touches (an axis label).
    note : str, optional
        A sentence the caption ends with (what ``after`` adds, for instance).
    """

    func: Callable[..., Any]
    args: tuple[Any, ...] = ()
    kwargs: Mapping[str, Any] = field(default_factory=dict)
    image: Callable[[], Any] | None = None
    after: Callable[[Any], Any] | None = None
    note: str | None = None

    def __call__(self, ax: Any) -> Any:
        """Draw the figure on ``ax``; return what the figure function returns."""
        return self._run(ax)[0]

    def draw(self, ax: Any) -> str:
        """Draw the figure on ``ax``; return its caption (one paragraph).

        A caption that cannot be written does not cost the figure: the paragraph then
        says why, and a warning is logged.
        """
        from dentalkit.plot import caption

        _, kwargs = self._run(ax)
        try:
            return caption(self.func, *self.args, note=self.note, **kwargs)
        except Exception as exc:  # the figure is drawn; its caption only is missing
            log.warning("no caption for figure %s: %s", self.func.__name__, exc)
            return f"(No caption could be written: {exc}.)"

    def _run(self, ax: Any) -> tuple[Any, dict[str, Any]]:
        kwargs = dict(self.kwargs)
        if self.image is not None:
            kwargs["image"] = self.image()
        out = self.func(*self.args, **kwargs, ax=ax)
        if self.after is not None:
            self.after(ax)
        return out, kwargs


def _lateral_session(inputs: FigureInputs) -> tuple[pd.DataFrame, str, str] | None:
    """Lateral landmarks and the typical session (ANB closest to the median)."""
    lm = inputs.tables["landmarks"]
    if not len(lm):
        return None
    lateral = lm[lm["view"] == "lateral"]
    pid, ts = _typical_session(lateral, inputs.analyses.get("ceph_measures"))
    return lateral, pid, ts


def _plan_ceph_tracing(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    found = _lateral_session(inputs)
    if found is None:
        return None
    lateral, pid, ts = found
    return Draw(
        plot.ceph_tracing,
        (lateral, (pid, ts)),
        {
            "mm_per_px": inputs.mm_per_px("ceph_lateral_points", pid, ts),
            "measures": ["SNA", "SNB", "ANB", "SN_MP", "U1_SN", "IMPA"],
        },
        image=lambda: inputs.image("lateral_ceph", pid, ts),
    )


def _plan_ceph_superimposition(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    found = _lateral_session(inputs)
    if found is None:
        return None
    lateral, pid, _ = found
    sessions = lateral[lateral["patient_id"].astype(str) == pid]
    if sessions["timestamp"].nunique() < 2:
        return None
    sessions, scale = _one_scale(sessions, inputs)
    named = plot.pseudonyms(lateral)  # the patient's rank among all, as in the tracing
    return Draw(plot.ceph_superimposition, (sessions, pid), {"mm_per_px": scale, "identity": named})


def _one_scale(sessions: pd.DataFrame, inputs: FigureInputs) -> tuple[pd.DataFrame, float | None]:
    """One patient's lateral sessions and the one scale they are drawn at: the sessions'
    common scale; coordinates in mm (scale 1) when each session has its own; pixels when
    a session has none."""
    pid = str(sessions["patient_id"].iloc[0])
    scales = {
        ts: inputs.mm_per_px("ceph_lateral_points", pid, ts)
        for ts in sessions["timestamp"].astype(str).unique()
    }
    values = set(scales.values())
    if None in values:
        return sessions, None
    if len(values) == 1:
        return sessions, values.pop()
    factor = sessions["timestamp"].astype(str).map(scales).to_numpy(dtype=float)
    return sessions.assign(x=sessions["x"] * factor, y=sessions["y"] * factor), 1.0


def _plan_ceph_wiggle(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import ceph, plot
    from dentalkit.stats import one_row_per_unit

    measures = inputs.analyses["ceph_measures"]
    if not len(measures):
        return None
    # Most shipped norms lack a verified SD (docs/measures.md); the chart shows the
    # textbook SDs too and says so on its axis (so the warning is not repeated here).
    # z against the norm of each patient's sex and age: the covariates travel in
    # ceph_zscores (analyze(patients=...)); norms by sex or age need them.
    # One session per patient (the first): the chart's mean and t interval are over
    # patients, not sessions.
    scored = inputs.analyses.get("ceph_zscores", measures)
    scored = one_row_per_unit(scored[scored["view"] == "lateral"], "first")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DentalkitWarning)
        z = ceph.zscores(scored, include_unverified=True)
    if not z["z"].notna().any():
        return None

    return Draw(
        plot.ceph_wiggle,
        (z,),
        after=lambda ax: ax.set_xlabel("z-score, first session\n(textbook SDs, not all verified)"),
        note="Each patient's first session; most norm SDs are textbook values, not all "
        "verified (docs/measures.md).",
    )


def _plan_arch_forms(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    points, fits = inputs.tables["arch_points"], inputs.analyses["arch_fits"]
    if not len(points):
        return None
    up = points[points["arch"] == "up"]
    key = up.iloc[0][["patient_id", "timestamp"]].astype(str).tolist()
    return Draw(plot.arch_forms, (up, fits, tuple(key)))


def _plan_mean_arch_forms(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    mf = inputs.analyses["arch_mean_forms"]
    if (mf["unit"] == "mm").any() and (mf["unit"] == "px").any():
        # one arch calibrated, the other not: the panels share one scale, so only the
        # mean forms in mm are drawn (the px ones stay in the table)
        mf = mf[mf["unit"] == "mm"]
    if not len(mf):
        return None
    by = "skeletal_class" if "skeletal_class" in mf.columns else None
    return Draw(plot.mean_arch_forms, (mf,), {"by": by})


def _plan_tooth_map(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    teeth_table, tm = inputs.tables["teeth"], inputs.analyses["tooth_measures"]
    if not len(teeth_table):
        return None
    pano = teeth_table[teeth_table["source"] == "pano"]
    if not len(pano):
        return None
    key = pano.iloc[0][["patient_id", "timestamp"]].astype(str).tolist()
    return Draw(
        plot.tooth_map,
        (pano, "area", tuple(key)),
        {"values": tm},
        image=lambda: inputs.image("pano", *key),
    )


def _plan_finding_boxes(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    det = inputs.tables["findings"]
    if not len(det):
        return None
    clinical = det[det["source"] == "clinical"]
    if not len(clinical):
        return None
    key = clinical.iloc[0][["patient_id", "timestamp"]].astype(str).tolist()
    # crop: the view on the boxes (with a margin), so that their labels can be read
    return Draw(
        plot.finding_boxes,
        (clinical, tuple(key)),
        {"crop": True},
        image=lambda: inputs.image("intraoral_frontal", *key),
    )


def _plan_whole(analysis: str, figure: str, **options: Any) -> Callable[[FigureInputs], Any]:
    """The plan of a figure of one whole analysis table: ``plot.<figure>(table, **options)``,
    nothing when the table has no rows."""

    def plan(inputs: FigureInputs) -> Callable[[Any], Any] | None:
        from dentalkit import plot

        table = inputs.analyses[analysis]
        if not len(table):
            return None
        return Draw(getattr(plot, figure), (table,), options)

    return plan


def _plan_growth_by_class(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    gdata, gbands = inputs.analyses["growth_data"], inputs.analyses["growth_bands"]
    if not len(gbands):
        return None
    gcol = next((c for c in gdata.columns if c not in GROWTH_DATA_COLUMNS), None)
    shown = "SNB" if (gbands["measure"] == "SNB").any() else str(gbands["measure"].iloc[0])
    return Draw(plot.growth_lines, (gdata, gbands, shown), {"group": gcol})


def _plan_tle_by_class(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    estimates = inputs.analyses["tle_estimates"]
    if "malocclusion_class" not in estimates.columns:
        return None
    months = "estimate_length_months"
    if months not in estimates.columns or not estimates[months].notna().any():
        return None  # no estimate to show (e.g. no /tle answer could be read): no empty axes
    return Draw(plot.tle_distribution, (estimates, "malocclusion_class"))


def _plan_tle_bland_altman(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    from dentalkit import plot

    estimates = inputs.analyses["tle_estimates"]
    if "observed_months" not in estimates.columns:
        return None
    return Draw(plot.tle_bland_altman, (estimates, "observed_months"))


def _plan_qc_outliers(inputs: FigureInputs) -> Callable[[Any], Any] | None:
    # each lateral session's Procrustes distance from the cohort's mean shape, the
    # flagged ones marked (geomorph's plotOutliers); none without the cohort model
    from dentalkit import plot

    checks = inputs.analyses["qc"]
    if "procrustes_distance" not in checks.columns:
        return None
    rows = checks[
        (checks["check"].astype(str) == "landmarks")
        & (checks["view"].astype(str) == "lateral")
        & checks["procrustes_distance"].notna()
    ]
    if not len(rows):
        return None
    return Draw(plot.qc_outliers, (rows,), {"view": "lateral"})


_LM = ("landmarks",)
#: The standard figure set, in the order :func:`make_figures` draws it.
FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec(
        "ceph_tracing", _plan_ceph_tracing, ("landmarks",), (), ("ceph_measures",), sources=_LM
    ),
    FigureSpec(
        "ceph_superimposition",
        _plan_ceph_superimposition,
        ("landmarks",),
        (),
        ("ceph_measures",),
        sources=_LM,
    ),
    FigureSpec(
        "ceph_wiggle", _plan_ceph_wiggle, (), ("ceph_measures",), ("ceph_zscores",), sources=_LM
    ),
    FigureSpec(
        "arch_forms", _plan_arch_forms, ("arch_points",), ("arch_fits",), sources=("arch_points",)
    ),
    FigureSpec(
        "mean_arch_forms",
        _plan_mean_arch_forms,
        (),
        ("arch_mean_forms",),
        sources=("arch_points", "landmarks"),
    ),
    FigureSpec(
        "tooth_map",
        _plan_tooth_map,
        ("teeth",),
        ("tooth_measures",),
        width="double",
        sources=("teeth",),
    ),
    FigureSpec(
        "odontogram_missing",
        _plan_whole("missing_by_fdi", "odontogram"),
        (),
        ("missing_by_fdi",),
        sources=("teeth",),
    ),
    FigureSpec("finding_boxes", _plan_finding_boxes, ("findings",), sources=("findings",)),
    FigureSpec(
        "growth_by_class",
        _plan_growth_by_class,
        (),
        ("growth_data", "growth_bands"),
        sources=("landmarks", "arch_points"),
    ),
    FigureSpec(
        "findings_prevalence",
        _plan_whole("findings_prevalence", "prevalence_bars", by="source"),
        (),
        ("findings_prevalence",),
        sources=("findings",),
    ),
    # treatment length: estimates by class, the sensitivity curves (a run's own, not written
    # to analyses/) and predicted against observed durations (a patients-table column)
    FigureSpec("tle_by_class", _plan_tle_by_class, analyses=("tle_estimates",)),
    FigureSpec(
        "tle_sensitivity_crowding",
        _plan_whole("tle_sensitivity", "tle_sensitivity"),
        analyses=("tle_sensitivity",),
    ),
    FigureSpec("tle_bland_altman", _plan_tle_bland_altman, analyses=("tle_estimates",)),
    FigureSpec("qc_outliers", _plan_qc_outliers, analyses=("qc",)),
)


def make_figures(
    tables: Mapping[str, pd.DataFrame],
    analyses: Mapping[str, pd.DataFrame],
    out: str | Path,
    *,
    mm_per_px: Calibration | Mapping[str, float] | None = None,
    image_for: Callable[[str, str, str], Any] | None = None,
    extra: Mapping[str, Callable[[Any], Any]] | None = None,
    dpi: int = 600,
    progress: bool = False,
    figures: Sequence[FigureSpec] = FIGURES,
    formats: Sequence[str] = ("pdf", "png"),
    width: str | float | None = None,
) -> dict[str, list[Path]]:
    """Draw the standard figure set and write their captions; return ``{figure name: [files]}``.

    Walks ``figures`` (default :data:`FIGURES`) in order: a figure whose required
    inputs are missing, or whose plan finds nothing to show, is skipped; one that fails
    while drawing is logged and skipped, so it does not cost the others. The captions of
    the figures drawn go to ``out/captions.md`` (:func:`write_captions`). After
    ``qc="exclude"`` (``analyses`` holds ``qc_excluded``), the figures are drawn without
    the excluded items, as the analyses were, and each caption whose data lost rows says
    how many and where they are listed.

    Parameters
    ----------
    tables, analyses : mappings of DataFrames
        Outputs of :func:`dentalkit.convert.tables` and :func:`analyze`.
    out : path
        Folder for the figures (by default PDF and PNG of each, at each figure's declared
        width: :data:`dentalkit.plot.house.FIGURE_WIDTHS`) and ``captions.md``.
    mm_per_px : Calibration or mapping, optional
        The calibration policy, or its endpoint fallback by endpoint name (used to draw
        tracings in millimetres; an image's own value in ``tables["calibration"]`` goes
        first).
    image_for : callable, optional
        ``image_for(kind, patient_id, timestamp)`` → an image to draw under tracings,
        tooth maps and findings (``kind`` as in :data:`dentalkit.sandbox.render.IMAGE_KINDS`);
        ``None`` draws on blank canvases.
    extra : mapping, optional
        More figures: name → ``function(ax)`` drawing on a fresh single-column axes,
        drawn after ``figures``.
    dpi : int
        Resolution of the raster files (PNG, TIFF) and of images embedded in PDF and SVG
        files (300–1200; default 600, the usual requirement for combination artwork).
    progress : bool
        Show a tqdm bar on stderr that counts the figures as they are drawn, out of the
        number planned (each one takes about a second at 600 dpi); only when stderr is
        a terminal.
    figures : sequence of FigureSpec
        The figure set, declared as data (default :data:`FIGURES`).
    formats : sequence of {"pdf", "svg", "png", "tiff"}
        The files written of each figure (default PDF and PNG; TIFF for the journals
        that ask for it, at ``dpi``).
    width : {"single", "double"}, float or None
        One width for every figure: 85 mm, 180 mm or millimetres. Default (None): each
        figure's declared width (the panoramic tooth map double, the rest single).
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from dentalkit import plot
    from dentalkit.plot._layout import width_mm

    formats = check_formats(formats)
    if width is not None:
        width_mm(width)  # a wrong width stops before anything is drawn
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    written: dict[str, list[Path]] = {}
    captions: dict[str, str] = {}
    tables, qc_notes = drawn_without(tables, analyses)
    inputs = FigureInputs(tables, analyses, mm_per_px, image_for)
    # Plan every figure first: the bar's total is what will be drawn (the declared set,
    # less the figures whose inputs are missing or whose plan finds nothing to show).
    todo: list[tuple[str, Callable[[Any], Any], str]] = []
    notes: dict[str, str] = {}  # the caption's QC sentence of each figure
    for spec in figures:
        if any(tables.get(t) is None for t in spec.tables) or any(
            analyses.get(a) is None for a in spec.analyses
        ):
            continue
        fn = spec.plan(inputs)
        if fn is None:
            log.info("figure %s not drawn: its inputs have nothing to show", spec.name)
        else:
            todo.append((spec.name, fn, spec.width if width is None else width))
            notes[spec.name] = " ".join(
                dict.fromkeys(qc_notes[t] for t in spec.sources if t in qc_notes)
            )
    todo += [(name, fn, "single" if width is None else width) for name, fn in (extra or {}).items()]
    counter = bar(len(todo), "figures", "fig", enabled=progress)

    def draw(name: str, fn: Callable[[Any], Any], width: str | float) -> None:
        counter.set_postfix_str(name)
        try:
            with plot.style():
                fig = plot.figure(width)
                ax = fig.add_subplot()
                text = fn.draw(ax) if isinstance(fn, Draw) else fn(ax)
                written[name] = plot.savefig(fig, out / name, width=width, formats=formats, dpi=dpi)
                if isinstance(fn, Draw):
                    captions[name] = " ".join(t for t in (text, notes.get(name)) if t)
                plt.close(fig)
        except Exception as exc:  # one bad figure must not cost the others
            plt.close("all")
            log.warning("figure %s was not drawn: %s", name, exc)
        counter.update(1)

    for name, fn, size in todo:
        draw(name, fn, size)
    counter.close()
    if written:
        write_captions(out / "captions.md", {n: captions.get(n) for n in written})
    return written


def check_formats(formats: str | Sequence[str]) -> tuple[str, ...]:
    """Figure formats as :func:`dentalkit.plot.savefig` takes them (lower case, no dot,
    each once), checked against :data:`dentalkit.plot.house.FORMATS`."""
    from dentalkit.plot.house import FORMATS

    if isinstance(formats, str):
        formats = (formats,)
    chosen = tuple(dict.fromkeys(str(f).lower().lstrip(".") for f in formats))
    bad = [f for f in chosen if f not in FORMATS]
    if bad or not chosen:
        raise InputError(
            f"figure format(s) {bad or list(formats)} not available; choose from {', '.join(FORMATS)}"
        )
    return chosen


def write_captions(path: str | Path, captions: Mapping[str, str | None]) -> Path:
    """Write ``captions.md``: one section per figure (its file stem), its caption below.

    Parameters
    ----------
    path : path
        The Markdown file to write.
    captions : mapping of str to str or None
        Figure name → caption, in the order the figures are listed; ``None`` for a
        figure without one (an ``extra`` figure of :func:`make_figures`, or a plan that
        returns a plain function), said as such.

    Returns
    -------
    Path
        ``path``.
    """
    path = Path(path)
    lines = [
        "# Figure captions",
        "",
        "One paragraph per figure, ready to paste: what is drawn, n (patients), units and "
        "the method (dentalkit.plot.caption, from the inputs the figure was drawn from).",
        "",
    ]
    for name, text in captions.items():
        lines += [
            f"## {name}",
            "",
            text or "(No caption: this figure is not drawn through a Draw record.)",
            "",
        ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path


def _typical_session(lateral: pd.DataFrame, measures: pd.DataFrame | None) -> tuple[str, str]:
    """The lateral session whose ANB is closest to the cohort median (first one otherwise)."""
    first = lateral.sort_values(["patient_id", "timestamp"]).iloc[0]
    choice = (str(first["patient_id"]), str(first["timestamp"]))
    if measures is None or not len(measures):
        return choice
    anb = measures[(measures["measure"].astype(str) == "ANB") & (measures["view"] == "lateral")]
    anb = anb.dropna(subset=["value"])
    if not len(anb):
        return choice
    best = anb.iloc[int((anb["value"] - anb["value"].median()).abs().to_numpy().argmin())]
    return str(best["patient_id"]), str(best["timestamp"])
