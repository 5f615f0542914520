"""dentalkit: tidy tables, measurements and figures from the Dental Image Analysis Service (v2).

The public names live here; everything else is reached through the concept
modules (``dentalkit.convert``, ``dentalkit.ceph``, ``dentalkit.arch``,
``dentalkit.teeth``, ``dentalkit.findings``, ``dentalkit.tle``,
``dentalkit.plot``, ``dentalkit.io``, ``dentalkit.sandbox``).
"""

from __future__ import annotations

from dentalkit.endpoints import ENDPOINTS, Endpoint, get_endpoint
from dentalkit.errors import (
    ApiError,
    AuthError,
    ConfigurationError,
    DentalkitError,
    ResponseFormatError,
)

__version__ = "0.1.0"

__all__ = [
    "ENDPOINTS",
    "ApiError",
    "AuthError",
    "ConfigurationError",
    "DentalkitError",
    "Endpoint",
    "ResponseFormatError",
    "__version__",
    "get_endpoint",
]
