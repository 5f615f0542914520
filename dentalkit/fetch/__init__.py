"""Everything that talks to the service: the one I/O stage at the head of the data flow.

``manifest.csv`` → :mod:`~dentalkit.fetch._manifest` (plan the requests; the file read by
:mod:`~dentalkit.fetch._manifest_file`, its columns checked by
:mod:`~dentalkit.fetch._manifest_columns`) →
:mod:`~dentalkit.fetch.client` (cached, retrying HTTP client; request bodies from
:mod:`~dentalkit.fetch._build`, one method per endpoint from :mod:`~dentalkit.fetch._methods`,
HTTP plumbing in :mod:`~dentalkit.fetch._http`, the Redis cache backend in
:mod:`~dentalkit.fetch._rediscache`) → :mod:`~dentalkit.fetch.cohort` (concurrent, resumable
cohort fetch; its executor, batches, flushes and progress bar in
:mod:`~dentalkit.fetch._schedule`) → :mod:`~dentalkit.fetch.store` (the lossless responses
store, read whole or in pieces of whole patients by :mod:`~dentalkit.fetch.parts`; the manifest's per-image calibration and timestamp format beside it in
:mod:`~dentalkit.fetch._sidefiles`). Output images behind their 72-hour links come
through :mod:`~dentalkit.fetch._download`; one answer of the service is an :class:`ApiResult` (:mod:`~dentalkit.fetch._result`).

Modules inside this package import each other by full module path, never from this
``__init__``; no analysis module (convert, ceph, arch, teeth, findings, tle, stats,
agreement, plot) imports anything here (``tests/test_imports.py``).
"""

from __future__ import annotations

from dentalkit.fetch._result import OUTPUT_LINK_TTL, ApiResult
from dentalkit.fetch._sidefiles import read_calibration
from dentalkit.fetch.client import Client, ClientSpec, download_output_image, get_client
from dentalkit.fetch.cohort import (
    Fetcher,
    FetchReport,
    FirstContactPlan,
    fetch_cohort,
    first_contact_plan,
)
from dentalkit.fetch.parts import read_responses_in_parts
from dentalkit.fetch.store import ResponseStore, read_failures, read_responses, verify_store

__all__ = [
    "OUTPUT_LINK_TTL",
    "ApiResult",
    "Client",
    "ClientSpec",
    "FetchReport",
    "Fetcher",
    "FirstContactPlan",
    "ResponseStore",
    "download_output_image",
    "fetch_cohort",
    "first_contact_plan",
    "get_client",
    "read_calibration",
    "read_failures",
    "read_responses",
    "read_responses_in_parts",
    "verify_store",
]
