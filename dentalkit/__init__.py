"""dentalkit: tidy tables, measurements and figures from the Dental Image Analysis Service (v2).

The public names live here; everything else is reached through the concept
modules (``dentalkit.convert``, ``dentalkit.ceph``, ``dentalkit.arch``,
``dentalkit.teeth``, ``dentalkit.findings``, ``dentalkit.tle``,
``dentalkit.plot``, ``dentalkit.io``, ``dentalkit.sandbox``); images become a manifest
in ``dentalkit.images``; fetching lives in ``dentalkit.fetch``, the whole study (analyses,
figures, report) in ``dentalkit.study``.
"""

from __future__ import annotations

from dentalkit import settings
from dentalkit.endpoints import ENDPOINTS, Endpoint, get_endpoint
from dentalkit.errors import (
    ApiError,
    AuthError,
    ConfigurationError,
    DentalkitError,
    ResponseFormatError,
)
from dentalkit.fetch import (
    ApiResult,
    Client,
    FetchReport,
    download_output_image,
    fetch_cohort,
    read_failures,
    read_responses,
)

__version__ = "0.1.0"

# Concept modules load on first use (``dentalkit.plot`` imports matplotlib, ``dentalkit.arch``
# scipy): ``import dentalkit`` stays cheap, and ``dentalkit.plot.…`` still works (PEP 562).
_LAZY = (
    "agreement",
    "arch",
    "ceph",
    "convert",
    "findings",
    "images",
    "io",
    "plot",
    "sandbox",
    "stats",
    "study",
    "teeth",
    "tle",
    "tracings",
)


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module = importlib.import_module(f"dentalkit.{name}")
        globals()[name] = module
        return module
    raise AttributeError(f"module 'dentalkit' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *_LAZY])


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
    "agreement",
    "arch",
    "ceph",
    "convert",
    "download_output_image",
    "fetch_cohort",
    "findings",
    "get_endpoint",
    "images",
    "io",
    "plot",
    "read_failures",
    "read_responses",
    "sandbox",
    "settings",
    "stats",
    "study",
    "teeth",
    "tle",
    "tracings",
]
