"""study.analyze with only one occlusogram endpoint calibrated.

The demo cohort (3 sandbox patients, the session fixture ``demo_study``) analysed three
times: every endpoint calibrated (the mm run), no endpoint calibrated (the px run) and
the lower occlusogram left uncalibrated (the partial run). Before, the partial run
stopped in ``arch.fit`` ("mm_per_px has no value for N arch(es)") in every errors mode.
The partial run must give the upper arches exactly as the mm run and the lower arches
exactly as the px run; the hand check is the sandbox's documented scale (lengths in px =
lengths in mm / mm_per_px; angles and Akaike weights do not change).
"""

from __future__ import annotations

import warnings

import matplotlib
import numpy as np
import pandas as pd
import pytest

from dentalkit import arch, study
from dentalkit.errors import DentalkitWarning
from dentalkit.study.demo import sandbox_calibration
from dentalkit.study.figures import _plan_mean_arch_forms
from tests.schema_check import check_file

matplotlib.use("Agg")

LOWER = "occlusogram_lower_points"
KEY = ["patient_id", "timestamp", "arch"]


@pytest.fixture(scope="module")
def tables(demo_tables):
    return demo_tables


def _partial() -> dict[str, float]:
    return {k: v for k, v in sandbox_calibration().items() if k != LOWER}


def _run(tables, cal, errors="raise"):
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DentalkitWarning)
        return study.analyze(tables, cal, errors=errors)


@pytest.fixture(scope="module")
def runs(tables):
    # errors="raise" (the default): the partial run must not stop anywhere
    return {
        "mm": _run(tables, sandbox_calibration()),
        "px": _run(tables, None),
        "partial": _run(tables, _partial()),
    }


def _arch(df: pd.DataFrame, a: str) -> pd.DataFrame:
    part = df[df["arch"].astype(str) == a]
    cols = [c for c in part.columns if c in {*KEY, "measure", "model", "x"}]
    return part.sort_values(cols).reset_index(drop=True)


def test_the_sandbox_occlusograms_have_a_scale_to_leave_out():
    cal = sandbox_calibration()
    assert cal[LOWER] == cal["occlusogram_upper_points"] == 0.08  # 0.08 mm per pixel


@pytest.mark.parametrize("table", ["arch_fits", "arch_measures", "arch_mean_forms"])
def test_upper_arches_as_the_mm_run_and_lower_as_the_px_run(runs, table):
    partial = runs["partial"][table]
    for a, same in (("up", "mm"), ("lo", "px")):
        got, want = _arch(partial, a), _arch(runs[same][table], a)
        assert len(got) and len(got) == len(want)
        assert (got["unit"].astype(str) == same).all()
        cols = [c for c in want.columns if c != "reason"]
        pd.testing.assert_frame_equal(
            got[cols].astype(object), want[cols].astype(object), check_exact=False, rtol=1e-12
        )


def test_pixel_lengths_are_the_mm_lengths_over_the_scale(runs):
    s = sandbox_calibration()[LOWER]
    lo = _arch(runs["partial"]["arch_measures"], "lo")
    mm = _arch(runs["mm"]["arch_measures"], "lo")
    ok = (mm["status"] == "ok").to_numpy()
    assert ok.sum() >= 12  # 4 measures x 3 patients at least
    np.testing.assert_allclose(lo["value"][ok], mm["value"][ok] / s, rtol=1e-9)
    # fits: lengths scale, angles and Akaike weights do not
    fits, fits_mm = _arch(runs["partial"]["arch_fits"], "lo"), _arch(runs["mm"]["arch_fits"], "lo")
    ok = (fits_mm["status"] == "ok").to_numpy() & (fits["status"] == "ok").to_numpy()
    assert ok.sum() >= 10
    np.testing.assert_allclose(fits["rmse"][ok], fits_mm["rmse"][ok] / s, rtol=1e-4)
    np.testing.assert_allclose(fits["rotation_deg"][ok], fits_mm["rotation_deg"][ok], atol=1e-6)
    np.testing.assert_allclose(fits["aicc_weight"][ok], fits_mm["aicc_weight"][ok], atol=1e-4)
    para = ok & (fits["model"].astype(str) == "parabola").to_numpy()
    # y = c2 x^2: c2 in 1/px is c2 in 1/mm times mm_per_px
    np.testing.assert_allclose(fits["c2"][para], fits_mm["c2"][para] * s, rtol=1e-4)
    forms = _arch(runs["partial"]["arch_mean_forms"], "lo")
    forms_mm = _arch(runs["mm"]["arch_mean_forms"], "lo")
    np.testing.assert_allclose(forms["x"], forms_mm["x"] / s, rtol=1e-4, atol=1e-6)
    np.testing.assert_allclose(forms["y_mean"], forms_mm["y_mean"] / s, rtol=1e-4, atol=1e-3)
    assert (forms["n_units"] == forms_mm["n_units"]).all()


def test_px_and_mm_are_never_subtracted_nor_averaged_together(runs):
    am = runs["partial"]["arch_measures"]
    diff = am[am["arch"] == "up-lo"]
    sessions = am[am["arch"] != "up-lo"][["patient_id", "timestamp"]].drop_duplicates()
    differences = [m.name for m in arch.MEASURES.values() if m.base]
    assert len(diff) == len(sessions) * len(differences)  # one row each, as arch.measure
    assert diff["value"].isna().all()
    assert (diff["status"] == "needs_mm").all()
    assert diff["reason"].str.contains("calibrate both occlusogram endpoints").all()
    # the mm run has those differences (every session has both arches)
    full = runs["mm"]["arch_measures"]
    assert (full.loc[full["arch"] == "up-lo", "status"] == "ok").any()
    # each mean form is of one unit: upper in mm, lower in px
    mf = runs["partial"]["arch_mean_forms"]
    units = mf.groupby("arch", observed=True)["unit"].unique()
    assert [list(units["up"]), list(units["lo"])] == [["mm"], ["px"]]


