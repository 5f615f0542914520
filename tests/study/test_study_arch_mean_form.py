"""study.analyze when every arch of one part has no fit to average.

Hand-made cohort: upper occlusograms calibrated (0.1 mm/px) whose arches are catenaries of
known ``a``; lower occlusograms uncalibrated with 3 points per arch, fewer than a catenary
with a free pose needs (5), so no lower arch is fitted. Before, ``arch.mean_form`` raised
"no catenary fit with status 'ok' to average" from inside ``analyze`` in every errors mode.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dentalkit import arch, study
from dentalkit.errors import DentalkitWarning, InputError
from tests.arch.helpers import arch_table, catenary

UP, LO = "occlusogram_upper_points", "occlusogram_lower_points"


def _tables():
    frames = []
    for j, a in enumerate([150.0, 160.0, 170.0, 155.0]):
        for arch_, endpoint, n in (("up", UP, 15), ("lo", LO, 3)):
            x = np.linspace(-220.0, 220.0, n)
            tab = arch_table(x, catenary(x, a), patient=f"P{j}", arch=arch_, mirror=bool(j % 2))
            tab["endpoint"] = endpoint
            frames.append(tab)
    points = pd.concat(frames, ignore_index=True)
    groups = pd.DataFrame({"patient_id": [f"P{j}" for j in range(4)], "group": list("aabb")})
    return {"arch_points": points}, groups


def _analyze(errors):
    tables, groups = _tables()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DentalkitWarning)
        # qc="flag": the hand-built arches' point numbers do not run along the arch as a
        # service's do, so QC flags every arch (and the default, exclude, would drop them)
        return study.analyze(tables, {UP: 0.1}, groups=groups, errors=errors, qc="flag")


def test_collect_gives_the_calibrated_mean_forms_and_one_problem_row_per_absent_group():
    out = _analyze("collect")
    mf = out["arch_mean_forms"]
    assert set(mf["arch"].astype(str)) == {"up"} and (mf["unit"] == "mm").all()
    # in mm: the known curves scaled by 0.1 mm/px, per group of two patients
    for group, avals in (("a", [150.0, 160.0]), ("b", [170.0, 155.0])):
        g = mf[mf["group"] == group]
        x_px = g["x"].to_numpy() / 0.1
        want = np.mean([catenary(x_px, a) for a in avals], axis=0) * 0.1
        np.testing.assert_allclose(g["y_mean"], want, atol=1e-6)
    found = out["analysis_problems"]
    absent = found[found["producer"] == "arch.mean_form"]
    assert absent["path"].tolist() == ["group=a, arch=lo", "group=b, arch=lo"]
    assert (absent["table"] == "arch_mean_forms").all() and absent["row"].isna().all()
    assert (absent["endpoint"] == LO).all()  # the lower arches' endpoint names where to look
    # the lower arches stay in arch_fits, each with its status and reason
    lo_fits = out["arch_fits"][out["arch_fits"]["arch"] == "lo"]
    assert set(lo_fits["status"].astype(str)) == {"too_few_points"}


def test_raise_names_the_analysis_the_arch_and_how_to_go_on():
    with pytest.raises(InputError) as info:
        _analyze("raise")
    msg = str(info.value)
    assert "arch.mean_form 2" in msg
    assert "group=a, arch=lo" in msg and "no catenary fit with status 'ok'" in msg
    assert f"endpoint {LO}" in msg and "errors='collect'" in msg
    assert (_bad(info.value.problems)["producer"] == "arch.mean_form").all()


def test_the_mean_form_table_is_unchanged_when_every_group_has_a_fit():
    tables, groups = _tables()
    up = tables["arch_points"][tables["arch_points"]["arch"] == "up"]
    out = study.analyze({"arch_points": up}, {UP: 0.1}, groups=groups, errors="collect", qc="flag")
    merged = up.merge(groups, on="patient_id")
    want = arch.mean_form(merged, by="group", mm_per_px=0.1)
    pd.testing.assert_frame_equal(out["arch_mean_forms"], want, check_like=True)
    assert not len(_bad(out["analysis_problems"]))


def test_no_mean_form_at_all_is_an_empty_table_of_the_declared_types(tmp_path):
    from tests.schema_check import check_file

    tables, groups = _tables()
    lower = tables["arch_points"][tables["arch_points"]["arch"] == "lo"]
    groups = pd.DataFrame(
        {"patient_id": groups["patient_id"], "skeletal_class": ["Class I"] * 2 + ["Class II"] * 2}
    )
    out = study.analyze({"arch_points": lower}, None, groups=groups, errors="collect", qc="flag")
    assert len(out["arch_mean_forms"]) == 0
    assert len(_bad(out["analysis_problems"])) == 2
    study.write_analyses(out, tmp_path)
    for name in ("arch_mean_forms", "analysis_problems"):
        assert check_file(tmp_path / f"{name}.parquet", name) == []


def _bad(problems: pd.DataFrame) -> pd.DataFrame:
    """The rows that left data out (not those saying what a small cohort cannot make)."""
    return problems[problems["producer"].astype(str) != study.NOT_RUN]
