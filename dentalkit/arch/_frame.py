"""The canonical arch frame: finding it from an arch's own points, and moving tables in and out.

Canonical frame (all of :mod:`dentalkit.arch` uses it)
-----------------------------------------------------
* origin at the incisal point, where the midline crosses the arch;
* the midline is the y-axis and the arch opens toward **+y** (the molars are at
  positive y: +y points posteriorly);
* **+x points to the patient's left**.

The transform from image pixels ``p = (x, y)`` to canonical coordinates
``q = (x_canonical, y_canonical)`` is a similarity with an optional mirror::

    q = scale · R(θ) · F · (p − t)          p = t + F · R(−θ) · q / scale

with ``R(θ) = [[cos θ, −sin θ], [sin θ, cos θ]]``, ``F = diag(−1, 1)`` when
``reflected`` else the identity, ``t = (tx, ty)`` the incisal point in image
pixels and ``scale`` the unit per pixel (1 for pixels, ``mm_per_px`` for mm).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np
import pandas as pd

from dentalkit.arch._tables import ARCH_KEY, Errors, Stacked, require_columns, stack_points
from dentalkit.errors import InputError

#: Columns of a transform table.
TRANSFORM_COLUMNS = ("rotation_deg", "reflected", "tx", "ty", "scale")


class Alignment(NamedTuple):
    """Result of :func:`align`.

    Attributes
    ----------
    points : DataFrame
        The input points with ``x_canonical`` and ``y_canonical`` added (NaN for
        arches that could not be aligned).
    transforms : DataFrame
        One row per arch: session key, ``arch``, ``status``, ``reason``,
        ``n_points``, ``rotation_deg``, ``reflected``, ``tx``, ``ty`` (px),
        ``scale`` (unit per px), ``unit``, ``side_source``.
    """

    points: pd.DataFrame
    transforms: pd.DataFrame


def frame_from_points(
    xy: np.ndarray, mask: np.ndarray, n: np.ndarray, usable: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Geometric frame of each arch from its ordered points (vectorized).

    Parameters
    ----------
    xy : ndarray (m, N, 2)
        Points in the order of their number, left-aligned, NaN-padded.
    mask : ndarray of bool (m, N)
    n : ndarray of int (m,)
    usable : ndarray of bool (m,)
        Arches to process; the others get NaN.

    Returns
    -------
    ex, ey : ndarray (m, 2)
        Unit vectors of the canonical x (from the first point's end toward the
        last point's end) and y (posterior) axes, in input coordinates.
    origin : ndarray (m, 2)
        The incisal point.
    centroid : ndarray (m, 2)
    reason : ndarray of object (m,)
        ``None`` or why no frame exists.

    Notes
    -----
    Pairs point *i* with point *n − 1 − i* (the points are ordered from one
    end of the arch to the other). The x-axis is the direction of the sum of
    the pair vectors ``p[n−1−i] − p[i]``; the midline is perpendicular to it
    through the centroid; +y is the side toward which the points far from the
    midline lie (the arch ends are posterior); the origin is the most anterior
    crossing of the midline by the polyline through the points. For a
    symmetric arch sampled symmetrically all of this is exact; otherwise it is
    a starting frame that :func:`dentalkit.arch.fit` refines (``pose="fit"``).
    """
    m, N = mask.shape
    reason = np.full(m, None, dtype=object)
    ok = usable & (n >= 3)
    reason[usable & (n < 3)] = "fewer than 3 arch points: no frame"
    # non-finite points (their arch is a bad_input row) must not spread NaN warnings
    pts = np.where(mask[..., None] & np.isfinite(xy), xy, 0.0)
    cnt = np.maximum(n, 1)[:, None]
    centroid = pts.sum(axis=1) / cnt
    ar = np.arange(N)
    partner = np.clip(n[:, None] - 1 - ar[None, :], 0, max(N - 1, 0))
    p_rev = np.take_along_axis(pts, partner[..., None], axis=1)
    first_half = mask & (2 * ar[None, :] < n[:, None] - 1)
    w = np.where(first_half[..., None], p_rev - pts, 0.0).sum(axis=1)
    wn = np.hypot(w[:, 0], w[:, 1])
    scale = np.sqrt(
        (np.where(mask[..., None], pts - centroid[:, None, :], 0.0) ** 2).sum((1, 2)) / cnt[:, 0]
    )
    flat = ok & ~(wn > 1e-12 * np.maximum(scale, 1e-300))
    reason[flat] = "arch points have no left-right extent (both ends coincide): no frame"
    ok &= ~flat
    with np.errstate(invalid="ignore", divide="ignore"):
        ex = w / wn[:, None]
    perp = np.stack([-ex[:, 1], ex[:, 0]], axis=1)
    # per coordinate, (m, N) arrays: numpy is slow on a trailing axis of length 2
    dx = pts[..., 0] - centroid[:, 0, None]
    dy = pts[..., 1] - centroid[:, 1, None]
    X = dx * ex[:, 0, None] + dy * ex[:, 1, None]
    Y = dx * perp[:, 0, None] + dy * perp[:, 1, None]
    absx = np.abs(X)
    mx = np.where(mask, absx, 0).sum(1) / cnt[:, 0]
    my = np.where(mask, Y, 0).sum(1) / cnt[:, 0]
    cov = np.where(mask, (absx - mx[:, None]) * (Y - my[:, None]), 0).sum(1)
    straight = ok & ~(np.abs(cov) > 1e-12 * np.maximum(scale, 1e-300) ** 2 * n)
    reason[straight] = "arch points lie on a straight line: no arch opening direction"
    ok &= ~straight
    sign = np.where(cov < 0, -1.0, 1.0)
    ey = perp * sign[:, None]
    Y = Y * sign[:, None]
    # most anterior crossing of the midline (X = 0) along the polyline
    X0, X1 = X[:, :-1], X[:, 1:]
    Y0, Y1 = Y[:, :-1], Y[:, 1:]
    seg = mask[:, :-1] & mask[:, 1:]
    cross = seg & (X0 * X1 <= 0)
    with np.errstate(invalid="ignore", divide="ignore"):
        dx = X1 - X0
        frac = np.where(dx != 0, -X0 / dx, 0.0)
        yc = np.where(cross, Y0 + frac * (Y1 - Y0), np.inf)
    yc_min = yc.min(axis=1) if N > 1 else np.full(m, np.inf)
    nocross = ok & ~np.isfinite(yc_min)
    reason[nocross] = "arch points do not cross their midline: no incisal point"
    ok &= ~nocross
    origin = centroid + yc_min[:, None] * ey
    for arr in (ex, ey, origin, centroid):
        arr[~ok] = np.nan
    return ex, ey, origin, centroid, reason


