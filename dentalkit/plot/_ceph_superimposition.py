"""S–N registration and the superimposition of a patient's sessions (private)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from matplotlib.lines import Line2D

from dentalkit.errors import InputError
from dentalkit.plot._ceph_geometry import (
    CLOSED_CONTOURS,
    contour_groups,
    resolve_names,
    sn_frame,
    view_rows,
)
from dentalkit.plot._common import (
    catmull_rom,
    fit_height_to_view,
    new_axes,
    owns_figure,
    place_legend,
)
from dentalkit.plot._identity import Identity, check_identity, patient_label, session_label
from dentalkit.plot.house import LINE_PT, fontsize
from dentalkit.plot.style import CATEGORICAL

__all__ = ["DEFAULT_ARROWS", "sn_register", "superimposition"]

#: Landmarks whose displacement :func:`superimposition` draws as arrows by default.
DEFAULT_ARROWS = ("N", "A", "B", "Pog", "Me", "Go", "U1_tip", "L1_tip")


def sn_register(
    landmarks: pd.DataFrame,
    *,
    view: str = "lateral",
    scale: bool = False,
    mm_per_px: float | None = None,
    landmark_map: str | Path | pd.DataFrame | None = None,
    session_cols: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Register every session on S–N at S (cranial-base superimposition).

    For each session: translate so that S is at the origin, rotate so that S → N lies
    on the +x axis, with +y superior; a session whose face would come out above S–N
    (a film facing left) is mirrored so that every registered tracing faces right.
    With ``scale=True`` each session is also scaled so that its S–N length equals that
    of the patient's first session (removing overall size change to show shape
    change).

    Parameters
    ----------
    landmarks : DataFrame
        The ``landmarks`` table (several sessions and patients allowed).
    view : str
        Only ``"lateral"`` has S and N.
    scale : bool
        Scale to the first session's S–N length, per patient (sessions ordered by
        ``session_time`` when present, else by ``timestamp``).
    mm_per_px : float, optional
        Calibration of the output coordinates (else pixels).
    landmark_map : path or DataFrame, optional
        Key → name map for rows without ``name``.
    session_cols : sequence of str, optional
        Columns identifying a session (default: ``patient_id``, ``timestamp``).

    Returns
    -------
    DataFrame
        The rows of ``view`` plus ``name`` (resolved), ``x_sn``, ``y_sn`` (origin S, +x
        along S → N = anterior, +y superior), ``sn_length`` (S–N length of the
        session before scaling) and ``unit`` (``px`` or ``mm``).

    Raises
    ------
    InputError
        When a session lacks S or N, or has either twice.

    References
    ----------
    Ghafari J, Engel FE, Laster LL. Cephalometric superimposition on the cranial base:
    a review and a comparison of four methods. *Am J Orthod Dentofacial Orthop*
    1987;91:403–413 (the S–N line registered at S is the classic method).

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame(
    ...     {
    ...         "patient_id": "p",
    ...         "timestamp": "t",
    ...         "name": ["S", "N", "Me"],
    ...         "x": [100.0, 100.0, 40.0],
    ...         "y": [100.0, 30.0, 90.0],
    ...     }
    ... )
    >>> sn_register(t)[["name", "x_sn", "y_sn"]].round(6).values.tolist()
    [['S', 0.0, 0.0], ['N', 70.0, 0.0], ['Me', 10.0, -60.0]]
    """
    rows = view_rows(landmarks, view).copy()
    keys = (
        list(session_cols)
        if session_cols
        else [c for c in ("patient_id", "timestamp") if c in rows.columns]
    )
    rows["name"] = resolve_names(rows, view, landmark_map)
    code = (
        rows.groupby(keys, sort=False, observed=True, dropna=False).ngroup().to_numpy()
        if keys
        else np.zeros(len(rows), dtype=int)
    )
    n_sess = int(code.max()) + 1 if len(code) else 0
    xy = rows[["x", "y"]].to_numpy(dtype=float)
    names = rows["name"].astype(object).to_numpy()
    anchor = {}
    for ref in ("S", "N"):
        hit = names == ref
        counts = np.bincount(code[hit], minlength=n_sess)
        bad = np.flatnonzero(counts != 1)
        if len(bad):
            first = rows.iloc[[int(np.flatnonzero(code == b)[0]) for b in bad[:5]]][keys]
            raise InputError(
                f"{len(bad)} session(s) have {ref} missing or repeated, e.g. "
                f"{first.astype(str).to_dict('records')}; S–N registration needs exactly one "
                f"{ref} per session"
            )
        pos = np.empty(n_sess, dtype=int)
        pos[code[hit]] = np.flatnonzero(hit)
        anchor[ref] = xy[pos]
    others = ~np.isin(names, ["S", "N"]) & np.isfinite(xy).all(axis=1)
    cnt = np.maximum(np.bincount(code[others], minlength=n_sess), 1)
    face = np.column_stack(
        [np.bincount(code[others], xy[others, k], minlength=n_sess) / cnt for k in (0, 1)]
    )
    reg, length = sn_frame(xy, anchor["S"][code], anchor["N"][code], face[code])
    factor = np.ones(len(rows))
    if scale:
        order_col = "session_time" if "session_time" in rows.columns else "timestamp"
        sess = pd.DataFrame({"code": code, "length": length})
        sess["patient"] = rows["patient_id"].astype(str).to_numpy() if "patient_id" in rows else ""
        sess["order"] = rows[order_col].to_numpy() if order_col in rows else 0
        first = sess.sort_values(["patient", "order"], kind="stable").groupby("patient")["length"]
        ref_len = sess["patient"].map(first.first()).to_numpy()
        factor = ref_len / length
    k = factor * (1.0 if mm_per_px is None else float(mm_per_px))
    rows["x_sn"] = reg[:, 0] * k
    rows["y_sn"] = reg[:, 1] * k
    rows["sn_length"] = length * (1.0 if mm_per_px is None else float(mm_per_px))
    rows["unit"] = "px" if mm_per_px is None else "mm"
    return rows


