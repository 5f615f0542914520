"""Benchmark: all lateral measures for a large cohort, from the long landmarks table.

Builds a synthetic landmarks table shaped like the converter's output (169 lateral
landmarks per session, categorical key columns, half the films facing left, tilted and
scaled), then times

1. ``dentalkit.ceph.measure`` on the whole table (the table → array step included);
2. a straightforward per-session Python loop over the same catalogue definitions
   (groupby session, dict of points, ``math`` per measure) on a subset, scaled up;

asserts both give the same numbers on the subset and prints time per session and the
speed-up. Run::

    python benchmarks/ceph.py            # 100,000 sessions (16.9 M rows), loop on 1,000
    python benchmarks/ceph.py --smoke    # tiny sizes (used by the test suite)
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dentalkit.ceph import load_measures, load_points, measure
from dentalkit.landmark_map import load_landmark_map

# anatomical template (mm; x anterior, y up) of the named lateral landmarks
TEMPLATE = {
    "S": (0, 0), "N": (70, 5), "Or": (55, -22), "Po": (-25, -20), "A": (68, -45),
    "B": (62, -85), "Pog": (64, -100), "Me": (55, -112), "Gn": (61, -108), "Go": (-5, -85),
    "ANS": (75, -40), "PNS": (20, -42), "Ar": (-10, -30), "Co": (-8, -22), "Ba": (-20, -35),
    "Pt": (15, -25), "Ptm": (18, -32), "Xi": (5, -60), "Pm": (63, -95), "DC": (-5, -25),
    "U1_tip": (72, -70), "U1_apex": (60, -45), "U1_labial": (74, -64), "L1_tip": (69, -68),
    "L1_apex": (58, -92), "L1_labial": (70, -73), "U6_cusp": (35, -68), "L6_cusp": (35, -70),
    "U4_cusp": (52, -68.5), "L4_cusp": (52, -71.5), "G'": (78, 10), "N'": (75, 3),
    "Prn": (100, -30), "Cm": (93, -38), "Sn": (85, -45), "A'": (84, -52), "Ls": (87, -60),
    "Stms": (83, -67), "Stmi": (83, -69), "Li": (85, -76), "B'": (78, -90), "Pog'": (80, -103),
    "Gn'": (74, -113), "Me'": (62, -118),
}  # fmt: skip


def synthetic_table(n_sessions: int, seed: int = 0) -> tuple[pd.DataFrame, float]:
    """Long lateral landmarks table: n_sessions × 169 rows. Returns (table, mm_per_px)."""
    rng = np.random.default_rng(seed)
    lm = load_landmark_map("lateral")
    keys, names = lm["key"].tolist(), lm["name"].tolist()
    n_l = len(keys)
    base = np.array([TEMPLATE.get(n, (0.0, 0.0)) for n in names], dtype=float)
    contour = np.array([n not in TEMPLATE for n in names])
    base[contour] = rng.uniform([-30, -120], [100, 10], size=(contour.sum(), 2))
    pts = base[None] + rng.normal(0, 1.0, size=(n_sessions, n_l, 2))  # mm
    mirror = rng.random(n_sessions) < 0.5
    pts[mirror, :, 0] *= -1
    t = np.radians(rng.uniform(-5, 5, n_sessions))
    c, s = np.cos(t)[:, None], np.sin(t)[:, None]
    x = c * pts[..., 0] - s * pts[..., 1]
    y = s * pts[..., 0] + c * pts[..., 1]
    mm_per_px = 0.1
    x_img = x / mm_per_px + 1000.0
    y_img = -y / mm_per_px + 1200.0
    n_pat = max(1, n_sessions // 2)
    pid = np.repeat(np.arange(n_sessions) % n_pat, n_l)
    ts = np.repeat(np.arange(n_sessions) // n_pat, n_l)
    stamps = ["2023-01-15", "2024-01-15", "2025-01-15", "2026-01-15"][: int(ts.max()) + 1]
    table = pd.DataFrame(
        {
            "patient_id": pd.Categorical.from_codes(pid, [f"P{i:06d}" for i in range(n_pat)]),
            "timestamp": pd.Categorical.from_codes(ts, stamps),
            "session_time": pd.to_datetime(np.array(stamps)[ts], utc=True),
            "view": pd.Categorical.from_codes(np.zeros(len(pid), np.int8), ["lateral", "frontal"]),
            "landmark": pd.Categorical.from_codes(np.tile(np.arange(n_l), n_sessions), keys),
            "name": pd.Categorical.from_codes(np.tile(np.arange(n_l), n_sessions), names),
            "x": x_img.reshape(-1),
            "y": y_img.reshape(-1),
        }
    )
    return table, mm_per_px


# ------------------------------------------------------------ the straightforward loop
def _ang(u, v):
    nu, nv = math.hypot(*u), math.hypot(*v)
    if nu == 0 or nv == 0:
        return math.nan
    return math.degrees(math.atan2(abs(u[0] * v[1] - u[1] * v[0]), u[0] * v[0] + u[1] * v[1]))


def _sub(a, b):
    return (a[0] - b[0], a[1] - b[1])


def loop_measures(table: pd.DataFrame, mm_per_px: float) -> pd.DataFrame:
    """Per-session, per-measure Python evaluation of the same catalogue rows."""
    cat = load_measures()
    cat = cat[cat["view"] == "lateral"]
    pts = {r["id"]: r["points"].split() for r in load_points().to_dict("records")}
    records = cat.to_dict("records")
    rows = []
    for (pid, ts), g in table.groupby(["patient_id", "timestamp"], observed=True, sort=True):
        p = {n: (x, -y) for n, x, y in zip(g["name"], g["x"], g["y"], strict=True)}
        s_, n_ = p["S"], p["N"]
        others = [v for k, v in p.items() if k in TEMPLATE and k not in ("S", "N")]
        cx = sum(v[0] for v in others) / len(others)
        cy = sum(v[1] for v in others) / len(others)
        cross = (n_[0] - s_[0]) * (cy - s_[1]) - (n_[1] - s_[1]) * (cx - s_[0])
        if cross > 0:
            p = {k: (-v[0], v[1]) for k, v in p.items()}
        for k, members in pts.items():
            q = [p[m] for m in members]
            p[k] = (sum(v[0] for v in q) / len(q), sum(v[1] for v in q) / len(q))
        val: dict[str, float] = {}
        for r in records:
            kind, sign = r["kind"], r["sign"]
            P = [p[n] for n in r["points"].split()]
            if kind == "angle3":
                v = _ang(_sub(P[0], P[1]), _sub(P[2], P[1]))
            elif kind == "vector_angle":
                v = _ang(_sub(P[1], P[0]), _sub(P[3], P[2]))
            elif kind == "line_angle":
                v = _ang(_sub(P[1], P[0]), _sub(P[3], P[2]))
                v = min(v, 180 - v)
            elif kind == "signed_angle":
                u, w = _sub(P[1], P[0]), _sub(P[3], P[2])
                v = sign * math.degrees(
                    math.atan2(u[0] * w[1] - u[1] * w[0], u[0] * w[0] + u[1] * w[1])
                )
            elif kind == "distance":
                v = math.hypot(*_sub(P[1], P[0])) * mm_per_px
            elif kind == "point_line_distance":
                d, e = _sub(P[2], P[1]), _sub(P[0], P[1])
                v = sign * (d[0] * e[1] - d[1] * e[0]) / math.hypot(*d) * mm_per_px
            elif kind == "along":
                d, e = _sub(P[3], P[2]), _sub(P[0], P[1])
                v = sign * (d[0] * e[0] + d[1] * e[1]) / math.hypot(*d) * mm_per_px
            elif kind == "combination":
                v = sum(
                    (-1 if o.startswith("-") else 1) * val[o.lstrip("+-")]
                    for o in r["operands"].split()
                )
            elif kind == "ratio":
                a, b = (val[o] for o in r["operands"].split())
                v = 100 * a / b
            else:  # asymmetry
                a, b = (val[o] for o in r["operands"].split())
                v = 100 * (a - b) / (a + b)
            val[r["id"]] = v
            rows.append((pid, ts, r["id"], v))
    return pd.DataFrame(rows, columns=["patient_id", "timestamp", "measure", "value"])


def main(argv: list[str] | None = None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sessions", type=int, default=100_000)
    ap.add_argument("--loop-sessions", type=int, default=1_000)
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (200 / 50 sessions)")
    args = ap.parse_args(argv)
    if args.smoke:
        args.sessions, args.loop_sessions = 200, 50
    lateral = load_measures().query("view == 'lateral'")["id"].tolist()

    table, mm_per_px = synthetic_table(args.sessions)
    t0 = time.perf_counter()
    out = measure(table, lateral, mm_per_px=mm_per_px, errors="raise")
    t_vec = time.perf_counter() - t0

    sub_pids = table["patient_id"].cat.categories[: max(1, args.loop_sessions // 2)]
    sub = table[table["patient_id"].isin(sub_pids)]
    sub = sub.assign(patient_id=sub["patient_id"].cat.remove_unused_categories())
    n_loop = sub[["patient_id", "timestamp"]].drop_duplicates().shape[0]
    t0 = time.perf_counter()
    ref = loop_measures(sub, mm_per_px)
    t_loop = time.perf_counter() - t0

    got = out[out["patient_id"].isin(sub_pids)].astype(
        {"patient_id": str, "timestamp": str, "measure": str}
    )
    ref = ref.astype({"patient_id": str, "timestamp": str, "measure": str})
    j = got.merge(ref, on=["patient_id", "timestamp", "measure"], suffixes=("", "_loop"))
    assert len(j) == len(ref) == n_loop * len(lateral), (len(j), len(ref))
    np.testing.assert_allclose(j["value"], j["value_loop"], rtol=1e-9, atol=1e-9)

    per_vec = t_vec / args.sessions
    per_loop = t_loop / n_loop
    result = {
        "rows": len(table),
        "sessions": args.sessions,
        "measures": len(lateral),
        "vectorized_s": t_vec,
        "vectorized_us_per_session": per_vec * 1e6,
        "loop_sessions": n_loop,
        "loop_us_per_session": per_loop * 1e6,
        "speedup": per_loop / per_vec,
    }
    print(
        f"{result['rows']:,} rows, {args.sessions:,} sessions × {len(lateral)} lateral measures\n"
        f"vectorized measure(): {t_vec:.2f} s total, {per_vec * 1e6:.1f} µs/session\n"
        f"per-session loop ({n_loop} sessions): {per_loop * 1e6:.0f} µs/session "
        f"(scaled to {args.sessions:,}: {per_loop * args.sessions:.0f} s)\n"
        f"speed-up: {per_loop / per_vec:.0f}×  (both agree to 1e-9 on the loop's sessions)"
    )
    return result


if __name__ == "__main__":
    main()
