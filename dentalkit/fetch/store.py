"""The responses store: every successful answer, losslessly, as Parquet parts under ``out/``.

Layout of an ``out`` folder::

    out/_dentalkit.json                  store metadata: format version, the service's base URL
    out/responses/part-<UTC>-<uuid>.parquet   the ``responses`` table, in parts
    out/failures.parquet                 requests whose latest attempt failed, and why
    out/calibration.parquet              per-image mm_per_px of the manifests (fetch._sidefiles)

Every file is written atomically (a temporary file in the same folder, ``fsync``, then
``os.replace``), so a reader — or a run killed at any moment — sees either the whole part or
none of it. A part is read back before it is renamed into place, so nothing is counted as
stored that cannot be read. Parts are only ever added; :func:`read_responses` reads the folder
with ``pandas.read_parquet`` and de-duplicates by ``request_key`` defensively.

Damage after writing (a truncated, emptied or garbled file) is found when the file is read
back: every part, ``failures.parquet`` and ``_dentalkit.json`` are checked on open and a
damaged one raises :class:`~dentalkit.errors.DamagedFileError` naming the file. The fetch
path opens the store with ``heal=True``: a damaged file is moved aside into
``out/_quarantine/`` (never deleted) and the requests it held are sent again — answered by
the HTTP cache where it holds them. :func:`verify_store` checks a store without changing it.

One fetch writes a store at a time (:func:`store_lock`, a ``filelock`` lock file
``out/.dentalkit.lock``); reading never takes the lock.

The ``responses`` schema is the data contract's (``docs/data-contract.md``): the session key
``patient_id``, ``timestamp`` (verbatim, from the request), ``session_time`` (ISO 8601, or the
timestamp format the fetch recorded in ``_dentalkit.json``, parsed to UTC; NaT otherwise),
``endpoint``, ``model_version`` (response ``Version``), then
``request_key``, ``image_url``, ``options``, ``status_code``, ``body`` (the exact JSON text),
``fetched_at``, ``from_cache`` and ``error``.
"""

from __future__ import annotations

import json
import logging
import os
import uuid
import warnings
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dentalkit._atomic import atomic_write as _atomic_write
from dentalkit._atomic import fsync_path as _fsync_dir
from dentalkit.endpoints import ENDPOINTS
from dentalkit.errors import (
    ConfigurationError,
    DamagedFileError,
    DentalkitWarning,
    InputError,
    StoreLockedError,
)

__all__ = [
    "FAILURES_SCHEMA",
    "FORMAT_VERSION",
    "QUARANTINE",
    "RESPONSES_SCHEMA",
    "ResponseStore",
    "StoreLock",
    "parse_session_time",
    "read_failures",
    "read_responses",
    "store_lock",
    "verify_store",
]

log = logging.getLogger("dentalkit")

#: Version of the on-disk layout written to ``_dentalkit.json``.
FORMAT_VERSION = 1
_META = "_dentalkit.json"
_PARTS = "responses"
_FAILURES = "failures.parquet"
_LOCK = ".dentalkit.lock"
#: Folder inside a store where damaged files are moved (never deleted).
QUARANTINE = "_quarantine"
#: Columns that identify a request (enough to send it again).
REQUEST_COLUMNS = ["patient_id", "timestamp", "endpoint", "image_url", "options", "request_key"]
_HEAL = (
    "Run the same `dentalkit fetch` (or fetch_cohort) again: it moves the damaged file aside "
    "into {out}/_quarantine and sends its requests again (the HTTP cache answers those it "
    "holds). `dentalkit verify {out}` lists every damaged file without changing anything"
)

_UTC_NS = pa.timestamp("ns", tz="UTC")
_UTC_US = pa.timestamp("us", tz="UTC")

#: Arrow schema of the ``responses`` table (docs/data-contract.md).
RESPONSES_SCHEMA = pa.schema(
    [
        ("patient_id", pa.string()),
        ("timestamp", pa.string()),
        ("session_time", _UTC_NS),
        ("endpoint", pa.string()),  # a key column: string in every file (data-contract.md)
        ("model_version", pa.string()),
        ("request_key", pa.string()),
        ("image_url", pa.string()),
        ("options", pa.string()),
        ("status_code", pa.int16()),
        ("body", pa.string()),
        ("fetched_at", _UTC_US),
        ("from_cache", pa.bool_()),
        ("error", pa.string()),
    ]
)

