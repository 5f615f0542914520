"""One answer of the service and how long its output link lives (no I/O).

:class:`ApiResult` and :data:`OUTPUT_LINK_TTL` sit apart from the client so that the
client (:mod:`dentalkit.fetch.client`) and the downloads (:mod:`dentalkit.fetch._download`)
both read them and neither imports the other back.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

__all__ = ["OUTPUT_LINK_TTL", "ApiResult"]

#: Validity of ``OutputImageUrl`` (spec, "Limits").
OUTPUT_LINK_TTL = timedelta(hours=72)


@dataclass(frozen=True, slots=True)
class ApiResult:
    """One successful answer of the service, with where and when it came from.

    Attributes
    ----------
    endpoint : str
        Registry name (``"ceph_lateral_points"``).
    request : dict
        The body (image endpoints) or query (``/tle``) sent — never the key.
    request_key : str
        Hex SHA-256 of method, path and canonical request (see :func:`dentalkit.fetch._http.request_key`).
    data : dict
        The parsed JSON body.
    text : str
        The exact JSON text received.
    status_code : int
        HTTP status (200).
    from_cache : bool
        Whether the HTTP cache answered (no request reached the service).
    fetched_at : datetime
        UTC time the service answered; for a cache hit, when the cached answer was received
        (so ``OutputImageUrl`` expires 72 h after it).
    usage : dict
        Usage / rate-limit response headers, lower-case names (the spec does not show them; see
        ``dentalkit.fetch._http.USAGE_HEADER_PREFIXES``).
    attempts : int
        HTTP attempts this call needed (1 without retries; 1 for a cache hit).
    """

    endpoint: str
    request: dict[str, Any]
    request_key: str
    data: dict[str, Any]
    text: str
    status_code: int
    from_cache: bool
    fetched_at: datetime
    usage: dict[str, str] = field(default_factory=dict)
    attempts: int = 1

    @property
    def output_image_url(self) -> str | None:
        """``OutputImageUrl`` of the response, ``None`` for endpoints without one."""
        value = self.data.get("OutputImageUrl")
        return value if isinstance(value, str) else None

    @property
    def link_expires_at(self) -> datetime:
        """When ``OutputImageUrl`` stops working: ``fetched_at`` + 72 h (spec, "Limits")."""
        return self.fetched_at + OUTPUT_LINK_TTL
