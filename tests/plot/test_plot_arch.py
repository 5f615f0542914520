"""Arch-form figures from arch_points, curve tables and mean_form tables."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dentalkit.errors import InputError
from dentalkit.plot import arch as parch
from tests.plot.plot_tables import arch_points, save_all


def _curves(points: pd.DataFrame) -> pd.DataFrame:
    """Two made-up 'fitted' curves through the point cloud, in image pixels."""
    x = np.linspace(points["x"].min(), points["x"].max(), 30)
    mid = points["x"].mean()
    top, bottom = points["y"].min(), points["y"].max()
    k = (bottom - top) / (x.max() - mid) ** 2
    parts = []
    for model, kk in (("catenary", k), ("parabola", 0.9 * k)):
        parts.append(
            pd.DataFrame(
                {
                    "patient_id": "P003",
                    "timestamp": "2024-03-01",
                    "arch": "up",
                    "model": model,
                    "x_image": x,
                    "y_image": top + kk * (x - mid) ** 2,
                }
            )
        )
    return pd.concat(parts, ignore_index=True)


def test_points_and_one_curve_per_model(tmp_path):
    pts = arch_points("P003", "2024-03-01", "up")
    curves = _curves(pts)
    ax = parch.forms(pts, curves, number_points=True)
    lines = {ln.get_gid(): ln for ln in ax.get_lines()}
    assert set(lines) == {"model:catenary", "model:parabola"}
    got = np.asarray(lines["model:parabola"].get_xydata())
    want = curves[curves["model"] == "parabola"][["x_image", "y_image"]].to_numpy()
    np.testing.assert_allclose(got, want)
    (scatter,) = [c for c in ax.collections if c.get_gid() == "arch_points"]
    np.testing.assert_allclose(scatter.get_offsets(), pts[["x", "y"]].to_numpy())
    assert ax.yaxis_inverted() and ax.get_aspect() == 1.0
    assert len(ax.texts) == len(pts)  # point numbers
    legend = ax.get_legend()
    # the session by pseudonym (never the ID or the timestamp), then the arch
    assert legend.get_title().get_text() == "patient 1, session 1 (baseline)\nupper arch"
    assert [t.get_text() for t in legend.get_texts()] == ["catenary", "parabola", "arch points"]
    save_all(ax, tmp_path, "arch_forms")


def test_model_choice_and_errors():
    pts = arch_points("P003", "2024-03-01", "up")
    ax = parch.forms(pts, _curves(pts), models=["parabola"])
    assert [ln.get_gid() for ln in ax.get_lines()] == ["model:parabola"]
    with pytest.raises(InputError, match=r"model\(s\) \['beta'\]"):
        parch.forms(pts, _curves(pts), models=["beta"])
    both = pd.concat([pts, arch_points("P003", "2024-03-01", "lo")])
    with pytest.raises(InputError, match="holds 2 sessions/images"):
        parch.forms(both)
    title = parch.forms(both, arch="lo").get_legend().get_title().get_text()
    assert title.endswith("\nlower arch") and "P003" not in title
    with pytest.raises(InputError, match="fits must be"):
        parch.forms(pts, pd.DataFrame({"model": ["catenary"]}))


def test_forms_from_fits():
    from dentalkit import arch

    pts = arch_points("P003", "2024-03-01", "up")
    fits = arch.fit(pts, ["catenary", "parabola"])
    ax = parch.forms(pts, fits)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0].startswith("catenary (") and labels[0].endswith(" px)")
    assert labels[1].startswith("parabola (")
    assert " ".join(ax.get_legend().get_title().get_text().split()).endswith(
        "upper arch (model: RMSE)"
    )
    rmse = fits.set_index(fits["model"].astype(str))["rmse"]
    assert labels[0] == f"catenary ({rmse['catenary']:.2g} px)"
    curve = arch.curve(fits, frame="image")
    cat = curve[curve["model"].astype(str) == "catenary"][["x_image", "y_image"]].to_numpy()
    line = next(ln for ln in ax.get_lines() if ln.get_gid() == "model:catenary")
    np.testing.assert_allclose(np.asarray(line.get_xydata()), cat)


def test_forms_from_fits_in_mm_are_drawn_in_mm():
    """Issue 31: the axes were in px while the legend's RMSE was in mm."""
    from dentalkit import arch

    pts = arch_points("P003", "2024-03-01", "up")
    fits = arch.fit(pts, ["catenary", "poly4"], mm_per_px=0.08)
    ax = parch.forms(pts, fits)
    assert ax.get_xlabel() == "x (mm)" and ax.get_ylabel() == "y (mm, down)"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0].endswith(" mm)")
    (scatter,) = [c for c in ax.collections if c.get_gid() == "arch_points"]
    np.testing.assert_allclose(scatter.get_offsets(), pts[["x", "y"]].to_numpy() * 0.08)
    curve = arch.curve(fits, frame="image")
    cat = curve[curve["model"].astype(str) == "catenary"][["x_image", "y_image"]].to_numpy()
    line = next(ln for ln in ax.get_lines() if ln.get_gid() == "model:catenary")
    np.testing.assert_allclose(np.asarray(line.get_xydata()), cat * 0.08)
    # the curves that coincide stay visible: each model has its own dash pattern
    styles = {ln.get_gid(): ln.get_linestyle() for ln in ax.get_lines()}
    assert styles["model:catenary"] == "-" and styles["model:poly4"] != "-"


