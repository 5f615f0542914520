"""The sandbox's HTTP application: every v2 endpoint, driven by the registry.

Routes under ``/api/v2`` behave as the specification shapes them (auth, bodies, error
shape, quirks). Sandbox-only routes live under ``/_sandbox`` and never appear in the v2
OpenAPI document:

=====================================  ==================================================
``GET /``                               banner: this is a simulator, not the AI service
``GET /openapi.json``                   the v2 OpenAPI document, generated from the registry
``GET /_sandbox/truth``                 ground truth of a session (key required)
``GET|PUT /_sandbox/config``            noise, faults, clock offset (key required)
``GET /_sandbox/stats``                 request counters (key required)
``POST /_sandbox/reset``                zero the counters and the rate limiter (key required)
``GET /_sandbox/images/{kind}/…``       synthetic input images (no key, like a public host)
``GET /_sandbox/output/{slug}.png``     annotated output images behind signed 72 h links
=====================================  ==================================================

Every response carries ``X-Sandbox: true``.
"""

from __future__ import annotations

import asyncio
import hmac
import logging
from collections import Counter
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import Response
from starlette.datastructures import QueryParams
from starlette.exceptions import HTTPException as StarletteHTTPException

from dentalkit.endpoints import API_PREFIX, ENDPOINTS, Endpoint
from dentalkit.openapi import openapi_document
from dentalkit.sandbox import links, simulate
from dentalkit.sandbox._asgi import UNAUTHORIZED_BODY as UNAUTHORIZED_BODY
from dentalkit.sandbox._asgi import (
    Reply,
    SandboxApp,
    SandboxHeader,
    V2Request,
    error_payload,
)
from dentalkit.sandbox._asgi import error_response as error_response
from dentalkit.sandbox.config import SandboxConfig
from dentalkit.sandbox.faults import FaultInjector, RateLimiter
from dentalkit.sandbox.validate import (
    InvalidRequestError,
    request_identity,
    validate_body,
    validate_tle_query,
)

__all__ = ["BANNER", "Stats", "create_app"]

log = logging.getLogger("dentalkit.sandbox")

BANNER = (
    "dentalkit sandbox: a local simulator of the Dental Image Analysis Service interface v2. "
    "It answers from synthetic anatomy with known ground truth and runs no AI model."
)


class Stats:
    """Request counters of one sandbox (v2 routes only).

    ``by_request`` counts each distinct request (endpoint and body identity) so that
    tests can prove nothing was asked twice. It holds one entry per distinct request
    (~150 bytes), so a long-running sandbox keeps at most ``by_request_limit`` of them;
    requests first seen after that are counted in ``by_request_untracked`` instead.
    """

    #: Distinct requests tracked in ``by_request`` (~30 MB at the limit).
    BY_REQUEST_LIMIT = 200_000

    def __init__(self, by_request_limit: int = BY_REQUEST_LIMIT) -> None:
        self.by_request_limit = by_request_limit
        self.reset()

    def reset(self) -> None:
        self.total = 0
        self.by_path: Counter[str] = Counter()
        self.by_status: Counter[int] = Counter()
        self.by_request: Counter[str] = Counter()
        self.by_request_untracked = 0

    def count_request(self, identity: str) -> None:
        """Count one validated request by its identity (see ``request_identity``)."""
        if identity in self.by_request or len(self.by_request) < self.by_request_limit:
            self.by_request[identity] += 1
        else:
            self.by_request_untracked += 1

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "by_path": dict(self.by_path),
            "by_status": {str(k): v for k, v in self.by_status.items()},
            "by_request": dict(self.by_request),
            "by_request_untracked": self.by_request_untracked,
        }


