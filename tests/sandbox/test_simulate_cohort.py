"""Plausibility over a synthetic cohort: norms, image bounds, class mix."""

import csv
import math
from pathlib import Path

import numpy as np
import pytest

from dentalkit.endpoints import Kind, get_endpoint, image_endpoints
from dentalkit.sandbox.render import IMAGE_SPECS, default_image_kind
from dentalkit.sandbox.simulate import respond, truth

DATA = Path(__file__).resolve().parents[2] / "dentalkit" / "data"
with open(DATA / "landmark_map_lateral.csv", newline="") as fh:
    NAMES = {row["key"]: row["name"] for row in csv.DictReader(fh)}
COHORT = [f"H{i:03d}" for i in range(200)]
MM_PER_PX = 0.1
TS = "2024-06-01"


def ang(u, v):
    c = np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v))
    return math.degrees(math.acos(max(-1.0, min(1.0, c))))


@pytest.fixture(scope="module")
def measures():
    """Measures recomputed from the *noisy* responses of 200 patients."""
    ep = get_endpoint("ceph-lateral-points")
    rows = []
    for pid in COHORT:
        body = respond(ep, {"PatientID": pid, "TimeStamp": TS, "ImageName": "https://x/c.png"})
        P = {
            NAMES[k]: np.array([v["x_coordinate"], v["y_coordinate"]])
            for k, v in body["Results"].items()
        }
        mm = MM_PER_PX  # documented pixel spacing of lateral cephalograms
        sna = ang(P["S"] - P["N"], P["A"] - P["N"])
        snb = ang(P["S"] - P["N"], P["B"] - P["N"])
        mp = ang(P["N"] - P["S"], P["Me"] - P["Go"])
        rows.append({
            "SNA": sna, "SNB": snb, "ANB": sna - snb, "SN_MP": min(mp, 180 - mp),
            "U1_SN": ang(P["U1_apex"] - P["U1_tip"], P["N"] - P["S"]),
            "IMPA": ang(P["L1_tip"] - P["L1_apex"], P["Go"] - P["Me"]),
            "gonial": ang(P["Ar"] - P["Go"], P["Me"] - P["Go"]),
            "N_Me": np.linalg.norm(P["N"] - P["Me"]) * mm,
        })  # fmt: skip
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


# (mean low, mean high, sd low, sd high): norms of the reference notes (Steiner, Tweed,
# Björk/Jarabak) for a mixed child/adolescent cohort with a Class I/II/III mix.
NORMS = {
    "SNA": (80.0, 84.5, 2.0, 5.0),
    "SNB": (77.0, 81.5, 2.0, 5.0),
    "ANB": (1.5, 4.5, 1.5, 4.0),
    "SN_MP": (30.0, 36.0, 3.0, 7.0),
    "U1_SN": (99.0, 107.0, 3.5, 8.0),
    "IMPA": (88.0, 97.0, 3.5, 8.5),
    "gonial": (122.0, 133.0, 3.5, 8.0),
    "N_Me": (100.0, 125.0, 4.0, 12.0),
}


@pytest.mark.parametrize("name", sorted(NORMS))
def test_cohort_means_and_sds_near_norms(measures, name):
    lo, hi, sd_lo, sd_hi = NORMS[name]
    values = measures[name]
    assert lo <= values.mean() <= hi
    assert sd_lo <= values.std(ddof=1) <= sd_hi


def test_skeletal_class_mix(measures):
    anb = measures["ANB"]
    share_ii, share_iii = np.mean(anb > 4.0), np.mean(anb < 0.0)
    assert 0.2 < share_ii < 0.5
    assert 0.03 < share_iii < 0.2


def _all_points(body):
    if "Results" in body and body.get("NumberOfPredictedPoints"):
        return [[v["x_coordinate"], v["y_coordinate"]] for v in body["Results"].values()]
    pts = []
    if "Teeth" in body:
        for rec in body["Teeth"].values():
            pts += [v for k, v in rec.items() if k != "missing"]
        pts += list(body["CatenaryPoints"].values())
    elif "Results" in body:
        for rec in body["Results"].values():
            if isinstance(rec, dict) and not rec.get("missing", True):
                pts += rec["points"]
            elif isinstance(rec, list):
                for d in rec:
                    pts += [d["TopLeft"], d["BottomRight"]]
    return pts


@pytest.mark.parametrize(
    "ep",
    [e for e in image_endpoints() if e.kind not in (Kind.CLASSIFIER, Kind.TMJ)],
    ids=lambda e: e.name,
)
@pytest.mark.parametrize("noise", [True, False])
def test_every_point_inside_its_image(ep, noise):
    spec = IMAGE_SPECS[default_image_kind(ep)]
    for pid in COHORT[:40]:
        body = respond(
            ep, {"PatientID": pid, "TimeStamp": TS, "ImageName": "https://x/c.png"}, noise=noise
        )
        pts = np.asarray(_all_points(body), dtype=float).reshape(-1, 2)
        assert np.all(pts[:, 0] >= 0)
        assert np.all(pts[:, 0] <= spec.width - 1)
        assert np.all(pts[:, 1] >= 0)
        assert np.all(pts[:, 1] <= spec.height - 1)


def test_documented_pixel_spacing():
    assert truth(COHORT[0], TS)["ceph_lateral"]["mm_per_px"] == MM_PER_PX


def test_missing_teeth_prevalence():
    m3 = other = 0
    ep = get_endpoint("pano-segmentation")
    for pid in COHORT:
        req = {"PatientID": pid, "TimeStamp": TS, "ImageName": "https://x/p.png"}
        results = respond(ep, req, noise=False)["Results"]
        missing = [k for k, rec in results.items() if rec["missing"]]
        m3 += sum(k.startswith("m3") for k in missing)
        other += sum(not k.startswith("m3") for k in missing)
    assert 0.12 < m3 / (4 * len(COHORT)) < 0.35  # ~22 % of third molars
    assert other / (28 * len(COHORT)) < 0.03  # other teeth rarely missing
