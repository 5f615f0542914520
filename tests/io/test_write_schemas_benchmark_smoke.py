"""The write benchmark runs (3 repetitions on the session's demo); figures: benchmarks/write_schemas.py."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def test_benchmark_smoke(demo_study, capsys):
    out, _, result = demo_study
    assert result.exit_code == 0, result.output
    path = Path(__file__).parents[2] / "benchmarks" / "write_schemas.py"
    spec = importlib.util.spec_from_file_location("write_schemas_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    results = module.main(["--smoke", "--demo", str(out)])
    assert results["tables"] >= 25 and results["plain_s"] > 0 and results["ratio"] > 0
    assert results["partitioned_ratio"] > 0
    printed = capsys.readouterr().out
    assert "ratio declared / plain" in printed and "write_partitioned" in printed
