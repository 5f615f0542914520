"""agreement.landmarks: hand-computed geometry, the ISBI definitions, problems, frames."""

from __future__ import annotations

import warnings

import agreement_fixtures as fx
import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats as sps

from dentalkit import agreement
from dentalkit.errors import DentalkitWarning, InputError


def _table(rows, **extra):
    cols = ["patient_id", "timestamp", "name", "x", "y"]
    out = pd.DataFrame(rows, columns=cols)
    for k, v in extra.items():
        out[k] = v
    return out


# reference at the origin; test offsets (px) chosen as 3-4-5 triangles; at 0.1 mm/px the
# radial errors are 0.5, 2.0, 2.6 and 5.0 mm.
REF = _table(
    [
        ("p1", "t", "S", 100.0, 100.0),
        ("p1", "t", "N", 800.0, 100.0),
        ("p2", "t", "S", 120.0, 90.0),
        ("p2", "t", "N", 820.0, 95.0),
    ]
)
OFF_PX = np.array([[3.0, 4.0], [12.0, 16.0], [-10.0, 24.0], [-30.0, -40.0]])
TEST = REF.assign(x=REF["x"] + OFF_PX[:, 0], y=REF["y"] + OFF_PX[:, 1])
ERR_MM = np.array([0.5, 2.0, 2.6, 5.0])


def test_radial_errors_mre_sd_and_sdr_hand_computed():
    res = agreement.landmarks(REF, TEST, mm_per_px=0.1, frame="image")
    assert res.unit == "mm"
    assert res.pairs["error"].to_numpy() == pytest.approx(ERR_MM[[0, 2, 1, 3]])  # sorted S, N
    s = res.summary.set_index("name")
    assert s.loc["S", "mre"] == pytest.approx((0.5 + 2.6) / 2)
    assert s.loc["S", "sd"] == pytest.approx(np.std([0.5, 2.6], ddof=1))
    assert s.loc["N", "mre"] == pytest.approx((2.0 + 5.0) / 2)
    assert s.loc["overall", "n"] == 4
    assert s.loc["overall", "mre"] == pytest.approx(ERR_MM.mean())
    assert s.loc["overall", "sd"] == pytest.approx(ERR_MM.std(ddof=1))
    sdr = res.sdr[res.sdr["name"] == "overall"].set_index("radius_mm")["sdr_pct"]
    # ≤ r counts (ISBI 2015): 2.0 mm is inside the 2 mm radius
    assert sdr.to_dict() == {2.0: 50.0, 2.5: 50.0, 3.0: 75.0, 4.0: 75.0}
    n_sdr = res.sdr[res.sdr["name"] == "N"].set_index("radius_mm")["n_within"]
    assert n_sdr.to_dict() == {2.0: 1, 2.5: 1, 3.0: 1, 4.0: 1}


def test_bias_is_test_minus_reference_with_a_t_interval():
    res = agreement.landmarks(REF, TEST, mm_per_px=0.1, frame="image", confidence=0.9)
    s = res.summary.set_index("name")
    dx_s = OFF_PX[[0, 2], 0] * 0.1
    assert s.loc["S", "bias_x"] == pytest.approx(dx_s.mean())
    ci = sps.ttest_1samp(dx_s, 0.0).confidence_interval(0.9)
    assert (s.loc["S", "bias_x_ci_low"], s.loc["S", "bias_x_ci_high"]) == pytest.approx(
        (ci.low, ci.high)
    )
    assert np.isnan(s.loc["overall", "bias_x_ci_low"])  # no CI pooling landmarks of one image


def test_sdr_interval_is_wilson_from_statsmodels():
    from statsmodels.stats.proportion import proportion_confint

    res = agreement.landmarks(REF, TEST, mm_per_px=0.1, frame="image")
    row = res.sdr[(res.sdr["name"] == "S") & (res.sdr["radius_mm"] == 2.0)].iloc[0]
    lo, hi = proportion_confint(1, 2, alpha=0.05, method="wilson")
    assert (row["ci_low_pct"], row["ci_high_pct"]) == pytest.approx((100 * lo, 100 * hi))


