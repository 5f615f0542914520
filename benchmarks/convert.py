"""Converter speed and memory, measured side by side against a bare ``orjson.loads``.

Run from the repository root::

    python benchmarks/convert.py            # full size: 10,000 ceph + 5,000 segmentation bodies
    python benchmarks/convert.py --small    # a quick look

It prints, in one run:

1. 10,000 lateral ceph bodies (169 landmarks each): time of
   ``dentalkit.convert.landmarks(responses)`` (parse + convert to the typed DataFrame)
   divided by the time of a bare ``orjson.loads`` of the same bodies — target ≤ 2.0;
2. 5,000 segmentation bodies (32 teeth, ~5 % missing, 48 outline points each) to the
   ``teeth`` table with shapely Polygons, the same ratio — target ≤ 3.0;
3. the landmarks table's ``memory_usage(deep=True)`` per row — target ≤ 48 bytes.

The converters pause the cyclic garbage collector while they flatten bodies (see
``dentalkit.convert._common.gc_paused``); the bare loop runs with the interpreter's
defaults, as a user's own loop would. For transparency the ratio against a bare loop that
also pauses the collector is printed as well.

Both sides of a ratio are timed back to back, ``--repeat`` times, in the same process;
the ratio reported is the median of these paired ratios (a pair runs under the same
machine load), computed from CPU time (``time.process_time``), which a shared machine
disturbs less than wall time. Best times and wall-clock ratios are printed too.
"""

from __future__ import annotations

import argparse
import gc
import math
import random
import statistics
import sys
import time
from pathlib import Path

import orjson
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dentalkit import convert

TYPES = ("i1", "i2", "c", "p1", "p2", "m1", "m2", "m3")


def ceph_bodies(n: int, seed: int = 0) -> list[bytes]:
    """``n`` lateral ceph bodies shaped as the spec shows (169 landmarks)."""
    rng = random.Random(seed)
    out = []
    for k in range(n):
        results = {
            f"Later_{j}": {
                "x_coordinate": round(rng.uniform(200, 2200), 3),
                "y_coordinate": round(rng.uniform(200, 2400), 3),
            }
            for j in range(1, 170)
        }
        out.append(
            orjson.dumps(
                {
                    "Version": "2024.1.3",
                    "PatientID": f"P{k:05d}",
                    "NumberOfPredictedPoints": 169,
                    "Results": results,
                    "OutputImageUrl": f"https://out.example/{k}.png?expires=1&sig=ab",
                }
            )
        )
    return out


def segmentation_bodies(n: int, seed: int = 1, points: int = 48) -> list[bytes]:
    """``n`` pano segmentation bodies: 32 teeth, ~5 % missing, ``points`` per outline."""
    rng = random.Random(seed)
    out = []
    for k in range(n):
        results = {}
        j = 0
        for arch in ("up", "lo"):
            for side in ("rgt", "lft"):
                for t in TYPES:
                    j += 1
                    key = f"{t}_{side}_{arch}"
                    if rng.random() < 0.05:
                        results[key] = {"missing": True, "points": [[0, 0]]}
                        continue
                    cx, cy, r = 60.0 * j, 400.0 if arch == "up" else 700.0, 25.0
                    results[key] = {
                        "missing": False,
                        "points": [
                            [
                                round(cx + r * math.cos(2 * math.pi * q / points), 1),
                                round(cy + 1.3 * r * math.sin(2 * math.pi * q / points), 1),
                            ]
                            for q in range(points)
                        ],
                    }
        out.append(
            orjson.dumps(
                {
                    "Version": "2024.1.3",
                    "PatientID": f"P{k:05d}",
                    "Results": results,
                    "OutputImageUrl": f"https://out.example/{k}.png?expires=1&sig=ab",
                }
            )
        )
    return out


def responses(endpoint: str, bodies: list[bytes]) -> pd.DataFrame:
    """A responses table holding ``bodies`` as JSON text (as the responses store keeps them)."""
    n = len(bodies)
    return pd.DataFrame(
        {
            "endpoint": [endpoint] * n,
            "patient_id": [f"P{k:05d}" for k in range(n)],
            "timestamp": ["2024-03-01T09:30:00Z"] * n,
            "body": [b.decode() for b in bodies],
        }
    )


def bare_parse(frame: pd.DataFrame) -> None:
    loads = orjson.loads
    for b in frame["body"].to_numpy(object):
        loads(b)


def timed(fn) -> tuple[float, float]:
    """(CPU seconds, wall seconds) of one call of ``fn``."""
    gc.collect()
    c, w = time.process_time(), time.perf_counter()
    fn()
    return time.process_time() - c, time.perf_counter() - w


