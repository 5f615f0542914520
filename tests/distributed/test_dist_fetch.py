"""fetch_cohort on a dask.distributed cluster of worker processes sharing one real Redis cache.

The reference is the single-process thread pool on the same sandbox (clock frozen, so output
links are identical): the cluster must store exactly the same rows, byte for byte, pay for each
request once, and a second client sharing the Redis cache must be answered entirely from it.
"""

from __future__ import annotations

import pandas as pd
import pytest

from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import fetch_cohort
from dentalkit.fetch.store import read_responses
from dentalkit.sandbox import running

ENDPOINTS = ["classifier", "ceph_lateral_points"]
FROZEN = 1_767_225_600.0  # 2026-01-01T00:00:00Z


@pytest.fixture(scope="module")
def sb():
    with running(frozen_time=FROZEN) as server:
        yield server


def manifest(n: int, prefix: str) -> pd.DataFrame:
    ids = [f"{prefix}{i:04d}" for i in range(n)]
    return pd.DataFrame(
        {
            "patient_id": ids,
            "timestamp": "2024-09-01",
            "image_url": [f"https://images.example.org/{p}/ceph.png" for p in ids],
        }
    )


def built_client_for(spec) -> bool:
    """Runs on a dask worker: whether this worker process built a client for ``spec``."""
    from dentalkit.fetch import client

    return spec in client._CLIENTS


def test_cluster_fetch_equals_thread_pool_and_pays_each_request_once(
    sb, fresh_redis, dask_client, tmp_path
):
    m = manifest(80, "D")
    n = len(m) * len(ENDPOINTS)
    local = Client(sb.base_url, api_key=sb.api_key, cache="memory")
    fetch_cohort(m, ENDPOINTS, tmp_path / "ref", client=local, max_workers=8, progress=False)
    reference = read_responses(tmp_path / "ref")
    sb.reset_stats()

    shared = Client(sb.base_url, api_key=sb.api_key, cache=fresh_redis.url, backoff_base=0.01)
    pool = dask_client.get_executor(pure=False)
    rep = fetch_cohort(
        m, ENDPOINTS, tmp_path / "dask", client=shared, executor=pool, max_workers=8, progress=False
    )
    assert (rep.sent, rep.stored, rep.failed, rep.from_cache) == (n, n, 0, 0)
    got = read_responses(tmp_path / "dask")
    assert got["request_key"].is_unique
    assert got["request_key"].tolist() == reference["request_key"].tolist()
    assert got["body"].tolist() == reference["body"].tolist()  # byte-identical JSON text
    # every request reached the service exactly once
    stats = sb.stats()
    assert stats["total"] == n and set(stats["by_request"].values()) == {1}
    # both worker processes did work (each built its own client from the picklable spec)
    per_worker = dask_client.run(built_client_for, shared.spec)
    assert list(per_worker.values()) == [True, True], per_worker
    # the workers wrote every answer to the one shared Redis cache
    assert len(list(fresh_redis.client().scan_iter("dentalkit:*"))) == n

    # a second client (new study folder) sharing the Redis cache: all answers from the cache
    sb.reset_stats()
    other = Client(sb.base_url, api_key=sb.api_key, cache=fresh_redis.url)
    again = fetch_cohort(
        m, ENDPOINTS, tmp_path / "again", client=other, executor=pool, max_workers=8,
        progress=False,
    )  # fmt: skip
    assert (again.stored, again.from_cache) == (n, n)
    assert sb.stats()["total"] == 0
    assert read_responses(tmp_path / "again")["body"].tolist() == reference["body"].tolist()
