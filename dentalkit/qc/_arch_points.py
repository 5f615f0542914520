"""``qc.arch_points``: are the catenary points of each arch in order and evenly spaced?

Checks of each arch (one image of one session) of the ``arch_points`` table:

``order``
    The points, taken in the order of their numbers (right second molar, …, right central
    incisor, left central incisor, …, left second molar), must run along the arch: two
    points whose places are reversed are out of order (:mod:`dentalkit.qc._order`).
``spacing``
    Each gap between consecutive points (in the order of their numbers) must lie within
    :data:`SPACING` times the arch's median gap: a much shorter gap is a point given twice,
    a much longer one a point far from its tooth.

Single-session rules only: an arch is checked against itself, whatever the cohort size.
``score`` is the number of checks the arch fails; it is flagged when it fails one.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dentalkit.errors import InputError, check_errors
from dentalkit.qc._order import group_codes, out_of_order, signed_place
from dentalkit.qc._report import finish, problem_rows
from dentalkit.qc._table import no_lists, qc_frame

__all__ = ["arch_points"]

#: A gap outside [low, high] × the arch's median gap fails ``spacing``.
SPACING = (0.25, 3.0)
_REQUIRED = ("patient_id", "timestamp", "arch", "index", "x", "y")


def arch_points(
    arch_points: pd.DataFrame, *, errors: str = "raise"
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """Quality control of the catenary points: one row per session and arch.

    Parameters
    ----------
    arch_points : DataFrame
        The ``arch_points`` table: session key, ``arch``, ``point``, ``index`` (the FDI
        number in the key: ``t16`` → 16), ``x``, ``y`` (pixels).
    errors : {"raise", "collect", "warn"}, default "raise"
        Arches with fewer than 3 points cannot be checked: dentalkit's ``errors=`` rule.

    Returns
    -------
    DataFrame
        The ``qc_arch_points`` table: the common qc columns, then ``arch``,
        ``suspect_points`` (list of point names) and ``n_points``.

    Examples
    --------
    >>> pts = pd.DataFrame(
    ...     {
    ...         "patient_id": "P1",
    ...         "timestamp": "t1",
    ...         "arch": "up",
    ...         "point": ["t13", "t12", "t11", "t21", "t22", "t23"],
    ...         "index": [13, 12, 11, 21, 22, 23],
    ...         "x": [0.0, 4.0, 9.0, 15.0, 20.0, 24.0],
    ...         "y": [10.0, 5.0, 1.0, 1.0, 5.0, 10.0],
    ...     }
    ... )
    >>> arch_points(pts)["flagged"].tolist()
    [False]
    >>> pts.loc[[1, 2], ["x", "y"]] = pts.loc[[2, 1], ["x", "y"]].to_numpy()  # t12 ↔ t11
    >>> arch_points(pts)[["flagged", "suspect_points"]].to_dict("list")
    {'flagged': [True], 'suspect_points': [['t12', 't11']]}
    """
    errors = check_errors(errors, "dentalkit.qc.arch_points")
    if not isinstance(arch_points, pd.DataFrame):
        raise InputError(
            f"arch_points must be a pandas DataFrame, got {type(arch_points).__name__}"
        )
    absent = [c for c in _REQUIRED if c not in arch_points.columns]
    if absent:
        raise InputError(f"arch_points table lacks column(s) {absent}")
    t = arch_points.reset_index(drop=True)
    cols = ["patient_id", "timestamp", "arch"]
    group = group_codes(t, cols)
    fdi = pd.to_numeric(t["index"], errors="coerce").fillna(0).to_numpy(np.int64)
    x, y = t["x"].to_numpy(float), t["y"].to_numpy(float)
    swapped = out_of_order(group, fdi, x, y, curve=True)
    gaps = _gaps(group, fdi, x, y)
    n_groups = int(group.max()) + 1 if len(group) else 0
    first = np.full(n_groups, -1, np.int64)
    first[group[::-1]] = np.arange(len(group))[::-1]
    n_points = np.bincount(group, minlength=n_groups)
    names = t["point"].astype(str).to_numpy() if "point" in t else fdi.astype(str)
    fails = [[] for _ in range(n_groups)]
    notes = [[] for _ in range(n_groups)]
    suspects = no_lists(n_groups)
    for i in np.flatnonzero(swapped):
        g = group[i]
        if "order" not in fails[g]:
            fails[g].append("order")
        notes[g].append(f"{names[i]} out of order with t{swapped[i]}")
        suspects[g] = [*(suspects[g] or []), names[i]]
    for i in np.flatnonzero(np.isfinite(gaps)):
        g = group[i]
        if "spacing" not in fails[g]:
            fails[g].append("spacing")
        notes[g].append(f"gap before {names[i]} {gaps[i]:.2f} × the arch's median gap")
        if names[i] not in (suspects[g] or []):
            suspects[g] = [*(suspects[g] or []), names[i]]
    checked = n_points >= 3
    score = np.array([len(f) for f in fails], dtype=float)
    score[~checked] = np.nan
    failed = no_lists(n_groups)
    for g in range(n_groups):
        failed[g] = fails[g] or None
    key_cols = ("patient_id", "timestamp", "session_time", "endpoint", "arch")
    keys = t.iloc[first][[c for c in key_cols if c in t]]
    out = qc_frame(
        "arch_points",
        keys,
        item=("arch points " + t["arch"].astype(str).to_numpy()[first]).astype(object),
        flagged=score > 0,
        score=score,
        threshold=1.0,
        reason=np.array(["; ".join(n) if n else None for n in notes], dtype=object),
        failed_checks=failed,
        method=np.where(checked, "single-session rules", "not checked").astype(object),
        method_reason=np.where(
            checked,
            "order and spacing are checked within each arch (no cohort model needed)",
            "fewer than 3 points",
        ).astype(object),
        extra={"suspect_points": suspects, "n_points": n_points.astype(np.int64)},
    )
    prob = problem_rows(
        "arch_points", keys[~checked], "fewer than 3 catenary points: arch not checked"
    )
    return finish(out, prob, errors, "dentalkit.qc.arch_points")


def _gaps(group: np.ndarray, fdi: np.ndarray, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Per point: its gap to the previous point (in number order) / the arch's median gap
    where outside :data:`SPACING`, else NaN."""
    out = np.full(len(fdi), np.nan)
    order = np.lexsort((signed_place(fdi), group))
    g, px, py = group[order], x[order], y[order]
    same = np.r_[False, g[1:] == g[:-1]]
    gap = np.r_[np.nan, np.hypot(np.diff(px), np.diff(py))]
    gap[~same] = np.nan
    med = pd.Series(gap).groupby(g).transform("median").to_numpy()
    with np.errstate(invalid="ignore", divide="ignore"):
        rel = gap / med
    bad = same & ((rel < SPACING[0]) | (rel > SPACING[1]))
    out[order[bad]] = rel[bad]
    return out
