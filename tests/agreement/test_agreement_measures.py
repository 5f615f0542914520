"""agreement.measure: Bland–Altman, ICC, Dahlberg and classification agreement."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from agreement_fixtures import PEFR_MINI, PEFR_WRIGHT
from scipy import stats as sps

from dentalkit import agreement
from dentalkit.errors import PROBLEM_COLUMNS, DentalkitWarning, InputError


def _long(values, measure="PEFR", unit="l/min", ids=None):
    ids = ids if ids is not None else [f"s{i:02d}" for i in range(len(values))]
    return pd.DataFrame(
        {
            "patient_id": ids,
            "timestamp": "t",
            "view": "lateral",
            "measure": measure,
            "value": np.asarray(values, dtype=float),
            "unit": unit,
        }
    )


def test_measures_reproduces_the_bland_altman_1986_example():
    # Bland & Altman, Lancet 1986;327:307-310 (PEFR, test = large Wright, reference = mini):
    # d̄ = −2.1, s = 38.8, limits −79.7 to 75.5 l/min (d̄ ± 2s). Rounding tolerances as in
    # test_agreement_stats.py (the paper rounds d̄ and s to 0.1 before forming the limits).
    res = agreement.measure(_long(PEFR_MINI), _long(PEFR_WRIGHT), agreement=2, loa_ci="1986")
    row = res.summary.iloc[0]
    assert row["n"] == 17 and row["unit"] == "l/min"
    assert row["bias"] == pytest.approx(-2.1, abs=0.05)
    assert row["sd_diff"] == pytest.approx(38.8, abs=0.05)
    assert row["loa_low"] == pytest.approx(-79.7, abs=0.2)
    assert row["loa_high"] == pytest.approx(75.5, abs=0.2)
    # the table equals the array function on the same numbers
    arr = agreement.bland_altman(PEFR_MINI, PEFR_WRIGHT, agreement=2, loa_ci="1986")
    for key in ("bias_ci_low", "loa_low_ci_low", "loa_high_ci_high", "p_bias"):
        assert row[key] == pytest.approx(arr[key], rel=1e-12)
    assert res.settings == {
        "agreement": 2,
        "confidence": 0.95,
        "loa_ci": "1986",
        "icc_form": "ICC(2,1)",
        "session": "first",
        "unit": "patient_id",
    }


def test_icc_and_dahlberg_columns_match_pingouin_and_hand_computation():
    import pingouin as pg

    res = agreement.measure(_long(PEFR_MINI), _long(PEFR_WRIGHT))
    row = res.summary.iloc[0]
    long = pd.DataFrame(
        {
            "s": np.tile(np.arange(17), 2),
            "rater": np.repeat(["mini", "wright"], 17),
            "v": np.r_[PEFR_MINI, PEFR_WRIGHT].astype(float),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = pg.intraclass_corr(long, "s", "rater", "v").set_index("Type")
    label = "ICC(A,1)" if "ICC(A,1)" in direct.index else "ICC2"
    assert row["icc"] == pytest.approx(direct.loc[label, "ICC"], rel=1e-12)
    assert row["icc_ci95_low"] == pytest.approx(direct.loc[label, "CI95"][0], abs=0.005)
    assert row["icc_form"] == "ICC(2,1)"
    d = np.asarray(PEFR_WRIGHT, float) - np.asarray(PEFR_MINI, float)
    assert row["dahlberg"] == pytest.approx(np.sqrt((d**2).sum() / (2 * 17)))
    assert row["mean_reference"] == pytest.approx(np.mean(PEFR_MINI))


def test_pairs_table_and_several_measures_are_vectorised_per_measure():
    ref = pd.concat([_long([1, 2, 3, 4], "A", "mm"), _long([10, 20, 30, 40], "B", "deg")])
    tst = pd.concat([_long([1.5, 2, 3.5, 4], "A", "mm"), _long([10, 21, 30, 41], "B", "deg")])
    res = agreement.measure(ref, tst)
    s = res.summary.set_index("measure")
    assert s.loc["A", "bias"] == pytest.approx(0.25) and s.loc["A", "unit"] == "mm"
    assert s.loc["B", "bias"] == pytest.approx(0.5) and s.loc["B", "unit"] == "deg"
    assert s.loc["B", "dahlberg"] == pytest.approx(np.sqrt(2 / 8))
    p = res.pairs
    assert list(p.columns[-5:]) == ["reference", "test", "mean", "difference", "unit"]
    assert p["difference"].to_numpy() == pytest.approx((p["test"] - p["reference"]).to_numpy())
    sub = agreement.measure(ref, tst, measures=["B"])
    assert list(sub.summary["measure"].astype(str)) == ["B"]


def test_tables_without_a_view_column_give_results_without_one():
    ref = _long([1, 2, 3, 4], "intercanine_width", "mm").drop(columns="view")
    tst = ref.assign(value=[1.5, 2, 3.5, 4])
    res = agreement.measure(ref, tst)
    assert "view" not in res.summary.columns and "view" not in res.pairs.columns
    assert res.summary["bias"].item() == pytest.approx(0.25)
    from dentalkit.plot import agreement as plot

    ax = plot.bland_altman(res, "intercanine_width")
    assert len(ax.collections[0].get_offsets()) == 4


def test_unit_mismatch_is_an_error():
    with pytest.raises(InputError, match="different units"):
        agreement.measure(_long([1, 2, 3], "S_N", "px"), _long([1, 2, 3], "S_N", "mm"))


def test_nan_unpaired_and_small_groups_are_problems():
    ref = pd.concat([_long([1.0, 2.0, np.nan, 4.0], "A"), _long([5.0], "C")])
    tst = pd.concat([_long([1.0, 2.5, 3.0], "A"), _long([5.5], "C")])
    with pytest.warns(DentalkitWarning):
        res = agreement.measure(ref, tst, errors="warn")
    text = " | ".join(res.problems["reason"])
    assert "value is NaN" in text
    assert "session only in the reference table" in text  # the test has no s03
    assert "ICC of A (lateral) not computed: 2 paired session(s)" in text  # needs 3
    assert "only 1 paired session" in text
    c = res.summary.set_index("measure").loc["C"]
    assert c["n"] == 1 and np.isnan(c["loa_low"]) and np.isnan(c["icc"])
    assert c["dahlberg"] == pytest.approx(0.5 / np.sqrt(2))
    assert res.summary.set_index("measure").loc["A", "n"] == 2


def _icc_a1(ref, tst):
    """McGraw & Wong (1996) ICC(A,1) from the two-way ANOVA mean squares, by hand."""
    x = np.column_stack([ref, tst]).astype(float)
    n, k = x.shape
    grand = x.mean()
    msr = k * ((x.mean(axis=1) - grand) ** 2).sum() / (n - 1)
    msc = n * ((x.mean(axis=0) - grand) ** 2).sum() / (k - 1)
    resid = x - x.mean(axis=1, keepdims=True) - x.mean(axis=0) + grand
    mse = (resid**2).sum() / ((n - 1) * (k - 1))
    return (msr - mse) / (msr + (k - 1) * mse + k / n * (msc - mse))


def test_too_few_pairs_for_an_icc_is_said_in_dentalkits_words():
    # two patients, two sessions each (4 rows) for SNA, 2 sessions of one patient for ANB
    ids = ["p1", "p1", "p2", "p2"]
    ref = pd.concat(
        [
            _long([80.0, 81.0, 84.0, 86.0], "SNA", "deg", ids),
            _long([2.0, 3.0], "ANB", "deg", ["p1", "p1"]),
        ]
    )
    ref["timestamp"] = ["t1", "t2", "t1", "t2", "t1", "t2"]
    tst = ref.assign(value=ref["value"] + [0.5, 0.0, 1.0, -0.5, 0.5, 0.0])
    # unit=None: each paired session is a unit (the default would keep one per patient)
    res = agreement.measure(ref, tst, errors="collect", unit=None)
    s = res.summary.set_index("measure")
    # three or more pairs: pingouin's ICC, checked against the hand formula
    assert s.loc["SNA", "icc"] == pytest.approx(
        _icc_a1([80, 81, 84, 86], [80.5, 81, 85, 85.5]), rel=1e-9
    )
    # two pairs: no ICC, a problem row in the one schema, the other statistics kept
    assert np.isnan(s.loc["ANB", "icc"]) and s.loc["ANB", "bias"] == pytest.approx(0.25)
    prob = res.problems
    assert len(prob) == 1 and prob["path"].item() == "icc" and prob["measure"].item() == "ANB"
    reason = prob["reason"].item()
    assert reason.startswith(
        "ICC of ANB (lateral) not computed: 2 paired session(s) of 1 patient(s), and the "
        "ICC needs at least 3 sessions measured by both methods"
    )
    assert "fewer than 5 ratings" in reason and "Koo & Li 2016" in reason
    assert "Data must have" not in reason  # pingouin's own text is not passed through
    with pytest.raises(InputError, match=r"ICC of ANB \(lateral\) not computed") as info:
        agreement.measure(ref, tst, unit=None)  # errors='raise', the default
    pd.testing.assert_frame_equal(info.value.problems, prob)


def test_icc_on_too_few_targets_is_an_input_error_not_pingouins_assertion():
    long = pd.DataFrame({"t": [0, 1, 0, 1], "r": list("aabb"), "v": [1.0, 2.0, 1.5, 2.5]})
    with pytest.raises(InputError, match=r"at least 3 targets.*4 rating\(s\) of 2 target"):
        agreement.icc(long, "t", "r", "v")
    with pytest.raises(InputError, match="lacks column 'rating'"):
        agreement.icc(long, "t", "r", "rating")
    three = pd.DataFrame({"t": [0, 1, 2] * 2, "r": list("aaabbb"), "v": [1.0, 2, 4, 1.5, 2, 5]})
    assert agreement.icc(three, "t", "r", "v")["icc"] == pytest.approx(
        _icc_a1([1, 2, 4], [1.5, 2, 5]), rel=1e-9
    )


# ------------------------------------------------------------------ classification


def _ceph(values: dict[str, list[float]]) -> pd.DataFrame:
    frames = []
    for m, vals in values.items():
        unit = "mm" if m == "Wits" else "deg"
        frames.append(_long(vals, m, unit))
    return pd.concat(frames, ignore_index=True)


def test_classification_agreement_and_kappa_hand_computed():
    # ANB bands (Steiner; shipped thresholds): < 0 III, [0, 4) I, ≥ 4 II
    ref_anb = [-2.0, -1.0, 1.0, 2.0, 3.0, 5.0, 6.0, 7.0]  # III III I I I II II II
    tst_anb = [-1.0, 0.5, 1.5, 2.5, 4.5, 5.5, 3.5, 8.0]  # III I  I I II II I  II
    res = agreement.measure(_ceph({"ANB": ref_anb}), _ceph({"ANB": tst_anb}))
    row = res.classification.set_index("scheme").loc["skeletal_class"]
    assert row["n"] == 8 and row["n_agree"] == 5
    assert row["agreement_pct"] == pytest.approx(62.5)
    # table rows ref (III, I, II), cols test: [[1,1,0],[0,2,1],[0,1,2]]
    p_o = 5 / 8
    p_e = (2 / 8) * (1 / 8) + (3 / 8) * (4 / 8) + (3 / 8) * (3 / 8)
    assert row["kappa"] == pytest.approx((p_o - p_e) / (1 - p_e))
    assert row["categories"] == "Class III < Class I < Class II"
    assert row["kappa_ci_low"] < row["kappa"] < row["kappa_ci_high"]
    # linear weighted kappa (ordered classes): weights 1, 1/2, 0 by class distance
    t = np.array([[1, 1, 0], [0, 2, 1], [0, 1, 2]]) / 8
    w = 1 - np.abs(np.subtract.outer(range(3), range(3))) / 2
    pw_o = (w * t).sum()
    pw_e = (w * np.outer(t.sum(1), t.sum(0))).sum()
    assert row["weights"] == "linear"
    assert row["weighted_kappa"] == pytest.approx((pw_o - pw_e) / (1 - pw_e))
    assert row["weighted_kappa"] > row["kappa"]  # the misses are all by one class
    assert row["n_units"] == 8
    quad = agreement.measure(
        _ceph({"ANB": ref_anb}), _ceph({"ANB": tst_anb}), kappa_weights="quadratic"
    ).classification.iloc[0]
    assert quad["weights"] == "quadratic" and quad["weighted_kappa"] > row["weighted_kappa"]
    cp = res.class_pairs
    assert list(cp["agree"]) == [True, False, True, True, False, True, False, True]
    # only schemes whose measure both tables have
    assert list(res.classification["scheme"]) == ["skeletal_class"]


def test_classification_needs_calibrated_lengths():
    ref = _ceph({"ANB": [1.0, 2.0, 5.0]}).assign(unit="deg")
    wits = _long([1.0, -3.0, 3.0], "Wits", "px")
    with pytest.warns(DentalkitWarning):
        res = agreement.measure(pd.concat([ref, wits]), pd.concat([ref, wits]), errors="warn")
    assert list(res.classification["scheme"]) == ["skeletal_class"]
    assert "Wits is in px" in " ".join(res.problems["reason"])
    with pytest.raises(InputError, match="unknown scheme"):
        agreement.measure(ref, ref, schemes=["skeletal_klass"])
    with pytest.raises(InputError, match="not paired"):
        agreement.measure(ref, ref, schemes=["vertical_fma"])


def test_measures_argument_checks():
    with pytest.raises(InputError, match="lacks column 'value'"):
        agreement.measure(_long([1, 2]).drop(columns="value"), _long([1, 2]))
    with pytest.raises(InputError, match="icc_form"):
        agreement.measure(_long([1, 2]), _long([1, 2]), icc_form="ICC(9,9)")
    with pytest.raises(InputError, match="no measure pairs"):
        agreement.measure(_long([1, 2], ids=["a", "b"]), _long([1, 2], ids=["c", "d"]))


# --- the patient is the unit of analysis (issue 19's rule applied to agreement.measure) ---


def _two_sessions():
    """Five patients; p1 and p2 have two sessions (the later one listed first)."""
    ids = ["p1", "p1", "p2", "p2", "p3", "p4", "p5"]
    stamps = ["2021-03-01", "2020-03-01", "2022-01-05", "2021-06-30"] + ["2020-01-01"] * 3
    ref = _long([80.0, 81.0, 84.0, 86.0, 79.0, 83.0, 88.0], "SNA", "deg", ids)
    ref["timestamp"] = stamps
    tst = ref.assign(value=ref["value"] + [3.0, 0.5, -2.0, 1.0, 0.0, 1.5, -0.5])
    return ref, tst


def test_default_uses_each_patients_first_paired_session():
    import pingouin as pg

    ref, tst = _two_sessions()
    res = agreement.measure(ref, tst)
    row = res.summary.iloc[0]
    # first sessions by date: p1 2020-03-01 (d 0.5), p2 2021-06-30 (d 1.0), p3 0, p4 1.5, p5 -0.5
    d = np.array([0.5, 1.0, 0.0, 1.5, -0.5])
    assert (row["n"], row["n_units"], row["n_rows"]) == (5, 5, 7)
    assert row["unit_of_analysis"] == "patient_id" and row["session"] == "first"
    assert row["bias"] == pytest.approx(d.mean(), rel=1e-12)
    assert row["sd_diff"] == pytest.approx(d.std(ddof=1), rel=1e-12)
    assert row["dahlberg"] == pytest.approx(np.sqrt((d**2).sum() / 10), rel=1e-12)
    assert row["loa_high"] == pytest.approx(d.mean() + 1.96 * d.std(ddof=1), rel=1e-12)
    r1 = np.array([81.0, 86.0, 79.0, 83.0, 88.0])
    long = pd.DataFrame(
        {"s": np.tile(np.arange(5), 2), "m": np.repeat(["r", "t"], 5), "v": np.r_[r1, r1 + d]}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = pg.intraclass_corr(long, "s", "m", "v").set_index("Type")
    label = "ICC(A,1)" if "ICC(A,1)" in direct.index else "ICC2"
    assert row["icc"] == pytest.approx(direct.loc[label, "ICC"], rel=1e-9)
    assert row["icc"] == pytest.approx(_icc_a1(r1, r1 + d), rel=1e-9)
    assert "first paired session (5 of 7 paired sessions)" in row["why"]
    assert "Bland–Altman" in row["method"] and "ICC(2,1)" in row["method"]
    # the pairs table holds what the summary used (the figure draws the same points)
    assert sorted(res.pairs["timestamp"].astype(str)[:2]) == ["2020-03-01", "2021-06-30"]
    assert len(res.pairs) == 5 and res.problems.empty

    last = agreement.measure(ref, tst, session="last").summary.iloc[0]
    d_last = np.array([3.0, -2.0, 0.0, 1.5, -0.5])
    assert last["bias"] == pytest.approx(d_last.mean()) and last["n"] == 5


def test_one_session_per_patient_gives_the_same_result_under_every_rule():
    # Bland & Altman 1986's 17 subjects, one session each: the rule changes nothing
    base = agreement.measure(_long(PEFR_MINI), _long(PEFR_WRIGHT), unit=None).summary
    stats = ["n", "bias", "sd_diff", "loa_low_ci_low", "loa_high_ci_high", "p_bias", "icc"]
    stats += ["icc_ci95_low", "dahlberg"]
    for rule in ("first", "last", "all"):
        s = agreement.measure(_long(PEFR_MINI), _long(PEFR_WRIGHT), session=rule).summary
        pd.testing.assert_frame_equal(s[stats], base[stats])
        assert s["n_units"].item() == 17 and s["n_rows"].item() == 17
        assert "one paired session per patient_id" in s["why"].item()
    assert base["unit_of_analysis"].item() == "session"
    assert "counted as an independent unit" in base["why"].item()


def test_all_sessions_use_the_repeated_measures_limits():
    """session='all' with patients seen twice: Bland & Altman's (2007) limits, by hand."""
    ref, tst = _two_sessions()
    res = agreement.measure(ref, tst, session="all")
    row = res.summary.iloc[0]
    d = pd.Series([3.0, 0.5, -2.0, 1.0, 0.0, 1.5, -0.5])
    unit = pd.Series(["p1", "p1", "p2", "p2", "p3", "p4", "p5"])
    # one-way ANOVA of the differences on the patient (unequal numbers of pairs)
    m = unit.value_counts()
    means = d.groupby(unit).mean()
    ms_w = ((d - unit.map(means)) ** 2).sum() / (7 - 5)
    ms_b = (m * (means - d.mean()) ** 2).sum() / (5 - 1)
    var_b = max(0.0, (ms_b - ms_w) / ((7**2 - (m**2).sum()) / ((5 - 1) * 7)))
    sd = np.sqrt(var_b + ms_w)
    assert (row["n"], row["n_units"], row["n_rows"]) == (7, 5, 7)
    assert row["bias"] == pytest.approx(d.mean())
    assert row["sd_diff"] == pytest.approx(sd) and row["sd_within"] == pytest.approx(np.sqrt(ms_w))
    assert row["loa_low"] == pytest.approx(d.mean() - 1.96 * sd)
    se = np.sqrt((var_b * (m**2).sum() + ms_w * 7) / 49)
    assert row["bias_ci_high"] == pytest.approx(d.mean() + sps.t.ppf(0.975, 4) * se)
    for col in ("loa_low_ci_low", "loa_high_ci_high", "icc"):
        assert np.isnan(row[col]), col
    assert "Bland & Altman (2007)" in row["why"] and "4 df" in row["why"]
    assert res.problems.empty  # a documented choice, not a problem of the input


