"""SIGKILL tle.estimate mid-fetch, rerun, and get exactly the uninterrupted estimates.

GET /tle goes the one fetch path (``cohort.Fetcher`` → ``fetch_cohort`` → the store), so
a killed estimate resumes like a killed cohort fetch: the sandbox (in this process, with
latency) counts every query; the child process is killed with SIGKILL (no cleanup). A
query whose answer was committed to the HTTP cache before the kill is never sent again;
only the queries in flight at the kill may be sent twice.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import warnings
from pathlib import Path
from urllib.parse import parse_qsl, urlsplit

import pandas as pd
import pytest
from requests_cache import CachedSession

from dentalkit import tle
from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import Fetcher
from dentalkit.fetch.store import read_responses
from dentalkit.sandbox import running

pytestmark = pytest.mark.skipif(os.name == "nt", reason="SIGKILL is POSIX")

ROOT = Path(__file__).resolve().parents[2]
N, SEED, WORKERS = 24, 11, 3
CHILD = f"""
import sys, warnings
from dentalkit import tle
from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import Fetcher
base, cache, out = sys.argv[1:4]
client = Client(base, cache=cache, backoff_base=0.01)
warnings.simplefilter("ignore")
tle.estimate(tle.example_patients({N}, seed={SEED}),
             Fetcher(out, client, max_workers={WORKERS}, flush_every=3, flush_interval=30))
"""


def cached_queries(cache: Path) -> set[str]:
    """Sandbox identities (``/tle?p01=…``) of the /tle answers committed to the cache."""
    if not cache.exists():
        return set()
    session = CachedSession(str(cache), backend="sqlite")
    done = set()
    for resp in session.cache.responses.values():
        parts = urlsplit(resp.request.url)
        query = dict(parse_qsl(parts.query))
        done.add("/tle?" + "&".join(f"{k}={query[k]}" for k in sorted(query)))
    session.close()
    return done


def test_sigkill_during_tle_estimate_then_resume(tmp_path):
    patients = tle.example_patients(N, seed=SEED)
    distinct = len(tle.encode(patients).drop_duplicates())
    with running(faults={"latency": 0.06}) as sb:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ref_client = Client(sb.base_url, api_key=sb.api_key, cache="memory")
            reference = tle.estimate(patients, Fetcher(tmp_path / "ref", ref_client))
        assert reference["estimate_length_months"].notna().all()
        sb.reset_stats()

        cache, out = tmp_path / "http.sqlite", tmp_path / "out"
        env = {**os.environ, "DENTALKIT_API_KEY": sb.api_key, "PYTHONPATH": str(ROOT)}
        args = [sys.executable, "-c", CHILD, sb.base_url, str(cache), str(out)]
        parts = out / "responses"
        kills = 0
        for sent, new_parts in ((2, 0), (3, 1)):
            seen0 = sb.stats()["total"]
            parts0 = len(list(parts.glob("part-*"))) if parts.exists() else 0
            completed_before = cached_queries(cache)
            counts_before = dict(sb.stats()["by_request"])
            child = subprocess.Popen(args, env=env, cwd=ROOT)
            deadline = time.monotonic() + 60
            while child.poll() is None and (
                sb.stats()["total"] < seen0 + sent
                or (len(list(parts.glob("part-*"))) if parts.exists() else 0) < parts0 + new_parts
            ):
                assert time.monotonic() < deadline, "the child made no progress"
                time.sleep(0.002)
            child.send_signal(signal.SIGKILL)
            child.wait()
            assert child.returncode == -signal.SIGKILL, "the child finished before the kill"
            kills += 1
            # what an earlier run had completed was not sent by this one
            counts = dict(sb.stats()["by_request"])
            for identity in completed_before:
                assert counts.get(identity, 0) == counts_before.get(identity, 0), identity
        completed_before = cached_queries(cache)
        counts_before = dict(sb.stats()["by_request"])
        assert 0 < len(completed_before) < distinct  # the kills really interrupted the run

        # resume in this process: the same store and cache, the same call
        client = Client(sb.base_url, api_key=sb.api_key, cache=cache, backoff_base=0.01)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            resumed = tle.estimate(patients, Fetcher(out, client, max_workers=WORKERS))
        client.close()
        counts = dict(sb.stats()["by_request"])

    for identity in completed_before:  # completed before a kill: never sent again
        assert counts[identity] == counts_before[identity], identity
    assert set(counts) == cached_queries(cache)  # every query asked is answered now
    assert len(counts) == distinct
    # at most the requests in flight at each kill were sent twice
    assert sum(counts.values()) <= distinct + kills * WORKERS
    pd.testing.assert_frame_equal(resumed, reference, check_like=False)
    assert tle.problems(resumed).empty
    stored = read_responses(out)
    assert len(stored) == distinct and stored["request_key"].is_unique
    assert set(stored["endpoint"].astype(str)) == {"tle"}
    assert set(stored["timestamp"]) == {tle.estimation.TLE_TIMESTAMP}
