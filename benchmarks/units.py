"""Simulation: the false-positive rate of a group test on sessions vs on patients.

Null simulation of issue 19: 50 patients in two groups of 25, two sessions per patient,
between-patient SD 3, within-patient SD 0.3 (sessions correlate at 3²/(3² + 0.3²) = 0.99),
no group difference. Each repetition runs ``stats.compare`` three ways:

1. every session row as a unit (``unit=None``: what ``compare`` did before the patient
   became the unit) — n = 100 for 50 patients;
2. patient means (``aggregate="mean"``) — n = 50;
3. the first session of each patient (``stats.one_row_per_unit(..., "first")``).

and checks that the default (``unit="patient_id"``) refuses the per-session table. It
prints the false-positive rate at α = 0.05 of each, with its Wilson 95 % interval, and the
mean Welch degrees of freedom.

Run::

    python benchmarks/units.py            # 400 repetitions (about 10 s)
    python benchmarks/units.py --smoke    # 40 repetitions (used by the test suite)
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dentalkit.errors import InputError
from dentalkit.stats import compare, one_row_per_unit, proportion_ci

ALPHA = 0.05


def cohort(rng: np.random.Generator, n_patients: int = 50, sd_between: float = 3.0,
           sd_within: float = 0.3) -> pd.DataFrame:  # fmt: skip
    """Two sessions per patient, group fixed per patient, no group effect."""
    pid = np.repeat([f"p{i:03d}" for i in range(n_patients)], 2)
    group = np.repeat(np.where(np.arange(n_patients) < n_patients // 2, "a", "b"), 2)
    level = np.repeat(rng.normal(0.0, sd_between, n_patients), 2)
    return pd.DataFrame(
        {
            "patient_id": pid,
            "timestamp": np.tile(["2024-03-05", "2025-03-04"], n_patients),
            "group": group,
            "value": level + rng.normal(0.0, sd_within, 2 * n_patients),
        }
    )


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=400)
    parser.add_argument("--seed", type=int, default=19)
    parser.add_argument("--smoke", action="store_true", help="40 repetitions")
    args = parser.parse_args(argv)
    reps = 40 if args.smoke else args.reps
    rng = np.random.default_rng(args.seed)
    hits = {"sessions": 0, "patient_means": 0, "first_session": 0}
    dfs = {k: [] for k in hits}
    refused = 0
    t0 = time.perf_counter()
    for _ in range(reps):
        t = cohort(rng)
        runs = {
            "sessions": compare(t, "value", "group", unit=None),
            "patient_means": compare(t, "value", "group", aggregate="mean"),
            "first_session": compare(one_row_per_unit(t, "first"), "value", "group"),
        }
        for name, res in runs.items():
            row = res.iloc[0]
            hits[name] += bool(row["p_value"] < ALPHA)
            dfs[name].append(float(row["df"]))
        try:
            compare(t, "value", "group")
        except InputError:
            refused += 1
    elapsed = time.perf_counter() - t0
    print(f"null simulation: {reps} repetitions, 50 patients x 2 sessions, SD 3 / 0.3, "
          f"alpha {ALPHA} ({elapsed:.1f} s)")  # fmt: skip
    print(f"{'analysis':<16} {'n':>4} {'mean df':>8} {'false-positive rate':>20} {'95 % CI':>16}")
    out: dict[str, float] = {}
    for name, n in (("sessions", 100), ("patient_means", 50), ("first_session", 50)):
        k = hits[name]
        lo, hi = proportion_ci(np.array([k]), np.array([reps]), 0.95)
        rate = k / reps
        out[name] = rate
        print(f"{name:<16} {n:>4} {np.mean(dfs[name]):>8.1f} {rate:>20.3f} "
              f"{'[' + format(lo[0], '.3f') + ', ' + format(hi[0], '.3f') + ']':>16}")  # fmt: skip
    print(f"default unit='patient_id' refused the per-session table in {refused} of {reps}")
    out["refused"] = refused / reps
    return out


if __name__ == "__main__":
    main()
