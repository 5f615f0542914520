"""Fixtures shared by the client and cohort tests: a module sandbox (faults change per test)
and a client factory. Imported by `tests/client/conftest.py` and `tests/cohort/conftest.py`."""

from __future__ import annotations

import pytest

from dentalkit.sandbox import running


@pytest.fixture(scope="module")
def sb():
    """A sandbox for this module; tests set faults with ``sb.set_faults`` (which resets stats)."""
    with running(production_like_key="prod-like-key-7f3a9c1e55") as server:
        yield server


@pytest.fixture
def fresh(sb):
    """Reset faults and counters before each test."""
    sb.set_faults(latency=0.0, error_rate=0.0, slow_rate=0.0, malformed_rate=0.0, rate_limit=None)
    return sb


@pytest.fixture
def make_client(tmp_path, fresh):
    """Factory: a Client on the module sandbox with its own cache file and fast retries."""
    from dentalkit.fetch.client import Client

    def make(cache=None, **kwargs):
        kwargs.setdefault("api_key", fresh.api_key)
        kwargs.setdefault("backoff_base", 0.01)
        kwargs.setdefault("backoff_max", 0.05)
        return Client(fresh.base_url, cache=cache or tmp_path / "http-cache.sqlite", **kwargs)

    return make