#: Arrow schema of the ``failures`` table.
FAILURES_SCHEMA = pa.schema(
    [
        ("row", pa.int64()),
        ("patient_id", pa.string()),
        ("timestamp", pa.string()),
        ("endpoint", pa.string()),
        ("request_key", pa.string()),
        ("image_url", pa.string()),
        ("options", pa.string()),
        ("error_type", pa.string()),
        ("status_code", pa.int16()),
        ("error", pa.string()),
        ("failed_at", _UTC_US),
    ]
)


def parse_session_time(timestamps: pd.Series, timestamp_format: str | None = None) -> pd.Series:
    """Timestamps → ``datetime64[ns, UTC]``: ISO 8601, or ``timestamp_format``; NaT otherwise.

    Dates, date-times with or without a zone are accepted; naive times are taken as UTC
    (docs/data-contract.md). ``timestamp_format`` is a strptime format the whole string must
    match (``"%d/%m/%Y"``); the fetch passes the one the manifest was read with. Vectorized
    over the unique values.

    >>> parse_session_time(
    ...     pd.Series(["2024-03-05", "2024-03-05T10:00:00+02:00", "5/3/24", "-3-3"])
    ... ).tolist()
    [Timestamp('2024-03-05 00:00:00+0000', tz='UTC'), Timestamp('2024-03-05 08:00:00+0000', tz='UTC'), NaT, NaT]
    >>> parse_session_time(pd.Series(["05/03/2024"]), "%d/%m/%Y").tolist()
    [Timestamp('2024-03-05 00:00:00+0000', tz='UTC')]
    """
    from dentalkit.convert._requests import parse_session_times

    parsed = parse_session_times(timestamps.to_numpy(dtype=object), timestamp_format)
    return pd.Series(parsed, index=timestamps.index, name=timestamps.name)


def _fix(out: Path) -> str:
    return _HEAL.format(out=out)


def _read_meta(path: Path) -> dict[str, Any]:
    """``_dentalkit.json`` as a dict, or :class:`DamagedFileError`."""
    try:
        meta = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise DamagedFileError(
            path, "store marker", f"{type(exc).__name__}: {exc}", _fix(path.parent)
        ) from None
    if not isinstance(meta, dict) or "format_version" not in meta or "base_url" not in meta:
        raise DamagedFileError(
            path, "store marker", "not the JSON object dentalkit writes", _fix(path.parent)
        )
    return meta


def _read_part(path: Path, columns: list[str] | None = None) -> pa.Table:
    """One responses part, fully decoded and cast to :data:`RESPONSES_SCHEMA`.

    Raises :class:`DamagedFileError` for a file that cannot be read, has other columns, or
    lacks request keys.
    """
    out = path.parent.parent
    names = columns or RESPONSES_SCHEMA.names
    try:
        table = pq.read_table(path, columns=names)
        table = table.select(names).cast(pa.schema([RESPONSES_SCHEMA.field(n) for n in names]))
    except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
        raise DamagedFileError(
            path, "responses part", f"{type(exc).__name__}: {exc}", _fix(out)
        ) from None
    if "request_key" in names and table.column("request_key").null_count:
        raise DamagedFileError(path, "responses part", "rows without a request_key", _fix(out))
    return table


def _read_failures_file(path: Path) -> pd.DataFrame:
    try:
        return pq.read_table(path, schema=FAILURES_SCHEMA).to_pandas()
    except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
        raise DamagedFileError(
            path, "failures table", f"{type(exc).__name__}: {exc}", _fix(path.parent)
        ) from None


class StoreLock:
    """The held write lock of one store, as :func:`store_lock` returns it.

    Release it with :meth:`release`, or use it as a context manager (``with store_lock(out):``),
    which releases it when the block ends, however it ends. Releasing twice is harmless.
    """

    def __init__(self, lock: Any, folder: Path) -> None:
        self._lock = lock
        self.folder = folder

    @property
    def is_locked(self) -> bool:
        """True while this object holds the lock."""
        return bool(self._lock.is_locked)

    @property
    def lock_file(self) -> str:
        """The lock file, ``out/.dentalkit.lock``."""
        return str(self._lock.lock_file)

    def release(self) -> None:
        """Release the lock (nothing happens when it is already released)."""
        # force: filelock counts nested acquires; this object stands for one holder
        self._lock.release(force=True)

    def __enter__(self) -> StoreLock:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __repr__(self) -> str:
        state = "held" if self.is_locked else "released"
        return f"StoreLock({str(self.folder)!r}, {state})"


