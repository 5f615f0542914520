"""HTTP plumbing of the client (private): URL checks, request keys, the cache session, backoff.

Nothing here is public API; :mod:`dentalkit.fetch.client` and :mod:`dentalkit.fetch.cohort` use it.
"""

from __future__ import annotations

import email.utils
import hashlib
import io
import ipaddress
import json
import logging
import math
import os
import random
import re
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime, timedelta
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

import orjson
import requests

from dentalkit.endpoints import Endpoint
from dentalkit.errors import (
    ApiError,
    ConfigurationError,
    RedirectRefusedError,
    api_error_for_status,
)
from dentalkit.fetch._cache import (
    KEY_HEADER,
    cache_backend,
    cache_description,
    check_http_cache,
    normalize_cache,
    quarantine_cache,
    write_large_entries_in_pieces,
)
from dentalkit.fetch._transfer import DeadlineAdapter, body_reader

__all__ = [
    "Secret",
    "answers_request",
    "api_error",
    "backoff_delay",
    "cache_description",
    "canonical_request",
    "check_http_cache",
    "check_service_url",
    "image_identity",
    "is_loopback",
    "link_expiry",
    "make_session",
    "normalize_cache",
    "origin",
    "parse_large_body",
    "parse_retry_after",
    "quarantine_cache",
    "request_key",
    "scrub",
    "session_request_key",
    "take_body",
]

log = logging.getLogger("dentalkit")


#: The spec does not show the names of its usage headers ("Authentication" 7); responses'
#: headers whose lower-case name starts with one of these are returned as ``usage``.
USAGE_HEADER_PREFIXES = ("x-ratelimit", "ratelimit", "x-usage", "x-quota", "retry-after")


class Secret:
    """A string that never shows itself in ``repr``, ``str`` or f-strings.

    The API key travels inside one of these (also when a client's settings are pickled to a
    worker process); only :meth:`reveal` returns the value, at the moment a header is built.
    """

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return "***"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))

    def __reduce__(self):
        return (Secret, (self._value,))


# ---- URLs ------------------------------------------------------------------------------


def is_loopback(host: str | None) -> bool:
    """True for ``localhost`` exactly, an address in 127.0.0.0/8, and ``::1``.

    Names under ``.localhost`` (``evil.localhost``) are *not* loopback here: RFC 6761 lets
    resolvers send them to loopback, but nothing obliges the resolver in use to do so, and
    a proxy or a hosts file may send them anywhere.

    >>> [is_loopback(h) for h in ("localhost", "127.8.9.1", "[::1]", "evil.localhost", "10.0.0.1")]
    [True, True, True, False, False]
    """
    if not host:
        return False
    host = host.lower()
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    if host == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    if address.version == 4:
        return address in _LOOPBACK_V4
    return address == _LOOPBACK_V6


_LOOPBACK_V4 = ipaddress.ip_network("127.0.0.0/8")
_LOOPBACK_V6 = ipaddress.ip_address("::1")


