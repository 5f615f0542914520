"""How one HTTP attempt's answer is received (private): deadline, body streaming, size limit.

Three pieces, used by :func:`dentalkit.fetch._http.make_session` and the client:

* :class:`Deadline` and the :class:`DeadlineAdapter` — a total time limit per attempt
  (:data:`dentalkit.settings.request_deadline`). ``requests`` only knows a connect timeout
  and a read timeout *per socket read*, so a server that sends a byte a second holds a
  request for ever. The adapter's connections tell the attempt running in their thread which
  socket they use; one watchdog thread shuts that socket down when the attempt's deadline
  passes, so the blocked read ends at once (headers, body and redirect hops alike);
* :func:`body_reader` — a response hook that reads the body in 64 KiB pieces into one
  growing buffer (about 1× the body in memory, not a list of pieces joined into a second
  copy), refuses it past ``settings.max_response_bytes``, and refuses a body shorter than
  its ``Content-Length`` (a cut-short answer);
* the classification of what went wrong while receiving: :func:`incomplete_reason` says
  whether an exception means "an answer began and did not arrive whole" (cut short,
  undecodable, past the deadline) — retried like a dropped connection, and never a sign
  that the service is unreachable.
"""

from __future__ import annotations

import contextlib
import heapq
import http.client
import io
import itertools
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import requests
import urllib3
from requests.adapters import HTTPAdapter
from urllib3.connection import HTTPConnection, HTTPSConnection
from urllib3.connectionpool import HTTPConnectionPool, HTTPSConnectionPool

from dentalkit.errors import ResponseTooLargeError

__all__ = [
    "Deadline",
    "DeadlineAdapter",
    "body_reader",
    "deadline_scope",
    "incomplete_reason",
]

#: Bytes read from the socket per piece of a body.
CHUNK = 1 << 16

_current = threading.local()


class Deadline:
    """The deadline of one HTTP attempt: when it ends and the connection it is using.

    Created by :func:`deadline_scope`; the adapter's connections :meth:`bind` themselves to
    it when they connect or send (the first bind hands it to the watchdog, so an attempt
    answered by the cache costs nothing), and the watchdog calls :meth:`expire` when time
    is up.
    """

    __slots__ = ("_lock", "armed", "cancelled", "conn", "expired", "seconds", "when")

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.when = time.monotonic() + seconds
        self.conn: Any = None
        self.armed = False
        self.expired = False
        self.cancelled = False
        self._lock = threading.Lock()

    def bind(self, conn: Any) -> None:
        """Note the connection the attempt now uses (closed at once if time is already up)."""
        with self._lock:
            self.conn = conn
            late = self.expired or time.monotonic() >= self.when
            self.expired = late
            arm = not self.armed and not late
            self.armed = True
        if late:
            _shut(conn)
        elif arm:
            _WATCHDOG.watch(self)

    def expire(self) -> None:
        """Time is up: mark the attempt and shut its connection's socket down."""
        with self._lock:
            if self.cancelled:
                return
            self.expired = True
            conn = self.conn
        if conn is not None:
            _shut(conn)

    def cancel(self) -> None:
        """The attempt is over: the watchdog forgets it."""
        with self._lock:
            self.cancelled = True
            armed = self.armed
        if armed:
            _WATCHDOG.forget()


def _shut(conn: Any) -> None:
    """Shut a connection's socket down both ways: a read blocked on it returns at once."""
    sock = getattr(conn, "sock", None)
    if sock is not None:
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


