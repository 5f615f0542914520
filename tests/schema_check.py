"""Compare a Parquet file's Arrow schema with dentalkit's declaration of its table."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from dentalkit.io._dictionary import declared_field


def check_file(path: Path, name: str) -> list[str]:
    """Differences between the file at ``path`` and the declaration of table ``name``."""
    errors = []
    pf = pq.ParquetFile(path)
    schema = pf.schema_arrow
    geo = json.loads((schema.metadata or {}).get(b"geo", b"{}"))
    covering = {
        spec[0]
        for col in geo.get("columns", {}).values()
        for spec in col.get("covering", {}).get("bbox", {}).values()
    }
    df = pf.read().to_pandas()
    for field in schema:
        where = f"{path.name}: column {field.name!r}"
        if pa.types.is_null(field.type):
            errors.append(f"{where} has Arrow type null")
        if field.name in covering:  # GeoParquet bbox covering column: declared in 'geo'
            continue
        want = declared_field(name, field.name, df)
        if want is None:
            errors.append(f"{where} is not declared (add it to dentalkit/data/columns.csv)")
            continue
        if field.type != want.type:
            errors.append(f"{where} is {field.type}, declared {want.type}")
        if field.nullable != want.nullable:
            errors.append(f"{where} nullable={field.nullable}, declared {want.nullable}")
        meta = field.metadata or {}
        if not meta.get(b"description"):
            errors.append(f"{where} has no description in its field metadata")
        if meta != want.metadata:
            errors.append(f"{where} metadata {meta} differs from the declaration")
        if not field.nullable and df[field.name].isna().any():
            errors.append(f"{where} is non-null but holds nulls")
    return errors
