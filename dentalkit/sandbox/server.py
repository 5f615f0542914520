"""Run the sandbox: in-process for tests and notebooks (:func:`running`) or as a server."""

from __future__ import annotations

import contextlib
import logging
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

from dentalkit.endpoints import API_PREFIX
from dentalkit.sandbox.config import FaultConfig, SandboxConfig

__all__ = ["SandboxServer", "running", "serve"]

log = logging.getLogger("dentalkit.sandbox")


@dataclass
class SandboxServer:
    """Handle on a running sandbox.

    Attributes
    ----------
    base_url : str
        The v2 base URL, ending in ``/api/v2`` — give it to ``dentalkit.Client``.
    root_url : str
        The server root (sandbox-only routes live under ``/_sandbox``).
    api_key : str
        The sandbox key (documented, not a secret).
    config : SandboxConfig
        The live configuration; change faults with :meth:`set_faults`.
    """

    base_url: str
    root_url: str
    api_key: str
    config: SandboxConfig
    app: Any
    _server: Any = None
    _thread: threading.Thread | None = None

    def __repr__(self) -> str:
        return f"SandboxServer(base_url={self.base_url!r})"

    # --- conveniences for tests and notebooks (no HTTP needed) -----------------------
    def stats(self) -> dict[str, Any]:
        """Request counters: ``total``, ``by_path``, ``by_status``, ``by_request`` (bounded,
        see :class:`~dentalkit.sandbox.app.Stats`), ``by_request_untracked``."""
        return self.app.state.stats.as_dict()

    def reset_stats(self) -> None:
        """Zero the request counters and the rate-limit window."""
        from dentalkit.sandbox.faults import RateLimiter

        self.app.state.stats.reset()
        f = self.config.faults
        self.app.state.limiter = RateLimiter(f.rate_limit, f.rate_window)

    def set_faults(self, **faults: Any) -> None:
        """Change latency and faults on the fly (keys of :class:`FaultConfig`)."""
        self.config.update({"faults": faults})
        self.app.state.injector.reconfigure(self.config.faults)
        self.reset_stats()

    def truth(self, patient_id: str, timestamp: str, image_name: str | None = None) -> dict:
        """Ground truth of a session (see :func:`dentalkit.sandbox.truth`), with the
        errors this sandbox's error mode injects (``ai_errors`` section) when it is on."""
        from dentalkit.sandbox import simulate

        cfg = self.config
        return simulate.truth(
            patient_id,
            timestamp,
            image_name,
            ai_errors=cfg.ai_errors,
            ai_errors_seed=cfg.ai_errors_seed,
            noise=cfg.noise,
        )

    def image_url(self, kind: str, patient_id: str, session: str) -> str:
        """URL of a synthetic input image the sandbox serves (``kind`` as in ``render.IMAGE_KINDS``)."""
        return (
            f"{self.root_url}/_sandbox/images/{quote(kind, safe='')}/"
            f"{quote(patient_id, safe='')}/{quote(session, safe='')}.png"
        )

    def stop(self) -> None:
        """Stop the server and wait for its thread."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)


def _config(options: dict[str, Any]) -> SandboxConfig:
    faults = options.pop("faults", None)
    if isinstance(faults, dict):
        faults = FaultConfig(**faults)
    cfg = SandboxConfig(**options)
    if faults is not None:
        cfg.faults = faults
    return cfg


def start(
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    tls: tuple[str, str] | None = None,
    **options: Any,
) -> SandboxServer:
    """Start a sandbox in a background thread and return its handle (call ``.stop()``).

    Parameters
    ----------
    host : str
        Loopback address to bind (default ``127.0.0.1``).
    port : int
        Port; ``0`` picks a free one.
    tls : (certfile, keyfile), optional
        Serve HTTPS with this certificate (e.g. from ``trustme`` in tests).
    **options
        Fields of :class:`SandboxConfig` (``noise=False``, ``faults={...}``,
        ``production_like_key=...``).
    """
    import uvicorn

    from dentalkit.sandbox.app import BANNER, create_app

    cfg = _config(dict(options))
    app = create_app(cfg)
    # proto=IPPROTO_TCP matters: asyncio sets TCP_NODELAY on accepted connections only when
    # the listening socket says it is TCP. Without it, Nagle's algorithm holds a response's
    # body until the client's delayed ACK of its headers: +40 ms on every keep-alive request.
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    real_port = sock.getsockname()[1]
    kwargs: dict[str, Any] = {}
    if tls is not None:
        kwargs.update(ssl_certfile=tls[0], ssl_keyfile=tls[1])
    uv_config = uvicorn.Config(
        app, log_level="warning", access_log=False, lifespan="off", timeout_keep_alive=30, **kwargs
    )
    server = uvicorn.Server(uv_config)
    thread = threading.Thread(
        target=server.run, kwargs={"sockets": [sock]}, name="dentalkit-sandbox", daemon=True
    )
    thread.start()
    deadline = time.monotonic() + 15
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the sandbox server did not start")
        time.sleep(0.01)
    scheme = "https" if tls else "http"
    shown = f"[{host}]" if ":" in host else host
    root = f"{scheme}://{shown}:{real_port}"
    log.info("%s Listening on %s", BANNER, root)
    return SandboxServer(
        base_url=root + API_PREFIX,
        root_url=root,
        api_key=cfg.api_key,
        config=cfg,
        app=app,
        _server=server,
        _thread=thread,
    )


@contextlib.contextmanager
def running(**options: Any) -> Iterator[SandboxServer]:
    """Run a sandbox for the duration of a ``with`` block.

    Examples
    --------
    >>> from dentalkit.sandbox import running
    >>> with running(noise=False) as sb:  # doctest: +SKIP
    ...     print(sb.base_url)  # http://127.0.0.1:PORT/api/v2
    """
    server = start(**options)
    try:
        yield server
    finally:
        server.stop()


def serve(host: str = "127.0.0.1", port: int = 8765, **options: Any) -> None:
    """Serve the sandbox in the foreground until interrupted (``dentalkit sandbox``)."""
    import uvicorn

    from dentalkit.sandbox.app import create_app

    app = create_app(_config(dict(options)))
    uvicorn.run(app, host=host, port=port, log_level="info", access_log=False)
