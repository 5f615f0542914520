"""The frame in which landmark offsets (test − reference) are expressed.

``frame="image"``
    The service's image axes (x right, y down), as stored in the landmarks table.
    Simple, but a cohort whose films face both ways (or whose heads are tilted
    differently) mixes directions: a service that places Go too far *anterior* has a
    +x bias on right-facing films and −x on left-facing ones, which cancel.

``frame="anatomical"`` (default of :func:`dentalkit.agreement.landmarks`)
    1. Each session's **reference** tracing is put into the cephalometric anatomical
       frame of :mod:`dentalkit.ceph` (y up; lateral: x anterior, frontal: x towards
       the patient's left) by :func:`dentalkit.ceph._frame.orient` — the same
       handedness rules the measures use.
    2. The oriented reference tracings are superimposed by generalised Procrustes
       analysis with rotation and translation only (no scaling, no reflection;
       Gower 1975, *Psychometrika* 40:33–51; rotations by the Kabsch/SVD solution of
       the orthogonal Procrustes problem, Schönemann 1966). Landmarks absent from a
       session are left out of that session's fit.
    3. Each session's offsets are rotated with its reference tracing, and the
       superimposed reference positions give the mean tracing of the figures.

    Radial errors are the same in both frames (rotations and reflections keep
    lengths).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dentalkit.ceph._frame import orient

__all__ = ["FRAMES", "anatomical_frame", "procrustes", "to_anatomical"]

FRAMES = ("anatomical", "image")


def procrustes(
    shapes: np.ndarray, *, max_iter: int = 50, tol: float = 1e-10
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Generalised Procrustes superimposition by rotation + translation (no scaling).

    Parameters
    ----------
    shapes : numpy.ndarray
        ``(n_sessions, n_points, 2)``; NaN marks an absent point.

    Returns
    -------
    aligned : numpy.ndarray
        Same shape; absent points stay NaN.
    rotations : numpy.ndarray
        ``(n_sessions, 2, 2)``: ``aligned[s] = (shapes[s] − c_s) @ rotations[s] + m_s``
        (row vectors), proper rotations (determinant +1).
    mean : numpy.ndarray
        ``(n_points, 2)`` mean shape (NaN for points absent everywhere).
    """
    X = np.asarray(shapes, dtype=float)
    n_s = X.shape[0]
    W = np.isfinite(X).all(axis=2)
    cnt = W.sum(axis=1)
    safe = np.maximum(cnt, 1)[:, None]
    Xz = np.where(W[..., None], X, 0.0)
    cx = Xz.sum(axis=1) / safe
    Xc = np.where(W[..., None], X - cx[:, None, :], 0.0)
    present = W.sum(axis=0)

    def masked_mean(A: np.ndarray) -> np.ndarray:
        tot = np.where(W[..., None], A, 0.0).sum(axis=0)
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(present[:, None] > 0, tot / np.maximum(present, 1)[:, None], np.nan)

    mean = masked_mean(Xc)
    eye = np.broadcast_to(np.eye(2), (n_s, 2, 2)).copy()
    R = eye
    aligned = Xc
    for _ in range(max_iter):
        M = np.where(np.isfinite(mean), mean, 0.0)
        Mz = np.where(W[..., None], M[None], 0.0)
        cm = Mz.sum(axis=1) / safe
        Mc = np.where(W[..., None], M[None] - cm[:, None, :], 0.0)
        H = np.einsum("spi,spj->sij", Xc, Mc)
        U, _, Vt = np.linalg.svd(H)
        flip = np.linalg.det(U @ Vt) < 0
        U[flip, :, -1] *= -1.0
        R = U @ Vt
        R[cnt < 2] = np.eye(2)
        aligned = np.einsum("spi,sij->spj", Xc, R) + cm[:, None, :]
        new = masked_mean(aligned)
        change = np.nanmax(np.abs(new - mean)) if np.isfinite(new).any() else 0.0
        scale = np.nanmax(np.abs(new)) if np.isfinite(new).any() else 1.0
        mean = new
        if change <= tol * max(scale, 1.0):
            break
    aligned = np.where(W[..., None], aligned, np.nan)
    return aligned, R, mean


