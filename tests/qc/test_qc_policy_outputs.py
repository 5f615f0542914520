"""What a study does with the qc tables: apply a pre-specified policy (every excluded item
listed with its reason), summarize for the report, draw the figure, write the declared
tables; and the benchmark's smoke run."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dentalkit import ceph, convert, io, plot, qc
from dentalkit.errors import InputError
from tests.qc.qc_cohort import lateral, move, responses
from tests.schema_check import check_file

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def flagged_cohort():
    lm = move(lateral(60, prefix="QCP"), "QCP-004", "Me", 120.0, 140.0)
    checks = qc.landmarks(lm, mm_per_px=0.1, measures=["ANB", "SN_MP"])
    measures = ceph.measure(lm, ["ANB", "SN_MP"], mm_per_px=0.1)
    return lm, checks, measures


def test_exclude_leaves_out_the_flagged_sessions_and_lists_each(flagged_cohort):
    _, checks, measures = flagged_cohort
    result = qc.apply(measures, checks, policy="exclude")
    flagged = checks.loc[checks["flagged"], "patient_id"].astype(str)
    assert "QCP-004" in set(flagged)
    kept = set(result.kept["patient_id"].astype(str))
    assert kept.isdisjoint(flagged) and len(kept) == 60 - len(flagged)
    ex = result.excluded
    assert sorted(ex["patient_id"].astype(str)) == sorted(flagged)
    assert (ex["n_rows"] == 2).all()  # ANB and SN_MP of each session
    assert ex.loc[ex["patient_id"] == "QCP-004", "reason"].str.contains("Me").all()
    assert len(result.kept) + int(ex["n_rows"].sum()) == len(measures)


def test_flag_keeps_every_row_and_ignore_changes_nothing(flagged_cohort):
    _, checks, measures = flagged_cohort
    flag = qc.apply(measures, checks, policy="flag")
    assert len(flag.kept) == len(measures) and flag.excluded.empty
    marked = flag.kept.loc[flag.kept["qc_flagged"], "patient_id"].astype(str)
    assert set(marked) == set(checks.loc[checks["flagged"], "patient_id"].astype(str))
    assert flag.kept.loc[flag.kept["qc_flagged"], "qc_reason"].str.startswith("landmarks: ").all()
    assert flag.kept.loc[~flag.kept["qc_flagged"], "qc_reason"].isna().all()
    ignore = qc.apply(measures, checks, policy="ignore")
    pd.testing.assert_frame_equal(ignore.kept, measures)
    with pytest.raises(InputError, match="policy must be one of exclude, flag, ignore"):
        qc.apply(measures, checks, policy="drop")


def test_items_are_matched_by_their_own_keys(flagged_cohort):
    lm, checks, _ = flagged_cohort
    # a landmarks table: every landmark row of the flagged sessions goes
    result = qc.apply(lm, checks)
    assert int(result.excluded["n_rows"].sum()) == len(lm) - len(result.kept)
    assert (result.excluded["n_rows"] == 169).all()
    # teeth checks do not apply to a table without source and tooth; they are named
    teeth_qc = pd.DataFrame({
        "check": "teeth", "patient_id": ["QCP-001"], "timestamp": ["2024-03-01"],
        "source": "pano", "tooth": "i1_rgt_up", "flagged": True, "reason": "order",
    })  # fmt: skip
    both = pd.concat([checks, teeth_qc], ignore_index=True)
    result = qc.apply(lm, both)
    assert result.not_applied == ("teeth",)
    # a findings table: one box out, the rest of the session stays
    resp, _ = responses("panos_findings", [f"QCF-{i}" for i in range(30)])
    f = convert.findings(resp)
    f.loc[0, "x1"] = 4000.0
    fq = qc.findings(f, image_sizes={"pano": (2800, 1400)})
    res = qc.apply(f, fq)
    assert len(res.kept) == len(f) - 1 and res.excluded["n_rows"].tolist() == [1]


def test_summary_counts_items_patients_rules_and_suspects(flagged_cohort):
    _, checks, _ = flagged_cohort
    s = qc.summarize(checks).iloc[0]
    assert s["check"] == "landmarks" and s["n_items"] == 60
    assert s["n_flagged"] == int(checks["flagged"].sum())
    assert s["n_patients_flagged"] == checks.loc[checks["flagged"], "patient_id"].nunique()
    assert any(x.startswith("Me: ") for x in s["suspects"])
    assert s["methods"] == ["cohort model and single-session rules: 60"]
    assert sum(int(x.rsplit(": ", 1)[1]) for x in s["failed_checks"]) >= s["n_flagged"]


def test_the_figure_marks_the_flagged_sessions_in_one_column(flagged_cohort, tmp_path):
    import matplotlib

    matplotlib.use("Agg")
    import warnings

    _, checks, _ = flagged_cohort
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with plot.style():
            ax = plot.qc_outliers(checks)
            (pdf,) = plot.savefig(ax, tmp_path / "qc.pdf", width="single")
    width = float(re.search(rb"/MediaBox \[\s*0 0 ([\d.]+)", pdf.read_bytes()).group(1))
    assert width == pytest.approx(85 / 25.4 * 72, abs=0.01)
    red = [c for c in ax.collections if len(c.get_offsets())]
    counts = sorted(len(c.get_offsets()) for c in red)
    assert counts == sorted([int(checks["flagged"].sum()), int((~checks["flagged"]).sum())])
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert f"flagged by QC ({int(checks['flagged'].sum())})" in labels
    few = qc.landmarks(lateral(60, prefix="QCP").iloc[: 169 * 10], mm_per_px=0.1)
    with pytest.raises(InputError, match="no lateral session has a Procrustes distance"):
        plot.qc_outliers(few)


def test_every_qc_table_is_written_with_its_declaration(flagged_cohort, tmp_path):
    _, checks, measures = flagged_cohort
    teeth = qc.teeth(convert.teeth(responses("pano_segmentation", ["QCD-1", "QCD-2"])[0]))
    arch = qc.arch_points(convert.arch_points(responses("occlusogram_upper_points", ["QCD-1"])[0]))
    findings = qc.findings(convert.findings(responses("panos_findings", ["QCD-1"])[0]))
    from dentalkit import tle

    tle_qc = qc.tle_inputs(tle.example_patients(4).assign(age_years=[10, 90, 12, 30]))
    tables = {
        "qc_landmarks": checks, "qc_teeth": teeth, "qc_arch_points": arch,
        "qc_findings": findings, "qc_tle_inputs": tle_qc,
        "qc": pd.concat([checks, teeth, arch, findings, tle_qc], ignore_index=True),
        "qc_excluded": qc.apply(measures, checks).excluded,
        "qc_summary": qc.summarize(pd.concat([checks, teeth], ignore_index=True)),
    }  # fmt: skip
    for name, table in tables.items():
        path = io.write_parquet(table, tmp_path / f"{name}.parquet", name=name)
        assert check_file(path, name) == [], name


def test_the_benchmark_runs_in_smoke_mode():
    out = subprocess.run(
        [sys.executable, str(ROOT / "benchmarks" / "qc.py"), "--smoke"],
        capture_output=True, text=True, timeout=600, cwd=ROOT,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr[-2000:]
    for part in ("1. landmarks", "2. teeth", "3. arch points", "4. bias", "6. oracle", "7. speed"):
        assert part in out.stdout
    assert re.search(r"oracle at 5 % clean flagged: simulated\s+[\d.]+ %", out.stdout)
    assert re.search(r"qc.landmarks ÷ ceph.measure\s+\d", out.stdout)
    assert np.isfinite(
        float(re.search(r"flagged among the rest\s+([\d.]+) %", out.stdout).group(1))
    )


def test_the_oracle_posterior_matches_a_simulation():
    """The oracle's P(|e| ≤ 4 mm | |r| = ρ) (benchmarks/qc.py, a Rice likelihood of a
    Rayleigh-plus-gross error) against the share found by simulating e and r directly."""
    sys.path.insert(0, str(ROOT))
    from benchmarks.qc import _posterior_clean

    sigma, tau, gross = 1.5, 1.0, 0.05
    rng = np.random.default_rng(7)
    n = 2_000_000
    e = np.where(rng.random(n) < gross, rng.uniform(5, 30, n), rng.rayleigh(sigma, n))
    a = rng.uniform(0, 2 * np.pi, n)
    r = np.hypot(e * np.cos(a) + rng.normal(0, tau, n), e * np.sin(a) + rng.normal(0, tau, n))
    grid, post = _posterior_clean(sigma, gross, tau)
    for rho in (2.0, 4.0, 5.0, 6.5):
        near = np.abs(r - rho) < 0.1
        assert near.sum() > 1000  # binomial SE of the share at most 0.016
        assert np.interp(rho, grid, post) == pytest.approx((e[near] <= 4).mean(), abs=0.05)


def test_every_check_runs_on_the_demo_study_tables(demo_tables):
    """The contract tables of a demo run (3 patients: too few for a cohort model): each check
    runs on them as they are, says which method it used, and flags nothing in answers without
    AI errors (the plausible-range rules, the teeth, the points and the boxes)."""
    t = demo_tables
    out = [
        qc.landmarks(t["landmarks"], mm_per_px=0.1, errors="collect")[0],
        qc.teeth(t["teeth"], errors="collect")[0],
        qc.arch_points(t["arch_points"], errors="collect")[0],
        qc.findings(t["findings"], image_sizes={"pano": (2800, 1400)}, errors="collect")[0],
        qc.tle_inputs(t["tle"], errors="collect")[0],
    ]
    combined = pd.concat(out, ignore_index=True)
    assert set(combined["check"].astype(str)) == {
        "landmarks", "teeth", "arch_points", "findings", "tle_inputs"
    }  # fmt: skip
    assert not combined["flagged"].any(), combined.loc[combined["flagged"], "reason"].tolist()
    assert (out[0]["method"] == "single-session rules").all()
    assert "too few for a cohort shape model" in out[0]["method_reason"].iloc[0]
    summary = qc.summarize(combined)
    assert summary["n_flagged"].sum() == 0 and summary["n_items"].sum() == len(combined)


def test_summarize_reads_missing_list_cells_as_empty_whatever_their_form():
    """A combined qc table whose list cells are missing as None, NaN (left by concatenating a
    check without the column, as the 50-patient demo did) or empty lists counts them as no
    failed check and no suspect; the listed ones are counted by hand here."""
    q = pd.DataFrame(
        {
            "check": ["landmarks"] * 4,
            "patient_id": ["P1", "P2", "P3", "P4"],
            "flagged": [True, True, False, False],
            "failed_checks": [["model"], np.nan, None, []],
            "suspect_landmarks": [["Go"], np.nan, None, []],
        }
    )
    s = qc.summarize(q).iloc[0]
    assert (s["n_items"], s["n_flagged"], s["n_patients_flagged"]) == (4, 2, 2)
    assert list(s["failed_checks"]) == ["model: 1"]
