"""The growth benchmark and coverage scripts run (tiny sizes); real figures come from
`python benchmarks/growth.py` and `python benchmarks/growth_coverage.py` (docs/statistics.md)."""

from __future__ import annotations

import pytest


def test_growth_benchmark_smoke(capsys, load_benchmark):
    out = load_benchmark("growth").main(["--smoke"])  # asserts every way gives the same estimates
    assert set(out) == {"direct", "dentalkit", "wald", "ratio", "ratio_wald", "ratio_wald_cpu"}
    assert out["direct"] > 0 and out["dentalkit"] > 0 and out["wald"] > 0
    text = capsys.readouterr().out
    assert "ratio dentalkit ÷ direct" in text and "ratio Satterthwaite ÷ Wald" in text


def test_growth_coverage_smoke(capsys, load_benchmark):
    module = load_benchmark("growth_coverage")
    res = module.main(["--smoke"])  # checks the truth rate is −0.25 °/year
    assert len(res) == 2
    assert (res["n_units"] == 8).all() and (res["n_rows"] == 32).all()  # 4 sessions each
    assert (res["ci_low"] < res["estimate"]).all() and (res["estimate"] < res["ci_high"]).all()
    assert (res["df"] > 0).all()
    out = capsys.readouterr().out
    assert "coverage t (Wilson 95 % CI)" in out and "target: coverage (t) 94–96 %" in out
    table = module.summarize(res)
    assert list(table["size"]) == [8] and table["cohorts"].tolist() == [2]


def test_growth_coverage_exact_reference_matches_scipy(load_benchmark):
    """The exact yardstick: per-patient slopes (np.polyfit) → scipy's one-sample t interval."""
    import numpy as np
    import pandas as pd
    from scipy import stats

    module = load_benchmark("growth_coverage")
    rng = np.random.default_rng(5)
    when = pd.to_datetime(["2024-01-01", "2025-01-01", "2026-01-01", "2027-01-01"], utc=True)
    years = ((when - when[0]).days / 365.25).to_numpy()
    rows, slopes = [], []
    for i in range(6):
        y = 30 + rng.normal(0, 2) + rng.normal(-0.25, 0.4) * years + rng.normal(0, 1.0, 4)
        slopes.append(np.polyfit(years, y, 1)[0])
        rows += [
            {"patient_id": f"P{i}", "session_time": w, "value": v}
            for w, v in zip(when, y, strict=True)
        ]
    est, se, covered = module.exact_reference(pd.DataFrame(rows))
    test = stats.ttest_1samp(slopes, module.TRUE_RATE)
    lo, hi = test.confidence_interval(0.95)
    assert est == pytest.approx(np.mean(slopes), abs=1e-12)
    assert se == pytest.approx(stats.sem(slopes), rel=1e-12)
    assert covered == (lo <= module.TRUE_RATE <= hi) == (test.pvalue >= 0.05)


def test_growth_coverage_slope_sd_adds_declared_patient_rates(load_benchmark):
    """--slope-sd adds b_i · years to each patient's values; b_i ~ N(0, sd²), seeded by ID."""
    import numpy as np

    module = load_benchmark("growth_coverage")
    many = module.slope_offsets([f"X{i}" for i in range(4000)], 0.5)
    b = np.array(list(many.values()))
    assert abs(b.mean()) < 4 * 0.5 / np.sqrt(4000)  # mean 0 (4 SE)
    assert b.std(ddof=1) == pytest.approx(0.5, rel=0.05)  # SD 0.5 (SE of the SD ≈ 1.1 %)
    assert module.slope_offsets(["X1"], 0.5) == {"X1": many["X1"]}  # the same draw every run
    assert set(module.slope_offsets(["X1", "X2"], 0.0).values()) == {0.0}

    ids = module.enrol(0, 2)
    plain, spread = module.measures(ids, 0.0), module.measures(ids, 0.5)
    years = (spread["session_time"] - spread["session_time"].min()).dt.days / 365.25
    added = spread["value"] - plain["value"]
    expected = spread["patient_id"].map(module.slope_offsets(ids, 0.5)) * years
    np.testing.assert_allclose(added, expected, atol=1e-9)
    assert (added.abs() > 0).any()
