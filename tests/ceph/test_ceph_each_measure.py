"""Every measure of the catalogue against an independently computed value.

The expected values are written here, per measure, with elementary math on the
hand-built landmark sets of ``ceph_fixtures`` (acos of dot products, explicit
rotations, and clinical sign rules such as "anterior = further forward at the same
height"), never through dentalkit's engine or its kinds.
"""

from __future__ import annotations

import math

import pytest
from ceph_fixtures import FRONTAL, LATERAL, image_table

from dentalkit.ceph import load_measures, measure

PX_PER_MM = 10.0


# --------------------------------------------------------------- independent helpers
def vec(a, b):
    return (b[0] - a[0], b[1] - a[1])


def length(u):
    return math.sqrt(u[0] ** 2 + u[1] ** 2)


def dist(a, b):
    return length(vec(a, b))


def angle(u, v):
    c = (u[0] * v[0] + u[1] * v[1]) / (length(u) * length(v))
    return math.degrees(math.acos(max(-1.0, min(1.0, c))))


def angle_at(p, vertex, q):
    return angle(vec(vertex, p), vec(vertex, q))


def acute(theta):
    return min(theta, 180.0 - theta)


def mid(a, b):
    return ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)


def x_on_line(p1, p2, y):
    return p1[0] + (p2[0] - p1[0]) * (y - p1[1]) / (p2[1] - p1[1])


def anterior_of(p, l1, l2):
    """p lies further +x than the (steep) line l1-l2 at p's height."""
    return p[0] > x_on_line(l1, l2, p[1])


def perp(p, l1, l2):
    """Unsigned perpendicular distance (twice the triangle area over the base)."""
    area2 = abs((l2[0] - l1[0]) * (p[1] - l1[1]) - (l2[1] - l1[1]) * (p[0] - l1[0]))
    return area2 / dist(l1, l2)


def rotate_so_x(points, a, b):
    """Rotate points so that a→b points along +x."""
    t = -math.atan2(b[1] - a[1], b[0] - a[0])
    c, s = math.cos(t), math.sin(t)
    return [(c * x - s * y, s * x + c * y) for x, y in points]


def plus(p, u):
    return (p[0] + u[0], p[1] + u[1])


