"""A large answer is read into one buffer, not a list of pieces joined into a second copy
(issue 30, item 4). The peak memory of a whole call near the size limit is measured by
``benchmarks/response_memory.py`` (resident set, separate processes); here its smoke run,
and the Python allocations of reading one body, which ``tracemalloc`` sees exactly."""

from __future__ import annotations

import importlib.util
import tracemalloc
from pathlib import Path

import requests

from dentalkit.fetch._transfer import body_reader
from tests.hostile_servers import Service, send

ROOT = Path(__file__).resolve().parents[2]
SIZE = 8 << 20


def test_reading_a_body_costs_about_its_size_once():
    payload = b'{"x": "' + b"a" * (SIZE - 9) + b'"}'  # built before tracing (the server's)

    def route(h, server):
        send(h, 200, payload)

    with Service({"/api/v2/big": route}) as svc, requests.Session() as session:
        session.hooks["response"].append(body_reader(SIZE + 100))
        session.get(svc.base_url + "/big", timeout=30)  # warm up the connection pool
        tracemalloc.start()
        try:
            response = session.get(svc.base_url + "/big", timeout=30)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert len(response.content) == SIZE
    # the buffer grows by an eighth at a time: ~1.1x; pieces joined into a copy were 2x
    assert peak < 1.4 * SIZE, peak / SIZE


def test_the_memory_benchmark_runs():
    spec = importlib.util.spec_from_file_location(
        "response_memory", ROOT / "benchmarks" / "response_memory.py"
    )
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    results = bench.main(["--smoke"])
    assert set(results) == {"client", "fetch"}
    # what the call keeps is the text and the parsed body, nothing more
    assert 1.9 < results["client"]["python_held"] < 2.2
    # and no more than that at any moment: orjson's copy of its input and its reserved
    # value pool made the Python peak 14x
    for case in ("client", "fetch"):
        assert results[case]["python_peak"] < 2.4, (case, results[case])