def test_without_calibration_errors_are_px_and_sdr_needs_mm():
    res = agreement.landmarks(REF, TEST, frame="image")
    assert res.unit == "px" and res.sdr.empty
    assert res.overall["mre"].iloc[0] == pytest.approx(ERR_MM.mean() * 10)
    with pytest.raises(InputError, match="SDR radii are in mm"):
        agreement.landmarks(REF, TEST, sdr_radii_mm=[2.0])


def test_calibration_as_column_and_as_series():
    ref = REF.assign(mm_per_px=np.where(REF["patient_id"] == "p1", 0.1, 0.2))
    res = agreement.landmarks(ref, TEST, mm_per_px="mm_per_px", frame="image")
    p2 = res.pairs[res.pairs["patient_id"] == "p2"]
    assert p2["error"].to_numpy() == pytest.approx(ERR_MM[[2, 3]] * 2)
    series = pd.Series([0.1, 0.2], index=pd.Index(["p1", "p2"], name="patient_id"))
    res2 = agreement.landmarks(REF, TEST, mm_per_px=series, frame="image")
    assert res2.pairs["error"].to_numpy() == pytest.approx(res.pairs["error"].to_numpy())
    bad = ref.assign(mm_per_px=[0.1, 0.2, 0.2, 0.2])
    with pytest.raises(InputError, match="varies within session"):
        agreement.landmarks(bad, TEST, mm_per_px="mm_per_px")


def test_session_without_calibration_is_reported_not_guessed():
    series = pd.Series([0.1], index=pd.Index(["p1"], name="patient_id"))
    with pytest.warns(DentalkitWarning, match="problem"):
        res = agreement.landmarks(REF, TEST, mm_per_px=series, frame="image", errors="warn")
    assert set(res.pairs["patient_id"]) == {"p1"}
    assert res.problems["reason"].str.contains("mm_per_px").any()


def _reasons(res, side=None):
    p = res.problems if side is None else res.problems[res.problems["side"] == side]
    return " | ".join(p["reason"])


def test_every_unpaired_or_unusable_landmark_is_listed():
    ref = pd.concat(
        [
            REF,
            _table(
                [
                    ("p1", "t", "Go", 1.0, 1.0),  # absent from the test in p1 (test has Go in p2)
                    ("p1", "t", None, 5.0, 5.0),  # unmapped
                    ("p1", "t", "Ar", np.nan, 2.0),  # non-finite
                    ("p3", "t", "S", 1.0, 1.0),  # session only in the reference
                ]
            ),
        ],
        ignore_index=True,
    )
    tst = pd.concat(
        [
            TEST,
            _table(
                [
                    ("p2", "t", "Go", 1.0, 1.0),
                    ("p2", "t", "Me", 1.0, 1.0),  # never in the reference
                    ("p2", "t", "N", 9.0, 9.0),  # N twice in p2
                ]
            ),
        ],
        ignore_index=True,
    )
    with pytest.warns(DentalkitWarning, match="problem"):
        res = agreement.landmarks(ref, tst, mm_per_px=0.1, frame="image", errors="warn")
    text = _reasons(res)
    assert "unmapped" in text
    assert "missing or non-finite" in text
    assert "session only in the reference table" in text
    assert "'Me'" not in text and "Me is in the test table (1 session(s)) but never" in text
    assert "Go absent from the test table in this session" in text
    assert "Go absent from the reference table in this session" in text
    assert "given more than once" in text
    # the repeated N is left out on both of its rows, and the p2 N pair too
    assert set(res.pairs.loc[res.pairs["patient_id"] == "p2", "name"]) == {"S"}
    dup = res.problems[res.problems["reason"].str.contains("more than once")]
    assert len(dup) == 2 and dup["row"].notna().all()
    assert set(res.problems.columns) >= {"table", "patient_id", "timestamp", "row", "reason"}


def test_subset_compares_only_those_landmarks_and_reports_missing_requests():
    tst = pd.concat([TEST, _table([("p1", "t", "Me", 1.0, 1.0)])], ignore_index=True)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = agreement.landmarks(REF, tst, mm_per_px=0.1, subset=["S", "N"], frame="image")
    assert res.problems.empty
    with pytest.warns(DentalkitWarning):
        res = agreement.landmarks(
            REF, tst, mm_per_px=0.1, subset=["S", "Po"], frame="image", errors="warn"
        )
    assert "'Po' requested in subset but in neither table" in _reasons(res)


