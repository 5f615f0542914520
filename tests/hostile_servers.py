"""Small hostile HTTP servers on loopback for the key-leak and bounds tests.

A :class:`Recorder` accepts anything and records every request (path and headers): it stands
for "another host" that must never see the key. A :class:`Service` plays a service under
``/api/v2`` that answers each path with a scripted response: a JSON object, a redirect
(same origin or elsewhere), or a huge body, declared or chunked.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class _Server:
    def __init__(self, handler: Callable[[BaseHTTPRequestHandler], None]) -> None:
        self.requests: list[dict[str, Any]] = []
        owner = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _any(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                owner.requests.append(
                    {
                        "method": self.command,
                        "path": self.path,
                        "headers": dict(self.headers.items()),
                        "body": body,
                    }
                )
                handler(self)

            do_GET = do_POST = _any  # noqa: N815 (http.server's method names)

            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.origin = f"http://127.0.0.1:{self.port}"
        self._thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self) -> _Server:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def headers_seen(self) -> str:
        return json.dumps([r["headers"] for r in self.requests])


def send(handler: BaseHTTPRequestHandler, status: int, body: bytes, **headers: str) -> None:
    handler.send_response(status)
    headers.setdefault("Content-Type", "application/json")
    for name, value in headers.items():
        handler.send_header(name.replace("_", "-"), value)
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    handler.wfile.write(body)


class Recorder(_Server):
    """Another origin: answers every request with a 200 JSON object and records it."""

    def __init__(self) -> None:
        super().__init__(lambda h: send(h, 200, b'{"Version": "elsewhere"}'))


class Service(_Server):
    """A scripted service: ``routes`` maps a path (``/api/v2/classifier``) to a callable
    ``(handler, server) -> None``; unknown paths get the minimal JSON answer."""

    def __init__(self, routes: dict[str, Callable[[BaseHTTPRequestHandler, Service], None]]):
        self.routes = routes

        def handle(h: BaseHTTPRequestHandler) -> None:
            path = h.path.split("?")[0]
            route = self.routes.get(path)
            if route is None:
                body = self.requests[-1]["body"]
                try:
                    req = json.loads(body) if body else {}
                except ValueError:
                    req = {}
                doc = {
                    "PatientID": req.get("PatientID"),
                    "TimeStamp": req.get("TimeStamp"),
                    "Version": "hostile-1",
                }
                send(h, 200, json.dumps(doc).encode())
            else:
                route(h, self)

        super().__init__(handle)
        self.base_url = self.origin + "/api/v2"


def redirect_to(location: str, status: int = 307):
    """A route that redirects to ``location`` (absolute, or a path on the same server)."""

    def route(h: BaseHTTPRequestHandler, server: Service) -> None:
        send(h, status, b"", Location=location)

    return route


def huge(size: int, chunked: bool = False):
    """A route answering a 200 of ``size`` bytes, with Content-Length or chunked."""

    def route(h: BaseHTTPRequestHandler, server: Service) -> None:
        payload = b'{"x": "' + b"a" * max(size - 10, 0) + b'"}'
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        if not chunked:
            h.send_header("Content-Length", str(len(payload)))
            h.end_headers()
            h.wfile.write(payload)
            return
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        try:
            for i in range(0, len(payload), 1 << 16):
                piece = payload[i : i + (1 << 16)]
                h.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
            h.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client stopped reading at its limit

    return route


def cut_short(body: bytes, sent: int, times: int | None = None):
    """A route declaring ``Content-Length: len(body)`` that sends ``sent`` bytes and closes.

    With ``times``, only the first ``times`` requests to the route are cut short; later
    ones get the whole body (a flaky proxy).
    """
    seen = [0]

    def route(h: BaseHTTPRequestHandler, server: Service) -> None:
        seen[0] += 1
        whole = times is not None and seen[0] > times
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body if whole else body[:sent])
        h.wfile.flush()
        if not whole:
            h.close_connection = True  # the server closes: the client sees a short body

    return route


def chunked_cut(body: bytes, sent: int):
    """A chunked answer whose first chunk announces ``len(body)`` bytes, sends ``sent``, closes."""

    def route(h: BaseHTTPRequestHandler, server: Service) -> None:
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Transfer-Encoding", "chunked")
        h.end_headers()
        h.wfile.write(f"{len(body):x}\r\n".encode() + body[:sent])
        h.wfile.flush()
        h.close_connection = True

    return route


def bad_encoding():
    """A 200 declaring ``Content-Encoding: gzip`` whose body is not gzip."""

    def route(h: BaseHTTPRequestHandler, server: Service) -> None:
        payload = b"\x1f\x8b\x08\x00 this is not gzip data at all"
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Encoding", "gzip")
        h.send_header("Content-Length", str(len(payload)))
        h.end_headers()
        h.wfile.write(payload)

    return route


def trickle(body: bytes, every: float, headers_too: bool = False):
    """A 200 sent one byte every ``every`` seconds (the body; with ``headers_too`` the
    status line and headers as well): it never trips a read timeout longer than ``every``."""
    import time

    def route(h: BaseHTTPRequestHandler, server: Service) -> None:
        head = (
            b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
            + f"Content-Length: {len(body)}\r\n\r\n".encode()
        )
        try:
            if headers_too:
                stream = head + body
            else:
                h.wfile.write(head)
                h.wfile.flush()
                stream = body
            for i in range(len(stream)):
                h.wfile.write(stream[i : i + 1])
                h.wfile.flush()
                time.sleep(every)
        except OSError:
            pass  # the client gave up and closed the connection
        h.close_connection = True

    return route
