"""The data dictionary: per exported column its type, unit, description and allowed values.

Descriptions are declared once and read from where they live:

* the data contract's tables (``landmarks``, ``teeth`` …): the ``doc`` of each field of
  :data:`dentalkit.convert.schemas.SCHEMAS` (so the converters, ``docs/columns.md`` and
  every exported dictionary say the same thing);
* analysis tables (``ceph_measures``, ``arch_fits`` … see :data:`ANALYSIS_TABLES`) and
  units of the contract's coordinate columns: ``dentalkit/data/columns.csv`` (per column
  its unit, description, Arrow type, nullability and allowed values);
* patient-table columns of the treatment-length codebook (``age_years`` …): the codebook;
* columns named after a cephalometric measure (a wide table): the measure reference.

``docs/columns.md`` is generated from the same declarations by :func:`columns_markdown`,
and every table dentalkit writes to Parquet is written with them (:func:`arrow_table`):
each field carries its declared Arrow type and nullability, and field metadata
``description``, ``unit`` and (where declared) ``values`` (a JSON list), so a reader in
R, DuckDB or Spark sees what each column means without this package.

Declaring a new analysis table is one entry in :data:`ANALYSIS_TABLES` plus one row in
``columns.csv`` per column that the generic (``*``) rows do not already declare.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa

from dentalkit.convert import schemas
from dentalkit.errors import InputError
from dentalkit.io._pseudonymize import PSEUDONYM_ATTR

__all__ = [
    "ANALYSIS_TABLES",
    "ARROW_TYPES",
    "DICTIONARY_COLUMNS",
    "arrow_table",
    "column_type",
    "columns_markdown",
    "data_dictionary",
    "declared_field",
    "is_declared_table",
    "keys_as_declared",
    "load_catalogue",
    "partition_writer",
]

#: Analysis tables the catalogue describes: export name → (what produces it, one row per).
#: Export a result under this name and its columns are described without further ado.
ANALYSIS_TABLES: Mapping[str, tuple[str, str]] = MappingProxyType(
    {
        "ceph_measures": ("ceph.measure", "session × measure"),
        "ceph_zscores": ("ceph.zscores", "session × measure"),
        "ceph_classes": ("ceph.classify", "session"),
        "ceph_class_changes": ("ceph.class_changes", "patient"),
        "ceph_change": ("ceph.change", "patient × measure × pair of consecutive sessions"),
        "ceph_summary": ("ceph.summarize", "measure"),
        "arch_fits": ("arch.fit", "arch × model"),
        "arch_measures": ("arch.measure", "arch × dimension"),
        "arch_mean_forms": ("arch.mean_form", "group × arch × abscissa"),
        "tooth_measures": ("teeth.measure", "tooth × source"),
        "tooth_symmetry": ("teeth.symmetry(...).pairs", "left/right pair of teeth"),
        "tooth_symmetry_patients": ("teeth.symmetry(...).per_patient", "session × source"),
        "tooth_symmetry_cohort": ("teeth.symmetry(...).cohort", "source × arch × tooth type"),
        "missing_by_fdi": ("teeth.missing(...).by_fdi", "FDI tooth (and group)"),
        "missing_by_type": ("teeth.missing(...).by_type", "arch × tooth type"),
        "missing_by_arch": ("teeth.missing(...).by_arch", "arch"),
        "missing_patterns": ("teeth.missing(...).patterns", "pattern"),
        "missing_per_patient": ("teeth.missing(...).per_patient", "patient (or session)"),
        "findings_prevalence": ("findings.prevalence(...).prevalence", "source × class"),
        "finding_boxes": ("findings.prevalence(...).boxes", "detection"),
        "finding_box_sizes": ("findings.prevalence(...).box_sizes", "source × class × measure"),
        "model_versions": ("study.model_versions", "endpoint × Version label"),
        "calibration_applied": (
            "study.Calibration.applied",
            "image (patient × session × endpoint)",
        ),
        "tmj_prevalence": ("findings.tmj_prevalence", "cohort (patients as units)"),
        "tle_estimates": ("tle.estimate", "patient"),
        "tle_summary": ("tle.summarize", "group"),
        "tle_sensitivity": ("tle.sensitivity", "patient × value, plus a mean row per value"),
        "tle_calibration": ("tle.calibration", "statistic"),
        "comparisons": ("stats.compare, arch.compare", "comparison"),
        "descriptives": ("stats.describe", "group"),
        "contract": ("contract.contract_report", "endpoint × aspect × item × verdict"),
        "growth_fixed": ("stats.growth(...).fixed", "measure × fixed-effect term"),
        "growth_variance": ("stats.growth(...).variance", "measure × variance component"),
        "growth_models": ("stats.growth(...).models", "measure (one mixed-effects model)"),
        "growth_bands": ("stats.growth(...).bands()", "measure × group × time"),
        "growth_data": ("study.growth_by_group", "session × measure (the modelled rows)"),
        "analysis_problems": ("study.analyze", "problem an analysis met (errors='collect')"),
        "qc_landmarks": ("qc.landmarks", "session × view"),
        "qc_teeth": ("qc.teeth", "tooth row of the teeth table"),
        "qc_arch_points": ("qc.arch_points", "session × arch"),
        "qc_findings": ("qc.findings", "detection"),
        "qc_tle_inputs": ("qc.tle_inputs", "row of the treatment-length table"),
        "qc": ("qc.landmarks, qc.teeth … concatenated", "checked item"),
        "qc_excluded": ("qc.apply(...).excluded", "item excluded by the qc='exclude' policy"),
        "qc_summary": ("qc.summarize", "check"),
        "qc_sensitivity": (
            "study.analyze(qc='exclude')",
            "measure (cohort mean with and without the excluded sessions)",
        ),
        "qc_sensitivity_results": (
            "study.analyze(qc='exclude')",
            "statistic of a result table (with and without the excluded items)",
        ),
    }
)

#: Columns of the data dictionary table, in order.
DICTIONARY_COLUMNS = (
    "table",
    "column",
    "type",
    "pandas_dtype",
    "unit",
    "description",
    "allowed_values",
    "levels",
    "n_missing",
)

_SESSION_TABLE = "landmarks"  # the session-key columns are the same in every contract table
_SESSION_KEY = ("patient_id", "timestamp", "session_time", "endpoint", "model_version")
_TLE_COLUMNS = (*(f"p{i:02d}" for i in range(1, 12)), "app", "estimate_length_months")
_SUFFIX_UNITS = (
    ("_mm", "mm"),
    ("_deg", "deg"),
    ("_months", "months"),
    ("_years", "years"),
    ("_px", "px"),
    ("_pct", "%"),
)
_PLACEHOLDER = "{unit}"


#: Other names of analysis tables (as :func:`dentalkit.study.analyze` names them).
TABLE_ALIASES: Mapping[str, str] = MappingProxyType(
    {"arch_compare": "comparisons", "ceph_compare": "comparisons"}
)


@cache
def load_catalogue() -> pd.DataFrame:
    """The shipped column catalogue (``dentalkit/data/columns.csv``).

    Columns ``table``, ``column``, ``unit``, ``description``, ``type``, ``nullable``,
    ``values``. ``table`` is a contract table, an analysis table of
    :data:`ANALYSIS_TABLES`, or ``*`` (any table). ``unit`` may contain ``{unit}``: the
    unit in the row's ``unit`` column. ``type`` is a key of :data:`ARROW_TYPES` (empty:
    taken from the ``*`` row of the column, or not declared); ``nullable`` is ``yes`` or
    ``no``; ``values`` lists the allowed values separated by ``;`` (in order).
    Contract tables take type, nullability and vocabulary from
    :data:`dentalkit.convert.schemas.SCHEMAS`; their rows here carry units only.
    """
    path = resources.files("dentalkit.data") / "columns.csv"
    with path.open(encoding="utf-8") as fh:
        cat = pd.read_csv(fh, dtype=str, keep_default_na=False)
    return cat


@cache
def _catalogue_index() -> dict[tuple[str, str], tuple[str, str]]:
    cat = load_catalogue()
    return {
        (t, c): (u, d)
        for t, c, u, d in zip(
            cat["table"], cat["column"], cat["unit"], cat["description"], strict=True
        )
    }


#: Arrow type of each ``type`` name of ``columns.csv``.
ARROW_TYPES: Mapping[str, pa.DataType] = MappingProxyType(
    {
        "category": pa.dictionary(pa.int32(), pa.string()),
        "ordered category": pa.dictionary(pa.int32(), pa.string(), ordered=True),
        "string": pa.string(),
        "float64": pa.float64(),
        "int64": pa.int64(),
        "int32": pa.int32(),
        "int16": pa.int16(),
        "bool": pa.bool_(),
        "timestamp": pa.timestamp("ns", tz="UTC"),
        "list<int64>": pa.list_(pa.int64()),
        "list<int16>": pa.list_(pa.int16()),
        "list<string>": pa.list_(pa.string()),
    }
)


@cache
def _type_index() -> dict[tuple[str, str], tuple[str, bool, tuple[str, ...] | None]]:
    """(table, column) → (type name, nullable, allowed values) of rows that declare a type."""
    cat = load_catalogue()
    out = {}
    for t, c, ty, nul, vals in zip(
        cat["table"], cat["column"], cat["type"], cat["nullable"], cat["values"], strict=True
    ):
        if not ty:
            continue
        if ty not in ARROW_TYPES:  # pragma: no cover - guarded by the catalogue test
            raise InputError(f"columns.csv: {t}.{c} has unknown type {ty!r}")
        out[(t, c)] = (ty, nul != "no", tuple(vals.split(";")) if vals else None)
    return out


def is_declared_table(table: str) -> bool:
    """Whether ``table`` is a contract table or a declared analysis table (or an alias)."""
    return (
        table in schemas.SCHEMAS
        or table in ANALYSIS_TABLES
        or TABLE_ALIASES.get(table) in ANALYSIS_TABLES
    )


def _declared_type(table: str, column: str) -> tuple[pa.DataType, bool, tuple[str, ...] | None]:
    """Declared (Arrow type, nullable, allowed values) of a column; KeyError when none.

    A key column (``patient_id``, ``timestamp``, ``endpoint``) has
    :data:`~dentalkit.convert.schemas.KEY_TYPE` in every table, whatever else declares it:
    the one place that decides how keys are written.
    """
    type_, nullable, values = _declared_type_of(table, column)
    if column in schemas.KEY_COLUMNS:
        type_ = schemas.KEY_TYPE
    return type_, nullable, values


def _declared_type_of(table: str, column: str) -> tuple[pa.DataType, bool, tuple[str, ...] | None]:
    contract = schemas.SCHEMAS.get(table)
    if contract is not None and column in contract.names:
        field = contract.field(column)
        return field.type, field.nullable, schemas.categories(table, column)
    index = _type_index()
    for key in ((table, column), (TABLE_ALIASES.get(table, ""), column), ("*", column)):
        if key in index:
            ty, nullable, values = index[key]
            return ARROW_TYPES[ty], nullable, values
    if column in _SESSION_KEY:
        field = schemas.SCHEMAS[_SESSION_TABLE].field(column)
        # the fixed endpoint vocabulary of a contract table is per response kind; an
        # analysis table may hold several kinds, so only the type and nullability carry over
        return field.type, field.nullable, None
    raise KeyError((table, column))


def keys_as_declared(table: pa.Table) -> pa.Table:
    """``table`` with its key columns (text or dictionary-encoded text) as
    :data:`~dentalkit.convert.schemas.KEY_TYPE`: for files written without a declaration."""
    for i, field in enumerate(table.schema):
        if field.name not in schemas.KEY_COLUMNS or field.type == schemas.KEY_TYPE:
            continue
        value = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        if pa.types.is_string(value) or pa.types.is_large_string(value) or pa.types.is_null(value):
            table = table.set_column(
                i, field.with_type(schemas.KEY_TYPE), table.column(i).cast(schemas.KEY_TYPE)
            )
    return table


def _field_metadata(unit: str, desc: str, values: tuple[str, ...] | None) -> dict[str, str]:
    meta = {"description": desc, "unit": unit}
    if values is not None:
        meta["values"] = json.dumps(list(values), ensure_ascii=False)
    return meta


@cache
def _static(table: str, column: str) -> tuple[pa.DataType, bool, tuple | None, str, str] | None:
    """Declared (type, nullable, values, raw unit, description); None when undeclared."""
    try:
        type_, nullable, values = _declared_type(table, column)
    except KeyError:
        return None
    unit, desc = _lookup(table, column)
    return type_, nullable, values, unit or "", desc or ""


@cache
def _field(table: str, column: str, unit: str) -> pa.Field | None:
    static = _static(table, column)
    if static is None:
        return None
    type_, nullable, values, _, desc = static
    return pa.field(column, type_, nullable=nullable, metadata=_field_metadata(unit, desc, values))


def _describe(table: str, column: str, df: pd.DataFrame | None) -> tuple[str, str]:
    """(unit, description) of a column as written: placeholders resolved against ``df``."""
    unit, desc = _lookup(table, column)
    unit = unit or ""
    if df is not None:
        unit = _unit_text(unit, df)
    return unit, desc or ""


class _Units:
    """The units named in a table's ``unit`` column, computed once and only when needed."""

    def __init__(self, df: pd.DataFrame | None) -> None:
        self.df, self.done, self.units = df, df is None, None

    def get(self) -> list[str] | None:
        if not self.done:
            self.units, self.done = _units_in(self.df), True
        return self.units


