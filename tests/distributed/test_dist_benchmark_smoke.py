"""benchmarks/scale.py --smoke runs and prints the figures the issue asks for."""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.distributed.realservers import ROOT


def test_scale_benchmark_smoke_prints_throughput_ratios_and_hit_rate():
    run = subprocess.run(
        [sys.executable, "benchmarks/scale.py", "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout
    line = re.search(
        r"^dask 1 worker\(s\) x +2 threads: +([\d.]+) req/s, thread pool +([\d.]+) req/s, "
        r"ratio ([\d.]+) \(target >= 0\.9\)",
        out,
        re.M,
    )
    assert line, out
    dask_rate, thread_rate, ratio = map(float, line.groups())
    assert dask_rate > 0 and thread_rate > 0
    assert ratio == pytest.approx(dask_rate / thread_rate, abs=0.01)  # one pair: rate ratio
    hit = re.search(r"hit rate (\d+\.\d)% \(target 100%\), (\d+) request\(s\) reached", out)
    assert hit and hit.groups() == ("100.0", "0"), out