def test_errors_policy():
    tst = TEST.iloc[:3]
    with pytest.raises(InputError, match="problem"):
        agreement.landmarks(REF, tst, errors="raise")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        res = agreement.landmarks(REF, tst, errors="collect", frame="image")
    assert len(res.problems) == 1
    with pytest.warns(DentalkitWarning, match="problem"):
        agreement.landmarks(REF, tst, errors="warn", frame="image")
    with pytest.raises(InputError, match="errors='ignore' is not allowed"):  # removed spelling
        agreement.landmarks(REF, tst, errors="ignore", frame="image")
    with pytest.raises(InputError, match="'raise', 'collect', 'warn'"):
        agreement.landmarks(REF, TEST, errors="silent")


def test_nothing_pairs_is_an_error_that_says_why():
    tst = TEST.assign(timestamp="")
    with pytest.raises(InputError, match=r"session_cols=\['patient_id'\]"):
        agreement.landmarks(REF, tst)
    res = agreement.landmarks(REF, tst, session_cols=["patient_id"], frame="image")
    assert len(res.pairs) == 4


def test_pairing_on_service_keys_and_names_from_the_landmark_map():
    ref = REF.assign(landmark=REF["name"].map({"S": "Later_1", "N": "Later_2"})).drop(
        columns="name"
    )
    tst = TEST.assign(landmark=ref["landmark"]).drop(columns="name")
    res = agreement.landmarks(ref, tst, mm_per_px=0.1, by="landmark", frame="image")
    assert list(res.summary["landmark"].astype(str)) == ["Later_1", "Later_2", "overall"]
    # by name: names are read through the shipped landmark map (Later_1 = S, Later_2 = N)
    res2 = agreement.landmarks(ref, tst, mm_per_px=0.1, frame="image")
    assert list(res2.summary["name"].astype(str)) == ["S", "N", "overall"]
    assert res2.summary["mre"].to_numpy() == pytest.approx(res.summary["mre"].to_numpy())


def test_bad_arguments():
    with pytest.raises(InputError, match="by must be"):
        agreement.landmarks(REF, TEST, by="key")
    with pytest.raises(InputError, match="frame must be"):
        agreement.landmarks(REF, TEST, frame="film")
    with pytest.raises(InputError, match="lacks column 'x'"):
        agreement.landmarks(REF.drop(columns="x"), TEST)
    with pytest.raises(InputError, match="view"):
        agreement.landmarks(REF.assign(view="PA"), TEST)
    with pytest.raises(InputError, match="session columns"):
        agreement.landmarks(REF.drop(columns=["patient_id", "timestamp"]), TEST)
    with pytest.raises(InputError, match="reserved"):
        agreement.landmarks(REF.assign(name="overall"), TEST.assign(name="overall"))


# ------------------------------------------------------------------ the anatomical frame


