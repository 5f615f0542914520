"""The responses store: every successful answer, losslessly, as Parquet parts under ``out/``.

Layout of an ``out`` folder::

    out/_dentalkit.json                  store metadata: format version, the service's base URL
    out/responses/part-<UTC>-<uuid>.parquet   the ``responses`` table, in parts
    out/responses/_ledger.tsv            the request keys each part was written with
    out/failures.parquet                 requests whose latest attempt failed, and why
    out/calibration.parquet              per-image mm_per_px of the manifests (fetch._sidefiles)

Every file is written atomically (a temporary file in the same folder, ``fsync``, then
``os.replace``), so a reader — or a run killed at any moment — sees either the whole part or
none of it (the ledger is the one append-only file: a line cut short by a kill is skipped). A part is read back before it is renamed into place, so nothing is counted as
stored that cannot be read. Parts are only ever added; :func:`read_responses` reads the folder
with ``pandas.read_parquet`` and de-duplicates by ``request_key`` defensively.

Damage after writing (a truncated, emptied or garbled file, a flipped bit) is found when the
file is read back: every part, ``failures.parquet`` and ``_dentalkit.json`` are checked on
open and a damaged one raises :class:`~dentalkit.errors.DamagedFileError` naming the file.
Parts are written with Parquet page checksums (CRC-32 of every page) that every read
verifies, and each row carries the SHA-256 of its body (``body_sha256``) and of its request
identity (``key_sha256``, see :mod:`dentalkit.fetch._rowhash`), recomputed on every read:
a body or a request key that changed on disk is never read as data. Parts written before
these checksums existed have no page checksums and null digests; they are read as before. The fetch
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
``fetched_at``, ``from_cache``, ``error``, ``body_sha256`` and ``key_sha256``.
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

import numpy as np
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
from dentalkit.fetch._rowhash import IDENTITY_COLUMNS, body_digests, key_digests, mismatches

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
_LEDGER = "_ledger.tsv"
#: Folder inside a store where damaged files are moved (never deleted).
QUARANTINE = "_quarantine"
#: Columns that identify a request (enough to send it again).
REQUEST_COLUMNS = ["patient_id", "timestamp", "endpoint", "image_url", "options", "request_key"]
#: Columns whose digests a resume checks besides the keys: the body and the identity.
_DIGESTED = ["body", "patient_id", "timestamp", "endpoint", "image_url", "options"]
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
        ("body_sha256", pa.string()),
        ("key_sha256", pa.string()),
    ]
)
#: The checksum columns (null in parts written before they existed).
CHECKSUM_COLUMNS = ("body_sha256", "key_sha256")
#: Columns written with dictionary encoding: not the bodies, keys and digests, which are
#: all different (a dictionary of them is one more copy of the part while it is written).
_DICTIONARY = [
    n for n in RESPONSES_SCHEMA.names if n not in ("body", "request_key", *CHECKSUM_COLUMNS)
]
#: Columns with min/max statistics: not the bodies (statistics of JSON text say nothing,
#: and the writer copies the longest body several times to make them: a 63 MB body took
#: 7× its size to write, 2× without).
_STATISTICS = [n for n in RESPONSES_SCHEMA.names if n != "body"]
#: A part larger than this in memory gives Arrow's freed memory back after it is written.
_LARGE_PART_BYTES = 16 << 20
#: Parquet data pages of format version 2: the writer compresses a page's values straight
#: from its encoder's buffer. A version-1 page first copies levels and values into one
#: more buffer, a whole extra copy of the largest body (a 63 MiB body written: 2.1x its size
#: above the table with version 1, 1.2x with version 2; a realistic JSON body, 2.5x and
#: 1.9x). Every Parquet reader of the last years reads both (pyarrow, DuckDB, polars, Spark).
_PAGE_VERSION = "2.0"

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


def _read_part(path: Path, columns: list[str] | None = None, verify: bool = True) -> pa.Table:
    """One responses part, fully decoded, checked and cast to :data:`RESPONSES_SCHEMA`.

    Page checksums are verified (parts that have them), and the rows' ``body_sha256`` and
    ``key_sha256`` recomputed (:func:`_check_digests`) for the columns read; ``verify=False``
    skips both. Raises
    :class:`DamagedFileError` for a file that cannot be read, lacks columns, lacks request
    keys, or holds a row whose digest does not match.
    """
    out = path.parent.parent
    names = list(columns or RESPONSES_SCHEMA.names)
    try:
        with pq.ParquetFile(path, page_checksum_verification=verify) as part:
            present = set(part.schema_arrow.names)
            lacking = [n for n in names if n not in present and n not in CHECKSUM_COLUMNS]
            if lacking:
                raise KeyError(f"no column(s) {lacking}")
            table = part.read(columns=[n for n in names if n in present])
        for name in names:
            if name not in present:  # a part written before checksums existed
                table = table.append_column(name, pa.nulls(table.num_rows, pa.string()))
        table = table.select(names).cast(pa.schema([RESPONSES_SCHEMA.field(n) for n in names]))
    except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
        raise DamagedFileError(
            path, "responses part", f"{type(exc).__name__}: {exc}", _fix(out)
        ) from None
    if "request_key" in names and table.column("request_key").null_count:
        raise DamagedFileError(path, "responses part", "rows without a request_key", _fix(out))
    bad = _check_digests(table) if verify else ""
    if bad:
        raise DamagedFileError(path, "responses part", bad, _fix(out))
    return table


def _check_digests(table: pa.Table) -> str:
    """Why the rows of ``table`` fail their digests (``""`` when none does).

    Only digests whose columns were read are recomputed: ``body_sha256`` with ``body``,
    ``key_sha256`` with the identity columns.
    """
    names = set(table.column_names)
    found = []
    if {"body", "body_sha256"} <= names:
        bad = mismatches(table.column("body_sha256"), body_digests(table))
        if len(bad):
            found.append((bad, "body does not match its body_sha256"))
    if {"key_sha256", *IDENTITY_COLUMNS} <= names:
        bad = mismatches(table.column("key_sha256"), key_digests(table))
        if len(bad):
            found.append((bad, "request identity does not match its key_sha256"))
    if not found:
        return ""
    texts = []
    for bad, what in found:
        first = int(bad[0])
        who = table.column("patient_id")[first].as_py() if "patient_id" in names else None
        texts.append(
            f"{len(bad)} row(s) whose {what} (first: row {first}"
            + (f", patient {who!r}" if who is not None else "")
            + ")"
        )
    return "; ".join(texts) + " — changed on disk after it was written"


def _salvage_requests(path: Path) -> pd.DataFrame | None:
    """The request columns of a damaged part, as far as they can be trusted; or ``None``.

    Rows whose ``key_sha256`` does not match are left out (their identity changed on disk).
    """
    names = [*REQUEST_COLUMNS, "key_sha256"]
    try:
        with pq.ParquetFile(path, page_checksum_verification=True) as part:
            present = set(part.schema_arrow.names)
            if not set(REQUEST_COLUMNS) <= present:
                return None
            table = part.read(columns=[n for n in names if n in present])
        if "key_sha256" not in present:
            table = table.append_column("key_sha256", pa.nulls(table.num_rows, pa.string()))
        table = table.select(names).cast(pa.schema([RESPONSES_SCHEMA.field(n) for n in names]))
    except (OSError, ValueError, KeyError, pa.ArrowException):
        return None
    bad = mismatches(table.column("key_sha256"), key_digests(table))
    keep = np.ones(table.num_rows, dtype=bool)
    keep[bad] = False
    keep &= table.column("request_key").is_valid().to_numpy(zero_copy_only=False)
    frame = table.filter(pa.array(keep)).select(REQUEST_COLUMNS).to_pandas()
    frame["endpoint"] = frame["endpoint"].astype("object")
    return frame


def _append_ledger(path: Path, part: str, keys: list[str]) -> None:
    """Add a stored part's request keys to the ledger (a failure only loses the hint)."""
    try:
        with open(path, "a", encoding="utf-8") as fh:
            fh.write("".join(f"{part}\t{key}\n" for key in keys))
            fh.flush()
            os.fsync(fh.fileno())
    except OSError as exc:
        log.warning("could not add %s to the key ledger %s (%s)", part, path, exc)


