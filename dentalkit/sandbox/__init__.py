"""A local sandbox of the whole Dental Image Analysis Service interface v2.

Like moto for AWS or stripe-mock for Stripe: the same paths, bodies, quirks and errors,
answered from a deterministic synthetic-anatomy simulator whose ground truth is known.
It runs no AI model and says so (``X-Sandbox: true`` on every response).

>>> from dentalkit.sandbox import running, SANDBOX_API_KEY
>>> with running() as sb:  # doctest: +SKIP
...     sb.base_url, sb.api_key
"""

from __future__ import annotations

from typing import Any

from dentalkit.sandbox.config import SANDBOX_API_KEY, FaultConfig, SandboxConfig
from dentalkit.sandbox.server import SandboxServer, running, serve, start

__all__ = [
    "SANDBOX_API_KEY",
    "FaultConfig",
    "SandboxConfig",
    "SandboxServer",
    "running",
    "serve",
    "start",
    "truth",
]


def truth(
    patient_id: str, timestamp: str, image_name: str | None = None, **options: Any
) -> dict[str, Any]:
    """Ground truth the simulator drew for one session (see ``docs/sandbox.md``);
    ``ai_errors=``, ``ai_errors_seed=``, ``noise=`` as :func:`dentalkit.sandbox.simulate.truth`
    takes them (with an error mode, the errors it injects into the answers for ``image_name``)."""
    from dentalkit.sandbox import simulate

    return simulate.truth(patient_id, timestamp, image_name, **options)
