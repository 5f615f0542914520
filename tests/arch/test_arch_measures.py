"""Arch dimensions against hand-computed geometry (circle, parabola, catenary, beta)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy.integrate import quad

from dentalkit import arch
from dentalkit.errors import InputError

from .helpers import arch_table, beta_canonical, catenary, place

FDI = {"i1_rgt": 1, "i1_lft": 1, "c_rgt": 3, "c_lft": 3, "m1_rgt": 6, "m1_lft": 6}


def teeth_table(
    canon,
    *,
    theta=0.0,
    t=(0, 0),
    mirror=False,
    arch_="up",
    patient="p1",
    missing=(),
    point="centroid",
):
    """tooth_keypoints rows for teeth given in canonical coordinates (+x = patient's left)."""
    names = list(canon)
    p = place(np.array([canon[n] for n in names]), theta, t, mirror)
    return pd.DataFrame(
        {
            "patient_id": patient,
            "timestamp": "2024-01-01",
            "arch": arch_,
            "tooth": [f"{n}_{arch_}" for n in names],
            "fdi": [FDI[n] for n in names],
            "missing": [n in missing for n in names],
            "point": point,
            "x": np.where([n in missing for n in names], 0.0, p[:, 0]),
            "y": np.where([n in missing for n in names], 0.0, p[:, 1]),
        }
    )


def on_circle(R, angles):
    """Points on a circle through the origin, centre (0, R): angle φ from the incisal point."""
    return {n: (R * np.sin(a), R - R * np.cos(a)) for n, a in angles.items()}


ANGLES = {
    "i1_rgt": -0.08,
    "i1_lft": 0.08,
    "c_rgt": -0.6,
    "c_lft": 0.6,
    "m1_rgt": -1.3,
    "m1_lft": 1.3,
}


def value(m, measure, arch_="up", patient="p1"):
    row = m[(m["measure"] == measure) & (m["arch"] == arch_) & (m["patient_id"] == patient)]
    assert len(row) == 1
    return row.iloc[0]


@pytest.mark.parametrize("mirror", [False, True])
def test_widths_and_depth_of_teeth_on_a_circle(mirror):
    R = 250.0
    tk = teeth_table(on_circle(R, ANGLES), theta=0.9, t=(400, 300), mirror=mirror)
    m = arch.measure(tk, mm_per_px=0.1)
    assert value(m, "intercanine_width")["value"] == pytest.approx(
        0.1 * 2 * R * np.sin(0.6), rel=1e-12
    )
    assert value(m, "intermolar_width")["value"] == pytest.approx(
        0.1 * 2 * R * np.sin(1.3), rel=1e-12
    )
    depth = R * (np.cos(0.08) - np.cos(1.3))
    assert value(m, "arch_depth")["value"] == pytest.approx(0.1 * depth, rel=1e-12)
    assert set(m["unit"]) == {"mm"}
    per = value(m, "arch_perimeter")
    assert per["status"] == "no_fit"
    assert "no arch_points" in per["reason"]
    assert np.isnan(per["value"])


def test_pixels_without_calibration():
    tk = teeth_table(on_circle(100.0, ANGLES))
    m = arch.measure(tk)
    assert set(m["unit"]) == {"px"}
    assert value(m, "intercanine_width")["value"] == pytest.approx(200 * np.sin(0.6))


def test_perimeter_along_a_parabola_has_the_closed_form_length():
    c, xm = 0.004, 180.0
    x = np.linspace(-230, 230, 19)
    pts = arch_table(x, c * x**2, theta=-0.4, t=(500, 500))
    canon = {
        "m1_rgt": (-xm, c * xm**2),
        "m1_lft": (xm, c * xm**2),
        "c_rgt": (-90, c * 8100),
        "c_lft": (90, c * 8100),
    }
    tk = teeth_table(canon, theta=-0.4, t=(500, 500))
    m = arch.measure(tk, pts, model="parabola", incisal="vertex")
    u = 2 * c * xm
    closed = 2 * (u * np.sqrt(1 + u * u) + np.arcsinh(u)) / (4 * c)  # 2·∫0^xm √(1+(2cx)²) dx
    per = value(m, "arch_perimeter")
    assert per["status"] == "ok"
    assert per["value"] == pytest.approx(closed, rel=1e-10)
    assert "parabola fit" in per["method"]
    # depth from the fitted vertex to the molar line: c·xm²
    assert value(m, "arch_depth")["value"] == pytest.approx(c * xm**2, rel=1e-9)


def test_perimeter_along_a_catenary_is_2a_sinh():
    a, xm = 160.0, 200.0
    x = np.linspace(-240, 240, 17)
    pts = arch_table(x, catenary(x, a), theta=2.5, t=(900, 200), mirror=True, arch="lo")
    canon = {"m1_rgt": (-xm, catenary(xm, a)), "m1_lft": (xm, catenary(xm, a))}
    tk = teeth_table(canon, theta=2.5, t=(900, 200), mirror=True, arch_="lo")
    m = arch.measure(tk, pts, mm_per_px=0.05, model="catenary")
    per = value(m, "arch_perimeter", arch_="lo")
    assert per["value"] == pytest.approx(0.05 * 2 * a * np.sinh(xm / a), rel=1e-10)


def test_perimeter_along_a_beta_curve_matches_scipy_quad():
    D, W, xm = 250.0, 520.0, 200.0
    x = np.linspace(-250, 250, 21)
    pts = arch_table(x, beta_canonical(x, D, W), theta=0.2, t=(0, 0))
    canon = {"m1_rgt": (-xm, beta_canonical(xm, D, W)), "m1_lft": (xm, beta_canonical(xm, D, W))}
    tk = teeth_table(canon, theta=0.2)
    m = arch.measure(tk, pts, model="beta")

    def slope(u):
        return 3.031433133 * D * 0.8 * (0.25 - u**2 / W**2) ** -0.2 * 2 * u / W**2

    ref, _ = quad(lambda u: np.sqrt(1 + slope(u) ** 2), -xm, xm, epsabs=1e-12, epsrel=1e-12)
    assert value(m, "arch_perimeter")["value"] == pytest.approx(ref, rel=1e-8)


def test_missing_and_absent_teeth_give_nan_and_a_reason():
    canon = on_circle(200.0, ANGLES)
    tk = teeth_table(canon, missing=("c_lft",))
    tk = tk[tk["tooth"] != "m1_rgt_up"]
    m = arch.measure(tk)
    ic = value(m, "intercanine_width")
    assert np.isnan(ic["value"])
    assert ic["status"] == "missing_tooth"
    assert ic["reason"] == "c_lft_up is marked missing"
    im = value(m, "intermolar_width")
    assert im["status"] == "missing_tooth"
    assert "m1_rgt_up has no centroid row" in im["reason"]
    assert value(m, "arch_depth")["status"] == "missing_tooth"


def test_upper_minus_lower_compatibility_needs_mm():
    up = teeth_table(on_circle(260.0, ANGLES), arch_="up", theta=0.3)
    lo = teeth_table(on_circle(230.0, ANGLES), arch_="lo", theta=-2.0, t=(50, 80))
    lone = teeth_table(on_circle(230.0, ANGLES), arch_="up", patient="only_upper")
    tk = pd.concat([up, lo, lone], ignore_index=True)
    cal = pd.DataFrame(
        {
            "patient_id": ["p1", "p1", "only_upper"],
            "timestamp": "2024-01-01",
            "arch": ["up", "lo", "up"],
            "mm_per_px": [0.1, 0.12, 0.1],
        }
    )
    m = arch.measure(tk, mm_per_px=cal)
    d = value(m, "intermolar_width_difference", arch_="up-lo")
    assert d["value"] == pytest.approx(
        0.1 * 2 * 260 * np.sin(1.3) - 0.12 * 2 * 230 * np.sin(1.3), rel=1e-12
    )
    d = value(m, "intercanine_width_difference", arch_="up-lo")
    assert d["value"] == pytest.approx(
        0.1 * 2 * 260 * np.sin(0.6) - 0.12 * 2 * 230 * np.sin(0.6), rel=1e-12
    )
    assert not ((m["patient_id"] == "only_upper") & (m["arch"] == "up-lo")).any()
    px = arch.measure(tk)
    d = value(px, "intermolar_width_difference", arch_="up-lo")
    assert d["status"] == "needs_mm"
    assert np.isnan(d["value"])


def test_other_tooth_points_and_their_rows():
    canon = on_circle(200.0, ANGLES)
    cen = teeth_table(canon)
    t01 = teeth_table({k: (x * 0.9, y) for k, (x, y) in canon.items()}, point="t01")
    tk = pd.concat([cen, t01], ignore_index=True)
    m = arch.measure(tk, point="t01")
    assert value(m, "intercanine_width")["value"] == pytest.approx(0.9 * 400 * np.sin(0.6))
    assert value(m, "intercanine_width")["method"] == "t01"


def test_perimeter_problems_are_rows():
    x = np.linspace(-100, 100, 11)
    pts = arch_table(x, 0.01 * x**2)
    far = {"m1_rgt": (-300.0, 900.0), "m1_lft": (300.0, 900.0)}
    m = arch.measure(teeth_table(far), pts, model="parabola")
    per = value(m, "arch_perimeter")
    assert per["status"] == "out_of_domain"
    assert "extrapolated" in per["reason"]
    few = arch_table(x[:3], 0.01 * x[:3] ** 2)
    m = arch.measure(teeth_table(far), few)
    per = value(m, "arch_perimeter")
    assert per["status"] == "no_fit"
    assert "poly4 fit failed" in per["reason"]


def test_bad_input():
    tk = teeth_table(on_circle(200.0, ANGLES))
    with pytest.raises(InputError, match="lacks column"):
        arch.measure(tk.drop(columns="tooth"))
    with pytest.raises(InputError, match="incisal must be"):
        arch.measure(tk, incisal="midpoint")
    with pytest.raises(InputError, match="unknown arch model"):
        arch.measure(tk, model="ellipse")
    nan = tk.copy()
    nan.loc[2, "x"] = np.nan
    with pytest.raises(
        InputError, match=r"row 2 \(0-based position\), x='nan': non-finite x/y of present tooth"
    ):
        arch.measure(nan)
    got = value(arch.measure(nan, errors="collect"), "intercanine_width")
    assert got["status"] == "bad_input"
    dup = pd.concat([tk, tk.iloc[[0]]], ignore_index=True)
    with pytest.raises(InputError, match="repeats a tooth point"):
        arch.measure(dup)


def test_registry_and_table_shape():
    assert list(arch.MEASURES) == [
        "intercanine_width",
        "intermolar_width",
        "arch_depth",
        "arch_perimeter",
        "intercanine_width_difference",
        "intermolar_width_difference",
    ]
    for ms in arch.MEASURES.values():
        assert ms.definition
        assert ms.reference
    m = arch.measure(teeth_table(on_circle(200.0, ANGLES)))
    assert list(m["measure"]) == list(arch.MEASURES)[:4]
    for col in ("arch", "measure", "unit", "status"):
        assert isinstance(m[col].dtype, pd.CategoricalDtype)
    assert m["value"].dtype == np.float64


def test_measures_are_declared_once_and_evaluated_from_the_registry():
    # every per-arch measure carries its compute function; differences name their base
    for ms in arch.MEASURES.values():
        assert ms.unit == "px or mm" and ms.dimension == 1
        if ms.kind == "difference":
            assert ms.compute is None and ms.base in arch.MEASURES
        else:
            assert callable(ms.compute) and ms.base is None
    tk = teeth_table(on_circle(200.0, ANGLES))
    lo = teeth_table(on_circle(180.0, ANGLES), arch_="lo")
    both = pd.concat([tk, lo], ignore_index=True)
    # a selection evaluates just those declared measures (a difference pulls in its base
    # without reporting it)
    m = arch.measure(both, mm_per_px=0.1, which=["intermolar_width_difference"])
    assert list(m["measure"].astype(str)) == ["intermolar_width_difference"]
    full = arch.measure(both, mm_per_px=0.1)
    want = full.loc[full["measure"] == "intermolar_width_difference", "value"].iloc[0]
    assert m["value"].iloc[0] == pytest.approx(want)
    # hand value: 0.1 mm/px × (2·200·sin 1.3 − 2·180·sin 1.3)
    assert want == pytest.approx(0.1 * 40.0 * np.sin(1.3), rel=1e-12)
    with pytest.raises(InputError, match="unknown arch measure"):
        arch.measure(tk, which=["palatal_depth"])


def test_bad_tooth_points_are_also_rows_of_the_problems_table():
    """arch.measure's bad_input status rows stay as they were; arch.problems(result) lists
    the offending tooth_keypoints rows (positions, the caller's labels, field, value) and
    the arch_points rows behind a perimeter, as for arch.fit; raise carries the same rows."""
    tk = pd.concat(
        [
            teeth_table(on_circle(200.0, ANGLES)),
            teeth_table(on_circle(200.0, ANGLES), patient="p2"),
        ],
        ignore_index=True,
    )
    tk.index = [f"r{i}" for i in range(len(tk))]
    c_lft = int(np.flatnonzero((tk["tooth"] == "c_lft_up") & (tk["patient_id"] == "p2"))[0])
    bad = tk.copy()
    bad.iloc[c_lft, bad.columns.get_loc("y")] = np.inf
    clean = arch.measure(tk, mm_per_px=0.1, errors="collect")
    assert arch.problems(clean).empty
    got = arch.measure(bad, mm_per_px=0.1, errors="collect")
    # the status rows are unchanged: p2's intercanine width is bad_input, p1's is untouched
    assert value(got, "intercanine_width", patient="p2")["status"] == "bad_input"
    assert "c_lft_up has non-finite x/y" in value(got, "intercanine_width", patient="p2")["reason"]
    pd.testing.assert_frame_equal(
        got[got["patient_id"] == "p1"], clean[clean["patient_id"] == "p1"]
    )
    table = arch.problems(got)
    assert table[
        ["table", "patient_id", "row", "field", "value", "arch", "index_label"]
    ].to_numpy().tolist() == [["tooth_keypoints", "p2", c_lft, "y", "inf", "up", f"r{c_lft}"]]
    with pytest.raises(
        InputError,
        match=rf"patient 'p2', .*row {c_lft} \(0-based position, index 'r{c_lft}'\), y='inf'",
    ) as info:
        arch.measure(bad, mm_per_px=0.1)
    pd.testing.assert_frame_equal(info.value.problems, table)
    # a bad arch point behind the perimeter is listed too, as arch.fit lists it
    x = np.linspace(-25.0, 25.0, 9)
    pts = arch_table(x, 0.02 * x**2)
    pts.loc[3, "x"] = np.nan
    got = arch.measure(tk, pts, mm_per_px=0.1, which=["arch_perimeter"], errors="collect")
    rows = arch.problems(got)
    assert rows[["table", "row", "field"]].to_numpy().tolist() == [["arch_points", 3, "x"]]
