"""stats.growth(group_defined_by=...): groups from a baseline measure are analysed
baseline-adjusted; the covariates are checked against ones built here by hand."""

import warnings

import numpy as np
import pandas as pd
import pytest

from dentalkit.errors import InputError
from dentalkit.stats import growth


def _cohort(n=24, seed=4, times=(0.0, 1.0, 2.0)):
    rng = np.random.default_rng(seed)
    sna = rng.normal(82, 3.5, n)
    snb = sna - 2.5 + rng.normal(0, 2.2, n)
    rows = []
    for i in range(n):
        for t in times:
            a = sna[i] + 0.1 * t + rng.normal(0, 1)
            b = snb[i] + 0.3 * t + rng.normal(0, 1)
            rows += [
                (f"p{i:02d}", t, "SNA", a),
                (f"p{i:02d}", t, "SNB", b),
                (f"p{i:02d}", t, "ANB", a - b),
            ]
    table = pd.DataFrame(rows, columns=["patient_id", "years", "measure", "value"])
    anb0 = table[(table["years"] == 0) & (table["measure"] == "ANB")].set_index("patient_id")[
        "value"
    ]
    cls = np.where(anb0 < 2.0, "low", "high")  # two groups cut on the first-session ANB
    patients = pd.DataFrame({"patient_id": anb0.index, "grp": pd.Categorical(cls, ["low", "high"])})
    return table, patients, anb0


def _fit(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return growth(*args, **kw)


def test_baseline_adjustment_is_the_ancova_with_hand_built_covariates():
    table, patients, anb0 = _cohort()
    adjusted = _fit(
        table, group="grp", patients=patients, group_defined_by="ANB", random_slope=False
    )
    d = (anb0 - anb0.mean()).rename("d")
    hand = table.merge(d, left_on="patient_id", right_index=True)
    hand["d_t"] = hand["d"] * hand["years"]
    hand["d_first"] = hand["d"] * (hand["years"] == 0)
    ref = _fit(
        hand, group="grp", patients=patients, covariates=["d", "d_t", "d_first"], random_slope=False
    )
    ours = adjusted.fixed.set_index(["measure", "term"])["estimate"]
    theirs = ref.fixed.set_index(["measure", "term"])["estimate"]
    theirs = theirs.rename(
        index={
            "d": "baseline ANB",
            "d_t": "baseline ANB:years",
            "d_first": "baseline ANB:first session",
        }
    )
    pd.testing.assert_series_equal(
        ours.sort_index(), theirs.sort_index(), rtol=1e-6, check_names=False
    )
    note = adjusted.models.set_index("measure").loc["SNA", "note"]
    assert "grp is defined by the first-session ANB: baseline-adjusted" in note


def test_two_sessions_leave_the_first_session_term_out():
    table, patients, _ = _cohort(times=(0.0, 1.0))
    fit = _fit(table, group="grp", patients=patients, group_defined_by="ANB")
    terms = set(fit.fixed["term"])
    assert {"baseline ANB", "baseline ANB:years"} <= terms
    assert "baseline ANB:first session" not in terms


def test_unadjusted_on_request_warns_and_bad_input():
    table, patients, _ = _cohort()
    fit = _fit(table, group="grp", patients=patients, group_defined_by="ANB", adjust_baseline=False)
    assert not fit.fixed["term"].str.startswith("baseline").any()
    assert "NOT baseline-adjusted" in fit.models["note"].iloc[0]
    with pytest.raises(InputError, match="not a value of 'measure'"):
        growth(table, group="grp", patients=patients, group_defined_by="Wits")
    with pytest.raises(InputError, match="needs group="):
        growth(table, group_defined_by="ANB")