def _mean_form() -> pd.DataFrame:
    x = np.linspace(-20, 20, 9)
    parts = []
    for g, depth, n in (("Class I", 25.0, 12), ("Class II", 28.0, 9)):
        for a, d in (("up", depth), ("lo", depth - 3)):
            y = d * (x / 20) ** 2
            parts.append(
                pd.DataFrame(
                    {
                        "group": g,
                        "arch": a,
                        "model": "catenary",
                        "x": x,
                        "y_mean": y,
                        "y_lower": y - 1.0,
                        "y_upper": y + 1.5,
                        "n_arches": n,
                        "unit": "mm",
                        "level": 0.95,
                    }
                )
            )
    return pd.concat(parts, ignore_index=True)


def _legend_share(fig) -> float:
    """Area of all legends as a share of the figure's area (drawn first)."""
    fig.canvas.draw()
    legends = [a.get_legend() for a in fig.axes if a.get_legend() is not None]
    legends += list(fig.legends)
    area = sum(lg.get_window_extent().width * lg.get_window_extent().height for lg in legends)
    return area / (fig.bbox.width * fig.bbox.height)


def test_mean_forms_upper_and_lower_in_separate_panels(tmp_path):
    mf = _mean_form()
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any matplotlib warning fails the test
        ax = parch.mean_forms(mf, by="group")
        fig = ax.figure
        save_all(ax, tmp_path, "mean_forms")
    panels = {a.get_gid(): a for a in fig.axes}
    assert set(panels) == {"panel:up", "panel:lo"} and ax is panels["panel:up"]
    for a, arch_ in ((panels["panel:up"], "up"), (panels["panel:lo"], "lo")):
        gids = {ln.get_gid() for ln in a.get_lines() if str(ln.get_gid()).startswith("mean:")}
        assert gids == {f"mean:Class I:{arch_}", f"mean:Class II:{arch_}"}
        assert a.yaxis_inverted()  # posterior down: incisors on top
        name = "upper" if arch_ == "up" else "lower"
        assert f"{name} arch" in [t.get_text() for t in a.texts]  # each panel named
    # one legend for both panels, above the upper one
    assert panels["panel:lo"].get_legend() is None
    legend = panels["panel:up"].get_legend()
    texts = [t.get_text() for t in legend.get_texts()]
    assert texts == ["Class I (n = 12 patients)", "Class II (n = 9 patients)"]
    title = " ".join(legend.get_title().get_text().split())
    assert title == "Catenary mean and 95 % CI by group"
    up, lo = panels["panel:up"], panels["panel:lo"]
    assert up.get_lines()[0].get_color() != up.get_lines()[1].get_color()
    # the same scale and limits in both panels, fitted to the curves and bands (4 % margin)
    assert up.get_xlim() == lo.get_xlim() and up.get_ylim() == lo.get_ylim()
    span = 40.0  # x from −20 to 20; y from −1 (lower band) to 28 + 1.5 (Class II upper band)
    assert up.get_xlim() == pytest.approx((-20 - 0.04 * span, 20 + 0.04 * span))
    assert up.get_ylim() == pytest.approx((29.5 + 0.04 * span, -1.0 - 0.04 * span))
    band = next(c for c in lo.collections if c.get_gid() == "band:Class II:lo")
    verts = band.get_paths()[0].vertices
    sel = mf[(mf["group"] == "Class II") & (mf["arch"] == "lo")]
    assert verts[:, 1].min() == pytest.approx(sel["y_lower"].min())
    assert verts[:, 1].max() == pytest.approx(sel["y_upper"].max())
    assert "patient's left" in lo.get_xlabel() and "(mm)" in lo.get_xlabel()
    assert _legend_share(fig) <= 0.25


def test_mean_forms_in_a_given_axes_split_its_place(tmp_path):
    from dentalkit import plot

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with plot.style():
            fig = plot.figure("single")
            ax = parch.mean_forms(_mean_form(), by="group", ax=fig.add_subplot())
            save_all(fig, tmp_path, "mean_forms_given")
    assert ax.figure is fig
    assert sorted(a.get_gid() for a in fig.axes) == ["panel:lo", "panel:up"]
    assert _legend_share(fig) <= 0.25
    # the count column of the table labels the groups, whatever its name
    one = parch.mean_forms(_mean_form().rename(columns={"n_arches": "n_patients"}), by="group")
    assert one.get_legend().get_texts()[0].get_text() == "Class I (n = 12 patients)"


def test_forms_layout_legend_compact_axes_on_the_data(tmp_path):
    from dentalkit import arch, plot

    pts = arch_points("P003", "2024-03-01", "up")
    fits = arch.fit(pts, ["catenary", "beta", "poly4", "parabola"])
    for given in (False, True):
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            with plot.style():
                ax = parch.forms(
                    pts, fits, ax=plot.figure("single").add_subplot() if given else None
                )
                save_all(ax, tmp_path, f"forms_{given}")
        assert _legend_share(ax.figure) <= 0.25
        lo, hi = sorted(ax.get_xlim())
        span = pts["x"].max() - pts["x"].min()
        # the view is the data (with the curves) and a margin, not blank bands either side
        assert pts["x"].min() - 0.15 * span <= lo <= pts["x"].min()
        assert pts["x"].max() <= hi <= pts["x"].max() + 0.15 * span


def test_mean_forms_refuses_several_models():
    mf = pd.concat([_mean_form(), _mean_form().assign(model="beta")])
    with pytest.raises(InputError, match="several models"):
        parch.mean_forms(mf, by="group")
    ax = parch.mean_forms(_mean_form(), by="group", arch="up", band=False)
    assert not [c for c in ax.collections if str(c.get_gid()).startswith("band:")]
