"""The shared Redis cache is killed mid-run and restarted empty: the fetch carries on (lookups
miss and go to the service), nothing is lost, and the cache fills again once Redis is back."""

from __future__ import annotations

import threading
import time

import pytest

from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import fetch_cohort
from dentalkit.fetch.store import read_responses
from tests.reliability.cohort import ENDPOINTS, add_figure, cohort_manifest

pytestmark = pytest.mark.slow


def test_redis_restarted_mid_run(frozen_sandbox, reference, redis_server, tmp_path):
    sb = frozen_sandbox
    sb.set_faults(latency=0.02, error_rate=0.0, slow_rate=0.0, malformed_rate=0.0, rate_limit=None)
    manifest = cohort_manifest(100)
    n = len(manifest) * len(ENDPOINTS)
    client = Client(sb.base_url, api_key=sb.api_key, cache=redis_server.url, backoff_base=0.01)
    backend = client.session.cache
    result: dict = {}

    def run() -> None:
        try:
            result["report"] = fetch_cohort(
                manifest, ENDPOINTS, tmp_path / "out", client=client, max_workers=8,
                progress=False,
            )  # fmt: skip
        except BaseException as exc:  # reported below
            result["error"] = exc

    thread = threading.Thread(target=run)
    thread.start()
    deadline = time.monotonic() + 120
    while sb.stats()["total"] < n // 4:
        assert time.monotonic() < deadline and thread.is_alive()
        time.sleep(0.005)
    redis_server.kill()  # every cached answer is gone with it
    down_at = sb.stats()["total"]
    while sb.stats()["total"] < down_at + 40:  # the fetch goes on while Redis is down
        assert time.monotonic() < deadline and thread.is_alive(), result.get("error")
        time.sleep(0.005)
    redis_server.start()
    thread.join(timeout=180)
    assert not thread.is_alive() and "error" not in result, result.get("error")
    rep = result["report"]
    sent = sb.stats()["total"]

    # the outage was seen and survived: reads missed, writes were skipped, nothing failed
    assert backend.outages >= 1 and backend.failed_reads + backend.failed_writes > 0
    got = read_responses(tmp_path / "out")
    ref = reference[reference["patient_id"].isin(set(manifest["patient_id"]))]
    assert (rep.stored, rep.failed, len(got)) == (n, 0, n)
    assert got["request_key"].is_unique
    assert got["body"].tolist() == ref["body"].tolist()
    # after the restart the workers wrote to Redis again
    refilled = len(list(redis_server.client().scan_iter("dentalkit:*")))
    assert 0 < refilled < n

    # nothing lost: another client on the same (refilled) cache gets every answer back, from
    # Redis where it is and from the service otherwise
    sb.reset_stats()
    again = Client(sb.base_url, api_key=sb.api_key, cache=redis_server.url)
    rep2 = fetch_cohort(manifest, ENDPOINTS, tmp_path / "again", client=again, progress=False)
    assert (rep2.stored, rep2.from_cache) == (n, refilled)
    assert sb.stats()["total"] == n - refilled
    assert read_responses(tmp_path / "again")["body"].tolist() == ref["body"].tolist()
    add_figure("requests sent", sent + sb.stats()["total"])
    add_figure("rows lost", 2 * n - len(got) - len(read_responses(tmp_path / "again")))
    add_figure("duplicates", len(got) - got["request_key"].nunique())
    sb.set_faults(latency=0.0)
