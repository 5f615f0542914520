"""Ground-truth recovery on the sandbox simulator (an independent forward implementation).

With noise off, the measures defined in docs/conventions.md equal the simulator's drawn
values to 0.01° / 0.01 mm; with noise on they stay within a loose, documented bound.
"""

from __future__ import annotations

from functools import cache, lru_cache

import numpy as np
import pandas as pd
import pytest

from dentalkit.ceph import measure
from dentalkit.endpoints import get_endpoint
from dentalkit.sandbox.simulate import respond
from dentalkit.sandbox.simulate import truth as _truth

SESSIONS = [(f"P{i:03d}", ts) for i in range(1, 9) for ts in ("2023-02-01", "2025-03-15")]

# measure id (ours) → key in truth()["ceph_lateral"], and a unit factor applied to truth
LATERAL = {
    "SNA": ("SNA", 1.0),
    "SNB": ("SNB", 1.0),
    "ANB": ("ANB", 1.0),
    "SN_MP": ("SN_MP", 1.0),
    "FH_SN": ("FH_SN", 1.0),
    "FMA": ("FMA", 1.0),
    "IMPA": ("IMPA", 1.0),
    "FMIA": ("FMIA", 1.0),
    "U1_SN": ("U1_SN", 1.0),
    "gonial_angle": ("gonial_angle", 1.0),
    "saddle_angle": ("saddle_angle", 1.0),
    "articular_angle": ("articular_angle", 1.0),
    "Bjork_sum": ("bjork_sum", 1.0),
    "S_N": ("S_N", 1.0),
    "N_Me": ("N_Me", 1.0),
    "N_ANS": ("N_ANS", 1.0),
    "ANS_Me": ("ANS_Me", 1.0),
    "S_Go": ("S_Go", 1.0),
    "Jarabak_ratio": ("jarabak_ratio", 100.0),  # truth is a fraction, ours a percentage
}
FRONTAL = {
    "nasal_width": "nasal_width_NC",
    "maxillary_width": "maxillary_width_J",
    "mandibular_width": "mandibular_width_Ag",
    "bizygomatic_width": "bizygomatic_width_ZA",
    "upper_molar_width": "upper_intermolar_width_U6",
    "lower_molar_width": "lower_intermolar_width_L6",
}


@cache
def truth(pid: str, ts: str) -> dict:
    return _truth(pid, ts)


@lru_cache(maxsize=2)
def landmarks_table(noise: bool) -> pd.DataFrame:
    """The landmarks table, built from the simulator's response bodies in a few lines."""
    rows = []
    for pid, ts in SESSIONS:
        for slug, view in (("ceph-lateral-points", "lateral"), ("ceph-frontal-points", "frontal")):
            body = respond(
                get_endpoint(slug),
                {"PatientID": pid, "TimeStamp": ts, "ImageName": f"https://img.example/{pid}.png"},
                noise=noise,
            )
            cal = truth(pid, ts)[f"ceph_{view}"]["mm_per_px"]
            for key, xy in body["Results"].items():
                rows.append((pid, ts, view, key, xy["x_coordinate"], xy["y_coordinate"], cal))
    t = pd.DataFrame(rows, columns=["patient_id", "timestamp", "view", "landmark", "x", "y", "cal"])
    t["name"] = None  # names come from the default landmark map
    return t


def truth_table() -> pd.DataFrame:
    recs = []
    for pid, ts in SESSIONS:
        t = truth(pid, ts)
        for mid, (key, f) in LATERAL.items():
            recs.append((pid, ts, mid, t["ceph_lateral"][key] * f))
        for mid, key in FRONTAL.items():
            recs.append((pid, ts, mid, t["ceph_frontal"][key]))
    return pd.DataFrame(recs, columns=["patient_id", "timestamp", "measure", "truth"])


def _joined(noise: bool) -> pd.DataFrame:
    out = measure(
        landmarks_table(noise), [*LATERAL, *FRONTAL], mm_per_px="cal", errors="raise"
    ).astype({"patient_id": str, "timestamp": str, "measure": str})
    return out.merge(truth_table(), on=["patient_id", "timestamp", "measure"], validate="1:1")


def test_noise_off_recovers_the_drawn_values_exactly():
    j = _joined(noise=False)
    assert len(j) == len(SESSIONS) * (len(LATERAL) + len(FRONTAL))
    err = (j["value"] - j["truth"]).abs()
    worst = j.assign(err=err).sort_values("err").tail(3)
    assert err.max() < 0.01, worst.to_string()
    # the cohort mixes left- and right-facing films
    facing = {truth(p, t)["ceph_lateral"]["facing"] for p, t in SESSIONS}
    assert facing == {"left", "right"}


def test_noisy_cohort_errors_are_bounded():
    j = _joined(noise=True)
    j["abs_err"] = (j["value"] - j["truth"]).abs()
    mae = j.groupby("measure")["abs_err"].mean()
    # noise SDs are 0.3-1.5 mm per landmark; angles stay within a few degrees on average
    assert mae[["SNA", "SNB", "ANB"]].max() < 2.0, mae.to_string()
    assert mae[["N_Me", "ANS_Me", "S_N"]].max() < 2.0, mae.to_string()
    assert np.isfinite(mae).all()


if __name__ == "__main__":  # print the noisy-cohort mean absolute errors (for the report)
    j = _joined(noise=True)
    j["abs_err"] = (j["value"] - j["truth"]).abs()
    print(j.groupby("measure")["abs_err"].agg(["mean", "max"]).round(3).to_string())
    pytest.main([__file__, "-q"])
