"""Noise-free responses reproduce the ground truth, recomputed independently.

Every measure here is computed with plain numpy / math / shapely in this file
from the *returned coordinates* (names via the shipped landmark-map CSV read
with ``csv``), never with the simulator's helpers, and compared with
``truth()``.
"""

import csv
import math
from pathlib import Path

import numpy as np
import pytest
import shapely

from dentalkit.endpoints import get_endpoint
from dentalkit.sandbox.simulate import respond, truth

DATA = Path(__file__).resolve().parents[2] / "dentalkit" / "data"
PATIENTS = [f"R{i:03d}" for i in range(16)]
TS = "2024-09-15"


def _names(view):
    with open(DATA / f"landmark_map_{view}.csv", newline="") as fh:
        return {row["key"]: row["name"] for row in csv.DictReader(fh)}


LATERAL = _names("lateral")
FRONTAL = _names("frontal")


def _req(pid, ts=TS, url="https://clinic.example/img.png"):
    return {"PatientID": pid, "TimeStamp": ts, "ImageName": url}


def _points(slug, pid, names, ts=TS, noise=False):
    body = respond(get_endpoint(slug), _req(pid, ts), noise=noise)
    return {
        names[k]: np.array([v["x_coordinate"], v["y_coordinate"]])
        for k, v in body["Results"].items()
    }


def ang(u, v):
    """Unsigned angle between vectors, degrees."""
    c = np.dot(u, v) / (np.linalg.norm(u) * np.linalg.norm(v))
    return math.degrees(math.acos(max(-1.0, min(1.0, c))))


def line_ang(u, v):
    """Acute angle between two lines, degrees."""
    a = ang(u, v)
    return min(a, 180.0 - a)


def lateral_measures(P, mm):
    d = lambda a, b: float(np.linalg.norm(P[a] - P[b])) * mm  # noqa: E731
    sna = ang(P["S"] - P["N"], P["A"] - P["N"])
    snb = ang(P["S"] - P["N"], P["B"] - P["N"])
    return {
        "SNA": sna,
        "SNB": snb,
        "ANB": sna - snb,
        "SN_MP": line_ang(P["N"] - P["S"], P["Me"] - P["Go"]),
        "FH_SN": line_ang(P["Or"] - P["Po"], P["N"] - P["S"]),
        "FMA": line_ang(P["Or"] - P["Po"], P["Me"] - P["Go"]),
        "IMPA": ang(P["L1_tip"] - P["L1_apex"], P["Go"] - P["Me"]),
        "FMIA": ang(P["L1_apex"] - P["L1_tip"], P["Po"] - P["Or"]),
        "U1_SN": ang(P["U1_apex"] - P["U1_tip"], P["N"] - P["S"]),
        "gonial_angle": ang(P["Ar"] - P["Go"], P["Me"] - P["Go"]),
        "saddle_angle": ang(P["N"] - P["S"], P["Ar"] - P["S"]),
        "articular_angle": ang(P["S"] - P["Ar"], P["Go"] - P["Ar"]),
        "S_N": d("S", "N"),
        "N_Me": d("N", "Me"),
        "N_ANS": d("N", "ANS"),
        "ANS_Me": d("ANS", "Me"),
        "S_Go": d("S", "Go"),
    }


@pytest.mark.parametrize("pid", PATIENTS)
def test_lateral_measures_recovered_exactly(pid):
    t = truth(pid, TS)["ceph_lateral"]
    P = _points("ceph-lateral-points", pid, LATERAL)
    got = lateral_measures(P, t["mm_per_px"])
    for name, value in got.items():
        assert value == pytest.approx(t[name], abs=1e-6), name
    # Tweed triangle and the Björk sum hold in the construction
    assert got["FMA"] + got["IMPA"] + got["FMIA"] == pytest.approx(180.0, abs=1e-6)
    assert got["saddle_angle"] + got["articular_angle"] + got["gonial_angle"] == pytest.approx(
        360.0 + got["SN_MP"], abs=1e-6
    )


def test_profiles_face_both_ways_and_facing_is_reported():
    facings = set()
    for pid in [f"F{i}" for i in range(25)]:
        t = truth(pid, TS)["ceph_lateral"]
        P = _points("ceph-lateral-points", pid, LATERAL)
        # the face looks towards +x in the image when N is anterior (right) of S
        facing = "right" if (P["N"] - P["S"])[0] > 0 else "left"
        assert facing == t["facing"]
        facings.add(facing)
    assert facings == {"left", "right"}


FRONTAL_PAIRS = {
    "NC": "nasal_width_NC",
    "J": "maxillary_width_J",
    "Ag": "mandibular_width_Ag",
    "ZA": "bizygomatic_width_ZA",
    "U6": "upper_intermolar_width_U6",
    "L6": "lower_intermolar_width_L6",
}


