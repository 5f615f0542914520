"""Responses → tidy, typed tables (pure functions, no I/O).

:func:`tables` turns a responses table (``docs/data-contract.md``) into every table at
once; one function per table does the same for a single table. Schemas are declared
once in :mod:`dentalkit.convert.schemas`. :func:`dentalkit.io.write_tables` /
:func:`dentalkit.io.read_tables` store them as Parquet, teeth as GeoParquet 1.1 (convert is
below io in the data flow and does no I/O).

Examples
--------
>>> import pandas as pd
>>> from dentalkit import convert
>>> body = '{"Version": "1.2.0", "NumberOfPredictedPoints": 1, "Results": {"Later_1": {"x_coordinate": 10.5, "y_coordinate": 20.0}}}'
>>> responses = pd.DataFrame(
...     {
...         "endpoint": ["ceph-lateral-points"],
...         "patient_id": ["P001"],
...         "timestamp": ["2024-03-01T09:30:00Z"],
...         "body": [body],
...     }
... )
>>> convert.landmarks(responses)[["landmark", "name", "x", "y"]]
  landmark name     x     y
0  Later_1    S  10.5  20.0
"""

from __future__ import annotations

from dentalkit.convert import schemas
from dentalkit.convert._tables import (
    arch_points,
    classifications,
    finding_counts,
    findings,
    landmarks,
    tables,
    tables_in_parts,
    teeth,
    tle,
    tmj,
    tooth_keypoints,
)
from dentalkit.convert._tmj import has_finding
from dentalkit.convert._tmj import load_phrases as load_tmj_phrases
from dentalkit.convert._toothkeys import fdi as fdi_number
from dentalkit.convert.schemas import TABLE_NAMES

__all__ = [
    "TABLE_NAMES",
    "arch_points",
    "classifications",
    "fdi_number",
    "finding_counts",
    "findings",
    "has_finding",
    "landmarks",
    "load_tmj_phrases",
    "schemas",
    "tables",
    "tables_in_parts",
    "teeth",
    "tle",
    "tmj",
    "tooth_keypoints",
]
