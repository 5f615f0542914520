"""The Redis HTTP cache while Redis is unreachable: requests succeed (misses, skipped writes),
one warning per outage, and caching resumes when Redis answers again."""

from __future__ import annotations

import logging

from dentalkit.fetch.client import Client
from tests.distributed.realservers import RedisServer

IMG = "https://images.example.org/O1/ceph.png"


def test_calls_succeed_without_redis_and_caching_resumes(sandbox, tmp_path, caplog):
    server = RedisServer(tmp_path / "redis")  # its port is chosen but nothing listens yet
    client = Client(sandbox.base_url, api_key=sandbox.api_key, cache=server.url, max_retries=0)
    backend = client.session.cache
    with caplog.at_level(logging.WARNING, logger="dentalkit"):
        first = client.classifier("O1", "2025-01-01", IMG)
        again = client.classifier("O1", "2025-01-01", IMG)
    assert first.status_code == again.status_code == 200
    assert not first.from_cache and not again.from_cache  # nothing could be cached
    assert first.text == again.text
    assert backend.outages == 1 and backend.failed_reads >= 2 and backend.failed_writes >= 2
    unreachable = [r for r in caplog.records if "unreachable" in r.getMessage()]
    assert len(unreachable) == 1  # one warning per outage, not one per request
    caplog.clear()

    server.start()
    try:
        with caplog.at_level(logging.WARNING, logger="dentalkit"):
            third = client.classifier("O1", "2025-01-01", IMG)
            fourth = client.classifier("O1", "2025-01-01", IMG)
        assert not third.from_cache and fourth.from_cache  # cached again
        assert fourth.text == first.text
        assert any("reachable again" in r.getMessage() for r in caplog.records)
        assert len(list(server.client().scan_iter("dentalkit:*"))) == 1
    finally:
        server.kill()
