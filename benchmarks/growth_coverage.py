"""Coverage study: do ``stats.growth``'s 95 % intervals cover the sandbox's known growth rate?

Each simulated cohort is a set of new sandbox patients (IDs ``GC{size}{cohort}-{i}``) seen
at four sessions a year apart (2024-01-01 … 2027-01-01). Only patients who are still
growing at the last session are enrolled (age at the last session ≤ their growth stop,
read from the simulator's ``truth()``), so the true rate of change of SN–MP is the
simulator's documented −0.25 °/year for every one of them (docs/sandbox.md, "Age and
growth"); the script checks that rate against the noise-free ``truth()`` values of every
enrolled patient. The analysis uses no truth: the simulator's noisy lateral-ceph answers
(``respond``, no HTTP) → landmarks table → ``ceph.measure`` → ``stats.growth`` (years since
the first session, random intercept and slope, REML). A cohort's interval *covers* when
the 95 % CI of the ``years`` term contains −0.25. Each fit is read two ways side by side:
the default t interval on Satterthwaite's df, and the Wald z interval (estimate ± 1.96 SE,
``df_method="wald"``) of the same fit.

The simulator gives every growing patient the same rate, so the true between-patient
variance of the slope is 0 — the boundary of the model's parameter space, where the random
slope the model fits makes the interval conservative. ``--slope-sd S`` adds a declared
between-patient spread: each patient's measured SN–MP gets ``b_i · years`` added, with
``b_i ~ N(0, S²)`` drawn from a generator seeded by the patient ID (so every run and every
size draws the same ``b_i`` for a patient). The population rate stays −0.25 °/year, the
quantity the fixed effect estimates and the interval must cover; the per-patient rates
are then ``−0.25 + b_i``. ``S`` is a simulation parameter declared before the run (0.25
°/year, as large as the mean rate, in docs/statistics.md), not a claim about real patients.

Run::

    python benchmarks/growth_coverage.py                    # 300 cohorts at 8, 10, 15, 40 patients
    python benchmarks/growth_coverage.py --sizes 8 --cohorts 100
    python benchmarks/growth_coverage.py --sizes 8 --cohorts 1000 --first 300   # other seeds
    python benchmarks/growth_coverage.py --slope-sd 0.25    # a true between-patient spread
    python benchmarks/growth_coverage.py --figure docs/images/growth_coverage.png
    python benchmarks/growth_coverage.py --smoke            # 2 cohorts of 8 (the test suite)

Target (issue 29): coverage 94–96 % at every size (issue 19: 93–97 % at 40 patients).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.stats import t as student_t

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dentalkit.ceph import measure
from dentalkit.endpoints import get_endpoint
from dentalkit.sandbox.simulate import respond, truth
from dentalkit.stats import growth, proportion_ci

SESSIONS = ("2024-01-01", "2025-01-01", "2026-01-01", "2027-01-01")
SIZES = (8, 10, 15, 40)
MEASURE = "SN_MP"
TRUE_RATE = -0.25  # °/year, docs/sandbox.md (the same for girls and boys)


def enrol(cohort: int, n: int) -> list[str]:
    """The first ``n`` patients of the cohort still growing at the last session."""
    ids: list[str] = []
    i = 0
    while len(ids) < n:
        pid = f"GC{n:02d}{cohort:03d}-{i:03d}"
        i += 1
        last = truth(pid, SESSIONS[-1])
        if last["session"]["age_years"] <= last["patient"]["growth_stop_age_years"]:
            ids.append(pid)
    return ids


def true_rates(ids: list[str]) -> np.ndarray:
    """Per-patient SN–MP change per year between the first and last session (noise-free)."""
    out = []
    for pid in ids:
        a, b = truth(pid, SESSIONS[0]), truth(pid, SESSIONS[-1])
        years = b["session"]["age_years"] - a["session"]["age_years"]
        out.append((b["ceph_lateral"][MEASURE] - a["ceph_lateral"][MEASURE]) / years)
    return np.asarray(out)


def slope_offsets(ids: list[str], sd: float) -> dict[str, float]:
    """Each patient's declared deviation ``b_i`` from the mean rate (°/year), seeded by ID."""
    if sd == 0:
        return dict.fromkeys(ids, 0.0)
    out = {}
    for pid in ids:
        seed = int.from_bytes(hashlib.sha256(f"slope-sd/{pid}".encode()).digest()[:8], "little")
        out[pid] = float(np.random.default_rng(seed).normal(0.0, sd))
    return out


