"""Benchmark of images.build_manifest over an object-store prefix (issue 32, "Measure").

Run from the repository root::

    python benchmarks/manifest.py              # 100,000 keys
    python benchmarks/manifest.py --keys 20000
    python benchmarks/manifest.py --smoke      # 2,000 keys, for the test suite

A moto S3 server runs in a **separate process** on loopback (moto's server mode, as in the
tests); its bucket is filled inside that process (moto's own backend, no HTTP), so setting
up 100,000 keys costs no requests. The requests the builder sends are counted **at the
server** with moto's request recorder (``/moto-api/recorder/...``), which logs every request
it receives. Prints:

(a) build: wall time of ``build_manifest`` over N keys (list + match + presign + manifest),
    and the same work done with bare fsspec (``fs.find`` + ``fs.sign`` per key) side by side,
    bare first in each of ``--rounds`` rounds (ratio: best of ours ÷ best of bare);
(b) requests: requests the server received during the build, against the ListObjectsV2
    pages a listing needs (ceil(N / 1000)); presigning is local and sends none.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

KINDS = ("lateral_ceph", "pano", "model_upper", "model_lower", "intraoral_frontal")
BUCKET = "bench"

SERVER = """
import logging, sys
from moto.server import ThreadedMotoServer
logging.getLogger("werkzeug").setLevel(logging.ERROR)
n, kinds, bucket = int(sys.argv[1]), sys.argv[2].split(","), sys.argv[3]
server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
server.start()
from moto.s3.models import s3_backends
backend = s3_backends["123456789012"]["aws"]
backend.create_bucket(bucket, "eu-west-1")
for i in range(n):
    kind = kinds[i % len(kinds)]
    key = f"study/P{i // len(kinds):06d}/2024-03-05/{kind}.png"
    if i % 1000 == 999:
        key = f"study/P{i // len(kinds):06d}/notes-{i}.txt"  # 0.1 % files left out
    backend.put_object(bucket, key, b"png")
host, port = server.get_host_and_port()
print(f"http://{host}:{port}", flush=True)
sys.stdin.read()
server.stop()
"""


def _recorder(url: str, action: str) -> str:
    import requests

    if action == "download-recording":
        return requests.get(f"{url}/moto-api/recorder/{action}", timeout=60).text
    requests.post(f"{url}/moto-api/recorder/{action}", timeout=60).raise_for_status()
    return ""


def _options(url: str) -> dict:
    return {
        "endpoint_url": url,
        "key": "testing",
        "secret": "testing",
        "client_kwargs": {"region_name": "eu-west-1"},
    }


def _bare(url: str) -> tuple[float, int]:
    """fsspec alone: list the prefix, presign every key (the work without dentalkit)."""
    import s3fs

    t0 = time.perf_counter()
    fs = s3fs.S3FileSystem(**_options(url), config_kwargs={"signature_version": "s3v4"})
    keys = fs.find(f"{BUCKET}/study")
    urls = [fs.sign(k, expiration=604800) for k in keys]
    return time.perf_counter() - t0, len(urls)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--keys", type=int, default=100_000)
    parser.add_argument("--smoke", action="store_true", help="2,000 keys")
    parser.add_argument("--rounds", type=int, default=1, help="alternating bare/ours rounds")
    args = parser.parse_args()
    n = 2_000 if args.smoke else args.keys
    args.rounds = 2 if args.smoke else args.rounds
    import s3fs  # imported before either is timed (about 2 s of imports)

    from dentalkit.images import build_manifest

    del s3fs

    recording = Path(tempfile.mkdtemp()) / "moto_recording"
    env = {**os.environ, "MOTO_RECORDER_FILEPATH": str(recording)}
    t0 = time.perf_counter()
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(n), ",".join(KINDS), BUCKET],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        url = server.stdout.readline().strip()
        setup = time.perf_counter() - t0
        bares, ours_times = [], []
        for round_ in range(args.rounds):  # bare first: a cold server does not favour ours
            bare, signed = _bare(url)
            bares.append(bare)
            if round_ == 0:
                _recorder(url, "reset-recording")
                _recorder(url, "start-recording")
            t1 = time.perf_counter()
            built = build_manifest(
                f"s3://{BUCKET}/study",
                pattern="{patient_id}/{date}/{kind}.png",
                storage_options=_options(url),
                errors="collect",
            )
            ours_times.append(time.perf_counter() - t1)
            if round_ == 0:
                _recorder(url, "stop-recording")
                log = [
                    json.loads(line)
                    for line in _recorder(url, "download-recording").splitlines()
                    if line
                ]
    finally:
        server.stdin.close()
        try:
            server.wait(timeout=60)
        except subprocess.TimeoutExpired:  # a loaded machine: the figures are what matter
            server.kill()
    images = built.manifest["image_url"].nunique()
    pages = math.ceil(n / 1000)
    methods: dict[str, int] = {}
    for entry in log:
        kind = "list" if "list-type=2" in entry["url"] else entry["method"]
        methods[kind] = methods.get(kind, 0) + 1
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(
        f"keys {n:,} (server set-up {setup:.1f} s, load average {load:.2f} on {os.cpu_count()} cores)"
    )
    ours = min(ours_times)
    bare = min(bares)
    rounds = "; ".join(f"{o:.1f} ÷ {b:.1f}" for o, b in zip(ours_times, bares, strict=True))
    print(
        f"(a) build: {ours:.1f} s for {n:,} keys → {len(built.manifest):,} manifest rows, "
        f"{images:,} images, {len(built.problems):,} files left out ({ours / n * 1e6:.0f} µs "
        f"per key); bare fsspec find + sign of {signed:,} keys {bare:.1f} s (rounds, ours ÷ "
        f"bare: {rounds}); ratio = {ours / bare:.2f}"
    )
    print(
        f"(b) requests to the store: {len(log)} ({', '.join(f'{k} {v}' for k, v in sorted(methods.items()))}); "
        f"ListObjectsV2 pages needed ceil({n:,}/1000) = {pages}; ratio = {len(log) / pages:.2f}"
    )


if __name__ == "__main__":
    main()
