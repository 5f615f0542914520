"""Sandbox throughput: lateral-ceph requests/s relative to a bare FastAPI constant route.

Method (issue 3: "requests/s for a lateral ceph call, measured from a concurrent client on
loopback, as a ratio against a bare FastAPI 'return a constant' route on the same machine in
the same run"; target ratio >= 0.5):

* Two servers run side by side in their own processes (one uvicorn worker each, the same
  uvicorn settings): the sandbox app and a FastAPI app with one POST route returning a
  constant JSON body.
* One minimal keep-alive HTTP/1.1 client (asyncio streams, C concurrent connections,
  requests pre-built) in this process loads one server at a time.
* Every sandbox request names a patient never seen before (warm-up included), so the
  simulator's per-patient caches never flatter it: each request pays the full cold path
  (patient draw, growth, geometry, placement, noise) as in a cohort fetch.
* Warm-up: both servers first answer ``--warmup`` requests (imports, first-call caches,
  the JIT-less interpreter's own warm-up) that are not measured.
* Rounds: ``--rounds`` measured rounds of ``-n`` requests per server, in the order
  constant, sandbox, sandbox, constant, … (ABBA), so that a change of machine load during
  the run affects both sides alike. Each round's ratio compares neighbouring runs.
* Besides wall-clock requests/s, the CPU time each server process spends per request is
  read from ``/proc/<pid>/stat`` (Linux). A single-worker server at saturation answers
  1 / (CPU s per request) requests/s, so the CPU-time ratio is the throughput ratio with
  other processes' load on a shared machine taken out. The client's own CPU share is
  reported too: a client near 100 % of a core would be the bottleneck, not the server.

``--breakdown`` splits one request's CPU time without HTTP: both apps are called in process
through ASGI (no sockets, no h11), interleaved in small blocks so that machine load affects
every part alike, and ``simulate.respond`` is timed on its own (cold: a new patient per
call; warm: the same request again), as is ``simulate.respond_json``, which the app calls
(the same body as JSON bytes).

    python benchmarks/sandbox.py               # full run (a minute or two)
    python benchmarks/sandbox.py --smoke       # tiny run for CI
    python benchmarks/sandbox.py --breakdown   # where a request's CPU time goes
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import orjson

ROOT = Path(__file__).resolve().parents[1]
SANDBOX_ENDPOINT = "ceph-lateral-points"
SANDBOX_PATH = f"/api/v2/{SANDBOX_ENDPOINT}"
SANDBOX_KEY = "dentalkit-sandbox"


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


def _cpu_seconds(pid: int) -> float | None:
    """User + system CPU seconds of process ``pid`` (Linux ``/proc``), else None."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _loadavg() -> str:
    try:
        with open("/proc/loadavg", encoding="ascii") as fh:
            return " ".join(fh.read().split()[:3])
    except OSError:
        return "n/a"


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


async def _run(port: int, reqs: list[bytes], concurrency: int, statuses: list[int]) -> None:
    chunks = [reqs[i::concurrency] for i in range(concurrency)]
    await asyncio.gather(*(_one_connection(port, c, statuses) for c in chunks if c))


def _requests(kind: str, port: int, n: int, tag: str, same: bool = False) -> list[bytes]:
    """``n`` raw requests; sandbox ones each name a new patient ``BENCH-{tag}-{i}``
    (with ``same``, all name one patient: a diagnostic of the non-simulator cost)."""
    out = []
    for i in range(n):
        if kind == "sandbox":
            body = orjson.dumps({
                "PatientID": "BENCH-same" if same else f"BENCH-{tag}-{i:07d}",
                "TimeStamp": "2024-01-01T00:00:00Z",
                "ImageName": f"https://images.example.org/{tag}/{i}.png",
            })  # fmt: skip
            path, key = SANDBOX_PATH, f"x-api-key: {SANDBOX_KEY}\r\n".encode()
        else:
            body, path, key = b"{}", "/const", b""
        out.append(
            f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Type: application/json\r\n".encode()
            + key
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
            + body
        )
    return out


@dataclass
class Server:
    kind: str
    port: int
    proc: subprocess.Popen


@dataclass
class Run:
    """One measured load of one server."""

    kind: str
    n: int
    wall_s: float
    client_cpu_s: float
    server_cpu_s: float | None
    bad: int

    @property
    def rps(self) -> float:
        return self.n / self.wall_s

    @property
    def server_ms_per_request(self) -> float | None:
        return None if self.server_cpu_s is None else 1e3 * self.server_cpu_s / self.n


def _start(kind: str) -> Server:
    port = _free_port()
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen(
        [sys.executable, __file__, "--serve", kind, "--port", str(port)], env=env
    )
    return Server(kind, port, proc)


