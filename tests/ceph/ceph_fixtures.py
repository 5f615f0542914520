"""Hand-built landmark sets shared by the ceph tests (imported as ``ceph_fixtures``).

Coordinates are written in an *anatomical* frame (mm; lateral: x anterior, y up;
frontal: x = patient's left, y up) and turned into image coordinates (y down) the way
a film would show them. Nothing here calls dentalkit.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

LATERAL = {
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
    "ANS": (75.0, -40.0),
    "PNS": (20.0, -42.0),
    "Ar": (-10.0, -30.0),
    "Co": (-8.0, -22.0),
    "Ba": (-20.0, -35.0),
    "Pt": (15.0, -25.0),
    "Ptm": (18.0, -32.0),
    "Xi": (5.0, -60.0),
    "Pm": (63.0, -95.0),
    "DC": (-5.0, -25.0),
    "U1_tip": (72.0, -70.0),
    "U1_apex": (60.0, -45.0),
    "U1_labial": (74.0, -64.0),
    "L1_tip": (69.0, -68.0),
    "L1_apex": (58.0, -92.0),
    "L1_labial": (70.0, -73.0),
    "U6_cusp": (35.0, -68.0),
    "L6_cusp": (35.0, -70.0),
    "U4_cusp": (52.0, -68.5),
    "L4_cusp": (52.0, -71.5),
    "G'": (78.0, 10.0),
    "N'": (75.0, 3.0),
    "Prn": (100.0, -30.0),
    "Cm": (93.0, -38.0),
    "Sn": (85.0, -45.0),
    "A'": (84.0, -52.0),
    "Ls": (87.0, -60.0),
    "Stms": (83.0, -67.0),
    "Stmi": (83.0, -69.0),
    "Li": (85.0, -76.0),
    "B'": (78.0, -90.0),
    "Pog'": (80.0, -103.0),
    "Gn'": (74.0, -113.0),
    "Me'": (62.0, -118.0),
}

FRONTAL = {
    "Cg": (0.0, 0.0),
    "Or_R": (-35.0, -20.0),
    "Or_L": (35.0, -20.0),
    "Z_R": (-48.0, -5.0),
    "Z_L": (48.0, -5.0),
    "ZA_R": (-65.0, -35.0),
    "ZA_L": (65.0, -35.0),
    "NC_R": (-14.0, -45.0),
    "NC_L": (13.0, -45.0),
    "ANS": (1.0, -55.0),
    "J_R": (-32.0, -65.0),
    "J_L": (31.0, -65.0),
    "Ag_R": (-45.0, -110.0),
    "Ag_L": (46.0, -112.0),
    "Me": (2.0, -125.0),
    "Co_R": (-52.0, -40.0),
    "Co_L": (53.0, -41.0),
    "Ma_R": (-55.0, -60.0),
    "Ma_L": (55.0, -60.0),
    "UDM": (1.5, -80.0),
    "LDM": (2.5, -82.0),
    "U6_R": (-28.0, -82.0),
    "U6_L": (28.0, -82.0),
    "L6_R": (-27.0, -84.0),
    "L6_L": (27.0, -84.0),
}


def image_table(
    points: dict[str, tuple[float, float]],
    *,
    view: str = "lateral",
    patient_id: str = "p1",
    timestamp: str = "2024-01-01",
    px_per_mm: float = 10.0,
    mirror: bool = False,
    angle_deg: float = 0.0,
    offset: tuple[float, float] = (1000.0, 1200.0),
) -> pd.DataFrame:
    """Image-coordinate long table of a landmark set (optionally mirrored / rotated)."""
    names = list(points)
    xy = np.array([points[n] for n in names], dtype=float)
    if mirror:
        xy[:, 0] *= -1.0
    t = np.radians(angle_deg)
    rot = np.array([[np.cos(t), -np.sin(t)], [np.sin(t), np.cos(t)]])
    xy = xy @ rot.T * px_per_mm
    x_img = xy[:, 0] + offset[0]
    y_img = -xy[:, 1] + offset[1]
    return pd.DataFrame(
        {
            "patient_id": patient_id,
            "timestamp": timestamp,
            "view": view,
            "name": names,
            "x": x_img,
            "y": y_img,
        }
    )
