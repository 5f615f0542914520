"""TMJ prevalence per patient with unknown wordings apart (issue 20, item 1: analyses
report NA as unknown, never as a finding). Expected counts are hand-made; the interval is
checked against statsmodels' Wilson interval called directly."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from statsmodels.stats.proportion import proportion_confint

from dentalkit.errors import InputError
from dentalkit.findings import tmj_prevalence


def test_patients_with_without_unknown_and_bounds():
    t = pd.DataFrame(
        {
            # P1: one True of two sessions → with; P2: False, NA → unknown (no True);
            # P3, P4: False → without; P5: NA → unknown; P6: NA, True → with
            "patient_id": ["P1", "P1", "P2", "P2", "P3", "P4", "P5", "P6", "P6"],
            "has_finding": pd.array(
                [False, True, False, None, False, False, None, None, True], dtype="boolean"
            ),
        }
    )
    r = tmj_prevalence(t).iloc[0]
    assert (r.n_units, r.n_responses, r.n_with, r.n_without, r.n_unknown) == (6, 9, 2, 2, 2)
    assert r.prevalence == pytest.approx(2 / 4)
    lo, hi = proportion_confint(2, 4, alpha=0.05, method="wilson")
    assert (r.ci_low, r.ci_high) == pytest.approx((lo, hi))
    assert (r.bound_low, r.bound_high) == pytest.approx((2 / 6, 4 / 6))
    assert "unknown" in r.method and r.unit_of_analysis == "patient"
    # counting NA as a finding would give 4/6; as its absence 2/6: neither is reported
    assert r.prevalence not in (4 / 6, 2 / 6)


def test_all_unknown_gives_no_prevalence_but_full_bounds():
    t = pd.DataFrame(
        {"patient_id": ["A", "B"], "has_finding": pd.array([None, None], dtype="boolean")}
    )
    r = tmj_prevalence(t).iloc[0]
    assert r.n_unknown == 2 and np.isnan(r.prevalence) and np.isnan(r.ci_low)
    assert (r.bound_low, r.bound_high) == (0.0, 1.0)


def test_wrong_table_is_an_input_error():
    with pytest.raises(InputError, match="has_finding"):
        tmj_prevalence(pd.DataFrame({"patient_id": ["A"]}))
