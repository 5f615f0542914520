"""Ceph contour noise has the documented law: per-point SD kept, neighbours correlated.

Independent of the simulator's code: noisy and noise-free answers of the same request are
compared point by point (names from the shipped landmark map), and the expected
correlation is the closed form for Gaussian-smoothed white noise, exp(−d² / (4 L²)) for
points d apart along a chain much longer than L.
"""

import numpy as np

from dentalkit.landmark_map import load_landmark_map
from dentalkit.sandbox.simulate import NOISE_MODEL, respond, truth

N_PATIENTS = 300
TS = "2024-03-05"


def _residuals_mm(endpoint: str, view: str) -> tuple[dict[str, int], np.ndarray]:
    """Column index by landmark name, and (patients, landmarks, 2) noisy − exact in mm."""
    names = load_landmark_map().query("view == @view").set_index("key")["name"]
    out = []
    for i in range(N_PATIENTS):
        pid = f"CN{i:04d}"
        req = {"PatientID": pid, "TimeStamp": TS, "ImageName": f"https://example.org/{pid}.png"}
        noisy = respond(endpoint, req)["Results"]
        exact = respond(endpoint, req, noise=False)["Results"]
        keys = list(exact)
        d = np.array(
            [[noisy[k][c] - exact[k][c] for c in ("x_coordinate", "y_coordinate")] for k in keys]
        )
        out.append(d * truth(pid, TS)[f"ceph_{view}"]["mm_per_px"])
    return {names[k]: j for j, k in enumerate(keys)}, np.array(out)


def test_lateral_contours_smooth_and_landmarks_independent():
    col, res = _residuals_mm("ceph-lateral-points", "lateral")
    sd = NOISE_MODEL["ceph_contour_sd_mm"]
    length = NOISE_MODEL["ceph_contour_correlation_points"]
    # the middle of the 40-point mandible contour, far from both ends of the chain
    mid = [col[f"mandible_contour_{k:02d}"] for k in range(12, 30)]
    nxt = [col[f"mandible_contour_{k:02d}"] for k in range(13, 31)]
    assert abs(np.std(res[:, mid, :]) / sd - 1.0) < 0.05
    a, b = res[:, mid, 0].ravel(), res[:, nxt, 0].ravel()
    assert abs(np.corrcoef(a, b)[0, 1] - np.exp(-1.0 / (4.0 * length**2))) < 0.03
    two = [col[f"mandible_contour_{k:02d}"] for k in range(14, 32)]
    c = res[:, two, 0].ravel()
    assert abs(np.corrcoef(a, c)[0, 1] - np.exp(-4.0 / (4.0 * length**2))) < 0.03
    # named landmarks stay independent of each other and of the contours
    for p, q in [("S", "N"), ("A", "B"), ("Me", "mandible_contour_20")]:
        r = np.corrcoef(res[:, col[p], 0], res[:, col[q], 0])[0, 1]
        assert abs(r) < 0.2, (p, q, r)
    assert abs(np.std(res[:, col["S"], :]) / NOISE_MODEL["ceph_lateral_sd_mm"]["S"] - 1) < 0.1
