"""Treatment-length figures: distribution, sensitivity, Bland–Altman, calibration."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dentalkit.errors import InputError
from dentalkit.plot import tle as ptle
from tests.plot.plot_tables import save_all

M = "estimate_length_months"


A_VALUES = [10.0, 11.0, 12.0, 13.0, 14.0, 15.0, 16.0, 17.0, 18.0, 40.0]


def _estimates() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "group": pd.Categorical(["B"] * 3 + ["A"] * 10, categories=["A", "B"]),
            M: [20.0, 22.0, 24.0, *A_VALUES],
        }
    )


def test_distribution_boxes_points_and_means(tmp_path):
    summary = pd.DataFrame(
        {"group": ["A", "B"], "mean": [16.6, 22.0], "ci_low": [11.0, 20.0], "ci_high": [24.0, 24.0]}
    )
    ax = ptle.distribution(_estimates(), "group", summary=summary)
    boxes = {p.get_gid(): p for p in ax.patches if str(p.get_gid()).startswith("box:")}
    ys = boxes["box:A"].get_path().vertices[:, 1]
    # quartiles of 10 … 18, 40 by linear interpolation (numpy's default): positions 2.25
    # and 6.75 of the sorted values, 12.25 and 16.75
    assert (ys.min(), ys.max()) == (12.25, 16.75)
    medians = [ln for ln in ax.get_lines() if ln.get_color() == "black" and ln.get_lw() == 1.0]
    assert medians[0].get_ydata()[0] == 14.5
    # whiskers reach the furthest value within 1.5 IQR (= 6.75) of the box: 10 and 18, not 40
    caps = sorted(
        {
            float(ln.get_ydata()[0])
            for ln in ax.get_lines()
            if len(ln.get_ydata()) == 2 and ln.get_ydata()[0] == ln.get_ydata()[1]
        }
    )
    assert 10.0 in caps and 18.0 in caps and 40.0 not in caps
    points = next(c for c in ax.collections if c.get_gid() == "points:A")
    np.testing.assert_allclose(sorted(points.get_offsets()[:, 1]), A_VALUES)
    mean_a = next(c for c in ax.containers if c.lines[0].get_gid() == "mean:A")
    assert mean_a.lines[0].get_ydata()[0] == 16.6
    seg = mean_a.lines[2][0].get_segments()[0]
    assert sorted(seg[:, 1]) == [11.0, 24.0]
    assert [t.get_text() for t in ax.get_xticklabels()] == ["A\n(n = 10)", "B\n(n = 3)"]
    assert ax.get_ylabel() == "Predicted treatment length (months)"
    save_all(ax, tmp_path, "tle_distribution")


def test_a_group_under_ten_patients_is_drawn_as_points_not_a_box():
    """Issue 31: a boxplot was drawn for a group of 3."""
    from dentalkit.plot.house import MIN_N_BOX

    assert MIN_N_BOX == 10
    ax = ptle.distribution(_estimates(), "group", n_resamples=199)
    boxes = {p.get_gid() for p in ax.patches if str(p.get_gid()).startswith("box:")}
    assert boxes == {"box:A"}  # 10 patients: a box; B, 3 patients: none
    points = next(c for c in ax.collections if c.get_gid() == "points:B")
    np.testing.assert_allclose(sorted(points.get_offsets()[:, 1]), [20.0, 22.0, 24.0])
    nine = _estimates().iloc[:-1]  # A down to 9 patients: no box at all
    ax = ptle.distribution(nine, "group", n_resamples=199)
    assert not [p for p in ax.patches if str(p.get_gid()).startswith("box:")]
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert texts == ["patients", "mean, 95 % bootstrap CI"]


def test_distribution_computes_the_summary_when_not_given():
    ax = ptle.distribution(_estimates(), n_resamples=199)
    mean = next(c for c in ax.containers if c.lines[0].get_gid() == "mean:all")
    assert mean.lines[0].get_ydata()[0] == pytest.approx(np.mean(_estimates()[M]))


def test_distribution_refuses_a_summary_of_another_grouping():
    with pytest.raises(InputError, match=r"summary lacks column\(s\) \['group', "):
        ptle.distribution(_estimates(), "group", summary=pd.DataFrame({"mean": [1.0]}))


def _curves(values, column="crowding") -> pd.DataFrame:
    k = len(values)
    a, b = np.arange(k) + 20.0, np.arange(k) * 2 + 24.0
    rows = [("patient", "p1", column, v, y, pd.NA) for v, y in zip(values, a, strict=True)]
    rows += [("patient", "p2", column, v, y, pd.NA) for v, y in zip(values, b, strict=True)]
    rows += [
        ("mean", pd.NA, column, v, (y1 + y2) / 2, 2) for v, y1, y2 in zip(values, a, b, strict=True)
    ]
    return pd.DataFrame(rows, columns=["curve", "patient", "column", "value", M, "n_patients"])


def test_sensitivity_curves(tmp_path):
    ax = ptle.sensitivity(_curves(["none", "mild", "severe"]))
    mean = next(ln for ln in ax.get_lines() if ln.get_gid() == "mean:crowding")
    np.testing.assert_allclose(mean.get_xdata(), [0, 1, 2])
    np.testing.assert_allclose(mean.get_ydata(), [22.0, 23.5, 25.0])
    assert [t.get_text() for t in ax.get_xticklabels()] == ["none", "mild", "severe"]
    assert len(ax.get_lines()) == 3  # two patients and the mean
    assert [t.get_text() for t in ax.get_legend().get_texts()] == [
        "mean of 2 patients",
        "patients",
    ]
    save_all(ax, tmp_path, "tle_sensitivity")
    numeric = ptle.sensitivity(_curves([10.0, 20.0, 40.0], "age_years"), individuals=False)
    (line,) = numeric.get_lines()
    np.testing.assert_allclose(line.get_xdata(), [10.0, 20.0, 40.0])


def test_several_factors_make_a_panel_figure():
    both = pd.concat([_curves(["none", "mild"]), _curves([10.0, 20.0], "age_years")])
    fig = ptle.sensitivity(both)
    visible = [a for a in fig.axes if a.get_visible()]
    assert [a.get_xlabel() for a in visible] == ["Crowding", "Age years"]
    with pytest.raises(InputError, match="2 factors"):
        ptle.sensitivity(both, ax=visible[0])


PRED = np.array([20.0, 24.0, 30.0, 18.0, 26.0, 22.0, 35.0, 28.0, 19.0, 25.0])
OBS = np.array([22.0, 23.0, 33.0, 18.0, 24.0, 25.0, 31.0, 30.0, 21.0, 24.0])


def test_bland_altman_lines_by_hand(tmp_path):
    ax = ptle.bland_altman(PRED, OBS)
    d = PRED - OBS
    bias, sd = d.mean(), d.std(ddof=1)
    lines = {ln.get_gid(): ln.get_ydata()[0] for ln in ax.get_lines() if ln.get_gid()}
    assert lines["bias"] == pytest.approx(bias)
    assert lines["loa_lower"] == pytest.approx(bias - 1.96 * sd)
    assert lines["loa_upper"] == pytest.approx(bias + 1.96 * sd)
    band = next(p for p in ax.patches if p.get_gid() == "bias_ci")
    half = 2.262157 * sd / np.sqrt(10)  # t(0.975, 9) from statistical tables
    assert band.get_y() == pytest.approx(bias - half, abs=1e-5)
    assert band.get_y() + band.get_height() == pytest.approx(bias + half, abs=1e-5)
    pts = next(c for c in ax.collections if c.get_gid() == "pairs")
    np.testing.assert_allclose(pts.get_offsets(), np.column_stack([(PRED + OBS) / 2, d]))
    assert ax.get_ylabel() == "Predicted − observed (months)"
    labels = [t.get_text() for t in ax.texts]
    assert f"bias: {bias:+.1f}".replace("-", "−") in labels
    save_all(ax, tmp_path, "tle_bland_altman")


def test_bland_altman_from_a_table_with_an_observed_column():
    t = pd.DataFrame({M: PRED, "observed": OBS})
    ax = ptle.bland_altman(t, "observed", loa_z=2.0)
    lines = {ln.get_gid(): ln.get_ydata()[0] for ln in ax.get_lines() if ln.get_gid()}
    d = PRED - OBS
    assert lines["loa_upper"] == pytest.approx(d.mean() + 2.0 * d.std(ddof=1))
    with pytest.raises(InputError):
        ptle.bland_altman(t, "nope")


def test_calibration_line_is_the_least_squares_fit(tmp_path):
    ax = ptle.calibration_plot(PRED, OBS)
    slope, intercept = np.polyfit(PRED, OBS, 1)
    line = next(ln for ln in ax.get_lines() if ln.get_gid() == "calibration")
    x, y = line.get_xdata(), line.get_ydata()
    np.testing.assert_allclose(y, intercept + slope * x)
    ident = next(ln for ln in ax.get_lines() if ln.get_gid() == "identity")
    np.testing.assert_allclose(ident.get_xdata(), ident.get_ydata())
    assert ax.get_xlim() == ax.get_ylim()
    save_all(ax, tmp_path, "tle_calibration")
