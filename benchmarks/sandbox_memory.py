"""Sandbox memory over many new patients: do the simulator's per-patient caches level off?

Method (issue 21, "the sandbox's per-patient caches are bounded so its memory levels off,
measured over >= 10,000 patients"):

* One process imports the sandbox simulator and answers, for each of ``--patients`` new
  patients and ``--sessions`` sessions each, every one of the 12 image endpoints
  (``simulate.respond_json``, the function the HTTP app calls for each request: the same
  per-patient caches fill as under a cohort fetch, without the HTTP stack's noise).
* Every ``--every`` patients the resident set size (``/proc/self/statm``, Linux) and the
  number of entries in every ``functools.lru_cache`` of ``dentalkit.sandbox`` are printed.
* Verdict: memory "levels off" when the resident set grew by less than 1 % over the last
  two blocks of ``--every`` patients (caches that grow without bound, or with bounds larger
  than the run, keep adding tens of megabytes per block). A garbage collection runs before
  each reading.

With ``--http`` the sandbox runs as a server in its own process (as ``dentalkit sandbox``)
and 8 client threads send one request per patient over loopback, cycling through the 12
image endpoints; the server's resident set is read from ``/proc/<pid>/statm``. With
``--url-chars N`` every image URL is padded to N characters (issue 30: 60 KB URLs took a
sandbox from 149 to 680 MB over 5,000 requests while its request counters and two
URL-keyed caches kept whole URLs; ``--http --patients 5000 --every 1000 --url-chars 60000``).

    python benchmarks/sandbox_memory.py                  # 12,000 patients (about two minutes)
    python benchmarks/sandbox_memory.py --http           # through HTTP (10,000 requests)
    python benchmarks/sandbox_memory.py --smoke          # tiny run for CI (a few seconds)
    python benchmarks/sandbox_memory.py --http --patients 5000 --url-chars 60000
"""

from __future__ import annotations

import argparse
import gc
import os
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def rss_mb(pid: int | str = "self") -> float:
    pages = int(Path(f"/proc/{pid}/statm").read_text().split()[1])
    return pages * os.sysconf("SC_PAGE_SIZE") / 2**20


SERVER = """
import sys
from dentalkit.sandbox import start
sb = start()
print(sb.base_url, sb.api_key, flush=True)
sys.stdin.read()
"""


def run_http(patients: int, every: int, url_chars: int = 0) -> dict[str, object]:
    """The sandbox as a server process; one request per new patient; the server's RSS.

    ``url_chars``: pad every image URL to this many characters (0: plain URLs).
    """
    import subprocess
    from concurrent.futures import ThreadPoolExecutor

    import requests

    from dentalkit.endpoints import ENDPOINTS

    eps = [e for e in ENDPOINTS.values() if e.is_image]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )  # fmt: skip
    try:
        base, key = server.stdout.readline().split()
        local = threading.local()

        def one(i: int) -> int:
            if not hasattr(local, "session"):
                local.session = requests.Session()  # one keep-alive connection per thread
            session = local.session
            ep = eps[i % len(eps)]
            pid = f"HTTP{i:06d}"
            url = f"https://images.example.org/{pid}/image.png"
            if url_chars > len(url):  # a long path, unique per patient
                url = url.replace("/image.png", "/" + "x" * (url_chars - len(url)) + "/image.png")
            body = {"PatientID": pid, "TimeStamp": "2024-03-05", "ImageName": url}
            return session.post(base + ep.path, json=body, headers={"x-api-key": key}, timeout=60).status_code  # fmt: skip

        readings = []
        started = time.perf_counter()
        print(f"{'patients':>9} {'server RSS MB':>14} {'s':>6}")
        with ThreadPoolExecutor(8) as pool:
            for start in range(0, patients + 1, every):
                readings.append((start, rss_mb(server.pid), 0))
                print(f"{start:9,d} {readings[-1][1]:14.1f} {time.perf_counter() - started:6.1f}")
                if start == patients:
                    break
                codes = list(pool.map(one, range(start, min(start + every, patients))))
                assert set(codes) == {200}, set(codes)
    finally:
        server.stdin.close()
        server.wait(30)
    return verdict(readings, every, [])


