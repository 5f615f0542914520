"""dentalkit.plot.agreement: rendered to PNG and checked element by element."""

from __future__ import annotations

import io

import agreement_fixtures as fx
import matplotlib
import numpy as np
import pandas as pd
import pytest

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.collections import PathCollection
from matplotlib.patches import Ellipse, Rectangle
from PIL import Image

from dentalkit import agreement
from dentalkit.errors import InputError
from dentalkit.landmark_map import load_landmark_map
from dentalkit.plot import agreement as plot


@pytest.fixture(autouse=True)
def _close():
    yield
    plt.close("all")


def _png(fig) -> np.ndarray:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80)
    img = np.asarray(Image.open(io.BytesIO(buf.getvalue())).convert("L"), dtype=float)
    assert img.std() > 5  # something was drawn
    return img


@pytest.fixture(scope="module")
def landmark_result():
    truth = fx.cohort(30, np.random.default_rng(3))
    test = agreement.simulate_examiner(truth, 1.0, 0.1, seed=4)
    return agreement.landmarks(truth, test, mm_per_px=0.1)


@pytest.fixture(scope="module")
def measure_result():
    rng = np.random.default_rng(8)
    ref = pd.DataFrame(
        {
            "patient_id": [f"s{i}" for i in range(25)],
            "measure": "ANB",
            "value": rng.normal(3, 2, 25),
            "unit": "deg",
        }
    )
    ref = pd.concat([ref, ref.assign(measure="SNA", value=rng.normal(82, 3, 25))])
    return agreement.measure(ref, ref.assign(value=ref["value"] + rng.normal(0.3, 0.8, 50)))


def test_landmark_error_scatter_draws_every_offset_one_ellipse_per_landmark(landmark_result):
    ax = plot.landmark_errors(landmark_result, magnify=4)
    _png(ax.figure)
    scatters = [c for c in ax.collections if isinstance(c, PathCollection)]
    counts = sorted(len(c.get_offsets()) for c in scatters)
    assert counts == [19, 19 * 30]  # mean tracing points; one point per paired landmark
    ellipses = [p for p in ax.patches if isinstance(p, Ellipse)]
    assert len(ellipses) == 19
    # each offset point sits at mean position + 4 × offset
    pts = max(scatters, key=lambda c: len(c.get_offsets())).get_offsets()
    p = landmark_result.pairs
    mean = p.groupby("name", observed=True)[["frame_x", "frame_y"]].transform("mean")
    expected = mean.to_numpy() + 4 * p[["dx", "dy"]].to_numpy()
    assert np.asarray(pts) == pytest.approx(expected)
    # the ellipse of S is centred on its mean + 4 × bias and is the χ²₂(0.95) ellipse
    s = landmark_result.summary.set_index("name").loc["S"]
    ms = mean[p["name"] == "S"].iloc[0].to_numpy()
    centres = np.array([e.center for e in ellipses])
    i = np.argmin(np.hypot(*(centres - (ms + 4 * np.array([s["bias_x"], s["bias_y"]]))).T))
    assert np.hypot(*(centres[i] - ms - 4 * np.array([s["bias_x"], s["bias_y"]]))) < 1e-9
    off = p.loc[p["name"] == "S", ["dx", "dy"]].to_numpy()
    area = np.pi * ellipses[i].width * ellipses[i].height / 4
    k2 = 5.991464547107979  # χ²₂(0.95)
    assert area == pytest.approx(np.pi * k2 * 16 * np.sqrt(np.linalg.det(np.cov(off.T))))
    assert {t.get_text() for t in ax.texts} == set(fx.NAMES)
    assert "anterior" in ax.get_xlabel() and "mm" in ax.get_xlabel()
    assert "×4" in ax.get_title()
    assert len(ax.lines) == len(plot.LATERAL_LINKS)  # every link's ends are ISBI landmarks


