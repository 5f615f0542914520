"""S–N registration, the superimposition and the cohort z-score (wiggle) chart."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dentalkit.errors import InputError
from dentalkit.plot import ceph as pceph
from tests.plot.plot_tables import landmarks, save_all

# a small lateral "session" in image coordinates, face to the lower left of S–N
BASE = pd.DataFrame(
    {
        "patient_id": "p",
        "timestamp": "t0",
        "name": ["S", "N", "A", "Me", "Go"],
        "x": [700.0, 0.0, 20.0, 100.0, 600.0],
        "y": [100.0, 60.0, 500.0, 900.0, 700.0],
    }
)


def _pairwise(xy: np.ndarray) -> np.ndarray:
    return np.hypot(*(xy[:, None, :] - xy[None, :, :]).transpose(2, 0, 1))


def test_registration_by_hand():
    reg = pceph.sn_register(BASE).set_index("name")
    sn = np.hypot(700.0, 40.0)
    assert reg.loc["S", ["x_sn", "y_sn"]].tolist() == [0.0, 0.0]
    np.testing.assert_allclose(reg.loc["N", ["x_sn", "y_sn"]].to_numpy(float), [sn, 0.0], atol=1e-9)
    # Me: vector S→Me = (−600, 800) in image coordinates; along S→N (unit (−700, −40)/sn)
    u = np.array([-700.0, -40.0]) / sn
    along = np.dot([-600.0, 800.0], u)
    across = abs(u[0] * 800.0 - u[1] * -600.0)
    np.testing.assert_allclose(reg.loc["Me", ["x_sn", "y_sn"]].to_numpy(float), [along, -across])
    assert (reg.drop(index=["S", "N"])["y_sn"] < 0).all()  # the face is below S–N
    np.testing.assert_allclose(
        _pairwise(reg[["x_sn", "y_sn"]].to_numpy(float)),
        _pairwise(BASE[["x", "y"]].to_numpy(float)),
    )  # a rigid motion: every distance kept
    assert (reg["unit"] == "px").all() and reg["sn_length"].iloc[0] == pytest.approx(sn)


@settings(max_examples=40, deadline=None)
@given(
    st.floats(0, 2 * np.pi),
    st.floats(-1e3, 1e3),
    st.floats(-1e3, 1e3),
    st.booleans(),
)
def test_registration_does_not_depend_on_film_position_or_facing(theta, dx, dy, mirror):
    xy = BASE[["x", "y"]].to_numpy(float)
    if mirror:
        xy = xy * [-1.0, 1.0]
    c, s = np.cos(theta), np.sin(theta)
    moved = xy @ np.array([[c, s], [-s, c]]) + [dx, dy]
    other = BASE.assign(x=moved[:, 0], y=moved[:, 1])
    a = pceph.sn_register(BASE)[["x_sn", "y_sn"]].to_numpy(float)
    b = pceph.sn_register(other)[["x_sn", "y_sn"]].to_numpy(float)
    np.testing.assert_allclose(b, a, atol=1e-6)


def test_scaling_and_calibration():
    later = BASE.assign(timestamp="t1", x=BASE["x"] * 1.1, y=BASE["y"] * 1.1)
    both = pd.concat([BASE, later], ignore_index=True)
    reg = pceph.sn_register(both, scale=True, mm_per_px=0.1)
    first = reg[reg["timestamp"] == "t0"].set_index("name")
    second = reg[reg["timestamp"] == "t1"].set_index("name")
    # a uniformly grown copy scaled back to the first S–N coincides with it
    np.testing.assert_allclose(second[["x_sn", "y_sn"]], first[["x_sn", "y_sn"]], atol=1e-9)
    assert first.loc["N", "x_sn"] == pytest.approx(0.1 * np.hypot(700.0, 40.0))
    assert second["sn_length"].iloc[0] == pytest.approx(1.1 * first["sn_length"].iloc[0])
    assert (reg["unit"] == "mm").all()


def test_a_session_without_nasion_is_named():
    bad = pd.concat([BASE, BASE.assign(timestamp="t9").query("name != 'N'")], ignore_index=True)
    with pytest.raises(InputError, match=r"N missing or repeated.*'timestamp': 't9'"):
        pceph.sn_register(bad)


def test_superimposition_of_two_sandbox_sessions(tmp_path):
    t = pd.concat([landmarks("P001", "2020-03-01"), landmarks("P001", "2024-03-01")])
    ax = pceph.superimposition(t, mm_per_px=0.1)
    legend = ax.get_legend()
    # sessions by rank and time from the first (never the raw timestamps); every mark
    assert [x.get_text() for x in legend.get_texts()] == [
        "session 1 (baseline)",
        "session 2 (4.0 years)",  # 2020-03-01 to 2024-03-01: 1461 days
        "S (+) and S–N of the first session",
        "movement, first to last session",
    ]
    assert legend.get_title().get_text() == "patient 1, registered on S–N at S"
    assert not ax.yaxis_inverted()  # an anatomical frame, superior up
    assert ax.get_xlabel() == "along S–N, anterior (mm)"
    contours = [ln for ln in ax.get_lines() if str(ln.get_gid()).startswith("contour:")]
    assert len(contours) == 2 * 12  # every lateral contour group, for each session
    arrows = {a.get_gid(): a for a in ax.texts if str(a.get_gid()).startswith("arrow:")}
    assert set(arrows) == {f"arrow:{n}" for n in pceph.DEFAULT_ARROWS}
    reg = pceph.sn_register(t, mm_per_px=0.1)
    me = reg[reg["name"] == "Me"].set_index("timestamp")[["x_sn", "y_sn"]]
    np.testing.assert_allclose(arrows["arrow:Me"].xy, me.loc["2024-03-01"].to_numpy(float))
    np.testing.assert_allclose(arrows["arrow:Me"].xyann, me.loc["2020-03-01"].to_numpy(float))
    sn = next(ln for ln in ax.get_lines() if ln.get_gid() == "SN")
    np.testing.assert_allclose(np.asarray(sn.get_xydata())[:, 1], 0.0)
    save_all(ax, tmp_path, "superimposition")


def test_superimposition_needs_two_sessions_of_one_patient():
    one = landmarks("P001", "2024-03-01")
    with pytest.raises(InputError, match="at least two sessions"):
        pceph.superimposition(one)
    two_patients = pd.concat([one, landmarks("P002", "2024-03-01")])
    with pytest.raises(InputError, match="2 patients"):
        pceph.superimposition(two_patients)
    with pytest.raises(InputError, match=r"no session\(s\) \['1999'\]"):
        pceph.superimposition(one, "P001", ["2024-03-01", "1999"])


# --- wiggle -------------------------------------------------------------------------


def _zscores():
    # 4 sessions × 3 measures; z chosen by hand
    z = {"SNA": [1.0, 2.0, 0.0, 1.0], "FMA": [-1.0, -3.0, -2.0, -2.0], "IMPA": [0.5] * 4}
    norms = {"SNA": (82.0, 3.5, "deg"), "FMA": (25.0, 4.5, "deg"), "IMPA": (90.0, 5.0, "deg")}
    rows = []
    for m, zs in z.items():
        mean, sd, unit = norms[m]
        for i, zi in enumerate(zs):
            rows.append(
                (f"p{i}", "t", m, mean + zi * sd, unit, mean, sd, zi, "F" if i < 2 else "M")
            )
    return pd.DataFrame(
        rows,
        columns=[
            "patient_id",
            "timestamp",
            "measure",
            "value",
            "unit",
            "norm_mean",
            "norm_sd",
            "z",
            "sex",
        ],
    )


def test_wiggle_means_and_t_intervals_by_hand(tmp_path):
    ax = pceph.wiggle(_zscores(), measures=["SNA", "FMA", "IMPA"])
    (eb,) = ax.containers
    line = eb.lines[0]
    np.testing.assert_allclose(line.get_xdata(), [1.0, -2.0, 0.5])
    np.testing.assert_allclose(line.get_ydata(), [0, 1, 2])
    # t(0.975, 3) = 3.182446 (statistical tables); SD of SNA z = 0.816497, of FMA z = 0.816497
    half = 3.182446 * 0.8164966 / 2.0
    segs = eb.lines[2][0].get_segments()
    np.testing.assert_allclose(
        [s[:, 0] for s in segs[:2]], [[1 - half, 1 + half], [-2 - half, -2 + half]], atol=1e-5
    )
    assert [t.get_text() for t in ax.get_yticklabels()] == ["SNA", "FMA", "IMPA"]
    assert ax.yaxis_inverted()  # first measure on top
    right = next(c for c in ax.child_axes)
    # the norm and, in brackets, the patients scored (4 here), under a header
    assert [t.get_text() for t in right.get_yticklabels()] == [
        "82 ± 3.5° (4)",
        "25 ± 4.5° (4)",
        "90 ± 5° (4)",
    ]
    assert "Norm (n)" in [t.get_text() for t in ax.texts]
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "mean, 95 % CI",
        "patients",
        "±1 SD",
        "±2 SD",
    ]
    lo, hi = ax.get_xlim()
    assert lo == -hi and hi >= 3.0
    bands = sorted((round(p.get_x(), 9), round(p.get_x() + p.get_width(), 9)) for p in ax.patches)
    assert bands == [(-2.0, 2.0), (-1.0, 1.0)]  # ±2 SD and ±1 SD norm bands
    individual = [ln for ln in ax.get_lines() if ln.get_color() == "#9A9A9A"]
    assert len(individual) == 4
    save_all(ax, tmp_path, "wiggle")


def test_wiggle_by_group():
    ax = pceph.wiggle(_zscores(), measures=["SNA", "FMA"], by="sex", individuals=False)
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "F: mean, 95 % CI",
        "M: mean, 95 % CI",
        "±1 SD",
        "±2 SD",
    ]
    f, m = ax.containers
    np.testing.assert_allclose(f.lines[0].get_xdata(), [1.5, -2.0])  # p0, p1
    np.testing.assert_allclose(m.lines[0].get_xdata(), [0.5, -2.0])  # p2, p3
    assert f.lines[0].get_ydata()[0] < m.lines[0].get_ydata()[0]  # dodged, not overlapping


def test_wiggle_refuses_measures_without_z():
    t = _zscores()
    t.loc[t["measure"] == "IMPA", "z"] = np.nan
    with pytest.raises(InputError, match=r"no z-scores for measure\(s\) \['IMPA'\]"):
        pceph.wiggle(t, measures=["SNA", "IMPA"])
    with pytest.raises(InputError, match="lacks column"):
        pceph.wiggle(t.drop(columns="norm_sd"))