def test_sessions_are_ordered_by_time_not_by_text():
    # 10:00+05:00 is 05:00 UTC, earlier than 06:00+00:00, though its text sorts later
    ref = _long([80.0, 90.0, 82.0, 84.0], "SNA", "deg", ["p1", "p1", "p2", "p3"])
    ref["timestamp"] = ["2020-01-01T10:00:00+05:00", "2020-01-01T06:00:00+00:00"] + ["t"] * 2
    tst = ref.assign(value=ref["value"] + [1.0, 5.0, 0.0, 0.0])
    res = agreement.measure(ref, tst, errors="collect")
    assert res.summary["bias"].item() == pytest.approx(1.0 / 3)


def test_unit_and_session_are_checked():
    ref, tst = _two_sessions()
    with pytest.raises(InputError, match="session='every' is not allowed"):
        agreement.measure(ref, tst, session="every")
    with pytest.raises(InputError, match="unit='clinic' must be one of the session columns"):
        agreement.measure(ref.assign(clinic="a"), tst.assign(clinic="a"), unit="clinic")
    # without a patient column the default counts sessions and says so
    res = agreement.measure(
        ref.drop(columns="patient_id"), tst.drop(columns="patient_id"), errors="collect"
    )
    assert res.summary["unit_of_analysis"].item() == "session"


