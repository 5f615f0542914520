"""The benchmark script runs (tiny sizes); real figures come from `python benchmarks/tle.py`."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def test_benchmark_smoke(capsys):
    path = Path(__file__).parents[2] / "benchmarks" / "tle.py"
    spec = importlib.util.spec_from_file_location("tle_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = module.main(["--smoke", "--workers", "2"])
    assert results["encode_rows_per_s"] > 0 and results["summary_s"] > 0
    assert "encode:" in capsys.readouterr().out
