"""Ways a file gets damaged after it was written, for the store-healing tests.

Each function damages ``path`` in place and returns nothing. ``KINDS`` names them for
parametrised tests; ``body_column`` garbles only the ``body`` column chunk of a responses
part (its request columns stay readable, so the rows it held can be rebuilt).
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow.parquet as pq


def truncated(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def emptied(path: Path) -> None:
    path.write_bytes(b"")


def garbage(path: Path) -> None:
    path.write_bytes(os.urandom(max(path.stat().st_size, 64)))


def garbled_middle(path: Path) -> None:
    """Random bytes over the middle third (the footer and the magic bytes stay)."""
    data = bytearray(path.read_bytes())
    a, b = len(data) // 3, 2 * len(data) // 3
    data[a:b] = os.urandom(b - a)
    path.write_bytes(bytes(data))


KINDS = {
    "truncated": truncated,
    "emptied": emptied,
    "garbage": garbage,
    "garbled-middle": garbled_middle,
}


def body_column(path: Path) -> None:
    """Garble the data pages of the ``body`` column only (every row group)."""
    meta = pq.ParquetFile(path).metadata
    names = [meta.schema.column(i).name for i in range(meta.num_columns)]
    col = names.index("body")
    data = bytearray(path.read_bytes())
    for g in range(meta.num_row_groups):
        chunk = meta.row_group(g).column(col)
        start = chunk.dictionary_page_offset or chunk.data_page_offset
        start = min(start, chunk.data_page_offset)
        size = chunk.total_compressed_size
        a, b = start + size // 4, start + 3 * size // 4
        data[a:b] = os.urandom(b - a)
    path.write_bytes(bytes(data))
