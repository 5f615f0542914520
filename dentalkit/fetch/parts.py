"""The responses store read part by part: whole patients at a time, never every body at once.

:func:`dentalkit.fetch.store.read_responses` returns the whole ``responses`` table; with
10,000 patients that is 250,000 bodies (about a gigabyte of JSON text, more as Python
strings). :func:`read_responses_in_parts` yields the same table in consecutive pieces of
whole patients: concatenated, the pieces are exactly ``read_responses(out)`` — same rows,
same order, same dtypes, the same de-duplication — so anything that works row by row or
patient by patient (the converters, the contract report) gives the same result on the
pieces as on the whole, and a row's position in the whole table is its position in its
piece plus the rows of the pieces before it.

How: the key columns of every stored part are read first (``patient_id``, ``timestamp``,
``endpoint``, ``request_key``, ``fetched_at``: a few dozen bytes a row) and put in the
order of ``read_responses``; then each piece reads the parts that hold its rows and keeps
only those rows. Memory is one piece plus one stored part at a time. A fetch stores parts
roughly in manifest order, so a piece usually touches a few parts; a store whose parts
interleave every patient costs more reading (each piece reads the parts it touches), never
more memory. Every part is read through the store's own reader, with the same checks
(a damaged part raises :class:`~dentalkit.errors.DamagedFileError` naming the file).
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa

from dentalkit.errors import InputError
from dentalkit.fetch.store import (
    _ORDER,
    RESPONSES_SCHEMA,
    _first_copy_of_each_request,
    _read_part,
    _registry_endpoints,
    _store_files,
)

__all__ = ["DEFAULT_PART_ROWS", "read_responses_in_parts"]

#: Rows of a piece by default: ~800 patients of a study like the demo's (25 requests each),
#: about 90 MB of JSON text.
DEFAULT_PART_ROWS = 20_000


def _keys(files: Sequence[Path], out: Path) -> pd.DataFrame:
    """The order columns of every stored row, with its file and its position in the file,
    sorted and de-duplicated exactly as :func:`~dentalkit.fetch.store.read_responses` does."""
    tables = []
    for k, path in enumerate(files):
        t = _read_part(path, [*_ORDER, "fetched_at"])
        n = t.num_rows
        tables.append(
            t.append_column("_file", pa.array(np.full(n, k, dtype=np.int32))).append_column(
                "_row", pa.array(np.arange(n, dtype=np.int32))
            )
        )
    if not tables:
        return pd.DataFrame(columns=[*_ORDER, "fetched_at", "_file", "_row"])
    keys = pa.concat_tables(tables).to_pandas()
    keys = _first_copy_of_each_request(keys, out, stacklevel=4)
    return keys.sort_values(_ORDER, kind="stable").reset_index(drop=True)


def _bounds(patient_id: pd.Series, rows: int) -> list[tuple[int, int]]:
    """``[start, stop)`` of each piece: whole patients (rows of one ``patient_id`` are
    consecutive), at most ``rows`` rows unless one patient alone has more."""
    n = len(patient_id)
    if not n:
        return [(0, 0)]
    codes = pd.factorize(patient_id, use_na_sentinel=False)[0]
    starts = [*np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]]).tolist(), n]
    bounds, start = [], 0
    for here, after in itertools.pairwise(starts[1:]):
        # cut before the patient starting at ``here`` when it would not fit
        if after - start > rows:
            bounds.append((start, here))
            start = here
    bounds.append((start, n))
    return bounds


def read_responses_in_parts(
    out: str | os.PathLike[str],
    *,
    rows: int = DEFAULT_PART_ROWS,
    columns: Sequence[str] | None = None,
) -> Iterator[pd.DataFrame]:
    """Yield the ``responses`` table of a store in pieces of whole patients.

    Parameters
    ----------
    out : path
        The store folder (as given to :func:`~dentalkit.fetch.fetch_cohort`).
    rows : int
        Largest piece, in rows (default :data:`DEFAULT_PART_ROWS`); a patient is never
        split, so a patient with more rows than this is a piece of its own.
    columns : sequence of str, optional
        Columns to read (default: all of :data:`~dentalkit.fetch.store.RESPONSES_SCHEMA`).
        Reading without ``body`` reads little: ask for the columns you need.

    Yields
    ------
    pandas.DataFrame
        Consecutive pieces of ``read_responses(out)`` (its columns, dtypes and order;
        ``endpoint`` a categorical over the registry's names), each with a fresh
        ``RangeIndex``. A store without rows yields one empty piece. Concatenated, the
        pieces equal ``read_responses(out)``.

    Raises
    ------
    InputError
        ``out`` is not a store, ``rows`` is not a positive integer or a column is unknown.
    DamagedFileError
        A stored part or the store marker cannot be read (named).
    """
    if isinstance(rows, bool) or not isinstance(rows, int) or rows < 1:
        raise InputError(f"rows must be a positive integer, got {rows!r}")
    names = list(RESPONSES_SCHEMA.names if columns is None else columns)
    unknown = [c for c in names if c not in RESPONSES_SCHEMA.names]
    if unknown:
        raise InputError(
            f"unknown responses column(s) {unknown}; columns are {', '.join(RESPONSES_SCHEMA.names)}"
        )
    out = Path(out)
    files, meta = _store_files(out)
    keys = _keys(files, out)
    file_of, row_of = keys["_file"].to_numpy(), keys["_row"].to_numpy()
    bounds = _bounds(keys["patient_id"], rows)
    del keys
    for start, stop in bounds:
        piece = _piece(files, file_of[start:stop], row_of[start:stop], names)
        # the format the fetch read the timestamps with: convert parses with it too
        piece.attrs["timestamp_format"] = meta.get("timestamp_format")
        yield piece


def _piece(
    files: Sequence[Path], file_of: np.ndarray, row_of: np.ndarray, names: list[str]
) -> pd.DataFrame:
    """The rows ``(file_of[i], row_of[i])`` in that order, as a responses DataFrame."""
    schema = pa.schema([RESPONSES_SCHEMA.field(n) for n in names])
    if not len(file_of):
        frame = schema.empty_table().to_pandas()
    else:
        pieces, order = [], []
        for k in np.unique(file_of).tolist():
            where = np.flatnonzero(file_of == k)
            pieces.append(_read_part(files[k], names).take(pa.array(row_of[where])))
            order.append(where)
        table = pa.concat_tables(pieces)
        # back from file order to the table's order
        table = table.take(pa.array(np.argsort(np.concatenate(order), kind="stable")))
        frame = table.to_pandas()
        del table, pieces
    if "endpoint" in frame:
        frame["endpoint"] = _registry_endpoints(frame["endpoint"])
    return frame