def test_anatomical_frame_undoes_facing_and_tilt():
    """Go placed 1 mm anterior and 0.5 mm superior by the test, on films facing either way
    and tilted: image-frame x biases cancel, anatomical ones recover (+1, +0.5) exactly.

    The frame's axes are those of the mean reference tracing (the average head posture
    after mirroring); the tilts are chosen to average to zero (−3, +3, +4, −4 degrees once
    the left-facing films are mirrored), so its axes are the anatomical ones exactly."""
    move = {"Go": (1.0, 0.5)}
    placements = [
        {"facing": "right", "tilt_deg": -3.0},
        {"facing": "left", "tilt_deg": -3.0},
        {"facing": "right", "tilt_deg": 4.0, "origin_px": (500.0, 700.0)},
        {"facing": "left", "tilt_deg": 4.0, "origin_px": (1500.0, 1000.0)},
    ]
    ref = pd.concat(
        [fx.tracing(f"p{i}", **pl) for i, pl in enumerate(placements)], ignore_index=True
    )
    tst = pd.concat(
        [fx.tracing(f"p{i}", offsets_mm=move, **pl) for i, pl in enumerate(placements)],
        ignore_index=True,
    )
    res = agreement.landmarks(ref, tst, mm_per_px=0.1)
    go = res.summary.set_index("name").loc["Go"]
    assert (go["bias_x"], go["bias_y"]) == pytest.approx((1.0, 0.5), abs=1e-9)
    assert go["sd_x"] == pytest.approx(0.0, abs=1e-9)
    image = agreement.landmarks(ref, tst, mm_per_px=0.1, frame="image")
    assert abs(image.summary.set_index("name").loc["Go", "bias_x"]) < 0.1
    # radial errors do not depend on the frame
    assert res.pairs["error"].to_numpy() == pytest.approx(image.pairs["error"].to_numpy())
    # the mean tracing is the anatomy itself (up to a rigid motion): S–N length 70.18 mm
    mean = res.pairs.groupby("name", observed=True)[["frame_x", "frame_y"]].mean()
    sn = np.hypot(*(mean.loc["N"] - mean.loc["S"]))
    assert sn == pytest.approx(np.hypot(70.0, 5.0), abs=1e-9)
    # …and it faces anterior-right, superior-up
    assert mean.loc["N", "frame_x"] > mean.loc["S", "frame_x"]
    assert mean.loc["Me", "frame_y"] < mean.loc["S", "frame_y"]


def test_undetermined_handedness_is_reported():
    ref = fx.tracing("p1")
    ref = ref[ref["name"].isin(["Ls", "Li"])]  # no S/N/Po/Or/PNS/ANS: handedness unknown
    with pytest.warns(DentalkitWarning):
        res = agreement.landmarks(ref, ref, mm_per_px=0.1, errors="warn")
    assert "handedness not determined" in _reasons(res)


@settings(max_examples=30, deadline=None)
@given(
    angles=st.lists(st.floats(-np.pi, np.pi), min_size=2, max_size=6),
    shifts=st.lists(st.tuples(st.floats(-100, 100), st.floats(-100, 100)), min_size=6, max_size=6),
    drop=st.integers(0, 18),
)
def test_procrustes_superimposes_rigid_copies_exactly(angles, shifts, drop):
    base = np.array(list(fx.ISBI_MM.values()))
    shapes = []
    for a, (tx, ty) in zip(angles, shifts, strict=False):
        rot = np.array([[np.cos(a), -np.sin(a)], [np.sin(a), np.cos(a)]])
        shapes.append(base @ rot.T + (tx, ty))
    shapes = np.stack(shapes)
    shapes[0, drop] = np.nan  # a point missing from one session
    aligned, rotations, mean = agreement.procrustes(shapes)
    ok = np.isfinite(aligned[..., 0])
    spread = np.nanmax(aligned, axis=0) - np.nanmin(aligned, axis=0)
    assert np.nanmax(spread) < 1e-6
    assert np.linalg.det(rotations) == pytest.approx(np.ones(len(shapes)))
    assert np.isnan(aligned[0, drop]).all() and ok.sum() == shapes.shape[0] * 19 - 1
    # distances between points are kept (rigid motion)
    d0 = np.linalg.norm(mean[3] - mean[7])
    assert d0 == pytest.approx(np.linalg.norm(base[3] - base[7]), rel=1e-9)


# ------------------------------------------------------------------ simulated examiner


