"""Benchmark: growth models for many measures — ``stats.growth`` ÷ ``MixedLM`` direct, and ÷ Wald z.

A long measures table (``patient_id``, ``timestamp``, ``session_time``, ``measure``,
``value``, ``unit``) of 70 measures × 2,000 patients × 3 sessions a year apart is drawn
from a known random-intercept-and-slope model. Two ways to fit one model per measure
(random intercept and correlated random slope, REML) are timed side by side in one run:

* **direct**: what a user writes with statsmodels alone — years since each patient's
  first session computed once, then per measure (``groupby``) the design ``[1, years]``,
  ``m = MixedLM(value, X, patient_id, exog_re=X)``, the same fitting sequence as
  dentalkit (``m.fit(method="powell", maxiter=1)``, then ``m.fit(method="bfgs",
  start_params=…, gtol=1e-6)``; see the Notes of ``stats.growth`` for why not
  statsmodels' default) and the fixed effects, SEs and confidence intervals read off
  the result;
* **dentalkit**: ``stats.growth(table)`` — input checks, the same fits, the tidy tables
  (fixed effects, variance components, counts, flags), Satterthwaite's degrees of freedom
  (the default since issue 29) and Holm across measures;
* **wald**: ``stats.growth(table, df_method="wald")`` — the same, with Wald z instead of
  Satterthwaite's df (what dentalkit did before issue 29).

The rounds rotate the order, and the script asserts that all give the same estimates.
Targets: dentalkit ÷ direct ≤ 1.2 (issue 19); dentalkit ÷ wald ≤ 1.3 (issue 29: the
small-sample df cost little beside the fits). ``--skip-direct`` times only the two
``stats.growth`` runs.

Run::

    python benchmarks/growth.py              # 70 measures × 2,000 patients × 3 sessions
    python benchmarks/growth.py --rounds 2   # two alternating rounds
    python benchmarks/growth.py --smoke      # tiny sizes (used by the test suite)
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from statsmodels.regression.mixed_linear_model import MixedLM

from dentalkit.stats import growth

SESSIONS = ("2022-03-01", "2023-03-01", "2024-03-01")


def cohort(n_measures: int, n_patients: int, seed: int = 0) -> pd.DataFrame:
    """A long measures table drawn from a random intercept and slope model per measure."""
    rng = np.random.default_rng(seed)
    ids = np.array([f"P{i:05d}" for i in range(n_patients)])
    when = pd.to_datetime(list(SESSIONS), utc=True)
    years = ((when - when[0]).days / 365.25).to_numpy()
    parts = []
    for m in range(n_measures):
        b0 = rng.normal(0, 3.0, n_patients)
        b1 = rng.normal(0, 0.4, n_patients)
        rate = rng.uniform(-0.5, 1.5)
        for s, (ts, yr) in enumerate(zip(SESSIONS, years, strict=True)):
            parts.append(
                pd.DataFrame(
                    {
                        "patient_id": ids,
                        "timestamp": ts,
                        "session_time": when[s],
                        "measure": f"M{m:02d}",
                        "value": 60 + b0 + (rate + b1) * yr + rng.normal(0, 0.8, n_patients),
                        "unit": "mm",
                    }
                )
            )
    table = pd.concat(parts, ignore_index=True)
    return table.astype({"patient_id": "category", "measure": "category", "unit": "category"})


def direct(table: pd.DataFrame) -> dict[str, np.ndarray]:
    """One ``MixedLM`` per measure, called directly (the baseline)."""
    st = table["session_time"]
    years = (st - st.groupby(table["patient_id"], observed=True).transform("min")).dt.days
    years = years.to_numpy(dtype=float) / 365.25
    out = {}
    for m, idx in table.groupby("measure", observed=True).indices.items():
        X = np.column_stack([np.ones(len(idx)), years[idx]])
        y = table["value"].to_numpy()[idx]
        groups = table["patient_id"].to_numpy()[idx]
        model = MixedLM(y, X, groups, exog_re=X)
        start = model.fit(reml=True, method="powell", maxiter=1)
        res = model.fit(reml=True, method="bfgs", start_params=start.params_object, gtol=1e-6)
        out[m] = np.r_[res.fe_params, res.bse_fe, res.conf_int()[:2].ravel()]
    return out


def ours(table: pd.DataFrame) -> pd.DataFrame:
    return growth(table).fixed


def wald(table: pd.DataFrame) -> pd.DataFrame:
    return growth(table, df_method="wald").fixed


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measures", type=int, default=70)
    ap.add_argument("--patients", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=1, help="rounds (the order rotates)")
    ap.add_argument("--skip-direct", action="store_true", help="time the two growth runs only")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (test suite)")
    args = ap.parse_args(argv)
    n_m, n_p = (2, 20) if args.smoke else (args.measures, args.patients)
    table = cohort(n_m, n_p)
    print(f"{n_m} measures × {n_p:,} patients × {len(SESSIONS)} sessions = {len(table):,} rows")
    runners = {"direct": direct, "dentalkit": ours, "wald": wald}
    if args.skip_direct:
        del runners["direct"]
    names = list(runners)
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu: dict[str, list[float]] = {name: [] for name in names}
    results: dict[str, object] = {}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' optimiser chatter, every side
        for r in range(args.rounds):
            for name in names[r % len(names) :] + names[: r % len(names)]:
                t0, c0 = time.perf_counter(), time.process_time()
                results[name] = runners[name](table)
                times[name].append(time.perf_counter() - t0)
                cpu[name].append(time.process_time() - c0)
    fixed, fixed_wald = results["dentalkit"], results["wald"]
    est = fixed.pivot(index="measure", columns="term", values="estimate")
    np.testing.assert_allclose(fixed["estimate"], fixed_wald["estimate"], rtol=1e-9)
    if "direct" in results:
        for m, values in results["direct"].items():
            np.testing.assert_allclose(
                est.loc[m, ["Intercept", "years"]].to_numpy(dtype=float), values[:2], rtol=1e-6
            )
    total = {name: sum(v) for name, v in times.items()}
    out: dict[str, float] = dict(total)
    for name in names:
        print(
            f"{name:<10} {total[name] / args.rounds:8.2f} s wall, "
            f"{sum(cpu[name]) / args.rounds:8.2f} s CPU per round"
        )
    if "direct" in total:
        out["ratio"] = total["dentalkit"] / total["direct"]
        print(f"ratio dentalkit ÷ direct    {out['ratio']:8.3f}  target ≤ 1.2")
    out["ratio_wald"] = total["dentalkit"] / total["wald"]
    per_round = [a / b for a, b in zip(times["dentalkit"], times["wald"], strict=True)]
    print(
        f"ratio Satterthwaite ÷ Wald  {out['ratio_wald']:8.3f}  (rounds: "
        + ", ".join(f"{x:.3f}" for x in per_round)
        + ")  target ≤ 1.3"
    )
    out["ratio_wald_cpu"] = sum(cpu["dentalkit"]) / sum(cpu["wald"])
    print(f"ratio Satterthwaite ÷ Wald, CPU time  {out['ratio_wald_cpu']:8.3f}")
    return out


if __name__ == "__main__":
    main()
