"""The sandbox-memory benchmark runs (smoke mode), and every simulator cache is bounded."""

from __future__ import annotations

import importlib.util
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "sandbox_memory.py"


def test_sandbox_memory_benchmark_smoke_and_bounded_caches():
    spec = importlib.util.spec_from_file_location("sandbox_memory", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = module.main(["--smoke"])
    assert result["unbounded"] == []
    assert len(result["readings"]) == 5
    caches = module.lru_caches()
    assert len(caches) >= 20  # the scan finds the simulator's caches
    assert max(c.cache_info().maxsize for c in caches.values()) <= 4096
