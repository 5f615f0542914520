"""Kills: a dask worker process SIGKILLed mid-run, and the whole fetch process SIGKILLed at
five random points. The final responses table equals the uninterrupted one (byte-identical
bodies), with no duplicates and nothing lost."""

from __future__ import annotations

import multiprocessing
import os
import random
import signal
import threading
import time

import pytest

from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import fetch_cohort
from dentalkit.fetch.store import read_responses
from tests.reliability.cohort import (
    CHILD_PRELOAD,
    ENDPOINTS,
    add_figure,
    cohort_manifest,
    fetch_child,
)

pytestmark = [pytest.mark.slow, pytest.mark.skipif(os.name == "nt", reason="SIGKILL is POSIX")]


def fork_server():
    """A forkserver context: fetch processes fork from a process that imported dentalkit once."""
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(CHILD_PRELOAD)
    return ctx


def expected(reference, got):
    """The reference rows of the request keys a smaller run should have stored."""
    return reference[reference["patient_id"].isin(set(got["patient_id"]))]


def wait_for(condition, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.005)


def test_fetch_process_sigkilled_five_times_then_resumed(frozen_sandbox, reference, tmp_path):
    sb = frozen_sandbox
    sb.set_faults(latency=0.01, error_rate=0.0, slow_rate=0.0, malformed_rate=0.0, rate_limit=None)
    n_patients = 120
    n = n_patients * len(ENDPOINTS)
    cache, out = tmp_path / "http.sqlite", tmp_path / "out"
    args = (sb.base_url, sb.api_key, str(cache), str(out), n_patients)
    ctx = fork_server()
    rng = random.Random(20260101)
    kills = 0
    for _ in range(5):
        # a random point: once 1 … ⅓ of the still unsent requests have reached the service
        start = sb.stats()["total"]
        after = 1 + int(rng.random() * max(1, (n - start) // 3))
        child = ctx.Process(target=fetch_child, args=args)
        child.start()
        wait_for(
            lambda: not child.is_alive() or sb.stats()["total"] >= start + after,  # noqa: B023
            120,
            "the child to make progress",
        )
        os.kill(child.pid, signal.SIGKILL)
        child.join()
        assert child.exitcode == -signal.SIGKILL, "the child finished before it was killed"
        kills += 1
    stored_before = len(read_responses(out)) if (out / "_dentalkit.json").exists() else 0
    final = ctx.Process(target=fetch_child, args=args)
    final.start()
    final.join(timeout=180)
    assert final.exitcode == 0
    sent = sb.stats()["total"]

    got = read_responses(out)
    ref = expected(reference, got)
    assert len(ref) == n and 0 < stored_before < n  # the kills fell mid-run, after flushes
    assert got["request_key"].is_unique and len(got) == n
    assert got["request_key"].tolist() == ref["request_key"].tolist()
    assert got["body"].tolist() == ref["body"].tolist()
    # the HTTP cache is the write-ahead log: only requests in flight at a kill (at most the
    # 32-request submission window) went to the service twice
    assert n <= sent <= n + 5 * 32
    add_figure("kills survived", kills)
    add_figure("requests sent", sent)
    add_figure("rows lost", n - len(set(got["request_key"]) & set(ref["request_key"])))
    add_figure("duplicates", len(got) - got["request_key"].nunique())


def test_dask_worker_sigkilled_mid_run(frozen_sandbox, reference, dask_client, redis_server, tmp_path):  # fmt: skip
    sb = frozen_sandbox
    sb.set_faults(latency=0.03, error_rate=0.0, slow_rate=0.0, malformed_rate=0.0, rate_limit=None)
    manifest = cohort_manifest(60)
    n = len(manifest) * len(ENDPOINTS)
    client = Client(sb.base_url, api_key=sb.api_key, cache=redis_server.url, backoff_base=0.01)
    pids = dask_client.run(os.getpid)
    victim = sorted(pids.values())[0]
    result: dict = {}

    def run() -> None:
        try:
            result["report"] = fetch_cohort(
                manifest, ENDPOINTS, tmp_path / "out", client=client,
                executor=dask_client.get_executor(pure=False), max_workers=8, progress=False,
            )  # fmt: skip
        except BaseException as exc:  # reported by the assertion below
            result["error"] = exc

    start = sb.stats()["total"]
    thread = threading.Thread(target=run)
    thread.start()
    wait_for(lambda: sb.stats()["total"] >= start + n // 4, 120, "a quarter of the requests")
    os.kill(victim, signal.SIGKILL)
    thread.join(timeout=240)
    assert not thread.is_alive() and "error" not in result, result.get("error")
    rep = result["report"]
    # the worker really died (its nanny starts a new process with another pid)
    assert victim not in dask_client.run(os.getpid).values()

    got = read_responses(tmp_path / "out")
    ref = expected(reference, got)
    assert (rep.stored, rep.failed, len(got), len(ref)) == (n, 0, n, n)
    assert got["request_key"].is_unique
    assert got["body"].tolist() == ref["body"].tolist()
    sent = sb.stats()["total"] - start
    sb.set_faults(latency=0.0)
    # each request was paid for once, except those in flight on the killed worker (4 threads)
    assert n <= sent <= n + 4
    add_figure("kills survived", 1)
    add_figure("requests sent", sent)
    add_figure("rows lost", n - len(set(got["request_key"]) & set(ref["request_key"])))
    add_figure("duplicates", len(got) - got["request_key"].nunique())
