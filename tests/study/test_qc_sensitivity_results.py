"""The sensitivity analysis beyond the cohort means (issue 28, deliverable 3): under
qc="exclude" the group comparisons, growth rates (and arch and tooth statistics, where
QC excluded their rows) are given with and without the excluded items, and the figures
are drawn without them, saying so. The truth: the same analyses run by hand on every row
(qc="ignore") and the main analyses of the exclude run; one session of a 12-patient,
2-session sandbox cohort has its A point moved 40 mm."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dentalkit import convert, study
from dentalkit.study._qc import drawn_without
from tests.qc.qc_cohort import responses

SCALE = {"ceph_lateral_points": 0.1}
PATIENTS = [f"QR-{i:03d}" for i in range(12)]
BAD, BAD_TS = "QR-003", "2024-03-01"
GROUPS = pd.DataFrame({"patient_id": PATIENTS, "arm": ["a", "b"] * 6})
DESIGN = study.Design(analyses=("ceph", "ceph_compare", "growth"))


@pytest.fixture(scope="module")
def cohort() -> pd.DataFrame:
    parts = []
    for ts in (BAD_TS, "2025-03-01"):
        resp, _ = responses("ceph_lateral_points", PATIENTS, ts=ts)
        parts.append(convert.landmarks(resp))
    lm = pd.concat(parts, ignore_index=True)
    hit = (lm["patient_id"] == BAD) & (lm["timestamp"] == BAD_TS) & (lm["name"] == "A")
    assert hit.sum() == 1
    lm.loc[hit, "x"] += 400.0  # 40 mm: SNA and ANB far outside the human ranges
    return lm


@pytest.fixture(scope="module")
def runs(cohort):
    return {
        policy: study.analyze(
            {"landmarks": cohort},
            SCALE,
            groups=GROUPS,
            design=DESIGN,
            qc=policy,
            errors="collect",
        )
        for policy in ("exclude", "ignore")
    }


def _rows(results: pd.DataFrame, table: str) -> pd.DataFrame:
    return results[results["table"] == table].set_index("item")


def test_comparisons_and_growth_rates_are_given_with_and_without_the_excluded(runs):
    res = runs["exclude"]
    assert res["qc_excluded"][["patient_id", "timestamp"]].to_numpy().tolist() == [[BAD, BAD_TS]]
    results = res["qc_sensitivity_results"]
    assert (results["unit_of_analysis"] == "patient").all()
    # ceph_compare: the effect size of each measure, with QC = the main table, without
    # QC = the same analysis run on every row (qc="ignore")
    rows = _rows(results, "ceph_compare")
    for arm, source in (("with", res), ("without", runs["ignore"])):
        cmp = source["ceph_compare"].set_index("measure")
        assert set(rows.index) == set(cmp.index.astype(str))
        for m in rows.index:
            assert rows.loc[m, f"estimate_{arm}_qc"] == pytest.approx(cmp.loc[m, "effect_size"])
            assert rows.loc[m, f"p_{arm}_qc"] == pytest.approx(cmp.loc[m, "p_adjusted"])
            assert rows.loc[m, f"n_{arm}_qc"] == cmp.loc[m, "n_units"]
            assert rows.loc[m, "statistic"] == cmp.loc[m, "effect_size_name"]
    # the excluded session was QR-003's first: with QC its second session is its row
    assert (rows["n_with_qc"] == len(PATIENTS)).all()
    # growth_fixed: the time terms (rates per year) only
    rows = _rows(results, "growth_fixed")
    assert len(rows) and all("years" in i for i in rows.index)
    for arm, source in (("with", res), ("without", runs["ignore"])):
        fixed = source["growth_fixed"]
        fixed = fixed[fixed["term"].astype(str).str.contains("years")]
        by_item = dict(
            zip(fixed["measure"].astype(str) + " · " + fixed["term"].astype(str),
                fixed["estimate"], strict=True)
        )  # fmt: skip
        assert set(by_item) == set(rows.index)
        for item, value in by_item.items():
            assert rows.loc[item, f"estimate_{arm}_qc"] == pytest.approx(value)
    # QR-003 is in arm b: its 40 mm A point moves the ANB rate of arm b, not arm a's
    anb = rows.loc["ANB · years:arm[T.b]"]
    assert abs(anb["difference"]) > 1.0
    np.testing.assert_allclose(
        rows["difference"], rows["estimate_with_qc"] - rows["estimate_without_qc"]
    )


def test_the_report_gives_the_comparisons_and_growth_rates_with_and_without(runs):
    from dentalkit.study import report

    text = report.qc_section(runs["exclude"], DESIGN)
    assert "Sensitivity analysis: comparisons, growth rates" in text
    assert "ANB · years:arm[T.b]" in text


def test_nothing_excluded_means_no_second_run_and_a_sentence_saying_so(cohort):
    clean = cohort[~((cohort["patient_id"] == BAD) & (cohort["timestamp"] == BAD_TS))]
    res = study.analyze(
        {"landmarks": clean}, SCALE, design=study.Design(analyses=("ceph",)), errors="collect"
    )
    assert len(res["qc_excluded"]) == 0
    assert "qc_sensitivity_results" not in res and "qc_sensitivity" not in res
    problems = res["analysis_problems"]  # not asked: no row claims it could not be made
    assert not problems["table"].astype(str).str.startswith("qc_sensitivity").any()


def test_figures_are_drawn_without_the_excluded_sessions_and_say_so(runs, cohort, tmp_path):
    res = runs["exclude"]
    kept, notes = drawn_without({"landmarks": cohort}, res)
    lm = kept["landmarks"]
    assert not ((lm["patient_id"] == BAD) & (lm["timestamp"] == BAD_TS)).any()
    assert len(lm) == len(cohort) - int(res["qc_excluded"]["n_rows"].sum())
    assert set(notes) == {"landmarks"} and "1 session(s) of landmarks" in notes["landmarks"]
    # flag: nothing is left out of the figures, nothing said
    same, none = drawn_without({"landmarks": cohort}, {"qc": res["qc"]})
    assert same["landmarks"] is cohort and none == {}
    specs = [f for f in study.FIGURES if f.name in ("ceph_tracing", "qc_outliers")]
    study.make_figures({"landmarks": cohort}, res, tmp_path, figures=specs, dpi=300,
                       formats=("png",), mm_per_px=SCALE)  # fmt: skip
    captions = (tmp_path / "captions.md").read_text(encoding="utf-8")
    tracing = captions.split("## ceph_tracing")[1]
    assert "Drawn without the 1 session(s) of landmarks" in tracing
    assert "qc_excluded.parquet" in tracing