def create_app(config: SandboxConfig | None = None) -> FastAPI:
    """Build the sandbox ASGI application for ``config`` (see :class:`SandboxConfig`).

    The application is assembled by concern, one function each: the v2 routes
    (:func:`_v2_handler`), the banner and OpenAPI document (:func:`_add_public_routes`),
    the key-protected control routes (:func:`_add_control_routes`), the image routes
    (:func:`_add_image_routes`) and the error shape (:func:`_add_error_handlers`). All of
    them share the mutable state kept on ``app.state``: ``config``, ``stats``,
    ``injector`` and ``limiter`` (replaced when the faults change).
    """
    config = config or SandboxConfig()
    app = SandboxApp(
        title="dentalkit sandbox",
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )
    state = app.state
    state.config = config
    state.stats = Stats()
    state.injector = FaultInjector(config.faults)
    state.limiter = _new_limiter(config)
    authorised = _key_check(config)

    app.v2_routes = {API_PREFIX + e.path: e for e in ENDPOINTS.values()}
    app.v2_handle = _v2_handler(app, config, authorised)
    _add_public_routes(app, config)
    _add_control_routes(app, config, authorised)
    _add_image_routes(app, config)
    _add_error_handlers(app)
    app.add_middleware(SandboxHeader)
    return app


def _new_limiter(config: SandboxConfig) -> RateLimiter:
    """A fresh rate limiter for the configured faults (no requests counted yet)."""
    return RateLimiter(config.faults.rate_limit, config.faults.rate_window)


def _key_check(config: SandboxConfig) -> Callable[[str | None], str | None]:
    """A function returning the ``x-api-key`` header value if it is an accepted key, else None."""
    keys = [k.encode() for k in config.accepted_keys()]

    def authorised(given: str | None) -> str | None:
        if given is None:
            return None
        raw = given.encode()
        ok = False
        for k in keys:  # compare with every key: no early exit, constant time per key
            ok |= hmac.compare_digest(raw, k)
        return given if ok else None

    return authorised


# ---- v2 routes ----------------------------------------------------------------------


async def _read_json(request: V2Request, limit: int) -> Any:
    """The request's JSON body, refused (413, 415, 400) if too large, not JSON or invalid."""
    declared = request.header(b"content-length")
    if declared is not None and declared.isdigit() and int(declared) > limit:
        raise _RejectedError(413, f"request body exceeds the sandbox limit of {limit} bytes")
    chunks, size = [], 0
    async for chunk in request.body():
        size += len(chunk)
        if size > limit:
            raise _RejectedError(413, f"request body exceeds the sandbox limit of {limit} bytes")
        chunks.append(chunk)
    ctype = request.header(b"content-type") or ""
    if "json" not in ctype.lower():
        raise _RejectedError(415, "Content-Type must be application/json")
    try:
        return orjson.loads(b"".join(chunks))
    except orjson.JSONDecodeError as exc:
        raise _RejectedError(400, f"request body is not valid JSON: {exc}") from None


class _RootUrls:
    """The server root as the client addressed it (cached per scheme and Host header)."""

    def __init__(self) -> None:
        self.roots: dict[tuple[str, str], str] = {}

    def __call__(self, request: V2Request) -> str:
        scope = request.scope
        key = (scope.get("scheme", "http"), request.header(b"host") or "")
        root = self.roots.get(key)
        if root is None:
            if len(self.roots) >= 64:  # Host headers are the client's to choose: stay bounded
                self.roots.clear()
            root = self.roots[key] = str(Request(scope).base_url)
        return root


