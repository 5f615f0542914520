"""``qc.findings``: are the detection boxes inside their image, and each given once?

Checks of each detection of the ``findings`` table (single-session rules):

``box``
    A box with no area (``x1 ≤ x0`` or ``y1 ≤ y0``).
``outside``
    A box that leaves its image: a negative corner, or beyond the image's width or height
    when ``image_sizes`` gives them (the ``findings`` table does not carry image sizes).
``duplicate``
    A box of the same class and image as an earlier one, overlapping it with an
    intersection over union above :data:`DUPLICATE_IOU`: the same finding detected twice
    (the first is kept, the later ones are flagged).

``score`` is the number of checks the detection fails; it is flagged when it fails one.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping

import numpy as np
import pandas as pd

from dentalkit.errors import InputError, check_errors
from dentalkit.qc._order import group_codes
from dentalkit.qc._report import finish
from dentalkit.qc._table import checked_input, key_columns, qc_frame, tally

__all__ = ["findings"]

#: Intersection over union above which two boxes of one class and image are one finding.
DUPLICATE_IOU = 0.7
_REQUIRED = ("patient_id", "timestamp", "source", "class_name", "x0", "y0", "x1", "y1")


def findings(
    findings: pd.DataFrame,
    *,
    image_sizes: Mapping[str, tuple[float, float]] | pd.DataFrame | None = None,
    errors: str = "raise",
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """Quality control of the detection boxes: one row per detection.

    Parameters
    ----------
    findings : DataFrame
        The ``findings`` table: session key, ``source``, ``class_name``, ``x0``, ``y0``,
        ``x1``, ``y1`` (pixels, top-left and bottom-right).
    image_sizes : mapping or DataFrame, optional
        Width and height in pixels of the images: a mapping ``source → (width, height)``
        (one size per kind of image), or a table with ``width``, ``height`` and the key
        columns it is given by (e.g. ``patient_id``, ``timestamp``, ``source``). Without
        it only negative corners count as outside.
    errors : {"raise", "collect", "warn"}, default "raise"
        dentalkit's ``errors=`` rule (kept for a uniform interface; every detection with
        numbers can be checked).

    Returns
    -------
    DataFrame
        The ``qc_findings`` table: the common qc columns, then ``source``, ``class_name``,
        ``x0``, ``y0``, ``x1``, ``y1`` (in the order of ``findings``).

    Examples
    --------
    >>> f = pd.DataFrame(
    ...     {
    ...         "patient_id": "P1",
    ...         "timestamp": "t1",
    ...         "source": "pano",
    ...         "class_name": "caries",
    ...         "x0": [10.0, 11.0, 2700.0],
    ...         "y0": [10.0, 10.0, 50.0],
    ...         "x1": [60.0, 61.0, 2900.0],
    ...         "y1": [40.0, 41.0, 90.0],
    ...     }
    ... )
    >>> findings(f, image_sizes={"pano": (2800, 1400)})["failed_checks"].tolist()
    [None, ['duplicate'], ['outside']]
    """
    errors = check_errors(errors, "dentalkit.qc.findings")
    t = checked_input(findings, _REQUIRED, "findings")
    n = len(t)
    box = t[["x0", "y0", "x1", "y1"]].to_numpy(dtype=float)
    fails: list[list[str]] = [[] for _ in range(n)]
    notes: list[list[str]] = [[] for _ in range(n)]
    # a missing corner is not the AI's placement but a hole in the data: the analyses name
    # its row and field as a problem (errors=), so QC neither flags nor excludes it
    complete = ~np.isnan(box).any(axis=1)
    empty = complete & ~((box[:, 2] > box[:, 0]) & (box[:, 3] > box[:, 1]))
    for i in np.flatnonzero(empty):
        fails[i].append("box")
        notes[i].append("box with no area (x1 ≤ x0 or y1 ≤ y0)")
    width, height = _sizes(t, image_sizes)
    out_neg = (box[:, 0] < 0) | (box[:, 1] < 0)
    out_far = (box[:, 2] > width) | (box[:, 3] > height)
    for i in np.flatnonzero(out_neg | out_far):
        fails[i].append("outside")
        where = [f"{width[i]:g} × {height[i]:g} px image"] if out_far[i] else ["image"]
        notes[i].append(f"box [{', '.join(f'{v:g}' for v in box[i])}] leaves the {where[0]}")
    _duplicates(t, box, empty, fails, notes)
    score, failed, reason = tally(fails, notes)
    sized = "with the image sizes given" if image_sizes is not None else "negative corners only"
    out = qc_frame(
        "findings",
        key_columns(t),
        item=(t["source"].astype(str) + " " + t["class_name"].astype(str) + " box").to_numpy(
            dtype=object
        ),
        flagged=score > 0,
        score=score,
        threshold=1.0,
        reason=reason,
        failed_checks=failed,
        method="single-session rules",
        method_reason=f"each image's boxes checked among themselves; outside: {sized}",
        extra={c: t[c] for c in ("source", "class_name", "x0", "y0", "x1", "y1")},
    )
    return finish(out, pd.DataFrame(), errors, "dentalkit.qc.findings")


def _sizes(t: pd.DataFrame, image_sizes) -> tuple[np.ndarray, np.ndarray]:
    n = len(t)
    if image_sizes is None:
        return np.full(n, np.inf), np.full(n, np.inf)
    if isinstance(image_sizes, pd.DataFrame):
        keys = [c for c in image_sizes.columns if c not in ("width", "height")]
        missing = [c for c in keys if c not in t.columns]
        if missing or not {"width", "height"} <= set(image_sizes.columns):
            raise InputError(
                "image_sizes table needs width, height and key columns of the findings "
                f"table; {missing or ['width/height']} not found"
            )
        joined = (
            t[keys]
            .astype(str)
            .merge(image_sizes.astype({k: str for k in keys}), on=keys, how="left")
        )
        return (
            joined["width"].to_numpy(float, na_value=np.inf),
            joined["height"].to_numpy(float, na_value=np.inf),
        )
    sizes = {str(k): v for k, v in image_sizes.items()}
    src = t["source"].astype(str).to_numpy()
    width = np.array([sizes.get(s, (np.inf, np.inf))[0] for s in src], dtype=float)
    height = np.array([sizes.get(s, (np.inf, np.inf))[1] for s in src], dtype=float)
    return width, height


def _duplicates(t, box, empty, fails, notes) -> None:
    cols = [c for c in ("patient_id", "timestamp", "source", "class_name") if c in t]
    group = group_codes(t, cols)
    order = np.argsort(group, kind="stable")
    bounds = np.flatnonzero(np.r_[True, np.diff(group[order]) != 0, True])
    for a, b in itertools.pairwise(bounds):
        if b - a < 2:
            continue
        idx = order[a:b]
        bx = box[idx]
        ix = np.maximum(
            0,
            np.minimum(bx[:, None, 2], bx[None, :, 2]) - np.maximum(bx[:, None, 0], bx[None, :, 0]),
        )
        iy = np.maximum(
            0,
            np.minimum(bx[:, None, 3], bx[None, :, 3]) - np.maximum(bx[:, None, 1], bx[None, :, 1]),
        )
        inter = ix * iy
        area = np.maximum(bx[:, 2] - bx[:, 0], 0) * np.maximum(bx[:, 3] - bx[:, 1], 0)
        union = area[:, None] + area[None, :] - inter
        iou = np.where(union > 0, inter / np.maximum(union, 1e-12), 0.0)
        for k in range(1, len(idx)):
            j = int(np.argmax(iou[k, :k]))
            if iou[k, j] > DUPLICATE_IOU and not empty[idx[k]]:
                fails[idx[k]].append("duplicate")
                notes[idx[k]].append(
                    f"the same {t['class_name'].iloc[idx[k]]} box as an earlier one "
                    f"(intersection over union {iou[k, j]:.2f})"
                )
