"""Fixtures of the scale-out tests: a real redis-server and a dask cluster of processes."""

from __future__ import annotations

import pytest

from tests.distributed.realservers import RedisServer, acquire_dask_client, release_dask_client


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory):
    """A redis-server on a free loopback port for this session (flush it, don't restart it)."""
    server = RedisServer(tmp_path_factory.mktemp("redis"))
    server.start()
    yield server
    server.kill()


@pytest.fixture
def fresh_redis(redis_server):
    """The session's Redis, emptied."""
    redis_server.client().flushall()
    return redis_server


@pytest.fixture(scope="session")
def dask_client():
    """A ``dask.distributed.Client`` on a LocalCluster of 2 worker processes × 4 threads."""
    client = acquire_dask_client()
    yield client
    release_dask_client()
