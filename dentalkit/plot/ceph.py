"""Cephalometric figures: tracing, cohort z-score ("wiggle") chart, S–N superimposition.

- :func:`tracing` — one session's landmarks, smooth anatomical contours and the lines
  of chosen measures (with their values) over the radiograph or a blank canvas.
- :func:`wiggle` — z-scores of a cohort against norms, one row per measure, the
  polygon ("wiggle") chart of Hellman (1937) and Vorhies & Adams (1951).
- :func:`superimposition` — two or more sessions of a patient registered on S–N at S
  (:func:`sn_register`), with growth/treatment displacement arrows.

Inputs are the ``landmarks`` table of docs/data-contract.md and the outputs of
:func:`dentalkit.ceph.measure` / :func:`dentalkit.ceph.zscores`.
"""

from __future__ import annotations

import warnings
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dentalkit import ceph as _ceph
from dentalkit.errors import DentalkitWarning, InputError
from dentalkit.plot._ceph_geometry import (
    CLOSED_CONTOURS,
    compact_label,
    contour_groups,
    landmark_text,
    measure_primitives,
    resolve_names,
    view_rows,
)
from dentalkit.plot._ceph_superimposition import DEFAULT_ARROWS, sn_register, superimposition
from dentalkit.plot._ceph_wiggle import wiggle
from dentalkit.plot._common import (
    catmull_rom,
    finish_pixel_axes,
    fit_height_to_view,
    new_axes,
    number,
    owns_figure,
    place_legend,
    scale_bar,
    select_session,
    show_image,
)
from dentalkit.plot._identity import Identity, check_identity, session_label
from dentalkit.plot._labels import compass, place_labels
from dentalkit.plot.house import LINE_PT, fontsize, with_unit
from dentalkit.plot.style import CATEGORICAL

__all__ = [
    "CLOSED_CONTOURS",
    "DEFAULT_ARROWS",
    "DEFAULT_MEASURES",
    "sn_register",
    "superimposition",
    "tracing",
    "wiggle",
]

#: Measures drawn by :func:`tracing` when none are chosen.
DEFAULT_MEASURES: dict[str, tuple[str, ...]] = {
    "lateral": ("SNA", "SNB", "ANB", "SN_MP", "U1_SN", "IMPA"),
    "frontal": ("maxillary_width", "mandibular_width", "Me_midline_dev"),
}


