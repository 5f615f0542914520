"""Coverage of clustered proportion intervals with few patients (issue 29).

A finding counted per session (or image) is a proportion over units nested in patients.
Each simulated cohort has ``--patients`` patients (default 10) with 2–4 sessions each; a
patient's chance of the finding at a session is drawn from a beta distribution with mean
p (the true session-level prevalence) and intra-patient correlation ρ (beta-binomial), so
sessions of one patient are alike. Three 95 % intervals of p̂ = Σy/N are computed from the
same cohorts, side by side:

* **Wald (before)**: p̂ ± z·√V, V the cluster-robust (CR1) variance, clipped to [0, 1] —
  what ``cluster_proportion_ci`` gave before issue 29 ([0, 0] when nothing is seen);
* **cluster bootstrap**: percentile interval over 1,000 resamples of patients (seeded);
* **dentalkit**: ``stats._proportions.cluster_proportion_ci`` — Wilson on Kish's effective
  sample size p̂(1 − p̂)/V with Korn & Graubard's (z/t_{G−1})² correction.

Run::

    python benchmarks/proportion_coverage.py              # 1,000 cohorts per scenario
    python benchmarks/proportion_coverage.py --smoke      # 40 cohorts, one scenario (tests)

Target (issue 29): coverage ≥ 93 % at 10 patients in every scenario; no zero-width interval.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from scipy import stats

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dentalkit.stats import proportion_ci
from dentalkit.stats._proportions import cluster_mean_variance, cluster_proportion_ci

SCENARIOS = [(p, rho) for p in (0.05, 0.1, 0.3, 0.5) for rho in (0.2, 0.5)]
Z = stats.norm.ppf(0.975)


def cohort(rng: np.random.Generator, n_patients: int, p: float, rho: float):
    """(0/1 per session, patient of each session): beta-binomial sessions per patient."""
    sessions = rng.integers(2, 5, n_patients)
    a, b = p * (1 - rho) / rho, (1 - p) * (1 - rho) / rho
    chance = np.repeat(rng.beta(a, b, n_patients), sessions)
    return (rng.random(sessions.sum()) < chance).astype(float), np.repeat(
        np.arange(n_patients), sessions
    )


def intervals(y: np.ndarray, cl: np.ndarray, rng: np.random.Generator, resamples: int):
    """The three intervals of one cohort, as {name: (low, high)}."""
    mean, var, _, _ = cluster_mean_variance(y, cl)
    half = Z * np.sqrt(var[0])
    wald = (max(mean[0] - half, 0.0), min(mean[0] + half, 1.0))
    sums = np.bincount(cl, weights=y)
    sizes = np.bincount(cl).astype(float)
    idx = rng.integers(0, len(sums), (resamples, len(sums)))
    boot = sums[idx].sum(axis=1) / sizes[idx].sum(axis=1)
    _, low, high, _ = cluster_proportion_ci(y, cl)
    return {
        "wald_before": wald,
        "cluster_bootstrap": tuple(np.quantile(boot, [0.025, 0.975])),
        "dentalkit": (float(low[0]), float(high[0])),
    }


def run(n_patients: int, cohorts: int, scenarios, seed: int, resamples: int) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for p, rho in scenarios:
        hits: dict[str, int] = {}
        width: dict[str, float] = {}
        zero: dict[str, int] = {}
        for _ in range(cohorts):
            y, cl = cohort(rng, n_patients, p, rho)
            for name, (lo, hi) in intervals(y, cl, rng, resamples).items():
                hits[name] = hits.get(name, 0) + int(lo <= p <= hi)
                width[name] = width.get(name, 0.0) + (hi - lo)
                zero[name] = zero.get(name, 0) + int(hi - lo <= 0)
        for name in hits:
            lo, hi = proportion_ci(hits[name], cohorts)
            rows.append(
                {
                    "p": p,
                    "rho": rho,
                    "method": name,
                    "coverage": hits[name] / cohorts,
                    "mc_low": float(lo),
                    "mc_high": float(hi),
                    "mean_width": width[name] / cohorts,
                    "zero_width": zero[name],
                }
            )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--patients", type=int, default=10)
    ap.add_argument("--cohorts", type=int, default=1000, help="cohorts per scenario")
    ap.add_argument("--resamples", type=int, default=1000, help="cluster bootstrap resamples")
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--smoke", action="store_true", help="40 cohorts of one scenario (tests)")
    args = ap.parse_args(argv)
    scenarios = SCENARIOS[:1] if args.smoke else SCENARIOS
    cohorts = 40 if args.smoke else args.cohorts
    t0 = time.perf_counter()
    res = run(args.patients, cohorts, scenarios, args.seed, args.resamples)
    print(
        f"{args.patients} patients × 2–4 sessions, {cohorts} cohorts per scenario; "
        "coverage of the 95 % interval of the session-level prevalence (Wilson MC 95 % CI)"
    )
    wide = res.pivot_table(index=["p", "rho"], columns="method", values="coverage")
    for (p, rho), row in wide.iterrows():
        print(
            f"p = {p:<4g} ρ = {rho:<3g}  "
            + "  ".join(f"{m} {100 * row[m]:5.1f} %" for m in wide.columns)
        )
    new = res[res["method"] == "dentalkit"]
    print(
        f"dentalkit: lowest coverage {100 * new['coverage'].min():.1f} %, "
        f"zero-width intervals {int(new['zero_width'].sum())}; target ≥ 93 %, none"
    )
    print(f"{time.perf_counter() - t0:.0f} s")
    return res


if __name__ == "__main__":
    main()
