"""benchmarks/scale.py --smoke runs and prints the figures the issue asks for."""

from __future__ import annotations

import re
import subprocess
import sys

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
    assert re.search(r"^thread pool +wall +\d+\.\d+ s .* vs thread pool +1\.00 ", out, re.M), out
    assert re.search(r"^dask 1 worker\(s\) x 2 threads +wall .* vs thread pool +\d+\.\d+ \(target >= 0\.9\)", out, re.M), out  # fmt: skip
    hit = re.search(r"hit rate (\d+\.\d)% \(target 100%\), (\d+) request\(s\) reached", out)
    assert hit and hit.groups() == ("100.0", "0"), out