def store_lock(out: str | os.PathLike[str], timeout: float | None = 0.0) -> StoreLock:
    """Take the write lock of the store ``out`` and return it, held.

    Hold it while writing the store, and release it with ``lock.release()`` or by using it as
    a context manager: ``with store_lock(out): ...`` releases it when the block ends, however
    it ends. ``timeout``: seconds to wait for another writer (``0``: refuse at once, ``None``:
    wait as long as it takes). The lock is an OS file lock (``filelock``) on
    ``out/.dentalkit.lock``: it is released when the process ends, however it ends, and
    readers never take it.

    Parameters
    ----------
    out : path
        The store folder (created when missing).
    timeout : float or None
        Seconds to wait for another writer.

    Returns
    -------
    StoreLock
        The held lock.

    Raises
    ------
    StoreLockedError
        When another process (or another fetch in this process) holds the lock.
    """
    from filelock import FileLock, Timeout

    folder = Path(out)
    folder.mkdir(parents=True, exist_ok=True)
    lock = FileLock(str(folder / _LOCK), thread_local=False)
    try:
        lock.acquire(timeout=-1 if timeout is None else timeout)
    except Timeout:
        waited = "" if not timeout else f" (waited {timeout:g} s)"
        raise StoreLockedError(
            f"another fetch is writing into {folder}{waited}: one writer per store. Wait for "
            "it to finish (its progress shows in its own terminal), or fetch into another "
            "folder; settings.store_lock_timeout sets how long a fetch waits. Reading the "
            "store (read_responses, `dentalkit tables`) does not need to wait"
        ) from None
    return StoreLock(lock, folder)


def quarantine(path: Path, folder: Path) -> Path:
    """Move ``path`` into ``folder`` (created) under a new, time-stamped name; return it.

    Nothing is deleted: the damaged file stays there for inspection or recovery by hand.
    """
    folder.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
    target = folder / f"{stamp}-{path.name}"
    os.replace(path, target)
    _fsync_dir(folder)
    _fsync_dir(path.parent)
    log.warning("moved the damaged file %s to %s", path, target)
    return target


