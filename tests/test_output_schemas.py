"""Every file the demo writes is declared, and written with its declaration (issue 23).

Reads each Parquet output of one demo run (the session fixture ``demo_study``) with
pyarrow and with DuckDB and compares its schema with the declaration in
``dentalkit/data/columns.csv`` / ``dentalkit.convert.schemas`` — an output or a column
nobody declared fails here by name.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dentalkit import io
from dentalkit.errors import InputError
from dentalkit.fetch.store import FAILURES_SCHEMA, RESPONSES_SCHEMA
from dentalkit.io._dictionary import ANALYSIS_TABLES, is_declared_table
from tests.schema_check import check_file

duckdb = pytest.importorskip("duckdb")

# Columns that join files: each must have one Arrow type in every table file.
KEYS = (
    "patient_id",
    "timestamp",
    "session_time",
    "endpoint",
    "model_version",
    "fdi",
    "unit",
    "unit_of_analysis",
    "arch",
    "side",
    "tooth_type",
    "source",
    "view",
    "measure",
    "class_name",
    "skeletal_class",
)

# DuckDB's name of each Arrow type dentalkit declares (independent of dentalkit's code).
_DUCK = {
    pa.string(): "VARCHAR",
    pa.float64(): "DOUBLE",
    pa.int64(): "BIGINT",
    pa.int32(): "INTEGER",
    pa.int16(): "SMALLINT",
    pa.bool_(): "BOOLEAN",
    pa.timestamp("ns", tz="UTC"): ("TIMESTAMP WITH TIME ZONE", "TIMESTAMPTZ_NS"),
    pa.binary(): "BLOB",
}


def _duck_types(t: pa.DataType) -> tuple[str, ...]:
    if pa.types.is_list(t):  # DuckDB: the item type with [] (BIGINT[], VARCHAR[])
        return tuple(f"{item}[]" for item in _duck_types(t.value_type))
    want = "VARCHAR" if pa.types.is_dictionary(t) else _DUCK[t]
    return want if isinstance(want, tuple) else (want,)


def _table_name(path: Path) -> str:
    return path.stem  # tables/<name>, analyses/<name>, contract.parquet -> "contract"


def _undeclared(paths: list[Path], root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in paths if not is_declared_table(p.stem))


def _declared_outputs(root: Path) -> list[Path]:
    return sorted(
        p
        for p in root.rglob("*.parquet")
        if "responses" not in p.relative_to(root).parts  # the store: checked below
    )


def test_every_demo_output_is_declared_and_written_with_its_declaration(demo_study):
    root, _, result = demo_study
    assert result.exit_code == 0, result.output
    paths = _declared_outputs(root)
    names = {p: _table_name(p) for p in paths}
    assert {"landmarks", "teeth", "problems", "ceph_measures", "contract"} <= set(names.values())
    # analyses/analysis_problems.parquet is written by every run, with 0 rows when the
    # analyses met no bad row (README's output list)
    assert "analysis_problems" in names.values()
    undeclared = _undeclared(paths, root)
    assert not undeclared, (
        f"undeclared output(s) {undeclared}: add each to dentalkit.io._dictionary.ANALYSIS_TABLES "
        "and its columns to dentalkit/data/columns.csv"
    )
    errors = [e for p in paths for e in check_file(p, names[p])]
    assert not errors, "\n".join(errors)

    # DuckDB reads every file with the declared column types and all the rows
    con = duckdb.connect()
    key_types: dict[str, set[str]] = {}
    for path in paths:
        schema = pq.read_schema(path)
        described = con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()
        duck = {r[0]: r[1] for r in described}
        assert list(duck) == schema.names, path.name
        for field in schema:
            if field.name == "bbox" or (field.name == "geometry" and names[path] == "teeth"):
                continue  # GeoParquet: covered by tests/convert/test_io.py
            assert duck[field.name] in _duck_types(field.type), (path.name, field.name)
            if field.name in KEYS:  # problems tables too (issue 32: polars joins them)
                key_types.setdefault(field.name, set()).add(str(field.type))
        [(n,)] = con.execute(f"SELECT count(*) FROM read_parquet('{path}')").fetchall()
        assert n == pq.read_metadata(path).num_rows, path.name
    mixed = {k: v for k, v in key_types.items() if len(v) > 1}
    assert not mixed, f"key columns with more than one type across files: {mixed}"
    assert {"patient_id", "fdi", "unit", "timestamp"} <= set(key_types)


def test_the_response_store_keeps_its_own_declared_schema(demo_study):
    root, _, _ = demo_study
    parts = sorted(root.rglob("responses/*.parquet"))
    assert parts
    for part in parts:
        schema = pq.read_schema(part)
        want = FAILURES_SCHEMA if part.stem.startswith("failures") else RESPONSES_SCHEMA
        assert [(f.name, f.type) for f in schema] == [(f.name, f.type) for f in want], part


def test_an_output_nobody_declared_is_named(tmp_path):
    # what a new analysis (e.g. growth models) written before its declaration looks like
    io.write_parquet(pd.DataFrame({"x": [1.0]}), tmp_path / "analyses" / "growth_curves.parquet")
    io.write_parquet(pd.DataFrame({"n": [1]}), tmp_path / "analyses" / "tle_summary.parquet")
    assert _undeclared(_declared_outputs(tmp_path), tmp_path) == ["analyses/growth_curves.parquet"]
    assert not is_declared_table("growth_curves") and "growth_curves" not in ANALYSIS_TABLES


def test_loose_columns_are_written_with_their_declared_types(tmp_path):
    # the shapes issue 23 found: null-typed columns, counts as floats, a key as str,
    # list-valued counts; written under a declared name they get the declared types
    cmp = pd.DataFrame(
        {
            "measure": ["SNA", "ANB"],
            "value": ["value", "value"],
            "by": ["skeletal_class"] * 2,
            "paired": [None, None],
            "unit_of_analysis": ["patient_id"] * 2,
            "groups": [["Class I", "Class II"]] * 2,
            "n_units": [12, 12],
            "n_units_per_group": [[8, 4], [8, 4]],
            "note": [None, None],
            "p_value": [0.5, np.nan],
            # a declared vocabulary with no value at all, as float NaN (ANOVA rows)
            "difference_name": [np.nan, np.nan],
        }
    )
    path = io.write_parquet(cmp, tmp_path / "arch_compare.parquet", name="arch_compare")
    schema = pq.read_schema(path)
    assert schema.field("paired").type == pa.string()
    assert schema.field("note").type == pa.string()
    assert schema.field("n_units_per_group").type == pa.list_(pa.int64())
    assert schema.field("groups").type == pa.list_(pa.string())
    assert schema.field("groups").nullable is False
    assert schema.field("unit_of_analysis").type == pa.dictionary(pa.int32(), pa.string())
    assert schema.field("n_units").nullable is False
    assert schema.field("difference_name").type == pa.dictionary(pa.int32(), pa.string())
    assert pq.read_table(path).column("difference_name").null_count == 2
    meta = schema.field("paired").metadata
    assert meta[b"description"].startswith(b"column pairing the observations")

    summary = pd.DataFrame(
        {"malocclusion_class": ["I", "II"], "n": [3.0, 4.0], "n_missing": [0.0, 1.0]}
    )
    path = io.write_parquet(summary, tmp_path / "tle_summary.parquet", name="tle_summary")
    back = pq.read_table(path)
    assert back.schema.field("n").type == pa.int64()
    assert back.column("n").to_pylist() == [3, 4]


@pytest.mark.parametrize(
    ("frame", "name", "says"),
    [
        (pd.DataFrame({"n": [1.5]}), "tle_summary", "'n'"),
        (pd.DataFrame({"patient_id": [None], "value": [1.0]}), "ceph_measures", "patient_id"),
        (pd.DataFrame({"view": ["sideways"]}), "ceph_measures", "sideways"),
    ],
)
def test_a_value_that_does_not_fit_its_declaration_is_named(tmp_path, frame, name, says):
    with pytest.raises(InputError, match=f"{name}.*{says}|{says}.*{name}"):
        io.write_parquet(frame, tmp_path / "x.parquet", name=name)
    assert not (tmp_path / "x.parquet").exists()