def bare_parse_no_gc(frame: pd.DataFrame) -> None:
    gc.disable()
    try:
        bare_parse(frame)
    finally:
        gc.enable()


def side_by_side(fn, frame: pd.DataFrame, repeat: int) -> dict[str, float]:
    """Time ``fn(frame)`` and a bare parse of the same bodies back to back, ``repeat``
    times. The ratio is the median of the paired ratios (each pair ran under the same
    machine load); best times are reported alongside."""
    conv, base, base_ngc = [], [], []
    for _ in range(repeat):
        base.append(timed(lambda: bare_parse(frame)))
        conv.append(timed(lambda: fn(frame)))
        base_ngc.append(timed(lambda: bare_parse_no_gc(frame)))
    return {
        "cpu": min(c for c, _ in conv),
        "cpu_base": min(c for c, _ in base),
        "cpu_base_nogc": min(c for c, _ in base_ngc),
        "wall": min(w for _, w in conv),
        "wall_base": min(w for _, w in base),
        "ratio": statistics.median(c[0] / b[0] for c, b in zip(conv, base, strict=True)),
        "ratio_best": min(c[0] for c in conv) / min(b[0] for b in base),
        "ratio_nogc": statistics.median(c[0] / b[0] for c, b in zip(conv, base_ngc, strict=True)),
        "wall_ratio": statistics.median(c[1] / b[1] for c, b in zip(conv, base, strict=True)),
    }


def run(n_ceph: int, n_seg: int, repeat: int) -> dict[str, float]:
    """Measure both targets; ``n_ceph`` or ``n_seg`` 0 skips that part."""
    out: dict[str, float] = {}
    if n_ceph:
        out |= _landmarks(n_ceph, repeat)
    if n_seg:
        out |= _teeth(n_seg, repeat)
    return out


def _landmarks(n_ceph: int, repeat: int) -> dict[str, float]:
    ceph = responses("ceph_lateral_points", ceph_bodies(n_ceph))
    lm_t = side_by_side(convert.landmarks, ceph, repeat)
    lm = convert.landmarks(ceph)
    assert len(lm) == 169 * n_ceph
    return {
        **{f"landmarks_{k}": v for k, v in lm_t.items()},
        "landmarks_bytes_per_row": lm.memory_usage(deep=True).sum() / len(lm),
        "landmark_rows": len(lm),
    }


def _teeth(n_seg: int, repeat: int) -> dict[str, float]:
    seg = responses("pano_segmentation", segmentation_bodies(n_seg))
    th_t = side_by_side(convert.teeth, seg, repeat)
    teeth = convert.teeth(seg)
    assert teeth["geometry"].notna().sum() > 0.8 * 32 * n_seg  # ~5 % of teeth are missing
    return {
        **{f"teeth_{k}": v for k, v in th_t.items()},
        "teeth_rows": len(teeth),
    }


def _report(r: dict[str, float], key: str, target: float) -> None:
    print(
        f"  CPU ratio (median of {r.get('repeat', 0):.0f} paired runs): {r[key + '_ratio']:.2f}"
        f"  (target <= {target}); best times: parse+convert {r[key + '_cpu']:.3f} s / bare "
        f"orjson.loads {r[key + '_cpu_base']:.3f} s = {r[key + '_ratio_best']:.2f}"
    )
    print(
        f"  wall ratio (median): {r[key + '_wall_ratio']:.2f}; best wall: {r[key + '_wall']:.3f} s"
        f" / {r[key + '_wall_base']:.3f} s"
    )
    print(
        f"  CPU ratio vs a bare loop that also pauses the garbage collector: "
        f"{r[key + '_ratio_nogc']:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--small", action="store_true", help="1,000 ceph and 500 segmentation bodies")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--only", choices=("landmarks", "teeth"), help="measure one target only")
    args = ap.parse_args(argv)
    n_ceph, n_seg = (1000, 500) if args.small else (10_000, 5_000)
    n_ceph = 0 if args.only == "teeth" else n_ceph
    n_seg = 0 if args.only == "landmarks" else n_seg
    r = run(n_ceph, n_seg, args.repeat)
    r["repeat"] = args.repeat
    if n_ceph:
        print(f"landmarks: {n_ceph:,} lateral ceph bodies -> {r['landmark_rows']:,} rows")
        _report(r, "landmarks", 2.0)
        print(
            f"landmarks memory: {r['landmarks_bytes_per_row']:.1f} bytes/row "
            "(memory_usage(deep=True); target <= 48)"
        )
    if n_seg:
        print(f"teeth: {n_seg:,} segmentation bodies -> {r['teeth_rows']:,} rows with polygons")
        _report(r, "teeth", 3.0)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
