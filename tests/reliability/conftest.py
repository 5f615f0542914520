"""The reliability suite: faults, kills, a Redis restart, hostile input, security and TLS.

Everything runs on loopback with real components (sandbox, redis-server, dask LocalCluster of
worker processes) and is bounded in time. The figures the suite measured (requests sent,
faults injected, kills survived, rows lost, duplicates, bad inputs tried) are printed at the
end of the pytest run.
"""

from __future__ import annotations

import pytest

from tests.distributed.realservers import RedisServer, acquire_dask_client, release_dask_client
from tests.reliability.cohort import (
    ENDPOINTS,
    FIGURES,
    FROZEN,
    N_PATIENTS,
    add_figure,
    cohort_manifest,
)


def pytest_terminal_summary(terminalreporter) -> None:
    if any(FIGURES.values()):
        terminalreporter.section("dentalkit reliability figures")
        for key, value in FIGURES.items():
            terminalreporter.write_line(f"{key}: {value:,}")


@pytest.fixture(scope="session")
def frozen_sandbox():
    """One sandbox for the suite, clock frozen; tests set faults with ``set_faults``."""
    from dentalkit.sandbox import running

    with running(frozen_time=FROZEN) as sb:
        yield sb


@pytest.fixture(scope="session")
def reference(frozen_sandbox, tmp_path_factory):
    """The fault-free, uninterrupted run of the 2,000-request cohort (the responses table)."""
    from dentalkit.fetch.client import Client
    from dentalkit.fetch.cohort import fetch_cohort
    from dentalkit.fetch.store import read_responses

    sb = frozen_sandbox
    sb.set_faults(latency=0.0, error_rate=0.0, slow_rate=0.0, malformed_rate=0.0, rate_limit=None)
    out = tmp_path_factory.mktemp("reference")
    with Client(sb.base_url, api_key=sb.api_key, cache="memory") as client:
        rep = fetch_cohort(
            cohort_manifest(), ENDPOINTS, out, client=client, max_workers=16, progress=False
        )
    assert (rep.stored, rep.failed) == (N_PATIENTS * len(ENDPOINTS), 0)
    add_figure("requests sent", sb.stats()["total"])
    return read_responses(out)


@pytest.fixture
def redis_server(tmp_path):
    """A redis-server of this test alone (tests restart it)."""
    server = RedisServer(tmp_path / "redis")
    server.start()
    yield server
    server.kill()


@pytest.fixture(scope="session")
def dask_client():
    client = acquire_dask_client()
    yield client
    release_dask_client()
