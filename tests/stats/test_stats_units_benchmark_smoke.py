"""The unit-of-analysis simulation runs (40 repetitions); real figures come from
`python benchmarks/units.py` (400 repetitions)."""

from __future__ import annotations

import importlib.util
from pathlib import Path


def test_units_benchmark_smoke(capsys):
    path = Path(__file__).parents[2] / "benchmarks" / "units.py"
    spec = importlib.util.spec_from_file_location("units_benchmark", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    out = module.main(["--smoke"])
    assert out["refused"] == 1.0  # the default refuses two sessions per patient every time
    # seeded: sessions counted as patients reject the true null more often than patient means
    assert out["sessions"] > out["patient_means"]
    assert "false-positive rate" in capsys.readouterr().out
