"""The canonical arch frame: hand-built geometry, invertibility, invariance, sides, bad input."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dentalkit import arch
from dentalkit.errors import InputError

from .helpers import arch_table, place


def _angle_diff(a_deg, b_deg):
    return (np.asarray(a_deg) - np.asarray(b_deg) + 180.0) % 360.0 - 180.0


def expected_transform(theta, mirror):
    """Our convention q = R(θ')F(p − t) for points placed as p = t + R(θ)·M·q."""
    return (np.degrees(theta) if mirror else -np.degrees(theta)), mirror


@pytest.mark.parametrize("mirror", [False, True])
@pytest.mark.parametrize("theta", [0.0, 0.7, -2.9])
def test_symmetric_parabola_odd_count_recovers_the_placement_exactly(theta, mirror):
    x = np.linspace(-200, 200, 15)  # odd: the middle point is the incisal point
    y = 0.004 * x**2
    pts = arch_table(x, y, theta=theta, t=(512.0, 300.0), mirror=mirror)
    al = arch.align(pts)
    tr = al.transforms.iloc[0]
    rot, _ = expected_transform(theta, mirror)
    assert tr["status"] == "ok"
    assert abs(_angle_diff(tr["rotation_deg"], rot)) < 1e-9
    assert bool(tr["reflected"]) is mirror
    assert tr["tx"] == pytest.approx(512.0, abs=1e-9)
    assert tr["ty"] == pytest.approx(300.0, abs=1e-9)
    np.testing.assert_allclose(al.points["x_canonical"], x, atol=1e-9)
    np.testing.assert_allclose(al.points["y_canonical"], y, atol=1e-9)


def test_even_count_origin_is_the_chord_between_the_two_middle_points():
    x = np.linspace(-150, 150, 10)
    y = 0.01 * x**2
    pts = arch_table(x, y, theta=1.1, t=(10.0, -40.0))
    al = arch.align(pts)
    chord_y = 0.01 * x[4] ** 2  # the midline crosses the segment between x[4] and x[5] = -x[4]
    np.testing.assert_allclose(al.points["x_canonical"], x, atol=1e-9)
    np.testing.assert_allclose(al.points["y_canonical"], y - chord_y, atol=1e-9)


def test_opening_and_sides_follow_the_documented_convention():
    # image: arch opening toward image -y (up on screen), first point at image left
    x = np.linspace(-100, 100, 9)
    pts = pd.DataFrame(
        {
            "patient_id": "p",
            "timestamp": "t",
            "arch": "lo",
            "index": np.arange(9),
            "x": 300 + x,
            "y": 400 - 0.01 * x**2,
        }
    )
    al = arch.align(pts)
    q = al.points
    # molars posterior: +y; the first point (patient's right by default) at -x
    assert q["y_canonical"].iloc[0] == pytest.approx(100.0)
    assert q["x_canonical"].iloc[0] == pytest.approx(-100.0)
    assert al.transforms["side_source"].iloc[0] == "point_order"
    left = arch.align(pts, first_point_side="left").points
    assert left["x_canonical"].iloc[0] == pytest.approx(100.0)


def _teeth(pts_canon_side, theta, t, mirror, arch_="up"):
    """Tooth centroids: canine at x = ±80 (left = +x), in image coordinates."""
    q = np.array([[-80.0, 60.0], [80.0, 60.0]])
    p = place(q, theta, t, mirror)
    return pd.DataFrame(
        {
            "patient_id": "p1",
            "timestamp": "2024-01-01",
            "arch": arch_,
            "tooth": [f"c_rgt_{arch_}", f"c_lft_{arch_}"],
            "fdi": [13, 23],
            "missing": False,
            "point": "centroid",
            "x": p[:, 0],
            "y": p[:, 1],
        }
    )


def test_teeth_decide_the_side_over_the_point_order():
    x = np.linspace(-120, 120, 11)
    y = 0.005 * x**2
    # points numbered from the patient's LEFT this time (x decreasing)
    pts = arch_table(x[::-1], y[::-1], theta=0.3, t=(50, 60))
    teeth = _teeth(None, 0.3, (50, 60), False)
    by_order = arch.align(pts).points
    by_teeth = arch.align(pts, teeth)
    assert by_order["x_canonical"].iloc[0] == pytest.approx(-120.0)  # wrong side assumed
    assert by_teeth.points["x_canonical"].iloc[0] == pytest.approx(120.0)
    assert by_teeth.transforms["side_source"].iloc[0] == "teeth"


def test_missing_teeth_do_not_vote():
    x = np.linspace(-120, 120, 11)
    pts = arch_table(x[::-1], 0.005 * x[::-1] ** 2)
    teeth = _teeth(None, 0.0, (0, 0), False)
    teeth["missing"] = True
    al = arch.align(pts, teeth)
    assert al.transforms["side_source"].iloc[0] == "point_order"


# --- invertibility and invariance --------------------------------------------------

finite = st.floats(-1e4, 1e4, allow_nan=False)


@settings(max_examples=30, deadline=None)
@given(
    rot=st.floats(-720, 720),
    refl=st.booleans(),
    tx=finite,
    ty=finite,
    scale=st.floats(0.01, 10),
    xy=st.lists(st.tuples(finite, finite), min_size=1, max_size=20),
)
def test_to_image_inverts_to_canonical(rot, refl, tx, ty, scale, xy):
    tr = pd.DataFrame(
        {
            "patient_id": ["a"],
            "timestamp": ["t"],
            "arch": ["up"],
            "rotation_deg": [rot],
            "reflected": [refl],
            "tx": [tx],
            "ty": [ty],
            "scale": [scale],
        }
    )
    xy = np.array(xy)
    tab = pd.DataFrame(
        {"patient_id": "a", "timestamp": "t", "arch": "up", "x": xy[:, 0], "y": xy[:, 1]}
    )
    q = arch.to_canonical(tab, tr)
    back = arch.to_image(q, tr)
    np.testing.assert_allclose(back["x_image"], xy[:, 0], atol=1e-7 * (1 + np.abs(xy).max()))
    np.testing.assert_allclose(back["y_image"], xy[:, 1], atol=1e-7 * (1 + np.abs(xy).max()))
    # a similarity: distances scale by `scale`
    if len(xy) >= 2:
        d_img = np.hypot(*(xy[0] - xy[-1]))
        d_can = np.hypot(
            q["x_canonical"].iloc[0] - q["x_canonical"].iloc[-1],
            q["y_canonical"].iloc[0] - q["y_canonical"].iloc[-1],
        )
        assert d_can == pytest.approx(scale * d_img, rel=1e-9, abs=1e-6)


@st.composite
def arch_like(draw):
    n = draw(st.integers(5, 18))
    c2 = draw(st.floats(0.002, 0.02))
    half = draw(st.floats(80, 300))
    jitter = draw(st.lists(st.floats(-0.3, 0.3), min_size=n, max_size=n))
    x = np.linspace(-half, half, n) + np.array(jitter) * (2 * half / n)
    x = np.sort(x)
    wobble = draw(st.lists(st.floats(-2, 2), min_size=n, max_size=n))
    return x, c2 * x**2 + np.array(wobble)


@settings(max_examples=20, deadline=None)
@given(
    shape=arch_like(),
    theta=st.floats(-np.pi, np.pi),
    t=st.tuples(finite, finite),
    mirror=st.booleans(),
)
def test_align_is_invariant_to_rotation_translation_and_mirroring(shape, theta, t, mirror):
    x, y = shape
    base = arch.align(arch_table(x, y))
    moved = arch.align(arch_table(x, y, theta=theta, t=t, mirror=mirror))
    assert base.transforms["status"].iloc[0] == "ok"
    tol = 1e-7 * (1 + max(abs(t[0]), abs(t[1])))
    np.testing.assert_allclose(moved.points["x_canonical"], base.points["x_canonical"], atol=tol)
    np.testing.assert_allclose(moved.points["y_canonical"], base.points["y_canonical"], atol=tol)
    # and the returned transform maps the canonical points back onto the input
    back = arch.to_image(moved.points, moved.transforms)
    np.testing.assert_allclose(back["x_image"], moved.points["x"], atol=tol)
    np.testing.assert_allclose(back["y_image"], moved.points["y"], atol=tol)


# --- calibration, several arches, problems --------------------------------------------


def test_mm_per_px_scales_canonical_coordinates_per_image():
    x = np.linspace(-100, 100, 9)
    a = arch_table(x, 0.01 * x**2, arch="up")
    b = arch_table(x, 0.01 * x**2, arch="lo", theta=2.0)
    pts = pd.concat([a, b], ignore_index=True)
    cal = pd.DataFrame(
        {
            "patient_id": ["p1", "p1"],
            "timestamp": ["2024-01-01"] * 2,
            "arch": ["up", "lo"],
            "mm_per_px": [0.1, 0.2],
        }
    )
    al = arch.align(pts, mm_per_px=cal)
    got = al.points.groupby("arch", observed=True)["x_canonical"].max()
    assert got["up"] == pytest.approx(10.0)
    assert got["lo"] == pytest.approx(20.0)
    assert set(al.transforms["unit"]) == {"mm"}
    back = arch.to_image(al.points, al.transforms)
    np.testing.assert_allclose(back["x_image"], pts["x"], atol=1e-9)


def test_degenerate_arches_are_problem_rows_not_exceptions():
    good = arch_table(np.linspace(-50, 50, 7), 0.02 * np.linspace(-50, 50, 7) ** 2, patient="good")
    two = arch_table([0.0, 1.0], [0.0, 0.0], patient="two")
    line = arch_table(np.linspace(-50, 50, 7), np.zeros(7), patient="line")
    same = arch_table(np.zeros(5), np.zeros(5), patient="same")
    tr = arch.align(pd.concat([good, two, line, same], ignore_index=True)).transforms.set_index(
        "patient_id"
    )
    assert tr.loc["good", "status"] == "ok"
    for p in ("two", "line", "same"):
        assert tr.loc[p, "status"] == "degenerate"
        assert isinstance(tr.loc[p, "reason"], str)
        assert tr.loc[p, "reason"]
        assert np.isnan(tr.loc[p, "tx"])
    assert "fewer than 3" in tr.loc["two", "reason"]
    assert "straight line" in tr.loc["line", "reason"]


def test_bad_input_raises_named_errors_or_is_collected():
    pts = arch_table(np.linspace(-50, 50, 7), 0.02 * np.linspace(-50, 50, 7) ** 2)
    with pytest.raises(InputError, match=r"lacks column\(s\) \['y'\]"):
        arch.align(pts.drop(columns="y"))
    bad_arch = pts.assign(arch="upper")
    with pytest.raises(InputError, match="arch must be 'up' or 'lo'"):
        arch.align(bad_arch)
    nan = pts.copy()
    nan.loc[3, "x"] = np.nan
    with pytest.raises(InputError, match=r"non-finite x/y \(rows \[3\].*patient_id='p1'"):
        arch.align(nan)
    other = arch_table(np.linspace(-50, 50, 7), 0.02 * np.linspace(-50, 50, 7) ** 2, patient="p2")
    tr = arch.align(pd.concat([nan, other], ignore_index=True), errors="collect").transforms
    tr = tr.set_index("patient_id")
    assert tr.loc["p1", "status"] == "bad_input"
    assert "row(s) [3]" in tr.loc["p1", "reason"]
    assert tr.loc["p2", "status"] == "ok"
    dup = pts.copy()
    dup.loc[2, "index"] = dup.loc[1, "index"]
    with pytest.raises(InputError, match="repeated point number"):
        arch.align(dup)
    with pytest.raises(InputError, match="first_point_side"):
        arch.align(pts, first_point_side="top")


def test_index_is_read_from_the_point_key_when_absent():
    x = np.linspace(-60, 60, 7)
    pts = arch_table(x, 0.01 * x**2, theta=0.4).sample(frac=1.0, random_state=3)
    a = arch.align(pts).points.sort_values("index")
    b = arch.align(pts.drop(columns="index")).points.sort_values("point")
    np.testing.assert_allclose(a["x_canonical"], b["x_canonical"])
    np.testing.assert_allclose(a["x_canonical"], x, atol=1e-9)


def test_stacking_orders_arches_as_pandas_sorts_the_keys_and_points_along_the_arch():
    # shuffled rows; patient_id categorical with its categories in reverse order (pandas
    # sorts categories by their order, not alphabetically), arch categorical up/lo (sorted
    # as text: "lo" before "up"), FDI point numbers in one arch, a sequence in the others
    from dentalkit.arch._tables import stack_points

    rng = np.random.default_rng(4)
    rows = []
    for p in ("p1", "p2", "p3"):
        for t in ("2024-03-01", "2023-01-01"):
            for a in ("up", "lo"):
                if p == "p2" and a == "up":
                    keys = [17, 16, 14, 11, 21, 23, 26, 27]  # FDI: right molar → left molar
                    order = [-7, -6, -4, -1, 1, 3, 6, 7]
                else:
                    keys = [3, 9, 1, 5, 12, 7]
                    order = keys
                for k, o in zip(keys, order, strict=True):
                    rows.append((p, t, a, k, o, rng.normal(), rng.normal()))
    tab = pd.DataFrame(rows, columns=["patient_id", "timestamp", "arch", "index", "_o", "x", "y"])
    tab = tab.sample(frac=1.0, random_state=7).reset_index(drop=True)
    tab["patient_id"] = pd.Categorical(tab["patient_id"], categories=["p3", "p2", "p1"])
    tab["arch"] = pd.Categorical(tab["arch"], categories=["up", "lo"])
    st = stack_points(tab.drop(columns="_o"))

    want = tab.assign(arch=tab["arch"].astype(str)).sort_values(
        ["patient_id", "timestamp", "arch", "_o"], kind="stable"
    )
    arches = want.drop_duplicates(["patient_id", "timestamp", "arch"])
    assert st.keys["patient_id"].astype(str).tolist() == arches["patient_id"].astype(str).tolist()
    assert st.keys["patient_id"].tolist()[:4] == ["p3"] * 4
    assert st.keys["timestamp"].tolist() == arches["timestamp"].tolist()
    assert st.keys["arch"].tolist() == arches["arch"].tolist()
    assert st.keys["arch"].tolist()[:2] == ["lo", "up"]
    got = st.xy[st.mask]  # arch by arch, along each arch
    np.testing.assert_array_equal(got, want[["x", "y"]].to_numpy())
    assert st.fdi.sum() == 2 and st.n.tolist().count(8) == 2  # p2's two upper arches
    # each input row knows its arch and slot
    np.testing.assert_array_equal(st.xy[st.row_arch, st.row_pos], tab[["x", "y"]].to_numpy())
