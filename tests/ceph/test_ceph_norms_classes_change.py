"""Norms and z-scores, classification thresholds, longitudinal change."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest

from dentalkit.ceph import change, classify, load_norms, load_thresholds, zscores
from dentalkit.errors import DentalkitWarning, InputError


def long(rows):
    return pd.DataFrame(rows, columns=["patient_id", "timestamp", "measure", "value", "unit"])


def test_apdi_z_uses_kim_vietas_mean_and_sd():
    m = long([("p", "t", "APDI", 81.4 + 2 * 3.79, "deg")]).assign(age=11.0)
    z = zscores(m)
    assert z["norm_mean"].item() == 81.4
    assert z["norm_sd"].item() == 3.79
    assert z["z"].item() == pytest.approx(2.0)
    assert z["norm_group"].item() == "Kim"


def test_unverified_norms_are_excluded_by_default_and_warned_when_used():
    m = long([("p", "t", "ODI", 80.57, "deg"), ("p", "t", "SNA", 84.0, "deg")])
    z = zscores(m)
    assert math.isnan(z.loc[0, "z"])  # ODI norm is not verified
    assert z.loc[1, "norm_mean"] == 82  # Steiner mean, verified …
    assert math.isnan(z.loc[1, "z"])  # … but Steiner gives no SD: no z-score
    with pytest.warns(DentalkitWarning, match="not confirmed"):
        z2 = zscores(m, include_unverified=True)
    assert z2.loc[0, "z"] == pytest.approx((80.57 - 74.5) / 6.07)


def test_norms_match_sex_and_age_by_default_never_the_first_row():
    # McNamara Co-Gn: F 120.2 ± 5.3, M 134.3 ± 6.8 (adults). A male at the male mean scores
    # z = 0, not (134.3 − 120.2)/5.3 = +2.66 against the female row listed first.
    m = long([("a", "t", "Co_Gn", 134.3, "mm"), ("b", "t", "Co_Gn", 120.2, "mm")])
    patients = pd.DataFrame({"patient_id": ["a", "b"], "sex": ["male", "F"], "age_years": 30})
    with pytest.warns(DentalkitWarning):
        z = zscores(m, patients=patients, include_unverified=True)
    assert z["z"].tolist() == pytest.approx([0.0, 0.0])
    assert z["norm_mean"].tolist() == [134.3, 120.2]
    with pytest.warns(DentalkitWarning):
        unknown = zscores(m, include_unverified=True)  # no sex, no age: no z, a note
    assert unknown["z"].isna().all()
    assert "McNamara norm of Co_Gn is by sex and the row has no sex" in unknown["norm_note"][0]
    # Ricketts' facial axis norm is for age 9: not applied at 30, applied at 9
    f = long([("a", "t", "facial_axis", 93.5, "deg")])
    with pytest.warns(DentalkitWarning):
        adult = zscores(f.assign(age=30.0), include_unverified=True)
    with pytest.warns(DentalkitWarning):
        child = zscores(f.assign(age=9.0), include_unverified=True)
    assert math.isnan(adult["z"].item()) and "ages 9, not 30" in adult["norm_note"].item()
    assert child["z"].item() == pytest.approx(1.0)  # (93.5 − 90) / 3.5


def test_shipped_norm_rows_are_sourced_and_verified_ones_say_where():
    n = load_norms()
    assert (n["source"].str.len() > 0).all()
    assert (n.loc[n["verified"], "checked_in"].str.len() > 0).all()
    assert n["verified"].any()
    assert (~n["verified"]).any()


def test_user_norms_by_sex_and_age_most_specific_row_wins():
    norms = pd.DataFrame(
        {
            "measure": ["Wits", "Wits", "Wits", "SNB"],
            "group": ["g", "g", "g", "g"],
            "sex": ["", "F", "M", ""],
            "age_min": [np.nan, 10, 10, 8],
            "age_max": [np.nan, 15, 15, 12],
            "mean": [0.0, 0.5, -1.0, 78.0],
            "sd": [2.0, 1.0, 1.5, 3.0],
            "unit": ["mm", "mm", "mm", "deg"],
        }
    )
    m = long(
        [
            ("a", "t", "Wits", 1.5, "mm"),
            ("b", "t", "Wits", 1.5, "mm"),
            ("c", "t", "Wits", 1.5, "mm"),
            ("d", "t", "SNB", 81.0, "deg"),
            ("e", "t", "Wits", 1.5, "px"),
        ]
    )
    m["sex"] = ["F", "M", "F", "F", "F"]
    m["age"] = [12.0, 12.0, 30.0, 13.0, 12.0]
    z = zscores(m, norms, by=["sex", "age"])
    assert z["z"].iloc[0] == pytest.approx((1.5 - 0.5) / 1.0)  # F, 10-15
    assert z["z"].iloc[1] == pytest.approx((1.5 + 1.0) / 1.5)  # M, 10-15
    assert z["z"].iloc[2] == pytest.approx(1.5 / 2.0)  # age 30: falls back to any-sex/any-age
    assert math.isnan(z["z"].iloc[3])  # SNB norm is for ages 8-12, subject is 13
    assert math.isnan(z["z"].iloc[4])  # a px value is never scored against a mm norm
    with pytest.raises(InputError, match="not a column of the measures"):
        zscores(m, norms, by="ethnicity")


def test_group_selection():
    m = long([("p", "t", "SNA", 81.0, "deg")])
    assert zscores(m.assign(age=14), group="Downs")["norm_mean"].item() == 81
    # Downs' norm is for ages 12–18: no age, no Downs norm (and a note why)
    z = zscores(m, group="Downs")
    assert math.isnan(z["norm_mean"].item())
    assert "Downs norm of SNA is for ages 12–18" in z["norm_note"].item()
    with pytest.raises(InputError, match="not in the norm table"):
        zscores(m, group="Nobody")


def _classes(values):
    rows = [("p", "t", k, v, "u") for k, v in values.items()]
    m = long(rows)
    m["view"] = "lateral"
    return classify(m)


def test_classify_bands_and_agreement():
    c = _classes({"ANB": 5.0, "Wits": 3.0, "SN_GoGn": 30.0, "SN_MP": 40.0, "FMA": 35.0})
    assert c["skeletal_class"].item() == "Class II"
    assert c["skeletal_class_wits"].item() == "Class II"
    assert bool(c["skeletal_class_agree"].item()) is True
    assert c["vertical_sn_gogn"].item() == "normodivergent"  # from SN_GoGn, not SN_MP
    assert "vertical_sn_mp" not in c.columns  # Steiner's cut-offs are not for Go-Me
    assert c["vertical_fma"].item() == "hyperdivergent"
    c = _classes({"ANB": -1.0, "Wits": 0.0, "SN_GoGn": 20.0, "FMA": float("nan")})
    assert c["skeletal_class"].item() == "Class III"
    assert c["skeletal_class_wits"].item() == "Class I"
    assert bool(c["skeletal_class_agree"].item()) is False
    assert c["vertical_sn_gogn"].item() == "hypodivergent"
    assert pd.isna(c["vertical_fma"].item())
    assert c["skeletal_class"].cat.ordered


def test_classify_boundaries_are_lower_inclusive():
    assert _classes({"ANB": 0.0})["skeletal_class"].item() == "Class I"
    assert _classes({"ANB": 4.0})["skeletal_class"].item() == "Class II"


def test_thresholds_are_sourced_and_validated():
    th = load_thresholds()
    assert (th["source"].str.len() > 0).all()
    bad = th.copy()
    bad.loc[bad.index[0], "upper"] = 10.0  # overlaps the next band
    with pytest.raises(InputError, match="overlapping"):
        load_thresholds(bad)


def test_change_differences_and_annual_rates():
    m = pd.DataFrame(
        {
            "patient_id": ["p"] * 3 + ["q"] * 2,
            "timestamp": ["2022-01-01", "2020-01-01", "2021-01-01", "x2", "x1"],
            "session_time": pd.to_datetime(
                ["2022-01-01", "2020-01-01", "2021-01-01", None, None], utc=True
            ),
            "view": "lateral",
            "measure": "SNB",
            "value": [80.0, 77.0, 78.0, 5.0, 4.0],
            "unit": "deg",
        }
    )
    c = change(m)
    p = c[c["patient_id"] == "p"]
    assert p["from_timestamp"].tolist() == ["2020-01-01", "2021-01-01"]
    assert p["change"].tolist() == [1.0, 2.0]
    assert p["years"].tolist() == pytest.approx([366 / 365.25, 365 / 365.25])
    assert p["rate_per_year"].tolist() == pytest.approx([365.25 / 366, 2 * 365.25 / 365])
    q = c[c["patient_id"] == "q"]
    assert q["from_timestamp"].tolist() == ["x1"]  # unparsed times: timestamp order
    assert q["change"].item() == 1.0
    assert math.isnan(q["rate_per_year"].item())


def test_change_needs_the_session_key():
    with pytest.raises(InputError, match="timestamp"):
        change(pd.DataFrame({"patient_id": ["p"], "measure": ["SNA"], "value": [1.0]}))


def test_zscores_does_not_mutate_input():
    m = long([("p", "t", "APDI", 80.0, "deg")])
    before = m.copy()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        zscores(m)
    pd.testing.assert_frame_equal(m, before)


def test_summarize_counts_and_moments():
    from dentalkit.ceph import summarize

    m = long([("p", "t", "SNA", 80.0, "deg"), ("q", "t", "SNA", 84.0, "deg"),
              ("r", "t", "SNA", float("nan"), "deg")])  # fmt: skip
    s = summarize(m)
    assert s["n"].item() == 2
    assert s["n_missing"].item() == 1
    assert s["mean"].item() == 82.0
    assert s["sd"].item() == pytest.approx(math.sqrt(8.0))


def test_every_missing_z_says_why():
    """Issue 29: Co–Gn rows (McNamara, unverified) got NaN with an empty note. Every row
    of every catalogue measure without a z now has a note, and each reason is the right one."""
    from dentalkit.ceph import load_measures

    ids = load_measures()["id"].tolist()
    m = long([("p", "t", mid, 1.0, "deg") for mid in ids]).assign(age=12.0)
    z = zscores(m)
    no_z = z["z"].isna()
    assert no_z.any() and (~no_z).any()
    assert z.loc[no_z, "norm_note"].str.startswith("no z: ").all()
    assert z.loc[~no_z, "norm_note"].isna().all()
    cases = long(
        [
            ("a", "t", "Co_Gn", 120.0, "mm"),  # McNamara: not verified
            ("b", "t", "SNA", np.nan, "deg"),  # no value
            ("c", "t", "not_a_measure", 1.0, "deg"),  # no norm at all
            ("d", "t", "APDI", 85.0, "px"),  # norm in deg, value in px
        ]
    ).assign(age=12.0)
    notes = zscores(cases)["norm_note"].tolist()
    assert "McNamara norm of Co_Gn is not verified" in notes[0]
    assert "include_unverified=True" in notes[0]
    assert "the value is missing" in notes[1]
    assert "no norm for not_a_measure" in notes[2]
    assert "in deg, the value in px" in notes[3]


def test_age_notes_state_the_age_exactly():
    """17.99 years is not an adult: the note says 17.99, not a rounded '18'."""
    norms = pd.DataFrame(
        {"measure": ["SNB"], "mean": [80.0], "sd": [3.0], "unit": ["deg"], "age_min": [18.0]}
    )
    m = long([("p", "t", "SNB", 81.0, "deg")])
    note = zscores(m.assign(age=17.99), norms)["norm_note"].item()
    assert note.endswith("is for ages 18 and over, not 17.99 years")
    assert zscores(m.assign(age=17.999), norms)["norm_note"].item().endswith("not 17.99 years")
    assert zscores(m.assign(age=18.0), norms)["z"].item() == pytest.approx(1 / 3)


def test_regression_to_the_mean_lists_shared_landmarks_and_correlation():
    from dentalkit.ceph import regression_to_the_mean, required_landmarks

    rng = np.random.default_rng(2)
    n = 30
    sna = rng.normal(82, 3.5, n)
    snb = sna - 2.5 + rng.normal(0, 2.2, n)
    fma = rng.normal(25, 4, n)
    rows = []
    for i in range(n):
        for ts, shift in (("2024-01-01", 0.0), ("2025-01-01", 0.5)):
            for m, v in (
                ("SNA", sna[i]),
                ("SNB", snb[i]),
                ("ANB", sna[i] - snb[i]),
                ("FMA", fma[i]),
            ):
                rows.append((f"p{i}", ts, m, v + shift * (m == "FMA"), "deg"))
    table = long(rows)
    r = regression_to_the_mean(table).set_index("measure")
    assert list(r.index[:1]) == ["ANB"] and r.loc["ANB", "at_risk"]
    anb = set(required_landmarks(["ANB"])["ANB"])
    for m in ("SNA", "SNB", "FMA"):
        assert r.loc[m, "shared_landmarks"] == sorted(anb & set(required_landmarks([m])[m]))
    first = table[table["timestamp"] == "2024-01-01"].pivot(
        index="patient_id", columns="measure", values="value"
    )
    assert r.loc["SNA", "correlation"] == pytest.approx(
        np.corrcoef(first["ANB"], first["SNA"])[0, 1]
    )
    assert r.loc["SNA", "n_units"] == 30
    assert r.loc["SNA", "at_risk"] and not r.loc["FMA", "at_risk"]
    assert "regression to the mean" in r.loc["SNB", "why"]
    assert "group_defined_by='ANB'" in r.loc["SNB", "why"]
    with pytest.raises(InputError, match="not a measure"):
        regression_to_the_mean(defining="ANB2")
