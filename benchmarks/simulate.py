"""Micro-benchmark of the sandbox simulator: µs per ``respond`` call, per endpoint.

Run from the repository root::

    python benchmarks/simulate.py [--calls 200] [--blocks 7]

Three columns per endpoint:

* *warm*: the same request again (patient draw, geometry and placement cached; the
  noise draw and the building of the response dict remain);
* *new session*: a known patient at a new ``TimeStamp`` (growth, geometry, placement);
* *cold*: a new patient each call (everything built from scratch, as in a cohort fetch).

Times are CPU time of this process (``time.process_time``), so other processes on a shared
machine disturb them less than wall-clock time; each figure is the median of ``--blocks``
blocks of ``--calls`` calls (the best block in brackets). A calibration loop, pure
interpreter work, is timed the same way so that runs on differently loaded machines can be
compared. Not part of the test suite.
"""

from __future__ import annotations

import argparse
import itertools
import os
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dentalkit.endpoints import image_endpoints
from dentalkit.sandbox.simulate import estimate_tle, respond

TLE_QUERY = dict(p01="14", p02="F", p03="2", p04="1", p05="0", p06="5.5", p07="3", p08="0",
                 p09="0", p10="1", p11="4.5")  # fmt: skip


def _time(call: Callable[[], object], calls: int, blocks: int) -> tuple[float, float]:
    """(median, best) µs per call over ``blocks`` blocks of ``calls`` calls."""
    per_block = []
    for _ in range(blocks):
        t0 = time.process_time()
        for _ in range(calls):
            call()
        per_block.append((time.process_time() - t0) / calls * 1e6)
    return statistics.median(per_block), min(per_block)


def _calibration() -> float:
    """µs of a fixed pure-Python loop (about 10 µs on an idle 3 GHz core)."""
    return _time(lambda: sum(range(1000)), 200, 7)[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200, help="calls per block")
    parser.add_argument("--blocks", type=int, default=7, help="blocks per figure")
    parser.add_argument("--only", help="endpoints whose name contains this text")
    args = parser.parse_args()
    load = os.getloadavg() if hasattr(os, "getloadavg") else ("n/a",)
    print(f"load average {' '.join(f'{x:.2f}' for x in load)}; calibration loop "
          f"{_calibration():.1f} µs; median (best) of {args.blocks} blocks of "
          f"{args.calls} calls, CPU time")  # fmt: skip
    print(f"{'endpoint':26s} {'warm µs':>15s} {'new session µs':>15s} {'cold µs':>15s}")
    fresh = itertools.count()
    for ep in image_endpoints():
        if args.only and args.only not in ep.name:
            continue
        req = {"PatientID": "BENCH", "TimeStamp": "2024-03-01", "ImageName": "https://x/a.png"}
        respond(ep, req)
        warm = _time(lambda ep=ep, req=req: respond(ep, req), args.calls, args.blocks)
        new_session = _time(
            lambda ep=ep, req=req: respond(
                ep, {**req, "TimeStamp": f"2024-03-01T10:00:00.{next(fresh):06d}"}
            ),
            args.calls,
            args.blocks,
        )
        cold = _time(
            lambda ep=ep, req=req: respond(ep, {**req, "PatientID": f"BENCH-{next(fresh)}"}),
            args.calls,
            args.blocks,
        )
        cells = " ".join(f"{m:8.0f} ({b:4.0f})" for m, b in (warm, new_session, cold))
        print(f"{ep.name:26s} {cells}")
    m, b = _time(lambda: estimate_tle(TLE_QUERY), args.calls, args.blocks)
    print(f"{'tle':26s} {m:8.0f} ({b:4.0f})")


if __name__ == "__main__":
    main()