def expected_lateral(L):
    e = {}
    S, N, A, B, Pog, Me, Gn, Go = (L[k] for k in ("S", "N", "A", "B", "Pog", "Me", "Gn", "Go"))
    Or, Po, ANS, PNS, Ar, Co, Ba, Pt = (
        L[k] for k in ("Or", "Po", "ANS", "PNS", "Ar", "Co", "Ba", "Pt")
    )
    U1t, U1a, U1l = L["U1_tip"], L["U1_apex"], L["U1_labial"]
    L1t, L1a, L1l = L["L1_tip"], L["L1_apex"], L["L1_labial"]
    M6 = mid(L["U6_cusp"], L["L6_cusp"])
    P4 = mid(L["U4_cusp"], L["L4_cusp"])
    Inc = mid(U1t, L1t)
    e["SNA"] = angle_at(S, N, A)
    e["SNB"] = angle_at(S, N, B)
    e["ANB"] = e["SNA"] - e["SNB"]
    e["SN_GoGn"] = acute(angle(vec(S, N), vec(Go, Gn)))
    r = rotate_so_x([S, N, M6, P4], S, N)
    e["OP_SN"] = acute(angle(vec(S, N), vec(M6, P4))) * (1 if r[3][1] < r[2][1] else -1)
    e["U1_NA_deg"] = angle(vec(U1a, U1t), vec(N, A)) * (
        1 if anterior_of(U1t, U1a, plus(U1a, vec(N, A))) else -1
    )
    e["U1_NA_mm"] = perp(U1l, N, A) * (1 if anterior_of(U1l, N, A) else -1)
    e["L1_NB_deg"] = angle(vec(L1a, L1t), vec(B, N)) * (
        1 if anterior_of(L1t, L1a, plus(L1a, vec(B, N))) else -1
    )
    e["L1_NB_mm"] = perp(L1l, N, B) * (1 if anterior_of(L1l, N, B) else -1)
    e["Pog_NB"] = perp(Pog, N, B) * (1 if anterior_of(Pog, N, B) else -1)
    e["interincisal"] = angle(vec(U1t, U1a), vec(L1t, L1a))
    e["U1_SN"] = angle(vec(U1t, U1a), vec(S, N))
    e["facial_angle"] = angle(vec(Or, Po), vec(N, Pog))
    e["convexity_angle"] = (180 - angle_at(N, A, Pog)) * (1 if anterior_of(A, N, Pog) else -1)
    e["AB_plane"] = acute(angle(vec(A, B), vec(N, Pog))) * (
        1 if anterior_of(B, A, plus(A, vec(N, Pog))) else -1
    )
    e["Y_axis"] = angle(vec(Po, Or), vec(S, Gn))
    r = rotate_so_x([Po, Or, M6, Inc], Po, Or)
    e["OP_FH"] = acute(angle(vec(Po, Or), vec(M6, Inc))) * (1 if r[3][1] < r[2][1] else -1)
    e["FH_SN"] = acute(angle(vec(Po, Or), vec(S, N)))
    e["SN_MP"] = acute(angle(vec(S, N), vec(Go, Me)))
    e["FMA"] = acute(angle(vec(Po, Or), vec(Go, Me)))
    e["IMPA"] = angle(vec(L1a, L1t), vec(Me, Go))
    e["FMIA"] = angle(vec(L1t, L1a), vec(Or, Po))
    d = vec(M6, P4)
    ux = (d[0] / length(d), d[1] / length(d))
    ao = (A[0] - M6[0]) * ux[0] + (A[1] - M6[1]) * ux[1]
    bo = (B[0] - M6[0]) * ux[0] + (B[1] - M6[1]) * ux[1]
    e["Wits"] = ao - bo
    e["Co_A"] = dist(Co, A)
    e["Co_Gn"] = dist(Co, Gn)
    e["MMD"] = e["Co_Gn"] - e["Co_A"]
    f = vec(Po, Or)
    fx = (f[0] / length(f), f[1] / length(f))
    e["A_Nperp"] = (A[0] - N[0]) * fx[0] + (A[1] - N[1]) * fx[1]
    e["Pog_Nperp"] = (Pog[0] - N[0]) * fx[0] + (Pog[1] - N[1]) * fx[1]
    e["ANS_Me"] = dist(ANS, Me)
    e["N_ANS"] = dist(N, ANS)
    e["N_Me"] = dist(N, Me)
    e["S_Go"] = dist(S, Go)
    e["S_N"] = dist(S, N)
    e["Jarabak_ratio"] = 100 * e["S_Go"] / e["N_Me"]
    e["saddle_angle"] = angle_at(N, S, Ar)
    e["articular_angle"] = angle_at(S, Ar, Go)
    e["gonial_angle"] = angle_at(Ar, Go, Me)
    e["Bjork_sum"] = e["saddle_angle"] + e["articular_angle"] + e["gonial_angle"]
    e["facial_axis"] = angle(vec(N, Ba), vec(Pt, Gn))
    e["convexity_A_NPog"] = perp(A, N, Pog) * (1 if anterior_of(A, N, Pog) else -1)
    e["L1_APog_mm"] = perp(L1t, A, Pog) * (1 if anterior_of(L1t, A, Pog) else -1)
    e["lower_facial_height_angle"] = angle_at(ANS, L["Xi"], L["Pm"])
    e["AB_MP"] = angle(vec(B, A), vec(Me, Go))
    r = rotate_so_x([Po, Or, PNS, ANS], Po, Or)
    e["PP_FH"] = acute(angle(vec(Po, Or), vec(PNS, ANS))) * (1 if r[3][1] < r[2][1] else -1)
    e["ODI"] = e["AB_MP"] + e["PP_FH"]
    e["APDI"] = e["facial_angle"] + e["AB_plane"] + e["PP_FH"]
    Prn, Pogs = L["Prn"], L["Pog'"]
    e["E_line_upper_lip"] = perp(L["Ls"], Prn, Pogs) * (
        1 if anterior_of(L["Ls"], Prn, Pogs) else -1
    )
    e["E_line_lower_lip"] = perp(L["Li"], Prn, Pogs) * (
        1 if anterior_of(L["Li"], Prn, Pogs) else -1
    )
    e["nasolabial_angle"] = angle_at(L["Cm"], L["Sn"], L["Ls"])
    e["H_angle"] = angle(vec(Pogs, L["Ls"]), vec(B, N))
    e["soft_convexity_angle"] = (180 - angle_at(L["G'"], L["Sn"], Pogs)) * (
        1 if anterior_of(L["Sn"], L["G'"], Pogs) else -1
    )
    return e