class ResponseStore:
    """One ``out`` folder holding the answers of one service.

    Used as a context manager, the store releases the write lock it holds (the fetch path's,
    :attr:`lock`) when the ``with`` block ends, however it ends.

    Parameters
    ----------
    out : path
        The folder (created when missing).
    base_url : str
        The service the answers come from. Recorded in ``_dentalkit.json``; a store that
        already holds another service's answers refuses to open (request keys do not include
        the host, so mixing would silently merge two services' answers).
    """

    def __init__(self, out: str | os.PathLike[str], base_url: str, *, heal: bool = False) -> None:
        self.out = Path(out)
        self.parts = self.out / _PARTS
        self.base_url = base_url
        self.heal = heal
        #: Files moved aside by this store object: file, kind, reason, moved_to, rows.
        self.quarantined: list[dict[str, Any]] = []
        #: Request columns of the rows that quarantined parts held (where readable).
        self.lost_rows: list[pd.DataFrame] = []
        #: The write lock, when the fetch path holds one (released by :meth:`close`).
        self.lock: StoreLock | None = None
        #: Request keys read by the fetch path when it opened the store.
        self.done: set[str] = set()
        #: The strptime format of the timestamps (None: ISO 8601) that ``session_time`` of
        #: the rows :meth:`append` writes is parsed with (set by the fetch path).
        self.timestamp_format: str | None = None
        self.parts.mkdir(parents=True, exist_ok=True)
        meta_path = self.out / _META
        meta: dict[str, Any] | None = None
        if meta_path.exists():
            try:
                meta = _read_meta(meta_path)
            except DamagedFileError as exc:
                if not heal:
                    raise
                self._quarantine(meta_path, exc, rows=None)
                log.warning(
                    "%s: the store marker was damaged; a new one is written for %s (the base "
                    "URL of the answers already stored could not be checked)",
                    self.out,
                    base_url,
                )
        if meta is not None:
            if meta.get("format_version") != FORMAT_VERSION:
                raise ConfigurationError(
                    f"{meta_path} has store format {meta.get('format_version')!r}; this dentalkit "
                    f"reads format {FORMAT_VERSION}. Use a new out folder"
                )
            if meta.get("base_url") != base_url:
                raise ConfigurationError(
                    f"the out folder {self.out} holds answers of {meta.get('base_url')!r}, but "
                    f"this run calls {base_url!r}. Use one out folder per service: request keys "
                    "do not include the host, so mixing would merge two services' answers"
                )
        else:
            meta = {
                "format": "dentalkit responses store",
                "format_version": FORMAT_VERSION,
                "base_url": base_url,
                "created_at": datetime.now(UTC).isoformat(),
            }
            _atomic_write(meta_path, lambda tmp: Path(tmp).write_text(json.dumps(meta, indent=2)))

    def _part_files(self) -> list[Path]:
        return sorted(p for p in self.parts.glob("part-*.parquet"))

    def _quarantine(self, path: Path, exc: DamagedFileError, rows: int | None) -> Path:
        moved = quarantine(path, self.out / QUARANTINE)
        self.quarantined.append(
            {
                "file": str(path.relative_to(self.out)),
                "kind": exc.what,
                "reason": exc.reason,
                "moved_to": str(moved),
                "rows": rows,
            }
        )
        return moved

    def completed_keys(self) -> set[str]:
        """Request keys already stored; every part is read in full and checked.

        A part that cannot be read raises :class:`~dentalkit.errors.DamagedFileError`, or —
        with ``heal=True`` — is moved to ``out/_quarantine/`` and left out, so its requests
        are sent again; the request columns that can still be read from it are kept in
        :attr:`lost_rows` (so requests that are not in the current manifest can be rebuilt).
        """
        keys: set[str] = set()
        for path in self._part_files():
            try:
                table = _read_part(path)
            except DamagedFileError as exc:
                if not self.heal:
                    raise
                try:
                    held = _read_part(path, REQUEST_COLUMNS).to_pandas()
                except DamagedFileError:
                    held = None
                self._quarantine(path, exc, rows=None if held is None else len(held))
                if held is not None:
                    held["endpoint"] = held["endpoint"].astype("object")
                    self.lost_rows.append(held)
                continue
            keys.update(table.column("request_key").to_pylist())
        return keys

    def append(self, rows: Iterable[Mapping[str, Any]]) -> Path | None:
        """Write ``rows`` (dicts with the responses columns) as one new part, atomically."""
        rows = list(rows)
        if not rows:
            return None
        frame = pd.DataFrame.from_records(rows)
        frame["session_time"] = parse_session_time(frame["timestamp"], self.timestamp_format)
        table = pa.Table.from_pandas(frame, schema=RESPONSES_SCHEMA, preserve_index=False)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        target = self.parts / f"part-{stamp}-{uuid.uuid4().hex}.parquet"

        def check(tmp: str) -> None:  # read back before it counts as stored
            if _read_part(Path(tmp)).num_rows != table.num_rows:
                raise DamagedFileError(tmp, "responses part", "rows missing on read-back")

        _atomic_write(target, lambda tmp: pq.write_table(table, tmp), check)
        log.debug("stored %d responses in %s", len(rows), target.name)
        return target

    def close(self) -> None:
        """Release the write lock, when this store object holds one (the fetch path)."""
        if self.lock is not None:
            self.lock.release()
            self.lock = None

    def __enter__(self) -> ResponseStore:
        return self

    def __exit__(self, *exc: object) -> None:
        """Release the write lock (:meth:`close`) when the ``with`` block ends, however it ends."""
        self.close()

    def read_failures(self) -> pd.DataFrame:
        """The failures table of the last run (empty when there is none).

        With ``heal=True`` a damaged ``failures.parquet`` is moved to the quarantine and an
        empty table returned: the requests it listed are then sent again rather than skipped.
        """
        try:
            return read_failures(self.out)
        except DamagedFileError as exc:
            if not self.heal:
                raise
            self._quarantine(self.out / _FAILURES, exc, rows=None)
            return _empty(FAILURES_SCHEMA)

    def write_failures(self, failures: pd.DataFrame) -> Path:
        """Replace ``failures.parquet`` atomically with ``failures``."""
        table = pa.Table.from_pandas(
            failures.reindex(columns=FAILURES_SCHEMA.names),
            schema=FAILURES_SCHEMA,
            preserve_index=False,
        )
        target = self.out / _FAILURES
        _atomic_write(target, lambda tmp: pq.write_table(table, tmp))
        return target


def _empty(schema: pa.Schema) -> pd.DataFrame:
    return schema.empty_table().to_pandas()