def test_the_mean_forms_figure_draws_the_mm_arches_only(runs, tables):
    import matplotlib.pyplot as plt

    inputs = study.FigureInputs(tables, runs["partial"], _partial())
    draw = _plan_mean_arch_forms(inputs)
    _, ax = plt.subplots()
    try:
        first = draw(ax)
        labels = [a.get_ylabel() for a in first.figure.axes if a.get_ylabel()]
        gids = {a.get_gid() for a in first.figure.axes}
    finally:
        plt.close("all")
    assert labels and all("(mm)" in lab for lab in labels)
    assert "panel:up" in gids and "panel:lo" not in gids


def test_bad_rows_of_the_pixel_arches_are_named_by_their_row_in_the_given_table(tables):
    t = dict(tables)
    pts = t["arch_points"].copy()
    pt_row = int(np.flatnonzero((pts["endpoint"] == LOWER).to_numpy())[3])
    pts.loc[pts.index[pt_row], "y"] = np.nan
    tk = t["tooth_keypoints"].copy()
    molar = (tk["tooth"] == "m1_lft_lo") & (tk["point"] == "centroid") & ~tk["missing"]
    tk_row = int(np.flatnonzero(molar.to_numpy())[1])
    tk.loc[tk.index[tk_row], "x"] = np.inf
    t["arch_points"], t["tooth_keypoints"] = pts, tk
    out = _run(t, _partial(), errors="collect")
    problems = out["analysis_problems"]
    fit = problems[problems["producer"] == "arch.fit"]
    assert fit[["table", "row", "field"]].to_numpy().tolist() == [["arch_points", pt_row, "y"]]
    assert fit["patient_id"].tolist() == [str(pts["patient_id"].iloc[pt_row])]
    assert fit["endpoint"].tolist() == [LOWER]
    measured = problems[problems["producer"] == "arch.measure"]
    assert [tk_row, "x"] in measured.loc[
        measured["table"] == "tooth_keypoints", ["row", "field"]
    ].to_numpy().tolist()
    assert [pt_row, "y"] in measured.loc[
        measured["table"] == "arch_points", ["row", "field"]
    ].to_numpy().tolist()
    fits = out["arch_fits"]
    bad = fits[(fits["patient_id"] == pts["patient_id"].iloc[pt_row]) & (fits["arch"] == "lo")]
    bad = bad[bad["timestamp"] == pts["timestamp"].iloc[pt_row]]
    assert (bad["status"] == "bad_input").all() and (bad["unit"] == "px").all()


def test_the_joined_tables_keep_their_declared_types(runs, tmp_path):
    study.write_analyses(runs["partial"], tmp_path)
    for name in ("arch_fits", "arch_measures", "arch_mean_forms"):
        assert check_file(tmp_path / f"{name}.parquet", name) == []


def test_group_comparison_and_growth_take_the_mm_arches_only(tables):
    # two groups given by hand (the demo's 3 patients share one skeletal class)
    pids = sorted(tables["arch_points"]["patient_id"].astype(str).unique())
    groups = pd.DataFrame({"patient_id": pids, "g": ["a", "b", "a"][: len(pids)]})
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", category=DentalkitWarning)
        out = study.analyze(tables, _partial(), groups=groups)
    compared = out["arch_compare"]
    assert sorted(compared["arch"].astype(str).unique()) == ["up"]
    modelled = out["growth_data"]
    arch_rows = modelled[modelled["measure"].str.contains("width")]
    assert len(arch_rows) and (arch_rows["unit"] == "mm").all()
    assert not modelled["measure"].str.contains("lower").any()
    assert modelled["measure"].str.contains("upper").any()


def test_arch_itself_still_refuses_a_calibration_table_with_an_arch_missing(tables):
    # the library keeps one unit per call: a forgotten image is named, not put in pixels
    from dentalkit.errors import InputError

    points = tables["arch_points"]
    upper = points[points["endpoint"] != LOWER]
    scale = upper[KEY].drop_duplicates().assign(mm_per_px=0.08)
    # the first arch without a value, in the key order arch sorts arches in
    lower = points.loc[points["endpoint"] == LOWER, KEY].astype(str).sort_values(KEY).iloc[0]
    with pytest.raises(InputError, match="mm_per_px has no value for") as info:
        arch.fit(points, "parabola", mm_per_px=scale)
    text = str(info.value)
    assert f"patient_id={lower['patient_id']!r}" in text and "arch='lo'" in text
    assert "mm_per_px=None" in text


def test_the_report_says_in_one_line_which_arch_is_left_out_why_and_how(runs, tables):
    from dentalkit.study.report import sections as _sections

    sections = dict(_sections(tables, runs["partial"]))
    note = sections["Arches in pixels"]
    assert "\n" not in note
    assert note.startswith(f"The lower arch (`{LOWER}`) is in pixels")
    assert "not calibrated" in note and "upper arch" not in note
    for left_out in ("mean arch forms figure", "arch comparison", "growth model"):
        assert left_out in note
    assert f"--mm-per-px {LOWER}=VALUE" in note
    # every arch in mm: no such line; none in mm: the figure draws px forms, so not named
    assert "Arches in pixels" not in dict(_sections(tables, runs["mm"]))
    px_note = dict(_sections(tables, runs["px"]))["Arches in pixels"]
    assert "upper arch" in px_note and "lower arch" in px_note and " are in pixels" in px_note
    assert "figure" not in px_note and "--mm-per-px occlusogram_upper_points=VALUE" in px_note
