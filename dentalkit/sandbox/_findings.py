"""Findings, classifier categories, TMJ sentences and the TLE rule (private).

All documented in ``docs/sandbox.md``; class names and categories other than the
spec's ``decay`` and ``restoration`` are sandbox choices (the spec does not show
them).
"""

from __future__ import annotations

import csv
import math
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources

import numpy as np

from dentalkit.errors import InputError
from dentalkit.sandbox._patient import CLINICAL_CLASSES, Patient

__all__ = [
    "CATEGORIES",
    "NO_TMJ_FINDING",
    "TLE_RULE",
    "clinical_detections",
    "estimate_months",
    "tmj_sentence",
]

#: Classifier category of each synthetic image kind (sandbox set).
CATEGORIES: dict[str, str] = {
    "lateral_ceph": "lateral_cephalogram",
    "frontal_ceph": "frontal_cephalogram",
    "pano": "panoramic",
    "intraoral_frontal": "intraoral_frontal",
    "intraoral_right": "intraoral_right_buccal",
    "intraoral_left": "intraoral_left_buccal",
    "intraoral_upper": "intraoral_upper_occlusal",
    "intraoral_lower": "intraoral_lower_occlusal",
    "model_upper": "model_upper_occlusal",
    "model_lower": "model_lower_occlusal",
    "tmj": "tmj_cross_section",
}

#: The TMJ sentence when no condition is drawn.
NO_TMJ_FINDING = "No findings were detected."
TMJ_LABELS = {
    "flattening": "Condylar flattening",
    "erosion": "Cortical erosion",
    "osteophyte": "Osteophyte",
}


def tmj_sentence(conditions: Mapping[str, tuple[str, ...]]) -> str:
    """The ``Results.Finding`` sentence for the drawn TMJ conditions.

    ``"No findings were detected."`` when none; otherwise one sentence per
    condition, ``"{Label} detected on the {right|left} condyle."``, right side
    first, conditions in the order flattening, erosion, osteophyte, joined by a
    space.
    """
    parts = [
        f"{TMJ_LABELS[c]} detected on the {side} condyle."
        for side in ("right", "left")
        for c in conditions.get(side, ())
    ]
    return " ".join(parts) if parts else NO_TMJ_FINDING


def clinical_detections(
    p: Patient,
    rng: np.random.Generator,
    teeth_px: np.ndarray,
    gingival_px: np.ndarray,
    width: int,
    height: int,
) -> dict[str, list[tuple[int, int, int, int]]]:
    """Boxes per class on one intra-oral photo: ``class → [(x0, y0, x1, y1), …]`` (pixels).

    Every box sits on a tooth drawn in the photo (``render.input_image`` draws the same
    polygons). Counts are Poisson with the patient's rate per class, at most one box
    per visible tooth and class (brackets: one per visible tooth, 8–12, when the patient
    wears them). Relative to the tooth's bounding box (w × h): a bracket is a square of
    side 0.45·min(w, h) at the crown centre; decay, white spot lesions and restorations
    are boxes of 30–70 % of w and h centred in the middle half of the crown; gingivitis
    and calculus are boxes as wide as the crown (calculus: 60 %) and 30 % (calculus 20 %)
    of its height, centred on the gingival margin point.

    Parameters
    ----------
    p : Patient
        The patient (rates per class).
    rng : numpy.random.Generator
        The photo's detection stream.
    teeth_px : ndarray, shape (n, k, 2)
        Outlines (pixels) of the n visible teeth.
    gingival_px : ndarray, shape (n, 2)
        The gingival margin point of each visible tooth (pixels).
    width, height : int
        Image size (px); boxes are clipped to it.
    """
    out: dict[str, list[tuple[int, int, int, int]]] = {}
    n = len(teeth_px)
    if n == 0:
        return out
    lo, hi = teeth_px.min(axis=1), teeth_px.max(axis=1)  # (n, 2) bounding boxes
    size, centre = hi - lo, 0.5 * (lo + hi)
    for name in CLINICAL_CLASSES:
        rate = p.clinical_rates[name]
        if rate <= 0.0:
            count = 0
        elif name == "bracket":
            count = int(rng.integers(8, 13))
        else:
            count = int(rng.poisson(rate))
        count = min(count, n)
        if count == 0:
            continue
        picks = np.sort(rng.choice(n, size=count, replace=False))
        s, c = size[picks], centre[picks]
        if name == "bracket":
            half = np.repeat(0.225 * s.min(axis=1, keepdims=True), 2, axis=1)
        elif name in ("gingivitis", "calculus"):
            c = gingival_px[picks]
            frac = (1.0, 0.3) if name == "gingivitis" else (0.6, 0.2)
            half = 0.5 * s * np.array(frac)
        else:
            half = 0.5 * s * rng.uniform(0.3, 0.7, size=(count, 2))
            c = c + (rng.uniform(-0.25, 0.25, size=(count, 2)) * s)
        box = np.concatenate([c - half, c + half], axis=1)
        box[:, [0, 2]] = np.clip(box[:, [0, 2]], 0, width - 1)
        box[:, [1, 3]] = np.clip(box[:, [1, 3]], 0, height - 1)
        box = np.rint(box).astype(int)
        box[:, 2] = np.maximum(box[:, 2], box[:, 0] + 1)
        box[:, 3] = np.maximum(box[:, 3], box[:, 1] + 1)
        out[name] = [tuple(b) for b in box.tolist()]
    return out


