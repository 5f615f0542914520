"""Long landmarks table → session × landmark × xy array in the anatomical frame.

The array holds ``(n_sessions, n_landmarks, 2)`` numbers, stored landmark-major as
``coords[c, p, s]`` (shape ``(2, n_landmarks, n_sessions)``) so that gathering the
points of a measure for every session copies contiguous rows.

The anatomical frame
--------------------
Image coordinates have y pointing **down** and the profile may face either way.
Each session is put into a frame where

- lateral: anterior = +x (the direction S → N points to), superior = +y;
- frontal: the **patient's left** = +x, superior = +y.

Steps: flip y (``y ← −y``); then mirror x when the session's handedness is wrong.

- Lateral handedness: with S → N pointing anterior, the face (the centroid of the
  other landmarks present: A, B, Me, Go …) must lie on the clockwise (inferior) side
  of S → N, i.e. ``(N − S) × (c − S) < 0``. Without S or N, the same test is made
  with Po → Or, then PNS → ANS, against B, Pog, Me, Gn, Go. When no test can be made,
  fall back to the image convention on the first of these pairs present (anterior =
  the image direction it points to) and report it; with none of them, the session's
  signed measures are NaN.
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
    coords: np.ndarray  # (2, n_names, n_sessions): x, y image coordinates, NaN = absent
    names: list[str]
    duplicated: np.ndarray  # (n_names, n_sessions) bool: name given more than once
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
    # landmark-major layout: coords[c, p, s] (contiguous per landmark for fast gathers)
    flat = pidx[rows_kept] * n_s + sessions_.of(rows_kept)
    counts = np.bincount(flat, minlength=n_p * n_s)
    coords = np.full((2, n_p * n_s), np.nan)
    coords[0, flat] = table["x"].to_numpy(dtype=float, na_value=np.nan)[rows_kept]
    coords[1, flat] = table["y"].to_numpy(dtype=float, na_value=np.nan)[rows_kept]
    coords = coords.reshape(2, n_p, n_s)
    duplicated = (counts > 1).reshape(n_p, n_s)
    bad = duplicated | ~(np.isfinite(coords[0]) & np.isfinite(coords[1]))
    coords[:, bad] = np.nan  # repeated, inf or half-given points are absent
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
    frame[1] *= -1.0
    pos = {n: i for i, n in enumerate(names)}
    n_s = coords.shape[2]
    if view == "lateral":
        mirror, determined = _lateral_handedness(frame, pos)
    else:
        mirror, determined = _frontal_handedness(frame, pos)
    xs = frame[0]
    xs[:, mirror] *= -1.0
    return frame, mirror, determined if n_s else np.zeros(0, bool)


def _mean_of_present(pts: np.ndarray) -> np.ndarray:
    """(2, k, s) → (2, s): mean over the points present (NaN when none is)."""
    present = ~np.isnan(pts[0])
    cnt = present.sum(axis=0)
    total = np.where(present[None], pts, 0.0).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(cnt[None] > 0, total / np.maximum(cnt, 1)[None], np.nan)


#: Anterior-pointing landmark pairs tried in turn for the lateral handedness, each with
#: landmarks known to lie inferior to it (None = every other landmark present).
_LATERAL_AXES = (
    ("S", "N", None),
    ("Po", "Or", ("B", "Pog", "Me", "Gn", "Go")),
    ("PNS", "ANS", ("B", "Pog", "Me", "Gn", "Go")),
)


def _lateral_handedness(frame: np.ndarray, pos: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    n_s = frame.shape[2]
    mirror = np.zeros(n_s, bool)
    determined = np.zeros(n_s, bool)
    fallback = np.full(n_s, np.nan)  # image convention: x direction of the first pair present
    for a, b, below in _LATERAL_AXES:
        if a not in pos or b not in pos:
            continue
        A = frame[:, pos[a], :]
        B = frame[:, pos[b], :]
        names = (
            [n for n in pos if n not in (a, b)] if below is None else [n for n in below if n in pos]
        )
        idx = [pos[n] for n in names]
        centroid = _mean_of_present(frame[:, idx, :]) if idx else np.full((2, n_s), np.nan)
        with np.errstate(invalid="ignore"):
            ab = B - A
            cross = ab[0] * (centroid[1] - A[1]) - ab[1] * (centroid[0] - A[0])
            ok = np.isfinite(cross) & (np.abs(cross) > 1e-9 * (ab[0] ** 2 + ab[1] ** 2))
        new = ok & ~determined
        mirror[new] = cross[new] > 0
        determined |= new
        fallback = np.where(np.isnan(fallback), ab[0], fallback)
    use_fallback = ~determined & ~np.isnan(fallback)
    mirror[use_fallback] = fallback[use_fallback] < 0
    return mirror, determined


def _frontal_handedness(frame: np.ndarray, pos: dict[str, int]) -> tuple[np.ndarray, np.ndarray]:
    n_s = frame.shape[2]
    pairs = [
        (i, pos[n[:-2] + "_L"]) for n, i in pos.items() if n.endswith("_R") and n[:-2] + "_L" in pos
    ]
    if pairs:
        d = frame[:, [p[1] for p in pairs], :] - frame[:, [p[0] for p in pairs], :]
        lateral = _mean_of_present(d)
    else:
        lateral = np.full((2, n_s), np.nan)
    superior = np.full((2, n_s), np.nan)
    for lo, hi in (("ANS", "Cg"), ("Me", "ANS"), ("Me", "Cg")):  # later wins
        if lo in pos and hi in pos:
            v = frame[:, pos[hi], :] - frame[:, pos[lo], :]
            ok = ~np.isnan(v[0])
            superior[:, ok] = v[:, ok]
    with np.errstate(invalid="ignore"):
        cross = lateral[0] * superior[1] - lateral[1] * superior[0]
        determined = np.isfinite(cross) & (cross != 0)
        mirror = determined & (cross < 0)
    return mirror.astype(bool), determined.astype(bool)
