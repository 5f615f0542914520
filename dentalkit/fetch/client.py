"""The cached, retrying client of the Dental Image Analysis Service (interface v2).

One method per endpoint, generated from the registry (:mod:`dentalkit.endpoints`), plus
:meth:`Client.call`. Every call goes through a requests-cache ``CachedSession``: a repeated
request is answered from the cache without touching the network, and the ``x-api-key``
header is neither part of the cache key nor stored.

Examples
--------
>>> from dentalkit.fetch.client import Client
>>> from dentalkit.sandbox import running
>>> with running() as sb:
...     client = Client(sb.base_url, api_key=sb.api_key, cache="memory")
...     url = "https://images.example.org/P001/ceph.png"
...     res = client.ceph_lateral_points("P001", "2024-03-05", url)
...     again = client.ceph_lateral_points("P001", "2024-03-05", url)
...     res.status_code, res.from_cache, again.from_cache, len(res.data["Results"])
(200, False, True, 169)
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import sqlite3
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

import requests

from dentalkit import settings
from dentalkit.endpoints import API_PREFIX, ENDPOINTS, Endpoint, get_endpoint
from dentalkit.errors import (
    ConfigurationError,
    DamagedFileError,
    IncompleteResponseError,
    InputError,
    ResponseFormatError,
    TransportError,
)
from dentalkit.fetch._build import build_body, build_query
from dentalkit.fetch._download import download_output_image
from dentalkit.fetch._http import (
    KEY_HEADER,
    USAGE_HEADER_PREFIXES,
    Secret,
    answers_request,
    api_error,
    backoff_delay,
    cache_description,
    check_service_url,
    make_session,
    normalize_cache,
    parse_retry_after,
    quarantine_cache,
    request_key,
    scrub,
    take_body,
)
from dentalkit.fetch._methods import endpoint_method
from dentalkit.fetch._result import OUTPUT_LINK_TTL, ApiResult
from dentalkit.fetch._transfer import deadline_scope, incomplete_reason

__all__ = [
    "OUTPUT_LINK_TTL",
    "ApiResult",
    "Client",
    "ClientSpec",
    "download_output_image",
    "get_client",
    "request_key",
]

log = logging.getLogger("dentalkit")

_DEFAULT: Any = object()


@dataclass(frozen=True, slots=True)
class ClientSpec:
    """Everything needed to build a :class:`Client`: picklable, so workers build their own.

    The key is a :class:`~dentalkit.fetch._http.Secret` (hidden from ``repr``); pickling a spec
    to a worker process sends it along, as it must.
    """

    base_url: str
    api_key: Secret = field(repr=False)
    cache: str | None
    expire_after: float | timedelta | None
    timeout: tuple[float, float]
    max_retries: int
    backoff_base: float
    backoff_max: float
    verify: bool | str
    user_agent: str
    max_response_bytes: int | None = None
    request_deadline: float | None = None


_CLIENTS: dict[ClientSpec, Client] = {}
_CLIENTS_LOCK = threading.Lock()


def get_client(spec: ClientSpec) -> Client:
    """The process-wide :class:`Client` for ``spec`` (built once per process, then reused)."""
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(spec)
        if client is None:
            client = _CLIENTS[spec] = Client._from_spec(spec)
        return client


class Client:
    """Cached, retrying client of interface v2.

    Parameters
    ----------
    base_url : str, optional
        Service URL ending in ``/api/v2``; default :data:`dentalkit.settings.base_url`, then
        the ``DENTALKIT_BASE_URL`` environment variable. ``https://`` is required except for
        loopback hosts (the local sandbox).
    api_key : str, optional
        Default: the ``DENTALKIT_API_KEY`` environment variable. Kept in memory only; never
        shown by ``repr``, never stored in the cache, never put into an error message.
    cache : path, URL, "memory" or None, optional
        HTTP cache backend (see :data:`dentalkit.settings.cache`); default the settings value.
    expire_after, timeout, max_retries, backoff_base, backoff_max, verify, user_agent, \