@pytest.mark.parametrize("pid", PATIENTS[:8])
def test_frontal_widths_and_midline_deviations(pid):
    t = truth(pid, TS)["ceph_frontal"]
    P = _points("ceph-frontal-points", pid, FRONTAL)
    mm = t["mm_per_px"]
    for pair, name in FRONTAL_PAIRS.items():
        width = np.linalg.norm(P[f"{pair}_L"] - P[f"{pair}_R"]) * mm
        assert width == pytest.approx(t[name], abs=1e-6), name
        # patient's right appears on the image's left on a PA film (small tilt only)
        assert P[f"{pair}_R"][0] < P[f"{pair}_L"][0]
    axis = P["ANS"] - P["Cg"]
    for point in ("UDM", "LDM", "Me"):
        v = P[point] - P["Cg"]
        cross = axis[0] * v[1] - axis[1] * v[0]
        # y points down: a point to the image's right (patient's left) has cross < 0
        deviation = -cross / np.linalg.norm(axis) * mm
        assert deviation == pytest.approx(t[f"midline_deviation_{point}"], abs=1e-6)


def _inverse(tr, px):
    """Pixels → arch mm, from the reported transform (own implementation)."""
    th = math.radians(tr["rotation_deg"])
    rot = np.array([[math.cos(th), -math.sin(th)], [math.sin(th), math.cos(th)]])
    lin = rot @ np.diag(tr["flip"]).astype(float) / tr["mm_per_px"]
    return (np.asarray(px) - tr["translation_px"]) @ np.linalg.inv(lin).T


@pytest.mark.parametrize("pid", PATIENTS[:8])
@pytest.mark.parametrize("arch", ["up", "lo"])
def test_arch_widths_depth_and_catenary(pid, arch):
    t = truth(pid, TS)["arch"][arch]
    slug = "occlusogram-upper-points" if arch == "up" else "occlusogram-lower-points"
    body = respond(get_endpoint(slug), _req(pid), noise=False)
    teeth, mm = body["Teeth"], t["mm_per_px"]
    c = lambda k: np.array(teeth[f"{k}_{arch}"]["centroid"])  # noqa: E731
    assert np.linalg.norm(c("c_lft") - c("c_rgt")) * mm == pytest.approx(
        t["intercanine_width_mm"], abs=1e-6
    )
    m_r, m_l = c("m1_rgt"), c("m1_lft")
    assert np.linalg.norm(m_l - m_r) * mm == pytest.approx(t["intermolar_width_mm"], abs=1e-6)
    origin = np.asarray(t["transform"]["translation_px"])  # the incisal point
    dm = m_l - m_r
    depth = abs(dm[0] * (origin - m_r)[1] - dm[1] * (origin - m_r)[0]) / np.linalg.norm(dm)
    assert depth * mm == pytest.approx(t["depth_mm"], abs=1e-6)
    # catenary points on y = a (cosh(x/a) - 1) after inverting the transform
    a = t["catenary_a_mm"]
    assert a == pytest.approx(t["catenary_a_px"] * mm, rel=1e-12)
    pts = _inverse(t["transform"], list(body["CatenaryPoints"].values()))
    np.testing.assert_allclose(pts[:, 1], a * (np.cosh(pts[:, 0] / a) - 1.0), atol=1e-9)
    # molar to molar, FDI keys, from the patient's right to the left
    keys = list(body["CatenaryPoints"])
    q = (1, 2) if arch == "up" else (4, 3)
    assert keys[0] == f"t{q[0]}7"
    assert keys[-1] == f"t{q[1]}7"
    assert len(keys) == 14
    assert np.all(np.diff(pts[:, 0]) > 0)  # patient's right (x < 0) to left


@pytest.mark.parametrize("pid", PATIENTS[:6])
@pytest.mark.parametrize(
    ("slug", "source", "dims"),
    [
        ("occlusogram-upper-seg", "occlusogram_upper", ("md_mm", "bl_mm")),
        ("occlusogram-lower-seg", "occlusogram_lower", ("md_mm", "bl_mm")),
        ("pano-segmentation", "pano", ("md_mm", "length_mm")),
        ("frontal-segmentation", "frontal", ("width_mm", "height_mm")),
    ],
)
def test_tooth_outlines_extents_and_areas(pid, slug, source, dims):
    t = truth(pid, TS)["teeth"][source]
    mm = t["mm_per_px"]
    results = respond(get_endpoint(slug), _req(pid), noise=False)["Results"]
    assert set(results) == set(t["teeth"])
    polys = {}
    for key, rec in results.items():
        truth_tooth = t["teeth"][key]
        assert rec["missing"] is truth_tooth["missing"]
        if rec["missing"]:
            assert rec["points"] == [[0, 0]]
            continue
        poly = shapely.Polygon(rec["points"])
        assert poly.is_valid
        assert poly.area * mm**2 == pytest.approx(truth_tooth["area_mm2"], rel=1e-9)
        assert poly.area == pytest.approx(truth_tooth["area_px2"], rel=1e-9)
        rect = np.asarray(shapely.minimum_rotated_rectangle(poly).exterior.coords)[:4]
        sides = sorted(np.linalg.norm(np.diff(np.vstack([rect, rect[:1]]), axis=0), axis=1)[:2])
        expected = sorted(truth_tooth[d] for d in dims)
        np.testing.assert_allclose(np.array(sides) * mm, expected, atol=1e-6)
        polys[key] = poly
    # no two teeth of one view overlap
    geoms = list(polys.values())
    tree = shapely.STRtree(geoms)
    for i, j in zip(*tree.query(geoms, predicate="intersects"), strict=True):
        if i < j:
            assert geoms[i].intersection(geoms[j]).area < 1e-9


