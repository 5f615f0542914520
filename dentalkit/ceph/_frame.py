"""Long landmarks table → ``(n_sessions, n_landmarks, 2)`` array in the anatomical frame.

The anatomical frame
--------------------
Image coordinates have y pointing **down** and the profile may face either way.
Each session is put into a frame where

- lateral: anterior = +x (the direction S → N points to), superior = +y;
- frontal: the **patient's left** = +x, superior = +y.

Steps: flip y (``y ← −y``); then mirror x when the session's handedness is wrong.

- Lateral handedness: with S → N pointing anterior, the face (the centroid of the
  other landmarks the measures use: A, B, Me, Go …) must lie on the clockwise
  (inferior) side of S → N, i.e. ``(N − S) × (c − S) < 0``. When that cross product
  is zero or undefined (only S and N present), fall back to the image convention:
  mirror when N is left of S in the image.
- Frontal handedness: the mean right→left vector of the bilateral pairs present
  (``*_R`` → ``*_L``) crossed with the inferior→superior vector Me → Cg (fallbacks
  Me → ANS, ANS → Cg) must be positive. Undetermined: no mirror (PA films are viewed
  with the patient's right on the image left).

No rotation is applied: no measure depends on the frame's axes, only on anatomical
reference lines, so every measure is invariant to rotation, translation and uniform
scaling, and signed measures keep their clinical sign under mirroring.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

__all__ = ["ORIENTATION_LANDMARKS", "SessionArray", "orient", "to_array"]

#: Landmarks read (when present) to decide each session's handedness, in addition to
#: those the selected measures use.
ORIENTATION_LANDMARKS = {
    "lateral": ["S", "N", "A", "B", "Pog", "Me", "Gn", "Go", "ANS", "PNS", "Ar", "Po", "Or"],
    "frontal": ["Cg", "ANS", "Me", "Z_R", "Z_L", "J_R", "J_L", "Ag_R", "Ag_L", "Or_R", "Or_L"],
}


@dataclass
class SessionArray:
    """Result of :func:`to_array` for one view."""

    sessions: pd.DataFrame  # one row per session: session columns (dtypes kept)
    coords: np.ndarray  # (n_sessions, n_names, 2), image coordinates, NaN = absent
    names: list[str]
    duplicated: np.ndarray  # (n_sessions, n_names) bool: name given more than once
    first_rows: np.ndarray  # per session: position of its first row in the view's rows
    _sessions: object  # row → session mapping (see _Sessions)

    @property
    def session_codes(self) -> np.ndarray:
        """Session index of every row of the view (computed on demand)."""
        return self._sessions.of(slice(None))


def _codes(col: pd.Series) -> tuple[np.ndarray, int]:
    """Integer codes (−1 for missing) and the number of distinct values of a column."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.cat.codes.to_numpy(np.int64), len(col.cat.categories)
    codes, uniques = pd.factorize(col, sort=True, use_na_sentinel=True)
    return codes.astype(np.int64), len(uniques)


class _Sessions:
    """Per-row session codes, kept as (row key, key → session) so rows need not be gathered."""

    def __init__(self, key: np.ndarray, dense: np.ndarray | None, n_s: int) -> None:
        self.key = key  # per row: a combined key code (or already the session index)
        self.dense = dense  # combined key → session index (None: key is the index)
        self.n_s = n_s

    def of(self, rows: np.ndarray | slice) -> np.ndarray:
        k = self.key[rows]
        return k if self.dense is None else self.dense[k]

    def first_rows(self) -> np.ndarray:
        """Index of the first row of each session (rows of a session may be scattered)."""
        key = self.key
        if not len(key):
            return np.zeros(0, dtype=np.int64)
        starts = np.flatnonzero(np.r_[True, key[1:] != key[:-1]])  # starts of runs
        first = np.full(self.n_s, -1, dtype=np.int64)
        rev = starts[::-1]
        first[self.of(rev)] = rev  # last write wins → smallest row index
        return first


def _factorize_sessions(table: pd.DataFrame, cols: list[str]) -> _Sessions:
    """Session codes (sessions sorted by the key columns' codes)."""
    combined = np.zeros(len(table), dtype=np.int64)
    radix = 1
    for c in cols:
        codes, n = _codes(table[c])
        base = n + 1
        if radix > np.iinfo(np.int64).max // max(base, 1):
            # too many combinations for a mixed-radix code: fall back to pandas groupby
            grouped = table.groupby(cols, sort=True, observed=True, dropna=False)
            ses = grouped.ngroup().to_numpy(np.int64)
            return _Sessions(ses, None, int(ses.max()) + 1 if len(ses) else 0)
        if radix > 1:
            combined *= base
        combined += codes + 1
        radix *= base
    if radix <= 50_000_000:
        # dense codes: a presence table instead of hashing (O(rows), no sort)
        present = np.zeros(radix, dtype=bool)
        present[combined] = True
        dense = np.cumsum(present, dtype=np.int64) - 1
        return _Sessions(combined, dense, int(present.sum()))
    ses, uniques = pd.factorize(combined, sort=True)
    return _Sessions(ses.astype(np.int64), None, len(uniques))