def read_responses(out: str | os.PathLike[str]) -> pd.DataFrame:
    """Read the ``responses`` table of an ``out`` folder.

    Rows are sorted by ``patient_id``, ``timestamp``, ``endpoint``, ``request_key``;
    ``endpoint`` is a categorical over all registry names. Should the folder hold the same
    ``request_key`` twice (it never writes it twice; a copied-in part could), the first
    received row is kept and a :class:`~dentalkit.errors.DentalkitWarning` says how many
    were dropped.

    Raises
    ------
    InputError
        When ``out`` is not a dentalkit store.
    DamagedFileError
        When a part or the store marker cannot be read (the message names the file and how
        to recover; see :func:`verify_store`).
    """
    out = Path(out)
    parts = out / _PARTS
    if not (out / _META).exists():
        raise InputError(
            f"{out} is not a dentalkit responses store (no {_META}); fetch into it first"
        )
    meta = _read_meta(out / _META)
    files = sorted(parts.glob("part-*.parquet"))
    if not files:
        frame = _empty(RESPONSES_SCHEMA)
    else:
        try:
            frame = pd.read_parquet(files, schema=RESPONSES_SCHEMA)
        except (OSError, ValueError, KeyError, pa.ArrowException):
            for path in files:  # name the damaged file(s)
                _read_part(path)
            raise
    frame["endpoint"] = pd.Categorical(
        frame["endpoint"].astype("object"), categories=list(ENDPOINTS)
    )
    dup = frame["request_key"].duplicated(keep=False)
    if dup.any():
        frame = frame.sort_values("fetched_at", kind="stable")
        keep = ~frame["request_key"].duplicated(keep="first")
        dropped = int((~keep).sum())
        frame = frame[keep]
        warnings.warn(
            f"{out}: {dropped} duplicate response row(s) (same request_key) were dropped; "
            "the earliest received copy of each request was kept",
            DentalkitWarning,
            stacklevel=2,
        )
    frame = frame.sort_values(
        ["patient_id", "timestamp", "endpoint", "request_key"], kind="stable"
    ).reset_index(drop=True)
    # the format the fetch read the timestamps with: convert.tables parses with it too
    frame.attrs["timestamp_format"] = meta.get("timestamp_format")
    return frame


def read_failures(out: str | os.PathLike[str]) -> pd.DataFrame:
    """Read ``out/failures.parquet`` (an empty table when no run has failed anything)."""
    path = Path(out) / _FAILURES
    if not path.exists():
        return _empty(FAILURES_SCHEMA)
    return _read_failures_file(path)


def verify_store(out: str | os.PathLike[str], cache: Any = None) -> pd.DataFrame:
    """Check every file of a store (and optionally an HTTP cache) without changing anything.

    Parameters
    ----------
    out : path
        The store folder.
    cache : path, optional
        An HTTP cache to check too: a SQLite file (``PRAGMA quick_check`` and every entry
        read back) or a filesystem cache folder (every entry read back). Redis and in-memory
        caches are not checked.

    Returns
    -------
    pandas.DataFrame
        One row per file: ``file``, ``kind``, ``ok`` (bool), ``rows`` (rows or entries read,
        missing when unreadable) and ``reason`` (empty when ok). Files already moved into
        ``_quarantine/`` are listed with kind ``"quarantined"`` and ``ok`` true.

    Raises
    ------
    InputError
        When ``out`` is not a dentalkit store.
    """
    from dentalkit.fetch._http import check_http_cache

    out = Path(out)
    if not out.is_dir() or not (out / _META).exists():
        raise InputError(f"{out} is not a dentalkit responses store (no {_META})")
    rows: list[dict[str, Any]] = []

    def add(path: Path | str, kind: str, n: int | None, reason: str = "") -> None:
        shown = str(path.relative_to(out)) if isinstance(path, Path) else path
        rows.append({"file": shown, "kind": kind, "ok": not reason, "rows": n, "reason": reason})

    try:
        _read_meta(out / _META)
        add(out / _META, "store marker", None)
    except DamagedFileError as exc:
        add(out / _META, "store marker", None, exc.reason)
    for path in sorted((out / _PARTS).glob("part-*.parquet")):
        try:
            add(path, "responses part", _read_part(path).num_rows)
        except DamagedFileError as exc:
            add(path, "responses part", None, exc.reason)
    if (out / _FAILURES).exists():
        try:
            add(out / _FAILURES, "failures table", len(_read_failures_file(out / _FAILURES)))
        except DamagedFileError as exc:
            add(out / _FAILURES, "failures table", None, exc.reason)
    for path in sorted((out / QUARANTINE).glob("*")):
        add(path, "quarantined", None)
    if cache is not None:
        for name, n, reason in check_http_cache(cache):
            add(name, "HTTP cache", n, reason)
    return pd.DataFrame(rows, columns=["file", "kind", "ok", "rows", "reason"]).astype(
        {"rows": "Int64"}
    )