def origin(url: str) -> tuple[str, str, int | None]:
    """``(scheme, host, port)`` of ``url``, the port filled in for http (80) and https (443).

    Two URLs have the same origin when these three are equal (RFC 6454).

    >>> origin("https://Svc.example.org/api/v2") == origin("https://svc.example.org:443/x")
    True
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    port = parts.port or {"http": 80, "https": 443}.get(scheme)
    return scheme, (parts.hostname or "").lower(), port


def check_service_url(url: str, *, what: str = "base URL") -> str:
    """Refuse anything but ``https://`` (or ``http://`` to a loopback host); return ``url``.

    Raises
    ------
    ConfigurationError
        For another scheme, a missing host, or plain HTTP to a non-loopback host.
    """
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise ConfigurationError(
            f"the {what} {url!r} is not an http(s) URL with a host; "
            "give e.g. https://<service-host>/api/v2"
        )
    if scheme == "http" and not is_loopback(parts.hostname):
        raise ConfigurationError(
            f"refusing plain http:// to {parts.hostname!r} ({what}): the service requires TLS "
            "(HTTPS only) "
            "and the API key would travel unencrypted. Use https://… "
            "(http:// is allowed only for loopback hosts such as the local sandbox)"
        )
    return url


# ---- request identity ------------------------------------------------------------------


def canonical_request(
    body: Mapping[str, Any] | None = None, query: Mapping[str, str] | None = None
) -> str:
    """Canonical text of a request's content: sorted-key compact JSON, or a sorted query.

    >>> canonical_request({"b": 1, "a": "x"})
    '{"a":"x","b":1}'
    >>> canonical_request(query={"p02": "F", "p01": "14"})
    'p01=14&p02=F'
    """
    if query is not None:
        return urlencode(sorted(query.items()))
    # compact, sorted keys, UTF-8 unescaped: json.dumps(sort_keys=True, separators=(",", ":"),
    # ensure_ascii=False) for the strings and booleans our bodies hold, several times faster
    return orjson.dumps(body or {}, option=orjson.OPT_SORT_KEYS).decode()


#: Query parameters that sign an object-store link rather than name the object: signing the
#: same image again (a rebuilt manifest, a refreshed 72-hour link) changes them and nothing
#: else. AWS SigV4 and Google Cloud Storage V4 (``X-Amz-*``, ``X-Goog-*``); AWS SigV2 and GCS
#: V2 (``Signature`` with ``Expires``, ``AWSAccessKeyId``, ``GoogleAccessId``); Azure SAS
#: tokens (``sig`` with the SAS fields of the Azure Storage REST reference, "Create a service
#: SAS" / "Create an account SAS" / "Create a user delegation SAS").
_SIGNED_PREFIXES = ("x-amz-", "x-goog-")
_V2_FIELDS = frozenset({"signature", "expires", "awsaccesskeyid", "googleaccessid"})
_SAS_FIELDS = frozenset(
    {"sv", "ss", "srt", "sp", "se", "st", "spr", "sig", "sr", "si", "sip", "sdd", "ses"}
    | {"skoid", "sktid", "skt", "ske", "sks", "skv", "saoid", "suoid", "scid"}
    | {"rscc", "rscd", "rsce", "rscl", "rsct"}
)


def image_identity(url: str) -> str:
    """The image a link names: ``url`` without the query parameters that only sign it.

    Used for the request key (:func:`request_key`), so that re-signing the same images —
    a manifest rebuilt with fresh presigned links — resumes a fetch instead of repeating every
    request. Only recognised signature parameters are removed (``X-Amz-*``, ``X-Goog-*``; the
    V2 set only where ``Signature`` is present; the Azure SAS set only where ``sig`` is); any
    other query parameter names a different object (a version, a resize) and stays. The
    request itself always carries the full link.

    >>> image_identity("https://b.s3.amazonaws.com/P1/ceph.png?X-Amz-Date=1&X-Amz-Signature=ab")
    'https://b.s3.amazonaws.com/P1/ceph.png'
    >>> image_identity("https://a.blob.core.windows.net/c/x.png?sv=2022&se=2026&sig=Zm9v")
    'https://a.blob.core.windows.net/c/x.png'
    >>> image_identity("https://host/x.png?versionId=3&se=1")  # no sig: not a SAS token
    'https://host/x.png?versionId=3&se=1'
    """
    parts = urlsplit(url)
    if not parts.query or parts.scheme.lower() not in ("http", "https"):
        return url
    pairs = parse_qsl(parts.query, keep_blank_values=True)
    names = {name.lower() for name, _ in pairs}
    drop_v2 = "signature" in names
    drop_sas = "sig" in names

    def signs(name: str) -> bool:
        low = name.lower()
        return (
            low.startswith(_SIGNED_PREFIXES)
            or (drop_v2 and low in _V2_FIELDS)
            or (drop_sas and low in _SAS_FIELDS)
        )

    kept = [(name, value) for name, value in pairs if not signs(name)]
    if len(kept) == len(pairs):
        return url
    return parts._replace(query=urlencode(kept)).geturl()


#: Query parameters that state a link's end on their own (``signed_only=False``), in the order
#: they are read: the V2 ``Expires`` and Azure's ``se`` as below, and a bare ``exp``.
_BARE_EXPIRY_FIELDS = ("expires", "exp", "se")
#: With ``signed_only=True``, the field that must sign a link whose end one of these states.
_EXPIRY_SIGNED_BY = {"expires": "signature", "se": "sig"}


def _instant(value: str) -> datetime:
    """A link's end from Unix seconds or ISO 8601 (no zone: UTC); ValueError if neither."""
    try:
        seconds = float(value)
    except ValueError:
        end = datetime.fromisoformat(value)
        return end if end.tzinfo else end.replace(tzinfo=UTC)
    if not math.isfinite(seconds):
        raise ValueError(f"not a time: {value!r}")
    return datetime.fromtimestamp(seconds, tz=UTC)


