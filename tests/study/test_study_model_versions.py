"""Pooling responses of different Versions warns and is recorded (issue 20, item 6)."""

from __future__ import annotations

import warnings

import pandas as pd
import pytest

from dentalkit import study
from dentalkit.errors import MixedVersionsWarning


def _table(rows):
    return pd.DataFrame(rows, columns=["patient_id", "timestamp", "endpoint", "model_version"])


def test_versions_are_counted_by_patient_and_session_and_pooling_warns():
    landmarks = _table(
        [
            ("P1", "t1", "ceph_lateral_points", "2.1.0"),
            ("P1", "t1", "ceph_lateral_points", "2.1.0"),  # many rows, one session
            ("P1", "t2", "ceph_lateral_points", "2.2.0"),
            ("P2", "t1", "ceph_lateral_points", "2.2.0"),
            ("P3", "t1", "ceph_frontal_points", "2.1.0"),
        ]
    )
    classifications = _table([("P1", "t1", "classifier", None), ("P2", "t1", "classifier", None)])
    tables = {"landmarks": landmarks, "classifications": classifications}
    v = study.model_versions(tables)
    got = {
        (r.endpoint, r.model_version): (r.n_sessions, r.n_patients, r.pooled)
        for r in v.itertuples(index=False)
    }
    assert got == {
        ("ceph_frontal_points", "2.1.0"): (1, 1, False),
        ("ceph_lateral_points", "2.1.0"): (1, 1, True),
        ("ceph_lateral_points", "2.2.0"): (2, 2, True),
        ("classifier", "(none)"): (2, 2, False),
    }
    with pytest.warns(MixedVersionsWarning, match=r"ceph_lateral_points: 2\.1\.0 \(1 patients\)"):
        out = study.analyze({"classifications": classifications, "other": landmarks})
    assert out["model_versions"]["pooled"].any()


def test_one_version_per_endpoint_does_not_warn():
    tables = {"landmarks": _table([("P1", "t1", "ceph_lateral_points", "2.1.0")])}
    with warnings.catch_warnings():
        warnings.simplefilter("error", MixedVersionsWarning)
        v = study.model_versions(tables)
    assert not v["pooled"].any()
    assert study.model_versions({}).empty
