"""The landmarks table → one complex row of landmarks per session, in the anatomical frame.

``z[s, p] = x + iy`` of landmark p in session s, NaN where absent (double precision; in
large cohorts, beyond :data:`SINGLE_ABOVE` numbers, single precision: ample for quality
control, and it halves the memory every later pass reads), after the handedness of
:func:`dentalkit.ceph._frame.orient` (y up; lateral: anterior = +x, frontal: the patient's
left = +x): the superimposition may rotate configurations but never reflect them.

The table that :func:`dentalkit.convert.landmarks` builds holds each session's landmarks
as one block of rows, in the same order in every session; then the array is a reshape and
a column gather (:func:`_session_blocks`). Any other layout goes through
:func:`dentalkit.ceph._frame.to_array`, the scatter :func:`dentalkit.ceph.measure` uses.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dentalkit.ceph._frame import ORIENTATION_LANDMARKS, SessionArray, orient, to_array

__all__ = ["SINGLE_ABOVE", "Configurations", "configurations"]

#: Sessions × landmarks above which configurations are held in single precision.
SINGLE_ABOVE = 2_000_000


@dataclass
class Configurations:
    """Sessions of one view as complex configurations (see the module docstring)."""

    z: np.ndarray  # (sessions, landmarks) complex, anatomical frame, NaN = absent
    names: list[str]
    sessions: pd.DataFrame  # one row per session: the key columns
    array: SessionArray  # rows → sessions, for a per-row calibration column

    def frame(self, names: list[str]) -> np.ndarray:
        """``(2, len(names), sessions)`` of the landmarks ``names`` (NaN where not here), as
        :mod:`dentalkit.ceph._engine` takes them."""
        pos = {n: i for i, n in enumerate(self.names)}
        out = np.full((2, len(names), len(self.z)), np.nan)
        for i, name in enumerate(names):
            if name in pos:
                out[0, i] = self.z[:, pos[name]].real
                out[1, i] = self.z[:, pos[name]].imag
        return out


def configurations(
    rows: pd.DataFrame,
    codes: np.ndarray,
    cats: list,
    group_cols: list[str],
    keep: list[str],
    view: str,
    select: Callable[[list[str]], list[str]],
) -> Configurations:
    """The sessions of one view's rows as complex configurations.

    ``codes`` index ``cats`` (the anatomical name of each row, −1 for none); the
    configurations hold ``select(names)`` of the names present.
    """
    layout = _block_layout(rows, codes, cats, group_cols)
    if layout is not None:
        m, first = layout
        names = select(list(dict.fromkeys(cats[c] for c in first)))
        dtype = np.complex64 if (len(rows) // m) * len(names) > SINGLE_ABOVE else np.complex128
        z, array = _gather(rows, names, m, first, cats, keep, dtype)
    else:
        seen = np.bincount(codes + 1, minlength=len(cats) + 1)[1:] > 0  # code −1: no name
        present = dict.fromkeys(
            c for c, s in zip(cats, seen, strict=True) if s and isinstance(c, str)
        )
        names = select(list(present))
        array = to_array(rows, names, codes, cats, group_cols, keep)
        big = array.coords[0].size > SINGLE_ABOVE
        z = np.empty(array.coords.shape[1:][::-1], dtype=np.complex64 if big else np.complex128)
        z.real = array.coords[0].T
        z.imag = array.coords[1].T
    _to_anatomical(z, names, view)
    return Configurations(z=z, names=list(names), sessions=array.sessions, array=array)


def _to_anatomical(z: np.ndarray, names: list[str], view: str) -> None:
    """Image coordinates → the anatomical frame, in place (y up, then the handedness that
    :func:`~dentalkit.ceph._frame.orient` reads from its landmarks)."""
    pick = [i for i, n in enumerate(names) if n in ORIENTATION_LANDMARKS[view]]
    coords = np.stack([z[:, pick].real.T, z[:, pick].imag.T])
    _, mirrored, _ = orient(coords, [names[i] for i in pick], view)
    np.negative(z.imag, out=z.imag)  # y → −y
    z.real[...] *= np.where(mirrored, -1.0, 1.0).astype(z.real.dtype)[:, None]  # x → −x


def _block_layout(
    rows: pd.DataFrame, codes: np.ndarray, cats: list, group_cols: list[str]
) -> tuple[int, np.ndarray] | None:
    """``(rows per session, name codes of a session)`` of the converter's layout, or None.

    The layout is checked: sessions are blocks of equal size, every block holds the same
    names in the same order, no name twice (nor two codes of one name), one block per
    session.
    """
    n = len(rows)
    if n == 0 or not all(isinstance(rows[c].dtype, pd.CategoricalDtype) for c in group_cols):
        return None
    keys = [rows[c].cat.codes.to_numpy() for c in group_cols]
    change = np.flatnonzero(np.logical_or.reduce([k[1:] != k[:-1] for k in keys]))
    m = int(change[0]) + 1 if len(change) else n
    if n % m or len(change) != n // m - 1 or np.any(change != np.arange(m - 1, n - 1, m)):
        return None
    block = codes.reshape(-1, m)
    first = block[0]
    if (first < 0).any() or len(np.unique(first)) < m or (block != first).any():
        return None
    if len({cats[c] for c in first}) < m or not all(isinstance(cats[c], str) for c in first):
        return None  # two codes with one name, or an unnamed landmark
    starts = np.arange(0, n, m)
    combined = np.zeros(len(starts), dtype=np.int64)
    for k in keys:  # one integer per session key (mixed radix of small codes)
        first_codes = k[starts]
        combined = combined * (int(first_codes.max()) + 2) + first_codes + 1
    if not pd.Index(combined).is_unique:
        return None  # a session in two blocks
    return m, first


def _gather(
    rows: pd.DataFrame,
    names: list[str],
    m: int,
    first: np.ndarray,
    cats: list,
    keep: list[str],
    dtype: type,
) -> tuple[np.ndarray, SessionArray]:
    """``(z, array)`` of the block layout: a reshape and a column gather (image coordinates)."""
    n = len(rows)
    starts = np.arange(0, n, m)
    pos = {cats[c]: i for i, c in enumerate(first)}
    cols = np.array([pos[name] for name in names], dtype=np.int64)
    z = np.empty((len(starts), len(names)), dtype=dtype)
    z.real[...] = np.take(
        rows["x"].to_numpy(dtype=float, na_value=np.nan).reshape(-1, m), cols, axis=1
    )
    z.imag[...] = np.take(
        rows["y"].to_numpy(dtype=float, na_value=np.nan).reshape(-1, m), cols, axis=1
    )
    bad = ~(np.isfinite(z.real) & np.isfinite(z.imag))
    if bad.any():
        z[bad] = np.nan
    sessions = pd.DataFrame({c: rows[c].take(starts).reset_index(drop=True) for c in keep})
    array = SessionArray(
        sessions=sessions,
        coords=np.empty((2, 0, len(starts))),
        names=[],
        duplicated=np.zeros((0, len(starts)), bool),
        first_rows=starts,
        _sessions=_BlockSessions(n, m),
    )
    return z, array


class _BlockSessions:
    """Row → session of :func:`_session_blocks` (what ``SessionArray.session_codes`` reads)."""

    def __init__(self, n_rows: int, block: int) -> None:
        self.n_rows, self.block = n_rows, block

    def of(self, rows: np.ndarray | slice) -> np.ndarray:
        return np.arange(self.n_rows)[rows] // self.block