def _declared(table: str, column: str, units: _Units) -> pa.Field | None:
    static = _static(table, column)
    if static is None:
        return None
    raw = static[3]
    unit = _resolve_unit(raw, units.get()) if _PLACEHOLDER in raw and units.df is not None else raw
    return _field(table, column, unit)


def declared_field(table: str, column: str, df: pd.DataFrame | None = None) -> pa.Field | None:
    """The declared Arrow field of ``table.column`` with its metadata; None if undeclared.

    Parameters
    ----------
    table, column : str
        Contract table (``landmarks`` …), analysis table (:data:`ANALYSIS_TABLES`, or an
        alias such as ``arch_compare``) or another name (generic declarations only).
    df : pandas.DataFrame, optional
        The table being written: resolves ``{unit}`` against its ``unit`` column.

    Returns
    -------
    pyarrow.Field or None
        Type and nullability as declared; metadata ``description``, ``unit`` and, for a
        fixed vocabulary, ``values`` (JSON list, in order).
    """
    return _declared(table, column, _Units(df))


@cache
def _category_dtype(values: tuple[str, ...], ordered: bool) -> pd.CategoricalDtype:
    return pd.CategoricalDtype(list(values), ordered=ordered)


def _fit_categories(
    table: str, field: pa.Field, values: tuple[str, ...] | None, col: pd.Series
) -> pd.Series:
    """``col`` as the declared dictionary type expects it (values are never changed).

    Without a declared vocabulary, text stays text (pyarrow dictionary-encodes it while
    converting, faster than a pandas categorical); with one, the column becomes a
    categorical with exactly those categories, so every file has the same dictionary.
    """
    ordered = bool(field.type.ordered)
    is_cat = isinstance(col.dtype, pd.CategoricalDtype)
    if values is None:
        if is_cat and col.dtype.ordered != ordered:
            return col.cat.set_categories(col.cat.categories, ordered=ordered)
        return col
    if is_cat and col.dtype.ordered == ordered and tuple(col.cat.categories) == values:
        return col
    _check_values(table, field.name, values, col)
    if is_cat:
        return col.cat.set_categories(list(values), ordered=ordered)
    return col.astype(_category_dtype(values, ordered))


