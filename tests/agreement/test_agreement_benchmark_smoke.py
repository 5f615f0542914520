"""The benchmark script runs (tiny sizes) and its vectorised numbers equal the per-landmark
loop's; real figures come from `python benchmarks/agreement.py`."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def test_benchmark_smoke(capsys):
    path = Path(__file__).parents[2] / "benchmarks" / "agreement.py"
    spec = importlib.util.spec_from_file_location("agreement_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main(["--smoke"])  # asserts MRE, SD and SDR equal the loop's
    assert set(out) == {"image", "anatomical", "loop", "measures"}
    assert all(v > 0 for v in out.values())
    assert "landmark pairs" in capsys.readouterr().out