def link_expiry(url: str, *, signed_only: bool) -> datetime | None:
    """When a presigned object-store link stops working (UTC), or None if it does not say.

    Read from the link's own query parameters (names in any case):

    - AWS SigV4 and Google Cloud Storage V4: ``X-Amz-Date``/``X-Goog-Date``
      (``YYYYMMDDTHHMMSSZ``) plus ``X-Amz-Expires``/``X-Goog-Expires`` (seconds);
    - the V2 ``Expires`` (Unix seconds) and an Azure SAS token's ``se`` (ISO 8601, UTC when
      no zone is given): with ``signed_only=True`` only when the link is signed (``Signature``,
      ``sig``), with ``signed_only=False`` also bare, as is ``exp``; then the first of
      ``expires``, ``exp``, ``se`` decides, in Unix seconds or ISO 8601.

    A link whose parameters do not parse gives None, as one that states no end.

    Parameters
    ----------
    url : str
        The link.
    signed_only : bool, keyword-only
        True: believe only an end that the link's signature covers (the manifest check, which
        refuses rows for it); False: any stated end (the contract report, which describes).

    Returns
    -------
    datetime.datetime or None
        The end, time-zone aware (UTC).

    References
    ----------
    AWS, "Authenticating Requests: Using Query Parameters (AWS Signature Version 4)";
    Google Cloud, "V4 signing process"; Microsoft, "Create a service SAS" (``se``).

    >>> link_expiry(
    ...     "https://b.s3.amazonaws.com/x.png?X-Amz-Date=20261127T100000Z&X-Amz-Expires=3600",
    ...     signed_only=True,
    ... )
    datetime.datetime(2026, 11, 27, 11, 0, tzinfo=datetime.timezone.utc)
    >>> link_expiry("https://host/x.png?expires=1798761600", signed_only=True) is None
    True
    >>> link_expiry("https://host/x.png?expires=1798761600", signed_only=False)
    datetime.datetime(2027, 1, 1, 0, 0, tzinfo=datetime.timezone.utc)
    """
    try:
        query = urlsplit(url).query
    except ValueError:
        return None
    if not query:
        return None
    q = {name.lower(): value for name, value in parse_qsl(query, keep_blank_values=True)}
    try:
        for vendor in ("x-amz-", "x-goog-"):
            if f"{vendor}date" in q and f"{vendor}expires" in q:
                signed = datetime.strptime(q[f"{vendor}date"], "%Y%m%dT%H%M%SZ")
                lifetime = timedelta(seconds=float(q[f"{vendor}expires"]))
                return signed.replace(tzinfo=UTC) + lifetime
        for name in _BARE_EXPIRY_FIELDS:
            if signed_only and _EXPIRY_SIGNED_BY.get(name) not in q:
                continue
            if name in q:
                return _instant(q[name])
    except (ValueError, OverflowError, OSError):
        return None
    return None


