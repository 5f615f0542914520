"""Partitioned Parquet moved to dentalkit.io.partitioned (issue 24); the old path works for
one release."""

from __future__ import annotations

import importlib
import sys

import pytest

from dentalkit import io
from dentalkit.io import partitioned


def test_old_path_warns_and_is_the_moved_module(monkeypatch):
    monkeypatch.delitem(sys.modules, "dentalkit.distributed", raising=False)
    with pytest.warns(
        DeprecationWarning, match=r"dentalkit\.distributed moved to dentalkit\.io\.partitioned"
    ):
        module = importlib.import_module("dentalkit.distributed")
    # the very module object: functions, constants and patches are shared
    assert module is partitioned
    for name in partitioned.__all__:
        assert getattr(module, name) is getattr(partitioned, name)


def test_io_names_are_the_partitioned_functions():
    assert io.write_partitioned is partitioned.write_partitioned
    assert io.read_partitioned is partitioned.read_partitioned
    assert io.patient_bucket is partitioned.patient_bucket
    assert {"write_partitioned", "read_partitioned", "patient_bucket"} <= set(io.__all__)
