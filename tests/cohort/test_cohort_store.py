"""The responses store: atomic parts, schema, de-duplication, one service per folder."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import pandas as pd
import pyarrow.parquet as pq
import pytest

from dentalkit.errors import ConfigurationError, DentalkitWarning, InputError
from dentalkit.fetch.store import (
    RESPONSES_SCHEMA,
    ResponseStore,
    parse_session_time,
    read_responses,
)

BASE = "http://127.0.0.1:9/api/v2"


def _row(key, pid="P1", ts="2024-03-05T10:00:00Z", when=None):
    return {
        "patient_id": pid,
        "timestamp": ts,
        "endpoint": "classifier",
        "model_version": None,
        "request_key": key,
        "image_url": "https://h/x.png",
        "options": "{}",
        "status_code": 200,
        "body": f'{{"PatientID":"{pid}"}}',
        "fetched_at": when or datetime(2024, 3, 5, 10, 0, 1, tzinfo=UTC),
        "from_cache": False,
        "error": None,
    }


def test_parts_are_written_atomically_and_read_back(tmp_path):
    store = ResponseStore(tmp_path, BASE)
    store.append([_row("a"), _row("b", pid="P0")])
    store.append([_row("c", pid="P2", ts="not a date")])
    leftovers = [
        p.name for p in (tmp_path / "responses").iterdir() if not p.name.startswith("part-")
    ]
    assert leftovers == ["_ledger.tsv"]  # no temporary file; the key ledger
    ledger = (tmp_path / "responses" / "_ledger.tsv").read_text().splitlines()
    assert [line.split("\t")[1] for line in ledger] == ["a", "b", "c"]
    assert store.completed_keys() == {"a", "b", "c"}
    df = read_responses(tmp_path)
    assert df["request_key"].tolist() == ["b", "a", "c"]  # sorted by patient
    assert df["session_time"].tolist()[:2] == [pd.Timestamp("2024-03-05 10:00:00", tz="UTC")] * 2
    assert pd.isna(df["session_time"].iloc[2])
    assert str(df["status_code"].dtype) == "int16" and df["endpoint"].dtype == "category"
    assert (
        pq.read_schema(next((tmp_path / "responses").glob("part-*"))).names
        == RESPONSES_SCHEMA.names
    )


def test_a_failed_write_leaves_no_partial_file(tmp_path, monkeypatch):
    store = ResponseStore(tmp_path, BASE)

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError, match="disk full"):
        store.append([_row("a")])
    assert list((tmp_path / "responses").iterdir()) == []


def test_duplicates_are_dropped_with_a_warning_keeping_the_first_received(tmp_path):
    store = ResponseStore(tmp_path, BASE)
    store.append([_row("a", when=datetime(2024, 1, 2, tzinfo=UTC))])
    store.append([_row("a", when=datetime(2024, 1, 1, tzinfo=UTC)), _row("b")])
    with pytest.warns(DentalkitWarning, match="1 duplicate"):
        df = read_responses(tmp_path)
    assert df["request_key"].tolist() == ["a", "b"]
    assert df["fetched_at"].iloc[0] == pd.Timestamp("2024-01-01", tz="UTC")


def test_one_service_per_out_folder(tmp_path):
    ResponseStore(tmp_path, BASE)
    with pytest.raises(ConfigurationError, match="one out folder per service"):
        ResponseStore(tmp_path, "https://svc.example.org/api/v2")


def test_reading_something_that_is_not_a_store(tmp_path):
    with pytest.raises(InputError, match="not a dentalkit responses store"):
        read_responses(tmp_path)


def test_empty_store_has_the_full_schema(tmp_path):
    ResponseStore(tmp_path, BASE)
    assert read_responses(tmp_path).columns.tolist() == RESPONSES_SCHEMA.names


def test_session_time_parses_only_iso_8601():
    got = parse_session_time(
        pd.Series(["2024-03-05", "2024-03-05T10:00:00+02:00", "2024-03-05 10:00", "05/03/2024", ""])
    )
    assert got.tolist()[:3] == [
        pd.Timestamp("2024-03-05 00:00", tz="UTC"),
        pd.Timestamp("2024-03-05 08:00", tz="UTC"),
        pd.Timestamp("2024-03-05 10:00", tz="UTC"),
    ]
    assert got.iloc[3:].isna().all()
