"""dentalkit: tidy tables, measurements and figures from the Dental Image Analysis Service (v2).

The public names live here; everything else is reached through the concept
modules (``dentalkit.convert``, ``dentalkit.ceph``, ``dentalkit.arch``,
``dentalkit.teeth``, ``dentalkit.findings``, ``dentalkit.tle``,
``dentalkit.plot``, ``dentalkit.io``, ``dentalkit.sandbox``).
"""

from __future__ import annotations

from dentalkit import ceph, settings, tle
from dentalkit.client import ApiResult, Client, download_output_image
from dentalkit.cohort import FetchReport, fetch_cohort
from dentalkit.endpoints import ENDPOINTS, Endpoint, get_endpoint
from dentalkit.errors import (
    ApiError,
    AuthError,
    ConfigurationError,
    DentalkitError,
    ResponseFormatError,
)
from dentalkit.store import read_failures, read_responses

__version__ = "0.1.0"

__all__ = [
    "ENDPOINTS",
    "ApiError",
    "ApiResult",
    "AuthError",
    "Client",
    "ConfigurationError",
    "DentalkitError",
    "Endpoint",
    "FetchReport",
    "ResponseFormatError",
    "__version__",
    "ceph",
    "download_output_image",
    "fetch_cohort",
    "get_endpoint",
    "read_failures",
    "read_responses",
    "settings",
    "tle",
]