def expected_frontal(F):
    e = {}
    e["nasal_width"] = 27.0
    e["maxillary_width"] = 63.0
    e["mandibular_width"] = math.hypot(91.0, 2.0)
    e["bizygomatic_width"] = 130.0
    e["upper_molar_width"] = 56.0
    e["lower_molar_width"] = 54.0
    e["mx_md_width_difference"] = math.hypot(91.0, 2.0) - 63.0
    # J medial to Z-Ag: towards +x on the right side, towards -x on the left side
    jr, zr, agr = F["J_R"], F["Z_R"], F["Ag_R"]
    jl, zl, agl = F["J_L"], F["Z_L"], F["Ag_L"]
    e["J_to_frontal_line_R"] = perp(jr, zr, agr) * (1 if jr[0] > x_on_line(zr, agr, jr[1]) else -1)
    e["J_to_frontal_line_L"] = perp(jl, zl, agl) * (1 if jl[0] < x_on_line(zl, agl, jl[1]) else -1)
    # Z_R-Z_L is horizontal through y=-5, Cg at x=0: the midsagittal reference is x=0
    e["ANS_midline_dev"] = 1.0
    e["UDM_midline_dev"] = 1.5
    e["LDM_midline_dev"] = 2.5
    e["Me_midline_dev"] = 2.0
    e["ramus_height_R"] = math.sqrt(7**2 + 70**2)
    e["ramus_height_L"] = math.sqrt(7**2 + 71**2)
    e["body_length_R"] = math.sqrt(47**2 + 15**2)
    e["body_length_L"] = math.sqrt(44**2 + 13**2)
    r, l_ = e["ramus_height_R"], e["ramus_height_L"]
    e["ramus_asymmetry"] = 100 * (r - l_) / (r + l_)
    r, l_ = e["body_length_R"], e["body_length_L"]
    e["body_asymmetry"] = 100 * (r - l_) / (r + l_)
    # Ag_R -> Ag_L drops 2 mm over 91 mm toward the patient's left: negative cant
    e["Ag_plane_cant"] = math.degrees(math.atan2(-2.0, 91.0))
    e["U6_plane_cant"] = 0.0
    return e


LAT_EXPECTED = expected_lateral(LATERAL)
FRO_EXPECTED = expected_frontal(FRONTAL)


def test_every_catalogue_measure_has_an_expected_value():
    ids = set(load_measures()["id"])
    assert ids == set(LAT_EXPECTED) | set(FRO_EXPECTED)


def _measured(table, mm_per_px):
    out = measure(table, mm_per_px=mm_per_px, errors="raise")
    return dict(zip(out["measure"].astype(str), out["value"], strict=True))


@pytest.mark.parametrize(
    ("mirror", "angle_deg"), [(False, 0.0), (True, 0.0), (False, 23.0), (True, -140.0)]
)
def test_lateral_measures_match_independent_geometry(mirror, angle_deg):
    table = image_table(LATERAL, px_per_mm=PX_PER_MM, mirror=mirror, angle_deg=angle_deg)
    got = _measured(table, 1 / PX_PER_MM)
    assert set(got) == set(LAT_EXPECTED)
    for mid, want in LAT_EXPECTED.items():
        assert got[mid] == pytest.approx(want, abs=1e-9), mid


@pytest.mark.parametrize(("mirror", "angle_deg"), [(False, 0.0), (True, 0.0), (False, 200.0)])
def test_frontal_measures_match_independent_geometry(mirror, angle_deg):
    table = image_table(
        FRONTAL, view="frontal", px_per_mm=PX_PER_MM, mirror=mirror, angle_deg=angle_deg
    )
    got = _measured(table, 1 / PX_PER_MM)
    assert set(got) == set(FRO_EXPECTED)
    for mid, want in FRO_EXPECTED.items():
        assert got[mid] == pytest.approx(want, abs=1e-9), mid


def test_fixture_profile_is_clinically_plausible():
    """Guards the fixture itself: values in the ranges an orthodontist would expect."""
    e = LAT_EXPECTED
    assert 75 < e["SNA"] < 90
    assert 70 < e["SNB"] < 85
    assert 110 < e["gonial_angle"] < 140
    assert 380 < e["Bjork_sum"] < 410
    assert 80 < e["IMPA"] < 110
    assert 100 < e["interincisal"] < 150
    assert e["E_line_upper_lip"] < 0  # lips behind the E-line
    assert e["E_line_lower_lip"] < 0
    assert e["AB_plane"] < 0  # B behind A
    # Tweed's triangle: FH, the mandibular plane and the L1 axis bound one triangle
    assert e["FMA"] + e["IMPA"] + e["FMIA"] == pytest.approx(180.0, abs=1e-9)