# --- treatment length ---------------------------------------------------------------

#: The documented rule of the sandbox treatment-length estimator (months).
TLE_RULE = (
    "months = 12 + crowding{0,2,4.5,7.5}[p04] + spacing{0,1,2,3.5}[p05] "
    "+ class{I:0, II/1:3, II/2:4, III:6}[p03] + 0.6·max(|overjet| − 3, 0) "
    "+ 0.5·max(overbite − 4, 0) + 0.8·max(−overbite, 0) + 3·crossbite + 4·open_bite "
    "+ 6·extraction + 1.2·difficulty + 0.15·min(max(age − 18, 0), 40); "
    "clipped to [6, 60] and rounded to 0.1; sex has no effect"
)


@lru_cache(maxsize=1)
def _codebook() -> dict[str, dict[str, str]]:
    with (
        resources.files("dentalkit.data").joinpath("tle_codebook.csv").open(encoding="utf-8") as fh
    ):
        return {row["param"]: row for row in csv.DictReader(fh)}


def _decode(params: Mapping[str, str]) -> dict[str, float]:
    """Numbers of the /tle query strings (codes as in ``tle_codebook.csv``)."""
    out: dict[str, float] = {}
    for name, row in _codebook().items():
        if name not in params:
            raise InputError(f"/tle query parameter {name} ({row['meaning']}) is missing")
        raw = str(params[name]).strip()
        if row["dtype"] == "number":
            try:
                value = float(raw)
            except ValueError:
                raise InputError(
                    f"/tle {name} ({row['meaning']}) must be a number, got {raw!r}"
                ) from None
            if not math.isfinite(value):
                raise InputError(f"/tle {name} ({row['meaning']}) must be finite, got {raw!r}")
            out[name] = value
        else:
            codes = [level.split(":")[1] for level in row["levels"].split("|")]
            if raw not in codes:
                raise InputError(
                    f"/tle {name} ({row['meaning']}) must be one of {codes}, got {raw!r}"
                )
            out[name] = float(codes.index(raw)) if row["dtype"] == "category" else float(raw)
    return out


def estimate_months(params: Mapping[str, str]) -> float:
    """Treatment length in months by :data:`TLE_RULE` (monotone in every risk factor)."""
    v = _decode(params)
    crowding = (0.0, 2.0, 4.5, 7.5)[int(v["p04"])]
    spacing = (0.0, 1.0, 2.0, 3.5)[int(v["p05"])]
    klass = (0.0, 3.0, 4.0, 6.0)[int(v["p03"])]
    overjet, overbite = v["p06"], v["p07"]
    months = (
        12.0
        + crowding
        + spacing
        + klass
        + 0.6 * max(abs(overjet) - 3.0, 0.0)
        + 0.5 * max(overbite - 4.0, 0.0)
        + 0.8 * max(-overbite, 0.0)
        + 3.0 * v["p08"]
        + 4.0 * v["p09"]
        + 6.0 * v["p10"]
        + 1.2 * v["p11"]
        + 0.15 * min(max(v["p01"] - 18.0, 0.0), 40.0)
    )
    return round(min(max(months, 6.0), 60.0), 1)
