"""Peak memory of one answer near the size limit (issue 30, item 4).

A body just under ``settings.max_response_bytes`` (64 MiB) used to take a process from 152
to 856 MB: the body was read as a list of pieces and joined (two copies), parsed, decoded
to text, and pickled into the cache, all held at once. Here a local server (its own
process) answers ``POST /api/v2/classifier`` with a JSON object of ``--mib`` MiB, and a
fresh Python process per case makes the request:

* ``client``: ``Client.classifier`` with a SQLite HTTP cache (the body is cached);
* ``fetch``: ``fetch_cohort`` of that one request into a new store (cached, then written
  as a Parquet part and read back; ``flush_every=1``, so the part is written while the
  answer's task is still at hand, as in a long fetch).

Each case prints the growth of the process's peak resident set during the call
(``resource.getrusage``; it counts SQLite's and Arrow's buffers too) ÷ the body size, and,
from a second run under ``tracemalloc``, the peak and the end of the call's Python
allocations ÷ the body size. Target: about 2× the body: what the call keeps (text and
parsed data), and at no moment more than two forms of the body. The body is one long
string, so its parsed form is about its size; a body of many numbers parses into several
times its size, which a caller of ``Client`` holds whatever the client does.

    python benchmarks/response_memory.py            # 63 MiB
    python benchmarks/response_memory.py --smoke    # 4 MiB, for the test suite
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

SERVER = r"""
import json, sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
size = int(sys.argv[1])

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_POST(self):
        req = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        pid = req["PatientID"]
        n = 1000 if pid == "warm" else size
        head = b'{"Version":"mem-1","PatientID":"' + pid.encode() + b'","x":"'
        body = head + b"a" * (n - len(head) - 2) + b'"}'
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        view = memoryview(body)
        for i in range(0, len(body), 1 << 20):
            self.wfile.write(view[i : i + (1 << 20)])
    def log_message(self, *a):
        pass

httpd = ThreadingHTTPServer(("127.0.0.1", 0), H)
print(httpd.server_address[1], flush=True)
httpd.serve_forever()
"""

CHILD = r"""
import json, resource, sys, tempfile, tracemalloc
from pathlib import Path
case, base, traced = sys.argv[1], sys.argv[2], sys.argv[3] == "traced"
import pandas as pd
from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import fetch_cohort
with tempfile.TemporaryDirectory() as tmp:
    tmp = Path(tmp)
    client = Client(base, api_key="k", cache=tmp / "c.sqlite")
    def manifest(pid):
        return pd.DataFrame({"patient_id": [pid], "timestamp": ["2024-03-05"], "image_url": ["https://a.b/x.png"]})
    # warm up every code path with a small answer
    client.classifier("warm", "t", "https://a.b/x.png")
    fetch_cohort(manifest("warm"), "classifier", tmp / "warm", client=client, progress=False)
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    if traced:
        tracemalloc.start()
    if case == "client":
        res = client.classifier("big", "t", "https://a.b/x.png")
    else:
        rep = fetch_cohort(manifest("big"), "classifier", tmp / "out", client=client, progress=False, flush_every=1)
        assert rep.stored == 1
    held, peak = tracemalloc.get_traced_memory() if traced else (0, 0)
    rss1 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    print(json.dumps({"peak": peak, "held": held, "rss": rss1 - rss0, "rss0": rss0}))
"""


def main(argv: list[str] | None = None) -> dict[str, dict[str, float]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=float, default=63.0, help="body size in MiB")
    parser.add_argument("--smoke", action="store_true", help="4 MiB, for the test suite")
    args = parser.parse_args(argv)
    if args.smoke:
        args.mib = 4.0
    size = int(args.mib * 2**20)
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    server = subprocess.Popen(
        [sys.executable, "-c", SERVER, str(size)], stdout=subprocess.PIPE, text=True, env=env
    )
    results: dict[str, dict[str, float]] = {}
    try:
        base = f"http://127.0.0.1:{server.stdout.readline().strip()}/api/v2"
        print(f"setup: one answer of {size:,} bytes ({args.mib:g} MiB), SQLite cache, {base}")
        for case in ("client", "fetch"):
            got = {}
            for mode in ("rss", "traced"):  # tracemalloc's own bookkeeping adds to the RSS
                out = subprocess.run(
                    [sys.executable, "-c", CHILD, case, base, mode],
                    capture_output=True,
                    text=True,
                    env=env,
                    cwd=ROOT,
                    timeout=600,
                    check=True,
                )
                got[mode] = json.loads(out.stdout.strip().splitlines()[-1])
            rss, traced = got["rss"], got["traced"]
            results[case] = {
                "rss_growth": rss["rss"] / size,
                "python_peak": traced["peak"] / size,
                "python_held": traced["held"] / size,
                "rss_before_mb": rss["rss0"] / 2**20,
            }
            print(
                f"{case}: peak RSS grew {rss['rss'] / 2**20:,.0f} MiB = "
                f"{rss['rss'] / size:.2f}x the body (from {rss['rss0'] / 2**20:,.0f} MiB); "
                f"Python allocations: peak {traced['peak'] / size:.2f}x, "
                f"{traced['held'] / size:.2f}x held after the call"
            )
    finally:
        server.terminate()
        server.wait(10)
    return results


if __name__ == "__main__":
    main()
