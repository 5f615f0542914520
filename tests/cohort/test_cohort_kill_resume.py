"""SIGKILL a fetch at several points, rerun, and get exactly the uninterrupted table.

The sandbox runs in this (parent) process with latency; each fetch runs in a child process
that is killed with SIGKILL (no cleanup, no ``finally``). After every kill we read the
HTTP cache to learn which requests had *completed* (their answer was committed) and check at
the sandbox that none of them is ever sent again. Requests that were in flight at the kill
were not completed, so sending them again is correct.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import orjson
import pandas as pd
import pytest
from requests_cache import CachedSession

from dentalkit.endpoints import ENDPOINTS
from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import fetch_cohort
from dentalkit.fetch.store import read_responses
from dentalkit.sandbox import running

pytestmark = pytest.mark.skipif(os.name == "nt", reason="SIGKILL is POSIX")

ROOT = Path(__file__).resolve().parents[2]
CHILD = """
import sys
from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import fetch_cohort
base, cache, manifest, out = sys.argv[1:5]
client = Client(base, cache=cache, backoff_base=0.01)
fetch_cohort(manifest, ["classifier", "ceph_lateral_points"], out, client=client,
             max_workers=4, progress=False, flush_every=5, flush_interval=30)
"""


def normalized(body: str) -> dict:
    """The body with OutputImageUrl's time-dependent expiry and signature removed."""
    data = orjson.loads(body)
    if "OutputImageUrl" in data:
        parts = urlsplit(data["OutputImageUrl"])
        data["OutputImageUrl"] = (parts.path, parse_qs(parts.query)["req"])
    return data


def completed(cache: Path) -> set[str]:
    """Identities (sandbox ``by_request`` keys) of the requests whose answer is cached."""
    session = CachedSession(str(cache), backend="sqlite")
    done = set()
    for resp in session.cache.responses.values():
        body = orjson.loads(resp.request.body)
        path = urlsplit(resp.request.url).path.removeprefix("/api/v2")
        done.add("|".join([path, body["PatientID"], body["TimeStamp"], body["ImageName"]]))
    session.close()
    return done


def stored(out: Path) -> set[str]:
    """Identities of the requests already in the Parquet store."""
    if not (out / "_dentalkit.json").exists():
        return set()
    df = read_responses(out)
    paths = df["endpoint"].astype(str).map(lambda e: ENDPOINTS[e].path)
    return set(paths + "|" + df["patient_id"] + "|" + df["timestamp"] + "|" + df["image_url"])


def test_sigkill_at_several_points_then_resume(tmp_path):
    ids = [f"K{i:03d}" for i in range(24)]
    manifest = pd.DataFrame(
        {
            "patient_id": ids,
            "timestamp": "2024-05-01",
            "image_url": [f"https://images.example.org/{p}/ceph.png" for p in ids],
        }
    )
    mpath = tmp_path / "manifest.csv"
    manifest.to_csv(mpath, index=False)
    n = 2 * len(ids)
    with running(faults={"latency": 0.08}) as sb:
        # the reference: one uninterrupted run with its own cache
        ref_client = Client(sb.base_url, api_key=sb.api_key, cache=tmp_path / "ref.sqlite")
        fetch_cohort(mpath, ["classifier", "ceph_lateral_points"], tmp_path / "ref", client=ref_client, max_workers=4, progress=False)  # fmt: skip
        reference = read_responses(tmp_path / "ref")
        sb.reset_stats()

        cache, out = tmp_path / "http.sqlite", tmp_path / "out"
        env = {**os.environ, "DENTALKIT_API_KEY": sb.api_key, "PYTHONPATH": str(ROOT)}
        args = [sys.executable, "-c", CHILD, sb.base_url, str(cache), str(mpath), str(out)]
        before_kill: list[dict[str, int]] = []
        unflushed: list[int] = []
        parts = out / "responses"
        # kill when this run has sent `sent` new requests and written `new_parts` parts:
        # before any part, just after a part, and deep into the run
        for sent, new_parts in ((3, 0), (4, 1), (10, 0)):
            seen0 = sb.stats()["total"]
            parts0 = len(list(parts.glob("part-*"))) if parts.exists() else 0
            child = subprocess.Popen(args, env=env, cwd=ROOT)
            deadline = time.monotonic() + 60
            while child.poll() is None and (
                sb.stats()["total"] < seen0 + sent
                or (parts.exists() and len(list(parts.glob("part-*")))) < parts0 + new_parts
            ):
                assert time.monotonic() < deadline, "the child made no progress"
                time.sleep(0.002)
            child.send_signal(signal.SIGKILL)
            child.wait()
            assert child.returncode == -signal.SIGKILL, "the child finished before the kill"
            cached = completed(cache)
            flushed = stored(out)
            assert flushed <= cached  # nothing reaches Parquet without being in the cache
            unflushed.append(len(cached - flushed))
            counts = dict(sb.stats()["by_request"])
            before_kill.append({k: counts[k] for k in cached})
            assert len(cached) < n
        stored_before_final = len(read_responses(out))
        final = subprocess.run(args, env=env, cwd=ROOT, timeout=120)
        assert final.returncode == 0

        after = sb.stats()["by_request"]
    result = read_responses(out)
    # same request keys, no duplicates, no gaps
    assert result["request_key"].is_unique and len(result) == n
    assert set(result["request_key"]) == set(reference["request_key"])
    assert 0 < stored_before_final < n  # the kills really happened mid-run, after some flushes
    # same answers as the uninterrupted run
    ref = reference.set_index("request_key")
    for key, body in zip(result["request_key"], result["body"], strict=True):
        assert normalized(body) == normalized(ref.loc[key, "body"])
    # no completed request was sent again after any kill
    for snapshot in before_kill:
        for ident, count in snapshot.items():
            assert after[ident] == count, f"{ident} was sent again after it completed"
    # every request reached the sandbox at least once, none more than once per kill
    assert len(after) == n and max(after.values()) <= 1 + len(before_kill)
    # some answers had been received but not flushed when a child died; the rerun took them
    # from the HTTP cache (the write-ahead log) instead of the service
    assert sum(unflushed) > 0 and result["from_cache"].sum() >= max(unflushed)