def request_key(
    method: str,
    path: str,
    body: Mapping[str, Any] | None = None,
    query: Mapping[str, str] | None = None,
) -> str:
    """Hex SHA-256 of ``METHOD path`` + newline + :func:`canonical_request`.

    The path is relative to the base URL (``/ceph-lateral-points``), so neither the host nor
    the key takes part: the same request to the same service always has the same key. A
    body's ``ImageName`` enters as its :func:`image_identity` (without the parameters that
    only sign an object-store link), so re-signed links of the same images keep their keys.

    >>> k = request_key(
    ...     "POST", "/classifier", {"PatientID": "P1", "TimeStamp": "t", "ImageName": "u"}
    ... )
    >>> (
    ...     len(k),
    ...     k
    ...     == request_key(
    ...         "POST", "/classifier", {"ImageName": "u", "TimeStamp": "t", "PatientID": "P1"}
    ...     ),
    ... )
    (64, True)
    """
    if body is not None and isinstance(body.get("ImageName"), str):
        body = {**body, "ImageName": image_identity(body["ImageName"])}
    text = f"{method.upper()} {path}\n{canonical_request(body, query)}"
    return hashlib.sha256(text.encode()).hexdigest()


def session_request_key(http_key: str, patient_id: str, timestamp: str) -> str:
    """Store key of a ``/tle`` answer for one session.

    ``GET /tle`` carries no patient, so two patients with the same eleven parameters send the
    same request (one HTTP call: the second is a cache hit). The responses table keeps one row
    per session, so for ``/tle`` the store's ``request_key`` is the hex SHA-256 of the request
    key, ``patient_id`` and ``timestamp`` joined by newlines.

    >>> k = request_key("GET", "/tle", query={"p01": "14"})
    >>> session_request_key(k, "P1", "t") != session_request_key(k, "P2", "t")
    True
    """
    return hashlib.sha256(f"{http_key}\n{patient_id}\n{timestamp}".encode()).hexdigest()


# ---- the cache -------------------------------------------------------------------------


_parsed = threading.local()

#: Bodies up to this size are parsed by :func:`_cacheable` with orjson before they are
#: cached, and that parse is kept for :func:`take_body` (parsed once). Larger ones are
#: parsed once, by :func:`take_body`, from their text, with the bytes already released
#: (:func:`parse_large_body`), so that no more than two forms of the body (bytes and
#: text, then text and parsed data) are ever in memory together.
KEEP_PARSE_BYTES = 1 << 20


def _cacheable(response: requests.Response) -> bool:
    """requests-cache ``filter_fn``: store only 200s whose body is a JSON object.

    requests-cache also applies it to responses read back from the cache, and deletes an
    entry that fails it: a cached body damaged after it was written (an edited or garbled
    cache) is evicted the first time it is read, so a retry reaches the service instead of
    reading the same bad entry again. (The client also checks that a cached answer is the
    answer to the request it made: :func:`answers_request`.) The parsed body of an answer
    up to :data:`KEEP_PARSE_BYTES` is kept for :func:`take_body`, so it is parsed only once;
    requests-cache calls the filter twice on a fresh answer (before caching it and before
    returning it), and the second call reuses the first one's verdict.

    A larger body is only looked at here (it must begin with ``{`` and end with ``}``):
    parsing it while its bytes are held (and, for a fresh answer, before they are pickled
    into the cache) would hold three forms of it at once, the bytes, the parser's copy and
    the parsed data. :func:`take_body` parses it, and the client deletes the cache entry of
    a body that then does not parse as a JSON object (``Client._send``), so such an entry
    is never used.
    """
    if response.status_code != 200:
        return True  # status codes are filtered by allowable_codes; keep old entries on errors
    stash = getattr(_parsed, "value", None)
    if stash is not None and stash[0] is response:  # checked before it was cached
        return stash[1] is not None
    content = response.content
    if len(content) > KEEP_PARSE_BYTES:
        ok = _looks_like_object(content)
        _parsed.value = (response, _REPARSE if ok else None)
        return ok
    try:
        data = orjson.loads(content)
    except orjson.JSONDecodeError:
        data = None
    _parsed.value = (response, data)
    return isinstance(data, dict)


