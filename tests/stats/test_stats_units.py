"""The unit of analysis in stats.compare: repeated rows of a patient are refused or aggregated."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dentalkit.errors import InputError
from dentalkit.stats import compare, one_row_per_unit


def _sessions(n_patients=12, seed=3):
    """Two sessions per patient, group fixed per patient, within-patient SD small."""
    rng = np.random.default_rng(seed)
    pid = [f"p{i:02d}" for i in range(n_patients)]
    group = ["a" if i % 2 else "b" for i in range(n_patients)]
    level = rng.normal(0, 3, n_patients)
    rows = []
    for p, g, m in zip(pid, group, level, strict=True):
        for ts, shift in (("2024-01-01", 0.0), ("2025-01-01", 0.5)):
            rows.append(
                {
                    "patient_id": p,
                    "timestamp": ts,
                    "grp": g,
                    "value": m + shift + rng.normal(0, 0.3),
                }
            )
    return pd.DataFrame(rows)


def test_repeated_rows_of_a_patient_are_refused_with_the_ways_out():
    t = _sessions()
    with pytest.raises(InputError) as err:
        compare(t, "value", "grp")
    msg = str(err.value)
    assert "12 of 12 units (patient_id)" in msg
    assert "patient_id='p00'" in msg or "patient_id='p01'" in msg
    assert "one_row_per_unit" in msg and "aggregate='mean'" in msg
    assert "dentalkit.stats.growth" in msg


def test_aggregate_mean_tests_patient_means_and_says_so():
    t = _sessions()
    r = compare(t, "value", "grp", aggregate="mean").iloc[0]
    means = t.groupby(["patient_id", "grp"])["value"].mean().reset_index()
    a = means.loc[means["grp"] == "a", "value"].to_numpy()
    b = means.loc[means["grp"] == "b", "value"].to_numpy()
    ref = stats.ttest_ind(a, b, equal_var=False)
    assert r["statistic"] == pytest.approx(ref.statistic)
    assert r["df"] == pytest.approx(ref.df)
    assert (r["unit_of_analysis"], r["n_units"], r["n_rows"]) == ("patient_id", 12, 24)
    assert r["n_units_per_group"] == [6, 6] and r["n_rows_per_group"] == [12, 12]
    assert r["aggregation"] == "mean per patient_id (24 rows → 12 units)"
    assert r["method"].startswith("Welch's t-test")
    assert "pre-specified" in r["why"]


def test_one_session_per_patient_then_compare():
    t = _sessions()
    first = one_row_per_unit(t, "first")
    assert len(first) == 12 and set(first["timestamp"]) == {"2024-01-01"}
    last = one_row_per_unit(t.sample(frac=1, random_state=0), "last")
    assert set(last["timestamp"]) == {"2025-01-01"}
    r = compare(first, "value", "grp").iloc[0]
    assert (r["n_units"], r["n_rows"], r["aggregation"]) == (12, 12, None)
    med = one_row_per_unit(t, "median").set_index("patient_id")
    assert med.loc["p00", "value"] == pytest.approx(
        t.loc[t["patient_id"] == "p00", "value"].median()
    )
    assert (med["n_rows_aggregated"] == 2).all()
    with pytest.raises(InputError, match="rule="):
        one_row_per_unit(t, "any")


def test_a_patient_in_two_groups_is_refused_not_filed_under_the_first():
    t = _sessions()
    t.loc[(t["patient_id"] == "p03") & (t["timestamp"] == "2025-01-01"), "grp"] = "b"
    for kwargs in ({}, {"aggregate": "mean"}):
        with pytest.raises(InputError, match=r"1 patient_id\(s\) appear in more than one group"):
            compare(t, "value", "grp", **kwargs)


def test_unit_none_and_absent_default_are_stated():
    t = _sessions()
    r = compare(t, "value", "grp", unit=None).iloc[0]
    assert r["unit_of_analysis"] == "row" and r["n_units"] == 24
    assert "unit=None" in r["note"]
    r2 = compare(t.drop(columns="patient_id"), "value", "grp").iloc[0]
    assert r2["unit_of_analysis"] == "row" and "no patient_id column" in r2["note"]


def test_unknown_unit_column_and_bad_aggregate():
    t = _sessions()
    with pytest.raises(InputError, match="unit column 'subject' is not in the table"):
        compare(t, "value", "grp", unit="subject")
    with pytest.raises(InputError, match="aggregate='sum'"):
        compare(t, "value", "grp", aggregate="sum")
    with pytest.raises(InputError, match="applies to numeric values"):
        compare(t.assign(flag=t["value"] > 0), "flag", "grp", aggregate="mean")


def test_a_group_with_one_patient_gives_a_note_not_a_traceback():
    t = one_row_per_unit(_sessions(), "first")
    t.loc[t["patient_id"] == "p00", "grp"] = "c"
    t = t[(t["grp"] != "b") | (t["patient_id"] == "p00")]  # group c has one patient
    r = compare(t, "value", "grp").iloc[0]
    assert np.isnan(r["p_value"])
    assert "fewer than 2 units" in r["note"]


def test_paired_sessions_take_the_patient_as_the_unit():
    t = _sessions()
    r = compare(t, "value", "timestamp", paired="patient_id").iloc[0]
    assert (r["test"], r["n_units"], r["n_rows"]) == ("paired_t", 12, 24)
    assert r["n_units_per_group"] == [12, 12]
    wide = t.pivot(index="patient_id", columns="timestamp", values="value")
    assert r["p_value"] == pytest.approx(
        stats.ttest_rel(wide["2024-01-01"], wide["2025-01-01"]).pvalue
    )
    # two rows of one patient at one session: refused, or averaged when asked
    dup = pd.concat([t, t.iloc[[0]].assign(value=t["value"].iloc[0] + 1.0)], ignore_index=True)
    with pytest.raises(InputError, match="more than one row"):
        compare(dup, "value", "timestamp", paired="patient_id")
    r2 = compare(dup, "value", "timestamp", paired="patient_id", aggregate="mean").iloc[0]
    assert r2["n_rows"] == 25 and r2["n_units"] == 12


def test_ordinal_values_get_the_rank_test_on_their_order():
    cats = pd.CategoricalDtype(["Class III", "Class I", "Class II"], ordered=True)
    x = ["Class I", "Class II", "Class II", "Class I", "Class II", "Class II"]
    y = ["Class III", "Class I", "Class I", "Class III", "Class I", "Class II"]
    t = pd.DataFrame({"cls": pd.Series(x + y, dtype=cats), "g": ["x"] * 6 + ["y"] * 6})
    r = compare(t, "cls", "g", n_resamples=0).iloc[0]
    ref = stats.mannwhitneyu([1, 2, 2, 1, 2, 2], [0, 1, 1, 0, 1, 2], alternative="two-sided")
    assert r["test"] == "mann_whitney" and "ordinal" in r["why"]
    assert r["p_value"] == pytest.approx(ref.pvalue)
    with pytest.raises(InputError, match="ordinal"):
        compare(t, "cls", "g", test="welch_t")


def test_omega_squared_after_welch_anova_is_welchs():
    """The effect size after Welch's ANOVA comes from Welch's F (statsmodels' anova_oneway),
    not from the classic F's sums of squares: ω² = λ̂/(λ̂ + N), λ̂ = df1·(F_Welch − 1)."""
    from statsmodels.stats.oneway import anova_oneway

    rng = np.random.default_rng(7)
    groups = [rng.normal(m, s, n) for m, s, n in [(0, 1, 8), (1, 3, 12), (2, 0.5, 10)]]
    t = pd.DataFrame({"v": np.concatenate(groups), "g": np.repeat(["a", "b", "c"], [8, 12, 10])})
    t["patient_id"] = [f"p{i}" for i in range(30)]
    r = compare(t, "v", "g").iloc[0]
    welch = anova_oneway(groups, use_var="unequal")
    lam = 2 * (welch.statistic - 1)
    assert r["test"] == "welch_anova"
    assert r["effect_size"] == pytest.approx(lam / (lam + 30))
    assert r["omega_squared"] == r["effect_size"]
    assert (r["effect_ci_low"] > 0) == (welch.pvalue < 0.05)


def test_describe_counts_patients_and_clusters_a_proportion_over_their_rows():
    from dentalkit.stats import describe
    from tests.stats.clustered_ci import clustered_wilson

    rng = np.random.default_rng(4)
    pid = np.repeat([f"p{i}" for i in range(15)], 2)  # two teeth per patient
    y = (rng.random(30) < np.repeat(rng.uniform(0, 1, 15), 2)).astype(int)
    t = pd.DataFrame({"patient_id": pid, "g": "all", "decay": y, "width": rng.normal(7, 1, 30)})
    d = describe(t, "decay", "g").iloc[0]
    assert (d["n"], d["n_units"]) == (30, 15)
    _, low, high = clustered_wilson(y, pd.factorize(pid)[0])
    assert (d["ci_low"], d["ci_high"]) == pytest.approx((low, high))
    assert "clustered on patient_id" in d["ci_method"]
    w = describe(t, "width", "g").iloc[0]
    assert (w["n"], w["n_units"]) == (30, 15)
    one = describe(t.drop_duplicates("patient_id"), "decay", "g").iloc[0]
    assert one["ci_method"].startswith("Wilson") and one["n_units"] == 15


def test_rows_as_units_warn_and_say_row():
    """Issue 29: neither unit=None nor a table without the unit column is silent."""
    from dentalkit.errors import DentalkitWarning
    from dentalkit.stats import describe

    t = _sessions()
    with pytest.warns(DentalkitWarning, match=r"unit=None.*unit_of_analysis='row'"):
        r = compare(t, "value", "grp", unit=None).iloc[0]
    assert r["unit_of_analysis"] == "row" and r["n_units"] == 24
    with pytest.warns(DentalkitWarning, match="no patient_id column"):
        r2 = compare(t.drop(columns="patient_id"), "value", "grp").iloc[0]
    assert r2["unit_of_analysis"] == "row"
    with pytest.warns(DentalkitWarning, match="no patient_id column"):
        d = describe(t.drop(columns="patient_id"), "value", "grp")
    assert set(d["unit_of_analysis"]) == {"row"} and d["n_units"].tolist() == [12, 12]
    d2 = describe(t, "value", "grp")
    assert set(d2["unit_of_analysis"]) == {"patient_id"} and d2["n_units"].tolist() == [6, 6]


def test_a_paired_comparison_that_pairs_nothing_raises_saying_why():
    """Each patient's own timestamps as levels: no patient is at every level."""
    t = _sessions()
    t["when"] = t["patient_id"] + "-" + t["timestamp"]  # unique per patient
    two = t[t["patient_id"].isin(["p00", "p01"])]
    with pytest.raises(InputError, match=r"no patient_id has a value at every level of 'when'"):
        compare(two, "value", "when", paired="patient_id")
    # with per=: a split that pairs nothing gets a note when another split pairs
    both = pd.concat(
        [t.assign(measure="A"), two.assign(measure="B", timestamp=two["when"])],
        ignore_index=True,
    )
    res = compare(both, "value", "timestamp", paired="patient_id", per="measure")
    res = res.set_index("measure")
    assert res.loc["A", "test"] == "paired_t" and res.loc["A", "n_units"] == 12
    assert np.isnan(res.loc["B", "p_value"]) and "nothing can be paired" in res.loc["B", "note"]
    with pytest.raises(InputError, match="nothing can be paired"):
        compare(both[both["measure"] == "B"], "value", "timestamp", paired="patient_id")