def _v2_handler(
    app: FastAPI, config: SandboxConfig, authorised: Callable[[str | None], str | None]
) -> Callable[[Endpoint, V2Request], Awaitable[Reply]]:
    """The answer to a v2 request: key, rate limit, validation, faults, simulated body.

    Counts every request in ``app.state.stats`` (by path, by status, and each validated
    request by its identity).
    """
    state = app.state
    root_url = _RootUrls()

    async def handle(endpoint: Endpoint, request: V2Request) -> Reply:
        stats: Stats = state.stats
        stats.total += 1
        stats.by_path[endpoint.path] += 1
        reply = await answer(endpoint, request)
        stats.by_status[reply[0]] += 1
        return reply

    async def answer(endpoint: Endpoint, request: V2Request) -> Reply:
        key = authorised(request.header(b"x-api-key"))
        if key is None:
            return 401, UNAUTHORIZED_BODY, {}
        allowed, usage = state.limiter.hit(key)
        if not allowed:
            limiter = state.limiter
            message = f"rate limit of {limiter.limit} requests per {limiter.window:g} s exceeded"
            return 429, error_payload(429, message), usage
        try:
            if endpoint.is_image:
                data = validate_body(endpoint, await _read_json(request, config.max_body_bytes))
            else:
                query = QueryParams(request.scope["query_string"])
                data = validate_tle_query(endpoint, list(query.multi_items()))
        except InvalidRequestError as exc:
            return 400, error_payload(400, str(exc)), usage
        except _RejectedError as exc:
            return exc.status, error_payload(exc.status, exc.message), usage
        state.stats.count_request(request_identity(endpoint, data))

        decision = state.injector.decide()
        if decision.delay:
            await asyncio.sleep(decision.delay)
        if decision.status is not None:
            message = "simulated server fault (sandbox fault injection); retry later"
            return decision.status, error_payload(decision.status, message), usage
        root = root_url(request) if endpoint.is_image and endpoint.output_image else ""
        payload = _simulated_payload(config, endpoint, data, root)
        if decision.malformed:
            payload = payload[: max(1, len(payload) // 2)]
        return 200, payload, usage

    return handle


def _simulated_payload(config: SandboxConfig, endpoint: Endpoint, data: Any, root: str) -> bytes:
    """The simulated JSON answer to a valid request.

    ``root`` is the server root the signed output-image link starts with (unused by
    endpoints without output images).
    """
    if endpoint.is_image:
        extra = None
        if endpoint.output_image:
            link = links.sign_link(
                root,
                endpoint.slug,
                data,
                issued_at=config.now(),
                ttl=config.link_ttl,
                secret=config.link_secret,
            )
            extra = {"OutputImageUrl": link}
        payload = simulate.respond_json(
            endpoint,
            data,
            noise=config.noise,
            extra=extra,
            ai_errors=config.ai_errors,
            ai_errors_seed=config.ai_errors_seed,
        )
    else:
        payload = orjson.dumps(simulate.estimate_tle(data))
    if config.drift:  # a changed service (drift mode, off by default)
        from dentalkit.sandbox.drift import apply_drift

        payload = orjson.dumps(apply_drift(config.drift, endpoint, orjson.loads(payload), data))
    return payload


# ---- banner and OpenAPI document (no key) -------------------------------------------


def _add_public_routes(app: FastAPI, config: SandboxConfig) -> None:
    """``GET /`` (the banner) and ``GET /openapi.json`` (the v2 document)."""

    @app.get("/", include_in_schema=False)
    async def banner() -> Response:
        return Response(
            orjson.dumps(
                {
                    "sandbox": True,
                    "message": BANNER,
                    "drift": list(config.drift),
                    "ai_errors": config.ai_errors,
                }
            ),
            media_type="application/json",
        )

    @app.get("/openapi.json", include_in_schema=False)
    async def openapi(request: Request) -> Response:
        base = str(request.base_url).rstrip("/") + API_PREFIX
        return Response(
            orjson.dumps(openapi_document(base, sandbox=True)), media_type="application/json"
        )


# ---- sandbox-only control routes (key required) -------------------------------------


def _add_control_routes(
    app: FastAPI, config: SandboxConfig, authorised: Callable[[str | None], str | None]
) -> None:
    """``/_sandbox/truth``, ``/_sandbox/config``, ``/_sandbox/stats``, ``/_sandbox/reset``."""
    state = app.state

    def control(request: Request) -> Response | None:
        if authorised(request.headers.get("x-api-key")) is None:
            return Response(UNAUTHORIZED_BODY, status_code=401, media_type="application/json")
        return None

    @app.get("/_sandbox/truth", include_in_schema=False)
    async def truth(request: Request) -> Response:
        if (denied := control(request)) is not None:
            return denied
        q = request.query_params
        if not q.get("PatientID") or not q.get("TimeStamp"):
            return error_response(
                400, "give PatientID and TimeStamp (and optionally ImageName) as query parameters"
            )
        data = simulate.truth(
            q["PatientID"],
            q["TimeStamp"],
            q.get("ImageName"),
            ai_errors=config.ai_errors,
            ai_errors_seed=config.ai_errors_seed,
            noise=config.noise,
        )
        return Response(
            orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY), media_type="application/json"
        )

    @app.get("/_sandbox/config", include_in_schema=False)
    async def get_config(request: Request) -> Response:
        if (denied := control(request)) is not None:
            return denied
        return Response(orjson.dumps(config.public()), media_type="application/json")

    @app.put("/_sandbox/config", include_in_schema=False)
    async def put_config(request: Request) -> Response:
        if (denied := control(request)) is not None:
            return denied
        try:
            changes = orjson.loads(await request.body())
            if not isinstance(changes, dict):
                raise ValueError("the body must be a JSON object of settings")
            config.update(changes)
        except (ValueError, TypeError) as exc:
            return error_response(400, str(exc))
        state.injector.reconfigure(config.faults)
        state.limiter = _new_limiter(config)
        return Response(orjson.dumps(config.public()), media_type="application/json")

    @app.get("/_sandbox/stats", include_in_schema=False)
    async def get_stats(request: Request) -> Response:
        if (denied := control(request)) is not None:
            return denied
        return Response(orjson.dumps(state.stats.as_dict()), media_type="application/json")

    @app.post("/_sandbox/reset", include_in_schema=False)
    async def reset(request: Request) -> Response:
        if (denied := control(request)) is not None:
            return denied
        state.stats.reset()
        state.limiter = _new_limiter(config)
        return Response(orjson.dumps({"reset": True}), media_type="application/json")


# ---- images: synthetic inputs (public) and outputs behind signed links --------------


def _add_image_routes(app: FastAPI, config: SandboxConfig) -> None:
    """``/_sandbox/images/{kind}/…`` and ``/_sandbox/output/{slug}.png``."""

    @app.get("/_sandbox/images/{path:path}", include_in_schema=False)
    async def input_image(path: str) -> Response:
        from dentalkit.sandbox import render

        try:
            png = await asyncio.to_thread(render.input_image, path)
        except ValueError as exc:
            return error_response(404, str(exc))
        return Response(png, media_type="image/png")

    @app.get("/_sandbox/output/{slug}.png", include_in_schema=False)
    async def output_image(slug: str, request: Request) -> Response:
        from dentalkit.sandbox import render

        endpoint = next((e for e in ENDPOINTS.values() if e.slug == slug and e.output_image), None)
        if endpoint is None:
            return error_response(404, f"no output images for {slug!r}")
        q = request.query_params
        try:
            data = links.verify_link(
                slug,
                q.get("req"),
                q.get("expires"),
                q.get("signature"),
                now=config.now(),
                secret=config.link_secret,
            )
            data = validate_body(endpoint, data)
        except links.LinkError as exc:
            return error_response(403, str(exc))
        except InvalidRequestError as exc:
            return error_response(403, f"link carries an invalid request: {exc}")
        body = simulate.respond(
            endpoint,
            data,
            noise=config.noise,
            ai_errors=config.ai_errors,
            ai_errors_seed=config.ai_errors_seed,
        )
        png = await asyncio.to_thread(render.output_image, endpoint, data, body)
        return Response(png, media_type="image/png")


# ---- errors in the spec's shape, never a stack trace --------------------------------


def _add_error_handlers(app: FastAPI) -> None:
    """Unknown paths, wrong methods, invalid parameters and bugs answered in the spec's shape."""

    @app.exception_handler(StarletteHTTPException)
    async def http_error(request: Request, exc: StarletteHTTPException) -> Response:
        if exc.status_code == 404:
            return error_response(404, f"no such endpoint: {request.method} {request.url.path}")
        if exc.status_code == 405:
            return error_response(405, f"{request.method} is not allowed on {request.url.path}")
        return error_response(exc.status_code, str(exc.detail))

    @app.exception_handler(RequestValidationError)
    async def validation_error(request: Request, exc: RequestValidationError) -> Response:
        return error_response(400, "invalid request")

    @app.exception_handler(Exception)
    async def crash(request: Request, exc: Exception) -> Response:  # pragma: no cover - a bug
        log.exception("sandbox bug while answering %s", request.url.path)
        return error_response(500, f"sandbox bug ({type(exc).__name__}); please report it")


class _RejectedError(Exception):
    def __init__(self, status: int, message: str) -> None:
        self.status = status
        self.message = message
