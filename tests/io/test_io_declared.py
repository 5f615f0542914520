"""Every catalogue table, as the analyses build it, is written with its declaration."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dentalkit.study import write_analyses
from tests.schema_check import check_file


def test_every_analysis_table_writes_with_its_declared_schema(study, tmp_path):
    _, analysis = study
    out = write_analyses(analysis, tmp_path)
    # tle_sensitivity's ``value`` holds the values of whichever patient-table column was
    # varied (numbers or labels): its type is inferred, the only undeclared type (the
    # demo keeps these curves in memory)
    errors = [
        e
        for name in analysis
        for e in check_file(out / f"{name}.parquet", name)
        if not e.startswith("tle_sensitivity.parquet: column 'value' is not declared")
    ]
    assert not errors, "\n".join(errors)
    # issue 23's loose columns, as stats.compare / arch.compare build them
    cmp = pq.read_schema(out / "comparisons.parquet")
    assert str(cmp.field("paired").type) == "string"
    per_group = cmp.field("n_units_per_group").type
    assert pa.types.is_list(per_group) and per_group.value_type == pa.int64()
    assert str(pq.read_schema(out / "tle_summary.parquet").field("n").type) == "int64"


def test_list_columns_are_arrow_lists_that_duckdb_reads_as_lists(study, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    _, analysis = study
    out = write_analyses(analysis, tmp_path)
    want = {
        ("comparisons", "groups"): (pa.list_(pa.string()), "VARCHAR[]"),
        ("missing_per_patient", "missing_fdi"): (pa.list_(pa.int16()), "SMALLINT[]"),
        ("arch_fits", "not_identified"): (pa.list_(pa.string()), "VARCHAR[]"),
    }
    con = duckdb.connect()
    for (name, column), (arrow_type, duck_type) in want.items():
        path = out / f"{name}.parquet"
        assert pq.read_schema(path).field(column).type == arrow_type, (name, column)
        [(got,)] = con.execute(
            f"SELECT typeof({column}) FROM read_parquet('{path}') LIMIT 1"
        ).fetchall()
        assert got == duck_type, (name, column)
        rows = con.execute(f"SELECT {column} FROM read_parquet('{path}')").fetchall()
        assert [r[0] for r in rows] == analysis[name][column].tolist(), (name, column)

    # the values are what the joined text of before issue 23 held, split
    [(groups,)] = con.execute(
        f"SELECT DISTINCT groups FROM read_parquet('{out / 'comparisons.parquet'}')"
    ).fetchall()
    assert groups == ["A", "B"]  # the study's groups in test order (was the text "A | B")
    pp = analysis["missing_per_patient"]
    n_missing = pp["n_missing_excl_m3"] + pp["n_missing_m3"]  # counted from the status table
    assert pp["missing_fdi"].map(len).tolist() == n_missing.tolist()
    assert all(v == sorted(v) for v in pp["missing_fdi"])
    # DuckDB's list functions work on them: patients missing a third molar
    [(n_m3,)] = con.execute(
        "SELECT count(*) FROM read_parquet(?) WHERE list_has_any(missing_fdi, [18, 28, 38, 48])",
        [str(out / "missing_per_patient.parquet")],
    ).fetchall()
    assert n_m3 == int((pp["n_missing_m3"] > 0).sum())
