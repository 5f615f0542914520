"""Settings of dentalkit's client: one module of plain, documented variables.

Change a value by assignment; it is read **at call time** (when a :class:`dentalkit.Client`
is built or :func:`dentalkit.fetch_cohort` starts), as ``osmnx.settings`` does::

    import dentalkit.settings as settings

    settings.max_workers = 4
    settings.cache = "/data/study-17/http-cache.sqlite"

Nothing here ever holds the API key: the key is read from the environment variable named by
:data:`api_key_env` (or given to ``Client(api_key=...)``) and kept only in memory.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = [
    "api_key_env",
    "backoff_base",
    "backoff_max",
    "base_url",
    "base_url_env",
    "cache",
    "cache_expire_after",
    "default_cache_path",
    "flush_every",
    "flush_interval",
    "max_response_bytes",
    "max_retries",
    "max_workers",
    "request_deadline",
    "service_url",
    "store_lock_timeout",
    "timeout",
    "tmj_phrases",
    "user_agent",
    "verify",
]


def service_url(url: str | None = None) -> str | None:
    """The service URL to use: ``url``, else :data:`base_url`, else the environment variable
    named by :data:`base_url_env`; ``None`` when none is set.

    One resolution order for :class:`dentalkit.Client` and the command line, which each say
    in their own words what to do when it is ``None``.

    Examples
    --------
    >>> import dentalkit.settings as settings
    >>> settings.service_url("https://example.org/api/v2")
    'https://example.org/api/v2'
    """
    return url or base_url or os.environ.get(base_url_env) or None


def default_cache_path() -> Path:
    """The default HTTP cache file: ``dentalkit/http-cache.sqlite`` in the user cache folder.

    Uses ``platformdirs.user_cache_dir`` when platformdirs is installed; otherwise
    ``%LOCALAPPDATA%\\dentalkit\\Cache`` on Windows and ``$XDG_CACHE_HOME/dentalkit`` (default
    ``~/.cache/dentalkit``) elsewhere.
    """
    try:
        import platformdirs
    except ImportError:  # pragma: no cover - platformdirs is installed with pip itself
        if os.name == "nt":
            root = Path(os.environ.get("LOCALAPPDATA", Path.home() / "AppData" / "Local"))
            folder = root / "dentalkit" / "Cache"
        else:
            folder = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "dentalkit"
    else:
        folder = Path(platformdirs.user_cache_dir("dentalkit", appauthor=False))
    return folder / "http-cache.sqlite"


#: Base URL of the service, ending in ``/api/v2``. ``None`` reads the environment variable
#: named by :data:`base_url_env`. Must be ``https://`` unless the host is loopback
#: (127.0.0.0/8, ::1, localhost), which is how the local sandbox is reached.
base_url: str | None = None

#: Environment variable read when :data:`base_url` is ``None``.
base_url_env: str = "DENTALKIT_BASE_URL"

#: Environment variable that holds the API key. The key itself is never a setting, so it
#: cannot end up in a saved configuration, a notebook output or a pickled settings object.
api_key_env: str = "DENTALKIT_API_KEY"

#: The HTTP cache (requests-cache) that answers repeated requests without calling the service:
#:
#: * a path ending in ``.sqlite``, ``.sqlite3`` or ``.db``: that SQLite file (WAL journal);
#:   the default is :func:`default_cache_path`, in the user cache folder;
#: * any other path: a filesystem cache in that directory (one JSON file per response);
#: * ``"redis://host:port/db"``, ``"rediss://…"`` or ``"unix:///path/redis.sock?db=0"``:
#:   a Redis cache shared across processes and machines (needs ``dentalkit[distributed]``);
#: * ``None`` or ``"memory"``: an in-process dictionary, gone when the process ends.
cache: str | os.PathLike[str] | None = default_cache_path()

#: Lifetime of a cached response. ``None`` means *never expire*: the service's analyses are
#: deterministic per request (the same image URL, patient and session give the same answer),
#: every call costs money, and a study must be re-runnable from its cache for years. The only
#: part that ages is ``OutputImageUrl`` (valid 72 h from issue); when you need the annotated image
#: of an old response, re-request with ``refresh=True``. Seconds, a ``datetime.timedelta`` or
#: ``None``.
cache_expire_after: float | None = None

#: ``(connect, read)`` timeouts in seconds for one HTTP attempt. The read timeout bounds each
#: wait for the next bytes, not the whole answer: see :data:`request_deadline`.
timeout: tuple[float, float] = (5.0, 60.0)

#: Longest time one HTTP attempt may take in total, in seconds (default 180): connecting,
#: sending, waiting for the answer and reading all of its body, redirects included. A server
#: that trickles its answer a few bytes at a time never trips the read timeout; at the
#: deadline the connection is closed and the attempt fails with
#: :class:`~dentalkit.errors.IncompleteResponseError`, retried like a dropped connection.
#: ``None`` sets no deadline. Keep it above the read timeout plus the time the largest
#: answer takes to arrive.
request_deadline: float | None = 180.0

#: Retries after the first attempt for connection errors, timeouts, 429, 5xx and malformed
#: 200 bodies. Other 4xx are never retried.
max_retries: int = 5

#: First backoff in seconds; attempt ``n`` waits a uniform draw in ``[0, min(backoff_max,
#: backoff_base * 2**n)]`` ("full jitter"), or the server's ``Retry-After`` when it sent one
#: (capped at :data:`backoff_max`).
backoff_base: float = 0.5

#: Longest wait between two attempts, in seconds.
backoff_max: float = 30.0

#: Concurrent requests of :func:`dentalkit.fetch_cohort`.
max_workers: int = 8

#: TLS verification: ``True`` (system CA store via certifi), or the path of a CA bundle.
#: Never ``False`` for a remote service.
verify: bool | str = True

#: ``User-Agent`` header sent with every request.
user_agent: str = "dentalkit/0.1 (+https://github.com/dentalkit/dentalkit)"

#: :func:`dentalkit.fetch_cohort` writes a Parquet part after this many new responses ...
flush_every: int = 500

#: ... or after this many seconds since the last part, whichever comes first.
flush_interval: float = 10.0

#: Extra TMJ phrases file(s) (CSV: ``meaning``, ``pattern``, ``example``) whose rows are added
#: to the shipped ``dentalkit/data/tmj_phrases.csv`` when TMJ sentences are read (see
#: :func:`dentalkit.convert.has_finding`); a path, a list of paths or ``None``.
tmj_phrases: str | os.PathLike[str] | list[str | os.PathLike[str]] | None = None
#: Largest answer body accepted, in bytes (default 64 MiB). A longer body is not read past the
#: limit, not cached and not stored: the request fails with
#: :class:`~dentalkit.errors.ResponseTooLargeError`. The largest answers of interface v2
#: (segmentations with contours) are a few hundred kilobytes; the limit only guards against a
#: misbehaving server or proxy filling memory and the cache.
max_response_bytes: int = 64 * 1024 * 1024

#: Seconds :func:`dentalkit.fetch_cohort` waits for another fetch into the same ``out`` folder
#: to finish (one writer per store). ``0`` refuses at once with
#: :class:`~dentalkit.errors.StoreLockedError`; ``None`` waits as long as it takes. Reading a
#: store never waits.
store_lock_timeout: float | None = 0.0
