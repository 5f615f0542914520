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
    p: Patient, kind: str, rng: np.random.Generator, width: int, height: int
) -> dict[str, list[tuple[int, int, int, int]]]:
    """Boxes per class on one intra-oral photo: ``class → [(x0, y0, x1, y1), …]`` (pixels).

    Counts are Poisson with the patient's rate per class (brackets: one per
    visible tooth, 8–12, when the patient wears them); boxes lie in the central
    band of the photo where the teeth are.
    """
    out: dict[str, list[tuple[int, int, int, int]]] = {}
    for name in CLINICAL_CLASSES:
        rate = p.clinical_rates[name]
        if rate <= 0.0:
            count = 0
        elif name == "bracket":
            count = int(rng.integers(8, 13))
        else:
            count = int(rng.poisson(rate))
        if count == 0:
            continue
        size = rng.uniform(40, 140, size=(count, 2))
        if name == "bracket":
            size[:] = rng.uniform(45, 60)
        x0 = rng.uniform(0.12 * width, 0.88 * width - size[:, 0])
        y0 = rng.uniform(0.28 * height, 0.72 * height - size[:, 1])
        boxes = np.column_stack([x0, y0, x0 + size[:, 0], y0 + size[:, 1]]).round().astype(int)
        out[name] = [tuple(b) for b in boxes.tolist()]
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
