"""Table I/O: Parquet and GeoParquet for dentalkit, CSV and a data dictionary for publication.

Storing tables
    :func:`write_tables`, :func:`read_tables`, :func:`write_geoparquet`,
    :func:`read_geoparquet` — every table as Parquet, ``teeth`` as GeoParquet 1.1.
Publication hygiene
    :func:`pseudonymize` — keyed HMAC-SHA256 pseudonyms of ``patient_id``, consistent
    across tables; :func:`export` — CSV (and Parquet) for R / SPSS / Stata users with a
    data dictionary (CSV + JSON) describing every column (:func:`data_dictionary`);
    :func:`read_export` reads an export back with its dtypes. Guide: ``docs/publishing.md``.

GeoParquet (https://geoparquet.org, version 1.1.0) is Parquet with a ``geo`` metadata
entry describing the geometry columns. dentalkit writes it directly with pyarrow, so
the core install needs neither geopandas nor GDAL:

- ``geometry``: WKB (ISO flavour, 2D, little endian), null when the tooth is missing
  or its outline unusable;
- ``bbox``: the covering column, a struct ``{xmin, ymin, xmax, ymax}`` (float64) per
  row, declared under ``columns.geometry.covering.bbox`` so readers can skip row
  groups by bounding box;
- ``crs: null``: coordinates are image pixels, not a geographic reference system. An
  explicit null means "undefined"; an absent key would mean OGC:CRS84 (longitude and
  latitude), which would be wrong;
- ``geometry_types``: the types present (``["Polygon"]``), ``bbox``: the total bounds.

Writes are atomic: each file is written to a temporary name in the same folder, synced
and moved into place with ``os.replace``, so a reader (or a crash) never sees half a
file.

Examples
--------
>>> import shapely, pandas as pd
>>> from dentalkit import io
>>> df = pd.DataFrame({"tooth": ["m1_rgt_up"], "geometry": [shapely.box(0, 0, 2, 1)]})
>>> import tempfile, pathlib
>>> with tempfile.TemporaryDirectory() as d:
...     path = pathlib.Path(d) / "t.parquet"
...     _ = io.write_geoparquet(df, path)
...     back = io.read_geoparquet(path)
>>> back["geometry"][0].area
2.0
"""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import shapely

from dentalkit._atomic import atomic_write, fsync_path
from dentalkit.convert import schemas
from dentalkit.errors import InputError
from dentalkit.io._dictionary import (
    arrow_table,
    data_dictionary,
    declared_field,
    keys_as_declared,
)
from dentalkit.io._export import export, read_export, write_problems_csv
from dentalkit.io._pseudonymize import pseudonymize

# Partitioned Parquet for cohorts that outgrow one file (dask.dataframe / DuckDB read it
# partition by partition): the rest of the module (read_dask, map_partitions,
# FETCH_DASK_CONFIG) is imported from dentalkit.io.partitioned.
from dentalkit.io.partitioned import patient_bucket, read_partitioned, write_partitioned

__all__ = [
    "GEOPARQUET_VERSION",
    "data_dictionary",
    "export",
    "patient_bucket",
    "pseudonymize",
    "read_export",
    "read_geoparquet",
    "read_partitioned",
    "read_tables",
    "write_geoparquet",
    "write_parquet",
    "write_partitioned",
    "write_problems_csv",
    "write_tables",
    "write_tables_in_parts",
]

#: GeoParquet specification version written.
GEOPARQUET_VERSION = "1.1.0"
_BBOX = pa.struct(
    [pa.field(k, pa.float64(), nullable=False) for k in ("xmin", "ymin", "xmax", "ymax")]
)
_TYPE_NAMES = {
    0: "Point",
    1: "LineString",
    3: "Polygon",
    4: "MultiPoint",
    5: "MultiLineString",
    6: "MultiPolygon",
    7: "GeometryCollection",
}


def write_parquet(table: pd.DataFrame, path: str | os.PathLike, name: str | None = None) -> Path:
    """Write any DataFrame to Parquet atomically (temp file, fsync, rename); no index.

    For analysis tables and other outputs that are not part of the data contract (use
    :func:`write_tables` for those: it also checks their schemas).

    Parameters
    ----------
    table : pandas.DataFrame
        The table.
    path : path-like
        Destination file.
    name : str, optional
        The table's name in the column catalogue (``ceph_measures``, ``arch_compare`` …):
        its columns are written with their declared Arrow types, nullability and field
        metadata (``description``, ``unit``, ``values``; see ``docs/columns.md``).
        Without a name, pyarrow infers the types and no column is described; key columns
        (``patient_id``, ``timestamp``, ``endpoint``) are written as ``string`` all the
        same, as in every file dentalkit writes (``docs/data-contract.md``).

    Raises
    ------
    InputError
        When a value does not fit its column's declaration (named).
    """
    if name is not None:
        return _atomic_write(arrow_table(table, name), Path(path))
    plain = table.copy(deep=False)
    plain.attrs = {}  # attrs may hold tables (e.g. problems) that Parquet metadata cannot
    arrow = keys_as_declared(pa.Table.from_pandas(plain, preserve_index=False))
    return _atomic_write(arrow, Path(path))


