"""The benchmark script runs end to end on a tiny cohort (its own check included)."""

from __future__ import annotations

from benchmarks import teeth as bench


def test_benchmark_smoke(capsys):
    result = bench.main(["--smoke"])
    out = capsys.readouterr().out
    assert "speed-up vs function loop" in out
    assert "widths / bare MRR" in out
    assert result["n"] == 1_600
    assert all(
        result[k] > 0
        for k in (
            "measure_shape_s",
            "measure_numpy_s",
            "loop_functions_s",
            "measure_widths_s",
            "bare_mrr_s",
        )
    )