def measures(ids: list[str], slope_sd: float = 0.0) -> pd.DataFrame:
    """SN–MP of every session, measured from the simulator's noisy landmark answers.

    With ``slope_sd`` > 0, ``b_i · (years since the patient's first session)`` is added to
    each patient's values (:func:`slope_offsets`).
    """
    ep = get_endpoint("ceph-lateral-points")
    rows = []
    for pid in ids:
        for ts in SESSIONS:
            body = respond(
                ep,
                {"PatientID": pid, "TimeStamp": ts, "ImageName": f"https://img.example/{pid}.png"},
            )
            for key, xy in body["Results"].items():
                rows.append((pid, ts, "lateral", key, xy["x_coordinate"], xy["y_coordinate"]))
    lm = pd.DataFrame(rows, columns=["patient_id", "timestamp", "view", "landmark", "x", "y"])
    lm["name"] = None  # names from the default landmark map
    out = measure(lm, [MEASURE], errors="raise")
    out = out.astype({"patient_id": str, "timestamp": str})
    out["session_time"] = pd.to_datetime(out["timestamp"], utc=True)
    if slope_sd:
        b = out["patient_id"].map(slope_offsets(ids, slope_sd))
        first = out.groupby("patient_id")["session_time"].transform("min")
        years = (out["session_time"] - first).dt.days / 365.25
        out["value"] = out["value"] + b * years
    return out


def exact_reference(table: pd.DataFrame) -> tuple[float, float, bool]:
    """The exact small-sample interval of the mean rate, by a route that shares no code.

    In a balanced, complete design (every patient at the same four times, as here) the
    mean of the per-patient least-squares slopes estimates the mean rate, and the
    one-sample t interval on those slopes (df = patients − 1) is exact under the
    random-intercept-and-slope model with normal errors, whatever the variance
    components (the "summary statistics" approach: Diggle, Heagerty, Liang & Zeger 2002,
    *Analysis of Longitudinal Data*, 2nd ed., §6.3; Matthews, Altman, Campbell & Royston
    1990, BMJ 300:230–235). It is the yardstick for the model's interval on the same
    cohort: both see the same noise, so any gap between their coverages is the method's.

    Returns (estimate, SE, covers the true rate).
    """
    first = table.groupby("patient_id")["session_time"].transform("min")
    t = ((table["session_time"] - first).dt.days / 365.25).to_numpy()
    y = table["value"].to_numpy(dtype=float)
    ids = table["patient_id"].to_numpy()
    slopes = []
    for pid in pd.unique(ids):
        at = ids == pid
        tc = t[at] - t[at].mean()
        slopes.append(float((tc * (y[at] - y[at].mean())).sum() / (tc * tc).sum()))
    k = len(slopes)
    est = float(np.mean(slopes))
    se = float(np.std(slopes, ddof=1) / np.sqrt(k))
    half = float(student_t.ppf(0.975, k - 1)) * se
    return est, se, bool(est - half <= TRUE_RATE <= est + half)


def one_cohort(cohort: int, n: int, slope_sd: float = 0.0) -> dict[str, float]:
    ids = enrol(cohort, n)
    rates = true_rates(ids)
    if not np.allclose(rates, TRUE_RATE, atol=1e-6):
        raise AssertionError(f"cohort {cohort}: truth rates {rates.min()}…{rates.max()}")
    table = measures(ids, slope_sd)
    r = growth(table)
    row = r.fixed.set_index("term").loc["years"]
    ref_est, ref_se, ref_covered = exact_reference(table)
    model = r.models.iloc[0]
    half = 1.959963984540054 * float(row["se"])  # Wald z of the same fit
    est = float(row["estimate"])
    return {
        "size": n,
        "cohort": cohort,
        "slope_sd": slope_sd,
        "estimate": est,
        "se": float(row["se"]),
        "df": float(row["df"]),
        "ci_low": float(row["ci_low"]),
        "ci_high": float(row["ci_high"]),
        "covered": bool(row["ci_low"] <= TRUE_RATE <= row["ci_high"]),
        "covered_wald": bool(est - half <= TRUE_RATE <= est + half),
        "estimate_exact": ref_est,
        "se_exact": ref_se,
        "covered_exact": ref_covered,
        "n_units": int(row["n_units"]),
        "n_rows": int(row["n_rows"]),
        "converged": bool(model["converged"]),
        "singular": bool(model["singular"]),
        "random_slope": "slope" in str(model["random_effects"]),
        "note": model["note"],
    }


def figure(res: pd.DataFrame, path: Path) -> None:
    """Every cohort's 95 % CI of the largest size, sorted by estimate; misses in red."""
    import matplotlib

    matplotlib.use("Agg", force=False)
    import matplotlib.pyplot as plt

    from dentalkit import plot

    size = int(res["size"].max())
    s = res[res["size"] == size].sort_values("estimate", ignore_index=True)
    with plot.style():
        fig = plot.figure("double")
        ax = fig.add_subplot()
        for i, r in s.iterrows():
            color = "0.55" if r["covered"] else "#c0392b"
            ax.plot([i, i], [r["ci_low"], r["ci_high"]], color=color, lw=0.8)
        ax.plot(s.index, s["estimate"], "o", ms=1.5, color="black")
        ax.axhline(TRUE_RATE, ls="--", color="#1f5aa6", lw=1.0, label="true rate −0.25 °/year")
        k, n = int(s["covered"].sum()), len(s)
        lo, hi = proportion_ci(k, n)
        ax.set_title(
            f"{MEASURE}: 95 % CI (Satterthwaite t) covers the true rate in {k}/{n} cohorts\n"
            f"({100 * k / n:.1f} %, Wilson 95 % CI {100 * float(lo):.1f}–{100 * float(hi):.1f} %)"
        )
        ax.set_xlabel(
            f"simulated cohort (sorted by estimate; {size} patients × {len(SESSIONS)} sessions each)"
        )
        ax.set_ylabel("SN–MP change (°/year)")
        ax.legend(loc="upper left", frameon=False)
        plot.savefig(fig, path.with_suffix(""), width="double", formats=(path.suffix[1:],), dpi=300)
        plt.close(fig)