class _Watchdog:
    """One daemon thread that expires deadlines in time order (a heap; no thread per call).

    Finished attempts are left in the heap and dropped when they come to its top, or all at
    once when they make up most of it, so it holds about the attempts in flight.
    """

    def __init__(self) -> None:
        self._heap: list[tuple[float, int, Deadline]] = []
        self._cond = threading.Condition()
        self._order = itertools.count()
        self._thread: threading.Thread | None = None
        self._finished = 0

    def watch(self, deadline: Deadline) -> None:
        with self._cond:
            heapq.heappush(self._heap, (deadline.when, next(self._order), deadline))
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="dentalkit-deadline", daemon=True
                )
                self._thread.start()
            self._cond.notify()

    def forget(self) -> None:
        with self._cond:
            self._finished += 1
            if self._finished > 256 and 2 * self._finished > len(self._heap):
                self._heap = [e for e in self._heap if not e[2].cancelled]
                heapq.heapify(self._heap)
                self._finished = 0

    def _run(self) -> None:
        while True:
            with self._cond:
                while not self._heap:
                    self._cond.wait()
                when, _, deadline = self._heap[0]
                if deadline.cancelled:
                    heapq.heappop(self._heap)
                    self._finished = max(self._finished - 1, 0)
                    continue
                wait = when - time.monotonic()
                if wait > 0:
                    self._cond.wait(wait)
                    continue
                heapq.heappop(self._heap)
            deadline.expire()


_WATCHDOG = _Watchdog()


@contextlib.contextmanager
def deadline_scope(seconds: float | None) -> Iterator[Deadline | None]:
    """Run one HTTP attempt of this thread under a total deadline of ``seconds``.

    Yields the :class:`Deadline` (``None`` when ``seconds`` is ``None``: no limit); after
    the block, ``deadline.expired`` says whether time ran out (the error the attempt raised
    is then the consequence of the closed socket).
    """
    if seconds is None:
        yield None
        return
    deadline = Deadline(float(seconds))
    previous = getattr(_current, "deadline", None)
    _current.deadline = deadline
    try:
        yield deadline
    finally:
        deadline.cancel()
        _current.deadline = previous


def _bind_current(conn: Any) -> None:
    deadline = getattr(_current, "deadline", None)
    if deadline is not None:
        deadline.bind(conn)


class _BindingMixin:
    """A urllib3 connection that binds itself to its thread's :class:`Deadline`."""

    def connect(self) -> None:
        _bind_current(self)
        super().connect()  # type: ignore[misc]
        _bind_current(self)  # the socket exists now

    def request(self, *args: Any, **kwargs: Any) -> None:
        _bind_current(self)  # a pooled connection is reused without connect()
        super().request(*args, **kwargs)  # type: ignore[misc]


class _HTTPConnection(_BindingMixin, HTTPConnection):
    pass


class _HTTPSConnection(_BindingMixin, HTTPSConnection):
    pass


class _HTTPPool(HTTPConnectionPool):
    ConnectionCls = _HTTPConnection


class _HTTPSPool(HTTPSConnectionPool):
    ConnectionCls = _HTTPSConnection


_POOLS = {"http": _HTTPPool, "https": _HTTPSPool}


class DeadlineAdapter(HTTPAdapter):
    """A ``requests`` adapter whose connections a :class:`Deadline` can close.

    Otherwise the plain ``HTTPAdapter`` (connection pool, proxies, TLS); through a proxy
    too, as the proxy manager builds its pools from the same classes.
    """

    def init_poolmanager(self, *args: Any, **kwargs: Any) -> None:
        super().init_poolmanager(*args, **kwargs)
        self.poolmanager.pool_classes_by_scheme = dict(_POOLS)

    def proxy_manager_for(self, proxy: str, **proxy_kwargs: Any) -> Any:
        manager = super().proxy_manager_for(proxy, **proxy_kwargs)
        if hasattr(manager, "pool_classes_by_scheme"):
            manager.pool_classes_by_scheme = dict(_POOLS)
        return manager


# ---- the body ----------------------------------------------------------------------------


