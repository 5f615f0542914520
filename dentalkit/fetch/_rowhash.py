"""Checksums of the responses store's rows (private): each body and each request identity.

Every row of a responses part carries two hex SHA-256 digests, written with the row and
checked whenever the row is read back (:mod:`dentalkit.fetch.store`):

* ``body_sha256`` — of the body's UTF-8 bytes (``sha256sum`` of the exact JSON text);
* ``key_sha256`` — of the row's request identity: ``request_key``, ``patient_id``,
  ``timestamp``, ``endpoint``, ``image_url`` and ``options``, joined by the unit separator
  U+001F (a missing value as U+0000).

Parquet's page checksums (CRC-32 of every page, also written and verified) catch damage to
the file's pages; these digests also catch what a CRC can miss, and tie each body to the
request it answers: a body moved to another row, or a request key changed, fails them.

The digests are computed from the Arrow buffers (no Python string per value).
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["IDENTITY_COLUMNS", "body_digests", "key_digests", "mismatches"]

#: Columns whose values ``key_sha256`` covers, in this order.
IDENTITY_COLUMNS = ("request_key", "patient_id", "timestamp", "endpoint", "image_url", "options")
_SEPARATOR = "\x1f"
_MISSING = "\x00"


#: Above this many bytes in one column, the values are hashed by several threads
#: (``hashlib`` releases the GIL while it hashes more than 2 KiB).
PARALLEL_BYTES = 8 << 20


def _digest_chunk(arr: pa.Array) -> list[str | None]:
    if pa.types.is_large_string(arr.type):
        offsets_type: type = np.int64
    else:
        arr = arr if pa.types.is_string(arr.type) else arr.cast(pa.string())
        offsets_type = np.int32
    n = len(arr)
    if n == 0:
        return []
    _, offsets_buf, data_buf = arr.buffers()
    width = np.dtype(offsets_type).itemsize
    offsets = np.frombuffer(offsets_buf, dtype=offsets_type, count=n + 1, offset=arr.offset * width)
    data = memoryview(data_buf) if data_buf is not None else memoryview(b"")
    starts, ends = offsets[:-1].tolist(), offsets[1:].tolist()
    valid = arr.is_valid().to_numpy(zero_copy_only=False).tolist() if arr.null_count else [True] * n
    size = ends[-1] - starts[0]
    if size <= PARALLEL_BYTES or n < 2 or (os.cpu_count() or 1) < 2:
        return _hash_range(data, starts, ends, valid)
    from concurrent.futures import ThreadPoolExecutor

    workers = min(os.cpu_count() or 2, 8)
    step = -(-n // workers)
    with ThreadPoolExecutor(workers) as pool:
        parts = pool.map(
            lambda k: _hash_range(
                data, starts[k : k + step], ends[k : k + step], valid[k : k + step]
            ),
            range(0, n, step),
        )
        return [d for part in parts for d in part]


def _hash_range(data: memoryview, starts: list, ends: list, valid: list) -> list[str | None]:
    sha = hashlib.sha256
    return [
        sha(data[a:b]).hexdigest() if ok else None
        for a, b, ok in zip(starts, ends, valid, strict=True)
    ]


def _digests(column: pa.ChunkedArray | pa.Array) -> list[str | None]:
    chunks = column.chunks if isinstance(column, pa.ChunkedArray) else [column]
    out: list[str | None] = []
    for chunk in chunks:
        out += _digest_chunk(chunk)
    return out


def body_digests(table: pa.Table) -> list[str | None]:
    """Hex SHA-256 of each ``body`` of ``table`` (``None`` where the body is missing)."""
    return _digests(table.column("body"))


def key_digests(table: pa.Table) -> list[str]:
    """Hex SHA-256 of each row's request identity (:data:`IDENTITY_COLUMNS`)."""
    columns = []
    for name in IDENTITY_COLUMNS:
        col = table.column(name)
        if pa.types.is_dictionary(col.type):
            col = col.cast(pa.string())
        columns.append(col)
    joined = pc.binary_join_element_wise(
        *columns, _SEPARATOR, null_handling="replace", null_replacement=_MISSING
    )
    return _digests(joined)  # type: ignore[return-value]


def mismatches(stated: pa.ChunkedArray, computed: list[str | None]) -> np.ndarray:
    """Positions where a stated digest differs from the computed one.

    Rows without a stated digest (written before digests existed) are not compared.
    """
    got = stated.to_pylist()
    if got == computed:
        return np.empty(0, dtype=np.int64)
    return np.array(
        [i for i, (s, c) in enumerate(zip(got, computed, strict=True)) if s is not None and s != c],
        dtype=np.int64,
    )
