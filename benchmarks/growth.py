"""Benchmark: growth models for many measures — ``stats.growth`` ÷ calling ``MixedLM`` directly.

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
  (fixed effects, variance components, counts, flags) and Holm across measures.

The rounds alternate (direct first in odd rounds, dentalkit first in even ones), and the
script asserts that both give the same estimates. Target (issue 19): wall-time ratio
dentalkit ÷ direct ≤ 1.2.

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


def main(argv: list[str] | None = None) -> dict[str, float]:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--measures", type=int, default=70)
    ap.add_argument("--patients", type=int, default=2000)
    ap.add_argument("--rounds", type=int, default=1, help="alternating rounds")
    ap.add_argument("--smoke", action="store_true", help="tiny sizes (test suite)")
    args = ap.parse_args(argv)
    n_m, n_p = (2, 20) if args.smoke else (args.measures, args.patients)
    table = cohort(n_m, n_p)
    print(f"{n_m} measures × {n_p:,} patients × {len(SESSIONS)} sessions = {len(table):,} rows")
    times: dict[str, list[float]] = {"direct": [], "dentalkit": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels' optimiser chatter, both sides
        for r in range(args.rounds):
            order = ("direct", "dentalkit") if r % 2 == 0 else ("dentalkit", "direct")
            for name in order:
                t0 = time.perf_counter()
                result = direct(table) if name == "direct" else ours(table)
                times[name].append(time.perf_counter() - t0)
                if name == "direct":
                    base = result
                else:
                    fixed = result
    est = fixed.pivot(index="measure", columns="term", values="estimate")
    for m, values in base.items():
        np.testing.assert_allclose(
            est.loc[m, ["Intercept", "years"]].to_numpy(dtype=float), values[:2], rtol=1e-6
        )
    d, k = sum(times["direct"]), sum(times["dentalkit"])
    ratio = k / d
    print(f"direct MixedLM per measure  {d / args.rounds:8.2f} s per round")
    print(f"dentalkit stats.growth      {k / args.rounds:8.2f} s per round")
    per_round = [a / b for a, b in zip(times["dentalkit"], times["direct"], strict=True)]
    print(
        f"ratio dentalkit ÷ direct    {ratio:8.3f}  (rounds: "
        + ", ".join(f"{x:.3f}" for x in per_round)
        + ")  target ≤ 1.2"
    )
    return {"direct": d, "dentalkit": k, "ratio": ratio}


if __name__ == "__main__":
    main()
