"""measure → zscores → classify → change → summarize on a small longitudinal cohort."""

from __future__ import annotations

import pandas as pd
import pytest
from ceph_fixtures import LATERAL, image_table

from dentalkit.ceph import change, classify, measure, summarize, zscores


def test_pipeline_on_a_longitudinal_cohort():
    grown = {k: (x * 1.05, y * 1.05) for k, (x, y) in LATERAL.items()}  # 5 % larger
    t = pd.concat(
        [
            image_table(LATERAL, patient_id="p1", timestamp="2020-01-01"),
            image_table(grown, patient_id="p1", timestamp="2022-01-01", mirror=True),
            image_table(LATERAL, patient_id="p2", timestamp="not a date"),
        ],
        ignore_index=True,
    )
    t["session_time"] = pd.to_datetime(t["timestamp"], errors="coerce", utc=True)
    t = t.astype({"patient_id": "category", "timestamp": "category", "name": "category"})
    m = measure(t, mm_per_px=0.1, errors="raise")
    assert list(m.columns[:3]) == ["patient_id", "timestamp", "session_time"]
    z = zscores(m, patients=pd.DataFrame({"patient_id": ["p1", "p2"], "age": [12.0, 14.0]}))
    assert z.loc[z["measure"] == "APDI", "z"].notna().all()  # Kim's norm: ages 6–18
    c = classify(m)
    assert len(c) == 3
    assert set(c["skeletal_class"].astype(str)) == {"Class I"}  # ANB 2.8° in the fixture
    ch = change(m)
    sn = ch[(ch["patient_id"] == "p1") & (ch["measure"] == "S_N")]
    assert sn["change"].item() == pytest.approx(0.05 * sn["value_from"].item())
    assert sn["years"].item() == pytest.approx(731 / 365.25)
    sna = ch[(ch["patient_id"] == "p1") & (ch["measure"] == "SNA")]
    assert sna["change"].item() == pytest.approx(0.0, abs=1e-9)  # angles do not grow
    assert ch[ch["patient_id"] == "p2"].empty  # a single session: no change rows
    s = summarize(z)  # one session per patient: p1's first, p2's only
    assert s.loc[s["measure"] == "SNA", ["n", "n_units"]].to_numpy().tolist() == [[2, 2]]
    pooled = summarize(z, session="all")  # both sessions of p1: 3 values of 2 patients
    assert pooled.loc[pooled["measure"] == "SNA", ["n", "n_units"]].to_numpy().tolist() == [[3, 2]]
    assert "mean_z" in s.columns