def side_signs_from_teeth(
    keys: pd.DataFrame,
    ex: np.ndarray,
    centroid: np.ndarray,
    tooth_keypoints: pd.DataFrame,
    scale: np.ndarray,
) -> np.ndarray:
    """+1 when ``ex`` points to the patient's left according to the teeth, −1 when
    to the right, 0 when the teeth do not tell (no usable ``_lft``/``_rgt`` centroids).
    """
    require_columns(tooth_keypoints, [*ARCH_KEY, "tooth", "point", "x", "y"], "tooth_keypoints")
    tk = tooth_keypoints
    sel = tk["point"].astype(str).eq("centroid")
    if "missing" in tk.columns:
        sel &= ~tk["missing"].fillna(False).astype(bool)
    tk = tk.loc[sel, [*ARCH_KEY, "tooth", "x", "y"]].copy()
    side = tk["tooth"].astype(str).str.split("_").str[1]
    tk["_s"] = np.select([side.eq("lft"), side.eq("rgt")], [1.0, -1.0], 0.0)
    tk = tk[tk["_s"] != 0]
    out = np.zeros(len(keys))
    if tk.empty:
        return out
    k = keys[list(ARCH_KEY)].astype(str).copy()
    k["_g"] = np.arange(len(keys))
    for c in ARCH_KEY:
        tk[c] = tk[c].astype(str)
    tk = tk.merge(k, on=list(ARCH_KEY), how="inner")
    if tk.empty:
        return out
    g = tk["_g"].to_numpy()
    p = tk[["x", "y"]].to_numpy(dtype=float) * scale[g][:, None]
    proj = ((p - centroid[g]) * ex[g]).sum(-1) * tk["_s"].to_numpy()
    vote = np.bincount(g, weights=np.nan_to_num(proj), minlength=len(keys))
    return np.sign(vote)


