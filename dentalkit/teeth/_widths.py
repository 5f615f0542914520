"""Arch tangents and the mesiodistal side of each tooth's minimum rotated rectangle (private)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import shapely

from dentalkit.endpoints import ENDPOINTS, Kind

__all__ = [
    "MD_AXIS_CATEGORIES",
    "SOURCE_VIEW",
    "TOOTH_DIGIT",
    "arch_position",
    "md_directions",
    "rectangle_sides",
    "view",
]

#: FDI tooth digit of each tooth type (ISO 3950; docs/data-contract.md).
TOOTH_DIGIT: dict[str, int] = {
    "i1": 1,
    "i2": 2,
    "c": 3,
    "p1": 4,
    "p2": 5,
    "m1": 6,
    "m2": 7,
    "m3": 8,
}

#: How each segmentation source looks at the teeth. ``occlusal``: photographs
#: of dental models from above (occlusograms) show the mesiodistal (MD) and
#: buccolingual (BL) crown diameters. ``facial``: frontal intra-oral
#: photographs and panoramic radiographs show the teeth from the front/side,
#: i.e. MD width and the vertical extent (crown height on photographs, tooth
#: length on radiographs) — never BL.
SOURCE_VIEW: dict[str, str] = {
    "frontal": "facial",
    "pano": "facial",
    "occlusogram_upper": "occlusal",
    "occlusogram_lower": "occlusal",
}
assert set(SOURCE_VIEW) == {e.source for e in ENDPOINTS.values() if e.kind is Kind.SEGMENTATION}

MD_AXIS_CATEGORIES = ("arch", "image_x", "none")


def view(table: pd.DataFrame) -> np.ndarray:
    """``"facial"`` / ``"occlusal"`` per row (None for unknown sources); categoricals map per category."""
    return table["source"].map(SOURCE_VIEW).to_numpy(dtype=object, na_value=None)


def arch_position(tooth_type: pd.Series, side: pd.Series) -> np.ndarray:
    """Signed position along the arch: −8 (right m3) … −1, +1 … +8 (left m3).

    Consecutive positions are neighbours along the dental arch (right and left
    central incisors meet at the midline). NaN for unknown types or sides.
    """
    digit = tooth_type.map(TOOTH_DIGIT).to_numpy(dtype=float, na_value=np.nan)
    sign = side.map({"rgt": -1.0, "lft": 1.0}).to_numpy(dtype=float, na_value=np.nan)
    return digit * sign


def md_directions(
    table: pd.DataFrame, cx: np.ndarray, cy: np.ndarray, usable: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Unit arch-tangent direction per row and how it was found.

    For each measurable tooth, its image (patient, timestamp, source, arch) is
    taken and the measurable teeth of that image are ordered by
    :func:`arch_position`. The tangent is the vector from the previous to the
    next neighbour's centroid (one-sided at the ends of the row of teeth).
    Without any neighbour the tangent falls back to the image x axis on facial
    views (where the occlusal plane runs across the image) and is left
    undefined (NaN) on occlusal views.

    Returns
    -------
    tx, ty : float arrays
        Unit tangent, NaN where undefined.
    axis : int8 array
        Index into ``("arch", "image_x", "none")``; -1 where the row is not
        measurable.
    """
    n = len(table)
    pos = arch_position(table["tooth_type"], table["side"])
    image = (
        table.groupby(
            ["patient_id", "timestamp", "source", "arch"], sort=False, dropna=False, observed=True
        )
        .ngroup()
        .to_numpy()
    )
    cand = np.flatnonzero(usable & np.isfinite(pos) & np.isfinite(cx) & np.isfinite(cy))
    order = cand[np.lexsort((pos[cand], image[cand]))]
    same = image[order[1:]] == image[order[:-1]]
    prev = np.full(len(order), -1)
    nxt = np.full(len(order), -1)
    prev[1:][same] = order[:-1][same]
    nxt[:-1][same] = order[1:][same]
    a = np.where(prev >= 0, prev, order)
    b = np.where(nxt >= 0, nxt, order)
    dx = cx[b] - cx[a]
    dy = cy[b] - cy[a]
    norm = np.hypot(dx, dy)
    ok = norm > 0
    tx = np.full(n, np.nan)
    ty = np.full(n, np.nan)
    tx[order[ok]] = dx[ok] / norm[ok]
    ty[order[ok]] = dy[ok] / norm[ok]

    axis = np.full(n, -1, dtype=np.int8)
    axis[usable] = 2
    has = np.isfinite(tx)
    axis[has] = 0
    facial = view(table) == "facial"
    fallback = usable & ~has & facial
    tx[fallback] = 1.0
    ty[fallback] = 0.0
    axis[fallback] = 1
    return tx, ty, axis


def rectangle_sides(
    geoms: np.ndarray, tx: np.ndarray, ty: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Sides of the minimum rotated rectangle: (side along ``t``, side across ``t``)."""
    n = len(geoms)
    md = np.full(n, np.nan)
    other = np.full(n, np.nan)
    rect = shapely.minimum_rotated_rectangle(geoms)
    is_poly = shapely.get_type_id(rect) == shapely.GeometryType.POLYGON
    idx = np.flatnonzero(is_poly)
    if not len(idx):
        return md, other
    # A rectangle polygon has one closed ring of 5 coordinates, in order.
    idx = idx[shapely.get_num_coordinates(rect[idx]) == 5]
    xy = shapely.get_coordinates(rect[idx]).reshape(len(idx), 5, 2)
    e1 = xy[:, 1] - xy[:, 0]
    e2 = xy[:, 2] - xy[:, 1]
    l1 = np.hypot(e1[:, 0], e1[:, 1])
    l2 = np.hypot(e2[:, 0], e2[:, 1])
    t = np.stack([tx[idx], ty[idx]], axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        c1 = np.abs(np.einsum("ij,ij->i", e1, t)) / l1
        c2 = np.abs(np.einsum("ij,ij->i", e2, t)) / l2
    first_along = c1 >= c2
    md[idx] = np.where(first_along, l1, l2)
    other[idx] = np.where(first_along, l2, l1)
    undefined = ~np.isfinite(t).all(axis=1)
    md[idx[undefined]] = np.nan
    other[idx[undefined]] = np.nan
    return md, other
