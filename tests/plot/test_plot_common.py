"""Shared plumbing: smooth curves, session selection, background images."""

from __future__ import annotations

import io

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from PIL import Image

from dentalkit.errors import InputError
from dentalkit.plot._common import catmull_rom, load_image, select_session

coords = arrays(
    np.float64,
    st.tuples(st.integers(3, 9), st.just(2)),
    elements=st.floats(-1e3, 1e3, allow_nan=False),
)


@settings(max_examples=60, deadline=None)
@given(coords, st.booleans(), st.integers(2, 12))
def test_catmull_rom_passes_through_every_control_point(points, closed, samples):
    curve = catmull_rom(points, closed=closed, samples=samples)
    n = len(points)
    nseg = n if closed else n - 1
    assert curve.shape == (nseg * samples + 1, 2)
    np.testing.assert_allclose(curve[::samples][:n], points, atol=1e-6 * (1 + np.abs(points).max()))
    end = points[0] if closed else points[-1]
    np.testing.assert_allclose(curve[-1], end)
    assert np.isfinite(curve).all()


def test_catmull_rom_of_collinear_points_stays_on_the_line():
    pts = np.array([[0.0, 0.0], [1.0, 2.0], [3.0, 6.0], [4.0, 8.0]])
    curve = catmull_rom(pts, samples=10)
    np.testing.assert_allclose(curve[:, 1], 2 * curve[:, 0], atol=1e-9)
    assert np.all(np.diff(curve[:, 0]) >= -1e-12)  # no overshoot backwards


def test_catmull_rom_drops_nan_rows_and_handles_short_input():
    pts = np.array([[0.0, 0.0], [np.nan, 1.0], [1.0, 1.0]])
    np.testing.assert_array_equal(catmull_rom(pts), [[0.0, 0.0], [1.0, 1.0]])
    np.testing.assert_array_equal(catmull_rom(pts, closed=True), [[0, 0], [1, 1], [0, 0]])


def test_centripetal_spline_does_not_overshoot_a_sharp_corner():
    # uniform Catmull-Rom loops at a tight corner with uneven spacing; centripetal does not
    pts = np.array([[0.0, 0.0], [10.0, 0.0], [10.2, 0.2], [10.0, 10.0]])
    assert catmull_rom(pts, samples=50)[:, 0].max() < 10.6
    assert catmull_rom(pts, samples=50, alpha=0.0)[:, 0].max() > 10.6  # the test can tell


def test_numbers_use_a_typographic_minus_and_say_when_missing():
    from dentalkit.plot._common import number

    assert number(-1.25, ".1f") == "\u22121.2"
    assert number(3.0) == "3.0"
    assert number(float("nan")) == "n/a"


def _table():
    return pd.DataFrame(
        {
            "patient_id": pd.Categorical(["a", "a", "a", "b"]),
            "timestamp": ["t1", "t1", "t2", "t1"],
            "x": [1.0, 2.0, 3.0, 4.0],
        }
    )


def test_select_session_by_tuple_mapping_and_patient():
    t = _table()
    assert select_session(t, ("a", "t2"), what="t")["x"].tolist() == [3.0]
    assert select_session(t, {"patient_id": "a", "timestamp": "t1"}, what="t")["x"].tolist() == [
        1.0,
        2.0,
    ]
    assert select_session(t, "b", what="t")["x"].tolist() == [4.0]


def test_select_session_explains_ambiguity_and_absence():
    t = _table()
    with pytest.raises(InputError, match=r"holds 3 sessions.*session=\(patient_id, timestamp\)"):
        select_session(t, None, what="landmarks")
    with pytest.raises(InputError, match="holds 2 sessions"):
        select_session(t, "a", what="landmarks")
    with pytest.raises(InputError, match=r"no rows for .*'zz'.*available"):
        select_session(t, "zz", what="landmarks")
    with pytest.raises(InputError, match="no column"):
        select_session(t, {"source": "pano"}, what="landmarks")


def test_load_image_accepts_arrays_pil_bytes_and_paths(tmp_path):
    arr = (np.arange(12, dtype=np.uint8).reshape(3, 4) * 20).astype(np.uint8)
    pil = Image.fromarray(arr)
    buf = io.BytesIO()
    pil.save(buf, format="PNG")
    path = tmp_path / "im.png"
    path.write_bytes(buf.getvalue())
    for source in (arr, pil, buf.getvalue(), path, str(path)):
        out = load_image(source)
        assert out.shape[:2] == (3, 4)
    np.testing.assert_array_equal(load_image(pil), arr)


@pytest.mark.parametrize(
    ("image", "match"),
    [
        ("https://example.org/a.png", "never fetch"),
        ("/no/such/file.png", "does not exist"),
        (np.zeros((2, 2, 5)), "shape"),
        (42, "must be"),
    ],
)
def test_load_image_refuses_urls_and_bad_input(image, match):
    with pytest.raises(InputError, match=match):
        load_image(image)


def _view_is_the_box(ax) -> None:
    from dentalkit.plot.style import PIXEL_VIEWS

    ax.figure.draw_without_rendering()
    x0, y0, x1, y1 = PIXEL_VIEWS[ax]
    lo_x, hi_x = sorted(ax.get_xlim())
    lo_y, hi_y = sorted(ax.get_ylim())
    assert hi_x - lo_x == pytest.approx(x1 - x0, rel=0.02)  # no blank bands sideways
    assert hi_y - lo_y == pytest.approx(y1 - y0, rel=0.02)  # nor above and below


def test_arch_points_and_finding_boxes_of_their_own_fill_their_axes():
    from dentalkit.plot import arch as parch
    from dentalkit.plot import findings as pfind
    from tests.plot.plot_tables import arch_points, findings, patient_with_findings

    _view_is_the_box(parch.forms(arch_points("P003", "2024-03-01", "up")))
    pid = patient_with_findings()
    _view_is_the_box(pfind.boxes(findings(pid), (pid, "2024-03-01")))


@pytest.mark.parametrize("value", [None, "area"])
def test_a_tooth_map_of_its_own_fills_its_axes(value):
    from dentalkit.plot import teeth as pteeth
    from tests.plot.plot_tables import teeth

    t = teeth("P002", "2024-03-01", "pano")
    if value is not None:
        from dentalkit.teeth import measure

        t = t.assign(area=measure(t, measures=["area"])["area"].to_numpy())
    _view_is_the_box(pteeth.tooth_map(t, value=value))
