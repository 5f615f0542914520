"""Ceph tracing: measurement lines from hand-computed geometry, contours, images."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.image import AxesImage

from dentalkit import plot
from dentalkit.errors import DentalkitWarning, InputError
from dentalkit.landmark_map import load_landmark_map
from dentalkit.plot import ceph as pceph
from dentalkit.plot._common import text_scale
from tests.plot.plot_tables import landmarks, save_all


def _session(points: dict[str, tuple[float, float]], pid: str = "p1", ts: str = "t1"):
    return pd.DataFrame(
        {
            "patient_id": pid,
            "timestamp": ts,
            "name": list(points),
            "x": [p[0] for p in points.values()],
            "y": [p[1] for p in points.values()],
        }
    )


# S, N, A, B drawn by hand (image coordinates, y down; the face looks left):
# SNA = 90°, SNB = atan2(600, 100) = 80.5377°, ANB = 9.4623°.
HAND = {"S": (700.0, 0.0), "N": (0.0, 0.0), "A": (0.0, 500.0), "B": (100.0, 600.0)}


def _lines(ax, gid):
    return [ln for ln in ax.get_lines() if ln.get_gid() == gid]


def _legend(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_vertex_angles_are_drawn_with_their_values_and_arcs():
    ax = pceph.tracing(_session(HAND), measures=["SNA", "SNB", "ANB"])
    assert _legend(ax) == ["SNA 90.0°", "SNB 80.5°", "ANB 9.5°"]
    sna = _lines(ax, "measure:SNA")
    arms = [np.asarray(ln.get_xydata()) for ln in sna if len(ln.get_xydata()) == 2]
    assert sorted(map(lambda a: tuple(map(tuple, a)), arms)) == [
        ((0.0, 0.0), (0.0, 500.0)),
        ((0.0, 0.0), (700.0, 0.0)),
    ]
    arc = next(np.asarray(ln.get_xydata()) for ln in sna if len(ln.get_xydata()) > 2)
    radius = np.hypot(*arc.T)
    np.testing.assert_allclose(radius, radius[0])  # centred on N
    span = np.degrees(np.arctan2(arc[-1, 1], arc[-1, 0]) - np.arctan2(arc[0, 1], arc[0, 0]))
    assert abs(span) == pytest.approx(90.0)
    # SNB reuses the N–S arm already drawn: its own arm N–B and its arc only
    snb = _lines(ax, "measure:SNB")
    assert len(snb) == 2
    # ANB = SNA − SNB is the angle between N–A and N–B: only its arc is new
    (anb,) = _lines(ax, "measure:ANB")
    a = np.asarray(anb.get_xydata())
    span = np.degrees(np.arctan2(a[-1, 1], a[-1, 0]) - np.arctan2(a[0, 1], a[0, 0]))
    assert abs(span) == pytest.approx(90.0 - np.degrees(np.arctan2(600, 100)))
    radii = {
        round(float(np.hypot(*np.asarray(ln.get_xydata())[0])), 6)
        for ln in [*sna, *snb, anb]
        if len(ln.get_xydata()) > 2
    }
    assert len(radii) == 3  # concentric arcs at N are staggered, not drawn on top of each other


def test_tracing_is_in_image_coordinates():
    ax = pceph.tracing(_session(HAND), measures=["SNA"])
    assert ax.yaxis_inverted()
    assert ax.get_aspect() == 1.0
    assert ax.get_xlabel() == "x (px)" and ax.get_ylabel().startswith("y (px")
    lo, hi = sorted(ax.get_ylim())
    assert lo < 0 and hi > 600  # all landmarks inside, with a margin


def test_wits_is_drawn_as_the_distance_between_the_feet_on_the_occlusal_plane():
    pts = dict(HAND)
    pts.update({"A": (0.0, 300.0), "B": (40.0, 500.0)})
    # occlusal plane through M6 = mean(U6, L6) = (300, 410) and P4 = mean(U4, L4) = (150, 410)
    pts.update(
        {
            "U6_cusp": (300.0, 400.0),
            "L6_cusp": (300.0, 420.0),
            "U4_cusp": (150.0, 400.0),
            "L4_cusp": (150.0, 420.0),
        }
    )
    ax = pceph.tracing(_session(pts), measures=["Wits"], mm_per_px=0.1)
    assert _legend(ax) == ["Wits 4.0 mm"]  # (A − B) · (P4 − M6)/|P4 − M6| = 40 px = 4 mm
    wits = _lines(ax, "measure:Wits")
    solid = [np.asarray(ln.get_xydata()) for ln in wits if ln.get_linestyle() == "-"]
    dashed = [np.asarray(ln.get_xydata()) for ln in wits if ln.get_linestyle() == "--"]
    segs = {tuple(map(tuple, s)) for s in solid}
    assert ((300.0, 410.0), (150.0, 410.0)) in segs  # the occlusal plane M6–P4
    assert ((0.0, 410.0), (40.0, 410.0)) in segs  # AO–BO, the measured stretch
    dashed_sets = [set(map(tuple, d)) for d in dashed]
    assert {(0.0, 300.0), (0.0, 410.0)} in dashed_sets  # perpendicular from A
    assert {(40.0, 500.0), (40.0, 410.0)} in dashed_sets  # perpendicular from B
    assert {(150.0, 410.0), (0.0, 410.0)} in dashed_sets  # plane extended to AO
    texts = [c for c in ax.artists if type(c).__name__ == "AnchoredSizeBar"]
    assert texts and "mm" in texts[0].txt_label.get_text()


def test_point_to_line_distance_is_the_perpendicular():
    pts = {"S": (700.0, 0.0), "N": (0.0, 0.0), "B": (0.0, 600.0), "Pog": (50.0, 700.0)}
    ax = pceph.tracing(_session(pts), measures=["Pog_NB"])
    assert _legend(ax) == ["Pog–NB −50.0 px"]  # Pog behind N–B: the face looks left
    lines = {
        tuple(map(tuple, np.asarray(ln.get_xydata()))): ln.get_linestyle()
        for ln in _lines(ax, "measure:Pog_NB")
    }
    assert lines[((0.0, 0.0), (0.0, 600.0))] == "-"  # N–B
    assert lines[((50.0, 700.0), (0.0, 700.0))] == "-"  # Pog to its foot on N–B
    assert lines[((0.0, 600.0), (0.0, 700.0))] == "--"  # N–B extended to the foot


def test_a_measure_without_its_landmarks_is_skipped_with_a_warning():
    pts = {k: v for k, v in HAND.items() if k != "B"}
    with pytest.warns(DentalkitWarning, match="SNB is not drawn"):
        ax = pceph.tracing(_session(pts), measures=["SNA", "SNB"])
    assert _legend(ax) == ["SNA 90.0°"]


def test_a_measure_whose_lines_are_all_drawn_still_gets_its_value():
    pts = {"S": (700.0, 0.0), "N": (0.0, 0.0), "Po": (800.0, 100.0), "Or": (100.0, 150.0),
           "Go": (600.0, 700.0), "Me": (150.0, 900.0)}  # fmt: skip
    ax = pceph.tracing(_session(pts), measures=["SN_MP", "FMA", "FH_SN"])
    texts = _legend(ax)
    assert [t.split(" ")[0] for t in texts] == ["SN–MP", "FMA", "FH–SN"]
    fh_sn = _lines(ax, "measure:FH_SN")
    assert all(len(ln.get_xydata()) == 0 for ln in fh_sn)  # legend entry only, no redraw
    u, v = np.subtract(pts["Or"], pts["Po"]), np.subtract(pts["N"], pts["S"])
    angle = np.degrees(np.arccos(abs(u @ v) / np.hypot(*u) / np.hypot(*v)))
    assert texts[2] == f"FH–SN {angle:.1f}°"


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"measures": ["NOPE"]}, "unknown measure"),
        ({"view": "frontal"}, "no rows of view"),
        ({"mm_per_px": "scale"}, "positive number"),
        ({"mm_per_px": -0.1}, "positive number"),
    ],
)
def test_bad_arguments_are_explained(kwargs, match):
    t = _session(HAND).assign(view="lateral")
    with pytest.raises(InputError, match=match):
        pceph.tracing(t, **kwargs)


def test_several_sessions_need_a_choice_and_duplicates_are_refused():
    two = pd.concat([_session(HAND), _session(HAND, ts="t2")])
    with pytest.raises(InputError, match="holds 2 sessions"):
        pceph.tracing(two)
    ax = pceph.tracing(two, ("p1", "t2"), measures=["SNA"])
    assert _legend(ax) == ["SNA 90.0°"]
    dup = pd.concat([_session(HAND), _session({"S": (1.0, 1.0)})])
    with pytest.raises(InputError, match=r"\['S'\] appear more than once"):
        pceph.tracing(dup)


def test_sandbox_tracing_draws_every_contour_group_smoothly(tmp_path):
    t = landmarks("P001", "2024-03-01")
    t.loc[t.index[:20], "name"] = None  # names fall back to the landmark map via the keys
    ax = pceph.tracing(t, mm_per_px=0.1)
    groups = load_landmark_map("lateral").query("group == 'contour'")["name"]
    expected = set(groups.str.replace(r"_\d+$", "", regex=True))
    contour = {
        ln.get_gid().split(":", 1)[1]: np.asarray(ln.get_xydata())
        for ln in ax.get_lines()
        if str(ln.get_gid()).startswith("contour:")
    }
    assert set(contour) == expected
    n_mand = int(groups.str.startswith("mandible_contour").sum())
    assert len(contour["mandible_contour"]) > 5 * n_mand  # a smooth curve, not the polygon
    np.testing.assert_allclose(
        contour["upper_incisor_outline"][0], contour["upper_incisor_outline"][-1]
    )
    assert np.hypot(*(contour["mandible_contour"][0] - contour["mandible_contour"][-1])) > 100
    assert len(_legend(ax)) == len(pceph.DEFAULT_MEASURES["lateral"])
    save_all(ax, tmp_path, "tracing")


def test_tracing_over_the_radiograph(tmp_path):
    from dentalkit.sandbox.render import input_image

    png = input_image("lateral_ceph/P001/2024-03-01.png")
    t = landmarks("P001", "2024-03-01")
    ax = pceph.tracing(t, image=png, crop=False, measures=["SNA", "FMA"], label="all")
    (im,) = [a for a in ax.get_images() if isinstance(a, AxesImage)]
    h, w = im.get_array().shape[:2]
    assert (w, h) == (1935, 2400)
    assert im.get_extent() == [-0.5, w - 0.5, h - 0.5, -0.5]
    assert ax.get_ylim() == (h - 0.5, -0.5)  # y down, whole image
    named = t["name"].notna() & ~t["name"].str.contains(r"_\d+$", regex=True, na=False)
    assert len(ax.texts) == int(named.sum())  # label="all": every non-contour landmark
    cropped = pceph.tracing(t, image=png, measures=[])
    lo, hi = sorted(cropped.get_ylim())
    assert lo > 0 and hi < h and cropped.yaxis_inverted()
    files = plot.savefig(ax, tmp_path / "tracing_image.png", dpi=300)  # vector formats: above
    assert files[0].stat().st_size > 10_000


@pytest.mark.parametrize(("crop", "measures"), [(True, None), (False, ["SNA"]), (True, [])])
def test_a_tracing_of_its_own_has_no_blank_bands(crop, measures):
    # the figure's height follows the view's aspect, so the view is the data box (or the
    # whole image) in both directions, not widened to fill a flatter or taller axes box
    from dentalkit.sandbox.render import input_image

    png = input_image("lateral_ceph/P001/2024-03-01.png")
    ax = pceph.tracing(landmarks("P001", "2024-03-01"), image=png, crop=crop, measures=measures)
    fig = ax.figure
    fig.draw_without_rendering()
    box = ax.dataLim
    x0, x1 = sorted(ax.get_xlim())
    y0, y1 = sorted(ax.get_ylim())
    assert (x1 - x0) == pytest.approx(box.width, rel=0.02)
    assert (y1 - y0) == pytest.approx(box.height, rel=0.02)
    assert fig.get_figwidth() == pytest.approx(85 / 25.4 * text_scale())  # the column


def test_saving_at_another_size_keeps_the_view_centred_on_the_data(tmp_path):
    # matplotlib widens an equal-aspect view at every layout pass from the view it has;
    # drawn at several sizes the widening drifted off centre (the old gallery tracing)
    from dentalkit.plot.style import PIXEL_VIEWS

    ax = pceph.tracing(landmarks("P001", "2024-03-01"), mm_per_px=0.1, legend="right")
    x0, y0, x1, y1 = PIXEL_VIEWS[ax]
    plot.savefig(ax, tmp_path / "t.png", width="double", height=150, formats=("png",))
    lo_x, hi_x = sorted(ax.get_xlim())
    lo_y, hi_y = sorted(ax.get_ylim())
    assert lo_x <= x0 and hi_x >= x1 and lo_y <= y0 and hi_y >= y1  # all of it
    assert (lo_x + hi_x) / 2 == pytest.approx((x0 + x1) / 2)  # centred
    assert (lo_y + hi_y) / 2 == pytest.approx((y0 + y1) / 2)
    # widened in one direction (to the axes box's shape); the other keeps ~1 % of slack at most
    assert min((hi_x - lo_x) / (x1 - x0), (hi_y - lo_y) / (y1 - y0)) < 1.03
    assert ax.yaxis_inverted()
    # limits the caller sets are the caller's: a shifted view stays shifted
    from dentalkit.plot.style import settle_pixel_views

    ax.set_xlim(lo_x + 200, hi_x + 200)
    ax.set_ylim(hi_y + 200, lo_y + 200)
    settle_pixel_views(ax.figure)
    assert sum(ax.get_xlim()) / 2 == pytest.approx((x0 + x1) / 2 + 200, abs=20)
    assert sum(ax.get_ylim()) / 2 == pytest.approx((y0 + y1) / 2 + 200, abs=20)


def test_frontal_tracing():
    t = landmarks("P001", "2024-03-01", view="frontal")
    ax = pceph.tracing(t, view="frontal", mm_per_px=0.1)
    assert len(_legend(ax)) == 3
    assert sum(str(ln.get_gid()).startswith("contour:") for ln in ax.get_lines()) == 6


def test_exported_name_is_the_same_function():
    assert plot.ceph_tracing is pceph.tracing


def test_landmark_labels_do_not_cover_each_other():
    # The incisor tips and apices sit a few millimetres apart: labelled naively (all up
    # and to the right) several overlap. Placement is checked on the drawn text boxes.
    t = landmarks("P001", "2024-03-01")
    ax = pceph.tracing(t, mm_per_px=0.1, measures=["SNA", "SNB", "U1_SN", "IMPA", "L1_NB_deg"])
    renderer = ax.figure.canvas.get_renderer()
    # names are printed with spaces ("U1 tip"), on white boxes
    ax.figure.canvas.draw()
    boxes = {
        text.get_text().replace(" ", "_"): text.get_bbox_patch().get_window_extent(renderer)
        for text in ax.texts
    }
    assert {"U1_tip", "U1_apex", "L1_tip", "L1_apex"} <= set(boxes)
    overlapping = [
        (a, b)
        for i, a in enumerate(boxes)
        for b in list(boxes)[i + 1 :]
        if boxes[a].overlaps(boxes[b])
    ]
    assert overlapping == []
    # each label stays next to its landmark (within ~12 points of it)
    points = t.dropna(subset=["name"]).set_index("name")[["x", "y"]]
    for name, box in boxes.items():
        px, py = ax.transData.transform(points.loc[name].to_numpy(dtype=float))
        gap = max(box.x0 - px, px - box.x1, 0.0), max(box.y0 - py, py - box.y1, 0.0)
        assert np.hypot(*gap) * 72 / ax.figure.dpi < 12, name
