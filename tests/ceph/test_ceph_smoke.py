"""Smallest end-to-end check: a right angle at N and a 70 px S-N distance."""

import pandas as pd

from dentalkit.ceph import measure


def test_right_angle_and_calibrated_distance():
    t = pd.DataFrame(
        {
            "patient_id": "p1",
            "timestamp": "t1",
            "name": ["S", "N", "A"],
            "x": [0.0, 70.0, 70.0],
            "y": [0.0, 0.0, 50.0],
        }
    )
    out = measure(t, ["SNA", "S_N"], mm_per_px=0.1)
    assert out["measure"].tolist() == ["SNA", "S_N"]
    assert out["value"].tolist() == [90.0, 7.0]
    assert out["unit"].tolist() == ["deg", "mm"]