def tracing(
    landmarks: pd.DataFrame,
    session: Any = None,
    *,
    view: str = "lateral",
    image: Any = None,
    measures: Sequence[str] | None = None,
    mm_per_px: float | None = None,
    contours: bool = True,
    closed: Collection[str] | None = None,
    label: str | Sequence[str] | None = "measures",
    landmark_map: str | Path | pd.DataFrame | None = None,
    crop: bool = True,
    show_axes: bool = True,
    legend: str | None = "above",
    identity: Identity = "pseudonym",
    ax: Any = None,
) -> Any:
    """Cephalometric tracing of one session: landmarks, contours and measurement lines.

    Parameters
    ----------
    landmarks : DataFrame
        The ``landmarks`` table (``patient_id``, ``timestamp``, ``view``,
        ``landmark`` and/or ``name``, ``x``, ``y`` in pixels, y down).
    session : str, tuple or mapping, optional
        Which session: a ``patient_id`` (if it has one session), ``(patient_id,
        timestamp)`` or ``{"patient_id": …, "timestamp": …}``. Optional when the table
        holds one session.
    view : {"lateral", "frontal"}
    image : array, PIL image, PNG bytes or path, optional
        The radiograph, drawn underneath in pixel coordinates. Nothing is fetched.
    measures : sequence of str, optional
        Measure ids of :func:`dentalkit.ceph.load_measures` to draw and annotate
        (default :data:`DEFAULT_MEASURES`); ``[]`` draws none. Derived measures
        (``ANB`` = SNA − SNB) draw the lines of their operands.
    mm_per_px : float, optional
        Calibration: lengths are annotated in mm and a scale bar is drawn. Without it
        lengths are in px (never guessed).
    contours : bool
        Draw the landmark map's contour groups (numbered names such as
        ``mandible_contour_01`` …) as smooth centripetal Catmull–Rom curves through
        their points.
    closed : collection of str, optional
        Contour groups drawn as closed outlines (default :data:`CLOSED_CONTOURS`).
    label : "measures", "all", None or sequence of str
        Which landmarks get a name label: those the measures use (default), every
        non-contour landmark, none, or the listed names.
    landmark_map : path or DataFrame, optional
        Key → name map for rows without a ``name`` (default: the shipped map).
    crop : bool
        Limit the view to the landmarks (with a margin) rather than the whole image.
    show_axes : bool
        Pixel axes with labels (default) or no axes (a clean tracing).
    legend : {"above", "right", "inside"} or None
        Where the legend of measures goes.
    identity : "pseudonym", "raw", None or mapping
        How the legend's title names the session: "patient 3, session 2 (12 months)"
        (default: ranks among the table's patients and the patient's sessions, never an
        identifier or a timestamp), the stored ``patient_id`` and ``timestamp``
        (``"raw"``), nothing, or ``{patient_id: label}``.
    ax : matplotlib Axes, optional
        Where to draw. When it is the only Axes of its figure (or none is given), the
        figure's height is fitted to the view: no blank bands beside the tracing.

    Returns
    -------
    matplotlib Axes
        In image coordinates: equal aspect, **y axis inverted** (y down). The legend
        lists each measure with its value, as :func:`dentalkit.ceph.measure`
        computes it. Landmark names are written on white boxes placed where they cover
        no other name and as few measure lines and landmarks as can be.

    Notes
    -----
    Lines follow the measure's definition in ``dentalkit/data/ceph_measures.csv``:
    an angle at a vertex (``angle3``) is drawn as its two arms and an arc; an angle
    between two lines as both segments, extended (dashed) to their intersection when
    it lies near the head; a point-to-line distance as the line and the
    perpendicular; a distance along a reference line (Wits, N-perpendicular
    distances, frontal midline deviations) as the reference line, the perpendiculars
    dropped onto it (dashed) and the measured stretch between their feet.

    Examples
    --------
    >>> import matplotlib
    >>> matplotlib.use("Agg")
    >>> import pandas as pd
    >>> t = pd.DataFrame(
    ...     {
    ...         "patient_id": "p1",
    ...         "timestamp": "t1",
    ...         "name": ["S", "N", "A"],
    ...         "x": [700.0, 0.0, 0.0],
    ...         "y": [0.0, 0.0, 500.0],
    ...     }
    ... )
    >>> ax = tracing(t, measures=["SNA"])
    >>> [h.get_text() for h in ax.get_legend().get_texts()]
    ['SNA 90.0°']
    >>> ax.get_legend().get_title().get_text()
    'patient 1, session 1 (baseline)'
    >>> bool(ax.yaxis_inverted())
    True
    """
    check_identity(identity)
    catalog = _ceph.load_measures()
    if measures is None:
        measures = DEFAULT_MEASURES.get(view, ())
    measures = list(measures)
    unknown = [m for m in measures if m not in set(catalog["id"])]
    if unknown:
        raise InputError(f"unknown measure(s) {unknown}; see dentalkit.ceph.load_measures()")
    if mm_per_px is not None and not (
        isinstance(mm_per_px, int | float) and np.isfinite(mm_per_px) and mm_per_px > 0
    ):
        raise InputError(f"mm_per_px must be a positive number (mm per pixel), got {mm_per_px!r}")
    every = view_rows(landmarks, view)
    rows = select_session(every, session, what="landmarks")
    names = resolve_names(rows, view, landmark_map)
    xy = rows[["x", "y"]].to_numpy(dtype=float)
    known = pd.notna(names)
    dup = pd.Series(names[known]).duplicated()
    if dup.any():
        raise InputError(
            f"landmarks {sorted(set(pd.Series(names[known])[dup.to_numpy()]))} appear more "
            "than once in this session; give one session (and one tracing) at a time"
        )
    points = {n: p for n, p, k in zip(names, xy, known, strict=True) if k}

    created = ax is None
    ax = new_axes(ax, (85.0, 95.0))
    has_image = image is not None
    shape = None
    if has_image:
        shape = show_image(ax, image).shape
    line_colour = "#EDEDED" if has_image else "#4D4D4D"

    groups = contour_groups(names) if contours else {}
    closed_set = CLOSED_CONTOURS if closed is None else frozenset(closed)
    in_contour = np.zeros(len(names), dtype=bool)
    for g, pos in groups.items():
        in_contour[pos] = True
        curve = catmull_rom(xy[pos], closed=g in closed_set)
        ax.plot(
            *curve.T,
            color=line_colour,
            lw=LINE_PT["reference"],
            solid_capstyle="round",
            zorder=2,
            gid=f"contour:{g}",
        )
    solo = known & ~in_contour & np.isfinite(xy).all(axis=1)
    ax.scatter(
        *xy[solo].T,
        s=7,
        color="white" if has_image else "black",
        edgecolors="black",
        linewidths=0.3,
        zorder=4,
        gid="landmarks",
    )

    values = _values(rows, measures, mm_per_px, landmark_map, view)
    used = _draw_measures(ax, measures, points, catalog, values)
    finish_pixel_axes(ax, xy[:, 0], xy[:, 1], image_shape=shape, crop=crop, show_axes=show_axes)
    keyed = {"patient_id", "timestamp"} <= set(rows.columns)
    pid, ts = (rows["patient_id"].iloc[0], rows["timestamp"].iloc[0]) if keyed else ("", "")
    who = session_label(every, pid, ts, identity) if keyed else ""
    place_legend(ax, legend, ncols=3, title=who or None)
    if legend is None and who:
        ax.set_title(who, fontsize=fontsize("legend"), fontweight="normal")
    if owns_figure(ax, created):  # as tall as the view needs (the legend's space included)
        fit_height_to_view(ax)
    # labels after the limits and the size: their placement is decided in display space
    _label_points(ax, points, _label_names(label, used, names, in_contour), xy[solo])
    if mm_per_px is not None:
        scale_bar(
            ax,
            float(mm_per_px),
            colour="white" if has_image else "black",
            backdrop=has_image,
        )
    return ax