def _read_ledger(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    try:
        text = path.read_bytes().decode("utf-8", "replace")
    except OSError:
        return out
    for line in text.splitlines():
        part, sep, key = line.partition("\t")
        if sep and part.startswith("part-") and len(key) == 64:
            out.setdefault(part, []).append(key)
    return out


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
        #: Request keys that quarantined parts held: their readable rows and, for a part
        #: that cannot be read at all, the keys the ledger lists for it.
        self.lost_keys: set[str] = set()
        self._ledger_keys: dict[str, list[str]] | None = None
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
        :attr:`lost_rows` (so requests that are not in the current manifest can be rebuilt),
        and the keys it held in :attr:`lost_keys` (from the ledger, :meth:`ledger`, when
        nothing of it can be read).
        """
        keys: set[str] = set()
        for path in self._part_files():
            try:
                table = _read_part(path, ["request_key", *CHECKSUM_COLUMNS, *_DIGESTED])
            except DamagedFileError as exc:
                if not self.heal:
                    raise
                held = _salvage_requests(path)
                listed = set(self.ledger().get(path.name, ()))
                if held is not None:
                    self.lost_rows.append(held)
                    listed |= set(held["request_key"])
                known = held is not None or bool(listed)
                self._quarantine(path, exc, rows=len(listed) if known else None)
                self.lost_keys |= listed
                continue
            keys.update(table.column("request_key").to_pylist())
        return keys

    def ledger(self) -> dict[str, list[str]]:
        """The key ledger: part file name → the request keys it was written with.

        ``responses/_ledger.tsv`` gets one line per row (``part name``, tab, ``request
        key``) when a part is stored. It is read only when a part cannot be read at all, to
        know which rows were lost with it; lines that do not parse are skipped.
        """
        if self._ledger_keys is None:
            self._ledger_keys = _read_ledger(self.parts / _LEDGER)
        return self._ledger_keys

    def append(self, rows: Iterable[Mapping[str, Any]], *, consume: bool = False) -> Path | None:
        """Write ``rows`` (dicts with the responses columns) as one new part, atomically.

        The digests ``body_sha256`` and ``key_sha256`` are computed here, the part is
        written with page checksums, and it is read back (digests and checksums verified)
        before it is renamed into place.

        ``consume=True`` with a list empties the list once its rows are in the Arrow table,
        so that their bodies (Python strings) are freed before the part is written: a part
        is then written from one copy of each body, Arrow's, and the writer's own two
        (encoded values, page). If the Parquet writer fails, the list gets its rows back
        (from the table); a failure after that (the read-back, the rename) leaves it empty,
        and the next fetch sends those requests again (the HTTP cache answers them).
        """
        given = rows
        rows = list(rows)
        if not rows:
            return None
        frame = pd.DataFrame.from_records(rows)
        frame["session_time"] = parse_session_time(frame["timestamp"], self.timestamp_format)
        plain = pa.schema([f for f in RESPONSES_SCHEMA if f.name not in CHECKSUM_COLUMNS])
        table = pa.Table.from_pandas(frame.reindex(columns=plain.names), schema=plain, preserve_index=False)  # fmt: skip
        del frame
        keys = [r["request_key"] for r in rows]
        if consume and isinstance(given, list):
            given.clear()  # with ``rows`` and ``frame``, the last references to the bodies
        rows.clear()
        table = table.append_column("body_sha256", pa.array(body_digests(table), pa.string()))
        table = table.append_column("key_sha256", pa.array(key_digests(table), pa.string()))
        n = table.num_rows
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        target = self.parts / f"part-{stamp}-{uuid.uuid4().hex}.parquet"
        pending = [table]
        del table

        def write(tmp: str) -> None:  # the table is released before the read-back
            table = pending[0]
            large = table.nbytes > _LARGE_PART_BYTES
            pq.write_table(
                table,
                tmp,
                write_page_checksum=True,
                use_dictionary=_DICTIONARY,
                write_statistics=_STATISTICS,
                data_page_version=_PAGE_VERSION,
            )
            pending.clear()
            del table
            if large:  # Arrow's allocator keeps freed memory; hand it back before reading
                pa.default_memory_pool().release_unused()

        def check(tmp: str) -> None:  # read back before it counts as stored
            if _read_part(Path(tmp)).num_rows != n:
                raise DamagedFileError(tmp, "responses part", "rows missing on read-back")

        try:
            _atomic_write(target, write, check)
        except BaseException:
            if consume and isinstance(given, list) and pending and not given:
                given.extend(pending[0].drop_columns(list(CHECKSUM_COLUMNS)).to_pylist())
            raise
        _append_ledger(self.parts / _LEDGER, target.name, keys)
        log.debug("stored %d responses in %s", n, target.name)
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


def read_responses(out: str | os.PathLike[str], *, verify: bool = True) -> pd.DataFrame:
    """Read the ``responses`` table of an ``out`` folder.

    Every part is checked as it is read: its Parquet page checksums, and each row's
    ``body_sha256`` and ``key_sha256`` (parts written before dentalkit stored them have
    neither, and are read unchecked). ``verify=False`` skips these checks (a little
    faster; for a copy you trust).

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
        When a part or the store marker cannot be read, or a row fails its checksums (the
        message names the file and how to recover; see :func:`verify_store`).
    """
    out = Path(out)
    parts = out / _PARTS
    files, meta = _store_files(out)
    if not files:
        frame = _empty(RESPONSES_SCHEMA)
    else:
        # part by part, each checked (page checksums, digests); a damaged one is named
        tables = [_read_part(path, verify=verify) for path in files]
        try:
            frame = pa.concat_tables(tables).to_pandas()
        except pa.ArrowException as exc:  # unchecked (verify=False) text that is not UTF-8
            raise DamagedFileError(
                parts, "responses parts", f"{type(exc).__name__}: {exc}", _fix(out)
            ) from None
    frame = _first_copy_of_each_request(frame, out, stacklevel=3)
    frame = frame.sort_values(_ORDER, kind="stable").reset_index(drop=True)
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
        An HTTP cache to check too: a SQLite file (``PRAGMA integrity_check`` and every entry
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
    from dentalkit.fetch._cache import check_http_cache

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


#: The columns that order the responses table (and its pieces: ``fetch.parts``).
_ORDER = ["patient_id", "timestamp", "endpoint", "request_key"]


def _store_files(out: Path) -> tuple[list[Path], dict]:
    """The stored part files of the store ``out``, in name order, and its marker's metadata."""
    if not (out / _META).exists():
        raise InputError(
            f"{out} is not a dentalkit responses store (no {_META}); fetch into it first"
        )
    return sorted((out / _PARTS).glob("part-*.parquet")), _read_meta(out / _META)


def _registry_endpoints(endpoint: pd.Series) -> pd.Categorical:
    """``endpoint`` as a categorical over every name of the endpoint registry."""
    return pd.Categorical(endpoint.astype("object"), categories=list(ENDPOINTS))


def _first_copy_of_each_request(frame: pd.DataFrame, out: Path, *, stacklevel: int) -> pd.DataFrame:
    """Rows of the stored responses with ``endpoint`` as the registry's categorical and one
    row per ``request_key`` (the earliest received copy; a warning counts the dropped ones).

    Shared by :func:`read_responses` and ``fetch.parts`` (the keys of the pieces), so both
    read a store with the same rule. ``stacklevel`` is the warning's, counted from here.
    """
    frame["endpoint"] = _registry_endpoints(frame["endpoint"])
    if frame["request_key"].duplicated(keep=False).any():
        frame = frame.sort_values("fetched_at", kind="stable")
        keep = ~frame["request_key"].duplicated(keep="first")
        dropped = int((~keep).sum())
        frame = frame[keep]
        warnings.warn(
            f"{out}: {dropped} duplicate response row(s) (same request_key) were dropped; "
            "the earliest received copy of each request was kept",
            DentalkitWarning,
            stacklevel=stacklevel,
        )
    return frame
