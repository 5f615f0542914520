"""Every catalogue table, as the analyses build it, is written with its declaration."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.parquet as pq

from dentalkit import pipeline
from tests.schema_check import check_file


def test_every_analysis_table_writes_with_its_declared_schema(study, tmp_path):
    _, analysis = study
    out = pipeline.write_analyses(analysis, tmp_path)
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