def _draw_measures(
    ax: Any, measures: list[str], points: dict, catalog: pd.DataFrame, values: dict
) -> list[str]:
    """Draw every measure once; a segment already drawn by an earlier measure is skipped."""
    used: list[str] = []
    drawn: set[tuple] = set()
    arcs_at: dict[tuple, int] = {}
    extent = np.ptp(np.array(list(points.values())), axis=0).max() if points else 1.0
    for i, m in enumerate(measures):
        prims, m_used = measure_primitives(m, points, catalog)
        if not prims:
            warnings.warn(
                f"measure {m} is not drawn: a landmark it needs is absent",
                DentalkitWarning,
                stacklevel=3,
            )
            continue
        used += [u for u in m_used if u not in used]
        colour = CATEGORICAL[i % len(CATEGORICAL)]
        val, unit = values.get(m, (np.nan, ""))
        text = f"{compact_label(catalog, m)} {with_unit(number(val), unit)}"
        drawable = [
            pr
            for pr in prims
            if pr.role == "arc" or tuple(sorted(map(tuple, np.round(pr.xy, 3)))) not in drawn
        ]
        solid = [pr for pr in drawable if pr.role != "construction"]
        labelled = solid[0] if solid else (drawable[0] if drawable else None)
        if labelled is None:  # every line already drawn by earlier measures: legend only
            ax.plot([], [], color=colour, label=text, gid=f"measure:{m}")
        for pr in prims:
            xy = pr.xy
            if pr.role == "arc":
                key_v = tuple(np.round(pr.center, 3))
                k = arcs_at.get(key_v, 0)
                arcs_at[key_v] = k + 1
                r = np.hypot(*(xy[0] - pr.center))
                target = min(r, 0.07 * extent) * (1.0 + 0.35 * k)
                xy = pr.center + (xy - pr.center) * (target / r if r > 0 else 1.0)
            else:
                key = tuple(sorted(map(tuple, np.round(xy, 3))))
                if key in drawn:
                    continue
                drawn.add(key)
            ax.plot(
                *xy.T,
                color=colour,
                lw=LINE_PT["construction"] if pr.role == "construction" else LINE_PT["data"],
                ls="--" if pr.role == "construction" else "-",
                zorder=3,
                label=text if pr is labelled else None,
                gid=f"measure:{m}",
            )
    return used


