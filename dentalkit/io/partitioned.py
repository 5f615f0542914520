"""Scale out: dentalkit tables as patient-partitioned Parquet, and dask helpers.

Beyond one machine, dentalkit uses existing engines and no scheduler of its own
(``docs/scaling.md``):

* **fetching** — ``fetch_cohort(..., executor=dask_client.get_executor(pure=False))`` runs the
  requests on a ``dask.distributed`` cluster; every worker shares one Redis HTTP cache
  (``cache="redis://host:port/db"``) and the calling process alone writes the store;
* **analysis** — tables written with :func:`write_partitioned` are split into files by a
  stable hash of ``patient_id`` (:func:`patient_bucket`), so all rows of a patient (all of
  their sessions) sit in one file. ``dask.dataframe``, DuckDB and pyarrow read the folder as
  one table; :func:`read_dask` makes one dask partition per file, so per-session analyses
  such as :func:`dentalkit.ceph.measure` run partition by partition with
  :func:`map_partitions` and give exactly the single-machine result.

Layout of a partitioned table::

    landmarks/_dentalkit_partitioning.json   scheme, bucket count, key column, row counts
    landmarks/part-00.parquet                rows whose patient falls in bucket 0
    landmarks/part-07.parquet                ... (empty buckets have no file)

Files starting with ``_`` or ``.`` are ignored by pyarrow, dask and DuckDB's
``part-*.parquet`` glob, so readers see only the data.

Examples
--------
>>> import tempfile, pandas as pd
>>> t = pd.DataFrame({"patient_id": ["P1", "P2", "P1"], "x": [1.0, 2.0, 3.0]})
>>> with tempfile.TemporaryDirectory() as d:
...     _ = write_partitioned(t, d + "/t", buckets=8)
...     back = read_partitioned(d + "/t", patients=["P1"])
>>> back["x"].tolist()
[1.0, 3.0]
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import uuid
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dentalkit._atomic import fsync_path
from dentalkit.errors import InputError, require

__all__ = [
    "DEFAULT_BUCKETS",
    "FETCH_DASK_CONFIG",
    "PARTITIONING_FILE",
    "map_partitions",
    "partition_files",
    "patient_bucket",
    "read_dask",
    "read_partitioned",
    "write_partitioned",
]

#: Buckets of :func:`write_partitioned` by default: a few files per worker core on a small
#: cluster, each still large enough (10 000 patients → ~300 per file) for Parquet to pay off.
DEFAULT_BUCKETS = 32
#: dask settings for clusters that mostly wait on HTTP (``fetch_cohort``). dask's defaults
#: suit compute: every worker samples its threads' stacks every 10 ms (the statistical
#: profiler) and every process ticks its event loop monitor every 20 ms. With many threads
#: waiting on the network that background work costs more CPU than the requests themselves
#: (measured with 4 workers × 4 threads on 2 cores: 28 ms of worker CPU per request at dask's
#: defaults, 15 ms with these). Set it before starting the cluster, in the process that
#: starts the workers (nannies hand their config to the workers they start or restart)::
#:
#:     dask.config.set(FETCH_DASK_CONFIG)
#:     cluster = LocalCluster(n_workers=4, threads_per_worker=8)
#:
#: For ``dask worker`` processes started elsewhere, put the same keys in their dask config.
FETCH_DASK_CONFIG: dict[str, Any] = {
    "distributed.worker.profile.enabled": False,
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "2s",
    "distributed.worker.memory.monitor-interval": "1s",
}
#: The metadata file of a partitioned table.
PARTITIONING_FILE = "_dentalkit_partitioning.json"
#: Name of the hashing scheme recorded in :data:`PARTITIONING_FILE`.
SCHEME = "blake2b-64(utf-8 key) mod buckets"
_MAX_BUCKETS = 4096


def _bucket_of(key: str, buckets: int) -> int:
    digest = hashlib.blake2b(key.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % buckets


def patient_bucket(
    patient_ids: Sequence[str] | pd.Series | np.ndarray, buckets: int = DEFAULT_BUCKETS
) -> np.ndarray:
    """The bucket (0 … ``buckets``-1) of each patient: a stable hash, the same everywhere.

    The bucket is the first 8 bytes of the BLAKE2b digest (RFC 7693) of the UTF-8 patient id,
    read as a big-endian unsigned integer, modulo ``buckets``. Unlike Python's ``hash()`` it
    does not change between processes, machines or Python versions, so a patient always lands
    in the same file. Each distinct id is hashed once.

    Parameters
    ----------
    patient_ids : sequence of str
        Patient identifiers (strings; missing values are an error).
    buckets : int
        Number of buckets, 1 … 4096.

    Returns
    -------
    numpy.ndarray of int32

    Raises
    ------
    InputError
        A missing or non-string patient id (naming its position), or a bad bucket count.

    Examples
    --------
    >>> patient_bucket(["P001", "P002", "P001"], buckets=16).tolist()
    [15, 4, 15]
    """
    if isinstance(buckets, bool) or not isinstance(buckets, int | np.integer):
        raise InputError(f"buckets must be an integer, got {type(buckets).__name__}")
    if not 1 <= buckets <= _MAX_BUCKETS:
        raise InputError(f"buckets must be between 1 and {_MAX_BUCKETS}, got {buckets}")
    codes, uniques = pd.factorize(pd.Series(patient_ids, dtype=object), use_na_sentinel=True)
    if (codes < 0).any():
        row = int(np.flatnonzero(codes < 0)[0])
        raise InputError(
            f"patient_id is missing at row {row} (0-based position); every row needs a patient"
        )
    keys = list(uniques)
    first_bad = next((i for i, k in enumerate(keys) if not isinstance(k, str)), None)
    if first_bad is not None:
        bad = keys[first_bad]
        row = int(np.flatnonzero(codes == first_bad)[0])
        raise InputError(
            f"patient_id at row {row} (0-based position) is a {type(bad).__name__} ({bad!r}), not a string; "
            "patient ids are strings (cast the column with .astype(str) if that is what you mean)"
        )
    per_unique = np.fromiter(
        (_bucket_of(k, buckets) for k in keys), dtype=np.int32, count=len(keys)
    )
    return per_unique[codes]


def write_partitioned(
    table: pd.DataFrame,
    path: str | os.PathLike[str],
    *,
    buckets: int = DEFAULT_BUCKETS,
    by: str = "patient_id",
    overwrite: bool = False,
    writer: Callable[[pd.DataFrame, Path], Any] | None = None,
    name: str | None = None,
) -> Path:
    """Write a table as Parquet files partitioned by a stable hash of ``by`` (patient id).

    Rows keep their columns and dtypes (categoricals, ``str``, timestamps with zone); each
    file holds the rows of the patients of one bucket, in their original order. The whole
    folder appears at once: it is written under a temporary name and renamed into place, so
    a reader or a crash never sees a half-written table.

    Parameters
    ----------
    table : DataFrame
        Any dentalkit table with a ``by`` column (``landmarks``, ``measures`` …).
    path : path-like
        The folder to create.
    buckets : int
        Number of hash buckets (files at most; empty buckets get no file).
    by : str
        Key column, ``patient_id`` by default: all rows of a patient stay together, so
        per-session and per-patient analyses (:func:`dentalkit.ceph.measure`,
        :func:`dentalkit.ceph.change`) can run on each file alone.
    overwrite : bool
        Replace an existing folder (it is swapped out only after the new one is complete).
    writer : callable, optional
        ``writer(frame, file_path)`` writes one file; default pyarrow with the table's
        declared schema (``name``). Pass e.g. ``dentalkit.io.write_geoparquet`` for
        the ``teeth`` table, or ``lambda f, p: f.to_parquet(p)`` for a GeoDataFrame.
    name : str, optional
        The table's name in the column catalogue (``landmarks``, ``ceph_measures`` …):
        every part is written with its declared Arrow types, nullability and field
        metadata (description, unit, values), like :func:`dentalkit.io.write_parquet`.
        Default: the folder's name when it is a declared table, else pyarrow infers.

    Returns
    -------
    pathlib.Path
        The folder.

    Raises
    ------
    InputError
        No ``by`` column, a missing / non-string key, a bad bucket count, or ``path`` exists
        and ``overwrite`` is false.
    """
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"write_partitioned takes a DataFrame, got {type(table).__name__}")
    if by not in table.columns:
        raise InputError(
            f"the table has no {by!r} column to partition by; columns are {list(table.columns)}"
        )
    target = Path(path)
    if target.exists() and not overwrite:
        raise InputError(f"{target} exists; pass overwrite=True to replace it")
    bucket = patient_bucket(table[by], buckets)
    from dentalkit.io._dictionary import partition_writer  # here: dentalkit.io imports us

    write = writer or partition_writer(name, target.name)
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex}"
    staging.mkdir()
    try:
        order = np.argsort(bucket, kind="stable")  # rows of a bucket keep their order
        present, starts = np.unique(bucket[order], return_index=True)
        bounds = [*starts[1:].tolist(), len(order)]
        if not len(table):  # one empty file keeps the schema
            present, starts, bounds = np.array([0]), np.array([0]), [0]
        width = len(str(buckets - 1))
        rows: dict[str, int] = {}
        for b, lo, hi in zip(present.tolist(), starts.tolist(), bounds, strict=True):
            name = f"part-{b:0{width}d}.parquet"
            write(table.iloc[order[lo:hi]].reset_index(drop=True), staging / name)
            rows[name] = hi - lo
        meta = {
            "format": "dentalkit partitioned table",
            "scheme": SCHEME,
            "key": by,
            "buckets": buckets,
            "rows": len(table),
            "files": rows,
        }
        (staging / PARTITIONING_FILE).write_text(json.dumps(meta, indent=2))
        fsync_path(staging)
        if target.exists():
            old = target.parent / f".{target.name}.old-{uuid.uuid4().hex}"
            os.replace(target, old)
            os.replace(staging, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(staging, target)
        fsync_path(target.parent)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _partitioning(path: Path) -> dict[str, Any]:
    meta_path = path / PARTITIONING_FILE
    if not meta_path.exists():
        raise InputError(
            f"{path} is not a partitioned dentalkit table (no {PARTITIONING_FILE}); "
            "write it with dentalkit.io.write_partitioned"
        )
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(
            f"{meta_path} is not valid JSON ({exc}); the partitioned table's description is "
            "damaged: write the table again with dentalkit.io.write_partitioned"
        ) from exc
    if not isinstance(meta, dict):
        raise InputError(
            f"{meta_path} holds {type(meta).__name__}, not the partitioned table's description "
            "(a JSON object): write the table again with dentalkit.io.write_partitioned"
        )
    return meta


def partition_files(
    path: str | os.PathLike[str], patients: Iterable[str] | None = None
) -> list[Path]:
    """The data files of a partitioned table, or only those holding ``patients``.

    Raises
    ------
    InputError
        When ``path`` is not a table written by :func:`write_partitioned`.
    """
    folder = Path(path)
    meta = _partitioning(folder)
    names = sorted(meta["files"])
    if patients is not None:
        wanted = set(patient_bucket(list(patients), meta["buckets"]).tolist())
        width = len(str(meta["buckets"] - 1))
        names = [n for n in names if int(n[len("part-") : len("part-") + width]) in wanted]
    return [folder / n for n in names]


def read_partitioned(
    path: str | os.PathLike[str],
    *,
    patients: Iterable[str] | None = None,
    columns: list[str] | None = None,
) -> pd.DataFrame:
    """Read a partitioned table into pandas (all of it, or only some patients' files).

    Parameters
    ----------
    path : path-like
        Folder written by :func:`write_partitioned`.
    patients : iterable of str, optional
        Read only the files of these patients and keep only their rows.
    columns : list of str, optional
        Columns to read.

    Returns
    -------
    DataFrame
        Rows ordered by file (bucket), then as written.
    """
    meta = _partitioning(Path(path))
    wanted = None if patients is None else list(patients)
    files = partition_files(path, wanted)
    key = meta["key"]
    read_cols = None if columns is None else list(dict.fromkeys([*columns, key]))
    if not files:  # none of these patients: an empty table with the columns and dtypes
        files = partition_files(path)[:1]
    frame = pd.concat([pd.read_parquet(f, columns=read_cols) for f in files], ignore_index=True)
    if wanted is not None:
        frame = frame[frame[key].isin(wanted)].reset_index(drop=True)
    return frame if columns is None else frame[columns]


def read_dask(path: str | os.PathLike[str], *, columns: list[str] | None = None) -> Any:
    """A ``dask.dataframe`` over a partitioned table: **one partition per file**.

    All rows of a patient are in one partition, so functions that work per session or per
    patient can be mapped over partitions (:func:`map_partitions`). Row groups are never split
    (``split_row_groups=False``) and files never aggregated.

    Needs ``dentalkit[distributed]``.
    """
    require("dask.dataframe", "distributed")
    import dask.dataframe as dd

    files = [str(f) for f in partition_files(path)]
    if not files:
        raise InputError(f"{path} holds no rows")
    return dd.read_parquet(
        files, columns=columns, split_row_groups=False, aggregate_files=False, blocksize=None
    )


def map_partitions(ddf: Any, func: Callable[..., pd.DataFrame], *args: Any, **kwargs: Any) -> Any:
    """``ddf.map_partitions(func, ...)`` with the output schema taken from ``func`` itself.

    dask needs the columns and dtypes of the result before computing anything (``meta``).
    This helper obtains them by calling ``func`` on the empty frame with ``ddf``'s dtypes, so
    no partition is computed twice and the dtypes are exactly ``func``'s. ``func`` must
    accept an empty table (dentalkit's analyses do) and return a DataFrame — e.g.
    ``ceph.measure`` with ``errors="warn"`` or ``"raise"``, not ``"collect"``.

    Examples
    --------
    >>> from dentalkit import ceph  # doctest: +SKIP
    >>> ddf = read_dask("study-17/landmarks")  # doctest: +SKIP
    >>> measures = map_partitions(ddf, ceph.measure, mm_per_px=0.1).compute()  # doctest: +SKIP
    """
    meta = func(ddf._meta.copy(), *args, **kwargs)
    if not isinstance(meta, pd.DataFrame):
        raise InputError(
            f"{getattr(func, '__name__', func)!r} returned a {type(meta).__name__}, not a "
            "DataFrame; map a function that returns one table (e.g. errors='warn', not 'collect')"
        )
    return ddf.map_partitions(func, *args, meta=meta, **kwargs)
