"""Coverage of kappa intervals in small samples (issue 29).

Each simulated study classifies ``--pairs`` patients (default 20) twice — two tracings of
the same cephalogram — into skeletal class by ANB with the shipped bands
(``ceph.load_thresholds``: < 0° Class III, 0–4° Class I, ≥ 4° Class II, in the order
``ceph.class_order`` declares). A patient's true ANB is N(2.5°, 2.5°); each tracing adds
an independent N(0, σ) error, σ = 0.5°, 1° or 2° (κ ≈ 0.8, 0.6, 0.3). The true kappa is
computed once from 2,000,000 simulated patients (200,000 in smoke mode). Three 95 % intervals of Cohen's kappa and
of linear weighted kappa are computed from the same studies, side by side:

* **normal**: κ ± z·SE with the Fleiss–Cohen–Everitt SE (``ci="normal"``, what
  ``agreement.cohens_kappa`` gave before issue 29);
* **bootstrap**: percentile interval over 1,000 resamples of patients (seeded);
* **dentalkit**: the default MOVER interval of ``agreement.cohens_kappa``.

With ``--sessions 2`` every patient has two sessions (sessions correlated through the
patient's ANB) and the MOVER interval is clustered on the patient (``units=``).

Run::

    python benchmarks/kappa_coverage.py                 # 1,000 studies per scenario, n = 20
    python benchmarks/kappa_coverage.py --pairs 10
    python benchmarks/kappa_coverage.py --smoke         # 30 studies, one scenario (tests)

Target (issue 29): coverage ≥ 93 % at n = 20.
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

from dentalkit.agreement import cohens_kappa
from dentalkit.ceph import class_order, load_thresholds
from dentalkit.stats import proportion_ci

ERRORS = (0.5, 1.0, 2.0)
WEIGHTS = (None, "linear")


def bands() -> tuple[np.ndarray, list[str]]:
    """Upper ends of the skeletal-class intervals and the class order, as shipped."""
    t = load_thresholds()
    order = class_order("skeletal_class")
    g = t[t["scheme"] == "skeletal_class"].set_index("category").loc[order]
    return g["upper"].to_numpy()[:-1], order


def classify(values: np.ndarray, cuts: np.ndarray) -> np.ndarray:
    return np.searchsorted(cuts, values, side="right")


def kappas(r: np.ndarray, t: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Kappa of each row of the (B, n) label arrays (vectorized, for the bootstrap)."""
    k = w.shape[0]
    b, n = r.shape
    table = np.zeros((b, k * k))
    np.add.at(table, (np.repeat(np.arange(b), n), (r * k + t).ravel()), 1.0)
    p = table.reshape(b, k, k) / n
    po = (p * w).sum(axis=(1, 2))
    pe = np.einsum("bi,ij,bj->b", p.sum(axis=2), w, p.sum(axis=1))
    with np.errstate(divide="ignore", invalid="ignore"):
        return (po - pe) / (1 - pe)


def weight_matrix(weights: str | None, k: int = 3) -> np.ndarray:
    i = np.arange(k)
    return np.eye(k) if weights is None else 1 - np.abs(i[:, None] - i[None, :]) / (k - 1)


def study(rng, n, sessions, sigma, cuts):
    """(reference labels, test labels, patient of each pair)."""
    anb = np.repeat(rng.normal(2.5, 2.5, n), sessions) + rng.normal(0, 0.3, n * sessions) * (
        sessions > 1
    )
    r = classify(anb + rng.normal(0, sigma, anb.size), cuts)
    t = classify(anb + rng.normal(0, sigma, anb.size), cuts)
    return r, t, np.repeat(np.arange(n), sessions)


def run(n, sessions, studies, errors, seed, resamples, draws=2_000_000) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    cuts, order = bands()
    rows = []
    for sigma in errors:
        big = rng.normal(2.5, 2.5, draws)
        r_big = classify(big + rng.normal(0, sigma, big.size), cuts)
        t_big = classify(big + rng.normal(0, sigma, big.size), cuts)
        for weights in WEIGHTS:
            w = weight_matrix(weights)
            truth = float(kappas(r_big[None], t_big[None], w)[0])
            hits = {"normal": 0, "bootstrap": 0, "dentalkit": 0}
            width = dict.fromkeys(hits, 0.0)
            done = 0
            for _ in range(studies):
                r, t, units = study(rng, n, sessions, sigma, cuts)
                ref, tst = [order[i] for i in r], [order[i] for i in t]
                new = cohens_kappa(
                    ref, tst, categories=order, weights=weights,
                    units=units if sessions > 1 else None,
                )  # fmt: skip
                if not np.isfinite(new["kappa"]):
                    continue
                done += 1
                old = cohens_kappa(ref, tst, categories=order, weights=weights, ci="normal")
                pick = rng.integers(0, n, (resamples, n))  # patients, with all their pairs
                rows_b = (pick[:, :, None] * sessions + np.arange(sessions)).reshape(resamples, -1)
                boot = kappas(r[rows_b], t[rows_b], w)
                boot = boot[np.isfinite(boot)]
                ints = {
                    "normal": (old["kappa_ci_low"], old["kappa_ci_high"]),
                    "bootstrap": tuple(np.quantile(boot, [0.025, 0.975])),
                    "dentalkit": (new["kappa_ci_low"], new["kappa_ci_high"]),
                }
                for name, (lo, hi) in ints.items():
                    hits[name] += int(lo <= truth <= hi)
                    width[name] += hi - lo
            for name in hits:
                lo, hi = proportion_ci(hits[name], done)
                rows.append(
                    {
                        "sigma": sigma,
                        "weights": weights or "none",
                        "true_kappa": truth,
                        "method": name,
                        "studies": done,
                        "coverage": hits[name] / done,
                        "mc_low": float(lo),
                        "mc_high": float(hi),
                        "mean_width": width[name] / done,
                    }
                )
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=20, help="patients per study")
    ap.add_argument("--sessions", type=int, default=1, help="sessions per patient")
    ap.add_argument("--studies", type=int, default=1000, help="studies per scenario")
    ap.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--smoke", action="store_true", help="30 studies, σ = 1° only (tests)")
    args = ap.parse_args(argv)
    errors, studies = ((1.0,), 30) if args.smoke else (ERRORS, args.studies)
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        draws = 200_000 if args.smoke else 2_000_000
        res = run(args.pairs, args.sessions, studies, errors, args.seed, args.resamples, draws)
    print(
        f"{args.pairs} patients × {args.sessions} session(s), {studies} studies per scenario; "
        "coverage of the 95 % interval of kappa (Wilson MC 95 % CI of the dentalkit figure)"
    )
    for (sigma, weights), part in res.groupby(["sigma", "weights"], sort=False):
        cov = part.set_index("method")
        new = cov.loc["dentalkit"]
        print(
            f"σ = {sigma:<3g}° {weights:<6} κ = {new['true_kappa']:.3f}  "
            + "  ".join(
                f"{m} {100 * cov.loc[m, 'coverage']:5.1f} % (width {cov.loc[m, 'mean_width']:.2f})"
                for m in ("normal", "bootstrap", "dentalkit")
            )
            + f"  [{100 * new['mc_low']:.1f}–{100 * new['mc_high']:.1f}]"
        )
    low = res.loc[res["method"] == "dentalkit", "coverage"].min()
    print(f"dentalkit: lowest coverage {100 * low:.1f} %; target ≥ 93 % at n = 20")
    print(f"{time.perf_counter() - t0:.0f} s")
    return res


if __name__ == "__main__":
    main()