def transform_params(
    ex: np.ndarray, ey: np.ndarray, origin: np.ndarray, scale: np.ndarray
) -> dict[str, np.ndarray]:
    """Rotation (deg), reflection flag and translation (px) from unit axes in unit coordinates.

    ``ex``/``ey``/``origin`` are expressed in calibrated coordinates
    ``scale · p``; the returned ``tx``, ``ty`` are image pixels.
    """
    det = ex[:, 0] * ey[:, 1] - ex[:, 1] * ey[:, 0]
    reflected = det < 0
    # M = [ex; ey] = R(θ)·F  →  first column of M·F is (cos θ, sin θ)
    c = np.where(reflected, -ex[:, 0], ex[:, 0])
    s = np.where(reflected, -ey[:, 0], ey[:, 0])
    theta = np.degrees(np.arctan2(s, c))
    t = origin / scale[:, None]
    return {
        "rotation_deg": theta,
        "reflected": reflected,
        "tx": t[:, 0],
        "ty": t[:, 1],
        "scale": scale.astype(float),
    }


def matrices(transforms: pd.DataFrame) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(M, t, scale) with ``q = scale · M · (p − t)``; ``M`` rows are the canonical axes."""
    refl = transforms["reflected"].astype("boolean").fillna(False).to_numpy(dtype=bool)
    return matrices_from(
        transforms["rotation_deg"].to_numpy(dtype=float),
        refl,
        transforms[["tx", "ty"]].to_numpy(dtype=float),
        transforms["scale"].to_numpy(dtype=float),
    )


def matrices_from(
    rotation_deg: np.ndarray, reflected: np.ndarray, t: np.ndarray, scale: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """As :func:`matrices`, from arrays."""
    th = np.radians(rotation_deg)
    c, s = np.cos(th), np.sin(th)
    f = np.where(reflected, -1.0, 1.0)
    M = np.empty((len(th), 2, 2))
    M[:, 0, 0] = c * f
    M[:, 0, 1] = -s
    M[:, 1, 0] = s * f
    M[:, 1, 1] = c
    return M, t, scale


def _lookup(table: pd.DataFrame, transforms: pd.DataFrame, name: str) -> np.ndarray:
    """Row of ``transforms`` for each row of ``table`` (−1 when none)."""
    require_columns(table, list(ARCH_KEY), name)
    require_columns(transforms, [*ARCH_KEY, *TRANSFORM_COLUMNS], "transforms")
    extra = [c for c in ("model",) if c in transforms.columns and c in table.columns]
    on = [*ARCH_KEY, *extra]
    tr = transforms[on].astype(str).copy()
    if tr.duplicated().any():
        raise InputError(
            f"transforms has several rows per {on}: pass one model's rows "
            "(e.g. fits[fits.model == 'catenary']) or give the table a 'model' column"
        )
    tr["_t"] = np.arange(len(transforms))
    left = table[on].astype(str)
    return left.merge(tr, on=on, how="left")["_t"].fillna(-1).to_numpy(dtype=np.int64)


def to_canonical(
    table: pd.DataFrame,
    transforms: pd.DataFrame,
    *,
    x: str = "x",
    y: str = "y",
) -> pd.DataFrame:
    """Map image pixels of any per-arch table into each arch's canonical frame.

    Parameters
    ----------
    table : DataFrame
        Any table with ``patient_id``, ``timestamp``, ``arch`` and pixel
        columns ``x``/``y`` (e.g. ``tooth_keypoints`` or ``arch_points``).
    transforms : DataFrame
        ``align(...).transforms`` or a fits table (one model, or matched on
        ``model`` when ``table`` has that column).
    x, y : str
        Names of the pixel columns.

    Returns
    -------
    DataFrame
        A copy of ``table`` with ``x_canonical``, ``y_canonical`` added (unit of
        the transform: px, or mm when ``scale`` is mm per px; NaN where the arch
        has no transform).

    Examples
    --------
    >>> import pandas as pd
    >>> tr = pd.DataFrame(
    ...     {
    ...         "patient_id": ["p"],
    ...         "timestamp": ["t"],
    ...         "arch": ["up"],
    ...         "rotation_deg": [90.0],
    ...         "reflected": [False],
    ...         "tx": [10.0],
    ...         "ty": [0.0],
    ...         "scale": [1.0],
    ...     }
    ... )
    >>> pts = pd.DataFrame(
    ...     {"patient_id": ["p"], "timestamp": ["t"], "arch": ["up"], "x": [11.0], "y": [0.0]}
    ... )
    >>> to_canonical(pts, tr)[["x_canonical", "y_canonical"]].round(12).values.tolist()
    [[0.0, 1.0]]
    """
    k = _lookup(table, transforms, "table")
    M, t, sc = matrices(transforms)
    p = table[[x, y]].to_numpy(dtype=float)
    ok = k >= 0
    kk = np.where(ok, k, 0)
    q = sc[kk, None] * np.einsum("nij,nj->ni", M[kk], p - t[kk])
    q[~ok] = np.nan
    out = table.copy()
    out["x_canonical"] = q[:, 0]
    out["y_canonical"] = q[:, 1]
    return out


def to_image(
    table: pd.DataFrame,
    transforms: pd.DataFrame,
    *,
    x: str = "x_canonical",
    y: str = "y_canonical",
) -> pd.DataFrame:
    """Map canonical coordinates back to image pixels: the inverse of :func:`to_canonical`.

    Parameters
    ----------
    table : DataFrame
        Any table with ``patient_id``, ``timestamp``, ``arch`` and canonical
        columns (default ``x_canonical``, ``y_canonical``; e.g. the output of
        :func:`dentalkit.arch.curve` with ``x="x", y="y"``).
    transforms : DataFrame
        As for :func:`to_canonical`.

    Returns
    -------
    DataFrame
        A copy with ``x_image``, ``y_image`` (pixels) added.
    """
    k = _lookup(table, transforms, "table")
    M, t, sc = matrices(transforms)
    q = table[[x, y]].to_numpy(dtype=float)
    ok = k >= 0
    kk = np.where(ok, k, 0)
    # M is orthogonal: M^-1 = M^T
    p = t[kk] + np.einsum("nji,nj->ni", M[kk], q) / sc[kk, None]
    p[~ok] = np.nan
    out = table.copy()
    out["x_image"] = p[:, 0]
    out["y_image"] = p[:, 1]
    return out


def align_stacked(
    st: Stacked,
    tooth_keypoints: pd.DataFrame | None,
    first_point_side: str,
) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Frame of every stacked arch: transform columns, side source, reasons."""
    if first_point_side not in ("right", "left"):
        raise InputError(f"first_point_side must be 'right' or 'left', got {first_point_side!r}")
    usable = np.array([b is None for b in st.bad], dtype=bool)
    ex, ey, origin, centroid, reason = frame_from_points(st.xy, st.mask, st.n, usable)
    reason = np.where(usable, reason, st.bad)
    # +x must point to the patient's left; ex points from the first point to the last.
    # FDI point numbers put the first point on the patient's right; otherwise the
    # first point is on the patient's `first_point_side`.
    sign = np.where(st.fdi, 1.0, 1.0 if first_point_side == "right" else -1.0)
    source = np.where(st.fdi, "fdi_keys", "point_order").astype(object)
    if tooth_keypoints is not None:
        vote = side_signs_from_teeth(st.keys, ex, centroid, tooth_keypoints, st.scale)
        sign = np.where(vote != 0, vote, sign)
        source = np.where(vote != 0, "teeth", source)
    ex = ex * sign[:, None]
    params = transform_params(ex, ey, origin, st.scale)
    failed = _notnone(reason)
    source[failed] = None
    return params, source, reason


