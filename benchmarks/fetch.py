"""Benchmark of fetch_cohort against the sandbox (issue 4): cold, resume, warm HTTP cache.

Run from the repository root::

    python benchmarks/fetch.py            # 800 requests, 200 ms latency, 16 workers
    python benchmarks/fetch.py --smoke    # a few requests, for the test suite

The sandbox runs in a **separate process**, so the CPU time measured here is the client's
alone. Prints three lines:

(a) cold: wall ÷ the ideal ``N × latency / workers`` (target ≤ 1.25) and the client's CPU
    time per uncached request;
(b) resume: the same call again on the same ``out`` — wall ÷ cold wall (target ≤ 0.02);
(c) a new study served entirely from the warm HTTP cache — time per request ÷ a bare
    requests-cache ``CachedSession`` hit on the same entries (target ≤ 1.5);
(d) reading the store, ``read_responses(out)`` with its checks (page checksums, each row's
    body and key digests) ÷ ``read_responses(out, verify=False)`` (target ≤ 1.3), best of
    several reads each, alternated.

Every answer is stored with its digests and every cache entry with its checksum: (a) and
(b) include writing and checking them (issue 30).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

SERVER = """
import sys
from dentalkit.sandbox import start
sb = start(faults={"latency": float(sys.argv[1])})
print(sb.base_url, sb.api_key, flush=True)
sys.stdin.read()
"""


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (Linux /proc), else None."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _manifest(n: int):
    import pandas as pd

    ids = [f"B{i:05d}" for i in range(n)]
    return pd.DataFrame(
        {
            "patient_id": ids,
            "timestamp": "2024-03-05",
            "image_url": [f"https://images.example.org/{p}/photo.png" for p in ids],
        }
    )


def _bare_hits(
    cache: Path, base_url: str, key: str, bodies: list[dict], endpoint_path: str
) -> float:
    """Seconds per hit of a bare CachedSession on the same entries (sequential)."""
    from requests_cache import DEFAULT_IGNORED_PARAMS, CachedSession

    session = CachedSession(
        str(cache),
        backend="sqlite",
        wal=True,
        allowable_methods=("GET", "POST"),
        ignored_parameters=[*DEFAULT_IGNORED_PARAMS, "x-api-key"],
    )
    session.headers["User-Agent"] = "dentalkit/0.1 (+https://github.com/dentalkit/dentalkit)"
    session.headers["Accept"] = "application/json"
    url = base_url + endpoint_path
    t0 = time.perf_counter()
    for body in bodies:
        r = session.post(url, json=body, headers={"x-api-key": key})
        if not r.from_cache:
            raise SystemExit("the bare session missed the cache: keys differ from the client's")
    per = (time.perf_counter() - t0) / len(bodies)
    session.close()
    return per


def _read_times(out: Path, rounds: int = 7) -> tuple[float, float]:
    """Best wall time of read_responses with and without its checks (alternated)."""
    from dentalkit.fetch.store import read_responses

    best = {True: float("inf"), False: float("inf")}
    for _ in range(rounds):
        for verify in (True, False):
            t0 = time.perf_counter()
            read_responses(out, verify=verify)
            best[verify] = min(best[verify], time.perf_counter() - t0)
    return best[True], best[False]


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=800)
    p.add_argument("--latency", type=float, default=0.2)
    p.add_argument("--workers", type=int, default=16)
    p.add_argument("--endpoint", default="classifier")
    p.add_argument("--smoke", action="store_true", help="tiny run for the test suite")
    args = p.parse_args(argv)
    if args.smoke:
        args.n, args.latency, args.workers = 24, 0.02, 4

    import orjson

    from dentalkit.endpoints import get_endpoint
    from dentalkit.fetch.client import Client
    from dentalkit.fetch.cohort import fetch_cohort

    ep = get_endpoint(args.endpoint)
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(args.latency)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )
    try:
        base_url, key = server.stdout.readline().split()
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            cache = tmp / "http-cache.sqlite"
            client = Client(base_url, api_key=key, cache=cache)
            manifest = _manifest(args.n)
            kw = dict(client=client, max_workers=args.workers, progress=False)

            srv0 = _cpu_seconds(server.pid)
            cpu0, t0 = time.process_time(), time.perf_counter()
            cold = fetch_cohort(manifest, ep.name, tmp / "study-1", **kw)
            cold_wall, cold_cpu = time.perf_counter() - t0, time.process_time() - cpu0
            srv1 = _cpu_seconds(server.pid)
            assert cold.stored == args.n and cold.from_cache == 0 and cold.failed == 0
            ideal = args.n * args.latency / args.workers

            t0 = time.perf_counter()
            again = fetch_cohort(manifest, ep.name, tmp / "study-1", **kw)
            resume_wall = time.perf_counter() - t0
            assert again.already_stored == args.n and again.sent == 0

            t0 = time.perf_counter()
            warm = fetch_cohort(manifest, ep.name, tmp / "study-2", **kw)
            warm_wall = time.perf_counter() - t0
            assert warm.from_cache == args.n

            bodies = [
                {"PatientID": r.patient_id, "TimeStamp": r.timestamp, "ImageName": r.image_url}
                for r in manifest.itertuples()
            ]
            bare = _bare_hits(cache, base_url, key, bodies, ep.path)
            checked, unchecked = _read_times(tmp / "study-1")
            text = client.call(ep, *bodies[0].values()).text.encode()
            t0 = time.perf_counter()
            for _ in range(1000):
                orjson.loads(text)
            parse = (time.perf_counter() - t0) / 1000
    finally:
        server.stdin.close()
        server.terminate()
        server.wait(10)

    per_warm = warm_wall / args.n
    sandbox_cpu = (
        f"; sandbox CPU per request {(srv1 - srv0) / args.n * 1000:.2f} ms"
        if srv0 is not None and srv1 is not None
        else ""
    )
    load = (
        f", load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs"
        if hasattr(os, "getloadavg")
        else ""
    )
    print(
        f"setup: N={args.n} requests to {ep.path}, latency {args.latency * 1000:.0f} ms, "
        f"{args.workers} workers, SQLite cache, sandbox in its own process{load}"
    )
    print(
        f"(a) cold: wall {cold_wall:.2f} s / ideal {ideal:.2f} s = {cold_wall / ideal:.3f} "
        f"(target <= 1.25); client CPU per uncached request {cold_cpu / args.n * 1000:.2f} ms"
        f"{sandbox_cpu}"
    )
    print(
        f"(b) resume: wall {resume_wall:.3f} s / cold wall {cold_wall:.2f} s = "
        f"{resume_wall / cold_wall:.4f} (target <= 0.02)"
    )
    print(
        f"(c) warm cache, new study: {per_warm * 1000:.3f} ms per request / bare CachedSession hit "
        f"{bare * 1000:.3f} ms = {per_warm / bare:.2f} (target <= 1.5); "
        f"orjson parse of one body {parse * 1e6:.1f} us ({bare / parse:.0f}x cheaper than a hit)"
    )
    print(
        f"(d) read the store: checked {checked * 1000:.1f} ms / unchecked {unchecked * 1000:.1f} "
        f"ms = {checked / unchecked:.2f} (target <= 1.3)"
    )


if __name__ == "__main__":
    main()
