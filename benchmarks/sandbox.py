"""Sandbox throughput: lateral-ceph requests/s relative to a bare FastAPI constant route.

Both servers run in their own process (one uvicorn worker each, one at a time) and are
loaded by the same minimal keep-alive HTTP/1.1 client (asyncio streams, C concurrent
connections) in this process, so the ratio compares the servers, not the load generator.
Every sandbox request names a different patient, so the simulator's per-patient cache
does not flatter it. Target (issue 3): ratio >= 0.5 (the simulator is not the bottleneck).

    python benchmarks/sandbox.py            # full run (~20 s)
    python benchmarks/sandbox.py --smoke    # tiny run for CI
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _serve(kind: str, port: int) -> None:
    import uvicorn

    if kind == "sandbox":
        from dentalkit.sandbox.app import create_app

        app = create_app()
    else:
        from fastapi import FastAPI
        from fastapi.responses import Response

        app = FastAPI()
        constant = orjson.dumps({"ok": True})

        @app.post("/const")
        async def const() -> Response:
            return Response(constant, media_type="application/json")

    uvicorn.run(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)


async def _one_connection(port: int, requests: list[bytes], statuses: list[int]) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for raw in requests:
        writer.write(raw)
        await writer.drain()
        head = await reader.readuntil(b"\r\n\r\n")
        status = int(head[9:12])
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        await reader.readexactly(length)
        statuses.append(status)
    writer.close()


def _requests(kind: str, port: int, n: int) -> list[bytes]:
    out = []
    for i in range(n):
        if kind == "sandbox":
            body = orjson.dumps(
                {
                    "PatientID": f"BENCH-{i:07d}",
                    "TimeStamp": "2024-01-01T00:00:00Z",
                    "ImageName": f"https://images.example.org/{i}.png",
                }
            )
            path, key = "/api/v2/ceph-lateral-points", b"x-api-key: dentalkit-sandbox\r\n"
        else:
            body, path, key = b"{}", "/const", b""
        out.append(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n".encode()
            + key
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
    return out


def _load(kind: str, n: int, concurrency: int) -> tuple[float, int]:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", kind, "--port", str(port)], env=env
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError(f"{kind} server did not start") from None
                time.sleep(0.05)
        reqs = _requests(kind, port, n)
        warm = reqs[: max(concurrency, n // 20)]
        asyncio.run(_run(port, warm, concurrency, []))
        statuses: list[int] = []
        t0 = time.perf_counter()
        asyncio.run(_run(port, reqs, concurrency, statuses))
        wall = time.perf_counter() - t0
        bad = sum(s != 200 for s in statuses)
        return n / wall, bad
    finally:
        proc.terminate()
        proc.wait(timeout=10)


async def _run(port: int, reqs: list[bytes], concurrency: int, statuses: list[int]) -> None:
    chunks = [reqs[i::concurrency] for i in range(concurrency)]
    await asyncio.gather(*(_one_connection(port, c, statuses) for c in chunks if c))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="tiny run (CI)")
    ap.add_argument("-n", type=int, default=6000, help="requests per server")
    ap.add_argument("-c", "--concurrency", type=int, default=32)
    ap.add_argument("--serve", choices=["sandbox", "constant"], help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        _serve(args.serve, args.port)
        return
    n = 200 if args.smoke else args.n
    c = 8 if args.smoke else args.concurrency
    const_rps, const_bad = _load("constant", n, c)
    sand_rps, sand_bad = _load("sandbox", n, c)
    print(f"requests per server: {n}, concurrent connections: {c}")
    print(f"bare FastAPI constant route : {const_rps:8.0f} req/s  (non-200: {const_bad})")
    print(f"sandbox /ceph-lateral-points: {sand_rps:8.0f} req/s  (non-200: {sand_bad})")
    print(f"ratio sandbox / constant    : {sand_rps / const_rps:8.2f}   (target >= 0.5)")
    if const_bad or sand_bad:
        sys.exit("some requests failed")


if __name__ == "__main__":
    main()
