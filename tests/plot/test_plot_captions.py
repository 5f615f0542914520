"""Captions: what is drawn, n in patients, units, method — from the figure's own inputs."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

from dentalkit import plot
from dentalkit.errors import InputError
from tests.plot.plot_tables import arch_points, landmarks, teeth


def _z(patients: int, sessions: int) -> pd.DataFrame:
    rows = []
    for p in range(patients):
        for s in range(sessions):
            for m, unit in (("SNA", "deg"), ("Wits", "mm")):
                rows.append((f"P{p}", f"2024-0{s + 1}-01", m, unit, 82.0, 3.5, 0.1 * p - s))
    return pd.DataFrame(
        rows, columns=["patient_id", "timestamp", "measure", "unit", "norm_mean", "norm_sd", "z"]
    )


def test_wiggle_counts_patients_not_sessions():
    text = plot.caption("ceph_wiggle", _z(3, 2))
    assert text.endswith("n = 3 patients.")  # 3 patients × 2 sessions: 6 rows per measure
    assert "95 % CI" in text and "±1 and ±2 SD" in text and "Grey lines: patients" in text
    # the function itself names the figure too
    assert plot.caption(plot.ceph_wiggle, _z(3, 2)) == text


def test_treatment_length_caption_counts_groups_and_says_which_are_points_only():
    est = pd.DataFrame(
        {
            "malocclusion_class": ["III"] * 3 + ["I"] * 12,
            "estimate_length_months": np.arange(15) + 20.0,
        }
    )
    text = plot.caption("tle_by_class", est, "malocclusion_class")
    assert "n = 15 patients (I: 12; III: 3)" in text  # declared order: I before III
    assert "Groups of fewer than 10 patients (III) are drawn as points only." in text
    assert "95 % BCa bootstrap CI" in text


def test_growth_caption_per_class_in_the_natural_order():
    data = pd.DataFrame(
        {
            "patient_id": ["a", "a", "b", "b", "c", "c"],
            "measure": "SNB",
            "value": [78.0, 78.5, 80.0, 80.5, 76.0, 76.5],
            "unit": "deg",
            "skeletal_class": [
                "Class III",
                "Class III",
                "Class I",
                "Class I",
                "Class II",
                "Class II",
            ],
        }
    )
    text = plot.caption("growth_by_class", data, None, "SNB", group="skeletal_class")
    assert text.startswith("SNB (°) against years")
    assert "n = 3 patients (Class I: 1; Class II: 1; Class III: 1)" in text


def test_single_patient_captions_name_the_session_as_the_figure_does():
    lateral = pd.concat([landmarks("P001", "2024-03-01"), landmarks("P002", "2024-03-01")])
    text = plot.caption("ceph_tracing", lateral, ("P002", "2024-03-01"), mm_per_px=0.1)
    assert "(patient 2, session 1 (baseline))" in text
    assert "P002" not in text and "2024" not in text
    assert "SN–MP, SN to mandibular plane" in text and "mm (0.1 mm per pixel)" in text
    assert text.endswith("n = 1 patient.")
    raw = plot.caption("ceph_tracing", lateral, ("P002", "2024-03-01"), identity="raw")
    assert "P002, 2024-03-01" in raw and "pixels (no calibration)" in raw


def test_superimposition_caption_lists_sessions_and_arrows():
    t = pd.concat([landmarks("P001", "2020-03-01"), landmarks("P001", "2024-03-01")])
    text = plot.caption("ceph_superimposition", t, "P001", mm_per_px=0.1)
    assert "patient 1 at 2 sessions (session 1 (baseline) and session 2 (4.0 years))" in text
    assert "Arrows: movement of N, A, B, Pog, Me, Go, U1 tip and L1 tip" in text
    assert "Ghafari" in text


def test_arch_and_tooth_captions_say_their_units():
    from dentalkit import arch
    from dentalkit import teeth as dteeth

    pts = arch_points("P003", "2024-03-01", "up")
    fits = arch.fit(pts, ["catenary", "poly4"], mm_per_px=0.08)
    text = plot.caption("arch_forms", pts, fits)
    assert "in mm (0.08 mm per pixel)" in text and "catenary and 4th-order even polynomial" in text
    t = teeth("P002", "2024-03-01")
    area = dteeth.measure(t, 0.1, measures=["area"])
    text = plot.caption("tooth_map", t, "area", values=area)
    assert "panoramic radiograph" in text and "area (mm²)" in text and "FDI" in text


def test_prevalence_caption_names_the_interval_method():
    table = pd.DataFrame(
        {
            "source": ["clinical", "pano"],
            "class_name": ["decay", "caries"],
            "prevalence": [0.5, 0.25],
            "ci_low": [0.2, 0.05],
            "ci_high": [0.8, 0.6],
            "n_units": [8, 8],
            "n_units_with": [4, 2],
            "ci_method": ["Wilson score (Wilson 1927); patients independent"] * 2,
        }
    )
    text = plot.caption("findings_prevalence", table, by="source")
    assert "whiskers: CI (Wilson score (Wilson 1927))" in text
    assert "patients with the finding / patients assessed" in text and text.endswith(
        "n = 8 patients."
    )


def test_every_caption_spells_units_and_intervals_the_house_way():
    texts = [
        plot.caption("ceph_wiggle", _z(3, 1)),
        plot.caption("tle_bland_altman", np.arange(10.0) + 20, np.arange(10.0) + 21),
        plot.caption("tle_calibration", np.arange(10.0) + 20, np.arange(10.0) + 21),
    ]
    for text in texts:
        assert not re.search(r"\d%", text) and " deg" not in text


def test_unknown_figures_are_named():
    with pytest.raises(InputError, match="no caption for figure 'pie'"):
        plot.caption("pie", None)
    with pytest.raises(InputError, match="not a figure function"):
        plot.caption(len, None)