def _values(
    rows: pd.DataFrame, measures: list[str], mm_per_px: Any, landmark_map: Any, view: str
) -> dict[str, tuple[float, str]]:
    if not measures:
        return {}
    table = rows.drop(columns=["view"], errors="ignore")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DentalkitWarning)
        out, _ = _ceph.measure(
            table,
            measures,
            mm_per_px=mm_per_px,
            landmark_map=landmark_map,
            view=view,
            errors="collect",
        )
    return {
        str(m): (float(v), str(u))
        for m, v, u in zip(out["measure"], out["value"], out["unit"], strict=True)
    }


def _label_names(
    label: Any, used: list[str], names: np.ndarray, in_contour: np.ndarray
) -> list[str]:
    if label is None or label is False:
        return []
    if label == "measures":
        return used
    if label == "all":
        return [n for n, c in zip(names, in_contour, strict=True) if isinstance(n, str) and not c]
    return list(label)


def _label_points(ax: Any, points: dict, names: list[str], dots: np.ndarray) -> None:
    """Name the landmarks: each label on a white box, covering no other label.

    Candidates are the eight compass directions at two distances, outward (away from
    the centre of the labelled landmarks) first; the placement that crosses the fewest
    measure lines and hides the fewest landmarks wins (:func:`place_labels`). Decided in
    display space, so it needs the axes limits and the figure size set.
    """
    names = [n for n in names if n in points]
    if not names:
        return
    xy = np.array([points[n] for n in names], dtype=float)
    centre = xy.mean(axis=0)
    candidates = []
    for x, y in xy:
        options = compass((x, y), radii=(3.5, 8.0))
        out = np.array([x - centre[0], -(y - centre[1])])  # y down in the data
        start = np.arctan2(out[1], out[0]) if np.hypot(*out) > 1e-9 else np.pi / 4
        options.sort(key=lambda c: (np.hypot(*c.offset) > 5, _turn(c.offset, start)))
        candidates.append(options)
    segments = [
        np.column_stack(line.get_data())
        for line in ax.get_lines()
        if str(line.get_gid() or "").startswith("measure:")
    ]
    segs = (
        np.concatenate([np.stack([s[:-1], s[1:]], axis=1) for s in segments if len(s) > 1])
        if segments
        else None
    )
    place_labels(
        ax,
        [landmark_text(n) for n in names],
        candidates,
        segments=segs,
        points=np.vstack([dots, xy]) if len(dots) else xy,
        pad_pt=0.8,
        fontsize=fontsize("note"),
        color="black",
        zorder=5,
        bbox={"boxstyle": "round,pad=0.12", "fc": "white", "ec": "none", "alpha": 0.8},
    )


def _turn(offset: tuple[float, float], start: float) -> float:
    """Angle (radians, 0 … π) between an offset's direction and the direction ``start``."""
    a = np.arctan2(offset[1], offset[0]) - start
    return float(abs((a + np.pi) % (2 * np.pi) - np.pi))
