"""The pipeline's growth step: ceph and arch measures by the patient's class, Class I first."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dentalkit.study import growth_by_group


def _tables(n_per_class: int = 4):
    rng = np.random.default_rng(0)
    classes = ["Class III", "Class I", "Class II"]
    ids = [f"P{i:02d}" for i in range(3 * n_per_class)]
    klass = np.repeat(classes, n_per_class)
    sessions = ["2024-03-05T10:00:00Z", "2025-03-04T10:00:00Z"]
    ceph, arch = [], []
    for k, ts in enumerate(sessions):
        for pid in ids:
            base = {"patient_id": pid, "timestamp": ts, "session_time": pd.Timestamp(ts)}
            for m, v in (("SNB", 78 + 0.3 * k), ("ANB", 3 - 0.1 * k), ("SNA", 81.0)):
                ceph.append({**base, "view": "lateral", "measure": m, "unit": "deg",
                             "value": v + rng.normal(0, 0.5)})  # fmt: skip
            for a in ("up", "lo"):
                arch.append({**base, "arch": a, "measure": "intermolar_width", "unit": "mm",
                             "status": "ok", "value": 45 + 0.2 * k + rng.normal(0, 0.3)})  # fmt: skip
    groups = pd.DataFrame(
        {"patient_id": ids, "skeletal_class": pd.Categorical(klass, categories=classes)}
    )
    return pd.DataFrame(ceph), pd.DataFrame(arch), groups


def test_growth_step_models_the_chosen_measures_with_class_i_as_reference():
    ceph, arch, groups = _tables()
    out = growth_by_group(ceph, arch, groups, arch=("intermolar_width",))
    assert set(out) == {
        "growth_fixed", "growth_variance", "growth_models", "growth_bands", "growth_data"
    }  # fmt: skip
    models = out["growth_models"].set_index("measure")
    assert sorted(models.index) == [
        "ANB", "SNB", "intermolar_width (lower)", "intermolar_width (upper)"
    ]  # fmt: skip
    assert (models["status"] == "ok").all()
    assert (models["n_units"] == 12).all() and (models["n_rows"] == 24).all()
    assert (models["random_effects"] == "intercept | patient_id").all()
    terms = set(out["growth_fixed"]["term"])
    assert "years:skeletal_class[T.Class II]" in terms
    assert "years:skeletal_class[T.Class III]" in terms  # Class I is the reference
    assert out["growth_bands"]["group"].iloc[0] == "Class I"
    assert "skeletal_class" in out["growth_data"].columns


def test_growth_step_is_empty_with_one_session():
    ceph, _arch, groups = _tables()
    first = ceph[ceph["timestamp"] == ceph["timestamp"].min()]
    assert growth_by_group(first, None, groups) == {}
