"""Null simulation: regression to the mean when classes come from the first-session ANB (issue 29).

Each simulated cohort has ``--patients`` patients (default 40) seen at three yearly
sessions. A patient's true SNA is N(82°, 3.5°) and true SNB = SNA − 2.5° + N(0, 2.2°), so
true ANB = SNA − SNB is N(2.5°, 2.2°); SNA grows 0.1°/year and SNB 0.3°/year in every
patient — **no class grows differently**. Every session is traced anew: SNA and SNB each
get an independent N(0, 1°) tracing error, and ANB = SNA − SNB inherits both. The skeletal
class is taken from the *traced* ANB of the first session with the shipped bands
(``ceph.class_order``: < 0° Class III, 0–4° Class I, ≥ 4° Class II; Class I the
reference). Cohorts where a class has fewer than 2 patients are redrawn.

Two analyses of the same cohorts, side by side, each ``stats.growth`` with a random
intercept (the truth has no random slope) and Satterthwaite t tests:

* **unadjusted** (before issue 29): ``growth(table, group="skeletal_class")``;
* **baseline-adjusted** (``group_defined_by="ANB"``): the first-session ANB as a
  covariate, also × time.

A cohort counts as a false positive for a measure when either class × time term has a
Bonferroni-adjusted p < 0.05 (min p × 2). Target: ≈ 0.05 for ANB, SNA and SNB adjusted.

Run::

    python benchmarks/regression_to_mean.py              # 400 cohorts
    python benchmarks/regression_to_mean.py --smoke      # 6 cohorts (the test suite)
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

from dentalkit.ceph import class_order, load_thresholds
from dentalkit.stats import growth, proportion_ci

MEASURES = ("ANB", "SNA", "SNB")
TIMES = (0.0, 1.0, 2.0)


def classes_of(anb: np.ndarray) -> np.ndarray:
    """Skeletal class of each ANB value with the shipped bands (declared order)."""
    t = load_thresholds()
    g = t[t["scheme"] == "skeletal_class"].set_index("category").loc[class_order()]
    cuts = g["upper"].to_numpy()[:-1]
    return np.asarray(class_order(), dtype=object)[np.searchsorted(cuts, anb, side="right")]


def cohort(rng: np.random.Generator, n: int, error: float) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(long measures table, one class per patient) of one null cohort."""
    while True:
        sna = rng.normal(82.0, 3.5, n)
        snb = sna - 2.5 + rng.normal(0.0, 2.2, n)
        t = np.asarray(TIMES)
        obs_a = sna[:, None] + 0.1 * t + rng.normal(0.0, error, (n, len(t)))
        obs_b = snb[:, None] + 0.3 * t + rng.normal(0.0, error, (n, len(t)))
        cls = classes_of(obs_a[:, 0] - obs_b[:, 0])
        if pd.Series(cls).value_counts().reindex(class_order(), fill_value=0).min() >= 2:
            break
    ids = np.array([f"p{i:03d}" for i in range(n)])
    parts = []
    for name, v in (("SNA", obs_a), ("SNB", obs_b), ("ANB", obs_a - obs_b)):
        parts.append(
            pd.DataFrame(
                {
                    "patient_id": np.repeat(ids, len(t)),
                    "years": np.tile(t, n),
                    "measure": name,
                    "value": v.ravel(),
                    "unit": "deg",
                }
            )
        )
    order = ["Class I", "Class III", "Class II"]  # Class I (the normal relation) the reference
    patients = pd.DataFrame(
        {"patient_id": ids, "skeletal_class": pd.Categorical(cls, categories=order)}
    )
    return pd.concat(parts, ignore_index=True), patients


def positives(table: pd.DataFrame, patients: pd.DataFrame, **kw) -> dict[str, bool]:
    """Per measure: is a class × time term significant (Bonferroni over the two)?"""
    fit = growth(
        table, group="skeletal_class", patients=patients, random_slope=False, correction=None, **kw
    )
    rates = fit.fixed[fit.fixed["term"].str.startswith("years:skeletal_class")]
    out = {}
    for m in MEASURES:
        p = rates.loc[rates["measure"] == m, "p_value"].to_numpy(dtype=float)
        out[m] = bool(len(p) and np.nanmin(p) * len(p) < 0.05)
    return out


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cohorts", type=int, default=400)
    ap.add_argument("--patients", type=int, default=40)
    ap.add_argument("--error", type=float, default=1.0, help="tracing error SD of SNA, SNB (°)")
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--smoke", action="store_true", help="6 cohorts (tests)")
    args = ap.parse_args(argv)
    n_cohorts = 6 if args.smoke else args.cohorts
    rng = np.random.default_rng(args.seed)
    t0 = time.perf_counter()
    rows = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for c in range(n_cohorts):
            table, patients = cohort(rng, args.patients, args.error)
            naive = positives(table, patients)
            adjusted = positives(table, patients, group_defined_by="ANB")
            for m in MEASURES:
                rows.append(
                    {"cohort": c, "measure": m, "unadjusted": naive[m], "adjusted": adjusted[m]}
                )
    res = pd.DataFrame(rows)
    print(
        f"{n_cohorts} null cohorts × {args.patients} patients × {len(TIMES)} sessions, tracing "
        f"error {args.error:g}° on SNA and SNB; classes from the first-session traced ANB"
    )
    print("measure   false-positive rate of the class × time terms (Wilson 95 % CI)")
    for m in MEASURES:
        part = res[res["measure"] == m]
        cells = []
        for col in ("unadjusted", "adjusted"):
            k = int(part[col].sum())
            lo, hi = proportion_ci(k, len(part))
            cells.append(f"{col} {k / len(part):.3f} ({float(lo):.3f}–{float(hi):.3f})")
        print(f"{m:<8}  " + "   ".join(cells))
    print("target: adjusted ≈ 0.05 for ANB, SNA and SNB")
    print(f"{time.perf_counter() - t0:.0f} s")
    return res


if __name__ == "__main__":
    main()
