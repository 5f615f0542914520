"""``qc.teeth``: does each tooth outline fit its number?

Checks of each tooth row of the ``teeth`` table (the method is in ``docs/qc.md``):

single-session rules
    ``outline``: present but without a usable outline, repaired (self-intersecting as
    sent) or of zero area; ``overlap``: overlaps a neighbouring tooth of the same image by
    more than :data:`OVERLAP` of the smaller outline (one tooth segmented twice); ``order``:
    out of order with a neighbour along the arch (two numbers swapped); ``missing status``:
    present in one image of the session and missing in another.
cohort model
    ``area``: the outline's area relative to the median tooth of its image is far from
    what the cohort shows for that tooth number and image kind (robust z beyond
    :data:`AREA_Z`); needs ``min_sessions`` images of the kind.

``score`` is the number of checks the tooth fails; it is flagged when it fails one.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import shapely

from dentalkit.errors import check_errors
from dentalkit.qc._order import group_codes, out_of_order
from dentalkit.qc._report import finish, problem_rows
from dentalkit.qc._table import checked_input, key_columns, qc_frame, tally

__all__ = ["teeth"]

#: Overlap (fraction of the smaller outline) beyond which two neighbours are one tooth twice.
OVERLAP = 0.3
#: Robust z of log relative area beyond which an area does not fit the tooth's number.
AREA_Z = 5.0
#: Images (sources) whose teeth lie on a curve (occlusal views); the others in rows.
CURVED = ("occlusogram_upper", "occlusogram_lower")
_REQUIRED = ("patient_id", "timestamp", "source", "tooth", "fdi", "missing", "geometry")


def teeth(
    teeth: pd.DataFrame, *, min_sessions: int = 30, errors: str = "raise"
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """Quality control of the tooth outlines: one row per tooth row of ``teeth``.

    Parameters
    ----------
    teeth : DataFrame
        The ``teeth`` table (``docs/data-contract.md``): session key, ``source``,
        ``tooth``, ``fdi``, ``missing``, ``geometry`` (shapely polygons, pixels) and
        ``repaired``.
    min_sessions : int, default 30
        Fewest images of a kind for the cohort model of tooth areas.
    errors : {"raise", "collect", "warn"}, default "raise"
        Rows without an FDI number (unknown tooth keys) cannot be checked: dentalkit's
        ``errors=`` rule; ``"collect"`` returns ``(table, problems)``.

    Returns
    -------
    DataFrame
        The ``qc_teeth`` table: the common qc columns, then ``source``, ``tooth``, ``fdi``
        (in the order of ``teeth``).

    Examples
    --------
    >>> from shapely import box
    >>> t = pd.DataFrame(
    ...     {
    ...         "patient_id": "P1",
    ...         "timestamp": "t1",
    ...         "source": "pano",
    ...         "tooth": ["i1_rgt_up", "i2_rgt_up"],
    ...         "fdi": [11, 12],
    ...         "missing": False,
    ...         "geometry": [box(0, 0, 10, 30), box(2, 0, 12, 30)],
    ...         "repaired": False,
    ...     }
    ... )
    >>> teeth(t)[["tooth", "flagged", "failed_checks"]].to_dict("list")
    {'tooth': ['i1_rgt_up', 'i2_rgt_up'], 'flagged': [True, True], 'failed_checks': [['overlap'], ['overlap']]}
    """
    errors = check_errors(errors, "dentalkit.qc.teeth")
    t = checked_input(teeth, _REQUIRED, "teeth")
    n = len(t)
    fdi = pd.to_numeric(t["fdi"], errors="coerce").to_numpy(dtype=float)
    known = np.isfinite(fdi)
    fdi_i = np.where(known, fdi, 0).astype(np.int64)
    missing = t["missing"].to_numpy(dtype=bool)
    geom = t["geometry"].to_numpy(dtype=object)
    present = ~missing & known
    fails: list[list[str]] = [[] for _ in range(n)]
    notes: list[list[str]] = [[] for _ in range(n)]

    _outline(t, geom, present, fails, notes)
    _overlaps(t, geom, fdi_i, present, fails, notes)
    _order(t, geom, fdi_i, present, fails, notes)
    _missing_status(t, fdi_i, known, missing, fails, notes)
    model_sources = _areas(t, geom, fdi_i, present, int(min_sessions), fails, notes)

    counts, failed, reasons = tally(fails, notes)
    flagged = counts > 0
    source = t["source"].astype(str).to_numpy()
    method = np.where(
        np.isin(source, list(model_sources)),
        "cohort model and single-session rules",
        "single-session rules",
    ).astype(object)
    why = np.array(
        [
            f"areas against the cohort's images of this kind (≥ {min_sessions}); outline, "
            "overlap, order and missing status within the session"
            if s in model_sources
            else f"fewer than {min_sessions} images of this kind for a cohort model of tooth "
            "areas; outline, overlap, order and missing status within the session"
            for s in source
        ],
        dtype=object,
    )
    method[~known] = "not checked"
    why[~known] = "no FDI number (unknown tooth key)"
    counts[~known] = np.nan
    keys = key_columns(t)
    item = (t["source"].astype(str) + " " + t["tooth"].astype(str)).to_numpy(dtype=object)
    out = qc_frame(
        "teeth",
        keys,
        item=item,
        flagged=flagged,
        score=counts,
        threshold=1.0,
        reason=reasons,
        failed_checks=failed,
        method=method,
        method_reason=why,
        extra={
            "source": t["source"],
            "tooth": t["tooth"],
            "fdi": pd.Series(np.where(known, fdi_i, 0), dtype="Int16").where(known),
        },
    )
    prob = problem_rows(
        "teeth",
        t.loc[~known].assign(row=np.flatnonzero(~known)),
        "tooth key without an FDI number: not checked",
        field="tooth",
    )
    return finish(out, prob, errors, "dentalkit.qc.teeth")


def _outline(t, geom, present, fails, notes) -> None:
    repaired = t["repaired"].to_numpy(dtype=bool) if "repaired" in t else np.zeros(len(t), bool)
    area = np.zeros(len(t))
    has = np.array([g is not None for g in geom])
    area[has] = shapely.area(geom[has])
    for i in np.flatnonzero(present & (~has | (area <= 0) | repaired)):
        fails[i].append("outline")
        if not has[i] or area[i] <= 0:
            notes[i].append("present but without a usable outline")
        else:
            notes[i].append("outline self-intersecting as sent (repaired)")


def _neighbour_pairs(t: pd.DataFrame, fdi: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Row pairs (i, j) of present neighbouring teeth of one image (adjacent numbers)."""
    image = group_codes(t, [c for c in ("patient_id", "timestamp", "source") if c in t])
    rows = np.flatnonzero(present)
    key = pd.Series(rows, index=pd.MultiIndex.from_arrays([image[rows], fdi[rows]]))
    key = key[~key.index.duplicated()]
    q, d = fdi[rows] // 10, fdi[rows] % 10
    other_q = np.select([q == 1, q == 2, q == 3, q == 4], [2, 1, 4, 3], 0)
    cand = [(q * 10 + d + 1, rows), (np.where(d == 1, other_q * 10 + 1, 0), rows)]
    pairs = []
    for target, src in cand:
        idx = pd.MultiIndex.from_arrays([image[src], target])
        hit = key.reindex(idx).to_numpy()
        ok = ~np.isnan(hit)
        pairs.append(np.column_stack([src[ok], hit[ok].astype(np.int64)]))
    out = np.vstack(pairs) if pairs else np.zeros((0, 2), np.int64)
    return out[out[:, 0] != out[:, 1]]