def to_array(
    table: pd.DataFrame,
    names: list[str],
    name_codes: np.ndarray,
    name_categories: list[str],
    session_cols: list[str],
    output_cols: list[str] | None = None,
) -> SessionArray:
    """Scatter the rows of one view into a session × landmark × xy array.

    Parameters
    ----------
    table : DataFrame
        Rows of one view only (``x``, ``y`` and the session columns).
    names : list of str
        Landmark names wanted on axis 1.
    name_codes : numpy.ndarray
        Per row, an index into ``name_categories`` (−1 = no name).
    name_categories : list of str
    session_cols : list of str
        Columns whose combination identifies a session.
    output_cols : list of str, optional
        Columns reported per session (first row's value); default ``session_cols``.
    """
    sessions_ = _factorize_sessions(table, session_cols)
    n_s, n_p = sessions_.n_s, len(names)
    lookup = np.full(len(name_categories) + 1, -1, dtype=np.int64)
    pos = {n: i for i, n in enumerate(names)}
    for i, cat in enumerate(name_categories):
        lookup[i] = pos.get(cat, -1)
    pidx = lookup[name_codes]  # code −1 → last slot → −1
    rows_kept = np.flatnonzero(pidx >= 0)
    flat = sessions_.of(rows_kept) * n_p + pidx[rows_kept]
    counts = np.bincount(flat, minlength=n_s * n_p)
    coords = np.full((n_s * n_p, 2), np.nan)
    coords[flat, 0] = table["x"].to_numpy(dtype=float, na_value=np.nan)[rows_kept]
    coords[flat, 1] = table["y"].to_numpy(dtype=float, na_value=np.nan)[rows_kept]
    duplicated = (counts > 1).reshape(n_s, n_p)
    coords = coords.reshape(n_s, n_p, 2)
    coords[duplicated] = np.nan
    coords[~np.isfinite(coords).all(axis=-1)] = np.nan  # inf / half-given points are absent
    first = sessions_.first_rows()
    sessions = table[output_cols or session_cols].iloc[first].reset_index(drop=True)
    return SessionArray(
        sessions=sessions,
        coords=coords,
        names=list(names),
        duplicated=duplicated,
        first_rows=first,
        _sessions=sessions_,
    )


def orient(
    coords: np.ndarray, names: list[str], view: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Image coordinates → anatomical frame (see module docstring).

    Returns
    -------
    frame : numpy.ndarray
        Same shape as ``coords``.
    mirrored : numpy.ndarray of bool
        Sessions whose x axis was mirrored.
    determined : numpy.ndarray of bool
        False where the handedness could not be determined from the landmarks and the
        image convention was assumed.
    """
    frame = coords.copy()
    frame[..., 1] *= -1.0
    pos = {n: i for i, n in enumerate(names)}
    n_s = coords.shape[0]
    if view == "lateral":
        mirror, determined = _lateral_handedness(frame, pos)
    else:
        mirror, determined = _frontal_handedness(frame, pos)
    frame[mirror, :, 0] *= -1.0
    return frame, mirror, determined if n_s else np.zeros(0, bool)


def _lateral_handedness(frame: np.ndarray, pos: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    n_s = frame.shape[0]
    if "S" not in pos or "N" not in pos:
        return np.zeros(n_s, bool), np.zeros(n_s, bool)
    S = frame[:, pos["S"], :]
    N = frame[:, pos["N"], :]
    others = [i for n, i in pos.items() if n not in ("S", "N")]
    with np.errstate(invalid="ignore"):
        if others:
            pts = frame[:, others, :]
            present = ~np.isnan(pts[..., 0])
            cnt = present.sum(axis=1)
            total = np.where(present[..., None], pts, 0.0).sum(axis=1)
            centroid = np.where(cnt[:, None] > 0, total / np.maximum(cnt, 1)[:, None], np.nan)
        else:
            centroid = np.full((n_s, 2), np.nan)
        sn = N - S
        cross = sn[:, 0] * (centroid[:, 1] - S[:, 1]) - sn[:, 1] * (centroid[:, 0] - S[:, 0])
        scale = (sn**2).sum(axis=1)
        determined = np.isfinite(cross) & (np.abs(cross) > 1e-9 * scale)
        mirror = np.where(determined, cross > 0, sn[:, 0] < 0)
    mirror = np.where(np.isnan(sn[:, 0]), False, mirror)
    return mirror.astype(bool), determined.astype(bool)


def _frontal_handedness(frame: np.ndarray, pos: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    n_s = frame.shape[0]
    pairs = [
        (i, pos[n[:-2] + "_L"]) for n, i in pos.items() if n.endswith("_R") and n[:-2] + "_L" in pos
    ]
    with np.errstate(invalid="ignore"):
        if pairs:
            right = frame[:, [p[0] for p in pairs], :]
            left = frame[:, [p[1] for p in pairs], :]
            d = left - right
            ok = ~np.isnan(d[..., 0])
            cnt = ok.sum(axis=1)
            lateral = np.where(
                cnt[:, None] > 0,
                np.where(ok[..., None], d, 0).sum(axis=1) / np.maximum(cnt, 1)[:, None],
                np.nan,
            )
        else:
            lateral = np.full((n_s, 2), np.nan)
        superior = np.full((n_s, 2), np.nan)
        for lo, hi in (("ANS", "Cg"), ("Me", "ANS"), ("Me", "Cg")):  # later wins
            if lo in pos and hi in pos:
                v = frame[:, pos[hi], :] - frame[:, pos[lo], :]
                ok = ~np.isnan(v[:, 0])
                superior[ok] = v[ok]
        cross = lateral[:, 0] * superior[:, 1] - lateral[:, 1] * superior[:, 0]
        determined = np.isfinite(cross) & (cross != 0)
        mirror = determined & (cross < 0)
    return mirror.astype(bool), determined.astype(bool)
