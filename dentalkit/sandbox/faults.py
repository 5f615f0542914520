"""Fault injection and rate limiting for the sandbox (latency, 5xx, slow, malformed, 429)."""

from __future__ import annotations

import math
import random
import threading
import time
from dataclasses import dataclass

from dentalkit.sandbox.config import FaultConfig

__all__ = ["Decision", "FaultInjector", "RateLimiter"]


@dataclass(frozen=True, slots=True)
class Decision:
    """What to do to one request: wait ``delay`` s, then answer ``status`` or a malformed body."""

    delay: float = 0.0
    status: int | None = None
    malformed: bool = False


class FaultInjector:
    """Draw a :class:`Decision` per request from a seeded generator."""

    def __init__(self, faults: FaultConfig) -> None:
        self.reconfigure(faults)

    def reconfigure(self, faults: FaultConfig) -> None:
        self.faults = faults
        self._rng = random.Random(faults.seed)
        self._lock = threading.Lock()

    def decide(self) -> Decision:
        f = self.faults
        if not f.active:
            return Decision()
        with self._lock:
            r = self._rng
            lat = f.latency
            delay = r.uniform(*lat) if isinstance(lat, tuple) else float(lat)
            if f.slow_rate and r.random() < f.slow_rate:
                delay += f.slow_seconds
            if f.error_rate and r.random() < f.error_rate:
                return Decision(delay, status=r.choice((500, 502, 503)))
            malformed = bool(f.malformed_rate) and r.random() < f.malformed_rate
        return Decision(delay, malformed=malformed)


class RateLimiter:
    """Fixed-window limiter per key: ``limit`` requests per ``window`` seconds."""

    def __init__(self, limit: int | None, window: float) -> None:
        self.limit = limit
        self.window = window
        self._counts: dict[str, tuple[int, int]] = {}
        self._lock = threading.Lock()

    def hit(self, key: str, now: float | None = None) -> tuple[bool, dict[str, str]]:
        """Count one request; return (allowed, usage headers)."""
        if self.limit is None:
            return True, {}
        now = time.monotonic() if now is None else now
        slot = int(now // self.window)
        with self._lock:
            s, n = self._counts.get(key, (slot, 0))
            if s != slot:
                s, n = slot, 0
            n += 1
            self._counts[key] = (s, n)
        reset = (slot + 1) * self.window - now
        allowed = n <= self.limit
        headers = {
            "X-RateLimit-Limit": str(self.limit),
            "X-RateLimit-Remaining": str(max(self.limit - n, 0)),
            "X-RateLimit-Reset": str(max(math.ceil(reset), 1)),
        }
        if not allowed:
            headers["Retry-After"] = headers["X-RateLimit-Reset"]
        return allowed, headers
