"""Recovery on sandbox data: the sandbox documents its per-landmark noise (docs/sandbox.md,
``truth()["ceph_lateral"]["noise_sd_mm"]``), so the service-vs-truth and
service-vs-examiner radial errors have known Rayleigh means."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dentalkit import agreement
from dentalkit.endpoints import get_endpoint
from dentalkit.errors import DentalkitWarning
from dentalkit.landmark_map import key_to_name
from dentalkit.sandbox.simulate import respond, truth

N_SESSIONS = 60
MM_PER_PX = 0.1  # both ceph image kinds (docs/sandbox.md, "Images")


def _landmarks(view: str, noise: bool) -> pd.DataFrame:
    ep = get_endpoint("ceph-lateral-points" if view == "lateral" else "ceph-frontal-points")
    names = key_to_name(view)
    rows = []
    for i in range(N_SESSIONS):
        req = {
            "PatientID": f"AGR{i:03d}",
            "TimeStamp": "2024-05-01",
            "ImageName": "https://x/c.png",
        }
        for key, v in respond(ep, req, noise=noise)["Results"].items():
            rows.append((req["PatientID"], req["TimeStamp"], view, key, names[key], v["x_coordinate"], v["y_coordinate"]))  # fmt: skip
    return pd.DataFrame(rows, columns=["patient_id", "timestamp", "view", "landmark", "name", "x", "y"])  # fmt: skip


@pytest.fixture(scope="module")
def tables():
    exact = pd.concat([_landmarks(v, False) for v in ("lateral", "frontal")], ignore_index=True)
    served = pd.concat([_landmarks(v, True) for v in ("lateral", "frontal")], ignore_index=True)
    t = truth("AGR000", "2024-05-01")
    sd = {
        "lateral": t["ceph_lateral"]["noise_sd_mm"],
        "frontal": t["noise"]["ceph_frontal_sd_mm"],
    }
    return exact, served, sd


def _check_rayleigh(summary: pd.DataFrame, scale_of) -> int:
    checked = 0
    for rec in summary.to_dict("records"):
        if rec["name"] == agreement.OVERALL:
            continue
        s = scale_of(rec["view"], rec["name"])
        if s is None:
            continue
        se = s * np.sqrt((4 - np.pi) / 2) / np.sqrt(rec["n"])
        assert abs(rec["mre"] - s * np.sqrt(np.pi / 2)) < 4 * se, (rec["view"], rec["name"])
        checked += 1
    return checked


def test_service_against_truth_recovers_the_documented_noise(tables):
    exact, served, sd = tables
    res = agreement.landmarks(exact, served, mm_per_px=MM_PER_PX)
    assert res.problems.empty
    assert set(res.summary["view"].astype(str)) == {"lateral", "frontal"}
    checked = _check_rayleigh(res.summary, lambda v, n: sd[v].get(n))
    assert checked >= 44 + 20  # every named lateral and frontal landmark


def test_service_against_a_simulated_examiner(tables):
    exact, served, sd = tables
    sigma_e = 0.7
    lateral = exact["view"] == "lateral"
    examiner = agreement.simulate_examiner(exact[lateral], sigma_e, MM_PER_PX, seed=12)
    isbi = ["S", "N", "Or", "Po", "A", "B", "Pog", "Me", "Gn", "Go", "L1_tip", "U1_tip",
            "Ls", "Li", "Sn", "Pog'", "PNS", "ANS", "Ar"]  # fmt: skip
    with pytest.warns(DentalkitWarning, match="session only in the test table"):
        agreement.landmarks(
            examiner, served, mm_per_px=MM_PER_PX, subset=isbi, errors="warn"
        )  # + frontal
    res = agreement.landmarks(
        examiner, served[served["view"] == "lateral"], mm_per_px=MM_PER_PX, subset=isbi
    )
    assert res.problems.empty
    checked = _check_rayleigh(res.summary, lambda v, n: np.hypot(sigma_e, sd[v][n]))
    assert checked == 19
