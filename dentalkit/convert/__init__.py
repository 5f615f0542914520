"""Responses → tidy, typed tables (pure functions, no I/O).

:func:`tables` turns a responses table (``docs/data-contract.md``) into every table at
once; one function per table does the same for a single table. Schemas are declared
once in :mod:`dentalkit.convert.schemas`. :func:`dentalkit.io.write_tables` /
:func:`dentalkit.io.read_tables` store them as Parquet, teeth as GeoParquet 1.1 (the
``convert.write_tables`` / ``convert.read_tables`` aliases are deprecated: convert is below
io in the data flow and does no I/O).

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

import warnings

from dentalkit.convert import schemas
from dentalkit.convert._tables import (
    arch_points,
    classifications,
    finding_counts,
    findings,
    landmarks,
    tables,
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
    "read_tables",
    "schemas",
    "tables",
    "teeth",
    "tle",
    "tmj",
    "tooth_keypoints",
    "write_tables",
]


def _moved(name: str) -> None:
    warnings.warn(
        f"dentalkit.convert.{name} is deprecated (convert does no I/O); use "
        f"dentalkit.io.{name}, the same function (the alias goes in the next release)",
        DeprecationWarning,
        stacklevel=3,
    )


def write_tables(tables: dict, out_dir) -> dict:
    """Deprecated alias of :func:`dentalkit.io.write_tables` (one release)."""
    _moved("write_tables")
    from dentalkit import io  # the one upward edge left, until the alias goes

    return io.write_tables(tables, out_dir)


def read_tables(out_dir, names=None) -> dict:
    """Deprecated alias of :func:`dentalkit.io.read_tables` (one release)."""
    _moved("read_tables")
    from dentalkit import io  # the one upward edge left, until the alias goes

    return io.read_tables(out_dir, names)