def _wait_ready(server: Server, timeout: float = 120.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            socket.create_connection(("127.0.0.1", server.port), timeout=0.2).close()
            return
        except OSError:
            if time.monotonic() > deadline or server.proc.poll() is not None:
                raise RuntimeError(f"{server.kind} server did not start") from None
            time.sleep(0.05)


def _load(server: Server, n: int, concurrency: int, tag: str, same: bool = False) -> Run:
    reqs = _requests(server.kind, server.port, n, tag, same)
    statuses: list[int] = []
    cpu0 = _cpu_seconds(server.proc.pid)
    c0, t0 = time.process_time(), time.perf_counter()
    asyncio.run(_run(server.port, reqs, concurrency, statuses))
    wall, client = time.perf_counter() - t0, time.process_time() - c0
    cpu1 = _cpu_seconds(server.proc.pid)
    server_cpu = None if cpu0 is None or cpu1 is None else cpu1 - cpu0
    bad = sum(s != 200 for s in statuses) + (n - len(statuses))
    return Run(server.kind, n, wall, client, server_cpu, bad)


def _breakdown(rounds: int, block: int = 40) -> None:
    """Per-request CPU time (µs, median of blocks) of the parts of a request, in process."""
    from fastapi import FastAPI
    from fastapi.responses import Response

    from dentalkit.sandbox import simulate
    from dentalkit.sandbox.app import create_app

    constant_app = FastAPI()
    constant = orjson.dumps({"ok": True})

    @constant_app.post("/const")
    async def const() -> Response:
        return Response(constant, media_type="application/json")

    sandbox_app = create_app()
    counter = iter(range(10**9))

    def body(pid: str) -> bytes:
        return orjson.dumps({"PatientID": pid, "TimeStamp": "2024-01-01T00:00:00Z",
                             "ImageName": "https://images.example.org/1.png"})  # fmt: skip

    async def call(app: object, path: str, raw: bytes) -> None:
        headers = [(b"host", b"127.0.0.1:8000"), (b"content-type", b"application/json"),
                   (b"content-length", str(len(raw)).encode()),
                   (b"x-api-key", SANDBOX_KEY.encode())]  # fmt: skip
        scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
                 "method": "POST", "scheme": "http", "path": path, "raw_path": path.encode(),
                 "query_string": b"", "root_path": "", "headers": headers,
                 "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 50000)}  # fmt: skip
        sent: list[dict] = []

        async def receive() -> dict:
            return {"type": "http.request", "body": raw, "more_body": False}

        async def send(message: dict) -> None:
            sent.append(message)

        await app(scope, receive, send)  # type: ignore[operator]
        if sent[0]["status"] != 200:
            raise RuntimeError(f"{path} answered {sent[0]['status']}")

    request = {"PatientID": "WARM", "TimeStamp": "2024-01-01T00:00:00Z",
               "ImageName": "https://images.example.org/1.png"}  # fmt: skip
    parts = {
        "ASGI constant route": lambda: call(constant_app, "/const", b"{}"),
        "ASGI sandbox, same patient": lambda: call(sandbox_app, SANDBOX_PATH, body("WARM")),
        "ASGI sandbox, new patient": lambda: call(
            sandbox_app, SANDBOX_PATH, body(f"BD-A-{next(counter)}")
        ),
        "respond(), same request": lambda: _done(simulate.respond(SANDBOX_ENDPOINT, request)),
        "respond(), new patient": lambda: _done(
            simulate.respond(SANDBOX_ENDPOINT, {**request, "PatientID": f"BD-R-{next(counter)}"})
        ),
        # what the app calls: the same body as orjson bytes (the landmarks written from the array)
        "respond_json(), same request": lambda: _done(
            simulate.respond_json(SANDBOX_ENDPOINT, request)
        ),
        "respond_json(), new patient": lambda: _done(
            simulate.respond_json(
                SANDBOX_ENDPOINT, {**request, "PatientID": f"BD-J-{next(counter)}"}
            )
        ),
    }

    async def main() -> dict[str, float]:
        for f in parts.values():  # warm-up
            for _ in range(block):
                await f()
        times: dict[str, list[float]] = {k: [] for k in parts}
        for _ in range(rounds):
            for k, f in parts.items():
                t0 = time.process_time()
                for _ in range(block):
                    await f()
                times[k].append((time.process_time() - t0) / block * 1e6)
        return {k: statistics.median(v) for k, v in times.items()}

    med = asyncio.run(main())
    unit = med["ASGI constant route"]
    print(f"CPU time per request, in process (median of {rounds} interleaved blocks of {block}); "
          f"load average {_loadavg()}")  # fmt: skip
    for k, v in med.items():
        print(f"  {k:30s} {v:8.0f} µs  ({v / unit:5.2f} × constant)")


async def _done(_: object) -> None:
    return None


def _fmt_ms(v: float | None) -> str:
    return "   n/a" if v is None else f"{v:6.3f}"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--smoke", action="store_true", help="tiny run (CI)")
    ap.add_argument("-n", type=int, default=2000, help="requests per server per round")
    ap.add_argument("-c", "--concurrency", type=int, default=32)
    ap.add_argument("--rounds", type=int, default=4, help="measured rounds (ABBA order)")
    ap.add_argument("--warmup", type=int, default=500, help="unmeasured requests per server")
    ap.add_argument("--breakdown", action="store_true", help="split a request's CPU time (no HTTP)")
    ap.add_argument(
        "--same-patient",
        action="store_true",
        help="diagnostic, not the issue's measurement: every sandbox request names one "
        "patient, so the simulator's caches are warm and the ratio shows what the HTTP "
        "layer and the app allow at best",
    )
    ap.add_argument("--serve", choices=["sandbox", "constant"], help=argparse.SUPPRESS)
    ap.add_argument("--port", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.serve:
        _serve(args.serve, args.port)
        return
    if args.breakdown:
        sys.path.insert(0, str(ROOT))
        _breakdown(max(args.rounds, 15))
        return
    if args.smoke:
        args.n, args.concurrency, args.rounds, args.warmup = 100, 8, 1, 20

    load_before = _loadavg()
    servers = {kind: _start(kind) for kind in ("constant", "sandbox")}
    try:
        for s in servers.values():
            _wait_ready(s)
        for s in servers.values():  # warm-up, patients never reused
            _load(s, args.warmup, args.concurrency, "warmup")
        rounds: list[tuple[Run, Run]] = []
        for r in range(args.rounds):
            order = ("constant", "sandbox") if r % 2 == 0 else ("sandbox", "constant")
            runs = {
                k: _load(servers[k], args.n, args.concurrency, f"r{r}", args.same_patient)
                for k in order
            }
            rounds.append((runs["constant"], runs["sandbox"]))
    finally:
        for s in servers.values():
            s.proc.terminate()
        for s in servers.values():
            s.proc.wait(timeout=10)
    load_after = _loadavg()

    patients = (
        "DIAGNOSTIC: every sandbox request names the SAME patient (simulator caches warm)"
        if args.same_patient
        else "every sandbox request a new patient"
    )
    print(f"requests per server per round: {args.n}, concurrent connections: "
          f"{args.concurrency}, rounds: {args.rounds} (ABBA), warm-up: {args.warmup}; "
          f"{patients}")  # fmt: skip
    print(f"load average before: {load_before}   after: {load_after}   cores: {os.cpu_count()}")
    print(f"{'round':>5} {'const req/s':>11} {'sandbox req/s':>13} {'ratio':>6}   "
          f"{'server CPU ms/req const':>23} {'sandbox':>7} {'ratio':>6}   "
          f"{'client CPU share const':>22} {'sandbox':>7}")  # fmt: skip
    wall_ratios, cpu_ratios = [], []
    for i, (c, s) in enumerate(rounds):
        wall_ratios.append(s.rps / c.rps)
        cms, sms = c.server_ms_per_request, s.server_ms_per_request
        cpu_ratio = cms / sms if cms and sms else None
        if cpu_ratio is not None:
            cpu_ratios.append(cpu_ratio)
        print(f"{i:>5} {c.rps:11.0f} {s.rps:13.0f} {s.rps / c.rps:6.2f}   "
              f"{_fmt_ms(cms):>23} {_fmt_ms(sms):>7} "
              f"{'   n/a' if cpu_ratio is None else f'{cpu_ratio:6.2f}'}   "
              f"{c.client_cpu_s / c.wall_s:22.0%} {s.client_cpu_s / s.wall_s:7.0%}")  # fmt: skip
    print(f"ratio sandbox / constant, wall clock: median {statistics.median(wall_ratios):.2f}, "
          f"best {max(wall_ratios):.2f}   (target >= 0.5)")  # fmt: skip
    if cpu_ratios:
        print(f"ratio sandbox / constant, server CPU time per request: median "
              f"{statistics.median(cpu_ratios):.2f}, best {max(cpu_ratios):.2f}")  # fmt: skip
    bad = sum(r.bad for pair in rounds for r in pair)
    if bad:
        sys.exit(f"{bad} requests failed (non-200 or missing)")


if __name__ == "__main__":
    main()
