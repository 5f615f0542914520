"""HTTP plumbing of the sandbox: the spec's error shape and the v2 fast path.

:class:`SandboxApp` answers the ``/api/v2`` routes straight from the ASGI scope (a dict
lookup, no FastAPI middleware, routing or dependency solving: see
``benchmarks/sandbox.py``) and hands every other path to FastAPI. What a v2 request is
answered with is decided in :mod:`dentalkit.sandbox.app`; nothing here knows about
keys, faults or the simulator.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

import orjson
from fastapi import FastAPI
from fastapi.responses import Response
from starlette.requests import ClientDisconnect

from dentalkit.endpoints import Endpoint

__all__ = [
    "UNAUTHORIZED_BODY",
    "Reply",
    "SandboxApp",
    "SandboxHeader",
    "V2Request",
    "error_payload",
    "error_response",
    "send_reply",
]

log = logging.getLogger("dentalkit.sandbox")

_REASONS = {
    400: "Bad Request",
    401: "Unauthorized",
    403: "Forbidden",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Payload Too Large",
    415: "Unsupported Media Type",
    429: "Too Many Requests",
    500: "Internal Server Error",
    502: "Bad Gateway",
    503: "Service Unavailable",
}
#: The exact 401 body the spec prescribes (Authentication 6).
UNAUTHORIZED_BODY = orjson.dumps(
    {"error": "Unauthorized", "message": "Invalid or missing API key", "statusCode": 401}
)


def error_payload(status: int, message: str) -> bytes:
    """A body in the spec's error shape ``{error, message, statusCode}``."""
    return orjson.dumps(
        {"error": _REASONS.get(status, "Error"), "message": message, "statusCode": status}
    )


def error_response(status: int, message: str, headers: dict[str, str] | None = None) -> Response:
    """A response in the spec's error shape ``{error, message, statusCode}``."""
    return Response(
        error_payload(status, message),
        status_code=status,
        media_type="application/json",
        headers=headers,
    )


class SandboxHeader:
    """Pure ASGI middleware adding ``X-Sandbox: true`` to every response."""

    def __init__(self, app: Any) -> None:
        self.app = app

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def send_with_header(message: dict) -> None:
            if message["type"] == "http.response.start":
                message.setdefault("headers", [])
                message["headers"] = [*message["headers"], (b"x-sandbox", b"true")]
            await send(message)

        await self.app(scope, receive, send_with_header)


#: What every v2 answer carries besides its own headers (see ``send_reply``).
JSON_HEADERS = ((b"content-type", b"application/json"), (b"x-sandbox", b"true"))


class V2Request:
    """The parts of a v2 request the sandbox reads, straight from the ASGI scope.

    The v2 routes are the sandbox's hot path (benchmarks/sandbox.py); a starlette
    ``Request`` and ``Response`` per call cost more than the rest of the HTTP layer, so
    headers are looked up in one dict (first occurrence wins, as in starlette's
    ``Headers``; names are lower-case bytes in ASGI) and the answer is sent as two
    ASGI messages.
    """

    __slots__ = ("headers", "receive", "scope")

    def __init__(self, scope: dict, receive: Any) -> None:
        self.scope = scope
        self.receive = receive
        self.headers = {k: v for k, v in reversed(scope["headers"])}

    def header(self, name: bytes) -> str | None:
        value = self.headers.get(name)
        return None if value is None else value.decode("latin-1")

    async def body(self) -> AsyncIterator[bytes]:
        """The body's chunks (as starlette's ``Request.stream``)."""
        while True:
            message = await self.receive()
            if message["type"] == "http.request":
                chunk = message.get("body", b"")
                if chunk:
                    yield chunk
                if not message.get("more_body", False):
                    return
            elif message["type"] == "http.disconnect":
                raise ClientDisconnect()


async def send_reply(send: Any, status: int, payload: bytes, headers: dict[str, str]) -> None:
    """Send one JSON answer: the headers starlette's ``Response`` would send, plus
    ``X-Sandbox: true``."""
    raw = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    raw.append((b"content-length", str(len(payload)).encode("latin-1")))
    raw.extend(JSON_HEADERS)
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": payload})


#: An answer of a v2 route: status, JSON body, extra headers.
Reply = tuple[int, bytes, dict[str, str]]


class SandboxApp(FastAPI):
    """FastAPI for the sandbox-only routes; the /api/v2 routes are answered in front of it.

    A v2 request is looked up in ``v2_routes`` and answered by ``v2_handle`` (both set by
    :func:`dentalkit.sandbox.app.create_app`) without FastAPI's middleware stack (error,
    telemetry and body-limit middleware), route matching or dependency solving: those cost
    as much as the whole constant route of ``benchmarks/sandbox.py``. This class keeps the
    stack's one duty, answering a bug with a 500 in the spec's error shape.
    """

    v2_routes: dict[str, Endpoint]
    v2_handle: Any

    async def __call__(self, scope: dict, receive: Any, send: Any) -> None:
        endpoint = self.v2_routes.get(scope["path"]) if scope["type"] == "http" else None
        if endpoint is None:
            await super().__call__(scope, receive, send)
            return
        request = V2Request(scope, receive)
        if scope["method"] != endpoint.method:
            message = f"{scope['method']} is not allowed on {scope['path']}"
            reply = (405, error_payload(405, message), {"Allow": endpoint.method})
        else:
            try:
                reply = await self.v2_handle(endpoint, request)
            except ClientDisconnect:  # the client went away mid-request: nothing to answer
                return
            except Exception as exc:
                log.exception("sandbox bug while answering %s", scope["path"])
                message = f"sandbox bug ({type(exc).__name__}); please report it"
                await send_reply(send, 500, error_payload(500, message), {})
                raise
        await send_reply(send, *reply)