def body_reader(limit: int | None) -> Any:
    """A response hook that reads the whole body, at most ``limit`` bytes (``None``: any).

    The body is read in :data:`CHUNK` pieces into one ``io.BytesIO`` whose buffer becomes
    the response's ``content`` without a copy, so a body costs about its own size while it
    arrives. A ``Content-Length`` above the limit is refused before reading; a body that
    grows past it is refused at that point (the connection is closed). A body shorter than
    its declared ``Content-Length`` (when not content-encoded) raises
    ``requests.exceptions.ChunkedEncodingError``, as ``urllib3`` does for a connection
    closed early. Answers already read (cache hits) are only measured.
    """

    def hook(response: requests.Response, **kwargs: Any) -> requests.Response:
        if getattr(response, "_content_consumed", False) or getattr(response, "from_cache", False):
            size = len(response.content or b"")
            if limit is not None and size > limit:
                raise too_large(response, f"{size:,} bytes received", limit)
            return response
        declared = response.headers.get("Content-Length", "").strip()
        expected = int(declared) if declared.isdigit() else None
        if limit is not None and expected is not None and expected > limit:
            response.close()
            raise too_large(response, f"{expected:,} bytes declared", limit)
        buffer = io.BytesIO()
        total = 0
        for chunk in response.iter_content(CHUNK):
            total += len(chunk)
            if limit is not None and total > limit:
                response.close()
                raise too_large(response, f"more than {limit:,} bytes sent", limit)
            buffer.write(chunk)
        encoded = response.headers.get("Content-Encoding", "identity").strip().lower()
        if expected is not None and total < expected and encoded in ("", "identity"):
            response.close()
            raise requests.exceptions.ChunkedEncodingError(
                f"the connection closed after {total:,} of the {expected:,} bytes its "
                "Content-Length declared"
            )
        response._content = buffer.getvalue()  # shares the buffer: no second copy
        response._content_consumed = True
        return response

    return hook


def too_large(response: requests.Response, what: str, limit: int) -> ResponseTooLargeError:
    """The error for an answer over ``settings.max_response_bytes``."""
    request = response.request
    path = urlsplit(request.url or "").path if request is not None else "?"
    method = request.method if request is not None else "?"
    return ResponseTooLargeError(
        f"the answer to {method} {path} is too large ({what}; the limit, "
        f"settings.max_response_bytes, is {limit:,} bytes). Nothing was cached or stored. "
        "If the service really sends answers this large, raise settings.max_response_bytes"
    )


# ---- what went wrong -------------------------------------------------------------------

#: Exceptions raised while an answer that had begun was being received.
_INCOMPLETE = (
    requests.exceptions.ChunkedEncodingError,
    requests.exceptions.ContentDecodingError,
    http.client.IncompleteRead,
    urllib3.exceptions.ProtocolError,
    urllib3.exceptions.DecodeError,
)


def incomplete_reason(exc: BaseException, deadline: Deadline | None) -> str | None:
    """Why an attempt's answer did not arrive whole, in words; ``None`` for other failures.

    ``deadline`` is the attempt's; once it expired, any failure of the attempt is its
    consequence (the watchdog closed the socket). Otherwise a body cut short (fewer bytes
    than declared, a chunked body that stopped) or one that could not be decoded (its
    ``Content-Encoding``) counts; a refused or failed connection does not.
    """
    if deadline is not None and deadline.expired:
        return (
            f"the answer did not finish within settings.request_deadline "
            f"({deadline.seconds:g} s); the connection was closed"
        )
    if isinstance(exc, requests.exceptions.ContentDecodingError | urllib3.exceptions.DecodeError):
        return f"the answer's body could not be decoded ({_short(exc)})"
    if isinstance(exc, _INCOMPLETE):
        return f"the answer was cut short ({_short(exc)})"
    return None


def _short(exc: BaseException) -> str:
    """The innermost message of a wrapped exception (``requests`` wraps urllib3's)."""
    while exc.args and isinstance(exc.args[0], BaseException):
        exc = exc.args[0]
    text = exc.args[0] if exc.args and isinstance(exc.args[0], str) else str(exc)
    return text if len(text) <= 300 else text[:299] + "…"
