"""benchmarks/convert.py runs (a tiny size: the real measurement stays out of the suite)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "convert.py"


def test_benchmark_runs_at_a_tiny_size(capsys):
    spec = importlib.util.spec_from_file_location("bench_convert", BENCH)
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    r = bench.run(n_ceph=20, n_seg=4, repeat=1)
    assert r["landmark_rows"] == 20 * 169
    assert r["teeth_rows"] == 4 * 32
    assert r["landmarks_ratio"] > 0 and r["teeth_ratio"] > 0
    assert r["landmarks_bytes_per_row"] <= 48
