"""Closed-form geometry (right angles, 30-60-90 triangles, 3-4-5 distances) and clinical signs."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from ceph_fixtures import LATERAL, image_table

from dentalkit.ceph import measure

R3 = math.sqrt(3.0)


def values(points, ids, **kw):
    # an S-N axis far above every point fixes the profile direction (anterior = +x)
    points = {"S": (-100.0, 300.0), "N": (0.0, 300.0), **points}
    out, _ = measure(image_table(points, px_per_mm=1.0), ids, mm_per_px=1.0, errors="collect", **kw)
    return dict(zip(out["measure"].astype(str), out["value"], strict=True))


def test_30_60_90_triangles_give_sna_60_snb_30_anb_30():
    pts = {
        "S": (0.0, 0.0),
        "N": (2.0, 0.0),
        "A": (2.0 - 1.0, -R3),  # N→A at 60° below N→S
        "B": (2.0 - R3, -1.0),  # N→B at 30° below N→S
    }
    got = values(pts, ["SNA", "SNB", "ANB", "S_N"])
    assert got["SNA"] == pytest.approx(60.0, abs=1e-9)
    assert got["SNB"] == pytest.approx(30.0, abs=1e-9)
    assert got["ANB"] == pytest.approx(30.0, abs=1e-9)
    assert got["S_N"] == pytest.approx(2.0, abs=1e-9)


def test_right_angles_gonial_and_line_angles():
    pts = {
        "S": (0.0, 0.0),
        "N": (70.0, 0.0),
        "Ar": (0.0, -30.0),
        "Go": (0.0, -80.0),  # ramus vertical
        "Me": (60.0, -80.0),  # mandibular plane horizontal, parallel to SN
        "Po": (-20.0, -10.0),
        "Or": (50.0, -10.0),  # FH parallel to SN
    }
    got = values(pts, ["gonial_angle", "SN_MP", "FMA", "FH_SN", "articular_angle", "saddle_angle"])
    assert got["gonial_angle"] == pytest.approx(90.0)
    assert got["SN_MP"] == pytest.approx(0.0, abs=1e-9)
    assert got["FMA"] == pytest.approx(0.0, abs=1e-9)
    assert got["FH_SN"] == pytest.approx(0.0, abs=1e-9)
    assert got["articular_angle"] == pytest.approx(180.0)  # S, Ar, Go collinear
    assert got["saddle_angle"] == pytest.approx(90.0)


def test_e_line_3_4_5_distance_and_sign():
    # E-line from Prn (0, 0) to Pog' (-3, -4); Ls 2 mm in front of it, Li 2 mm behind
    pts = {"Prn": (0.0, 0.0), "Pog'": (-3.0, -4.0), "Ls": (1.0, -2.0), "Li": (-3.0, -1.0)}
    got = values(pts, ["E_line_upper_lip", "E_line_lower_lip"])
    assert got["E_line_upper_lip"] == pytest.approx(2.0)
    # Li (-3, -1): line at y=-1 is x=-0.75, Li is 2.25 behind horizontally → 2.25·4/5
    assert got["E_line_lower_lip"] == pytest.approx(-1.8)


def test_wits_class_ii_positive_class_iii_negative():
    base = {
        "U6_cusp": (0.0, 1.0),
        "L6_cusp": (0.0, -1.0),
        "U4_cusp": (20.0, 1.0),
        "L4_cusp": (20.0, -1.0),  # functional occlusal plane: y = 0, anterior = +x
        "A": (35.0, 20.0),
    }
    class_ii = values({**base, "B": (31.0, -25.0)}, ["Wits"])["Wits"]
    class_iii = values({**base, "B": (38.5, -25.0)}, ["Wits"])["Wits"]
    assert class_ii == pytest.approx(4.0)
    assert class_iii == pytest.approx(-3.5)


def test_n_perpendicular_distances_are_horizontal_to_fh():
    pts = {
        "N": (70.0, 0.0),
        "Po": (-20.0, -25.0),
        "Or": (50.0, -25.0),  # FH horizontal → N-perp is the vertical x = 70
        "A": (71.0, -45.0),
        "Pog": (64.0, -100.0),
    }
    got = values(pts, ["A_Nperp", "Pog_Nperp"])
    assert got["A_Nperp"] == pytest.approx(1.0)
    assert got["Pog_Nperp"] == pytest.approx(-6.0)


def test_convexity_and_ab_plane_signs():
    # facial plane N-Pog vertical at x=0
    straight = {"N": (0.0, 0.0), "A": (0.0, -50.0), "Pog": (0.0, -100.0), "B": (0.0, -80.0)}
    convex = {**straight, "A": (5.0, -50.0), "B": (-3.0, -80.0)}
    concave = {**straight, "A": (-5.0, -50.0), "B": (3.0, -80.0)}
    ids = ["convexity_angle", "AB_plane", "convexity_A_NPog"]
    s, cx, cc = values(straight, ids), values(convex, ids), values(concave, ids)
    assert s["convexity_angle"] == pytest.approx(0.0, abs=1e-9)
    assert s["AB_plane"] == pytest.approx(0.0, abs=1e-9)
    # A 5 mm ahead at mid-height: 180 − ∠NAPog = 2·atan(5/50)
    assert cx["convexity_angle"] == pytest.approx(2 * math.degrees(math.atan(0.1)))
    assert cx["convexity_A_NPog"] == pytest.approx(5.0)
    assert cx["AB_plane"] == pytest.approx(-math.degrees(math.atan(8 / 30)))  # B behind A
    assert cc["convexity_angle"] < 0
    assert cc["AB_plane"] > 0
    assert cc["convexity_A_NPog"] == pytest.approx(-5.0)


def test_incisor_inclination_signs_follow_proclination():
    base = {"N": (0.0, 0.0), "A": (0.0, -50.0), "B": (0.0, -90.0)}
    pro = {**base, "U1_apex": (0.0, -55.0), "U1_tip": (10.0, -75.0)}
    pro |= {"L1_apex": (0.0, -95.0), "L1_tip": (5.0, -70.0)}
    retro = {**base, "U1_apex": (0.0, -55.0), "U1_tip": (-5.0, -75.0)}
    retro |= {"L1_apex": (0.0, -95.0), "L1_tip": (-5.0, -70.0)}
    ids = ["U1_NA_deg", "L1_NB_deg"]
    p, r = values(pro, ids), values(retro, ids)
    assert p["U1_NA_deg"] == pytest.approx(math.degrees(math.atan(10 / 20)))
    assert p["L1_NB_deg"] == pytest.approx(math.degrees(math.atan(5 / 25)))
    assert r["U1_NA_deg"] == pytest.approx(-math.degrees(math.atan(5 / 20)))
    assert r["L1_NB_deg"] == pytest.approx(-math.degrees(math.atan(5 / 25)))


def test_palatal_plane_sign_kim():
    # FH horizontal; PP tilted down anteriorly by atan(5/50) → positive (Kim)
    pts = {"Po": (-20.0, 0.0), "Or": (50.0, 0.0), "PNS": (20.0, -40.0), "ANS": (70.0, -45.0)}
    assert values(pts, ["PP_FH"])["PP_FH"] == pytest.approx(math.degrees(math.atan(0.1)))
    pts["ANS"] = (70.0, -35.0)
    assert values(pts, ["PP_FH"])["PP_FH"] == pytest.approx(-math.degrees(math.atan(0.1)))


def test_occlusal_plane_descending_anteriorly_is_positive():
    pts = {
        "S": (0.0, 0.0),
        "N": (70.0, 0.0),
        "U6_cusp": (30.0, -60.0),
        "L6_cusp": (30.0, -62.0),
        "U4_cusp": (50.0, -65.0),
        "L4_cusp": (50.0, -67.0),  # plane drops 5 over 20
    }
    assert values(pts, ["OP_SN"])["OP_SN"] == pytest.approx(math.degrees(math.atan(0.25)))


def test_ratio_and_asymmetry_closed_form():
    lat = {"S": (0.0, 0.0), "Go": (0.0, -80.0), "N": (70.0, 0.0), "Me": (70.0, -125.0)}
    assert values(lat, ["Jarabak_ratio"])["Jarabak_ratio"] == pytest.approx(64.0)
    front = {
        "Co_R": (-50.0, 0.0),
        "Ag_R": (-50.0, -60.0),
        "Co_L": (50.0, 0.0),
        "Ag_L": (50.0, -40.0),
    }
    t = image_table(front, view="frontal", px_per_mm=1.0)
    out, _ = measure(t, ["ramus_asymmetry"], mm_per_px=1.0, errors="collect")
    assert out["value"].item() == pytest.approx(100 * (60 - 40) / (60 + 40))
    assert out["unit"].item() == "%"


def test_lengths_in_px_without_calibration_and_mm_with_it():
    t = image_table(LATERAL, px_per_mm=10.0)
    px = measure(t, ["S_N", "SNA", "Jarabak_ratio"], errors="raise")
    mm = measure(t, ["S_N", "SNA", "Jarabak_ratio"], mm_per_px=0.1, errors="raise")
    assert px["unit"].tolist() == ["px", "deg", "%"]
    assert mm["unit"].tolist() == ["mm", "deg", "%"]
    sn = math.hypot(70.0, 5.0)
    assert px["value"].iloc[0] == pytest.approx(10 * sn)
    assert mm["value"].iloc[0] == pytest.approx(sn)
    assert px["value"].iloc[1:].tolist() == pytest.approx(mm["value"].iloc[1:].tolist())


def test_degenerate_geometry_is_nan_with_a_problem():
    pts = {"S": (0.0, 0.0), "N": (0.0, 0.0), "A": (5.0, -5.0)}  # S on top of N
    out, prob = measure(image_table(pts), ["SNA"], errors="collect")
    assert math.isnan(out["value"].item())
    assert prob["reason"].str.contains("degenerate").any()


def test_result_is_a_pure_function_of_the_input():
    t = image_table(LATERAL)
    before = t.copy()
    a = measure(t, errors="raise")
    b = measure(t, errors="raise")
    pd.testing.assert_frame_equal(t, before)
    pd.testing.assert_frame_equal(a, b)


WITS_PTS = {
    "U6_cusp": (0.0, 1.0),
    "L6_cusp": (0.0, -1.0),
    "U4_cusp": (20.0, 1.0),
    "L4_cusp": (20.0, -1.0),
    "A": (35.0, 20.0),
    "B": (31.0, -25.0),  # Class II: Wits = +4
}


@pytest.mark.parametrize("mirror", [False, True])
def test_signed_measures_without_s_and_n_use_frankfort_for_the_direction(mirror):
    pts = {**WITS_PTS, "Po": (-40.0, 30.0), "Or": (40.0, 30.0), "Me": (20.0, -60.0)}
    t = image_table(pts, px_per_mm=1.0, mirror=mirror, angle_deg=150.0)  # upside down too
    out, prob = measure(t, ["Wits"], mm_per_px=1.0, errors="collect")
    assert out["value"].item() == pytest.approx(4.0)
    assert prob.empty


def test_signed_measures_without_any_axis_are_nan_not_guessed():
    out, prob = measure(image_table(WITS_PTS, px_per_mm=1.0, mirror=True), ["Wits"],
                        mm_per_px=1.0, errors="collect")  # fmt: skip
    assert math.isnan(out["value"].item())
    assert prob["reason"].str.contains("direction unknown").any()


def test_image_convention_fallback_is_reported():
    pts = {**WITS_PTS, "S": (-30.0, 40.0), "N": (40.0, 45.0)}  # S, N and nothing below/above
    pts = {k: v for k, v in pts.items() if k in ("S", "N", "A", "B") or "cusp" in k}
    out, prob = measure(image_table(pts, px_per_mm=1.0), ["Wits"], mm_per_px=1.0,
                        errors="collect")  # fmt: skip
    assert out["value"].item() == pytest.approx(4.0)  # determined from the cusps/A/B below SN
    assert prob.empty