def _overlaps(t, geom, fdi, present, fails, notes) -> None:
    usable = present & np.array([g is not None and not g.is_empty for g in geom])
    pairs = _neighbour_pairs(t, fdi, usable)
    if not len(pairs):
        return
    a, b = geom[pairs[:, 0]], geom[pairs[:, 1]]
    shared = shapely.area(shapely.intersection(a, b))
    smaller = np.minimum(shapely.area(a), shapely.area(b))
    frac = np.where(smaller > 0, shared / np.maximum(smaller, 1e-12), 0.0)
    for (i, j), f in zip(pairs[frac > OVERLAP], frac[frac > OVERLAP], strict=True):
        for me, other in ((i, j), (j, i)):
            if "overlap" not in fails[me]:
                fails[me].append("overlap")
            notes[me].append(f"overlaps FDI {fdi[other]} by {100 * f:.0f} % of the smaller outline")


def _order(t, geom, fdi, present, fails, notes) -> None:
    usable = present & np.array([g is not None and not g.is_empty for g in geom])
    rows = np.flatnonzero(usable)
    if not len(rows):
        return
    sub = t.iloc[rows]
    upper = np.isin(fdi[rows] // 10, (1, 2))
    cols = [c for c in ("patient_id", "timestamp", "source") if c in t]
    group = group_codes(sub.assign(_upper=upper), [*cols, "_upper"])
    c = shapely.centroid(geom[rows])
    x, y = shapely.get_x(c), shapely.get_y(c)
    curved = sub["source"].astype(str).isin(CURVED).to_numpy()
    swapped = np.zeros(len(rows), np.int64)
    for flag in (True, False):
        m = curved == flag
        if m.any():
            swapped[m] = out_of_order(group[m], fdi[rows][m], x[m], y[m], curve=flag)
    for k in np.flatnonzero(swapped):
        i = rows[k]
        fails[i].append("order")
        notes[i].append(f"out of order with FDI {swapped[k]} along the arch (numbers swapped?)")


def _missing_status(t, fdi, known, missing, fails, notes) -> None:
    """A tooth present in some images of a session and missing in others: the minority
    is flagged (both sides when the images are evenly split)."""
    cols = [c for c in ("patient_id", "timestamp") if c in t]
    if "source" not in t or not cols:
        return
    idx = np.flatnonzero(known)
    frame = t.iloc[idx][cols].astype(str).assign(_fdi=fdi[idx], _missing=missing[idx])
    grouped = frame.groupby([*cols, "_fdi"], sort=False)["_missing"]
    n_missing = grouped.transform("sum").to_numpy()
    n_images = grouped.transform("size").to_numpy()
    mine = np.where(missing[idx], n_missing, n_images - n_missing)  # images agreeing with me
    mixed = (n_missing > 0) & (n_missing < n_images)
    minority = mixed & (2 * mine <= n_images)
    src = t["source"].astype(str).to_numpy()
    for k in np.flatnonzero(minority):
        i = idx[k]
        fails[i].append("missing status")
        state = "missing" if missing[i] else "present"
        other = "present" if missing[i] else "missing"
        notes[i].append(
            f"{state} in {src[i]} but {other} in {n_images[k] - mine[k]} of the session's "
            f"other {n_images[k] - 1} image(s)"
        )


def _areas(t, geom, fdi, present, min_sessions, fails, notes) -> set[str]:
    """Cohort check of areas relative to the image's median tooth; returns the sources
    that had enough images for it."""
    usable = present & np.array([g is not None and not g.is_empty for g in geom])
    rows = np.flatnonzero(usable)
    if not len(rows):
        return set()
    cols = [c for c in ("patient_id", "timestamp", "source") if c in t]
    sub = t.iloc[rows][cols].astype(str)
    area = shapely.area(geom[rows])
    sub = sub.assign(_fdi=fdi[rows], _log=np.log(np.maximum(area, 1e-12)))
    sub["_rel"] = sub["_log"] - sub.groupby(cols, sort=False)["_log"].transform("median")
    images = sub.groupby("source")[cols[:-1]].apply(lambda g: len(g.drop_duplicates()))
    enough = set(images[images >= min_sessions].index)
    sub = sub[sub["source"].isin(enough)]
    if sub.empty:
        return enough
    grp = sub.groupby(["source", "_fdi"], sort=False)["_rel"]
    med = grp.transform("median")
    mad = grp.transform(lambda v: np.median(np.abs(v - np.median(v))))
    z = (sub["_rel"] - med) / np.maximum(1.4826 * mad, 1e-3)
    far = np.abs(z) > AREA_Z
    for i, zi in zip(sub.index[far], z[far], strict=True):  # labels are rows of t
        fails[i].append("area")
        notes[i].append(f"area {np.exp(sub['_rel'].loc[i]):.2f} × the image's median tooth: "
                        f"robust z {zi:+.1f} for FDI {fdi[i]} in this kind of image")  # fmt: skip
    return enough
