"""Settings of one sandbox server: keys, noise, faults, limits and clock."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field, fields
from typing import Any

__all__ = ["SANDBOX_API_KEY", "FaultConfig", "SandboxConfig"]

#: The documented key of the local sandbox. It is not a secret and works only
#: against the sandbox; the real service never accepts it.
SANDBOX_API_KEY = "dentalkit-sandbox"


@dataclass
class FaultConfig:
    """Faults a sandbox injects into *valid, authorised* image and /tle requests.

    Attributes
    ----------
    latency : float or tuple of float
        Seconds added to every answer: a fixed value, or ``(low, high)`` for a
        uniform draw. Simulated with ``asyncio.sleep``, so it costs no thread.
    error_rate : float
        Fraction of requests answered with a 500/502/503 error body.
    slow_rate, slow_seconds : float
        Fraction of requests delayed by ``slow_seconds`` (past a client timeout).
    malformed_rate : float
        Fraction of 200 answers whose JSON body is cut short (not parseable).
    rate_limit : int or None
        Requests allowed per ``rate_window`` seconds and key; beyond it the
        sandbox answers 429 with ``Retry-After``.
    rate_window : float
        Length of the fixed rate-limit window in seconds.
    seed : int
        Seed of the fault generator (faults are random but reproducible in
        count for a given sequence of requests).
    """

    latency: float | tuple[float, float] = 0.0
    error_rate: float = 0.0
    slow_rate: float = 0.0
    slow_seconds: float = 0.0
    malformed_rate: float = 0.0
    rate_limit: int | None = None
    rate_window: float = 1.0
    seed: int = 0

    def __post_init__(self) -> None:
        for name in ("error_rate", "slow_rate", "malformed_rate"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ValueError(f"FaultConfig.{name} must be in [0, 1], got {value!r}")
        if isinstance(self.latency, list):
            self.latency = tuple(self.latency)
        if self.rate_limit is not None and self.rate_limit < 1:
            raise ValueError("FaultConfig.rate_limit must be None or >= 1")

    @property
    def active(self) -> bool:
        """True when any fault or latency is configured."""
        return bool(
            self.latency
            or self.error_rate
            or self.slow_rate
            or self.malformed_rate
            or self.rate_limit
        )


@dataclass
class SandboxConfig:
    """Everything that makes one sandbox server behave as it does.

    Attributes
    ----------
    api_key : str
        The key the sandbox accepts (default :data:`SANDBOX_API_KEY`).
    production_like_key : str or None
        A second accepted key, to test that a client's cache is independent of
        the key (the same request under either key gives the same answer).
    noise : bool
        Add the simulator's measurement noise to landmarks, outlines and
        points. ``False`` gives exact geometry for recovery tests.
    faults : FaultConfig
        Latency and injected faults.
    max_body_bytes : int
        Larger request bodies get 413.
    link_secret : bytes
        HMAC key that signs output-image links.
    link_ttl : float
        Validity of an output-image link in seconds (72 h, as the spec says).
    clock_offset : float
        Seconds added to the wall clock, so tests can move time forward (for
        expired links) without waiting.
    frozen_time : float or None
        Freeze the sandbox clock at this Unix time (``clock_offset`` is still
        added). Output-image links then carry the same ``expires`` and signature
        whenever a request is answered, so two runs of a cohort give
        byte-identical bodies (used by the reliability tests). ``None``, the
        default, follows the wall clock.
    drift : tuple of str
        Drift scenarios (:mod:`dentalkit.sandbox.drift`): answer as a changed service
        could (extra fields, new labels, other wordings …). Empty, the default, answers
        exactly as the registry says; ``("all",)`` turns every scenario on.
    ai_errors : {"off", "realistic", "gross"}
        AI error mode (:mod:`dentalkit.sandbox.ai_errors`): landmarks off their
        structures, teeth with their neighbour's number, missed and phantom teeth,
        arch points out of order, boxes added or dropped, at the declared rates of the
        mode, each recorded in the truth. ``"off"``, the default, answers as before.
    ai_errors_seed : int
        Seed of the error draws (with the request: the same request, mode and seed give
        the same errors).
    """

    api_key: str = SANDBOX_API_KEY
    production_like_key: str | None = None
    noise: bool = True
    faults: FaultConfig = field(default_factory=FaultConfig)
    max_body_bytes: int = 64 * 1024
    link_secret: bytes = b"dentalkit-sandbox-link-secret"
    link_ttl: float = 72 * 3600.0
    clock_offset: float = 0.0
    frozen_time: float | None = None
    drift: tuple[str, ...] = ()
    ai_errors: str = "off"
    ai_errors_seed: int = 0

    def __post_init__(self) -> None:
        from dentalkit.sandbox.ai_errors import check_mode
        from dentalkit.sandbox.drift import check_scenarios

        self.drift = check_scenarios(self.drift)
        self.ai_errors = check_mode(self.ai_errors)
        self.ai_errors_seed = int(self.ai_errors_seed)

    def now(self) -> float:
        """Current sandbox time (Unix seconds): ``frozen_time`` or the wall clock, plus
        ``clock_offset``."""
        base = time.time() if self.frozen_time is None else self.frozen_time
        return base + self.clock_offset

    def accepted_keys(self) -> tuple[str, ...]:
        keys = [self.api_key]
        if self.production_like_key:
            keys.append(self.production_like_key)
        return tuple(keys)

    def public(self) -> dict[str, Any]:
        """The settings that ``/_sandbox/config`` shows (never the keys or the secret)."""
        return {
            "noise": self.noise,
            "faults": asdict(self.faults),
            "max_body_bytes": self.max_body_bytes,
            "link_ttl": self.link_ttl,
            "clock_offset": self.clock_offset,
            "frozen_time": self.frozen_time,
            "drift": list(self.drift),
            "ai_errors": self.ai_errors,
            "ai_errors_seed": self.ai_errors_seed,
        }

    def update(self, changes: dict[str, Any]) -> None:
        """Apply a partial update from ``PUT /_sandbox/config`` (validated)."""
        allowed = {
            "noise",
            "max_body_bytes",
            "clock_offset",
            "link_ttl",
            "faults",
            "frozen_time",
            "drift",
            "ai_errors",
            "ai_errors_seed",
        }
        unknown = set(changes) - allowed
        if unknown:
            raise ValueError(
                f"unknown sandbox setting(s): {sorted(unknown)}; allowed: {sorted(allowed)}"
            )
        if "faults" in changes:
            given = changes["faults"] or {}
            names = {f.name for f in fields(FaultConfig)}
            bad = set(given) - names
            if bad:
                raise ValueError(
                    f"unknown fault setting(s): {sorted(bad)}; allowed: {sorted(names)}"
                )
            merged = {**asdict(self.faults), **given}
            self.faults = FaultConfig(**merged)
        for name in ("noise", "max_body_bytes", "clock_offset", "link_ttl"):
            if name in changes:
                setattr(self, name, type(getattr(self, name))(changes[name]))
        if "drift" in changes:
            from dentalkit.sandbox.drift import check_scenarios

            self.drift = check_scenarios(changes["drift"] or ())
        if "ai_errors" in changes:
            from dentalkit.sandbox.ai_errors import check_mode

            self.ai_errors = check_mode(changes["ai_errors"])
        if "ai_errors_seed" in changes:
            self.ai_errors_seed = int(changes["ai_errors_seed"])
        if "frozen_time" in changes:
            frozen = changes["frozen_time"]
            self.frozen_time = None if frozen is None else float(frozen)