def test_landmark_errors_in_the_image_frame_has_y_down(landmark_result):
    truth = fx.cohort(5, np.random.default_rng(3))
    res = agreement.landmarks(truth, truth, frame="image")
    ax = plot.landmark_errors(res, names=["S", "N"], label=False)
    assert ax.yaxis_inverted() and "px" in ax.get_xlabel()
    assert not ax.texts
    with pytest.raises(InputError, match="frontal"):
        plot.landmark_errors(res, view="frontal")


def test_bland_altman_lines_bands_points_and_labels(measure_result):
    ax = plot.bland_altman(measure_result, "ANB")
    _png(ax.figure)
    row = measure_result.summary.set_index("measure").loc["ANB"]
    ys = sorted(line.get_ydata()[0] for line in ax.lines)
    assert ys == pytest.approx(sorted([0.0, row["bias"], row["loa_low"], row["loa_high"]]))
    bands = sorted(
        (p.get_y(), p.get_y() + p.get_height())
        for p in ax.patches
        if isinstance(p, Rectangle) and p.get_height() != 0
    )
    expected = sorted(
        [
            (row["bias_ci_low"], row["bias_ci_high"]),
            (row["loa_low_ci_low"], row["loa_low_ci_high"]),
            (row["loa_high_ci_low"], row["loa_high_ci_high"]),
        ]
    )
    assert np.array(bands) == pytest.approx(np.array(expected))
    pts = np.asarray(ax.collections[0].get_offsets())
    pairs = measure_result.pairs[measure_result.pairs["measure"] == "ANB"]
    assert pts == pytest.approx(pairs[["mean", "difference"]].to_numpy())
    assert ax.get_xlabel() == "Mean of reference and test (°)"  # house spelling of units
    assert ax.get_ylabel() == "Test − reference (°)"
    assert any(t.get_text().startswith("+1.96 SD") for t in ax.texts)
    with pytest.raises(InputError, match="not in the agreement summary"):
        plot.bland_altman(measure_result, "SNB")


def test_bland_altman_grid_one_panel_per_measure(measure_result):
    fig = plot.bland_altman_grid(measure_result, ncols=3)
    _png(fig)
    visible = [a for a in fig.axes if a.get_visible()]
    assert [a.get_title().split(" ")[0] for a in visible] == ["ANB", "SNA"]


def test_sdr_bars_heights_and_intervals(landmark_result):
    ax = plot.sdr_bars(landmark_result)
    _png(ax.figure)
    bars = [p for p in ax.patches if isinstance(p, Rectangle)]
    assert len(bars) == (19 + 1) * 4
    d = landmark_result.sdr
    # landmarks in the shipped landmark map's order (S, N, Or, Po, A, B, …), then overall
    order = [n for n in load_landmark_map("lateral")["name"] if n in fx.NAMES] + ["overall"]
    assert sorted(order) == sorted([*fx.NAMES, "overall"])
    expected = [
        d.loc[(d["name"] == n) & (d["radius_mm"] == r), "sdr_pct"].item()
        for r in (2.0, 2.5, 3.0, 4.0)
        for n in order
    ]
    assert [b.get_height() for b in bars] == pytest.approx(expected)
    assert [t.get_text() for t in ax.get_xticklabels()] == order
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "≤ 2 mm",
        "≤ 2.5 mm",
        "≤ 3 mm",
        "≤ 4 mm",
    ]
    assert ax.get_ylabel() == "SDR (%)"


def test_sdr_bars_need_millimetres():
    truth = fx.cohort(3, np.random.default_rng(0))
    res = agreement.landmarks(truth, truth)
    with pytest.raises(InputError, match="SDR needs millimetres"):
        plot.sdr_bars(res)


def test_functions_draw_on_a_given_axes(landmark_result, measure_result):
    _, axes = plt.subplots(1, 3)
    assert plot.landmark_errors(landmark_result, ax=axes[0]) is axes[0]
    assert plot.bland_altman(measure_result, "SNA", ax=axes[1]) is axes[1]
    assert plot.sdr_bars(landmark_result, ax=axes[2]) is axes[2]
