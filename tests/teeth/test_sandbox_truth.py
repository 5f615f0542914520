"""Recovery of the sandbox's drawn tooth sizes and missing teeth (ground truth).

The simulator builds outlines forward from drawn sizes with its own code
(docs/sandbox.md) and never imports dentalkit.teeth, so these tests compare two
independent implementations. The teeth table is built here with a few lines from
``simulate.respond`` (the converters are written elsewhere).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import shapely

from dentalkit.endpoints import get_endpoint
from dentalkit.sandbox.simulate import respond, truth
from dentalkit.teeth import measure, missing, symmetry
from tests.teeth.factory import DIGIT, QUADRANT

SEG = {
    "occlusogram_upper": "occlusogram_upper_seg",
    "occlusogram_lower": "occlusogram_lower_seg",
    "pano": "pano_segmentation",
    "frontal": "frontal_segmentation",
}
N_PATIENTS = 60
TS = "2024-03-01"


def _teeth_table(noise: bool) -> pd.DataFrame:
    rows = []
    for i in range(N_PATIENTS):
        pid = f"TRUTH-{i:03d}"
        req = {"PatientID": pid, "TimeStamp": TS, "ImageName": f"https://example.org/{pid}.png"}
        for source, endpoint in SEG.items():
            body = respond(get_endpoint(endpoint), req, noise=noise)
            for key, rec in body["Results"].items():
                kind, side, arch = key.split("_")
                rows.append(
                    {
                        "patient_id": pid,
                        "timestamp": TS,
                        "source": source,
                        "tooth": key,
                        "tooth_type": kind,
                        "side": side,
                        "arch": arch,
                        "fdi": QUADRANT[(side, arch)] * 10 + DIGIT[kind],
                        "missing": rec["missing"],
                        "geometry": None if rec["missing"] else shapely.Polygon(rec["points"]),
                    }
                )
    return pd.DataFrame(rows).astype({"fdi": "Int16", "missing": bool})


def _truth_table() -> pd.DataFrame:
    rows = []
    for i in range(N_PATIENTS):
        pid = f"TRUTH-{i:03d}"
        t = truth(pid, TS)["teeth"]
        for source in SEG:
            for key, rec in t[source]["teeth"].items():
                rows.append(
                    {
                        "patient_id": pid,
                        "source": source,
                        "tooth": key,
                        "mm_per_px": t[source]["mm_per_px"],
                        **rec,
                    }
                )
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def truth_table():
    return _truth_table()


@pytest.fixture(scope="module")
def exact(truth_table):
    teeth = _teeth_table(noise=False)
    cal = truth_table[["patient_id", "source", "mm_per_px"]].drop_duplicates()
    m = measure(teeth, cal)
    return m.merge(truth_table, on=["patient_id", "source", "tooth"], suffixes=("", "_true"))


@pytest.fixture(scope="module")
def noisy(truth_table):
    teeth = _teeth_table(noise=True)
    cal = truth_table[["patient_id", "source", "mm_per_px"]].drop_duplicates()
    m = measure(teeth, cal)
    return m.merge(truth_table, on=["patient_id", "source", "tooth"], suffixes=("", "_true"))


def test_noise_free_areas_are_the_drawn_areas(exact):
    present = exact[~exact["missing"]]
    assert len(present) > 0.9 * N_PATIENTS * 80
    np.testing.assert_allclose(present["area"], present["area_mm2"], rtol=1e-9)
    assert exact.loc[exact["missing"], "area"].isna().all()


def test_noise_free_occlusal_md_and_bl_are_the_drawn_sizes(exact):
    occ = exact[exact["source"].str.startswith("occlusogram") & ~exact["missing"]]
    assert (occ["md_axis"] == "arch").all()
    np.testing.assert_allclose(occ["md_width"], occ["md_mm"], rtol=1e-9)
    np.testing.assert_allclose(occ["bl_width"], occ["bl_mm"], rtol=1e-9)


def test_noise_free_pano_md_and_length(exact):
    pano = exact[(exact["source"] == "pano") & ~exact["missing"]]
    np.testing.assert_allclose(pano["md_width"], pano["md_mm"], rtol=1e-6)
    np.testing.assert_allclose(pano["height"], pano["length_mm"], rtol=1e-6)


def test_noise_free_frontal_apparent_width_and_visible_height(exact):
    fr = exact[(exact["source"] == "frontal") & ~exact["missing"]]
    np.testing.assert_allclose(fr["md_width"], fr["width_mm"], rtol=1e-6)
    np.testing.assert_allclose(fr["height"], fr["height_mm"], rtol=1e-6)


def test_sizes_recovered_within_the_outline_noise(noisy):
    # Outline vertices carry N(0, 0.06 mm) noise and are rounded to whole pixels
    # (0.04–0.1 mm), so a width (difference of two extreme projections) is off by at most
    # a few tenths of a millimetre, and on average by far less. The noise is correlated
    # along the outline (neighbouring vertices move together, docs/sandbox.md), so a whole
    # stretch of a small crown can move out or in: areas vary more than widths, up to
    # about 9 % for the smallest crowns (lower premolars on the frontal photo, ~2.5 mm).
    expected = {
        "occlusogram_upper": ("md_mm", "bl_width", "bl_mm"),
        "occlusogram_lower": ("md_mm", "bl_width", "bl_mm"),
        "pano": ("md_mm", "height", "length_mm"),
        "frontal": ("width_mm", "height", "height_mm"),
    }
    for source, (md_true, other, other_true) in expected.items():
        sub = noisy[(noisy["source"] == source) & ~noisy["missing"]]
        for err in (sub["md_width"] - sub[md_true], sub[other] - sub[other_true]):
            assert err.abs().max() < 0.5, source
            assert abs(err.mean()) < 0.2, source
        rel_area = sub["area"] / sub["area_mm2"] - 1
        assert rel_area.abs().max() < 0.1, source
        assert abs(rel_area.mean()) < 0.02, source


def test_missing_prevalence_equals_the_drawn_fraction(truth_table):
    teeth = _teeth_table(noise=True)
    res = missing(teeth)
    drawn = (
        truth_table[truth_table["source"] == "pano"]
        .groupby("fdi")["missing"]
        .agg(n="size", k="sum")
    )
    got = res.by_fdi.set_index("fdi")
    assert list(got.index) == list(drawn.index)
    np.testing.assert_array_equal(got["n_assessed"], drawn["n"])
    np.testing.assert_array_equal(got["n_affected"], drawn["k"])
    # every source shows the same drawn pattern, so no tooth is discordant
    assert not res.status["discordant"].any()
    # the documented third-molar agenesis rate (about 22 %, docs/sandbox.md) lies in the interval
    m3 = res.patterns.set_index("pattern").loc["third_molar"]
    per_tooth = (
        got.loc[[18, 28, 38, 48], "n_affected"].sum()
        / got.loc[[18, 28, 38, 48], "n_assessed"].sum()
    )
    assert 0.12 < per_tooth < 0.32
    assert m3["n_assessed"] == N_PATIENTS


def test_symmetry_ratio_is_the_drawn_ratio(exact):
    occ = exact[exact["source"] == "occlusogram_upper"]
    pairs = symmetry(occ, "md_width").pairs.dropna(subset=["ratio"])
    true = (
        occ.pivot_table(index=["patient_id", "tooth_type"], columns="side", values="md_mm")
        .dropna()
        .eval("rgt / lft")
        .rename("true_ratio")
        .reset_index()
    )
    both = pairs.merge(true, on=["patient_id", "tooth_type"])
    assert len(both) == len(pairs) > 0
    np.testing.assert_allclose(both["ratio"], both["true_ratio"], rtol=1e-9)