def test_simulated_examiner_mre_and_sdr_recover_sigma():
    """Isotropic N(0, σ²) per axis → Rayleigh radial errors: MRE = σ√(π/2),
    SDR(r) = 1 − exp(−r²/2σ²). Tolerance: 4 standard errors of each estimate."""
    rng = np.random.default_rng(20240301)
    truth = fx.cohort(500, rng)  # 500 sessions × 19 landmarks = 9500 pairs
    sigma = 1.2
    examiner = agreement.simulate_examiner(truth, sigma, 0.1, seed=7)
    res = agreement.landmarks(truth, examiner, mm_per_px=0.1)
    n = len(res.pairs)
    assert n == 9500
    mre = res.overall["mre"].iloc[0]
    se_mre = sigma * np.sqrt((4 - np.pi) / 2) / np.sqrt(n)
    assert abs(mre - sigma * np.sqrt(np.pi / 2)) < 4 * se_mre
    sd = res.overall["sd"].iloc[0]
    assert sd == pytest.approx(sigma * np.sqrt((4 - np.pi) / 2), rel=0.05)
    sdr = res.sdr[res.sdr["name"] == "overall"].set_index("radius_mm")["sdr_pct"] / 100
    for r, observed in sdr.items():
        p = 1 - np.exp(-(r**2) / (2 * sigma**2))
        assert abs(observed - p) < 4 * np.sqrt(p * (1 - p) / n), r
    # no bias: every per-landmark bias CI is centred near 0 (|mean| < 4 SE)
    s = res.summary[res.summary["name"] != "overall"]
    assert (s["bias_x"].abs() < 4 * sigma / np.sqrt(500)).all()


def test_two_examiners_differ_by_the_root_sum_of_squares():
    rng = np.random.default_rng(5)
    truth = fx.cohort(400, rng, facing="left", tilt_deg=3.0)
    s1, s2 = 0.6, 0.8  # → scale 1.0
    a = agreement.simulate_examiner(truth, s1, 0.1, seed=1)
    b = agreement.simulate_examiner(truth, s2, 0.1, seed=2)
    res = agreement.landmarks(a, b, mm_per_px=0.1)
    n = len(res.pairs)
    scale = np.hypot(s1, s2)
    mre = res.overall["mre"].iloc[0]
    assert abs(mre - scale * np.sqrt(np.pi / 2)) < 4 * scale * np.sqrt((4 - np.pi) / 2 / n)


def test_simulate_examiner_per_landmark_sd_and_validation():
    t = fx.tracing("p1")
    out = agreement.simulate_examiner(t, {"S": 0.0}, 0.1, seed=0, default_sd_mm=0.0)
    assert out[["x", "y"]].to_numpy() == pytest.approx(t[["x", "y"]].to_numpy())
    moved = agreement.simulate_examiner(t, {"S": 1.0}, 0.1, seed=0, default_sd_mm=0.0)
    changed = (moved[["x", "y"]] != t[["x", "y"]]).any(axis=1)
    assert list(t.loc[changed, "name"]) == ["S"]
    with pytest.raises(InputError, match="no SD for landmark"):
        agreement.simulate_examiner(t, {"S": 1.0}, 0.1, seed=0)
    with pytest.raises(InputError, match="positive"):
        agreement.simulate_examiner(t, 1.0, 0.0, seed=0)
    assert t.equals(fx.tracing("p1"))  # input untouched


_PLACEMENT: dict = {}


def _placement_base():
    if not _PLACEMENT:
        ref = fx.cohort(6, np.random.default_rng(11))
        tst = agreement.simulate_examiner(ref, 1.0, 0.1, seed=3)
        _PLACEMENT.update(
            ref=ref, tst=tst, base=agreement.landmarks(ref, tst, mm_per_px=0.1).summary
        )
    return _PLACEMENT["ref"], _PLACEMENT["tst"], _PLACEMENT["base"]


@settings(max_examples=8, deadline=None)
@given(
    shift=st.tuples(st.floats(-500, 500), st.floats(-500, 500)),
    angle=st.sampled_from([0.0, -0.2, 0.25]),
    mirror=st.booleans(),
)
def test_errors_and_anatomical_bias_do_not_depend_on_film_placement(shift, angle, mirror):
    """Moving, mirroring or tilting *both* tables the same way (one film, two tracings)
    keeps every radial error; translation and mirroring keep the anatomical bias; a common
    tilt turns the frame with the cohort's posture, so the bias keeps its length."""
    ref, tst, base = _placement_base()
    c, s = np.cos(angle), np.sin(angle)

    def place(t):
        xy = t[["x", "y"]].to_numpy()
        if mirror:
            xy = xy * [-1.0, 1.0]
        xy = xy @ np.array([[c, -s], [s, c]]).T + shift
        return t.assign(x=xy[:, 0], y=xy[:, 1])

    moved = agreement.landmarks(place(ref), place(tst), mm_per_px=0.1).summary
    assert moved["mre"].to_numpy() == pytest.approx(base["mre"].to_numpy(), abs=1e-9)
    norm = np.hypot(moved["bias_x"], moved["bias_y"])
    assert norm.to_numpy() == pytest.approx(np.hypot(base["bias_x"], base["bias_y"]), abs=1e-9)
    if angle == 0.0:
        assert moved["bias_x"].to_numpy() == pytest.approx(base["bias_x"].to_numpy(), abs=1e-9)


