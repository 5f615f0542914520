"""Benchmark: landmark and measure agreement for a large cohort.

Builds a reference tracing (19 ISBI landmarks per session, films facing either way, tilted,
translated) and a simulated examiner's tracing of it, then times

1. ``agreement.landmarks`` in the image and the anatomical frame;
2. a straightforward per-landmark loop (groupby, one landmark at a time) for the MRE,
   SD and SDR, asserting the same numbers;
3. ``agreement.measure`` on a long table of 13 measures per session.

Run::

    python benchmarks/agreement.py            # 10,000 sessions (190,000 landmark pairs)
    python benchmarks/agreement.py --smoke    # tiny sizes (used by the test suite)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dentalkit import agreement

TEMPLATE = {
    "S": (0, 0), "N": (70, 5), "Or": (55, -22), "Po": (-25, -20), "A": (68, -45),
    "B": (62, -85), "Pog": (64, -100), "Me": (55, -112), "Gn": (61, -108), "Go": (-5, -85),
    "L1_tip": (69, -68), "U1_tip": (72, -70), "Ls": (87, -60), "Li": (85, -76),
    "Sn": (85, -45), "Pog'": (80, -103), "PNS": (20, -42), "ANS": (75, -40), "Ar": (-10, -30),
}  # fmt: skip


def cohort(n: int, rng: np.random.Generator) -> pd.DataFrame:
    names = list(TEMPLATE)
    pts = np.array([TEMPLATE[k] for k in names], dtype=float)  # mm, x anterior, y up
    a = np.deg2rad(rng.normal(0, 2, n))
    facing = np.where(rng.random(n) < 0.2, -1.0, 1.0)
    rot = np.stack([np.cos(a), -np.sin(a), np.sin(a), np.cos(a)], axis=1).reshape(n, 2, 2)
    mm = pts[None] * np.stack([facing, np.ones(n)], axis=1)[:, None, :]
    px = np.einsum("spi,sji->spj", mm, rot) / 0.1 * [1, -1] + rng.uniform(600, 1200, (n, 1, 2))
    xy = px.reshape(-1, 2)
    return pd.DataFrame(
        {
            "patient_id": pd.Categorical(np.repeat([f"P{i:06d}" for i in range(n)], len(names))),
            "timestamp": pd.Categorical(np.full(n * len(names), "2024-01-01")),
            "view": pd.Categorical(np.full(n * len(names), "lateral")),
            "name": pd.Categorical(np.tile(names, n), categories=names),
            "x": xy[:, 0],
            "y": xy[:, 1],
        }
    )


def loop_reference(ref: pd.DataFrame, tst: pd.DataFrame) -> pd.DataFrame:
    """One landmark at a time, the way a spreadsheet user would."""
    rows = []
    merged = ref.merge(tst, on=["patient_id", "timestamp", "name"], suffixes=("_r", "_t"))
    for name, g in merged.groupby("name", observed=True):
        e = np.hypot(g["x_t"] - g["x_r"], g["y_t"] - g["y_r"]) * 0.1
        rows.append({"name": name, "mre": e.mean(), "sd": e.std(ddof=1), "sdr2": (e <= 2).mean()})
    return pd.DataFrame(rows).set_index("name")


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sessions", type=int, default=10_000)
    ap.add_argument("--smoke", action="store_true")
    args = ap.parse_args(argv)
    n = 50 if args.smoke else args.sessions
    rng = np.random.default_rng(0)
    ref = cohort(n, rng)
    tst = agreement.simulate_examiner(ref, 1.0, 0.1, seed=1)
    out = {}
    for frame in ("image", "anatomical"):
        t = time.perf_counter()
        res = agreement.landmarks(ref, tst, mm_per_px=0.1, frame=frame)
        out[frame] = time.perf_counter() - t
    t = time.perf_counter()
    loop = loop_reference(ref, tst)
    out["loop"] = time.perf_counter() - t
    s = res.summary.set_index("name").drop(agreement.OVERALL)
    sdr2 = res.sdr[res.sdr["radius_mm"] == 2.0].set_index("name")["sdr_pct"] / 100
    assert np.allclose(s["mre"].to_numpy(), loop.loc[s.index, "mre"].to_numpy())
    assert np.allclose(s["sd"].to_numpy(), loop.loc[s.index, "sd"].to_numpy())
    assert np.allclose(sdr2.loc[s.index].to_numpy(), loop.loc[s.index, "sdr2"].to_numpy())

    measures = [f"M{i:02d}" for i in range(13)]
    long = pd.DataFrame(
        {
            "patient_id": np.repeat([f"P{i:06d}" for i in range(n)], len(measures)),
            "timestamp": "2024-01-01",
            "measure": np.tile(measures, n),
            "value": rng.normal(80, 4, n * len(measures)),
            "unit": "deg",
        }
    )
    noisy = long.assign(value=long["value"] + rng.normal(0.2, 1.0, len(long)))
    agreement.measure(long.head(26 * 5), noisy.head(26 * 5))  # import pingouin first
    t = time.perf_counter()
    m = agreement.measure(long, noisy)
    out["measures"] = time.perf_counter() - t
    assert len(m.summary) == len(measures)

    pairs = len(res.pairs)
    print(f"{n:,} sessions, {pairs:,} landmark pairs, {len(long):,} measure pairs")
    print(f"landmarks, image frame      {out['image']:7.2f} s")
    print(f"landmarks, anatomical frame {out['anatomical']:7.2f} s")
    print(f"per-landmark loop (MRE/SD/SDR only, same numbers) {out['loop']:7.2f} s")
    print(f"measures (13 per session, ICC via pingouin) {out['measures']:7.2f} s")
    return out


if __name__ == "__main__":
    main()
