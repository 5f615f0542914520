"""The shared Redis HTTP cache, degrading to "miss" while Redis is unreachable (private).

A cluster of workers shares one requests-cache Redis backend, so no request is paid for twice.
Redis is an optimisation, not the record: the calling process writes every answer to the
Parquet store. So when Redis goes away (restarted, failed over, a network blip) a fetch must
not fail — it carries on without the cache and picks it up again when Redis is back:

* a lookup that cannot reach Redis after a few quick retries is a **miss** (the request goes
  to the service, as it would for an answer never cached);
* a write that cannot reach Redis is **skipped** (the answer still reaches the caller and the
  store; only its write-ahead copy in the cache is missing);
* one warning is logged when Redis becomes unreachable and one when it answers again.

The connection has bounded timeouts, so a hung Redis cannot hang a worker either.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

from requests_cache.backends.redis import RedisCache

__all__ = ["ResilientRedisCache", "redis_connection"]

log = logging.getLogger("dentalkit")

#: Seconds to wait for a TCP connection to Redis, and for one command's answer.
CONNECT_TIMEOUT = 2.0
COMMAND_TIMEOUT = 10.0
#: Quick retries of one Redis command before the cache gives up on it (backoff 20 ms …
#: 200 ms, with jitter), so a restart of a second or so is often not even noticed.
COMMAND_RETRIES = 3


def redis_connection(url: str) -> Any:
    """A ``redis.Redis`` for ``url`` with bounded timeouts and a short retry policy."""
    from redis import Redis
    from redis.backoff import EqualJitterBackoff  # in redis-py 5 and later
    from redis.exceptions import ConnectionError, TimeoutError
    from redis.retry import Retry

    return Redis.from_url(
        url,
        socket_connect_timeout=CONNECT_TIMEOUT,
        socket_timeout=COMMAND_TIMEOUT,
        health_check_interval=30,
        retry=Retry(
            EqualJitterBackoff(cap=0.2, base=0.02),
            COMMAND_RETRIES,
            supported_errors=(ConnectionError, TimeoutError),
        ),
    )


class ResilientRedisCache(RedisCache):
    """requests-cache ``RedisCache`` whose reads miss and writes skip while Redis is down.

    Parameters
    ----------
    url : str
        ``redis://host:port/db``, ``rediss://…`` or ``unix:///path?db=0``.
    namespace : str
        Key prefix in Redis (dentalkit uses ``"dentalkit"``).
    """

    def __init__(self, url: str, namespace: str = "dentalkit", **kwargs: Any) -> None:
        from redis.exceptions import RedisError

        super().__init__(namespace=namespace, connection=redis_connection(url), **kwargs)
        self._redis_errors = (RedisError, OSError)
        self._down = False
        self._state_lock = threading.Lock()
        self.outages = 0  #: times Redis became unreachable (for tests and logs)
        self.failed_reads = 0  #: lookups answered "miss" because Redis was unreachable
        self.failed_writes = 0  #: answers not cached because Redis was unreachable

    def _failed(self, what: str, exc: BaseException) -> None:
        with self._state_lock:
            if what == "read":
                self.failed_reads += 1
            else:
                self.failed_writes += 1
            if self._down:
                return
            self._down = True
            self.outages += 1
        log.warning(
            "the Redis HTTP cache is unreachable (%s: %s); carrying on without it: lookups are "
            "misses (the service is asked) and answers are not cached until it is back",
            type(exc).__name__,
            exc,
        )

    def _ok(self) -> None:
        if self._down:
            with self._state_lock:
                if not self._down:
                    return
                self._down = False
            log.warning("the Redis HTTP cache is reachable again")

    def get_response(self, key: str, default: Any = None) -> Any:
        try:
            response = super().get_response(key, default)
        except self._redis_errors as exc:
            self._failed("read", exc)
            return default
        self._ok()
        return response

    def save_response(self, response: Any, cache_key: str | None = None, expires: Any = None):
        try:
            super().save_response(response, cache_key, expires)
        except self._redis_errors as exc:
            self._failed("write", exc)
            return
        self._ok()

    def delete(self, *keys: str, **kwargs: Any) -> None:
        try:
            super().delete(*keys, **kwargs)
        except self._redis_errors as exc:
            self._failed("write", exc)
