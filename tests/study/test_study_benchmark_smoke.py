"""benchmarks/study.py --smoke runs the study command and the direct stages side by side."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_benchmark_smoke_prints_the_stages_and_the_ratio():
    run = subprocess.run(
        [sys.executable, "benchmarks/study.py", "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert re.search(r"^patients 3, 75 requests; dpi 300$", out, re.M), out
    for stage in ("tables", "contract", "analyses", "figures", "report"):
        assert re.search(rf"^{stage} +\d+\.\d +\d+\.\d$", out, re.M), (stage, out)
    assert re.search(r"^peak RSS: study process \d+ MB, direct process \d+ MB$", out, re.M), out
    assert re.search(
        r"^stages after fetch ÷ same stages called directly: \d+\.\d\d \(target ≤ 1\.1\)$",
        out,
        re.M,
    ), out
