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
from collections.abc import Iterable, Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import shapely

from dentalkit._atomic import atomic_write
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
    types = sorted({_TYPE_NAMES[int(t)] for t in np.unique(ids)})

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
    column = {
        "encoding": "WKB",
        "geometry_types": types,
        "crs": None,
        "covering": {
            "bbox": {k: ["bbox", k] for k in ("xmin", "ymin", "xmax", "ymax")},
        },
    }
    if (~is_null).any():
        column["bbox"] = [float(v) for v in shapely.total_bounds(geoms)]
    geo = {"version": GEOPARQUET_VERSION, "primary_column": geometry, "columns": {geometry: column}}
    meta = dict(table.schema.metadata or {})
    meta[b"geo"] = json.dumps(geo).encode()
    return table.replace_schema_metadata(meta)


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
    table = _read_keyed(Path(path))
    raw = (table.schema.metadata or {}).get(b"geo")
    if raw is None:
        raise InputError(f"{path} has no 'geo' metadata: it is not a GeoParquet file")
    geo = json.loads(raw)
    primary = geo["primary_column"]
    covering = geo["columns"][primary].get("covering", {}).get("bbox", {})
    drop = sorted({spec[0] for spec in covering.values()} & set(table.column_names))
    df = table.drop_columns(drop).to_pandas()
    df[primary] = shapely.from_wkb(df[primary].to_numpy(dtype=object))
    if list(df.columns) == schemas.SCHEMAS["teeth"].names:
        df = schemas.conform(df, "teeth")
    return df


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
        if name not in schemas.SCHEMAS:
            raise InputError(
                f"unknown table {name!r}; write_tables writes dentalkit tables: "
                f"{', '.join(schemas.SCHEMAS)}"
            )
        schemas.check(df, name)
    written = {}
    for name, df in tables.items():
        path = out / f"{name}.parquet"
        if name == "teeth":
            written[name] = write_geoparquet(df, path)
        else:
            written[name] = _atomic_write(arrow_table(df, name), path)
    return written


def read_tables(
    out_dir: str | os.PathLike, names: Iterable[str] | None = None
) -> dict[str, pd.DataFrame]:
    """Read tables written by :func:`write_tables`, with exactly their declared dtypes.

    Parameters
    ----------
    out_dir : path-like
        The folder.
    names : iterable of str, optional
        Tables to read (each must exist); default: every dentalkit table present.
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
        if name not in schemas.SCHEMAS:
            raise InputError(f"unknown table {name!r}; tables are {', '.join(schemas.SCHEMAS)}")
        if not path.exists():
            raise InputError(f"{path} does not exist; write it with dentalkit.io.write_tables")
        if name == "teeth":
            result[name] = read_geoparquet(path)
        else:
            result[name] = schemas.conform(_read_keyed(path).to_pandas(), name)
    return result


def _read_keyed(path: Path) -> pa.Table:
    """A Parquet file with its key columns read as dictionaries: Parquet stores their
    strings dictionary-encoded, so they become pandas categoricals without being decoded."""
    names = pq.read_schema(path).names
    return pq.read_table(path, read_dictionary=[k for k in schemas.KEY_COLUMNS if k in names])
