"""The HTTP cache on disk (private): backends, checksummed entries, checks and healing.

requests-cache stores each answer as one serialized entry (a pickle in SQLite or Redis, a
JSON file in a filesystem cache). dentalkit serializes entries through
:func:`checksummed_serializer`, which adds a SHA-256 of the entry:

* **pickle** (SQLite, Redis): the digest is appended after the pickle, behind the marker
  :data:`TRAILER` (``pickle.loads`` ignores bytes after the pickle, so a plain
  requests-cache session still reads these entries);
* **JSON** (filesystem): the digest of the canonical JSON of the entry is one more field,
  ``_dentalkit_sha256`` (the files stay plain JSON).

An entry whose digest does not match raises a ``ValueError`` when read, which requests-cache
treats as a miss: the request goes to the service and the fresh answer replaces the damaged
entry. Entries written before the digest existed carry none and are read as before (a
damaged one is still found when its body does not parse as a JSON object). requests-cache
puts ``str(serializer)`` into every cache key; the checksummed serializer keeps the plain
serializer's name there, so caches written before keep answering.

:func:`check_http_cache` reads every entry back without changing anything (``dentalkit
verify --cache``); :func:`evict_damaged_entries` deletes the entries that check finds
damaged (the fetch does, so that what ``verify`` reports is what the fetch repairs).
Opening a SQLite cache read-only for a check leaves no ``-wal`` / ``-shm`` files behind.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import pickle
import sqlite3
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson

from dentalkit.errors import ConfigurationError, require

__all__ = [
    "KEY_HEADER",
    "TRAILER",
    "cache_backend",
    "cache_description",
    "check_http_cache",
    "checksummed_serializer",
    "evict_damaged_entries",
    "normalize_cache",
    "quarantine_cache",
    "sqlite_cache_problem",
    "write_large_entries_in_pieces",
]

log = logging.getLogger("dentalkit")

SQLITE_SUFFIXES = (".sqlite", ".sqlite3", ".db")
REDIS_SCHEMES = ("redis://", "rediss://", "unix://")

#: Header that carries the API key (spec, "Authentication" 1): never part of a cache key.
KEY_HEADER = "x-api-key"

#: Marker before the SHA-256 digest (32 bytes) at the end of a pickled cache entry.
TRAILER = b"\n#dentalkit-sha256:"
_TAIL = len(TRAILER) + 32
#: Field holding the hex SHA-256 of a JSON cache entry (filesystem caches).
JSON_FIELD = "_dentalkit_sha256"


# ---- cache specs -----------------------------------------------------------------------


def normalize_cache(cache: Any) -> str | None:
    """Turn a ``settings.cache`` value into a picklable string spec (``None`` = memory)."""
    if cache is None:
        return None
    if isinstance(cache, os.PathLike):
        cache = os.fspath(cache)
    if not isinstance(cache, str):
        raise ConfigurationError(
            f"cache must be a path, a redis:// URL, 'memory' or None, got {type(cache).__name__}"
        )
    if cache == "memory":
        return None
    if cache.startswith(REDIS_SCHEMES):
        return cache
    return str(Path(cache).expanduser())


def cache_description(spec: str | None) -> str:
    """Readable, credential-free name of a cache spec (for reprs and logs)."""
    if spec is None:
        return "memory"
    if spec.startswith(REDIS_SCHEMES):
        parts = urlsplit(spec)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port else ""
        return f"{parts.scheme}://{host}{port}{parts.path}"  # no user:password
    return spec


def _kind(spec: str | None) -> str:
    """``memory``, ``redis``, ``sqlite`` or ``filesystem``."""
    if spec is None:
        return "memory"
    if spec.startswith(REDIS_SCHEMES):
        return "redis"
    return "sqlite" if Path(spec).suffix.lower() in SQLITE_SUFFIXES else "filesystem"


def cache_backend(spec: str | None) -> tuple[Any, dict[str, Any]]:
    """requests-cache ``backend`` and its keyword arguments for a cache spec."""
    kind = _kind(spec)
    if kind == "memory":
        return "memory", {}
    assert spec is not None
    if kind == "redis":
        require("redis", "distributed")
        from dentalkit.fetch._rediscache import ResilientRedisCache

        # a Redis outage degrades to cache misses instead of failing requests
        serializer = checksummed_serializer("pickle")
        return ResilientRedisCache(spec, namespace="dentalkit", serializer=serializer), {}
    path = Path(spec)
    if kind == "sqlite":
        path.parent.mkdir(parents=True, exist_ok=True)
        return "sqlite", {
            "cache_name": str(path),
            "wal": True,
            "busy_timeout": 30_000,
            "serializer": checksummed_serializer("pickle"),
            # no statement cache: a cached INSERT keeps SQLite's copy of the last body it
            # bound (up to settings.max_response_bytes) alive until the next write
            "cached_statements": 0,
        }
    path.mkdir(parents=True, exist_ok=True)
    # JSON files, but the body kept as the exact bytes received (decode_content=False), so a
    # cache hit returns byte-for-byte the text the service sent
    return "filesystem", {
        "cache_name": str(path),
        "serializer": checksummed_serializer("json"),
        "decode_content": False,
    }


# ---- checksummed entries -----------------------------------------------------------------


class DamagedEntryError(ValueError):
    """A cache entry whose SHA-256 does not match (requests-cache reads it as a miss)."""


_damaged_lock = threading.Lock()
#: Cache entries the client found damaged by their checksum in this process (a check of a
#: whole cache, :func:`check_http_cache`, does not count here).
damaged_entries_read = 0
_checking = threading.local()


def _damaged(what: str) -> DamagedEntryError:
    global damaged_entries_read
    if getattr(_checking, "on", False):  # a whole-cache check reports once, at its end
        return DamagedEntryError(f"cache entry checksum mismatch ({what})")
    with _damaged_lock:
        damaged_entries_read += 1
    log.warning(
        "a cached answer failed its checksum (%s): the cache entry is damaged; it is not "
        "used, and the service is asked again",
        what,
    )
    return DamagedEntryError(f"cache entry checksum mismatch ({what})")


def checksummed_serializer(name: str) -> Any:
    """requests-cache's ``pickle`` or ``json`` serializer, with a SHA-256 of every entry.

    See the module docstring for the format. ``str()`` of the result is the plain
    serializer's, so cache keys do not change.
    """
    from requests_cache.serializers import SerializerPipeline, init_serializer

    base = init_serializer(name, False)

    class Checksummed(SerializerPipeline):
        def __init__(self) -> None:
            super().__init__(base.stages, name=base.name, is_binary=base.is_binary)

        def __str__(self) -> str:  # part of every cache key: keep the plain serializer's
            return str(base)

        def copy(self) -> Checksummed:
            return self

        def dumps(self, value: Any) -> Any:
            for step in self.dump_stages[:-1]:
                value = step(value)
            if self.is_binary:
                return _pickle_with_digest(value)
            return self.dump_stages[-1](_json_with_digest(value))

        def loads(self, value: Any) -> Any:
            if self.is_binary:
                _check_pickle_digest(value)
                value = pickle.loads(value)  # the digest after the pickle is ignored
            else:
                value = _json_without_digest(self.load_stages[0](value))
            for step in self.load_stages[1:]:
                value = step(value)
            return value

    if base.is_binary and base.stages[-1].obj is not pickle:  # pragma: no cover - guard
        raise ValueError(f"no checksummed form of the {name!r} serializer")
    return Checksummed()


def _pickle_with_digest(value: Any) -> bytes:
    """Pickle ``value`` and append :data:`TRAILER` + SHA-256, in one buffer (no copies)."""
    buffer = io.BytesIO()
    pickle.dump(value, buffer, protocol=pickle.DEFAULT_PROTOCOL)
    with buffer.getbuffer() as view:
        digest = hashlib.sha256(view).digest()
    buffer.write(TRAILER)
    buffer.write(digest)
    return buffer.getvalue()


def _check_pickle_digest(value: Any) -> bool:
    """True when ``value`` carries a digest that matches; False when it carries none.

    Raises :class:`DamagedEntryError` for a digest that does not match.
    """
    view = memoryview(value)
    if len(view) < _TAIL or view[-_TAIL:-32] != TRAILER:
        return False
    if hashlib.sha256(view[:-_TAIL]).digest() != view[-32:]:
        raise _damaged("pickled entry")
    return True


def _canonical_digest(entry: dict) -> str:
    text = orjson.dumps(entry, option=orjson.OPT_SORT_KEYS | orjson.OPT_NON_STR_KEYS)
    return hashlib.sha256(text).hexdigest()


def _json_with_digest(entry: Any) -> Any:
    if isinstance(entry, dict):
        entry = {**entry, JSON_FIELD: _canonical_digest(entry)}
    return entry


def _json_without_digest(entry: Any) -> Any:
    if isinstance(entry, dict) and JSON_FIELD in entry:
        entry = dict(entry)
        stated = entry.pop(JSON_FIELD)
        if stated != _canonical_digest(entry):
            raise _damaged("JSON entry")
    return entry


#: Cache entries larger than this are written into SQLite piece by piece (see
#: :func:`write_large_entries_in_pieces`).
PIECEWISE_BYTES = 1 << 20


def write_large_entries_in_pieces(responses: Any) -> None:
    """Make a requests-cache ``SQLiteDict`` write large entries without a whole copy.

    Python's ``sqlite3`` copies every bound value (``SQLITE_TRANSIENT``), so storing a
    64 MB entry held the body, its pickle and SQLite's copy of the pickle at once. An entry
    over :data:`PIECEWISE_BYTES` is inserted as a ``zeroblob`` of its size and filled
    through ``Connection.blobopen`` in 1 MiB pieces, in the same transaction (the row is
    whole or absent). Smaller ones are inserted as requests-cache does.
    """
    table = responses.table_name

    def write(key: str, value: Any) -> None:
        expires = getattr(value, "expires_unix", None)
        data = memoryview(responses.serialize(value))
        sql = f"INSERT OR REPLACE INTO {table} (key,value,expires) VALUES (?,?,?)"
        with responses.connection(commit=True) as con:
            if len(data) <= PIECEWISE_BYTES:
                con.execute(sql, (key, data, expires))
                return
            sized = sql.replace("VALUES (?,?,?)", "VALUES (?,zeroblob(?),?)")
            rowid = con.execute(sized, (key, len(data), expires)).lastrowid
            with con.blobopen(table, "value", rowid) as blob:
                for start in range(0, len(data), PIECEWISE_BYTES):
                    blob.write(data[start : start + PIECEWISE_BYTES])

    responses._write = write


# ---- checking and healing a cache on disk -----------------------------------------------


def _ro_uri(path: Path) -> str:
    """A read-only SQLite URI that creates no ``-wal`` / ``-shm`` files.

    Without a ``-wal`` file there is nothing a writer has left uncheckpointed, and the
    database is opened ``immutable`` (no locks, no shared-memory file). With one (a writer
    is at work, or one was killed), a plain read-only connection reads it; the files it
    uses existed already.
    """
    wal = path.with_name(path.name + "-wal")
    flag = "&immutable=1" if not wal.exists() else ""
    return f"file:{path}?mode=ro{flag}"


def _sqlite_problem(path: Path) -> str:
    """Why the SQLite file at ``path`` is not a sound cache (``""`` when it is), read-only.

    ``PRAGMA integrity_check``, not ``quick_check``: it also verifies that the key index
    matches the table (a damaged index can lead one key to another request's entry).
    """
    try:
        con = sqlite3.connect(_ro_uri(path), uri=True, timeout=30)
    except sqlite3.Error as exc:
        return f"{type(exc).__name__}: {exc}"
    try:
        found = [r[0] for r in con.execute("PRAGMA integrity_check(3)")]
        if found != ["ok"]:
            return "PRAGMA integrity_check: " + "; ".join(map(str, found))
        return ""
    except sqlite3.Error as exc:
        return f"{type(exc).__name__}: {exc}"
    finally:
        con.close()


def sqlite_cache_problem(cache: Any) -> str:
    """``""`` unless ``cache`` is a SQLite cache file that fails ``PRAGMA integrity_check``."""
    spec = normalize_cache(cache)
    if _kind(spec) != "sqlite":
        return ""
    path = Path(spec)  # type: ignore[arg-type]
    if not path.exists():
        return ""
    return _sqlite_problem(path)


def _entries(path: Path, kind: str) -> Iterator[tuple[str, Any]]:
    """``(key, raw value)`` of every stored answer of a SQLite or filesystem cache, one at a
    time (a cache of gigabytes is never held in memory)."""
    if kind == "sqlite":
        con = sqlite3.connect(_ro_uri(path), uri=True, timeout=30)
        try:
            yield from con.execute("SELECT key, value FROM responses")
        finally:
            con.close()
        return
    for file in sorted(path.rglob("*.json")):
        try:
            yield file.stem, file.read_bytes()
        except OSError:
            yield file.stem, b""


def _entry_problem(value: Any, serializer: Any) -> str:
    """Why one raw entry cannot be used (``""`` when it can).

    An entry whose digest matches is as it was written (only JSON-object bodies are
    written): nothing more is read. Others are deserialized and their body parsed.
    """
    try:
        if serializer.is_binary and _check_pickle_digest(value):
            return ""
        response = serializer.loads(value)
    except DamagedEntryError:
        return "checksum"
    except Exception:  # any failure to read an entry back is damage
        return "unreadable"
    if response.status_code != 200:
        return ""
    try:
        ok = isinstance(orjson.loads(response.content), dict)
    except orjson.JSONDecodeError:
        ok = False
    return "" if ok else "body"


def _scan(path: Path, kind: str) -> tuple[int, dict[str, str]]:
    """``(entries, {key: why})`` of the damaged entries of a cache on disk."""
    serializer = checksummed_serializer("pickle" if kind == "sqlite" else "json")
    bad: dict[str, str] = {}
    n = 0
    _checking.on = True
    try:
        for key, value in _entries(path, kind):
            n += 1
            why = _entry_problem(value, serializer)
            if why:
                bad[key] = why
    finally:
        _checking.on = False
    return n, bad


def _damage_reason(n: int, bad: dict[str, str]) -> str:
    if not bad:
        return ""
    words = {
        "checksum": "fail their checksum",
        "unreadable": "cannot be deserialized",
        "body": "hold a 200 body that is not a JSON object",
    }
    parts = [f"{k} {words[w]}" for w in words if (k := sum(v == w for v in bad.values()))]
    return (
        f"{len(bad)} of {n} entries are damaged ({', '.join(p for p in parts if p)}); "
        "`dentalkit fetch` with this cache deletes them before it sends anything (the "
        "service is then asked again for those answers the store does not hold)"
    )


def check_http_cache(cache: Any) -> list[tuple[str, int | None, str]]:
    """Check an HTTP cache without changing it: ``[(name, entries, reason)]``.

    A SQLite cache gets ``PRAGMA integrity_check`` and every stored response is read back: its
    checksum verified (entries written before checksums: deserialized and the body
    parsed); a filesystem cache has every file read back the same way. ``reason`` is
    ``""`` for a sound cache; otherwise it says what is wrong (and how many entries). Redis
    and in-memory caches are reported as not checked. No file is created or changed.
    """
    spec = normalize_cache(cache)
    kind = _kind(spec)
    if kind in ("memory", "redis"):
        return [(f"{cache_description(spec)} (not checked: only files are)", None, "")]
    path = Path(spec)  # type: ignore[arg-type]
    if not path.exists():
        return [(str(path), None, "no such file or folder")]
    if kind == "sqlite":
        problem = _sqlite_problem(path)
        if problem:
            return [(str(path), None, problem)]
    try:
        n, bad = _scan(path, kind)
    except sqlite3.Error as exc:
        return [(str(path), None, f"{type(exc).__name__}: {exc}")]
    return [(str(path), n, _damage_reason(n, bad))]


def evict_damaged_entries(session: Any, cache: Any) -> int:
    """Delete the damaged entries of a SQLite or filesystem cache; return how many.

    The entries :func:`check_http_cache` reports as damaged (checksum mismatch, not
    deserializable, a 200 body that is not a JSON object) are deleted through the session's
    own backend, so the next request for them goes to the service. Redis and memory caches
    are left alone (0).
    """
    spec = normalize_cache(cache)
    kind = _kind(spec)
    if kind not in ("sqlite", "filesystem"):
        return 0
    path = Path(spec)  # type: ignore[arg-type]
    if not path.exists():
        return 0
    _, bad = _scan(path, kind)
    if bad:
        session.cache.responses.bulk_delete(list(bad))
        log.warning(
            "deleted %d damaged entr%s of the HTTP cache %s (%s); their requests go to the "
            "service again when needed",
            len(bad),
            "y" if len(bad) == 1 else "ies",
            path,
            ", ".join(sorted(set(bad.values()))),
        )
    return len(bad)


def quarantine_cache(cache: Any) -> list[Path]:
    """Move a damaged SQLite cache (with its ``-wal`` and ``-shm`` files) aside; never delete.

    The files get the suffix ``.damaged-<UTC time>`` in the same folder. Returns the new paths.
    """
    spec = normalize_cache(cache)
    if _kind(spec) in ("memory", "redis"):
        return []
    path = Path(spec)  # type: ignore[arg-type]
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    moved = []
    for file in (path, path.with_name(path.name + "-wal"), path.with_name(path.name + "-shm")):
        if file.exists():
            target = file.with_name(f"{file.name}.damaged-{stamp}")
            os.replace(file, target)
            moved.append(target)
            log.warning("moved the damaged HTTP cache file %s to %s", file, target)
    return moved
