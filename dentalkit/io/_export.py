"""Export tables for R / SPSS / Stata users: CSV (+ Parquet) and a data dictionary.

Implementation of :func:`dentalkit.io.export` and :func:`dentalkit.io.read_export`.

CSV conventions (also written into ``data_dictionary.json``):

* UTF-8 without byte-order mark, comma separator, ``.`` decimal mark, LF line ends,
  one header row, no index column;
* missing values are empty fields;
* numbers in the shortest form that reads back to the same float64 (Python's ``repr``);
* booleans ``true`` / ``false``;
* date-times ISO 8601 in UTC with a ``Z`` (``2024-03-05T10:00:00Z``; fractional seconds
  to the microsecond when present); naive date-times without a zone;
* categorical columns as their labels; the dictionary lists their levels in order
  (``levels``: an R factor's levels, SPSS value labels) and, where dentalkit declares one,
  the vocabulary (``allowed_values``, from ``dentalkit/data/columns.csv``);
* geometry columns as WKT (``POLYGON ((…))``) at full precision;
* list columns (``groups``, ``n_units_per_group``, ``missing_fdi`` …) as JSON arrays
  (``[12, 18]``, ``["Class I", "Class II"]``; ``[]`` is an empty list, an empty field a
  missing one);
* text cells that a spreadsheet would run as a formula are neutralized (OWASP, "CSV
  Injection"): a text, string or category cell — or a column name — that begins with ``=``,
  ``+``, ``-``, ``@``, a tab or a carriage return gets a leading apostrophe ``'`` unless it is
  a plain number such as ``-4.5``; a cell of apostrophes followed by one of those characters
  gets one apostrophe more, so :func:`read_export` restores every value exactly. Number,
  integer, boolean and date-time columns are never changed (``-1.5`` stays a number);
* control characters other than tab, line feed and carriage return (U+0000–U+0008, U+000B,
  U+000C, U+000E–U+001F, U+007F) are refused with an :class:`~dentalkit.errors.InputError`
  naming table, column and rows: spreadsheets and R's readers cut or mangle them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dentalkit._atomic import atomic_write, atomic_write_all
from dentalkit.errors import InputError
from dentalkit.io._dictionary import _rows_text, data_dictionary, is_declared_table, value_labels
from dentalkit.io._pseudonymize import PSEUDONYM_ATTR

__all__ = [
    "DICTIONARY_FORMAT",
    "FORMATS",
    "csv_text",
    "export",
    "neutralize_cell",
    "read_export",
    "restore_cell",
    "safe_csv_frame",
    "write_problems_csv",
]

#: Formats :func:`export` writes besides the dictionary.
FORMATS = ("csv", "parquet")

#: ``format`` field of ``data_dictionary.json``.
DICTIONARY_FORMAT = "dentalkit-data-dictionary/1"

_CONVENTIONS = {
    "encoding": "UTF-8 (no byte-order mark)",
    "separator": ",",
    "decimal_mark": ".",
    "missing": "empty field",
    "boolean": "true / false",
    "datetime": "ISO 8601; UTC with Z (2024-03-05T10:00:00Z); naive values without a zone",
    "categorical": (
        "labels as text; levels lists the column's levels in order (an R factor's), "
        "allowed_values the declared vocabulary (empty: open, e.g. ids)"
    ),
    "geometry": "WKT (OGC Well-Known Text), pixel or mm coordinates as the unit says",
    "list": 'JSON array ([12, 18] or ["Class I", "Class II"]); [] is an empty list',
    "numbers": "shortest text that reads back to the same IEEE 754 double",
    "formula_cells": (
        "OWASP CSV-injection rule: a text, string or category cell (or column name) that "
        "begins with = + - @, a tab or a carriage return is written with a leading "
        "apostrophe (') unless it is a plain number such as -4.5; a cell of apostrophes "
        "followed by one of those characters gets one apostrophe more. Remove one leading "
        "apostrophe from such cells to get the value (dentalkit.io.read_export does). "
        "Numeric, boolean and date-time columns are never changed"
    ),
    "control_characters": (
        "refused: no cell holds U+0000-U+0008, U+000B, U+000C, U+000E-U+001F or U+007F; "
        "tab, line feed and carriage return inside a quoted cell are kept (a table with a "
        "carriage return in a text cell has every non-numeric cell quoted)"
    ),
}
#: Kinds of column whose cells are text in the CSV and are neutralized.
_TEXT_KINDS = ("string", "text", "categorical", "ordered categorical")
_TRIGGER = "=+-@\t\r"
_FORMULA = re.compile(f"'*[{re.escape(_TRIGGER)}]")
_ESCAPED = re.compile(f"'+[{re.escape(_TRIGGER)}]")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def neutralize_cell(text: str) -> str:
    """``text`` as a CSV cell that no spreadsheet runs as a formula (OWASP rule).

    >>> [neutralize_cell(t) for t in ["=1+1", "@SUM(A1)", "-4.5", "+1+1", "'=x", "ok"]]
    ["'=1+1", "'@SUM(A1)", '-4.5', "'+1+1", "''=x", 'ok']
    """
    if _FORMULA.match(text) and not _NUMBER.fullmatch(text):
        return "'" + text
    return text


def restore_cell(text: str) -> str:
    """Undo :func:`neutralize_cell` (``restore_cell(neutralize_cell(t)) == t`` for every t).

    >>> restore_cell("'=1+1"), restore_cell("''=x"), restore_cell("'t Hooft")
    ('=1+1', "'=x", "'t Hooft")
    """
    return text[1:] if _ESCAPED.match(text) else text


def _refuse_controls(table: str, name: str, col: pd.Series) -> None:
    """Refuse a control character, naming rows as docs/conventions.md's row-number rule says:
    the 0-based position in the table given (index labels when they differ)."""
    bad = col.map(lambda v: isinstance(v, str) and bool(_CONTROL.search(v))).to_numpy(bool)
    if bad.any():
        first = col[bad].iloc[0]
        char = _CONTROL.search(first).group()  # type: ignore[union-attr]
        if name == "(column names)":
            cols = np.flatnonzero(bad)
            where = (
                f"the name of column{'s' if len(cols) > 1 else ''} at position "
                + ", ".join(map(str, cols[:5].tolist()))
                + " (0-based). A CSV header cannot hold it: rename the column"
            )
        else:
            where = (
                f"{_rows_text(bad, col.index)}; in the CSV it would have written, line = "
                "row + 2 (line 1 is the header). CSV readers cut or mangle it: remove it, "
                r"e.g. df[col] = df[col].str.replace(r'[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]', "
                "'', regex=True)"
            )
        raise InputError(
            f"table {table!r}, column {name!r}: control character U+{ord(char):04X} in {where}"
        )


def csv_text(frame: pd.DataFrame, text_columns: Iterable[str]) -> str:
    """The CSV text of ``frame`` (LF line ends, no index).

    Python's ``csv`` writer quotes a cell holding a line feed but not one holding a lone
    carriage return, which readers then take for a line end; a table with a carriage return
    in a text cell is therefore written with every non-numeric cell quoted (RFC 4180).
    """
    import csv

    del text_columns  # every column is looked at: names may have been neutralized
    has_cr = any(
        frame.iloc[:, i].astype(object).map(lambda v: isinstance(v, str) and "\r" in v).any()
        for i in range(frame.shape[1])
        if not pd.api.types.is_numeric_dtype(frame.dtypes.iloc[i])
    ) or any("\r" in str(c) for c in frame.columns)
    quoting = csv.QUOTE_NONNUMERIC if has_cr else csv.QUOTE_MINIMAL
    return frame.to_csv(index=False, lineterminator="\n", quoting=quoting)


def safe_csv_frame(frame: pd.DataFrame, table: str, text_columns: Iterable[str]) -> pd.DataFrame:
    """``frame`` (cells as the CSV text) with formula cells neutralized and names checked.

    ``text_columns`` are the columns whose cells are text (others — numbers, booleans,
    date-times, WKT — are left as they are). Column names are neutralized too.

    Raises
    ------
    InputError
        A text cell or a column name holds a control character (see the module notes).
    """
    out = frame.copy()
    for name in text_columns:
        col = out[name].astype(object)
        _refuse_controls(table, str(name), col)
        out[name] = col.map(neutralize_cell, na_action="ignore")
    names = [str(c) for c in out.columns]
    _refuse_controls(table, "(column names)", pd.Series(names, dtype=object))
    out.columns = [neutralize_cell(c) for c in names]
    return out


def write_problems_csv(problems: pd.DataFrame, path: str | os.PathLike, name: str) -> Path:
    """Write a problems table (e.g. a manifest's bad rows) as a safe CSV file.

    Text cells that a spreadsheet would run as a formula are neutralized (as
    :func:`export` does); a control character in a value is written escaped
    (``\\x07``) rather than refused, since the file exists to show the bad values.

    Parameters
    ----------
    problems : DataFrame
        The problems table (``row`` stays a number; every other column is text).
    path : path
        The CSV file (written atomically).
    name : str
        The table's name, used in messages.
    """
    cells = problems.astype(object).where(problems.notna(), None)
    text = [c for c in cells.columns if c != "row"]  # the rows' text: no bare formulas
    try:
        safe = safe_csv_frame(cells, name, text)
    except InputError:  # control characters in a value: write them escaped
        escaped = cells[text].map(
            lambda v: v.encode("unicode_escape").decode("ascii") if isinstance(v, str) else v
        )
        safe = safe_csv_frame(cells.assign(**escaped), name, text)
    content = csv_text(safe, text)
    return atomic_write(path, lambda tmp: Path(tmp).write_text(content, encoding="utf-8"))


_NAME_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")


def _iso(col: pd.Series) -> pd.Series:
    tz = getattr(col.dtype, "tz", None)
    values = col.dt.tz_convert("UTC") if tz is not None else col
    frac = values.dt.microsecond.fillna(0).to_numpy() != 0
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if frac.any() else "%Y-%m-%dT%H:%M:%S"
    text = values.dt.strftime(fmt)
    if tz is not None:
        text = text + "Z"
    return text.where(col.notna())


def _csv_frame(df: pd.DataFrame, types: Mapping[str, str]) -> pd.DataFrame:
    """The table with every column as the text CSV holds (None = missing)."""
    import shapely

    out = {}
    for name, col in df.items():
        kind = types[str(name)]
        if kind == "geometry":
            geoms = col.to_numpy(dtype=object)
            geoms = np.where(pd.isna(col).to_numpy(), None, geoms)
            out[name] = pd.Series(
                shapely.to_wkt(geoms, rounding_precision=-1, trim=True), index=df.index
            )
        elif kind == "datetime":
            out[name] = _iso(col)
        elif kind == "boolean":
            out[name] = col.map({True: "true", False: "false"}, na_action="ignore")
        elif kind == "list":
            out[name] = col.map(
                lambda v: json.dumps(_plain(v), ensure_ascii=False), na_action="ignore"
            )
        elif kind == "text":
            out[name] = col.map(
                lambda v: v if isinstance(v, str) else json.dumps(v, default=str),
                na_action="ignore",
            )
        else:
            out[name] = col
    return pd.DataFrame(out, index=df.index)


def _plain(value: Any) -> list:
    """A list cell (list, tuple or numpy array) as a list of plain Python values."""
    return [v.item() if isinstance(v, np.generic) else v for v in value]


def _list_field(table: str, column: str, col: pd.Series, df: pd.DataFrame) -> pa.Field:
    """The Parquet field of a list column: its declaration, else list<inferred items>."""
    from dentalkit.io._dictionary import declared_field

    declared = declared_field(table, column, df)
    if declared is not None and pa.types.is_list(declared.type):
        return declared.with_nullable(True)  # like every other column of an export
    inferred = pa.array(col.map(_plain, na_action="ignore"), from_pandas=True).type
    if not pa.types.is_list(inferred) or pa.types.is_null(inferred.value_type):
        inferred = pa.list_(pa.string())  # all lists empty: no item type to infer
    return pa.field(column, inferred)


def _parquet_table(
    name: str,
    df: pd.DataFrame,
    frame: pd.DataFrame,
    types: Mapping[str, str],
    rows: pd.DataFrame,
) -> pa.Table:
    """The Parquet copy of one exported table, written with its declaration.

    A table dentalkit declares (:func:`dentalkit.io._dictionary.is_declared_table`) gets
    its declared Arrow types and nullability (:func:`~dentalkit.io.arrow_table`); another
    table keeps the types pyarrow infers. Geometry is WKT text (``string``) and other
    objects JSON text, as in the CSV. Every field carries the dictionary's
    ``description`` and ``unit`` (your ``descriptions=``/``units=`` included) and, where
    declared, ``values``; a pseudonymized table says so in the schema metadata.
    """
    from dentalkit.io._dictionary import arrow_table, keys_as_declared

    special = [c for c in df.columns if types[str(c)] == "geometry"]
    typed = df.drop(columns=special)
    typed.attrs = {}
    for column in [str(c) for c in typed.columns if types[str(c)] == "text"]:
        typed[column] = frame[column]  # as in the CSV: text as is, other objects as JSON
    lists = [str(c) for c in typed.columns if types[str(c)] == "list"]
    for column in lists:  # stays a list: Arrow list<…>, read as a list by R/DuckDB
        typed[column] = typed[column].map(_plain, na_action="ignore")
    if is_declared_table(name):
        arrow = arrow_table(typed, name)
    else:
        arrow = keys_as_declared(pa.Table.from_pandas(typed, preserve_index=False))
        for column in lists:
            field = _list_field(name, column, df[column], df)
            i = arrow.schema.get_field_index(column)
            arrow = arrow.set_column(i, field, arrow.column(i).cast(field.type))
    for column in special:  # back in place, as the CSV's WKT
        i = df.columns.get_loc(column)
        text = pa.array(frame[column].astype(object), type=pa.string(), from_pandas=True)
        arrow = arrow.add_column(i, pa.field(str(column), pa.string()), text)
    described = {
        c: (d, u) for c, d, u in zip(rows["column"], rows["description"], rows["unit"], strict=True)
    }
    fields = []
    for field in arrow.schema:
        meta = {k.decode(): v.decode() for k, v in (field.metadata or {}).items()}
        meta["description"], meta["unit"] = described[field.name]
        fields.append(field.with_metadata(meta))
    schema = pa.schema(fields, metadata=arrow.schema.metadata)
    pseudo = df.attrs.get(PSEUDONYM_ATTR)
    if pseudo:
        schema = schema.with_metadata(
            {**(schema.metadata or {}), b"dentalkit_pseudonymized": json.dumps(pseudo)}
        )
    return pa.Table.from_arrays(arrow.columns, schema=schema)


def _check_tables(tables: Mapping[str, pd.DataFrame]) -> None:
    if not isinstance(tables, Mapping) or not tables:
        raise InputError(
            "export needs a non-empty mapping of table name → DataFrame, e.g. "
            "{'ceph_measures': measures, 'landmarks': tables['landmarks']}"
        )
    for name, df in tables.items():
        if not isinstance(name, str) or not name or set(name) - _NAME_OK:
            raise InputError(
                f"table name {name!r} becomes a file name: use letters, digits, '_' and '-'"
            )
        if name == "data_dictionary":
            raise InputError(
                "'data_dictionary' is the dictionary's own file name; rename the table"
            )
        if not isinstance(df, pd.DataFrame):
            raise InputError(f"table {name!r} is a {type(df).__name__}, not a pandas DataFrame")
        columns = [str(c) for c in df.columns]
        if len(set(columns)) != len(columns):
            dup = sorted({c for c in columns if columns.count(c) > 1})
            raise InputError(f"table {name!r} has repeated column names {dup}")


def export(
    tables: Mapping[str, pd.DataFrame],
    out_dir: str | os.PathLike,
    *,
    formats: Sequence[str] = ("csv",),
    descriptions: Mapping[str, str] | None = None,
    units: Mapping[str, str] | None = None,
) -> dict[str, Path]:
    """Write analysis tables for R, SPSS or Stata users, with a data dictionary.

    Writes ``<name>.csv`` (and/or ``<name>.parquet``) per table plus
    ``data_dictionary.csv`` and ``data_dictionary.json``: per column the table, name,
    type, pandas dtype, unit, description, allowed values (the declared vocabulary;
    ``true``/``false`` for booleans), levels (of a categorical, in order) and missing
    count. Descriptions and units come from dentalkit's declarations — the
    data contract's schemas for ``landmarks``, ``teeth`` …, the column catalogue for the
    analysis tables named in ``docs/columns.md`` (``ceph_measures``, ``arch_fits`` …),
    the TLE codebook and the measure reference — so a reviewer can trace every column.

    Parameters
    ----------
    tables : mapping of str to pandas.DataFrame
        Tables by name (the file name). Pseudonymize first
        (:func:`dentalkit.io.pseudonymize`) when they leave the study team.
    out_dir : path-like
        Folder (created). Files of the same names are replaced. Every table is checked
        and every file's content made before the first file is written, and the files
        appear together (each written to a temporary file first, then renamed): an
        export that fails leaves nothing new in the folder.
    formats : sequence of {"csv", "parquet"}
        CSV as described in the module notes (geometry as WKT, ISO 8601 UTC times,
        ``true``/``false``, empty = missing); Parquet keeps the exact dtypes (geometry
        also as WKT text, so any Parquet reader can load it) and, for the tables
        dentalkit declares, is written with the declared schema: Arrow types,
        non-null where declared, field metadata ``description``, ``unit`` (yours where
        given) and ``values``.
    descriptions, units : mapping of str to str, optional
        Entries for your own columns (``{"sex": "sex at birth"}``) or overrides, keyed
        ``"table.column"`` or ``"column"``.

    Returns
    -------
    dict of str to pathlib.Path
        Every written file by file name.

    Warns
    -----
    DentalkitWarning
        Naming every exported column that has no description (pass ``descriptions=``).

    Raises
    ------
    InputError
        Before any file is written: a table dentalkit declares holds a value its
        declaration does not allow — a label outside its vocabulary, a null in a
        non-null column, a value its declared type cannot hold (a fraction in a count);
        or a text cell holds a control character. The error names the table, the
        column and the rows (CSV or Parquet alike).

    Examples
    --------
    >>> import tempfile, pandas as pd
    >>> from dentalkit import io
    >>> m = pd.DataFrame(
    ...     {
    ...         "patient_id": ["P1", "P2"],
    ...         "measure": ["SNA", "SNA"],
    ...         "value": [81.2, 83.9],
    ...         "unit": "deg",
    ...     }
    ... )
    >>> with tempfile.TemporaryDirectory() as d:
    ...     files = io.export({"ceph_measures": m}, d)
    ...     print(sorted(files))
    ...     dd = pd.read_csv(files["data_dictionary.csv"])
    ['ceph_measures.csv', 'data_dictionary.csv', 'data_dictionary.json']
    >>> dd.loc[dd["column"] == "value", ["unit", "description"]].iloc[0].tolist()
    ['deg', 'value of the measure']
    """
    _check_tables(tables)
    formats = (formats,) if isinstance(formats, str) else tuple(formats)
    bad = [f for f in formats if f not in FORMATS]
    if bad or not formats:
        raise InputError(f"formats={formats!r}: choose from {FORMATS}")
    dictionary = data_dictionary(tables, descriptions=descriptions, units=units)
    undocumented = dictionary[dictionary["description"] == ""]
    if len(undocumented):
        import warnings

        from dentalkit.errors import DentalkitWarning

        names = ", ".join(
            f"{t}.{c}" for t, c in zip(undocumented["table"], undocumented["column"], strict=True)
        )
        warnings.warn(
            f"no description for {len(undocumented)} exported column(s): {names}. The "
            "dictionary leaves them blank; pass descriptions={'column': '…'} to describe them",
            DentalkitWarning,
            stacklevel=2,
        )
    # every file's content is made (and every table checked) before the first is written
    writes: dict[str, Callable[[str], object]] = {}
    for name, df in tables.items():
        rows = dictionary[dictionary["table"] == name]
        types = dict(zip(rows["column"], rows["type"], strict=True))
        frame = _csv_frame(df, types)
        if "csv" in formats:
            text_cols = [c for c in df.columns if types[str(c)] in _TEXT_KINDS]
            safe = safe_csv_frame(frame, name, text_cols)  # refuses control characters
            writes[f"{name}.csv"] = partial(_csv_file, safe, text_cols)
        if "parquet" in formats:
            arrow = _parquet_table(name, df, frame, types, rows)  # refuses misfits
            writes[f"{name}.parquet"] = partial(pq.write_table, arrow)
        elif is_declared_table(name):
            _check_declared(name, df, frame, types, rows)

    csv_dict = dictionary.assign(
        allowed_values=dictionary["allowed_values"].map("|".join),
        levels=dictionary["levels"].map("|".join),
    )
    text_cols = [c for c in csv_dict.columns if not pd.api.types.is_numeric_dtype(csv_dict[c])]
    csv_dict = safe_csv_frame(csv_dict, "data_dictionary", text_cols)
    writes["data_dictionary.csv"] = partial(_csv_file, csv_dict, text_cols)
    doc = json.dumps(_json_dictionary(tables, dictionary, formats), indent=2, ensure_ascii=False)
    writes["data_dictionary.json"] = partial(_text_file, doc + "\n")

    out = Path(out_dir)
    created = [p for p in (out, *out.parents) if not p.exists()]
    out.mkdir(parents=True, exist_ok=True)
    try:
        paths = atomic_write_all(out, writes)
    except BaseException:
        for folder in created:  # folders this call made, deepest first, if still empty
            try:
                folder.rmdir()
            except OSError:
                break
        raise
    return dict(sorted((path.name, path) for path in paths))


def _text_file(text: str, path: str) -> None:
    Path(path).write_text(text, encoding="utf-8", newline="")


def _csv_file(frame: pd.DataFrame, text_columns: list, path: str) -> None:
    _text_file(csv_text(frame, text_columns), path)


def _check_declared(
    name: str,
    df: pd.DataFrame,
    frame: pd.DataFrame,
    types: Mapping[str, str],
    rows: pd.DataFrame,
) -> None:
    """Refuse a declared table whose declared columns do not fit their declaration.

    The same check its Parquet copy makes (a null in a non-null column, a value the
    declared type cannot hold, e.g. a fraction in a count), on the declared columns only:
    the CSV of a column dentalkit does not declare is written as it is.
    """
    from dentalkit.io._dictionary import declared_field

    cols = [c for c in df.columns if declared_field(name, str(c)) is not None]
    if cols:
        sub = df[cols]
        sub.attrs = {}
        _parquet_table(
            name, sub, frame[cols], types, rows[rows["column"].isin([str(c) for c in cols])]
        )


def _json_dictionary(
    tables: Mapping[str, pd.DataFrame], dictionary: pd.DataFrame, formats: Iterable[str]
) -> dict[str, Any]:
    from dentalkit import __version__

    doc: dict[str, Any] = {
        "format": DICTIONARY_FORMAT,
        "dentalkit_version": __version__,
        "conventions": _CONVENTIONS,
        "tables": [],
    }
    for name, df in tables.items():
        rows = dictionary[dictionary["table"] == name]
        columns = []
        for rec in rows.drop(columns="table").to_dict("records"):
            labels = value_labels(name, rec["column"], df[rec["column"]])
            if labels:
                rec["value_labels"] = labels
            columns.append(rec)
        doc["tables"].append(
            {
                "name": name,
                "files": [f"{name}.{f}" for f in formats],
                "rows": len(df),
                "pseudonymized": df.attrs.get(PSEUDONYM_ATTR),
                "columns": columns,
            }
        )
    return doc


def _restore(col: pd.Series, rec: Mapping[str, Any]) -> pd.Series:
    kind, dtype = rec["type"], rec["pandas_dtype"]
    if kind in ("categorical", "ordered categorical"):
        # dictionaries written before "levels" existed listed the levels as allowed_values
        cats = pd.Index(list(rec.get("levels", rec["allowed_values"])), dtype="str")
        ordered = kind == "ordered categorical"
        return col.astype("str").astype(pd.CategoricalDtype(cats, ordered=ordered))
    if kind == "boolean":
        return col.map({"true": True, "false": False}, na_action="ignore").astype(dtype)
    if kind == "datetime":
        parsed = pd.to_datetime(col, utc="UTC" in dtype, format="ISO8601")
        return parsed.astype(dtype)
    if kind == "geometry":
        import shapely

        values = col.to_numpy(dtype=object)
        values = np.where(pd.isna(col).to_numpy(), None, values)
        return pd.Series(shapely.from_wkt(values), index=col.index, dtype=object)
    if kind == "string":
        # CSV cannot tell an empty string from a missing value; a column that had no
        # missing values held empty strings
        # (an all-empty column reads back as float NaN)
        return (col.astype(object).fillna("") if rec["n_missing"] == 0 else col).astype(dtype)
    if kind == "list":
        return col.map(json.loads, na_action="ignore").astype(object).where(col.notna(), None)
    if kind == "integer":
        return pd.to_numeric(col).astype(dtype)
    if kind == "number":
        return col.astype(object).map(float, na_action="ignore").astype(dtype)
    return col.astype(object).where(col.notna(), None)


def read_export(
    out_dir: str | os.PathLike, names: Iterable[str] | None = None
) -> dict[str, pd.DataFrame]:
    """Read CSV tables written by :func:`export` back with their original dtypes.

    The dictionary's ``pandas_dtype`` and ``levels`` restore categoricals (all
    levels, in order), booleans, nullable integers, UTC date-times and geometries (from
    WKT) and list columns (from their JSON arrays, as Python lists). Round trip: floats,
    integers, booleans, strings, categories, lists and WKT geometries come back equal;
    date-times to the microsecond; other ``text`` columns (dicts …) stay text.

    Parameters
    ----------
    out_dir : path-like
        The export folder (with ``data_dictionary.json``).
    names : iterable of str, optional
        Tables to read; default all.
    """
    folder = Path(out_dir)
    path = folder / "data_dictionary.json"
    if not path.exists():
        raise InputError(f"{folder} has no data_dictionary.json: is it a dentalkit export?")
    doc = json.loads(path.read_text(encoding="utf-8"))
    if doc.get("format") != DICTIONARY_FORMAT:
        raise InputError(f"{path} has format {doc.get('format')!r}, expected {DICTIONARY_FORMAT!r}")
    entries = {t["name"]: t for t in doc["tables"]}
    wanted = list(entries) if names is None else list(names)
    result = {}
    for name in wanted:
        if name not in entries:
            raise InputError(f"no table {name!r} in {path}; tables: {', '.join(entries)}")
        csv = folder / f"{name}.csv"
        if not csv.exists():
            raise InputError(f"{csv} does not exist (exported with formats without 'csv'?)")
        columns = entries[name]["columns"]
        raw = pd.read_csv(
            csv,
            dtype=str,
            keep_default_na=False,
            na_values=[""],
            encoding="utf-8",
        )
        raw.columns = [restore_cell(str(c)) for c in raw.columns]
        for rec in columns:
            if rec["type"] in _TEXT_KINDS:
                raw[rec["column"]] = raw[rec["column"]].map(restore_cell, na_action="ignore")
        df = pd.DataFrame(
            {rec["column"]: _restore(raw[rec["column"]], rec) for rec in columns}, index=raw.index
        )
        if entries[name].get("pseudonymized"):
            df.attrs[PSEUDONYM_ATTR] = entries[name]["pseudonymized"]
        result[name] = df
    return result