def anatomical_frame(
    ref_xy: np.ndarray,
    offsets: np.ndarray,
    session: np.ndarray,
    item: np.ndarray,
    n_sessions: int,
    names: list[str | None],
    view: str,
    scale: np.ndarray | None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Reference positions and offsets of one view's pairs in the anatomical frame.

    Parameters
    ----------
    ref_xy : numpy.ndarray
        ``(n_pairs, 2)`` reference image coordinates (px).
    offsets : numpy.ndarray
        ``(n_pairs, 2)`` test − reference in image axes, already in the output unit.
    session, item : numpy.ndarray
        Per pair: session index (``0 … n_sessions−1``) and item index into ``names``.
    names : list
        Anatomical name of every item (None when unknown) — used for the handedness.
    view : {"lateral", "frontal"}
    scale : numpy.ndarray or None
        Per pair mm per px (None: positions stay in px).

    Returns
    -------
    positions, offsets : numpy.ndarray
        ``(n_pairs, 2)`` in the frame, in the output unit.
    determined : numpy.ndarray
        ``(n_sessions,)`` False where the handedness could not be read from the
        reference landmarks (image convention assumed, see :mod:`dentalkit.ceph`).
    """
    n_p = len(names)
    coords = np.full((2, n_p, n_sessions), np.nan)
    coords[0, item, session] = ref_xy[:, 0]
    coords[1, item, session] = ref_xy[:, 1]
    label = [n if isinstance(n, str) else f"\x00{i}" for i, n in enumerate(names)]
    _, mirrored, determined = orient(coords, label, view)
    sign = np.where(mirrored[session], -1.0, 1.0)
    unit = scale if scale is not None else np.ones(len(session))
    pos = np.column_stack([sign * ref_xy[:, 0] * unit, -ref_xy[:, 1] * unit])
    off = np.column_stack([sign * offsets[:, 0], -offsets[:, 1]])
    shapes = np.full((n_sessions, n_p, 2), np.nan)
    shapes[session, item] = pos
    aligned, R, _ = procrustes(shapes)
    pos_out = aligned[session, item]
    off_out = np.einsum("ni,nij->nj", off, R[session])
    return pos_out, off_out, determined


def _codes(col: pd.Series) -> np.ndarray:
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(np.int64)
    return pd.factorize(col)[0].astype(np.int64)


def to_anatomical(
    pairs: pd.DataFrame,
    ref_xy: np.ndarray,
    offsets: np.ndarray,
    scale: np.ndarray | None,
    cols: list[str],
    by: str,
) -> tuple[np.ndarray, np.ndarray, pd.DataFrame]:
    """:func:`anatomical_frame` for every view of a pairs table (see the module docstring).

    Returns positions and offsets in the frame, and the problem rows of sessions whose
    handedness could not be determined.
    """
    positions = np.full_like(offsets, np.nan)
    rotated = np.full_like(offsets, np.nan)
    undetermined = []
    view_codes = _codes(pairs["view"])
    view_names = (
        list(pairs["view"].cat.categories)
        if isinstance(pairs["view"].dtype, pd.CategoricalDtype)
        else list(pd.unique(pairs["view"]))
    )
    key_codes = np.column_stack([_codes(pairs[c]) for c in cols])
    item_codes = _codes(pairs[by])
    for vc in np.unique(view_codes):
        v = view_names[vc]
        idx = np.flatnonzero(view_codes == vc)
        _, s_first, s_codes = np.unique(
            key_codes[idx], axis=0, return_index=True, return_inverse=True
        )
        _, i_first, i_codes = np.unique(item_codes[idx], return_index=True, return_inverse=True)
        s_codes, i_codes = s_codes.reshape(-1), i_codes.reshape(-1)
        rows = idx[i_first]  # one pair per item: its anatomical name (reference, else test)
        ref_o = pairs["_oname_reference"].iloc[rows].astype(object).to_numpy()
        tst_o = pairs["_oname_test"].iloc[rows].astype(object).to_numpy()
        names = [
            r if isinstance(r, str) else (t if isinstance(t, str) else None)
            for r, t in zip(ref_o, tst_o, strict=True)
        ]
        view = v if v in ("lateral", "frontal") else "lateral"
        pos, off, determined = anatomical_frame(
            ref_xy[idx],
            offsets[idx],
            s_codes,
            i_codes,
            len(s_first),
            names,
            view,
            None if scale is None else scale[idx],
        )
        positions[idx], rotated[idx] = pos, off
        if not determined.all():
            bad = (
                pairs[cols]
                .iloc[idx[s_first[~determined]]]
                .astype(object)
                .reset_index(drop=True)
                .assign(
                    view=v,
                    side="reference",
                    path="frame",
                    reason="handedness not determined from the reference landmarks (needs S, N "
                    "and a face landmark, or bilateral pairs on PA films): image convention "
                    "assumed for its x axis",
                )
            )
            undetermined.append(bad)
    return positions, rotated, pd.concat(undetermined) if undetermined else pd.DataFrame()