# --- the patient is the unit: one session per patient in the per-landmark intervals ---


def _three_patients_p1_twice():
    """p1 has two sessions (2021 listed first, 2020 the earlier); p2 and p3 one each."""
    ref = _table(
        [
            ("p1", "2021-05-01", "S", 100.0, 100.0),
            ("p1", "2020-05-01", "S", 100.0, 100.0),
            ("p2", "2020-01-01", "S", 120.0, 90.0),
            ("p3", "2020-01-01", "S", 110.0, 95.0),
        ]
    )
    dx = np.array([30.0, 10.0, -20.0, 5.0])  # px; at 0.1 mm/px: 3, 1, -2, 0.5 mm
    return ref, ref.assign(x=ref["x"] + dx), dx * 0.1


def test_landmarks_count_each_patient_once_by_default():
    ref, tst, d = _three_patients_p1_twice()
    res = agreement.landmarks(ref, tst, mm_per_px=0.1, frame="image")
    s = res.summary.set_index("name").loc["S"]
    first = d[[1, 2, 3]]  # p1's 2020 session, p2, p3
    assert (s["n"], s["n_units"], s["session"]) == (3, 3, "first")
    assert s["unit_of_analysis"] == "patient_id"
    lo, hi = sps.t.interval(0.95, 2, loc=first.mean(), scale=first.std(ddof=1) / np.sqrt(3))
    assert (s["bias_x"], s["bias_x_ci_low"], s["bias_x_ci_high"]) == pytest.approx(
        (first.mean(), lo, hi)
    )
    assert s["mre"] == pytest.approx(np.abs(first).mean())
    assert set(res.pairs["timestamp"].astype(str)) == {"2020-05-01", "2020-01-01"}
    sdr = res.sdr[(res.sdr["name"] == "S") & (res.sdr["radius_mm"] == 2.0)].iloc[0]
    # radial errors 1, 2 and 0.5 mm: all within 2 mm (≤, ISBI 2015); p1's 3 mm left out
    assert (sdr["n"], sdr["n_within"]) == (3, 3) and np.isfinite(sdr["ci_low_pct"])


def test_landmarks_all_sessions_pool_without_intervals():
    ref, tst, d = _three_patients_p1_twice()
    res = agreement.landmarks(ref, tst, mm_per_px=0.1, frame="image", session="all")
    s = res.summary.set_index("name").loc["S"]
    assert (s["n"], s["n_units"]) == (4, 3)
    assert s["bias_x"] == pytest.approx(d.mean()) and s["mre"] == pytest.approx(np.abs(d).mean())
    assert np.isnan(s["bias_x_ci_low"]) and np.isnan(s["bias_y_ci_high"])
    assert res.sdr.loc[res.sdr["name"] == "S", "ci_low_pct"].isna().all()


def test_landmarks_with_one_session_per_patient_are_the_same_under_every_rule():
    base = agreement.landmarks(REF, TEST, mm_per_px=0.1, unit=None, frame="image")
    for rule in ("first", "last", "all"):
        res = agreement.landmarks(REF, TEST, mm_per_px=0.1, session=rule, frame="image")
        cols = ["n", "mre", "sd", "bias_x", "bias_x_ci_low", "bias_y_ci_high"]
        pd.testing.assert_frame_equal(res.summary[cols], base.summary[cols])
        pd.testing.assert_frame_equal(res.sdr, base.sdr)
        assert res.summary["n_units"].tolist() == [2, 2, 2]
    assert base.summary["unit_of_analysis"].unique().tolist() == ["session"]
    with pytest.raises(InputError, match="session='any' is not allowed"):
        agreement.landmarks(REF, TEST, session="any")
