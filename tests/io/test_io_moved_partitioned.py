"""Partitioned Parquet moved to dentalkit.io.partitioned (issue 24); the old path is gone
(issue 32: no release shipped it)."""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import pytest

from dentalkit import io
from dentalkit.errors import InputError
from dentalkit.io import partitioned


def test_old_path_is_gone(monkeypatch):
    monkeypatch.delitem(sys.modules, "dentalkit.distributed", raising=False)
    with pytest.raises(ModuleNotFoundError, match=r"dentalkit\.distributed"):
        importlib.import_module("dentalkit.distributed")


def test_io_names_are_the_partitioned_functions():
    assert io.write_partitioned is partitioned.write_partitioned
    assert io.read_partitioned is partitioned.read_partitioned
    assert io.patient_bucket is partitioned.patient_bucket
    assert {"write_partitioned", "read_partitioned", "patient_bucket"} <= set(io.__all__)


def test_a_folder_without_partitioning_points_to_the_new_path(tmp_path):
    with pytest.raises(InputError, match=r"write it with dentalkit\.io\.write_partitioned") as err:
        io.read_partitioned(tmp_path)
    assert "distributed" not in str(err.value)


def test_no_package_text_names_the_old_module_path():
    """Messages and docstrings name dentalkit.io, never the old path."""
    root = Path(__file__).resolve().parents[2] / "dentalkit"
    found = [
        f"{path.relative_to(root)}:{n}"
        for path in sorted(root.rglob("*.py"))
        for n, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if "dentalkit.distributed" in line
    ]
    assert found == []


@pytest.mark.parametrize("text", ["{not json", "[1, 2]"])
def test_a_damaged_partitioning_file_is_named(tmp_path, text):
    (tmp_path / partitioned.PARTITIONING_FILE).write_text(text, encoding="utf-8")
    with pytest.raises(InputError, match=r"partitioned table's description") as err:
        io.read_partitioned(tmp_path)
    assert partitioned.PARTITIONING_FILE in str(err.value)