max_response_bytes, request_deadline
        Override the values in :mod:`dentalkit.settings` for this client.
    heal_cache : bool, default True
        When the SQLite cache file cannot be opened (truncated, garbled), move it aside
        (``<file>.damaged-<UTC>``, never deleted; a warning is logged and
        :attr:`quarantined_cache` lists it) and start an empty cache, as ``dentalkit fetch``
        does. ``False`` raises :class:`~dentalkit.errors.DamagedFileError` instead.
        :func:`~dentalkit.fetch.cohort.fetch_cohort` also moves aside a cache that fails
        ``PRAGMA integrity_check`` and deletes damaged entries before it sends anything.

    Notes
    -----
    Proxy variables (``HTTPS_PROXY``, ``NO_PROXY`` …) and ``REQUESTS_CA_BUNDLE`` are read
    once, when the client is built, for its base URL.

    The key goes to the base URL's origin only: a redirect to another scheme, host or port
    is not followed (:class:`~dentalkit.errors.RedirectRefusedError`), and the redirect hops
    that are followed are stored in the cache with the key redacted.

    Raises
    ------
    ConfigurationError
        No key, no base URL, a base URL not ending in ``/api/v2``, or plain ``http://`` to a
        non-loopback host.
    """

    def __init__(
        self,
        base_url: str | None = None,
        api_key: str | None = None,
        cache: Any = _DEFAULT,
        *,
        expire_after: Any = _DEFAULT,
        timeout: tuple[float, float] | float | None = None,
        max_retries: int | None = None,
        backoff_base: float | None = None,
        backoff_max: float | None = None,
        verify: bool | str | None = None,
        user_agent: str | None = None,
        max_response_bytes: int | None = None,
        request_deadline: Any = _DEFAULT,
        heal_cache: bool = True,
    ) -> None:
        base = settings.service_url(base_url)
        if not base:
            raise ConfigurationError(
                f"no service URL: pass Client(base_url=...), set dentalkit.settings.base_url or "
                f"the {settings.base_url_env} environment variable (it ends in {API_PREFIX}). "
                "To work without the service, start the local sandbox: dentalkit.sandbox.running()"
            )
        base = check_service_url(base.rstrip("/"))
        if not base.endswith(API_PREFIX):
            raise ConfigurationError(
                f"the base URL {base!r} must end in {API_PREFIX} (the interface version prefix; "
                f"every endpoint path is relative to it)"
            )
        key = api_key if api_key is not None else os.environ.get(settings.api_key_env)
        if not key:
            raise ConfigurationError(
                f"no API key: set the {settings.api_key_env} environment variable (from Python "
                "you may give the key to the client instead); for the local sandbox use the "
                "sandbox key that `dentalkit sandbox` prints"
            )
        t = settings.timeout if timeout is None else timeout
        if isinstance(t, int | float):
            t = (float(t), float(t))
        spec = ClientSpec(
            base_url=base,
            api_key=Secret(key),
            cache=normalize_cache(settings.cache if cache is _DEFAULT else cache),
            expire_after=settings.cache_expire_after if expire_after is _DEFAULT else expire_after,
            timeout=(float(t[0]), float(t[1])),
            max_retries=settings.max_retries if max_retries is None else int(max_retries),
            backoff_base=settings.backoff_base if backoff_base is None else float(backoff_base),
            backoff_max=settings.backoff_max if backoff_max is None else float(backoff_max),
            verify=settings.verify if verify is None else verify,
            user_agent=settings.user_agent if user_agent is None else user_agent,
            max_response_bytes=int(
                settings.max_response_bytes if max_response_bytes is None else max_response_bytes
            ),
            request_deadline=_deadline(
                settings.request_deadline if request_deadline is _DEFAULT else request_deadline
            ),
        )
        self._init(spec, heal_cache=heal_cache)

    @classmethod
    def _from_spec(cls, spec: ClientSpec) -> Client:
        obj = cls.__new__(cls)
        obj._init(spec)
        return obj

    def _init(self, spec: ClientSpec, heal_cache: bool = False) -> None:
        if spec.verify is False:
            log.warning("TLS verification is off for %s", spec.base_url)
        self._spec = spec
        #: Files of a damaged cache this client moved aside (``heal_cache=True``).
        self.quarantined_cache: list[str] = []

        def session() -> requests.Session:
            return make_session(
                spec.cache,
                expire_after=spec.expire_after,
                verify=spec.verify,
                user_agent=spec.user_agent,
                base_url=spec.base_url,
                max_response_bytes=spec.max_response_bytes,
            )

        try:
            self._session = session()
        except sqlite3.DatabaseError as exc:
            if not heal_cache:
                raise _damaged_cache(spec, exc) from None
            self.quarantined_cache = [str(p) for p in quarantine_cache(spec.cache)]
            self._session = session()
        self._rng = random.Random()
        self._sleep = time.sleep

    # ---- introspection ----------------------------------------------------------------
    @property
    def spec(self) -> ClientSpec:
        """Picklable settings of this client (see :func:`get_client`)."""
        return self._spec

    @property
    def base_url(self) -> str:
        return self._spec.base_url

    @property
    def session(self) -> requests.Session:
        """The underlying requests-cache ``CachedSession`` (``session.cache`` is the backend)."""
        return self._session

    def __repr__(self) -> str:
        return f"Client(base_url={self.base_url!r}, cache={cache_description(self._spec.cache)!r})"

    def __reduce__(self):  # rebuild from the spec in the receiving process
        return (get_client, (self._spec,))

    def close(self) -> None:
        """Close connections and the cache backend."""
        self._session.close()

    def _reopen(self) -> None:
        """Close and build the session again (after its cache file was moved aside)."""
        with contextlib.suppress(Exception):  # a damaged backend may fail to close
            self._session.close()
        self._init(self._spec, heal_cache=True)

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ---- calls ------------------------------------------------------------------------
    def call(
        self,
        endpoint: str | Endpoint,
        patient_id: str | None = None,
        timestamp: str | None = None,
        image_url: str | None = None,
        *,
        options: Mapping[str, Any] | None = None,
        refresh: bool = False,
        **params: Any,
    ) -> ApiResult:
        """Call any endpoint by registry name, path or slug.

        Parameters
        ----------
        endpoint : str or Endpoint
            ``"ceph_lateral_points"``, ``"/ceph-lateral-points"`` or ``"ceph-lateral-points"``.
        patient_id, timestamp, image_url : str
            The required body fields of an image endpoint (``PatientID``, ``TimeStamp``,
            ``ImageName``).
        options : mapping, optional
            Optional body fields by wire or Python name (``{"draw_contours": True}``);
            they may also be given as keyword arguments.
        refresh : bool
            Skip the cache read, call the service and store the fresh answer.
        **params
            Optional body fields, or for ``/tle`` the eleven ``p01``…``p11`` strings.

        Returns
        -------
        ApiResult

        Raises
        ------
        InputError
            Invalid arguments (nothing is sent).
        AuthError
            401, at once (not retried).
        BadRequestError
            Other 4xx (not retried).
        RateLimitedError, ServerError, TransportError, ResponseFormatError
            429, 5xx, connection failures/timeouts or malformed 200 bodies after all retries.
        """
        try:
            ep = get_endpoint(endpoint)
        except KeyError as exc:
            raise InputError(str(exc.args[0])) from None
        if ep.is_image:
            body = build_body(ep, patient_id, timestamp, image_url, {**(options or {}), **params})
            return self._send(ep, body=body, refresh=refresh, patient_id=patient_id)
        if patient_id is not None or image_url is not None:
            raise InputError(f"{ep.path} takes only the query parameters p01…p11 as keywords")
        query = build_query(ep, {**(options or {}), **params})
        return self._send(ep, query=query, refresh=refresh)

    def _send(
        self,
        ep: Endpoint,
        *,
        body: dict[str, Any] | None = None,
        query: dict[str, str] | None = None,
        refresh: bool = False,
        patient_id: str | None = None,
    ) -> ApiResult:
        spec = self._spec
        url = spec.base_url + ep.path
        key = spec.api_key.reveal()
        last: Exception | None = None
        for attempt in range(spec.max_retries + 1):
            retry_after: float | None = None
            bad_cache_entry = False
            try:
                with deadline_scope(spec.request_deadline) as deadline:
                    try:
                        resp = self._session.request(
                            ep.method,
                            url,
                            json=body,
                            params=query,
                            headers={KEY_HEADER: key},
                            timeout=spec.timeout,
                            force_refresh=refresh,
                        )
                    except requests.RequestException as exc:
                        why = incomplete_reason(exc, deadline)
                        if why is None:
                            raise
                        raise IncompleteResponseError(
                            f"{ep.method} {ep.path} for patient {patient_id!r}: {why}; "
                            "nothing was cached or stored"
                        ) from None
            except IncompleteResponseError as exc:
                last = IncompleteResponseError(scrub(str(exc), key))
            except sqlite3.DatabaseError as exc:
                raise _damaged_cache(spec, exc) from None
            except requests.exceptions.SSLError as exc:
                # A certificate that cannot be verified will not verify on a retry either.
                raise TransportError(
                    f"{ep.method} {ep.path} for patient {patient_id!r}: "
                    f"{type(exc).__name__}: {scrub(str(exc), key)} — the server's TLS "
                    "certificate could not be verified; check the base URL, or name the CA "
                    "bundle (PEM file) that signed it: the REQUESTS_CA_BUNDLE environment "
                    "variable (Python and the dentalkit command), or in Python "
                    "Client(verify='ca.pem') or settings.verify"
                ) from None
            except (requests.ConnectionError, requests.Timeout) as exc:
                last = TransportError(
                    f"{ep.method} {ep.path} for patient {patient_id!r}: "
                    f"{type(exc).__name__}: {scrub(str(exc), key)}"
                )
            except requests.RequestException as exc:
                raise TransportError(
                    f"{ep.method} {ep.path}: {type(exc).__name__}: {scrub(str(exc), key)}"
                ) from None
            else:
                status = resp.status_code
                if status == 200:
                    text, data = take_body(resp, release_cached=spec.cache is not None)
                    if getattr(resp, "from_cache", False) and not answers_request(
                        resp, url, body, query
                    ):
                        text = None  # another request's answer: a damaged cache
                    if text is None and getattr(resp, "cache_key", None):
                        # another request's answer, or a large body that does not parse:
                        # those are checked only after they were cached (_http._cacheable)
                        with contextlib.suppress(Exception):
                            self._session.cache.delete(resp.cache_key)
                    if text is not None:
                        result = self._result(ep, body, query, resp, text, data, attempt + 1)
                        log.debug(
                            "%s %s: %d characters %s",
                            ep.method,
                            ep.path,
                            len(text),
                            "from the cache" if result.from_cache else f"in {resp.elapsed}",
                        )
                        return result
                    bad_cache_entry = bool(getattr(resp, "from_cache", False))
                    if bad_cache_entry:
                        # the entry is deleted (by requests-cache, see _http._cacheable, or
                        # above): the next attempt goes to the service, at once
                        refresh = True
                        log.warning(
                            "%s %s for patient %r: the cached answer is damaged (its body is "
                            "not a JSON object, or it answers another request); evicted, "
                            "asking the service",
                            ep.method,
                            ep.path,
                            patient_id,
                        )
                    last = ResponseFormatError(
                        "a cached 200 answer was damaged (its body did not parse as a JSON "
                        "object, or it was the answer to another request); it was evicted "
                        "from the cache and the request sent to the service instead"
                        if bad_cache_entry
                        else "the service's 200 body is not a JSON object (truncated or not "
                        f"JSON); not kept in the cache, and the request was retried up to "
                        f"{spec.max_retries} time(s)",
                        endpoint=ep.path,
                        patient_id=patient_id,
                        timestamp=(body or {}).get("TimeStamp"),
                    )
                else:
                    err = api_error(ep, resp, patient_id, key)
                    if status != 429 and status < 500:
                        raise err
                    last = err
                    retry_after = parse_retry_after(resp.headers.get("Retry-After"))
            if attempt < spec.max_retries and bad_cache_entry:
                continue  # no wait: the service has not been asked yet
            if attempt < spec.max_retries:
                delay = backoff_delay(
                    attempt,
                    base=spec.backoff_base,
                    cap=spec.backoff_max,
                    retry_after=retry_after,
                    rng=self._rng,
                )
                log.info(
                    "%s %s: %s; retry %d/%d in %.2f s",
                    ep.method,
                    ep.path,
                    type(last).__name__,
                    attempt + 1,
                    spec.max_retries,
                    delay,
                )
                self._sleep(delay)
        assert last is not None
        raise last

    def _result(
        self,
        ep: Endpoint,
        body: dict[str, Any] | None,
        query: dict[str, str] | None,
        resp: requests.Response,
        text: str,
        data: dict[str, Any],
        attempts: int,
    ) -> ApiResult:
        from_cache = bool(getattr(resp, "from_cache", False))
        created = getattr(resp, "created_at", None)
        fetched = created.astimezone(UTC) if isinstance(created, datetime) else datetime.now(UTC)
        usage = {
            k.lower(): v
            for k, v in resp.headers.items()
            if k.lower().startswith(USAGE_HEADER_PREFIXES)
        }
        return ApiResult(
            endpoint=ep.name,
            request=dict(body if body is not None else query or {}),
            request_key=request_key(ep.method, ep.path, body, query),
            data=data,
            text=text,
            status_code=resp.status_code,
            from_cache=from_cache,
            fetched_at=fetched,
            usage=usage,
            attempts=1 if from_cache else attempts,
        )

    def download_output_image(self, result: Any, path: str | os.PathLike[str]) -> os.PathLike[str]:
        """Download the annotated output image of ``result`` to ``path`` (see
        :func:`dentalkit.fetch.client.download_output_image`)."""
        return download_output_image(
            result, path, verify=self._spec.verify, timeout=self._spec.timeout
        )


def _damaged_cache(spec: ClientSpec, exc: Exception) -> DamagedFileError:
    return DamagedFileError(
        spec.cache,
        "HTTP cache (SQLite)",
        f"{type(exc).__name__}: {exc}",
        "fetch_cohort(..., client=Client(...)) moves it aside (with its -wal and -shm files, "
        "never deleted) and asks the service again for what it held, as `dentalkit fetch` "
        "does; a new Client on it (heal_cache=True, the default) starts an empty cache. "
        "`dentalkit verify OUT --cache PATH` checks a cache without fetching",
    )


def _deadline(value: Any) -> float | None:
    """``settings.request_deadline`` checked: seconds > 0, or ``None`` (no deadline)."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise ConfigurationError(
            f"request_deadline must be a number of seconds > 0 or None, got {value!r}"
        )
    return float(value)


# ---- one method per endpoint, generated from the registry -----------------------------
for _ep in ENDPOINTS.values():
    setattr(Client, _ep.name, endpoint_method(_ep))
del _ep