_REPARSE = object()
_SPACE = b" \t\r\n"


def _looks_like_object(content: bytes) -> bool:
    """Whether ``content`` begins with ``{`` and ends with ``}`` (JSON whitespace aside)."""
    head = content[:64].lstrip(_SPACE)
    tail = content[-64:].rstrip(_SPACE)
    return head[:1] == b"{" and tail[-1:] == b"}"


def _json_int(text: str) -> int | float:
    value = int(text)
    # orjson's rule: integers outside the 64-bit range become floats
    return value if -(1 << 63) <= value < (1 << 64) else float(text)


def _json_float(text: str) -> float:
    value = float(text)
    if math.isinf(value):
        raise ValueError(f"number is infinity when parsed as double: {text[:40]}")
    return value


def _json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


#: A ``\\u`` escape of a UTF-16 surrogate (the one case the two parsers read differently).
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89abcdefABCDEF]")


def parse_large_body(text: str) -> Any:
    """Parse the JSON ``text`` of a large body; ``None`` when it is not JSON.

    Python's ``json`` parses a ``str`` in place, so the text and the parsed data are the
    only forms in memory (orjson copies its input before it parses: a third form). The
    result is orjson's for every input: integers outside the 64-bit range are floats,
    ``NaN``, ``Infinity`` and numbers that overflow a double are refused, and a text with
    a surrogate escape (``\\ud800``, which the two parsers treat differently) is parsed
    by orjson itself.
    """
    if _SURROGATE_ESCAPE.search(text):
        try:
            return orjson.loads(text)
        except orjson.JSONDecodeError:
            return None
    try:
        return json.loads(
            text, parse_int=_json_int, parse_float=_json_float, parse_constant=_json_constant
        )
    except (ValueError, RecursionError):  # json.JSONDecodeError is a ValueError
        return None


def answers_request(
    response: requests.Response, url: str, body: Mapping[str, Any] | None, query: Any
) -> bool:
    """Whether a cached answer holds the request that was made: same path, same body/query.

    Each cache entry's checksum proves the entry is as written, but not that it is the
    entry of this request: damage to a SQLite index can make one key lead to another
    request's intact entry. The entry holds the request it answers (its first redirect
    hop's, when redirects were followed), compared here with the one just made.
    """
    first = response.history[0] if getattr(response, "history", None) else response
    stored = getattr(first, "request", None)
    if stored is None or not stored.url:
        return False
    sent, kept = urlsplit(url), urlsplit(stored.url)
    if (kept.path, kept.netloc) != (sent.path, sent.netloc):
        return False
    if body is not None:
        try:
            return orjson.loads(stored.body or b"null") == body
        except orjson.JSONDecodeError:
            return False
    return dict(parse_qsl(kept.query, keep_blank_values=True)) == dict(query or {})


def take_body(
    response: requests.Response, *, release_cached: bool = False
) -> tuple[str | None, Any]:
    """``(text, data)`` of a 200 answer: its exact text and its parsed JSON (``None`` if not).

    Reuses the parse :func:`_cacheable` made. A large body is decoded first, its bytes are
    released from ``response``, and then the text is parsed (:func:`parse_large_body`), so
    at most two forms of the body (bytes and text, then text and parsed data) are in memory
    together. A cache hit's bytes are released only with ``release_cached`` (a backend
    that deserializes each hit: SQLite, files, Redis); the memory backend's answer is its
    own stored object.
    """
    stash = getattr(_parsed, "value", None)
    _parsed.value = None
    data = stash[1] if stash is not None and stash[0] is response else _REPARSE
    if data is None:
        return None, None
    content = response.content
    try:
        text = content.decode("utf-8")
    except UnicodeDecodeError:
        return None, None
    if data is _REPARSE:
        large = len(content) > KEEP_PARSE_BYTES
        if large and (release_cached or not getattr(response, "from_cache", False)):
            raw = getattr(response, "raw", None)
            if getattr(raw, "_body", None) is content:  # a cache hit's raw response, which
                raw._body, raw._fp = None, io.BytesIO()  # requests-cache rebuilds from it
            del content  # held by nothing else once the text is made (and the cache
            response._content = None  # entry of a fresh answer, if any, is written)
        else:
            del content
        data = parse_large_body(text) if large else _orjson_or_none(text)
    return (text, data) if isinstance(data, dict) else (None, None)


