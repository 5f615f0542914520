"""One pyarrow schema per table: the single declaration of columns and dtypes.

Every table the converters build is declared here once, as a :class:`pyarrow.Schema`
(``docs/data-contract.md`` describes them in prose). The pandas dtypes follow from
the arrow types:

==========================================  =============================================
arrow type (declared)                       pandas dtype of the built table
==========================================  =============================================
``dictionary<int32, string>``               ``category`` (categories of dtype ``str``)
``string`` of a key column (``KEY_COLUMNS``)  ``category`` (categories of dtype ``str``)
``string``                                  ``str``
``float64``                                 ``float64``
``int16`` / ``int32`` (not nullable)        ``int16`` / ``int32``
``int16`` / ``int64`` (nullable)            ``Int16`` / ``Int64``
``bool`` (not nullable)                     ``bool``
``bool`` (nullable)                         ``boolean``
``timestamp[ns, UTC]``                      ``datetime64[ns, UTC]``
``binary`` with ``geometry`` metadata       ``object`` (shapely Polygon or None); WKB on disk
==========================================  =============================================

The key columns ``patient_id``, ``timestamp`` and ``endpoint`` (:data:`KEY_COLUMNS`) are
``string`` (:data:`KEY_TYPE`) in every file dentalkit writes — contract tables, problems,
analyses, the store's side files — so that any two files join on them in pandas, polars,
DuckDB, R or Spark; in memory the tables hold them as categoricals, which take a few bytes
per row (Parquet dictionary-encodes the strings on disk either way; see
``docs/data-contract.md``).

A column whose field metadata carries ``categories`` has a fixed vocabulary
(``view``: lateral/frontal, ``side``: rgt/lft, …): its categorical always carries
exactly those categories, in that order, so tables of different cohorts concatenate
without recoding. Other categoricals carry the values present, in order of first
appearance.

:func:`check` verifies a built table against its schema (converters call it on every
table they return); :func:`conform` casts a table read back from Parquet to the
declared dtypes; :func:`empty` builds a zero-row table.

Examples
--------
>>> from dentalkit.convert import schemas
>>> schemas.SCHEMAS["landmarks"].names[-3:]
['name', 'x', 'y']
>>> schemas.pandas_dtypes("arch_points")["index"]
dtype('int16')
>>> schemas.check(schemas.empty("teeth"), "teeth")  # passes silently
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from functools import cache
from types import MappingProxyType

import numpy as np
import pandas as pd
import pyarrow as pa

from dentalkit.endpoints import ENDPOINTS, Kind
from dentalkit.errors import PROBLEM_SCHEMA, SEVERITIES, InputError

__all__ = [
    "FDI_TOOTH_TYPES",
    "KEY_COLUMNS",
    "KEY_TYPE",
    "SCHEMAS",
    "TABLE_KINDS",
    "TABLE_NAMES",
    "categories",
    "category_dtype",
    "check",
    "conform",
    "empty",
    "pandas_dtypes",
]

#: Tooth-type prefixes in mesial-to-distal order with their ISO 3950 tooth digit.
FDI_TOOTH_TYPES: Mapping[str, int] = MappingProxyType(
    {"i1": 1, "i2": 2, "c": 3, "p1": 4, "p2": 5, "m1": 6, "m2": 7, "m3": 8}
)

#: Which response kind feeds which tables.
TABLE_KINDS: Mapping[str, Kind] = MappingProxyType(
    {
        "landmarks": Kind.LANDMARKS,
        "teeth": Kind.SEGMENTATION,
        "tooth_keypoints": Kind.KEYPOINTS,
        "arch_points": Kind.KEYPOINTS,
        "findings": Kind.FINDINGS,
        "finding_counts": Kind.FINDINGS,
        "classifications": Kind.CLASSIFIER,
        "tmj": Kind.TMJ,
        "tle": Kind.TLE,
    }
)

_CAT = pa.dictionary(pa.int32(), pa.string())
#: The key columns: one Arrow type, :data:`KEY_TYPE`, in every file dentalkit writes.
KEY_COLUMNS: tuple[str, ...] = ("patient_id", "timestamp", "endpoint")
#: Arrow type of the key columns in every file (tables, problems, analyses, store files).
KEY_TYPE = pa.string()


def _problems_schema() -> pa.Schema:
    """:data:`dentalkit.errors.PROBLEM_SCHEMA` as an arrow schema."""
    types = {"str": pa.string(), "Int64": pa.int64(), "category": _CAT}
    return pa.schema(
        [
            _field(
                c.name,
                types[c.dtype],
                c.description,
                nullable=c.nullable,
                cats=SEVERITIES if c.dtype == "category" else None,
            )
            for c in PROBLEM_SCHEMA
        ]
    )


def _field(
    name: str,
    type_: pa.DataType,
    doc: str,
    *,
    nullable: bool = False,
    cats: tuple[str, ...] | None = None,
    geometry: bool = False,
    categorical: bool = False,
) -> pa.Field:
    meta = {"doc": doc}
    if categorical:  # text on disk, a pandas categorical in memory
        meta["pandas_dtype"] = "category"
    if cats is not None:
        meta["categories"] = json.dumps(list(cats))
    if geometry:
        meta["geometry"] = "wkb"
    return pa.field(name, type_, nullable=nullable, metadata=meta)


def _key(name: str, doc: str, *, nullable: bool = False, cats: tuple[str, ...] | None = None):
    """A key column: :data:`KEY_TYPE` on disk, a categorical in memory."""
    return _field(name, KEY_TYPE, doc, nullable=nullable, cats=cats, categorical=True)


def _session(kind: Kind, *, patient_nullable: bool = False) -> list[pa.Field]:
    endpoints = tuple(e.name for e in ENDPOINTS.values() if e.kind is kind)
    return [
        _key("patient_id", "PatientID of the request (never the echo)", nullable=patient_nullable),
        _key("timestamp", "TimeStamp string of the request, verbatim", nullable=patient_nullable),
        _field(
            "session_time",
            pa.timestamp("ns", tz="UTC"),
            "timestamp parsed as ISO 8601 or with the fetch's timestamp format (naive = UTC); "
            "NaT when it does not parse (a problem row says so)",
            nullable=True,
        ),
        _key("endpoint", "registry name of the endpoint", cats=endpoints),
        _field(
            "model_version",
            _CAT,
            "the response's Version; null where the endpoint has none",
            nullable=True,
        ),
    ]


_XY = [
    _field("x", pa.float64(), "x in the service's pixel units (image coordinates, right)"),
    _field("y", pa.float64(), "y in the service's pixel units (image coordinates, down)"),
]
_TYPES = tuple(FDI_TOOTH_TYPES)
_SIDES = ("rgt", "lft")
_ARCHES = ("up", "lo")

SCHEMAS: Mapping[str, pa.Schema] = MappingProxyType(
    {
        "landmarks": pa.schema(
            [
                *_session(Kind.LANDMARKS),
                _field("view", _CAT, "lateral or frontal", cats=("lateral", "frontal")),
                _field("landmark", _CAT, "service key, e.g. Later_12"),
                _field(
                    "name",
                    _CAT,
                    "anatomical name from the landmark map; null when unmapped",
                    nullable=True,
                ),
                *_XY,
            ]
        ),
        "teeth": pa.schema(
            [
                *_session(Kind.SEGMENTATION),
                _field(
                    "source",
                    _CAT,
                    "image the segmentation comes from",
                    cats=("frontal", "pano", "occlusogram_upper", "occlusogram_lower"),
                ),
                _field("tooth", _CAT, "service key {type}_{side}_{arch}, e.g. m1_rgt_up"),
                _field(
                    "tooth_type",
                    _CAT,
                    "prefix of the key; null when not a known permanent tooth",
                    nullable=True,
                    cats=_TYPES,
                ),
                _field(
                    "side",
                    _CAT,
                    "patient's side (rgt/lft); null when unparsable",
                    nullable=True,
                    cats=_SIDES,
                ),
                _field("arch", _CAT, "up/lo; null when unparsable", nullable=True, cats=_ARCHES),
                _field(
                    "fdi",
                    pa.int16(),
                    "ISO 3950 tooth number; null for unknown prefixes",
                    nullable=True,
                ),
                _field("missing", pa.bool_(), "the service's missing flag"),
                _field(
                    "geometry",
                    pa.binary(),
                    "tooth outline, shapely Polygon in pixel units; None when missing or unusable",
                    nullable=True,
                    geometry=True,
                ),
                _field("repaired", pa.bool_(), "outline was invalid and repaired by make_valid"),
            ]
        ),
        "tooth_keypoints": pa.schema(
            [
                *_session(Kind.KEYPOINTS),
                _field("arch", _CAT, "up/lo, from the endpoint", cats=_ARCHES),
                _field("tooth", _CAT, "service key {type}_{side}_{arch}"),
                _field("fdi", pa.int16(), "ISO 3950 tooth number; null if unknown", nullable=True),
                _field("missing", pa.bool_(), "the service's missing flag"),
                _field("point", _CAT, "centroid, t01, …"),
                *_XY,
            ]
        ),
        "arch_points": pa.schema(
            [
                *_session(Kind.KEYPOINTS),
                _field("arch", _CAT, "up/lo, from the endpoint", cats=_ARCHES),
                _field("point", _CAT, "service key, e.g. t25"),
                _field("index", pa.int16(), "the integer in the key (t25 → 25)"),
                *_XY,
            ]
        ),
        "findings": pa.schema(
            [
                *_session(Kind.FINDINGS),
                _field("source", _CAT, "clinical or pano", cats=("clinical", "pano")),
                _field("class_name", _CAT, "class of the detection (key of Results)"),
                _field("x0", pa.float64(), "TopLeft x (px)"),
                _field("y0", pa.float64(), "TopLeft y (px)"),
                _field("x1", pa.float64(), "BottomRight x (px)"),
                _field("y1", pa.float64(), "BottomRight y (px)"),
            ]
        ),
        "finding_counts": pa.schema(
            [
                *_session(Kind.FINDINGS),
                _field("source", _CAT, "clinical or pano", cats=("clinical", "pano")),
                _field("class_name", _CAT, "class (key of ImageContents)"),
                _field("count", pa.int32(), "detections the service counted (ImageContents)"),
            ]
        ),
        "classifications": pa.schema(
            [
                *_session(Kind.CLASSIFIER),
                _field("image_name", pa.string(), "ImageName: the stored file name, not the URL"),
                _field("category", _CAT, "Classification.category"),
                _field("confidence", pa.float64(), "Classification.confidence"),
            ]
        ),
        "tmj": pa.schema(
            [
                *_session(Kind.TMJ),
                _field("image_name", pa.string(), "ImageName: the stored file name, not the URL"),
                _field("finding", _CAT, "Results.Finding, the sentence as sent"),
                _field(
                    "has_finding",
                    pa.bool_(),
                    "True / False / missing when the sentence is not recognised (unknown)",
                    nullable=True,
                ),
            ]
        ),
        "tle": pa.schema(
            [
                *_session(Kind.TLE, patient_nullable=True),
                *[
                    _field(f"p{i:02d}", _CAT, f"query parameter p{i:02d} as sent", nullable=True)
                    for i in range(1, 12)
                ],
                _field("app", _CAT, "name of the estimator application"),
                _field(
                    "estimate_length_months",
                    pa.float64(),
                    "estimate_length: predicted treatment duration (months)",
                ),
            ]
        ),
        "calibration": pa.schema(
            [
                _key("patient_id", "PatientID of the image's requests"),
                _key("timestamp", "TimeStamp of the image's requests, verbatim"),
                _key(
                    "endpoint",
                    "registry name of the endpoint the image was sent to",
                    cats=tuple(e.name for e in ENDPOINTS.values() if e.is_image),
                ),
                _field("image_url", pa.string(), "ImageName sent: the image's URL"),
                _field(
                    "mm_per_px",
                    pa.float64(),
                    "millimetres per pixel in the plane of the anatomy (manifest column "
                    "mm_per_px; finite, > 0)",
                ),
                _field(
                    "calibration_source",
                    pa.string(),
                    "where the scale comes from: manifest, dicom:PixelSpacing, …",
                ),
            ]
        ),
        # declared once, in dentalkit.errors (one problems table for the whole package)
        "problems": _problems_schema(),
    }
)

#: Names of the tables :func:`dentalkit.convert.tables` returns, in order (``calibration``
#: only when it is given a calibration table, e.g. the store's ``calibration.parquet``).
TABLE_NAMES: tuple[str, ...] = tuple(SCHEMAS)

_STR = pd.StringDtype(na_value=np.nan)


@cache
def categories(table: str, column: str) -> tuple[str, ...] | None:
    """Fixed vocabulary of a categorical column, or None when it has none."""
    meta = _schema(table).field(column).metadata or {}
    raw = meta.get(b"categories")
    return tuple(json.loads(raw)) if raw is not None else None


@cache
def category_dtype(table: str, column: str) -> pd.CategoricalDtype:
    """The pandas dtype of a categorical column (its fixed vocabulary, or no categories)."""
    return pd.CategoricalDtype(pd.Index(list(categories(table, column) or ()), dtype=_STR))


def _is_geometry(field: pa.Field) -> bool:
    return bool(field.metadata) and field.metadata.get(b"geometry") == b"wkb"


def _pandas_dtype(table: str, field: pa.Field):
    t = field.type
    if pa.types.is_dictionary(t) or (field.metadata or {}).get(b"pandas_dtype") == b"category":
        return category_dtype(table, field.name)
    if _is_geometry(field):
        return np.dtype(object)
    if pa.types.is_string(t) or pa.types.is_large_string(t):
        return _STR
    if pa.types.is_timestamp(t):
        return pd.DatetimeTZDtype(unit=t.unit, tz=t.tz)
    if pa.types.is_boolean(t) and field.nullable:
        return pd.BooleanDtype()
    if pa.types.is_integer(t) and field.nullable:
        return pd.api.types.pandas_dtype(str(t).capitalize())  # int16 -> Int16
    return np.dtype(t.to_pandas_dtype())


def _schema(table: str) -> pa.Schema:
    try:
        return SCHEMAS[table]
    except KeyError:
        raise InputError(
            f"unknown table {table!r}; dentalkit's tables are: {', '.join(SCHEMAS)}"
        ) from None


def pandas_dtypes(table: str) -> dict[str, object]:
    """Column name → pandas dtype of ``table`` (fixed-vocabulary categoricals included)."""
    return dict(_dtypes(table))


@cache
def _dtypes(table: str) -> tuple[tuple[str, object], ...]:
    return tuple((f.name, _pandas_dtype(table, f)) for f in _schema(table))


@cache
def _empty(table: str) -> pd.DataFrame:
    return pd.DataFrame({name: pd.Series([], dtype=dt) for name, dt in _dtypes(table)})


def empty(table: str) -> pd.DataFrame:
    """A zero-row DataFrame with exactly the declared columns and dtypes of ``table``."""
    return _empty(table).copy()


def check(df: pd.DataFrame, table: str) -> None:
    """Verify that ``df`` has exactly the columns, order, dtypes and nullability of ``table``.

    Raises
    ------
    InputError
        Naming the table, the column and what differs.
    """
    schema = _schema(table)
    if list(df.columns) != schema.names:
        raise InputError(
            f"table {table!r} must have columns {schema.names} in this order; "
            f"got {list(df.columns)}"
        )
    for field, (_, want), col in zip(schema, _dtypes(table), df.items(), strict=True):
        col = col[1]
        got = col.dtype
        if isinstance(want, pd.CategoricalDtype):
            ok = isinstance(got, pd.CategoricalDtype) and (
                len(got.categories) == 0 or got.categories.dtype == _STR
            )
            fixed = categories(table, field.name)
            if ok and fixed is not None:
                ok = tuple(got.categories) == fixed
        else:
            ok = got == want
        if not ok:
            raise InputError(
                f"table {table!r}: column {field.name!r} has dtype {got}, expected {want}"
            )
        if not field.nullable and _has_null(col):
            raise InputError(
                f"table {table!r}: column {field.name!r} may not be null "
                f"({int(col.isna().sum())} null value(s))"
            )


def _has_null(col: pd.Series) -> bool:
    """Whether a column holds a null, looking at its array directly (cheap on big tables)."""
    arr = col.array
    if isinstance(col.dtype, pd.CategoricalDtype):
        return bool((arr.codes < 0).any())
    if isinstance(col.dtype, np.dtype):
        if col.dtype.kind in "biu":
            return False
        if col.dtype.kind == "f":
            return bool(np.isnan(arr.to_numpy()).any())
    return bool(col.isna().any())


def conform(df: pd.DataFrame, table: str) -> pd.DataFrame:
    """Return ``df`` with the declared columns cast to the declared dtypes.

    Used on tables read back from Parquet, where an all-null or empty categorical comes
    back with ``object`` categories. Values are never changed: a cast that would change
    one raises.

    Raises
    ------
    InputError
        When a declared column is absent or a value does not fit its dtype.
    """
    schema = _schema(table)
    missing = [n for n in schema.names if n not in df.columns]
    if missing:
        raise InputError(f"table {table!r} lacks column(s) {missing}; it needs {schema.names}")
    out = {}
    for field in schema:
        col = df[field.name]
        want = _pandas_dtype(table, field)
        if isinstance(want, pd.CategoricalDtype):
            if isinstance(col.dtype, pd.CategoricalDtype):
                cats = pd.Index(col.cat.categories.astype(object), dtype=_STR)
                col = pd.Series(
                    pd.Categorical.from_codes(col.cat.codes.to_numpy(), categories=cats),
                    index=col.index,
                )
            fixed = categories(table, field.name)
            if fixed is not None:
                extra = set(col.dropna().unique()) - set(fixed)
                if extra:
                    raise InputError(
                        f"table {table!r}: column {field.name!r} has values {sorted(extra)} "
                        f"outside its vocabulary {list(fixed)}"
                    )
                if isinstance(col.dtype, pd.CategoricalDtype):  # the vocabulary's order
                    col = col.cat.set_categories(want.categories)  # (astype keeps another)
                else:
                    col = col.astype(want)
            elif not isinstance(col.dtype, pd.CategoricalDtype):
                # text on disk (a key column): categories in order of first appearance
                codes, uniques = pd.factorize(col.astype(_STR))
                cats = pd.Index(uniques, dtype=_STR)
                col = pd.Series(pd.Categorical.from_codes(codes, categories=cats), index=col.index)
        elif col.dtype != want:
            try:
                col = col.astype(want)
            except (TypeError, ValueError) as exc:
                raise InputError(
                    f"table {table!r}: column {field.name!r} cannot be cast to {want}: {exc}"
                ) from exc
        out[field.name] = col
    return pd.DataFrame(out, index=df.index)
