"""The coverage simulations of issue 29 run (tiny sizes); the figures come from the full
runs (docs/statistics.md, docs/benchmarks.md)."""

from __future__ import annotations

import numpy as np


def test_proportion_coverage_smoke(capsys, load_benchmark):
    res = load_benchmark("proportion_coverage").main(["--smoke"])
    assert set(res["method"]) == {"wald_before", "cluster_bootstrap", "dentalkit"}
    new = res[res["method"] == "dentalkit"]
    assert (new["zero_width"] == 0).all() and (new["mean_width"] > 0).all()
    assert "target ≥ 93 %" in capsys.readouterr().out


def test_kappa_coverage_smoke(capsys, load_benchmark):
    module = load_benchmark("kappa_coverage")
    cuts, order = module.bands()
    assert order == ["Class III", "Class I", "Class II"] and cuts.tolist() == [0.0, 4.0]
    res = module.main(["--smoke"])
    assert set(res["method"]) == {"normal", "bootstrap", "dentalkit"}
    assert set(res["weights"]) == {"none", "linear"} and (res["studies"] > 0).all()
    assert "target ≥ 93 % at n = 20" in capsys.readouterr().out


def test_regression_to_mean_smoke(capsys, load_benchmark):
    module = load_benchmark("regression_to_mean")
    assert list(module.classes_of(np.array([-0.5, 0.0, 3.9, 4.0]))) == [
        "Class III", "Class I", "Class I", "Class II",
    ]  # fmt: skip
    res = module.main(["--smoke"])
    assert len(res) == 18 and set(res["measure"]) == {"ANB", "SNA", "SNB"}
    assert "target: adjusted ≈ 0.05" in capsys.readouterr().out