def superimposition(
    landmarks: pd.DataFrame,
    patient_id: str | None = None,
    sessions: Sequence[str] | None = None,
    *,
    mm_per_px: float | None = None,
    scale: bool = False,
    contours: bool = True,
    closed: Collection[str] | None = None,
    arrows: Sequence[str] | None = DEFAULT_ARROWS,
    landmark_map: str | Path | pd.DataFrame | None = None,
    legend: str | None = "above",
    identity: Identity = "pseudonym",
    ax: Any = None,
) -> Any:
    """Two or more sessions of one patient superimposed on S–N at S.

    Parameters
    ----------
    landmarks : DataFrame
        The ``landmarks`` table (lateral rows are used).
    patient_id : str, optional
        The patient (optional when the table holds one).
    sessions : sequence of str, optional
        Timestamps to draw, in this order (default: all, in time order). The first is
        the reference of ``scale`` and the start of the arrows.
    mm_per_px : float, optional
        Calibration of the axes (else pixels).
    scale : bool
        Scale each session to the first one's S–N length (see :func:`sn_register`).
    contours, closed
        As in :func:`tracing`.
    arrows : sequence of str, optional
        Landmarks whose displacement from the first to the last session is drawn as
        an arrow (default :data:`DEFAULT_ARROWS`; ``None`` for none).
    landmark_map : path or DataFrame, optional
    legend : {"above", "right", "inside"} or None
    identity : "pseudonym", "raw", None or mapping
        How the patient and the sessions are named: "patient 3" and "session 2
        (12 months)" (default: never an identifier or a timestamp), the stored
        ``patient_id`` and timestamps (``"raw"``), nothing, or ``{patient_id: label}``.
    ax : matplotlib Axes, optional
        When it is the only Axes of its figure (or none is given), the figure's height
        is fitted to the tracings.

    Returns
    -------
    matplotlib Axes
        In the S–N frame: origin S, x anterior along S–N, y superior (not image
        coordinates, so y is **not** inverted), equal aspect, one colour per session.
        The legend explains every mark: the sessions (time from the first), S (+) and
        the S–N line of the first session, and the arrows (displacement of the named
        landmarks from the first to the last session).
    """
    check_identity(identity)
    rows = every = view_rows(landmarks, "lateral")
    if patient_id is None:
        pids = rows["patient_id"].astype(str).unique() if "patient_id" in rows else []
        if len(pids) != 1:
            raise InputError(
                f"the landmarks table holds {len(pids)} patients; choose one with patient_id="
            )
        patient_id = str(pids[0])
    rows = rows[rows["patient_id"].astype(str) == str(patient_id)]
    if not len(rows):
        raise InputError(f"no lateral landmarks of patient {patient_id!r}")
    order_col = "session_time" if "session_time" in rows.columns else "timestamp"
    cols = list(dict.fromkeys([order_col, "timestamp"]))
    available = (
        rows[cols].drop_duplicates("timestamp").sort_values(cols)["timestamp"].astype(str).tolist()
    )
    if sessions is None:
        sessions = available
    sessions = [str(s) for s in sessions]
    missing = [s for s in sessions if s not in available]
    if missing:
        raise InputError(
            f"patient {patient_id!r} has no session(s) {missing}; sessions: {available}"
        )
    if len(sessions) < 2:
        raise InputError(
            f"a superimposition needs at least two sessions; patient {patient_id!r} has {available}"
        )
    rows = rows[rows["timestamp"].astype(str).isin(sessions)].copy()
    rank = {s: i for i, s in enumerate(sessions)}
    rows["_rank"] = rows["timestamp"].astype(str).map(rank)
    if scale:
        rows["session_time"] = rows["_rank"]  # the caller's order decides the reference
    reg = sn_register(rows, scale=scale, mm_per_px=mm_per_px, landmark_map=landmark_map)
    unit = "mm" if mm_per_px is not None else "px"

    created = ax is None
    ax = new_axes(ax, (85.0, 75.0))
    closed_set = CLOSED_CONTOURS if closed is None else frozenset(closed)
    for ts in sessions:
        part = reg[reg["timestamp"].astype(str) == ts]
        colour = CATEGORICAL[rank[ts] % len(CATEGORICAL)]
        pxy = part[["x_sn", "y_sn"]].to_numpy()
        names = part["name"].to_numpy()
        groups = contour_groups(names) if contours else {}
        in_contour = np.zeros(len(part), dtype=bool)
        for g, pos in groups.items():
            in_contour[pos] = True
            c = catmull_rom(pxy[pos], closed=g in closed_set)
            ax.plot(*c.T, color=colour, lw=LINE_PT["reference"] + 0.2, zorder=2,
                    gid=f"contour:{ts}:{g}")  # fmt: skip
        solo = ~in_contour & pd.notna(names)
        ax.scatter(*pxy[solo].T, s=5, color=colour, zorder=3, linewidths=0, gid=f"landmarks:{ts}")
    ref = reg[reg["timestamp"].astype(str) == sessions[0]]
    n_x = float(ref.loc[ref["name"] == "N", "x_sn"].iloc[0])
    ax.plot([0.0, n_x], [0.0, 0.0], color="black", lw=LINE_PT["reference"], zorder=4, gid="SN")
    ax.plot([0.0], [0.0], marker="+", ms=6, color="black", zorder=4, gid="S")
    ax.annotate(
        "S", (0, 0), xytext=(-4, 3), textcoords="offset points", ha="right",
        fontsize=fontsize("note"),
    )  # fmt: skip
    moved = _arrows(ax, reg, sessions[0], sessions[-1], arrows) if arrows else []
    ax.set_aspect("equal")
    ax.set_xlabel(f"along S–N, anterior ({unit})")
    ax.set_ylabel(f"superior ({unit})")
    note = "registered on S–N at S" + (", scaled to the first S–N" if scale else "")
    handles = [
        Line2D(
            [],
            [],
            color=CATEGORICAL[rank[ts] % len(CATEGORICAL)],
            marker="o",
            ms=2.5,
            lw=0.8,
            label=session_label(rows, patient_id, ts, identity, with_patient=False) or f"{i + 1}",
        )
        for i, ts in enumerate(sessions)
    ]
    handles.append(
        Line2D([], [], color="black", marker="+", ms=5, lw=LINE_PT["reference"],
               label="S (+) and S–N of the first session")
    )  # fmt: skip
    if moved:
        handles.append(
            Line2D([], [], color="black", marker=">", ms=3, lw=0.7,
                   label="movement, first to last session")
        )  # fmt: skip
    who = patient_label(every, patient_id, identity)
    place_legend(ax, legend, ncols=2, handles=handles, title=f"{who}, {note}" if who else note)
    if owns_figure(ax, created):
        fit_height_to_view(ax)
    return ax


def _arrows(ax: Any, reg: pd.DataFrame, first: str, last: str, names: Sequence[str]) -> list[str]:
    """Arrows from each named landmark's first to its last position; the names drawn."""

    def at(ts: str) -> pd.DataFrame:
        part = reg[(reg["timestamp"].astype(str) == ts) & reg["name"].isin(list(names))]
        return part.drop_duplicates("name").set_index("name")[["x_sn", "y_sn"]]

    a, b = at(first), at(last)
    common = [n for n in names if n in a.index and n in b.index]
    for n in common:
        ax.annotate(
            "",
            xy=tuple(b.loc[n]),
            xytext=tuple(a.loc[n]),
            zorder=5,
            arrowprops={
                "arrowstyle": "-|>",
                "lw": 0.7,
                "color": "black",
                "shrinkA": 0,
                "shrinkB": 0,
                "mutation_scale": 6,
            },
            gid=f"arrow:{n}",
        )
    return common