def _atomic_write(table: pa.Table, path: Path) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    return atomic_write(path, lambda tmp: pq.write_table(table, tmp))


def _geo_table(df: pd.DataFrame, geometry: str, name: str | None = None) -> pa.Table:
    table, types, bounds = _geo_columns(df, geometry, name)
    return table.replace_schema_metadata(_geo_metadata(table.schema, geometry, types, bounds))


def _geo_columns(
    df: pd.DataFrame, geometry: str, name: str | None = None
) -> tuple[pa.Table, set[str], list[float] | None]:
    """``df`` as Arrow with WKB geometries and the ``bbox`` covering column; the geometry
    types present and the total bounds (None when every geometry is null)."""
    if geometry not in df.columns:
        raise InputError(f"no geometry column {geometry!r}; columns are {list(df.columns)}")
    if "bbox" in df.columns:
        raise InputError("a column named 'bbox' is reserved for the GeoParquet covering column")
    geoms = df[geometry].to_numpy(dtype=object)
    is_null = pd.isna(df[geometry]).to_numpy(bool)
    geoms = np.where(is_null, None, geoms)
    not_geom = ~is_null & ~shapely.is_geometry(geoms)
    if not_geom.any():
        bad = int(np.flatnonzero(not_geom)[0])
        raise InputError(
            f"column {geometry!r} holds a {type(geoms[bad]).__name__} at row {bad} (0-based position); "
            "expected shapely geometries or None"
        )
    wkb = shapely.to_wkb(geoms, output_dimension=2, byte_order=1, flavor="iso")
    bounds = shapely.bounds(geoms)
    ids = shapely.get_type_id(geoms[~is_null])
    types = {_TYPE_NAMES[int(t)] for t in np.unique(ids)}

    others = df.drop(columns=[geometry])
    if name is not None:
        rest = arrow_table(others, name)
        declared = declared_field(name, geometry)
        meta = declared.metadata if declared is not None else None
    else:
        rest = keys_as_declared(pa.Table.from_pandas(others, preserve_index=False))
        meta = None
    pos = list(df.columns).index(geometry)
    table = rest.add_column(
        pos,
        pa.field(geometry, pa.binary(), nullable=True, metadata=meta),
        pa.array(wkb, type=pa.binary()),
    )
    bbox = pa.StructArray.from_arrays(
        [pa.array(bounds[:, k], type=pa.float64()) for k in range(4)],
        fields=list(_BBOX),
        mask=pa.array(is_null),
    )
    table = table.append_column(pa.field("bbox", _BBOX, nullable=True), bbox)
    total = [float(v) for v in shapely.total_bounds(geoms)] if (~is_null).any() else None
    return table, types, total


def _geo_metadata(
    schema: pa.Schema, geometry: str, types: set[str], bounds: list[float] | None
) -> dict[bytes, bytes]:
    """``schema``'s metadata plus the GeoParquet ``geo`` entry for one WKB column.

    ``types``: the geometry types present; ``bounds``: ``[xmin, ymin, xmax, ymax]`` of
    all geometries, None when every one is null (the entry then has no ``bbox``).
    """
    column = {
        "encoding": "WKB",
        "geometry_types": sorted(types),
        "crs": None,
        "covering": {
            "bbox": {k: ["bbox", k] for k in ("xmin", "ymin", "xmax", "ymax")},
        },
    }
    if bounds is not None:
        column["bbox"] = bounds
    geo = {"version": GEOPARQUET_VERSION, "primary_column": geometry, "columns": {geometry: column}}
    meta = dict(schema.metadata or {})
    meta[b"geo"] = json.dumps(geo).encode()
    return meta


def write_geoparquet(df: pd.DataFrame, path: str | os.PathLike, geometry: str = "geometry") -> Path:
    """Write a table with shapely geometries as GeoParquet 1.1 (WKB + bbox covering).

    Parameters
    ----------
    df : pandas.DataFrame
        E.g. the ``teeth`` table (checked against its schema when it has its columns).
        The index is not written.
    path : path-like
        Destination file, written atomically.
    geometry : str
        Name of the geometry column (shapely geometries or None).

    Returns
    -------
    pathlib.Path
        The written file.
    """
    name = None
    if list(df.columns) == schemas.SCHEMAS["teeth"].names:
        schemas.check(df, "teeth")
        name = "teeth"  # written with its declared schema and column descriptions
    return _atomic_write(_geo_table(df, geometry, name), Path(path))


