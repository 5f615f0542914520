"""A small sandbox study: every contract table and every analysis table of the catalogue."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dentalkit.io._dictionary import ANALYSIS_TABLES


@pytest.fixture(scope="session")
def study(sandbox_store, request, tmp_path_factory):
    """(contract tables, analysis tables by their catalogue names), built once per test run
    (the workers of ``pytest -n 2`` share it; see tests/across_workers.py)."""
    from tests.across_workers import shared_value

    return shared_value(
        tmp_path_factory, "io-study", lambda: _study(sandbox_store[0], request, tmp_path_factory)
    )


def _study(store, request, tmp_path_factory):
    from dentalkit import arch, ceph, convert, findings, stats, teeth, tle
    from dentalkit import study as dk_study
    from dentalkit.contract import contract_report
    from dentalkit.fetch import read_responses
    from dentalkit.fetch.client import Client
    from dentalkit.fetch.cohort import Fetcher

    sandbox = request.getfixturevalue("sandbox")  # /tle: started only by the worker that builds
    client = Client(sandbox.base_url, api_key=sandbox.api_key, cache="memory")
    responses = read_responses(store)
    contract = convert.tables(responses)
    contract.pop("problems")

    m = ceph.measure(contract["landmarks"], mm_per_px=0.1)
    fits = arch.fit(contract["arch_points"], "all", mm_per_px=0.08)
    dims = arch.measure(contract["tooth_keypoints"], contract["arch_points"], mm_per_px=0.08)
    groups = pd.DataFrame({"patient_id": [f"IO{i:02d}" for i in range(6)], "group": list("ABABAB")})
    tm = teeth.measure(contract["teeth"], mm_per_px=0.1)
    sym = teeth.symmetry(tm, "md_width")
    mt = teeth.missing(contract["teeth"])
    fp = findings.prevalence(
        contract["findings"],
        contract["finding_counts"],
        images=findings.analysed_images(responses),
    )
    patients = tle.example_patients(6)
    fetcher = Fetcher(tmp_path_factory.mktemp("io-tle-store"), client)
    est = tle.estimate(patients, fetcher)
    first = dims[dims["timestamp"] == "2024-03-05"].merge(groups, on="patient_id")
    analysis = {
        "ceph_measures": m,
        "ceph_zscores": ceph.zscores(m),
        "ceph_classes": ceph.classify(m),
        "ceph_class_changes": ceph.class_changes(ceph.classify(m)),
        "ceph_change": ceph.change(m),
        "ceph_summary": ceph.summarize(m),
        "arch_fits": fits,
        "arch_measures": dims,
        "arch_mean_forms": arch.mean_form(fits, model="catenary"),
        "tooth_measures": tm,
        "tooth_symmetry": sym.pairs,
        "tooth_symmetry_patients": sym.per_patient,
        "tooth_symmetry_cohort": sym.cohort,
        "missing_by_fdi": mt.by_fdi,
        "missing_by_type": mt.by_type,
        "missing_by_arch": mt.by_arch,
        "missing_patterns": mt.patterns,
        "missing_per_patient": mt.per_patient,
        "findings_prevalence": fp.prevalence,
        "tmj_prevalence": findings.tmj_prevalence(contract["tmj"]),
        "model_versions": dk_study.model_versions(contract),
        "finding_boxes": fp.boxes,
        "finding_box_sizes": fp.box_sizes,
        "tle_estimates": est,
        "tle_summary": tle.summarize(est, by="sex"),
        "tle_sensitivity": tle.sensitivity(patients.head(3), "overjet_mm", [2.0, 6.0], fetcher),
        "tle_calibration": tle.calibration(est, est["estimate_length_months"] + np.arange(6.0)),
        "comparisons": arch.compare(first, by="group"),
        "descriptives": stats.describe(tm, "md_width", ["fdi"]),
        "contract": contract_report(responses),
    }
    # the growth analysis: two sessions per patient, groups fixed per patient
    # the analyses' problems: one arch point made non-finite
    points = contract["arch_points"].copy()
    points.loc[points.index[0], "x"] = np.nan
    scale = {"occlusogram_upper_points": 0.08, "occlusogram_lower_points": 0.08}
    found = dk_study.analyze({"arch_points": points}, scale, errors="collect")
    assert dk_study.left_out(found["analysis_problems"]) == 1  # the others say what is not made
    analysis["analysis_problems"] = found["analysis_problems"]
    analysis["calibration_applied"] = found["calibration_applied"]  # endpoint fallback
    # quality control: each check's own table, and the study's QC under qc="exclude" with
    # one lateral session's A point moved 400 px (40 mm), so that a session is excluded
    from dentalkit import qc as dk_qc

    lm = contract["landmarks"]
    lateral = lm[lm["view"].astype(str) == "lateral"]
    first = lateral.iloc[0]
    hit = (
        (lm["patient_id"] == first["patient_id"])
        & (lm["timestamp"] == first["timestamp"])
        & (lm["view"].astype(str) == "lateral")
        & (lm["name"].astype(str) == "A")
    )
    assert hit.sum() == 1
    moved = lm.copy()
    moved.loc[hit, "x"] += 400.0
    checked = dk_study.analyze(
        {"landmarks": moved}, {"ceph_lateral_points": 0.1}, qc="exclude", errors="collect"
    )
    assert len(checked["qc_excluded"]) >= 1  # the moved session
    for name in ("qc", "qc_summary", "qc_excluded", "qc_sensitivity"):
        analysis[name] = checked[name]
    # the comparisons and growth rates with and without the excluded session: the
    # contract's cohort has no groups or second sessions for them, so one is built here
    analysis["qc_sensitivity_results"] = checked.get("qc_sensitivity_results")
    if analysis["qc_sensitivity_results"] is None:  # no comparison or growth model ran here
        analysis["qc_sensitivity_results"] = _sensitivity_results()
    analysis["qc_landmarks"] = dk_qc.landmarks(lm, mm_per_px=0.1, errors="collect")[0]
    analysis["qc_teeth"] = dk_qc.teeth(contract["teeth"], errors="collect")[0]
    analysis["qc_arch_points"] = dk_qc.arch_points(contract["arch_points"], errors="collect")[0]
    analysis["qc_findings"] = dk_qc.findings(
        contract["findings"], image_sizes={"pano": (2800, 1400)}, errors="collect"
    )[0]
    analysis["qc_tle_inputs"] = dk_qc.tle_inputs(contract["tle"], errors="collect")[0]
    growth = dk_study.growth_by_group(m, dims, groups)
    assert sorted(growth) == sorted(k for k in ANALYSIS_TABLES if k.startswith("growth_"))
    analysis.update(growth)
    client.close()
    return contract, analysis


def _sensitivity_results() -> pd.DataFrame:
    """``qc_sensitivity_results`` (the comparisons) of a 10-patient, 2-session sandbox
    cohort in two groups, one session's A point moved 40 mm (excluded by qc='exclude')."""
    from dentalkit import convert
    from dentalkit import study as dk_study
    from tests.qc.qc_cohort import responses

    ids = [f"QX-{i:02d}" for i in range(10)]
    parts = []
    for ts in ("2024-03-01", "2025-03-01"):
        parts.append(convert.landmarks(responses("ceph_lateral_points", ids, ts=ts)[0]))
    lm = pd.concat(parts, ignore_index=True)
    hit = (lm["patient_id"] == ids[1]) & (lm["timestamp"] == "2024-03-01") & (lm["name"] == "A")
    lm.loc[hit, "x"] += 400.0
    found = dk_study.analyze(
        {"landmarks": lm},
        {"ceph_lateral_points": 0.1},
        groups=pd.DataFrame({"patient_id": ids, "arm": ["a", "b"] * 5}),
        design=dk_study.Design(analyses=("ceph", "ceph_compare")),
        errors="collect",
    )
    return found["qc_sensitivity_results"]
