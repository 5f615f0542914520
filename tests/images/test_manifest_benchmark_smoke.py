"""benchmarks/manifest.py --smoke runs and prints its two figures (time, requests)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_manifest_benchmark_smoke_prints_time_and_requests():
    run = subprocess.run(
        [sys.executable, "benchmarks/manifest.py", "--smoke"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert run.returncode == 0, run.stderr
    out = run.stdout
    assert re.search(r"^\(a\) build: [\d.]+ s for 2,000 keys → 3,596 manifest rows, 1,998 images, 2 files left out .* ratio = \d+\.\d+$", out, re.M)  # fmt: skip
    # the listing's pages, counted by the server: 2,000 keys need 2 ListObjectsV2 pages
    assert re.search(
        r"^\(b\) requests to the store: 2 \(list 2\); .* = 2; ratio = 1\.00$", out, re.M
    )
