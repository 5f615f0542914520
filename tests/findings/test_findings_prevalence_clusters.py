"""Prevalence over sessions or images: intervals clustered on the patient, not Wilson."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm

from dentalkit import findings
from dentalkit.stats._proportions import cluster_proportion_ci


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


def test_session_prevalence_interval_is_cluster_robust_on_the_patient():
    det, imgs = _cohort()
    res = findings.prevalence(det, images=imgs, unit="session").prevalence.iloc[0]
    y = (
        imgs.merge(det[["patient_id", "timestamp"]].assign(d=1), how="left")["d"]
        .fillna(0)
        .to_numpy()
    )
    ols = sm.OLS(y, np.ones(len(y))).fit(
        cov_type="cluster", cov_kwds={"groups": pd.factorize(imgs["patient_id"])[0]}
    )
    assert res["prevalence"] == pytest.approx(y.mean())
    assert (res["ci_low"], res["ci_high"]) == pytest.approx(tuple(ols.conf_int()[0]))
    assert res["n_units"] == 40 and res["n_patients"] == 20
    assert "clustered on patient_id" in res["ci_method"]
    per_patient = findings.prevalence(det, images=imgs).prevalence.iloc[0]
    assert per_patient["ci_method"].startswith("Wilson") and per_patient["n_patients"] == 20


def test_cluster_ci_by_group_matches_statsmodels_and_needs_two_clusters():
    rng = np.random.default_rng(0)
    cl = np.repeat(np.arange(30), 3)
    y = (rng.random(90) < np.repeat(rng.uniform(0, 0.8, 30), 3)).astype(float)
    grp = np.tile(["a", "b", "a"], 30)
    p, lo, hi, g = cluster_proportion_ci(y, cl, grp)
    for i, name in enumerate(["a", "b"]):
        m = grp == name
        r = sm.OLS(y[m], np.ones(m.sum())).fit(cov_type="cluster", cov_kwds={"groups": cl[m]})
        assert p[i] == pytest.approx(r.params[0])
        assert (lo[i], hi[i]) == pytest.approx(tuple(r.conf_int()[0]))
        assert g[i] == 30
    one = cluster_proportion_ci([1, 0, 1], ["a", "a", "a"])
    assert np.isnan(one[1][0])
