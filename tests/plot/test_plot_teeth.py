"""Tooth map (values → colours, missing teeth hatched) and the FDI odontogram."""

from __future__ import annotations

import matplotlib as mpl
import numpy as np
import pandas as pd
import pytest
import shapely

from dentalkit import teeth as dteeth
from dentalkit.errors import DentalkitWarning, InputError
from dentalkit.plot import teeth as pteeth
from dentalkit.plot.style import MISSING_COLOUR
from tests.plot.plot_tables import save_all, teeth

VIRIDIS = mpl.colormaps["viridis"]


def _row(tooth, fdi, geom):
    tt, side, arch = tooth.split("_")
    return {
        "patient_id": "p",
        "timestamp": "t",
        "source": "pano",
        "tooth": tooth,
        "tooth_type": tt,
        "side": side,
        "arch": arch,
        "fdi": fdi,
        "missing": geom is None,
        "geometry": geom,
    }


def _hand_teeth() -> pd.DataFrame:
    # upper arch, viewer's left = patient's right; areas 200, 240, 200 px²
    return pd.DataFrame(
        [
            _row("c_rgt_up", 13, shapely.box(-40, 0, -28, 20)),  # centroid (−34, 10)
            _row("i2_rgt_up", 12, None),
            _row("i1_rgt_up", 11, shapely.box(-10, 0, 0, 20)),  # centroid (−5, 10)
            _row("i1_lft_up", 21, shapely.box(0, 0, 10, 20)),  # centroid (5, 10)
            _row("p1_rgt_up", 14, None),
        ]
    )


def test_colours_follow_the_values_and_missing_teeth_are_hatched(tmp_path):
    t = _hand_teeth()
    m = dteeth.measure(t, measures=["area"])
    ax = pteeth.tooth_map(t, "area", values=m)
    ax.figure.canvas.draw()  # colours are mapped at draw time
    (coll,) = [c for c in ax.collections if c.get_gid() == "teeth"]
    # present teeth in table order: c (240), i1 right (200), i1 left (200); limits 200 … 240
    np.testing.assert_allclose(coll.get_facecolors(), [VIRIDIS(1.0), VIRIDIS(0.0), VIRIDIS(0.0)])
    holes = {p.get_gid(): p for p in ax.patches if str(p.get_gid()).startswith("missing:")}
    assert set(holes) == {"missing:i2_rgt_up", "missing:p1_rgt_up"}
    i2 = holes["missing:i2_rgt_up"]
    assert i2.get_hatch() == pteeth.MISSING_HATCH
    # halfway between its neighbours c (−34, 10) and i1 (−5, 10); radius the mean of theirs
    np.testing.assert_allclose(i2.center, (-19.5, 10.0))
    r = (np.sqrt(240 / np.pi) + np.sqrt(200 / np.pi)) / 2
    assert i2.width == pytest.approx(2 * r)
    # p1 lies beyond c: extrapolated one step (29 px per two positions) past it
    np.testing.assert_allclose(holes["missing:p1_rgt_up"].center, (-48.5, 10.0))
    numbers = sorted(t.get_text() for t in ax.texts)
    assert numbers == ["11", "12", "13", "14", "21"]
    (cbar,) = ax.child_axes  # the colour bar, inset beside the image
    assert cbar.get_ylabel() == "area (px²)"
    assert ax.yaxis_inverted() and ax.get_aspect() == 1.0
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["missing (position estimated)"]
    save_all(ax, tmp_path, "tooth_map")


def test_diverging_map_centres_zero_and_nan_is_grey():
    t = _hand_teeth()
    t["z"] = [1.5, np.nan, np.nan, -0.5, np.nan]
    ax = pteeth.tooth_map(t, "z", center=0.0)
    ax.figure.canvas.draw()
    (coll,) = [c for c in ax.collections if c.get_gid() == "teeth"]
    rdbu = mpl.colormaps["RdBu_r"]
    # symmetric limits ±1.5: 1.5 → top of the map, −0.5 → 1/3, NaN → grey
    np.testing.assert_allclose(coll.get_facecolors()[0], rdbu(1.0))
    np.testing.assert_allclose(coll.get_facecolors()[2], rdbu(0.5 - 0.5 / 3.0), atol=1e-2)
    np.testing.assert_allclose(coll.get_facecolors()[1], mpl.colors.to_rgba(MISSING_COLOUR))


def test_an_arch_with_one_present_tooth_cannot_place_its_missing_teeth():
    t = _hand_teeth().iloc[[0, 1]]
    with pytest.warns(DentalkitWarning, match=r"\['i2_rgt_up'\] are not drawn"):
        ax = pteeth.tooth_map(t)
    assert not [p for p in ax.patches if str(p.get_gid()).startswith("missing:")]


