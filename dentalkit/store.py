"""The responses store: every successful answer, losslessly, as Parquet parts under ``out/``.

Layout of an ``out`` folder::

    out/_dentalkit.json                  store metadata: format version, the service's base URL
    out/responses/part-<UTC>-<uuid>.parquet   the ``responses`` table, in parts
    out/failures.parquet                 requests whose latest attempt failed, and why

Every file is written atomically (a temporary file in the same folder, ``fsync``, then
``os.replace``), so a reader — or a run killed at any moment — sees either the whole part or
none of it. Parts are only ever added; :func:`read_responses` reads the folder with
``pandas.read_parquet`` and de-duplicates by ``request_key`` defensively.

The ``responses`` schema is the data contract's (``docs/data-contract.md``): the session key
``patient_id``, ``timestamp`` (verbatim, from the request), ``session_time`` (ISO 8601 parsed to
UTC, NaT otherwise), ``endpoint``, ``model_version`` (response ``Version``), then
``request_key``, ``image_url``, ``options``, ``status_code``, ``body`` (the exact JSON text),
``fetched_at``, ``from_cache`` and ``error``.
"""

from __future__ import annotations

import json
import logging
import os
import tempfile
import uuid
import warnings
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dentalkit.endpoints import ENDPOINTS
from dentalkit.errors import ConfigurationError, DentalkitWarning, InputError

__all__ = [
    "FAILURES_SCHEMA",
    "FORMAT_VERSION",
    "RESPONSES_SCHEMA",
    "ResponseStore",
    "parse_session_time",
    "read_failures",
    "read_responses",
]

log = logging.getLogger("dentalkit")

#: Version of the on-disk layout written to ``_dentalkit.json``.
FORMAT_VERSION = 1
_META = "_dentalkit.json"
_PARTS = "responses"
_FAILURES = "failures.parquet"

_UTC_NS = pa.timestamp("ns", tz="UTC")
_UTC_US = pa.timestamp("us", tz="UTC")

#: Arrow schema of the ``responses`` table (docs/data-contract.md).
RESPONSES_SCHEMA = pa.schema(
    [
        ("patient_id", pa.string()),
        ("timestamp", pa.string()),
        ("session_time", _UTC_NS),
        ("endpoint", pa.dictionary(pa.int16(), pa.string())),
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


def parse_session_time(timestamps: pd.Series) -> pd.Series:
    """ISO 8601 timestamps → ``datetime64[ns, UTC]``; NaT for anything else.

    Dates, date-times with or without a zone are accepted; naive times are taken as UTC
    (docs/data-contract.md). Vectorized over the whole column.

    >>> parse_session_time(
    ...     pd.Series(["2024-03-05", "2024-03-05T10:00:00+02:00", "5/3/24"])
    ... ).tolist()
    [Timestamp('2024-03-05 00:00:00+0000', tz='UTC'), Timestamp('2024-03-05 08:00:00+0000', tz='UTC'), NaT]
    """
    parsed = pd.to_datetime(timestamps.astype("str"), format="ISO8601", utc=True, errors="coerce")
    return parsed.astype("datetime64[ns, UTC]")


def _fsync_dir(folder: Path) -> None:
    if os.name == "nt":  # pragma: no cover - directories cannot be opened on Windows
        return
    fd = os.open(folder, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _atomic_write(target: Path, write: Any) -> None:
    """Call ``write(tmp_path)``, fsync it, then rename it over ``target`` (same folder)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    _fsync_dir(target.parent)


class ResponseStore:
    """One ``out`` folder holding the answers of one service.

    Parameters
    ----------
    out : path
        The folder (created when missing).
    base_url : str
        The service the answers come from. Recorded in ``_dentalkit.json``; a store that
        already holds another service's answers refuses to open (request keys do not include
        the host, so mixing would silently merge two services' answers).
    """

    def __init__(self, out: str | os.PathLike[str], base_url: str) -> None:
        self.out = Path(out)
        self.parts = self.out / _PARTS
        self.base_url = base_url
        self.parts.mkdir(parents=True, exist_ok=True)
        meta_path = self.out / _META
        if meta_path.exists():
            meta = json.loads(meta_path.read_text())
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

    def completed_keys(self) -> set[str]:
        """Request keys already stored (reads only the ``request_key`` column)."""
        parts = self._part_files()
        if not parts:
            return set()
        table = pq.read_table([str(p) for p in parts], columns=["request_key"])
        return set(table.column(0).to_pylist())

    def append(self, rows: Iterable[Mapping[str, Any]]) -> Path | None:
        """Write ``rows`` (dicts with the responses columns) as one new part, atomically."""
        rows = list(rows)
        if not rows:
            return None
        frame = pd.DataFrame.from_records(rows)
        frame["session_time"] = parse_session_time(frame["timestamp"])
        table = pa.Table.from_pandas(frame, schema=RESPONSES_SCHEMA, preserve_index=False)
        stamp = datetime.now(UTC).strftime("%Y%m%dT%H%M%S%fZ")
        target = self.parts / f"part-{stamp}-{uuid.uuid4().hex}.parquet"
        _atomic_write(target, lambda tmp: pq.write_table(table, tmp))
        log.debug("stored %d responses in %s", len(rows), target.name)
        return target

    def read_failures(self) -> pd.DataFrame:
        """The failures table of the last run (empty when there is none)."""
        return read_failures(self.out)

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
    """
    out = Path(out)
    parts = out / _PARTS
    if not (out / _META).exists():
        raise InputError(
            f"{out} is not a dentalkit responses store (no {_META}); fetch into it first"
        )
    if not any(parts.glob("part-*.parquet")):
        frame = _empty(RESPONSES_SCHEMA)
    else:
        frame = pd.read_parquet(parts, schema=RESPONSES_SCHEMA)
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
    return frame


def read_failures(out: str | os.PathLike[str]) -> pd.DataFrame:
    """Read ``out/failures.parquet`` (an empty table when no run has failed anything)."""
    path = Path(out) / _FAILURES
    if not path.exists():
        return _empty(FAILURES_SCHEMA)
    return pq.read_table(path, schema=FAILURES_SCHEMA).to_pandas()
