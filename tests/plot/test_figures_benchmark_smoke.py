"""The figure-drawing benchmark runs (one figure, this checkout against itself); the real
figure comes from ``python benchmarks/figures.py --demo DIR`` against main (docs/figures.md)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

ROOT = Path(__file__).parents[2] / "benchmarks"


def test_figures_benchmark_smoke(demo_study, capsys):
    spec = importlib.util.spec_from_file_location("figures_benchmark", ROOT / "figures.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out, _, result = demo_study
    assert result.exit_code == 0, result.output
    res = module.main(["--demo", str(out), "--smoke"])
    assert res["this"] > 0 and res["reference"] > 0
    text = capsys.readouterr().out
    assert "figures drawn: reference 1, this checkout 1" in text
    assert "ratio this ÷ reference" in text