def _orjson_or_none(text: str) -> Any:
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


def _shallow(response: requests.Response) -> requests.Response:
    """A shallow copy that keeps ``raw`` (``copy.copy`` goes through ``__getstate__``,
    which drops it)."""
    twin = object.__new__(type(response))
    twin.__dict__.update(response.__dict__)
    return twin


def _redacting_save(save: Any) -> Any:
    """Wrap a backend's ``save_response`` so the redirect history it stores has no key.

    requests-cache redacts ``ignored_parameters`` from the request and headers of the response
    it saves, but stores ``response.history`` (the redirect hops, each with the request that
    was sent, key header included) as received. The wrapper hands it copies of the hops whose
    requests carry no key header; the backend's own save (and its error handling, e.g. the
    Redis cache's) is unchanged.
    """

    def save_response(response: requests.Response, *args: Any, **kwargs: Any) -> Any:
        if response.history:
            response = _shallow(response)
            hops = []
            for hop in response.history:
                hop = _shallow(hop)
                if hop.request is not None:
                    hop.request = hop.request.copy()
                    if KEY_HEADER in hop.request.headers:
                        hop.request.headers[KEY_HEADER] = "REDACTED"
                hops.append(hop)
            response.history = hops
        return save(response, *args, **kwargs)

    return save_response


def _session_class() -> type:
    from requests_cache import CachedSession

    class ServiceSession(CachedSession):
        """A ``CachedSession`` that keeps the key with the service's origin.

        A redirect is followed only to the same origin (scheme, host, port) as the configured
        base URL; a redirect anywhere else raises :class:`~dentalkit.errors.RedirectRefusedError`
        before the next hop is sent, so the key is never sent to another server (requests
        itself strips only ``Authorization`` on a host change, not ``x-api-key``).
        """

        service_origin: tuple[str, str, int | None] | None = None

        def rebuild_auth(self, prepared_request: Any, response: Any) -> None:
            target = prepared_request.url or ""
            allowed = self.service_origin or origin(response.request.url or "")
            if origin(target) != allowed:
                prepared_request.headers.pop(KEY_HEADER, None)
                scheme, host, port = origin(target)
                source = urlsplit(response.request.url or "")
                raise RedirectRefusedError(
                    f"{response.request.method} {source.path}: the service answered "
                    f"{response.status_code} redirecting to {scheme}://{host}:{port}, another "
                    f"origin than the configured service ({allowed[0]}://{allowed[1]}:{allowed[2]}); "
                    "dentalkit follows redirects only within the service's origin, so the API "
                    "key is never sent elsewhere. Not followed. If the service has moved, set "
                    "the new base URL (DENTALKIT_BASE_URL / settings.base_url)"
                )
            check_service_url(target, what="redirect target")
            super().rebuild_auth(prepared_request, response)

    return ServiceSession


_SESSION_CLASS: type | None = None