def verdict(readings: list, every: int, unbounded: list[str]) -> dict[str, object]:
    rss = [r[1] for r in readings]
    early = rss[1] - rss[0]
    late = (rss[-1] - rss[-3]) / 2
    levels_off = 2 * late < 0.01 * rss[-1]
    print(
        f"RSS growth per {every:,} patients: first block {early:.1f} MB, last two blocks "
        f"{late:.1f} MB each; peak {max(rss):.1f} MB; levels off: {'yes' if levels_off else 'NO'}"
    )
    return {
        "readings": readings,
        "early": early,
        "late": late,
        "levels_off": levels_off,
        "unbounded": unbounded,
    }


def lru_caches() -> dict[str, object]:
    """Every ``functools.lru_cache`` function in the sandbox's modules, by qualified name."""
    import importlib
    import pkgutil

    import dentalkit.sandbox as pkg

    found = {}
    for info in pkgutil.iter_modules(pkg.__path__):
        module = importlib.import_module(f"dentalkit.sandbox.{info.name}")
        for name, obj in vars(module).items():
            if callable(obj) and hasattr(obj, "cache_info") and obj.__module__ == module.__name__:
                found[f"{info.name}.{name}"] = obj
    return found


def run(patients: int, sessions: int, every: int) -> dict[str, object]:
    from dentalkit.endpoints import ENDPOINTS
    from dentalkit.sandbox import simulate

    eps = [e for e in ENDPOINTS.values() if e.is_image]
    caches = lru_caches()
    readings: list[tuple[int, float, int]] = []
    started = time.perf_counter()
    print(f"{'patients':>9} {'RSS MB':>8} {'cache entries':>14} {'s':>6}")
    for i in range(patients + 1):
        if i % every == 0:
            gc.collect()
            entries = sum(c.cache_info().currsize for c in caches.values())
            readings.append((i, rss_mb(), entries))
            print(
                f"{i:9,d} {readings[-1][1]:8.1f} {entries:14,d} {time.perf_counter() - started:6.1f}"
            )
        if i == patients:
            break
        pid = f"MEM{i:06d}"
        for s in range(sessions):
            ts = f"202{s}-03-05"
            url = f"https://images.example.org/{pid}/{s}/image.png"
            for ep in eps:
                simulate.respond_json(ep, {"PatientID": pid, "TimeStamp": ts, "ImageName": url})
    # growth per block: the first block (warm-up and caches filling) and the last two
    bounds = {name: c.cache_info().maxsize for name, c in caches.items()}
    unbounded = sorted(name for name, size in bounds.items() if size is None)
    print(f"lru caches: {len(bounds)}, unbounded: {unbounded or 'none'}; largest maxsize "
          f"{max(s for s in bounds.values() if s):,}")  # fmt: skip
    return verdict(readings, every, unbounded)


def main(argv: list[str] | None = None) -> dict[str, object]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patients", type=int, default=12_000)
    parser.add_argument("--sessions", type=int, default=2)
    parser.add_argument("--every", type=int, default=1_000)
    parser.add_argument("--smoke", action="store_true", help="tiny run for CI")
    parser.add_argument("--http", action="store_true", help="through a sandbox server process")
    parser.add_argument(
        "--url-chars", type=int, default=0, help="pad image URLs to this length (with --http)"
    )
    args = parser.parse_args(argv)
    if args.smoke:
        args.patients, args.sessions, args.every = 120, 1, 30
    if args.http:
        n = 10_000 if args.patients == 12_000 else args.patients
        return run_http(n, args.every, args.url_chars)
    return run(args.patients, args.sessions, args.every)


if __name__ == "__main__":
    main()