def _patient_with_missing(prefix="M"):
    for i in range(400):
        t = truth(f"{prefix}{i}", TS)
        missing = [k for k in t["patient"]["missing_teeth"] if k.endswith("_up")]
        if missing:
            return f"{prefix}{i}", missing
    raise AssertionError("no patient with a missing upper tooth in 400")


def test_missing_tooth_quirks():
    pid, missing = _patient_with_missing()
    seg = respond(get_endpoint("occlusogram-upper-seg"), _req(pid))["Results"]
    pts = respond(get_endpoint("occlusogram-upper-points"), _req(pid))["Teeth"]
    pano = respond(get_endpoint("pano-segmentation"), _req(pid))["Results"]
    for key in missing:
        assert seg[key] == {"missing": True, "points": [[0, 0]]}
        assert pano[key] == {"missing": True, "points": [[0, 0]]}
        assert pts[key]["missing"] is True
        assert set(pts[key]) == {"missing", "centroid"}
        assert len(pts[key]["centroid"]) == 2
    present = [k for k in seg if k not in missing]
    assert all(seg[k]["missing"] is False and len(seg[k]["points"]) >= 24 for k in present)
    assert all({"t01", "t02", "t03"} <= set(pts[k]) for k in present)


def test_all_eight_tooth_prefixes_are_emitted():
    seg = respond(get_endpoint("pano-segmentation"), _req("P8"))["Results"]
    assert {k.split("_")[0] for k in seg} == {"i1", "i2", "c", "p1", "p2", "m1", "m2", "m3"}
    assert len(seg) == 32


def test_findings_counts_match_results_and_truth():
    ep = get_endpoint("clinical-images")
    seen_empty_pano = seen_pano = False
    for i in range(40):
        pid = f"C{i}"
        url = f"http://127.0.0.1:1/_sandbox/images/intraoral_left/{pid}/{TS}.png"
        body = respond(ep, _req(pid, url=url))
        t = truth(pid, TS)["findings"]
        counts = {k: len(v) for k, v in body["Results"].items()}
        assert {k: v for k, v in body["ImageContents"].items() if v} == counts
        assert body["ImageContents"] == t["clinical_counts"]["intraoral_left"]
        for name, dets in body["Results"].items():
            for d in dets:
                assert d["ClassName"] == name
                (x0, y0), (x1, y1) = d["TopLeft"], d["BottomRight"]
                assert 0 <= x0 < x1 < 1600
                assert 0 <= y0 < y1 < 1200
        pano = respond(get_endpoint("panos-findings"), _req(pid))["Results"]
        assert {k: len(v) for k, v in pano.items()} == t["pano_counts"]
        seen_empty_pano |= pano == {}
        seen_pano |= pano != {}
    assert seen_empty_pano
    assert seen_pano


def test_classifier_category_from_sandbox_kind_and_tmj_sentence():
    ep = get_endpoint("classifier")
    url = "http://127.0.0.1:1/_sandbox/images/pano/P1/2024-01-01.png"
    out = respond(ep, _req("P1", url=url))["Classification"]
    assert out["category"] == "panoramic"
    assert 0.0 < out["confidence"] < 1.0
    sentences = {
        respond(get_endpoint("tmj-xsectional"), _req(f"T{i}"))["Results"]["Finding"]
        for i in range(80)
    }
    assert "No findings were detected." in sentences
    assert any("condyle" in s for s in sentences)


def test_growth_between_sessions_a_year_apart():
    grew = 0
    for i in range(16):
        pid = f"G{i}"
        early = truth(pid, "2024-01-10")
        late = truth(pid, "2025-01-10")
        assert late["session"]["age_years"] - early["session"]["age_years"] == pytest.approx(
            366 / 365.25, abs=1e-9
        )
        a = _points("ceph-lateral-points", pid, LATERAL, ts="2024-01-10")
        b = _points("ceph-lateral-points", pid, LATERAL, ts="2025-01-10")
        mm = early["ceph_lateral"]["mm_per_px"]
        n_me_a = np.linalg.norm(a["N"] - a["Me"]) * mm
        n_me_b = np.linalg.norm(b["N"] - b["Me"]) * mm
        assert n_me_b >= n_me_a - 1e-9
        grew += n_me_b > n_me_a + 0.5
        # anatomy that does not grow stays the same across sessions
        assert early["patient"] == late["patient"]
    assert grew >= 8  # most patients are still growing


def test_unparseable_timestamp_uses_baseline_age():
    t = truth("U1", "visit three")
    assert t["session"]["parsed_time"] is None
    assert t["session"]["age_years"] == pytest.approx(t["patient"]["baseline_age_years"])
