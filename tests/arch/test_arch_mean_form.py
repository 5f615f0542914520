"""Mean arch forms: pointwise means and t-bands against hand computation and scipy.stats."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dentalkit import arch
from dentalkit.errors import DentalkitWarning, InputError

from .helpers import arch_table, catenary


def _cohort(a_values, group, arch_="up", start=0, half=220.0, n_points=15):
    rng = np.random.default_rng(start)
    frames = []
    for j, a in enumerate(a_values):
        x = np.linspace(-half, half, n_points)
        tab = arch_table(
            x,
            catenary(x, a),
            theta=rng.uniform(-3, 3),
            t=rng.uniform(0, 900, 2),
            mirror=bool(j % 2),
            patient=f"{group}{start + j}",
            arch=arch_,
        )
        tab["group"] = group
        frames.append(tab)
    return pd.concat(frames, ignore_index=True)


def test_mean_and_band_equal_the_pointwise_statistics_of_the_generating_curves():
    a_ctrl = [140.0, 155.0, 170.0, 160.0]
    a_case = [120.0, 130.0, 125.0]
    pts = pd.concat([_cohort(a_ctrl, "ctrl"), _cohort(a_case, "case", start=10)], ignore_index=True)
    fits = arch.fit(pts, "catenary")
    fits = fits.merge(pts[["patient_id", "group"]].drop_duplicates(), on="patient_id")
    mf = arch.mean_form(fits, by="group", n=11)
    assert set(mf["group"]) == {"ctrl", "case"}
    for group, avals in (("ctrl", a_ctrl), ("case", a_case)):
        g = mf[mf["group"] == group]
        assert len(g) == 11
        np.testing.assert_allclose([g["x"].min(), g["x"].max()], [-220, 220], atol=1e-6)
        curves = np.array([catenary(g["x"].to_numpy(), a) for a in avals])
        np.testing.assert_allclose(g["y_mean"], curves.mean(0), rtol=1e-9, atol=1e-9)
        np.testing.assert_allclose(g["y_sd"], curves.std(0, ddof=1), rtol=1e-7, atol=1e-9)
        j = 8  # one grid point against scipy's t interval
        lo, hi = stats.t.interval(
            0.95, len(avals) - 1, loc=curves[:, j].mean(), scale=stats.sem(curves[:, j])
        )
        assert g["y_lower"].iloc[j] == pytest.approx(lo, rel=1e-9)
        assert g["y_upper"].iloc[j] == pytest.approx(hi, rel=1e-9)
        assert (g["n_arches"] == len(avals)).all()


def test_points_in_gives_the_same_as_fits_in_and_groups_by_arch():
    pts = pd.concat(
        [
            _cohort([150.0, 160.0], "g", arch_="up"),
            _cohort([130.0, 135.0, 140.0], "g", arch_="lo", start=5),
        ],
        ignore_index=True,
    )
    from_points = arch.mean_form(pts, by="group", n=7)
    from_fits = arch.mean_form(
        arch.fit(pts, "catenary").merge(pts[["patient_id", "arch", "group"]].drop_duplicates()),
        by="group",
        n=7,
    )
    pd.testing.assert_frame_equal(from_points, from_fits)
    assert list(from_points.groupby("arch", observed=True)["n_arches"].first()) == [2, 3]


def test_common_range_is_the_intersection_of_the_arches_spans():
    a = _cohort([150.0], "g", half=200.0)
    b = _cohort([150.0], "g", start=1, half=150.0)
    mf = arch.mean_form(pd.concat([a, b], ignore_index=True), n=5)
    np.testing.assert_allclose([mf["x"].min(), mf["x"].max()], [-150, 150], atol=1e-6)
    one = arch.mean_form(a, n=5)
    assert one["y_sd"].isna().all()
    assert one["y_lower"].isna().all()


def test_mean_form_problems():
    pts = _cohort([150.0, 160.0], "g")
    with pytest.raises(InputError, match="level must be"):
        arch.mean_form(pts, level=95)
    with pytest.raises(InputError, match="lacks column"):
        arch.mean_form(pts, by="sex")
    varying = pts.copy()
    varying.loc[0, "group"] = "other"
    with pytest.raises(InputError, match="vary within an arch"):
        arch.mean_form(varying, by="group")
    fits = arch.fit(pts, "catenary")
    with pytest.raises(InputError, match="no poly4 fit"):
        arch.mean_form(fits, model="poly4")
    mixed = pd.concat([fits, arch.fit(pts, "catenary", mm_per_px=0.1).assign(patient_id="x")])
    with pytest.raises(InputError, match="mixes units"):
        arch.mean_form(mixed)


def test_band_counts_patients_not_sessions():
    # two sessions of patient g0 (a = 140, 160) and one of g1 (a = 150), g2 (a = 170):
    # the band is the t interval over 3 per-patient mean curves, not over 4 arches
    x = np.linspace(-220, 220, 15)
    frames = []
    for pid, ts, a in (
        ("g0", "2024-01-01", 140.0),
        ("g0", "2025-01-01", 160.0),
        ("g1", "2024-01-01", 150.0),
        ("g2", "2024-01-01", 170.0),
    ):
        frames.append(arch_table(x, catenary(x, a), patient=pid, timestamp=ts).assign(group="g"))
    pts = pd.concat(frames, ignore_index=True)
    mf = arch.mean_form(pts, by="group", n=9)
    assert (mf["n_units"] == 3).all() and (mf["n_arches"] == 4).all()
    grid = mf["x"].to_numpy()
    per_patient = np.array(
        [
            (catenary(grid, 140.0) + catenary(grid, 160.0)) / 2,
            catenary(grid, 150.0),
            catenary(grid, 170.0),
        ]
    )
    j = 2
    lo, hi = stats.t.interval(
        0.95, 2, loc=per_patient[:, j].mean(), scale=stats.sem(per_patient[:, j])
    )
    assert mf["y_lower"].iloc[j] == pytest.approx(lo, rel=1e-6)
    assert mf["y_upper"].iloc[j] == pytest.approx(hi, rel=1e-6)
    rows = arch.mean_form(pts, by="group", n=9, unit=None)
    assert (rows["n_units"] == 4).all()  # the caller's explicit choice: arches as units
    moved = pts.assign(group=np.where(pts["timestamp"] == "2025-01-01", "h", "g"))
    with pytest.raises(InputError, match="more than one group"):
        arch.mean_form(moved, by="group", n=9)


def _one_part_fails():
    """Upper arches fit (catenaries of known a); every lower arch has 3 points, fewer than
    the 5 a catenary with pose='fit' needs, so no lower fit has status 'ok'."""
    up = _cohort([150.0, 160.0, 170.0], "g", arch_="up")
    lo = _cohort([130.0, 140.0], "g", arch_="lo", start=5, n_points=3)
    return up, pd.concat([up, lo], ignore_index=True)


def test_collect_keeps_the_other_arch_and_lists_the_group_without_an_ok_fit():
    up, pts = _one_part_fails()
    mf = arch.mean_form(pts, by="group", n=9, errors="collect")
    assert set(mf["arch"].astype(str)) == {"up"}  # the lower mean form is absent
    # the upper mean form is that of the upper arches alone, and their known curves
    pd.testing.assert_frame_equal(mf, arch.mean_form(up, by="group", n=9))
    curves = np.array([catenary(mf["x"].to_numpy(), a) for a in (150.0, 160.0, 170.0)])
    np.testing.assert_allclose(mf["y_mean"], curves.mean(0), atol=1e-6)
    found = arch.problems(mf)
    assert len(found) == 1
    row = found.iloc[0]
    assert row["table"] == "arch_mean_forms" and row["arch"] == "lo"
    assert row["path"] == "group=g, arch=lo" and pd.isna(row["row"])
    assert "no catenary fit with status 'ok'" in row["reason"]
    assert "too_few_points 2" in row["reason"]  # what became of the 2 lower arches


def test_raise_names_the_group_and_how_to_go_on():
    _, pts = _one_part_fails()
    with pytest.raises(InputError) as info:
        arch.mean_form(pts, by="group")  # errors="raise" is the default
    msg = str(info.value)
    assert "group=g, arch=lo" in msg and "no catenary fit with status 'ok'" in msg
    assert "errors='collect'" in msg and "arch.fit" in msg
    assert len(info.value.problems) == 1


def test_no_group_to_average_gives_an_empty_table_in_collect_and_warns_in_warn():
    lo = _cohort([130.0, 140.0], "g", arch_="lo", n_points=3)
    with pytest.raises(InputError, match="no catenary fit with status 'ok'"):
        arch.mean_form(lo, by="group")
    mf = arch.mean_form(lo, by="group", errors="collect")
    assert len(mf) == 0
    assert list(mf.columns) == list(arch.mean_form(_cohort([150.0], "g"), by="group").columns)
    assert arch.problems(mf)["path"].tolist() == ["group=g, arch=lo"]
    with pytest.warns(DentalkitWarning, match="1 group"):
        warned = arch.mean_form(lo, by="group", errors="warn")
    pd.testing.assert_frame_equal(arch.problems(warned), arch.problems(mf))
    with pytest.raises(InputError, match="errors="):
        arch.mean_form(lo, errors="ignore_all")


def test_a_group_without_a_common_x_range_is_listed_in_collect_and_raised_by_default():
    pts = pd.concat(
        [_cohort([150.0, 160.0], "ok"), _cohort([140.0, 150.0], "apart", start=5)],
        ignore_index=True,
    )
    fits = arch.fit(pts, "catenary").merge(pts[["patient_id", "group"]].drop_duplicates())
    # by hand: the two arches of group "apart" cover [-220, -10] and [10, 220]
    apart = (fits["group"] == "apart").to_numpy()
    fits.loc[apart, "x_min"] = [-220.0, 10.0]
    fits.loc[apart, "x_max"] = [-10.0, 220.0]
    with pytest.raises(InputError, match="group=apart, arch=up: the arches of this group"):
        arch.mean_form(fits, by="group")
    mf = arch.mean_form(fits, by="group", n=5, errors="collect")
    assert set(mf["group"]) == {"ok"}
    pd.testing.assert_frame_equal(mf, arch.mean_form(fits[~apart], by="group", n=5))
    assert arch.problems(mf)["path"].tolist() == ["group=apart, arch=up"]
