"""Throughput of dentalkit.tle: encode, estimate through the sandbox, summary and calibration.

    python benchmarks/tle.py            # full run
    python benchmarks/tle.py --smoke    # tiny run for CI

``estimate`` is measured against a local sandbox through a responses store
(``dentalkit.fetch.cohort.Fetcher``, in-memory HTTP cache): once cold (every distinct parameter
set sent and stored) and once warm (every answer read back from the store).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dentalkit import tle


def _timed(fn, *args, **kwargs):
    start = time.perf_counter()
    out = fn(*args, **kwargs)
    return out, time.perf_counter() - start


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes (seconds)")
    parser.add_argument("--workers", type=int, default=8)
    args = parser.parse_args(argv)
    n_encode = 500 if args.smoke else 100_000
    n_estimate = 20 if args.smoke else 2_000
    n_summary = 200 if args.smoke else 10_000
    results: dict[str, float] = {}

    patients = tle.example_patients(n_encode, seed=1)
    tle.encode(patients.head(10))  # warm imports
    _, secs = _timed(tle.encode, patients)
    results["encode_rows_per_s"] = n_encode / secs
    print(f"encode: {n_encode} rows in {secs:.2f} s ({n_encode / secs:,.0f} rows/s)")

    values = np.random.default_rng(0).normal(23, 5, n_summary)
    table = patients.head(n_summary).assign(estimate_length_months=values)
    _, secs = _timed(tle.summarize, table, by="malocclusion_class")
    results["summary_s"] = secs
    print(f"summary by class (BCa, 9999 resamples): {n_summary} rows in {secs:.2f} s")
    _, secs = _timed(
        tle.calibration, values, values + np.random.default_rng(1).normal(0, 3, n_summary)
    )
    results["calibration_s"] = secs
    print(f"calibration: {n_summary} pairs in {secs:.3f} s")

    try:
        from dentalkit.fetch.client import Client
    except ImportError:
        print("estimate: skipped (dentalkit.fetch.client not available)")
        return results
    from dentalkit.fetch.cohort import Fetcher
    from dentalkit.sandbox import running

    cohort = tle.example_patients(n_estimate, seed=2)
    with (
        running() as sb,
        Client(sb.base_url, api_key=sb.api_key, cache="memory") as client,
        tempfile.TemporaryDirectory() as store,
    ):
        fetcher = Fetcher(store, client, max_workers=args.workers)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            est, cold = _timed(tle.estimate, cohort, fetcher)
            _, warm = _timed(tle.estimate, cohort, fetcher)
        sent = sb.stats()["total"]
    distinct = est.attrs["requests"]
    results.update(estimate_cold_req_per_s=distinct / cold, estimate_warm_req_per_s=distinct / warm)
    print(
        f"estimate: {n_estimate} patients, {distinct} distinct requests, {sent} sent; "
        f"cold {cold:.2f} s ({distinct / cold:,.0f} req/s), warm {warm:.2f} s "
        f"({distinct / warm:,.0f} req/s from the store), {args.workers} workers"
    )
    return results


if __name__ == "__main__":
    main()