def summarize(res: pd.DataFrame) -> pd.DataFrame:
    """Coverage per cohort size: Satterthwaite t and Wald z, with Wilson intervals."""
    rows = []
    for size, part in res.groupby("size", sort=True):
        n = len(part)
        row = {"size": int(size), "cohorts": n}
        for name, col in (("t", "covered"), ("z", "covered_wald"), ("exact", "covered_exact")):
            k = int(part[col].sum())
            lo, hi = proportion_ci(k, n)
            row |= {f"coverage_{name}": k / n, f"low_{name}": float(lo), f"high_{name}": float(hi)}
        row |= {
            "mean_df": float(part["df"].mean()),
            "bias": float(part["estimate"].mean() - TRUE_RATE),
            "sd_est": float(part["estimate"].std(ddof=1)) if n > 1 else float("nan"),
            "mean_se": float(part["se"].mean()),
            # cohorts where the model's t interval and the exact one disagree
            "only_t": int((part["covered"] & ~part["covered_exact"]).sum()),
            "only_exact": int((~part["covered"] & part["covered_exact"]).sum()),
            "intercept_only": int((~part["random_slope"]).sum()),
            "singular": int(part["singular"].sum()),
            "converged": int(part["converged"].sum()),
        }
        rows.append(row)
    return pd.DataFrame(rows)


def main(argv: list[str] | None = None) -> pd.DataFrame:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cohorts", type=int, default=300, help="cohorts per size")
    ap.add_argument(
        "--first",
        type=int,
        default=0,
        help="number of the first cohort (patients GC{size}{cohort}-*): another seed range",
    )
    ap.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="patients per cohort")
    ap.add_argument("--figure", type=Path, help="write the coverage figure here (.png/.pdf)")
    ap.add_argument("--save", type=Path, help="write the per-cohort results here (CSV)")
    ap.add_argument(
        "--slope-sd",
        type=float,
        default=0.0,
        help="declared between-patient SD of the rate (°/year) added to the simulator's values",
    )
    ap.add_argument("--smoke", action="store_true", help="2 cohorts of 8 patients (tests)")
    args = ap.parse_args(argv)
    n_c, sizes = (2, [8]) if args.smoke else (args.cohorts, args.sizes)
    first = 0 if args.smoke else args.first
    t0 = time.perf_counter()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res = pd.DataFrame(
            [one_cohort(c, n_p, args.slope_sd) for n_p in sizes for c in range(first, first + n_c)]
        )
    table = summarize(res)
    print(
        f"{n_c} cohorts per size (cohorts {first}–{first + n_c - 1}) × {len(SESSIONS)} yearly "
        f"sessions, true (mean) rate {TRUE_RATE} °/year, between-patient SD of the rate "
        f"{args.slope_sd} °/year; "
        "95 % CI of the rate: t on Satterthwaite df (default) and Wald z, same fit"
    )
    print("patients  coverage t (Wilson 95 % CI)   coverage z (Wilson 95 % CI)   mean df  "
          "bias     SD est / mean SE   intercept-only  singular")  # fmt: skip
    for r in table.itertuples():
        print(
            f"{r.size:8d}  {100 * r.coverage_t:5.1f} % ({100 * r.low_t:4.1f}–{100 * r.high_t:4.1f})"
            f"          {100 * r.coverage_z:5.1f} % ({100 * r.low_z:4.1f}–{100 * r.high_z:4.1f})"
            f"          {r.mean_df:6.1f}  {r.bias:+.4f}  {r.sd_est:.4f} / {r.mean_se:.4f}"
            f"   {r.intercept_only:5d}           {r.singular:5d}"
        )
    print(
        "exact reference (one-sample t on the per-patient least-squares slopes, df = patients − 1;"
        " same cohorts):"
    )
    for r in table.itertuples():
        print(
            f"{r.size:8d}  {100 * r.coverage_exact:5.1f} % "
            f"({100 * r.low_exact:4.1f}–{100 * r.high_exact:4.1f}); cohorts covered by the "
            f"model's t only {r.only_t}, by the exact interval only {r.only_exact}"
        )
    print("target: coverage (t) 94–96 % at every size")
    print(f"{time.perf_counter() - t0:.0f} s")
    if args.save:
        res.to_csv(args.save, index=False)
    if args.figure:
        figure(res, args.figure)
        print(f"figure: {args.figure}")
    return res


if __name__ == "__main__":
    main()