def make_session(
    cache: str | None,
    *,
    expire_after: float | timedelta | None,
    verify: bool | str,
    user_agent: str,
    base_url: str | None = None,
    pool_size: int = 64,
    max_response_bytes: int | None = None,
) -> requests.Session:
    """A requests-cache ``CachedSession`` configured as dentalkit needs it.

    POST and GET are cached; only status 200 with a JSON-object body is stored; the
    ``x-api-key`` header is left out of the cache key **and** redacted from everything stored
    (requests-cache ``ignored_parameters``, applied to redirect hops too);
    ``expire_after=None`` never expires. Redirects are followed within the origin of
    ``base_url`` only; bodies longer than ``max_response_bytes`` raise
    :class:`~dentalkit.errors.ResponseTooLargeError`.
    """
    from requests_cache import DEFAULT_IGNORED_PARAMS, NEVER_EXPIRE

    global _SESSION_CLASS
    if _SESSION_CLASS is None:
        _SESSION_CLASS = _session_class()
    backend, kwargs = cache_backend(cache)
    session = _SESSION_CLASS(
        backend=backend,
        allowable_methods=("GET", "POST"),
        allowable_codes=(200,),
        ignored_parameters=[*DEFAULT_IGNORED_PARAMS, KEY_HEADER],
        expire_after=NEVER_EXPIRE if expire_after is None else expire_after,
        filter_fn=_cacheable,
        stale_if_error=False,
        **kwargs,
    )
    session.cache.save_response = _redacting_save(session.cache.save_response)
    if backend == "sqlite":
        write_large_entries_in_pieces(session.cache.responses)
    if base_url is not None:
        session.service_origin = origin(base_url)
    limit = None if max_response_bytes is None else int(max_response_bytes)
    session.hooks["response"].append(body_reader(limit))
    adapter = DeadlineAdapter(pool_connections=4, pool_maxsize=pool_size, max_retries=0)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    # The environment (HTTPS_PROXY/NO_PROXY, REQUESTS_CA_BUNDLE) is read once, here, for the
    # one service this session talks to, instead of on every request (requests scans all
    # environment variables twice per request when trust_env is on).
    session.trust_env = False
    if base_url is not None:
        session.proxies = requests.utils.get_environ_proxies(base_url)
    if verify is True:
        verify = os.environ.get("REQUESTS_CA_BUNDLE") or os.environ.get("CURL_CA_BUNDLE") or True
    session.verify = verify
    session.headers["User-Agent"] = user_agent
    session.headers["Accept"] = "application/json"
    return session


# ---- retries ---------------------------------------------------------------------------


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP date); ``None`` if absent.

    >>> parse_retry_after("3")
    3.0
    >>> parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0)
    10.0
    """
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        return max(float(value), 0.0)
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    now = time.time() if now is None else now
    return max(when.timestamp() - now, 0.0)


def backoff_delay(
    attempt: int,
    *,
    base: float,
    cap: float,
    retry_after: float | None = None,
    rng: random.Random | None = None,
) -> float:
    """Seconds to wait before retry number ``attempt + 1`` (``attempt`` counts from 0).

    Exponential backoff with *full jitter* (a uniform draw in ``[0, min(cap, base·2^attempt)]``,
    AWS Architecture Blog, "Exponential Backoff And Jitter", 2015). A server ``Retry-After``
    wins when it is longer; the result never exceeds ``cap``.
    """
    draw = (rng or random).uniform(0.0, min(cap, base * (2.0**attempt)))
    if retry_after is not None:
        draw = max(draw, retry_after)
    return min(draw, cap)


# ---- errors ----------------------------------------------------------------------------


def scrub(text: str, key: str) -> str:
    """``text`` with every occurrence of ``key`` replaced by ``***`` (defence in depth)."""
    return text.replace(key, "***") if key else text


def api_error(ep: Endpoint, resp: requests.Response, patient_id: str | None, key: str) -> ApiError:
    """The typed error of a non-200 answer, with the server's ``{error, message}`` fields."""
    text = scrub(resp.content.decode("utf-8", "replace"), key)
    error = message = None
    try:
        parsed = orjson.loads(resp.content)
        if isinstance(parsed, dict):
            error = parsed.get("error") if isinstance(parsed.get("error"), str) else None
            message = parsed.get("message") if isinstance(parsed.get("message"), str) else None
    except ValueError:
        pass
    kwargs: dict[str, Any] = {
        "error": error,
        "message": scrub(message, key) if message else message,
        "endpoint": ep.path,
        "patient_id": patient_id,
        "body": text[:2000],
    }
    if resp.status_code == 429:
        kwargs["retry_after"] = parse_retry_after(resp.headers.get("Retry-After"))
    return api_error_for_status(resp.status_code, **kwargs)
