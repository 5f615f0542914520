"""Partitioned tables are written with their declarations (issue 23): every part the same.

Read back part by part with pyarrow (compared with the declaration, as the demo's files
are in tests/test_output_schemas.py) and as one table with DuckDB.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dentalkit.errors import InputError
from dentalkit.io import read_partitioned, write_partitioned
from dentalkit.io._dictionary import declared_field
from tests.schema_check import check_file


def _parts(path):
    return sorted(path.glob("part-*.parquet"))


def test_a_declared_table_is_written_with_its_declaration_in_every_part(study, tmp_path):
    contract, analysis = study
    for name, df in [("landmarks", contract["landmarks"]), ("arch_fits", analysis["arch_fits"])]:
        path = write_partitioned(df, tmp_path / name, buckets=4)  # name from the folder
        parts = _parts(path)
        assert len(parts) > 1, name
        schemas = {pq.read_schema(p).remove_metadata() for p in parts}
        assert len(schemas) == 1, f"{name}: parts differ in schema"
        for part in parts:
            assert check_file(part, name) == [], part
        back = read_partitioned(path)
        assert len(back) == len(df)
    status = pq.read_schema(_parts(tmp_path / "arch_fits")[0]).field("status")
    assert status.nullable is False
    assert status.type == pa.dictionary(pa.int32(), pa.string())
    assert status.metadata == declared_field("arch_fits", "status").metadata

    duckdb = pytest.importorskip("duckdb")
    glob = tmp_path / "landmarks" / "part-*.parquet"
    con = duckdb.connect()
    described = dict(
        (r[0], r[1])
        for r in con.execute(f"DESCRIBE SELECT * FROM read_parquet('{glob}')").fetchall()
    )
    assert described["x"] == "DOUBLE" and described["patient_id"] == "VARCHAR"
    [(n,)] = con.execute(f"SELECT count(*) FROM read_parquet('{glob}')").fetchall()
    assert n == len(contract["landmarks"])


def test_name_declares_a_folder_of_another_name(study, tmp_path):
    _, analysis = study
    path = write_partitioned(analysis["ceph_measures"], tmp_path / "m", name="ceph_measures")
    for part in _parts(path):
        assert check_file(part, "ceph_measures") == []


def test_an_undeclared_table_keeps_pyarrows_types(tmp_path):
    t = pd.DataFrame({"patient_id": ["P1", "P2"], "n": [1.5, float("nan")]})
    path = write_partitioned(t, tmp_path / "mine", buckets=2)
    field = pq.read_schema(_parts(path)[0]).field("n")
    assert field.type == pa.float64() and not field.metadata


def test_a_value_that_does_not_fit_leaves_nothing(tmp_path):
    bad = pd.DataFrame({"patient_id": ["P1", "P2"], "model": ["catenary", "spline"]})
    with pytest.raises(InputError, match=r"'arch_fits'.*spline"):
        write_partitioned(bad, tmp_path / "arch_fits", buckets=2)
    assert not list(tmp_path.iterdir())
