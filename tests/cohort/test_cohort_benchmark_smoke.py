"""benchmarks/fetch.py --smoke runs and prints its four figures (issue 4: cold, resume, warm
cache; issue 30: reading the store with its checks against without)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_benchmark_smoke_prints_a_b_c_d():
    run = subprocess.run(
        [sys.executable, "benchmarks/fetch.py", "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    ratio = r"= (\d+\.\d+)"
    assert re.search(r"^\(a\) cold: wall .* " + ratio + r" \(target <= 1\.25\); client CPU per uncached request \d+\.\d+ ms", out, re.M)  # fmt: skip
    assert re.search(r"^\(b\) resume: .*" + ratio + r" \(target <= 0\.02\)", out, re.M)
    assert re.search(
        r"^\(c\) warm cache, new study: .*" + ratio + r" \(target <= 1\.5\)", out, re.M
    )
    assert re.search(
        r"^\(d\) read the store: checked .*" + ratio + r" \(target <= 1\.3\)", out, re.M
    )