def read_geoparquet(path: str | os.PathLike) -> pd.DataFrame:
    """Read a GeoParquet file into pandas with shapely geometries (no geopandas needed).

    The covering ``bbox`` column is dropped (it is derived from the geometry). A file
    with the columns of the ``teeth`` table comes back with exactly its dtypes.
    """
    path = Path(path)
    schema = pq.read_schema(path)
    raw = (schema.metadata or {}).get(b"geo")
    if raw is None:
        raise InputError(f"{path} has no 'geo' metadata: it is not a GeoParquet file")
    geo = json.loads(raw)
    primary = geo["primary_column"]
    covering = geo["columns"][primary].get("covering", {}).get("bbox", {})
    names = schema.names
    skip = {spec[0] for spec in covering.values()} | {primary}
    df = _read_keyed(path, [n for n in names if n not in skip]).to_pandas()
    at = [n for n in names if n not in skip or n == primary].index(primary)
    df.insert(at, primary, _geometries(path, primary))
    if list(df.columns) == schemas.SCHEMAS["teeth"].names:
        df = schemas.conform(df, "teeth")
    return df


#: Rows of WKB turned into shapely geometries at a time by :func:`read_geoparquet`.
WKB_BATCH = 65_536


def _geometries(path: Path, column: str) -> np.ndarray:
    """The WKB column of a GeoParquet file as shapely geometries, a batch of rows at a time.

    Only one batch of WKB is decoded at once: the whole column as Python ``bytes`` next to
    its geometries would double the memory of the largest table (1.6 million tooth
    outlines at 10,000 patients).
    """
    file = pq.ParquetFile(path)
    out = np.empty(file.metadata.num_rows, dtype=object)
    start = 0
    for batch in file.iter_batches(batch_size=WKB_BATCH, columns=[column]):
        wkb = batch.column(0).to_numpy(zero_copy_only=False)
        out[start : start + len(wkb)] = shapely.from_wkb(wkb)
        start += len(wkb)
    return out


def _known_table(name: str, what: str) -> None:
    """Raise :class:`InputError` when ``name`` is not a declared table, listing them after ``what``."""
    if name not in schemas.SCHEMAS:
        raise InputError(f"unknown table {name!r}; {what}: {', '.join(schemas.SCHEMAS)}")


def write_tables(tables: Mapping[str, pd.DataFrame], out_dir: str | os.PathLike) -> dict[str, Path]:
    """Write dentalkit tables to ``out_dir/<name>.parquet`` (teeth as GeoParquet 1.1).

    Each table is checked against its schema first (nothing is written if one fails);
    each file is written atomically with its declared Arrow schema: types, non-null
    columns and field metadata ``description``, ``unit`` and ``values`` (the fixed
    vocabulary), as listed in ``docs/columns.md``. The index is not written: keys are
    columns.

    Returns
    -------
    dict of str to pathlib.Path
        The written file of each table.
    """
    out = Path(out_dir)
    for name, df in tables.items():
        _known_table(name, "write_tables writes dentalkit tables")
        schemas.check(df, name)
    written = {}
    for name, df in tables.items():
        path = out / f"{name}.parquet"
        if name == "teeth":
            written[name] = write_geoparquet(df, path)
        else:
            written[name] = _atomic_write(arrow_table(df, name), path)
    return written


def write_tables_in_parts(
    parts: Iterable[Mapping[str, pd.DataFrame]], out_dir: str | os.PathLike
) -> dict[str, Path]:
    """Write dentalkit tables that come in pieces, one piece at a time (teeth as GeoParquet).

    The writer of :func:`dentalkit.convert.tables_in_parts`: each piece's rows are
    appended to ``out_dir/<name>.parquet`` (one or more row groups per piece) and then
    dropped, so memory holds one piece. The files read back as :func:`write_tables` of
    the concatenated pieces would: the same rows in the same order, the declared schema
    (types, nullability, field metadata), categories in order of first appearance, and
    for ``teeth`` the GeoParquet ``geo`` entry of the whole table (its bounds and
    geometry types). Each piece is checked against its schema before it is written.

    Files appear only when every piece is written: each is written under a temporary
    name in ``out_dir`` and renamed into place at the end (on an error, nothing is
    replaced and the temporary files are removed).

    Parameters
    ----------
    parts : iterable of mappings of str to DataFrame
        Pieces: ``{table name: rows}``; a table may be in some pieces only (a table
        given only with no rows is written empty, with its schema).
    out_dir : path-like
        The folder (created when missing).

    Returns
    -------
    dict of str to pathlib.Path
        The written file of each table, in order of first appearance.
    """
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    writers: dict[str, _PieceWriter] = {}
    try:
        for piece in parts:
            for name, df in piece.items():
                _known_table(name, "write_tables_in_parts writes dentalkit tables")
                schemas.check(df, name)
                if name not in writers:
                    writers[name] = _PieceWriter(name, out)
                writers[name].write(df)
        for w in writers.values():
            w.finish()
        return {name: w.publish() for name, w in writers.items()}
    finally:
        for w in writers.values():
            w.discard()