def arrow_table(df: pd.DataFrame, table: str) -> pa.Table:
    """``df`` as an Arrow table with its declared schema (types, nullability, metadata).

    Declared columns get their declared Arrow type (counts stored as floats become
    integers, all-null object columns get their declared type, categoricals become
    ``dictionary<int32, string>``) and field metadata ``description``/``unit``/``values``.
    A column without a declaration keeps the type pyarrow infers and the description
    the catalogue gives (possibly empty). The index is not written.

    Parameters
    ----------
    df : pandas.DataFrame
        The table.
    table : str
        Its name (contract table, analysis table or alias, or any other name).

    Returns
    -------
    pyarrow.Table

    Raises
    ------
    InputError
        Naming the table and column when a value does not fit the declaration (a null
        in a non-nullable column, a fraction in an integer column, a value outside the
        declared vocabulary).
    """
    names = df.columns.tolist()
    columns = tuple(map(str, names))
    units = _Units(df)
    statics = _statics(table, columns)
    if _needs_units(table, columns):
        key = tuple(
            (_resolve_unit(st[3], units.get()) if _PLACEHOLDER in st[3] else st[3])
            if st is not None
            else None
            for st in statics
        )
    else:
        key = _raw_units(table, columns)
    plan = (table, columns, key)
    schema, checks = _plan(*plan)
    cols = [col for _, col in df.items()]  # one Series per column, made once
    changed = {}
    after = []  # text columns with a vocabulary: checked on the Arrow dictionary
    for i, values, ordered in checks:  # dictionary columns: the declared vocabulary
        dtype = cols[i].dtype
        if isinstance(dtype, pd.CategoricalDtype) and dtype.ordered == ordered:
            if values is None or _fits(dtype, values, ordered):
                continue
        elif isinstance(dtype, np.dtype) and dtype.kind in "fiub" and cols[i].isna().all():
            # no label at all, held as NaN (e.g. a name column of comparisons that had
            # none to report): nulls of the declared type
            changed[i] = pd.Series(None, index=cols[i].index, dtype=object)
            continue
        elif not ordered:
            # text: pyarrow dictionary-encodes it (an unordered dictionary's order means
            # nothing); the values present are checked against the vocabulary below
            if values is not None:
                after.append((i, values))
            continue
        changed[i] = _fit_categories(table, schema.field(i), values, cols[i])
    undeclared = [i for i, st in enumerate(key) if st is None]
    out = None
    if columns and tuple(names) == columns and len(set(columns)) == len(columns):
        out = _from_columns(df, cols, plan, changed, undeclared)
    if out is None:  # pyarrow converts, and a misfit is named for the user
        out = _from_pandas(df, table, schema, changed, undeclared)
    for i, values in after:
        present = {v for chunk in out.column(i).chunks for v in chunk.dictionary.to_pylist()}
        extra = sorted(present - set(values))
        if extra:
            raise _outside(table, columns[i], values, extra, cols[i])
    return out