def test_value_errors_are_explained():
    t = _hand_teeth()
    with pytest.raises(InputError, match="not in the teeth table"):
        pteeth.tooth_map(t, "area")
    dup = pd.concat([dteeth.measure(t, measures=["area"])] * 2)
    with pytest.raises(InputError, match="several rows per"):
        pteeth.tooth_map(t, "area", values=dup)


def test_sandbox_panoramic_with_image():
    from dentalkit.sandbox.render import input_image

    t = teeth("P002", "2024-03-01", "pano")
    png = input_image("pano/P002/2024-03-01.png")
    m = dteeth.measure(t, mm_per_px=0.1, measures=["area"])
    ax = pteeth.tooth_map(t, "area", values=m, image=png, crop=False)
    assert ax.get_ylim() == (1400 - 0.5, -0.5)  # the whole 2800 × 1400 radiograph, y down
    missing = set(t.loc[t["missing"], "tooth"])
    assert {p.get_gid() for p in ax.patches if str(p.get_gid()).startswith("missing:")} == {
        f"missing:{k}" for k in missing
    }
    assert ax.child_axes[0].get_ylabel() == "area (mm²)"


# --- odontogram ---------------------------------------------------------------------


def test_the_chart_is_laid_out_as_clinicians_read_it():
    lay = pteeth.ODONTOGRAM_LAYOUT.set_index("fdi")
    upper, lower = lay[lay["row"] == 0], lay[lay["row"] == 1]
    assert upper["x"].idxmin() == 18 and upper["x"].idxmax() == 28  # patient's right on the left
    assert lower["x"].idxmin() == 48 and lower["x"].idxmax() == 38
    assert lay.loc[11, "x"] < lay.loc[21, "x"] and lay.loc[41, "x"] < lay.loc[31, "x"]
    assert lay.loc[11, "x"] == lay.loc[41, "x"] and lay.loc[26, "x"] == lay.loc[36, "x"]
    assert len(lay) == 32


def test_odontogram_colours_and_grey_for_teeth_without_data(tmp_path):
    table = pd.DataFrame({"fdi": [18, 12, 35, 45], "prevalence": [0.0, 0.10, 0.20, 0.05]})
    ax = pteeth.odontogram(table)
    ax.figure.canvas.draw()
    (coll,) = [c for c in ax.collections if c.get_gid() == "odontogram"]
    colours = dict(zip(pteeth.ODONTOGRAM_LAYOUT["fdi"], coll.get_facecolors(), strict=True))
    np.testing.assert_allclose(colours[18], VIRIDIS(0.0))  # vmin 0 for proportions
    np.testing.assert_allclose(colours[35], VIRIDIS(1.0))
    np.testing.assert_allclose(colours[12], VIRIDIS(0.5))
    np.testing.assert_allclose(colours[21], mpl.colors.to_rgba(MISSING_COLOUR))
    values = sorted(t.get_text() for t in ax.texts if t.get_text() in {"0", "10", "20", "5"})
    assert values == ["0", "10", "20", "5"]  # percentages in the cells
    assert ax.yaxis_inverted()  # upper arch on top
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["not assessed"]
    (cbar,) = ax.child_axes  # the colour bar, inset beside the image
    assert cbar.get_xlabel() == "Prevalence (%), in the cells"  # the cells' unit said
    save_all(ax, tmp_path, "odontogram")


def test_odontogram_of_missing_teeth_prevalence():
    cohort = pd.concat([teeth(f"P{i:03d}", "2024-03-01", "pano") for i in range(1, 21)])
    by_fdi = dteeth.missing(cohort).by_fdi
    ax = pteeth.odontogram(by_fdi)
    (coll,) = [c for c in ax.collections if c.get_gid() == "odontogram"]
    vals = dict(zip(pteeth.ODONTOGRAM_LAYOUT["fdi"], coll.get_array(), strict=True))
    n18 = (cohort["fdi"].eq(18) & cohort["missing"]).sum()
    assert vals[18] == pytest.approx(n18 / 20)


@pytest.mark.parametrize(
    ("table", "match"),
    [
        (pd.DataFrame({"fdi": [11, 11], "prevalence": [0.1, 0.2]}), "several rows per FDI"),
        (pd.DataFrame({"fdi": [19], "prevalence": [0.1]}), "not permanent FDI"),
        (pd.DataFrame({"tooth": [11], "prevalence": [0.1]}), "lacks column"),
    ],
)
def test_odontogram_refuses_bad_tables(table, match):
    with pytest.raises(InputError, match=match):
        pteeth.odontogram(table)
