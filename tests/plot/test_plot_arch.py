"""Arch-form figures from arch_points, curve tables and mean_form tables."""

from __future__ import annotations

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
    assert legend.get_title().get_text() == "upper arch"
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
    assert parch.forms(both, arch="lo").get_legend().get_title().get_text() == "lower arch"
    with pytest.raises(InputError, match="fits must be"):
        parch.forms(pts, pd.DataFrame({"model": ["catenary"]}))


def test_forms_from_fits():
    from dentalkit import arch

    pts = arch_points("P003", "2024-03-01", "up")
    fits = arch.fit(pts, ["catenary", "parabola"])
    ax = parch.forms(pts, fits)
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels[0].startswith("catenary (RMSE ") and labels[1].startswith("parabola (RMSE ")
    curve = arch.curve(fits, frame="image")
    cat = curve[curve["model"].astype(str) == "catenary"][["x_image", "y_image"]].to_numpy()
    line = next(ln for ln in ax.get_lines() if ln.get_gid() == "model:catenary")
    np.testing.assert_allclose(np.asarray(line.get_xydata()), cat)


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


def test_mean_forms_with_bands(tmp_path):
    mf = _mean_form()
    ax = parch.mean_forms(mf, by="group")
    means = {ln.get_gid(): ln for ln in ax.get_lines() if str(ln.get_gid()).startswith("mean:")}
    assert set(means) == {
        "mean:Class I:up",
        "mean:Class I:lo",
        "mean:Class II:up",
        "mean:Class II:lo",
    }
    assert means["mean:Class I:lo"].get_linestyle() == "--"
    assert means["mean:Class I:up"].get_linestyle() == "-"
    assert means["mean:Class I:up"].get_color() != means["mean:Class II:up"].get_color()
    band = next(c for c in ax.collections if c.get_gid() == "band:Class II:up")
    verts = band.get_paths()[0].vertices
    sel = mf[(mf["group"] == "Class II") & (mf["arch"] == "up")]
    assert verts[:, 1].min() == pytest.approx(sel["y_lower"].min())
    assert verts[:, 1].max() == pytest.approx(sel["y_upper"].max())
    assert ax.yaxis_inverted()  # posterior down: incisors on top
    assert "patient's left" in ax.get_xlabel() and "(mm)" in ax.get_xlabel()
    texts = [t.get_text() for t in ax.get_legend().get_texts()]
    assert "Class II, upper (n = 9)" in texts
    assert ax.get_legend().get_title().get_text() == "catenary mean, 95% CI"
    save_all(ax, tmp_path, "mean_forms")


def test_mean_forms_refuses_several_models():
    mf = pd.concat([_mean_form(), _mean_form().assign(model="beta")])
    with pytest.raises(InputError, match="several models"):
        parch.mean_forms(mf, by="group")
    ax = parch.mean_forms(_mean_form(), by="group", arch="up", band=False)
    assert not [c for c in ax.collections if str(c.get_gid()).startswith("band:")]