def _check_values(table: str, column: str, values: tuple[str, ...], col: pd.Series) -> None:
    """Refuse a value of ``col`` outside its declared vocabulary (named, with the fix)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        codes = np.unique(col.cat.codes.to_numpy())
        present = col.cat.categories[codes[codes >= 0]]
    else:
        present = pd.unique(col.to_numpy(dtype=object))
    extra = sorted({str(v) for v in present if not pd.isna(v)} - set(values))
    if extra:
        raise _outside(table, column, values, extra, col)


def _outside(
    table: str, column: str, values: tuple[str, ...], extra: list[str], col: pd.Series
) -> InputError:
    """The error for values of ``col`` outside the vocabulary, naming the rows."""
    rows = col.astype(object).map(str, na_action="ignore").isin(extra).to_numpy(dtype=bool)
    return InputError(
        f"table {table!r}: column {column!r} has value(s) {extra} outside its "
        f"declared values {list(values)} in {_rows_text(rows, col.index)}; the vocabulary "
        "is declared in dentalkit/data/columns.csv"
    )


def partition_writer(name: str | None, folder: str) -> Callable[[pd.DataFrame, Path], None]:
    """The default file writer of :func:`dentalkit.io.write_partitioned`.

    Each part is written with the declaration of table ``name`` (:func:`arrow_table`:
    declared types, nullability, field metadata), so every part of a partitioned table has
    the one declared schema — categoricals with the declared vocabulary get the same
    dictionary in every file. Without ``name``, the folder's name is the table's when it
    is a declared table (``landmarks/``, ``ceph_measures/`` …); otherwise pyarrow infers
    the types, as for :func:`dentalkit.io.write_parquet` without a name.

    Parameters
    ----------
    name : str or None
        The table's name in the column catalogue, or None.
    folder : str
        The partitioned table's folder name.

    Returns
    -------
    callable
        ``writer(frame, file_path)``.
    """
    import pyarrow.parquet as pq

    table = name if name is not None else folder if is_declared_table(folder) else None

    def write(frame: pd.DataFrame, path: Path) -> None:
        if table is None:
            arrow = keys_as_declared(pa.Table.from_pandas(frame, preserve_index=False))
        else:
            arrow = arrow_table(frame, table)
        pq.write_table(arrow, path)

    return write


def _from_pandas(
    df: pd.DataFrame,
    table: str,
    schema: pa.Schema,
    changed: dict[int, pd.Series],
    undeclared: list[int],
) -> pa.Table:
    """``pa.Table.from_pandas`` with the declared schema; a misfit named as an InputError."""
    frame = df.copy(deep=False)
    frame.attrs = {}  # attrs may hold tables (e.g. problems) that Parquet metadata cannot
    for i, col in changed.items():
        frame.isetitem(i, col)
    if undeclared:
        names = [str(frame.columns[i]) for i in undeclared]
        try:
            inferred = pa.Schema.from_pandas(frame[names], preserve_index=False)
        except _ARROW_ERRORS as exc:
            raise _uninferable(table, frame, undeclared, exc) from exc
        for i, name in zip(undeclared, names, strict=True):
            meta = _field_metadata(*_describe(table, name, df), None)
            schema = schema.set(i, inferred.field(name).with_metadata(meta))
    try:
        return pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    except _ARROW_ERRORS as exc:
        raise _misfit(table, frame, schema, exc) from exc


def _from_columns(
    df: pd.DataFrame,
    cols: list[pd.Series],
    plan: tuple,
    changed: dict[int, pd.Series],
    undeclared: list[int],
) -> pa.Table | None:
    """The table :func:`_from_pandas` builds, column by column and without copying ``df``.

    Each column is converted as ``pa.Table.from_pandas`` converts it
    (``pa.array(values, type=declared, from_pandas=True)``, single-threaded), except a
    categorical of a declared dictionary type: its Arrow dictionary is built from the
    pandas codes (widened to the declared ``int32`` indices; -1 is null) and categories,
    where ``from_pandas`` builds ``dictionary<int8, …>`` (the codes' width) and casts it.
    The written schema, with the ``pandas`` metadata ``from_pandas`` adds, is taken from
    ``from_pandas`` on the zero-row frame once per table layout (:func:`_written_schema`).

    Returns None when a value does not fit its column (a value the declared type cannot
    hold, a null in a non-null column): the caller then converts with
    :func:`_from_pandas`, which raises the error naming the column.
    """
    table = plan[0]
    types = _plan_types(*plan)
    todo = set(undeclared)
    arrays, layout, extra = [], [], []
    for i, (type_, nullable) in enumerate(types):
        col = changed.get(i, cols[i])
        dtype = col.dtype
        is_cat = isinstance(dtype, pd.CategoricalDtype)
        numpy = isinstance(dtype, np.dtype)
        # the values pyarrow takes from a Series (a Series itself costs a slow lookup of
        # __arrow_array__); tz-aware datetimes and other extension types go as the Series
        values = col.to_numpy() if numpy else col
        try:
            if i in todo:  # the type from_pandas infers (extension types: from no rows)
                guess = None if numpy or is_cat else pa.array(col.head(0), from_pandas=True).type
                arr = pa.array(values, type=guess, from_pandas=True)
                name = str(df.columns[i])
                meta = _field_metadata(*_describe(table, name, df), None)
                extra.append((i, name, arr.type, tuple(meta.items())))
            elif is_cat and pa.types.is_dictionary(type_):
                arr = _dictionary_array(col.array, type_)
            elif is_cat and pa.types.is_string(type_):  # a key column: decode the codes
                arr = _dictionary_array(col.array, _CAT_TEXT).cast(type_)
            else:
                arr = pa.array(values, type=type_, from_pandas=True)
        except _ARROW_ERRORS:
            return None
        if not nullable and arr.null_count:
            return None
        arrays.append(arr)
        layout.append(("category", len(dtype.categories), dtype.ordered) if is_cat else dtype)
    written = _written_schema(df, plan, changed, tuple(extra), tuple(layout))
    return pa.Table.from_arrays(arrays, schema=written)


@cache
def _plan_types(
    table: str, columns: tuple[str, ...], units: tuple[str | None, ...]
) -> tuple[tuple[pa.DataType, bool], ...]:
    """(Arrow type, nullable) of each column of :func:`_plan`'s schema."""
    schema, _ = _plan(table, columns, units)
    return tuple((field.type, field.nullable) for field in schema)


_CAT_TEXT = pa.dictionary(pa.int32(), pa.string())


def _dictionary_array(values: pd.Categorical, type_: pa.DictionaryType) -> pa.DictionaryArray:
    """A pandas categorical as ``type_`` (int32 indices): codes widened, -1 as null."""
    indices = values.codes.astype(np.int32)
    dictionary = pa.array(values.categories.to_numpy(), type=type_.value_type)
    return pa.DictionaryArray.from_arrays(
        indices, dictionary, ordered=type_.ordered, from_pandas=True
    )


_WRITTEN: dict[tuple, pa.Schema] = {}
_WRITTEN_MAX = 512  # distinct table layouts remembered (cleared when full)


def _written_schema(
    df: pd.DataFrame,
    plan: tuple,
    changed: dict[int, pd.Series],
    extra: tuple[tuple[int, str, pa.DataType, tuple[tuple[str, str], ...]], ...],
    layout: tuple,
) -> pa.Schema:
    """The schema ``from_pandas`` writes: declared fields, inferred ones, pandas metadata.

    ``from_pandas``'s ``pandas`` metadata depends only on the column names, pandas dtypes
    (a categorical: number of categories, order, width of the codes) and Arrow types, so
    it is taken from ``from_pandas`` on the zero-row frame, once per layout.
    """
    key = (plan, extra, layout)
    hit = _WRITTEN.get(key)
    if hit is not None:
        return hit
    schema, _ = _plan(*plan)
    for i, name, type_, meta in extra:
        schema = schema.set(i, pa.field(name, type_, metadata=dict(meta)))
    empty = df.iloc[:0].copy(deep=False)
    empty.attrs = {}
    for i, col in changed.items():
        empty.isetitem(i, col.iloc[:0])
    written = pa.Table.from_pandas(empty, schema=schema, preserve_index=False).schema
    if len(_WRITTEN) >= _WRITTEN_MAX:
        _WRITTEN.clear()
    _WRITTEN[key] = written
    return written


def _fits(dtype: pd.CategoricalDtype, values: tuple[str, ...], ordered: bool) -> bool:
    """Whether a categorical's categories fit the vocabulary (ordered: exactly, in order)."""
    cats = dtype.categories
    if ordered:
        return len(cats) == len(values) and cats.equals(_vocabulary(values))
    return bool(cats.isin(_vocabulary(values)).all())


@cache
def _vocabulary(values: tuple[str, ...]) -> pd.Index:
    return pd.Index(list(values), dtype=object)


@cache
def _needs_units(table: str, columns: tuple[str, ...]) -> bool:
    return any(st is not None and _PLACEHOLDER in st[3] for st in _statics(table, columns))


@cache
def _raw_units(table: str, columns: tuple[str, ...]) -> tuple[str | None, ...]:
    return tuple(st[3] if st is not None else None for st in _statics(table, columns))


@cache
def _statics(table: str, columns: tuple[str, ...]) -> tuple:
    return tuple(_static(table, c) for c in columns)


@cache
def _plan(
    table: str, columns: tuple[str, ...], units: tuple[str | None, ...]
) -> tuple[pa.Schema, tuple[tuple[int, tuple[str, ...] | None, bool], ...]]:
    """The schema (undeclared columns: a null placeholder) and the dictionary columns."""
    fields, checks = [], []
    for i, (name, unit) in enumerate(zip(columns, units, strict=True)):
        if unit is None:
            fields.append(pa.field(name, pa.null()))  # replaced by the inferred field
            continue
        field = _field(table, name, unit)
        fields.append(field)
        if pa.types.is_dictionary(field.type):
            checks.append((i, _static(table, name)[2], bool(field.type.ordered)))
    return pa.schema(fields), tuple(checks)


_ARROW_ERRORS = (pa.ArrowInvalid, pa.ArrowTypeError, pa.ArrowNotImplementedError, ValueError)


def _rows_text(mask: np.ndarray, index: pd.Index, more: bool = False) -> str:
    """``rows 3, 7 (0-based positions; index labels 'a', 'b')``: where ``mask`` is true.

    At most five rows are named; ``more``: the mask was not searched to the end.
    """
    rows = np.flatnonzero(mask)
    many = len(rows) > 1
    shown = ", ".join(str(r) for r in rows[:5])
    if len(rows) > 5:
        shown += f" … ({len(rows)} rows)"
    elif more:
        shown += " and possibly more"
    text = f"row{'s' if many else ''} {shown} (0-based position{'s' if many else ''}"
    labels = index[rows[:5]]
    if not (isinstance(index, pd.RangeIndex) and list(labels) == rows[:5].tolist()):
        text += f"; index label{'s' if many else ''} {', '.join(map(repr, labels))}"
    return text + ")"


_CHUNK = 4096  # rows converted at once while looking for the values a type refuses


def _refused_rows(col: pd.Series, type_: pa.DataType) -> tuple[np.ndarray, bool, str]:
    """(mask of up to five rows ``type_`` cannot hold, whether the search stopped before
    the end, pyarrow's reason for the first one). Runs on the error path only."""
    mask = np.zeros(len(col), dtype=bool)
    reason = ""
    for start in range(0, len(col), _CHUNK):
        part = col.iloc[start : start + _CHUNK]
        try:
            pa.array(part, type=type_, from_pandas=True)
            continue
        except _ARROW_ERRORS:
            pass
        for j in range(len(part)):
            try:
                pa.array(part.iloc[j : j + 1], type=type_, from_pandas=True)
            except _ARROW_ERRORS as exc:
                mask[start + j] = True
                reason = reason or str(exc.args[0] if exc.args else exc)
                if mask.sum() == 5:
                    return mask, start + j + 1 < len(col), reason
    return mask, False, reason


def _uninferable(
    table: str, frame: pd.DataFrame, undeclared: list[int], exc: Exception
) -> InputError:
    """The error naming the first undeclared column to which pyarrow cannot give one type
    (e.g. numbers and text mixed in an object column), and the rows that break it."""
    for i in undeclared:
        col = frame.iloc[:, i]
        try:
            pa.array(col, from_pandas=True)
            continue
        except _ARROW_ERRORS as col_exc:
            detail = str(col_exc.args[0] if col_exc.args else col_exc)
        name = str(frame.columns[i])
        where, first_type = "", None
        valid = np.flatnonzero(col.notna().to_numpy(dtype=bool))
        if len(valid):
            try:  # the type the first value gives; the rows it cannot hold
                first_type = pa.array(col.iloc[valid[:1]], from_pandas=True).type
            except _ARROW_ERRORS:  # the first value alone cannot be stored
                mask = np.zeros(len(col), dtype=bool)
                mask[valid[0]] = True
                where = f" ({_rows_text(mask, frame.index)})"
        if first_type is not None:
            mask, more, reason = _refused_rows(col, first_type)
            if mask.any():
                detail = reason or detail
                where = f" ({_rows_text(mask, frame.index, more)}; the first value is {first_type})"
        return InputError(
            f"table {table!r}: column {name!r} is not declared and its values have no one "
            f"type a file can store{where}: {detail}; give the column one type (e.g. "
            f"df[{name!r}].astype(str)), drop it, or declare it in dentalkit/data/columns.csv"
        )
    return InputError(f"table {table!r}: an undeclared column cannot be stored: {exc}")


def _misfit(table: str, frame: pd.DataFrame, schema: pa.Schema, exc: Exception) -> InputError:
    """The error naming the first column whose values do not fit its declared type, and
    the rows that hold them."""
    for i, field in enumerate(schema):
        col = frame.iloc[:, i]
        nulls = col.isna().to_numpy(dtype=bool)
        if not field.nullable and nulls.any():
            return InputError(
                f"table {table!r}: column {field.name!r} may not be null, but "
                f"{_rows_text(nulls, frame.index)} hold{'s' if nulls.sum() == 1 else ''} "
                f"no value ({int(nulls.sum())} in all); it is declared non-null in "
                "dentalkit/data/columns.csv: fill or drop those rows"
            )
    for i, field in enumerate(schema):
        col = frame.iloc[:, i]
        try:
            pa.array(col, type=field.type, from_pandas=True)
        except _ARROW_ERRORS as col_exc:
            mask, more, reason = _refused_rows(col, field.type)
            detail = reason or (col_exc.args[0] if col_exc.args else col_exc)
            where = f" in {_rows_text(mask, frame.index, more)}" if mask.any() else ""
            return InputError(
                f"table {table!r}: column {field.name!r} (declared {field.type}) cannot hold "
                f"its values{where}: {detail}; fix the values or the declaration in "
                "dentalkit/data/columns.csv"
            )
    return InputError(
        f"table {table!r} does not fit its declared schema (dentalkit/data/columns.csv): {exc}"
    )


def _schema_doc(table: str, column: str) -> str | None:
    schema = schemas.SCHEMAS.get(table)
    if schema is None or column not in schema.names:
        return None
    meta = schema.field(column).metadata or {}
    return meta.get(b"doc", b"").decode("utf-8") or None


@cache
def _codebook() -> dict[str, tuple[str, str, str]]:
    """Patient-table column → (parameter, meaning, unit) of the shipped TLE codebook."""
    from dentalkit.tle import load_codebook

    table = load_codebook().table()
    return {
        c: (p, m, u)
        for p, m, c, u in zip(
            table["param"], table["meaning"], table["column"], table["unit"], strict=True
        )
    }


@cache
def _measure_reference() -> dict[str, tuple[str, str, str]]:
    """Cephalometric measure id → (label, description, unit) of the measure reference."""
    from dentalkit.ceph import reference_table

    ref = reference_table()
    return {
        i: (lab, desc, unit)
        for i, lab, desc, unit in zip(
            ref["id"], ref["label"], ref["description"], ref["unit"], strict=True
        )
    }


def column_type(dtype: Any) -> str:
    """The exported (language-neutral) type of a pandas dtype.

    One of ``categorical``, ``ordered categorical``, ``boolean``, ``integer``, ``number``, ``datetime``,
    ``string``, ``geometry`` (WKT text in CSV) or ``text`` (anything else, as text).
    """
    if isinstance(dtype, pd.CategoricalDtype):
        return "ordered categorical" if dtype.ordered else "categorical"
    if pd.api.types.is_bool_dtype(dtype):
        return "boolean"
    if pd.api.types.is_integer_dtype(dtype):
        return "integer"
    if pd.api.types.is_float_dtype(dtype):
        return "number"
    if pd.api.types.is_datetime64_any_dtype(dtype):
        return "datetime"
    if pd.api.types.is_string_dtype(dtype) and not (
        isinstance(dtype, np.dtype) and dtype.kind == "O"
    ):
        return "string"
    return "text"


def _is_list(col: pd.Series) -> bool:
    """Whether ``col`` is a list column (object cells that are lists, tuples or arrays)."""
    if col.dtype != object:
        return False
    values = col.dropna()
    return bool(len(values)) and all(isinstance(v, (list, tuple, np.ndarray)) for v in values)


def _is_geometry(col: pd.Series) -> bool:
    if col.dtype != object:
        return False
    import shapely

    values = col.dropna()
    return bool(len(values)) and bool(shapely.is_geometry(values.to_numpy()).all())


def _units_in(df: pd.DataFrame) -> list[str] | None:
    """Units of measurement named in the table's ``unit`` column (None: no such column)."""
    if "unit" not in df.columns:
        return None
    col = df["unit"]
    if isinstance(col.dtype, pd.CategoricalDtype):  # the used categories, without a scan
        codes = np.unique(col.cat.codes.to_numpy())
        present = col.cat.categories[codes[codes >= 0]]
    else:
        present = pd.unique(col.to_numpy(dtype=object))
    return sorted({str(u) for u in present if not pd.isna(u)})


def _unit_text(raw: str, df: pd.DataFrame) -> str:
    if _PLACEHOLDER not in raw:
        return raw
    return _resolve_unit(raw, _units_in(df))


def _resolve_unit(raw: str, units: list[str] | None) -> str:
    if _PLACEHOLDER not in raw:
        return raw
    if units is None:
        return ""
    if len(units) == 1:
        return raw.replace(_PLACEHOLDER, units[0])
    listed = ", ".join(units) if units else "none present"
    return f"per row: column unit ({listed})" + (
        "" if raw == _PLACEHOLDER else f"; {raw.replace(_PLACEHOLDER, 'unit')}"
    )


def _lookup(table: str, column: str) -> tuple[str | None, str | None]:
    """Declared (unit, description) of a column, without user overrides."""
    index = _catalogue_index()
    unit = desc = None
    specific = index.get((table, column)) or index.get((TABLE_ALIASES.get(table, ""), column))
    if specific is not None:
        unit, desc = specific[0] or None, specific[1] or None
    contract = _schema_doc(table, column)
    if contract is not None:
        desc = contract
    if desc is None and column in _SESSION_KEY:
        desc = _schema_doc(_SESSION_TABLE, column)
    if desc is None and column in _TLE_COLUMNS:
        desc = _schema_doc("tle", column)
        if unit is None and column == "estimate_length_months":
            unit = index[("tle", column)][0]
    if desc is None and column in _codebook():
        param, meaning, cb_unit = _codebook()[column]
        desc = f"{meaning} (treatment-length codebook, sent as {param})"
        unit = unit or cb_unit or None
    generic = index.get(("*", column))
    if generic is not None:
        unit = unit or generic[0] or None
        desc = desc or generic[1] or None
    if desc is None and column in _measure_reference():
        label, text, m_unit = _measure_reference()[column]
        desc = f"{label}: {text}"
        unit = unit or m_unit
    if unit is None:
        for suffix, u in _SUFFIX_UNITS:
            if column.endswith(suffix):
                unit = u
                break
    return unit, desc


def _override(mapping: Mapping[str, str] | None, table: str, column: str) -> str | None:
    if not mapping:
        return None
    return mapping.get(f"{table}.{column}", mapping.get(column))


def _allowed(table: str, column: str, col: pd.Series) -> list[str]:
    """The declared vocabulary of ``table.column`` (``true``/``false`` for booleans).

    Taken from the declarations only (:data:`dentalkit.convert.schemas.SCHEMAS`, the
    ``values`` of ``columns.csv``), never from the data: a declared table whose column
    holds a value outside it is refused. In a table dentalkit does not declare, a generic
    (``*``) vocabulary is listed only when the column's values fit it; otherwise the
    column is the user's own and has none.
    """
    try:
        type_, _, values = _declared_type(table, column)
    except KeyError:
        type_, values = None, None
    if values is not None:
        if is_declared_table(table):
            _check_values(table, column, values, col)
        else:
            try:
                _check_values(table, column, values, col)
            except InputError:
                values = None
    if values is not None:
        return list(values)
    if type_ == pa.bool_() or pd.api.types.is_bool_dtype(col.dtype):
        return ["true", "false"]
    return []


def _levels(col: pd.Series) -> list[str]:
    """The categories of a categorical column in their order (an R factor's levels)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return [str(c) for c in col.cat.categories]
    return []


def data_dictionary(
    tables: Mapping[str, pd.DataFrame],
    *,
    descriptions: Mapping[str, str] | None = None,
    units: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """One row per column of every table: type, unit, description and allowed values.

    Parameters
    ----------
    tables : mapping of str to pandas.DataFrame
        Tables by export name. Contract tables (``landmarks`` …) and the analysis tables
        of :data:`ANALYSIS_TABLES` are described from dentalkit's declarations; other
        names get the generic declarations (session key, statistics columns, codebook
        columns, measure ids as column names).
    descriptions, units : mapping of str to str, optional
        Your own entries, keyed ``"table.column"`` or ``"column"`` (all tables); they
        take precedence over dentalkit's.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`DICTIONARY_COLUMNS`. ``type`` is the exported type
        (:func:`column_type`; ``geometry`` for shapely columns, ``list`` for columns of
        lists such as ``groups`` or ``missing_fdi``), ``pandas_dtype`` the
        exact dtype (what :func:`dentalkit.io.read_export` restores), ``allowed_values``
        the declared vocabulary as a list (the ``values`` of ``columns.csv`` or the data
        contract's categories, in their order; ``true``/``false`` for booleans; empty
        where the values are open, e.g. patient ids or measure ids), ``levels`` the
        categories of a categorical column as written (an R factor's levels, in order;
        empty for other columns), ``n_missing`` the null count. A column nobody
        describes has an empty description.

    Raises
    ------
    InputError
        A declared table's column holds a value outside its declared vocabulary (the
        column and the values are named): the dictionary would otherwise be false.
    """
    rows = []
    for table, df in tables.items():
        pseudo = df.attrs.get(PSEUDONYM_ATTR) or {}
        for column, col in df.items():
            column = str(column)
            unit, desc = _lookup(table, column)
            desc = _override(descriptions, table, column) or desc or ""
            unit = _override(units, table, column) or unit or ""
            if pseudo.get("column") == column:
                desc = (
                    f"pseudonym: {pseudo.get('prefix', '')} + first {pseudo.get('length')} "
                    f"hex digits of {pseudo.get('method')} keyed with the study's secret "
                    "(not stored; irreversible without it). " + desc
                ).strip()
            geometry = _is_geometry(col)
            kind = "geometry" if geometry else "list" if _is_list(col) else column_type(col.dtype)
            rows.append(
                {
                    "table": table,
                    "column": column,
                    "type": kind,
                    "pandas_dtype": str(col.dtype),
                    "unit": _unit_text(unit, df),
                    "description": desc,
                    "allowed_values": _allowed(table, column, col),
                    "levels": _levels(col),
                    "n_missing": int(col.isna().sum()),
                }
            )
    out = pd.DataFrame(rows, columns=list(DICTIONARY_COLUMNS))
    return out.astype({"n_missing": "int64"})


def value_labels(table: str, column: str, col: pd.Series) -> dict[str, dict[str, str]]:
    """Descriptions of the values of a ``measure`` column that holds cephalometric ids."""
    if column != "measure":
        return {}
    ref = _measure_reference()
    values = col.cat.categories if isinstance(col.dtype, pd.CategoricalDtype) else col.unique()
    return {
        str(v): {"label": ref[str(v)][0], "unit": ref[str(v)][2], "description": ref[str(v)][1]}
        for v in values
        if str(v) in ref
    }


def _md(text: str) -> str:
    return re.sub(r"\|", r"\\|", text)


def _pandas_dtype_text(table: str, name: str) -> str:
    dtype = schemas.pandas_dtypes(table)[name]
    if isinstance(dtype, pd.CategoricalDtype):
        return "category"
    return str(dtype)


def _analysis_row(table: str, column: str) -> str:
    """One Markdown row of an analysis (or ``*``) column: type, unit, description, values."""
    unit, desc = _lookup(table, column) if table != "*" else _catalogue_index()[("*", column)]
    try:
        type_, nullable, values = _declared_type(table, column)
    except KeyError:
        type_text = "(inferred)"
        values = None
    else:
        # "<" escaped: Markdown renderers take a raw "list<string>" for an HTML tag and hide it
        type_text = _arrow_text(type_).replace("<", "&lt;") + (" (nullable)" if nullable else "")
    shown = ", ".join(values) if values else ""
    return f"| `{column}` | {type_text} | {_md(unit or '')} | {_md(desc or '')} | {_md(shown)} |"


def _arrow_text(type_: pa.DataType) -> str:
    for name, t in ARROW_TYPES.items():
        if t == type_:
            return name
    return str(type_)  # pragma: no cover - every declared type is in ARROW_TYPES


def columns_markdown() -> str:
    """Markdown of ``docs/columns.md``: every contract and analysis column (deterministic)."""
    lines = [
        "# Column reference",
        "",
        "Generated from `dentalkit/convert/schemas.py` (the data contract's tables) and",
        "`dentalkit/data/columns.csv` (units, and the analysis tables) by",
        "`dentalkit.io._dictionary.columns_markdown()`; do not edit by hand (a test compares this",
        "file with a fresh rendering). The same declarations fill the data dictionary that",
        "`dentalkit.io.export` writes next to exported tables.",
        "",
        "`{unit}` in a unit means the unit named in the row's `unit` column (deg; mm or px;",
        "%; months). Units of lengths are millimetres only after an explicit calibration",
        "(`mm_per_px`); otherwise pixels.",
        "",
        "The key columns `patient_id`, `timestamp` and `endpoint` are Arrow `string` in every",
        "file dentalkit writes (tables, problems, analyses, the store's files), whatever their",
        "pandas dtype in memory: any two files join on them (`docs/data-contract.md`).",
        "",
        "## Data contract tables",
        "",
    ]
    for table, schema in schemas.SCHEMAS.items():
        lines += [f"### `{table}`", "", "| column | dtype | unit | description | values |"]
        lines.append("|---|---|---|---|---|")
        for field in schema:
            unit, desc = _lookup(table, field.name)
            fixed = schemas.categories(table, field.name)
            values = ", ".join(fixed) if fixed else ""
            null = " (nullable)" if field.nullable else ""
            lines.append(
                f"| `{field.name}` | {_pandas_dtype_text(table, field.name)}{null} | "
                f"{_md(unit or '')} | {_md(desc or '')} | {_md(values)} |"
            )
        lines.append("")
    lines += [
        "## Analysis tables",
        "",
        "Export an analysis result under these names (`dentalkit.io.export({'ceph_measures':",
        "m, ...}, out_dir)`) and the dictionary describes its columns;",
        "`dentalkit.study.write_analyses` writes each table with these Arrow types,",
        "nullability and field metadata (`description`, `unit`, `values`). A column whose",
        "type reads *(inferred)* is described but not typed: pyarrow infers its type.",
        "Session-key columns",
        "(`patient_id`, `timestamp`, `session_time`, `endpoint`, `model_version`) mean what",
        "they mean in the contract tables; columns listed under *any table* below apply",
        "wherever they appear.",
        "",
    ]
    cat = load_catalogue()
    head = ["| column | Arrow type | unit | description | values |", "|---|---|---|---|---|"]
    for table, (producer, per) in ANALYSIS_TABLES.items():
        rows = cat[cat["table"] == table]
        lines += [f"### `{table}`", "", f"From `dentalkit.{producer}`; one row per {per}.", ""]
        lines += head
        lines += [_analysis_row(table, c) for c in rows["column"]]
        lines.append("")
    rows = cat[cat["table"] == "*"]
    lines += ["### Any table", "", *head]
    lines += [_analysis_row("*", c) for c in rows["column"]]
    lines += [
        "",
        "Also described wherever they appear: the treatment-length codebook's patient",
        "columns (`age_years`, `sex`, `malocclusion_class` …; `docs/tle.md`) and columns named",
        "after a cephalometric measure id (`SNA`, `ANB` … in a wide table; `docs/measures.md`).",
        "",
    ]
    return "\n".join(lines)