def test_classification_uses_one_session_per_patient():
    ref, tst = _two_sessions()
    ref, tst = (t.assign(measure="ANB", value=t["value"] - 80.0) for t in (ref, tst))
    res = agreement.measure(ref, tst, errors="collect")
    cls = res.classification.set_index("scheme").loc["skeletal_class"]
    assert cls["n"] == 5 and cls["n_units"] == 5
    assert np.isfinite(cls["kappa_se"]) and np.isfinite(cls["agreement_ci_low_pct"])
    pooled = agreement.measure(ref, tst, errors="collect", session="all").classification
    row = pooled.set_index("scheme").loc["skeletal_class"]
    assert (row["n"], row["n_units"]) == (7, 5) and np.isfinite(row["kappa"])
    # session="all": intervals clustered on the patient; the large-sample SEs left out
    for col in ("kappa_se", "weighted_kappa_se"):
        assert np.isnan(row[col]), col
    for col in ("kappa_ci_low", "weighted_kappa_ci_high", "agreement_ci_low_pct"):
        assert np.isfinite(row[col]), col
    assert row["kappa_ci_method"].endswith("clustered on patient_id")


def test_constant_ratings_give_an_icc_problem_row():
    ref = _long([5.0] * 4, "SNA", "deg")
    res = agreement.measure(ref, ref.copy(), errors="collect")
    assert np.isnan(res.summary["icc"].item())
    prob = res.problems
    assert list(prob.columns[: len(PROBLEM_COLUMNS)]) == list(PROBLEM_COLUMNS)
    assert len(prob) == 1 and prob["path"].item() == "icc" and prob["measure"].item() == "SNA"
    assert (
        prob["reason"]
        .item()
        .startswith(
            "ICC of SNA (lateral) undefined: no variance between sessions (all 8 ratings are "
            "equal (5); 4 paired session(s) of 4 unit(s))"
        )
    )
    assert res.summary["bias"].item() == 0 and res.summary["dahlberg"].item() == 0
    with pytest.raises(InputError, match="undefined: no variance between sessions"):
        agreement.measure(ref, ref.copy())


def test_unit_none_pools_every_session_as_before_with_intervals():
    # the numbers before one session per patient, for a per-image question: sessions as units
    ref, tst = _two_sessions()
    row = agreement.measure(ref, tst, unit=None).summary.iloc[0]
    d = np.array([3.0, 0.5, -2.0, 1.0, 0.0, 1.5, -0.5])
    lo, hi = sps.t.interval(0.95, 6, loc=d.mean(), scale=d.std(ddof=1) / np.sqrt(7))
    assert (row["n"], row["n_units"], row["unit_of_analysis"]) == (7, 7, "session")
    assert (row["bias_ci_low"], row["bias_ci_high"]) == pytest.approx((lo, hi))