def align(
    arch_points: pd.DataFrame,
    tooth_keypoints: pd.DataFrame | None = None,
    *,
    mm_per_px: float | pd.DataFrame | None = None,
    first_point_side: str = "right",
    point_keys: str = "auto",
    errors: Errors = "raise",
) -> Alignment:
    """Put every arch into the canonical frame computed from its own points.

    The frame (see ``docs/arch.md``): incisal point at the origin, midline on
    the y-axis, the arch opening toward +y (posterior), +x to the patient's
    left. Which end is the patient's left is read from the tooth keys
    (``*_lft_*`` / ``*_rgt_*`` centroids) when ``tooth_keypoints`` is given and
    has them for that arch; else from FDI point numbers (``t17`` is the
    patient's upper right); else from the point order (``first_point_side``).

    Parameters
    ----------
    arch_points : DataFrame
        The ``arch_points`` table (``patient_id``, ``timestamp``, ``arch``,
        ``index`` or ``point``, ``x``, ``y`` in pixels).
    tooth_keypoints : DataFrame, optional
        The ``tooth_keypoints`` table, used only to tell left from right.
    mm_per_px : float or DataFrame, optional
        Calibration; canonical coordinates are then in mm.
    first_point_side : {"right", "left"}
        The patient's side of the first point along the arch when neither the
        teeth nor FDI point numbers tell. Default "right" (a documented choice:
        the specification does not say what the point numbers mean).
    point_keys : {"auto", "fdi", "sequence"}
        How the point numbers order the points along the arch: FDI tooth
        numbers (``t17`` … ``t11``, ``t21`` … ``t27``; the sandbox's keys) or a
        sequence from one end to the other; "auto" uses FDI when every number
        of an arch is an FDI tooth of that arch.
    errors : {"raise", "collect", "warn"}
        dentalkit's one ``errors=`` rule (:func:`dentalkit.errors.check_errors`).
        Bad point rows raise :class:`~dentalkit.errors.InputError` (``"raise"``,
        default), or make their arch a result row with ``status="bad_input"``
        (``"collect"``; ``"warn"`` also emits one
        :class:`~dentalkit.errors.DentalkitWarning`).

    Returns
    -------
    Alignment
        ``points`` (input + ``x_canonical``, ``y_canonical``) and
        ``transforms`` (one row per arch; see :class:`Alignment`). Arches
        without a frame have ``status`` other than "ok", a ``reason`` and NaN.

    Notes
    -----
    The frame is geometric (see :func:`frame_from_points`): exact for a
    symmetric arch sampled symmetrically, a good start otherwise.
    :func:`dentalkit.arch.fit` with ``pose="fit"`` refines it per model.
    """
    st = stack_points(arch_points, mm_per_px=mm_per_px, errors=errors, point_keys=point_keys)
    params, source, reason = align_stacked(st, tooth_keypoints, first_point_side)
    transforms = transforms_table(st, params, reason)
    transforms["side_source"] = pd.Categorical(source, categories=SIDE_SOURCES)
    M, t, sc = matrices_from(
        params["rotation_deg"],
        params["reflected"],
        np.column_stack([params["tx"], params["ty"]]),
        st.scale,
    )
    g = st.row_arch
    p = st.xy[g, st.row_pos] / sc[g, None]  # back to pixels (NaN where bad)
    q = sc[g, None] * np.einsum("nij,nj->ni", M[g], p - t[g])
    points = arch_points.copy()
    points["x_canonical"] = q[:, 0]
    points["y_canonical"] = q[:, 1]
    return Alignment(points=points, transforms=transforms)


def transforms_table(
    st: Stacked, params: dict[str, np.ndarray], reason: np.ndarray
) -> pd.DataFrame:
    out = st.keys.copy()
    out["arch"] = pd.Categorical(out["arch"], categories=["up", "lo"])
    status = np.where(
        ~_notnone(reason),
        "ok",
        np.where(_notnone(st.bad), "bad_input", "degenerate"),
    )
    out["status"] = pd.Categorical(status, categories=STATUSES)
    out["reason"] = pd.array(list(reason), dtype="string")
    out["n_points"] = st.n.astype(np.int64)
    for k, v in params.items():
        out[k] = v
    out["unit"] = pd.Categorical(np.full(len(out), st.unit), categories=["px", "mm"])
    return out


def _notnone(values) -> np.ndarray:
    """Boolean array: which entries of an object array are not None (empty-safe)."""
    return np.fromiter((v is not None for v in values), dtype=bool, count=len(values))


#: How the patient's left was told from right.
SIDE_SOURCES = ["teeth", "fdi_keys", "point_order"]

#: Problem statuses of the arch tables.
STATUSES = [
    "ok",
    "too_few_points",
    "degenerate",
    "not_converged",
    "out_of_domain",
    "bad_input",
    "boundary",
]
