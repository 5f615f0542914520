"""The growth benchmark and coverage scripts run (tiny sizes); real figures come from
`python benchmarks/growth.py` and `python benchmarks/growth_coverage.py` (docs/statistics.md)."""

from __future__ import annotations


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
