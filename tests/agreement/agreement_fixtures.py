"""Hand-built tracings shared by the agreement tests (imported as ``agreement_fixtures``).

Coordinates are written in an anatomical frame (mm; x anterior, y up) and put on a film
the way an image shows them (y down, optionally mirrored and tilted). Nothing here
calls dentalkit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

#: The 19 ISBI 2015 landmarks (our names), anatomical frame, mm (S at the origin).
ISBI_MM = {
    "S": (0.0, 0.0),
    "N": (70.0, 5.0),
    "Or": (55.0, -22.0),
    "Po": (-25.0, -20.0),
    "A": (68.0, -45.0),
    "B": (62.0, -85.0),
    "Pog": (64.0, -100.0),
    "Me": (55.0, -112.0),
    "Gn": (61.0, -108.0),
    "Go": (-5.0, -85.0),
    "L1_tip": (69.0, -68.0),
    "U1_tip": (72.0, -70.0),
    "Ls": (87.0, -60.0),
    "Li": (85.0, -76.0),
    "Sn": (85.0, -45.0),
    "Pog'": (80.0, -103.0),
    "PNS": (20.0, -42.0),
    "ANS": (75.0, -40.0),
    "Ar": (-10.0, -30.0),
}
NAMES = list(ISBI_MM)


def to_image(
    xy_mm: np.ndarray,
    *,
    mm_per_px: float = 0.1,
    facing: str = "right",
    tilt_deg: float = 0.0,
    origin_px: tuple[float, float] = (800.0, 900.0),
) -> np.ndarray:
    """Anatomical mm (x anterior, y up) → image px (y down), as a film shows the head."""
    xy = np.asarray(xy_mm, dtype=float).copy()
    if facing == "left":
        xy[..., 0] *= -1.0
    a = np.deg2rad(tilt_deg)
    rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
    xy = xy @ rot.T
    px = xy / mm_per_px
    px[..., 1] *= -1.0
    return px + np.asarray(origin_px)


def tracing(
    patient_id: str,
    *,
    timestamp: str = "2024-01-01",
    offsets_mm: dict[str, tuple[float, float]] | None = None,
    **placement,
) -> pd.DataFrame:
    """One session's long landmarks table; ``offsets_mm`` moves points in the anatomical frame."""
    pts = np.array([ISBI_MM[n] for n in NAMES], dtype=float)
    for name, (dx, dy) in (offsets_mm or {}).items():
        pts[NAMES.index(name)] += (dx, dy)
    px = to_image(pts, **placement)
    return pd.DataFrame(
        {
            "patient_id": patient_id,
            "timestamp": timestamp,
            "view": "lateral",
            "name": NAMES,
            "x": px[:, 0],
            "y": px[:, 1],
        }
    )


def cohort(n: int, rng: np.random.Generator, **placement) -> pd.DataFrame:
    """n sessions of the same anatomy, each translated at random (one film per session)."""
    pts = np.array([ISBI_MM[m] for m in NAMES], dtype=float)
    px = to_image(pts, **placement, origin_px=(0.0, 0.0))  # (19, 2)
    origins = rng.uniform(600, 1200, size=(n, 2))
    xy = (px[None, :, :] + origins[:, None, :]).reshape(-1, 2)
    return pd.DataFrame(
        {
            "patient_id": np.repeat([f"P{i:04d}" for i in range(n)], len(NAMES)),
            "timestamp": "2024-01-01",
            "view": "lateral",
            "name": np.tile(NAMES, n),
            "x": xy[:, 0],
            "y": xy[:, 1],
        }
    )


#: Bland & Altman (1986), Table 1: PEFR (l/min) of 17 subjects, first reading with the
#: Wright peak flow meter and first reading with the mini Wright meter.
PEFR_WRIGHT = [494, 395, 516, 434, 476, 557, 413, 442, 650, 433, 417, 656, 267, 478, 178, 423, 427]
PEFR_MINI = [512, 430, 520, 428, 500, 600, 364, 380, 658, 445, 432, 626, 260, 477, 259, 350, 451]

#: Shrout & Fleiss (1979), Table 2: 6 targets rated by 4 judges.
SHROUT_FLEISS = np.array(
    [
        [9, 2, 5, 8],
        [6, 1, 3, 2],
        [8, 4, 6, 8],
        [7, 1, 2, 6],
        [10, 5, 6, 9],
        [6, 2, 4, 7],
    ],
    dtype=float,
)
