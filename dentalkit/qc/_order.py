"""Order of labelled points along a dental arch (teeth, catenary points).

A tooth's expected place along the arch is its signed number: ``−digit`` on the patient's
right (FDI quadrants 1 and 4), ``+digit`` on the left (2 and 3), so that the sequence runs
from the right molars through the incisors to the left molars. Its observed place is read
from the geometry of its arch:

* along a **curve** (occlusal views: the occlusogram, the arch of catenary points): the
  angle of the point around the centroid of the arch's points, measured from the direction
  of the incisors (the arch opens posteriorly, so the angle runs monotonically from one
  side to the other);
* along a **row** (panoramic radiographs, frontal photographs): the position along the
  principal axis of the points.

Either direction may be the image's (films and photos are flipped); the one that agrees
best with the expected sequence is used. Two labels *out of order* are neighbours in the
observed sequence whose expected places are reversed.
"""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd

__all__ = ["out_of_order", "signed_place"]


def signed_place(fdi: np.ndarray) -> np.ndarray:
    """Expected place along the arch of FDI numbers (−8 … −1 right, 1 … 8 left)."""
    fdi = np.asarray(fdi, dtype=np.int64)
    quadrant, digit = fdi // 10, fdi % 10
    return np.where(np.isin(quadrant, (1, 4, 5, 8)), -digit, digit)


def _observed(x: np.ndarray, y: np.ndarray, expected: np.ndarray, curve: bool) -> np.ndarray:
    """Observed place of each point of one arch (larger = further to one side)."""
    cx, cy = x.mean(), y.mean()
    if not curve:
        pts = np.column_stack([x - cx, y - cy])
        _, _, vt = np.linalg.svd(pts, full_matrices=False)
        return pts @ vt[0]
    front = np.abs(expected) <= 2
    fx, fy = (x[front].mean(), y[front].mean()) if front.any() else (cx, cy)
    a = np.arctan2(y - cy, x - cx) - np.arctan2(fy - cy, fx - cx)
    return (a + np.pi) % (2 * np.pi) - np.pi


def out_of_order(
    group: np.ndarray, fdi: np.ndarray, x: np.ndarray, y: np.ndarray, *, curve: bool
) -> np.ndarray:
    """For each point, the FDI number of a neighbour it is out of order with (0: none).

    Parameters
    ----------
    group : numpy.ndarray
        Integer code of each point's arch (points of one arch of one image share it).
    fdi : numpy.ndarray
        FDI number of each point's label.
    x, y : numpy.ndarray
        Position of each point (image coordinates; a tooth's centroid).
    curve : bool
        Points lie on a curved arch (occlusal view) rather than a row.
    """
    out = np.zeros(len(fdi), dtype=np.int64)
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(group[order]) != 0, True])
    expected_all = signed_place(fdi)
    for a, b in itertools.pairwise(bounds):
        idx = order[a:b]
        if len(idx) < 3:
            continue
        expected = expected_all[idx]
        seen = _observed(x[idx], y[idx], expected, curve)
        if np.dot(seen - seen.mean(), expected - expected.mean()) < 0:
            seen = -seen
        path = idx[np.argsort(seen, kind="stable")]
        exp_path = expected_all[path]
        swapped = np.flatnonzero(np.diff(exp_path) < 0)
        for k in swapped:
            out[path[k]] = fdi[path[k + 1]]
            out[path[k + 1]] = fdi[path[k]]
    return out


def group_codes(table: pd.DataFrame, cols: list[str]) -> np.ndarray:
    """One integer code per distinct combination of ``cols`` (NaN is a value)."""
    return table.groupby(cols, sort=False, observed=True, dropna=False).ngroup().to_numpy()
