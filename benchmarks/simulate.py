"""Micro-benchmark of the sandbox simulator: µs per ``respond`` call, per endpoint.

Run from the repository root::

    python benchmarks/simulate.py [--patients 200] [--repeat 300]

*warm*: the same session again (patient draw, geometry and placement cached);
*cold*: a new patient each call (everything built from scratch).
Not part of the test suite.
"""

from __future__ import annotations

import argparse
import time

from dentalkit.endpoints import image_endpoints
from dentalkit.sandbox.simulate import estimate_tle, respond


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patients", type=int, default=200, help="cold calls per endpoint")
    parser.add_argument("--repeat", type=int, default=300, help="warm calls per endpoint")
    args = parser.parse_args()
    print(f"{'endpoint':28s} {'warm µs':>10s} {'cold µs':>10s}")
    for ep in image_endpoints():
        req = {"PatientID": "BENCH", "TimeStamp": "2024-03-01", "ImageName": "https://x/a.png"}
        respond(ep, req)
        t0 = time.perf_counter()
        for _ in range(args.repeat):
            respond(ep, req)
        warm = (time.perf_counter() - t0) / args.repeat * 1e6
        t0 = time.perf_counter()
        for i in range(args.patients):
            respond(ep, {**req, "PatientID": f"BENCH-{ep.name}-{i}"})
        cold = (time.perf_counter() - t0) / args.patients * 1e6
        print(f"{ep.name:28s} {warm:10.1f} {cold:10.1f}")
    q = dict(p01="14", p02="F", p03="2", p04="1", p05="0", p06="5.5", p07="3", p08="0",
             p09="0", p10="1", p11="4.5")  # fmt: skip
    t0 = time.perf_counter()
    for _ in range(args.repeat):
        estimate_tle(q)
    print(f"{'tle':28s} {(time.perf_counter() - t0) / args.repeat * 1e6:10.1f}")


if __name__ == "__main__":
    main()
