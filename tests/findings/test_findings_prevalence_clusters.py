"""Prevalence over sessions or images: intervals clustered on the patient, not Wilson."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dentalkit import findings
from dentalkit.stats._proportions import cluster_proportion_ci
from tests.stats.clustered_ci import clustered_wilson


def _cohort(n_patients=20, seed=5):
    rng = np.random.default_rng(seed)
    images, dets = [], []
    for i in range(n_patients):
        pid = f"p{i:02d}"
        prone = rng.random() < 0.4  # a patient with decay has it at both sessions (mostly)
        for ts in ("t0", "t1"):
            images.append({"patient_id": pid, "timestamp": ts, "source": "pano"})
            if prone and rng.random() < 0.9:
                dets.append(
                    {"patient_id": pid, "timestamp": ts, "source": "pano", "class_name": "decay",
                     "x0": 0, "y0": 0, "x1": 4, "y1": 4}
                )  # fmt: skip
    return pd.DataFrame(dets), pd.DataFrame(images)


def test_session_prevalence_interval_is_clustered_on_the_patient():
    det, imgs = _cohort()
    res = findings.prevalence(det, images=imgs, unit="session").prevalence.iloc[0]
    y = (
        imgs.merge(det[["patient_id", "timestamp"]].assign(d=1), how="left")["d"]
        .fillna(0)
        .to_numpy()
    )
    p, low, high = clustered_wilson(y, pd.factorize(imgs["patient_id"])[0])
    assert res["prevalence"] == pytest.approx(y.mean()) == pytest.approx(p)
    assert (res["ci_low"], res["ci_high"]) == pytest.approx((low, high))
    assert res["n_units"] == 40 and res["n_patients"] == 20
    assert "clustered on patient_id" in res["ci_method"]
    assert "Korn & Graubard" in res["ci_method"]
    per_patient = findings.prevalence(det, images=imgs).prevalence.iloc[0]
    assert per_patient["ci_method"].startswith("Wilson") and per_patient["n_patients"] == 20


def test_cluster_ci_by_group_matches_the_hand_computation():
    rng = np.random.default_rng(0)
    cl = np.repeat(np.arange(30), 3)
    y = (rng.random(90) < np.repeat(rng.uniform(0, 0.8, 30), 3)).astype(float)
    grp = np.tile(["a", "b", "a"], 30)
    p, lo, hi, g = cluster_proportion_ci(y, cl, grp)
    for i, name in enumerate(["a", "b"]):
        m = grp == name
        ref = clustered_wilson(y[m], cl[m])
        assert (p[i], lo[i], hi[i]) == pytest.approx(ref)
        assert g[i] == 30


def test_a_finding_never_seen_gets_no_zero_width_interval():
    """Issue 29: 0 of 24 sessions of 10 patients gave [0, 0]. Now Wilson on the 10
    patients (no event in any of them) with the df correction: an upper limit > 0."""
    y = np.zeros(24)
    cl = np.repeat(np.arange(10), [3, 3, 3, 3, 2, 2, 2, 2, 2, 2])
    p, lo, hi, _ = cluster_proportion_ci(y, cl)
    z, t = stats.norm.ppf(0.975), stats.t.ppf(0.975, 9)
    n = 10 * (z / t) ** 2
    assert (p[0], lo[0]) == (0.0, 0.0)
    assert hi[0] == pytest.approx((z**2 / n) / (1 + z**2 / n))  # Wilson's upper limit at 0
    assert hi[0] > 0.2
    one = cluster_proportion_ci([1, 0, 1], ["a", "a", "a"])  # one patient: Wilson on n = 1
    assert 0 < one[1][0] < one[2][0] < 1