class _PieceWriter:
    """One table written piece by piece into a temporary Parquet file in ``out``."""

    def __init__(self, name: str, out: Path) -> None:
        self.name, self.target = name, out / f"{name}.parquet"
        fd, tmp = tempfile.mkstemp(prefix=f".{self.target.name}.", suffix=".tmp", dir=out)
        os.close(fd)
        self.tmp = Path(tmp)
        self.writer: pq.ParquetWriter | None = None
        self.types: set[str] = set()
        self.bounds: list[float] | None = None

    def write(self, df: pd.DataFrame) -> None:
        if self.name == "teeth":
            table, types, bounds = _geo_columns(df, "geometry", "teeth")
            self.types |= types
            if bounds is not None and self.bounds is not None:
                lo, hi = self.bounds[:2], self.bounds[2:]
                bounds = [*map(min, lo, bounds[:2]), *map(max, hi, bounds[2:])]
            self.bounds = bounds if bounds is not None else self.bounds
        else:
            table = arrow_table(df, self.name)
        if self.writer is None:
            self.writer = pq.ParquetWriter(self.tmp, table.schema)
        if table.num_rows:
            self.writer.write_table(table)

    def finish(self) -> None:
        self.writer.close()
        if self.name == "teeth":  # the geo entry needs every piece: copy, adding it
            staged = self.tmp.with_name(self.tmp.name + ".geo")
            try:
                with pq.ParquetFile(self.tmp) as source:
                    schema = source.schema_arrow
                    meta = _geo_metadata(schema, "geometry", self.types, self.bounds)
                    with pq.ParquetWriter(staged, schema.with_metadata(meta)) as writer:
                        for i in range(source.num_row_groups):
                            group = source.read_row_group(i)
                            writer.write_table(group.replace_schema_metadata(meta))
                os.replace(staged, self.tmp)
            finally:
                staged.unlink(missing_ok=True)
        fsync_path(self.tmp)

    def publish(self) -> Path:
        os.replace(self.tmp, self.target)
        fsync_path(self.target.parent)
        return self.target

    def discard(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.tmp.unlink(missing_ok=True)


def read_tables(
    out_dir: str | os.PathLike, names: Iterable[str] | None = None, *, geometry: bool = True
) -> dict[str, pd.DataFrame]:
    """Read tables written by :func:`write_tables`, with exactly their declared dtypes.

    Parameters
    ----------
    out_dir : path-like
        The folder.
    names : iterable of str, optional
        Tables to read (each must exist); default: every dentalkit table present.
    geometry : bool
        Read the tooth outlines (``teeth``'s ``geometry`` column, as shapely polygons).
        False leaves that column out (every other column as declared): for what counts
        teeth or reads their keys and flags, at a fraction of the memory (about 1 kB
        per outline as shapely objects: 1.5 GB at 10,000 patients).
    """
    folder = Path(out_dir)
    if not folder.is_dir():
        raise InputError(f"{folder} is not a folder of dentalkit tables")
    wanted = (
        list(names)
        if names is not None
        else [n for n in schemas.SCHEMAS if (folder / f"{n}.parquet").exists()]
    )
    result = {}
    for name in wanted:
        path = folder / f"{name}.parquet"
        _known_table(name, "tables are")
        if not path.exists():
            raise InputError(f"{path} does not exist; write it with dentalkit.io.write_tables")
        if name == "teeth" and geometry:
            result[name] = read_geoparquet(path)
        elif name == "teeth":  # declared dtypes, then the absent column left out
            kept = [n for n in schemas.SCHEMAS[name].names if n != "geometry"]
            table = _read_keyed(path, kept).to_pandas().assign(geometry=None)
            result[name] = schemas.conform(table, name).drop(columns="geometry")
        else:
            result[name] = schemas.conform(_read_keyed(path).to_pandas(), name)
    return result


def _read_keyed(path: Path, columns: list[str] | None = None) -> pa.Table:
    """A Parquet file (``columns`` of it: default all) with its key columns read as
    dictionaries: Parquet stores their strings dictionary-encoded, so they become pandas
    categoricals without being decoded."""
    names = pq.read_schema(path).names if columns is None else columns
    return pq.read_table(
        path, columns=columns, read_dictionary=[k for k in schemas.KEY_COLUMNS if k in names]
    )
