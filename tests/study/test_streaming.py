"""The study reads its responses store in pieces of whole patients (issue 32, memory).

The tables, the contract report and the analyses of a small sandbox study built the old
way — the whole responses table in memory, ``convert.tables`` and ``io.write_tables`` —
are compared, row for row and column for column, with those the streamed path makes
(:func:`dentalkit.fetch.read_responses_in_parts`, :func:`dentalkit.convert.tables_in_parts`,
:func:`dentalkit.io.write_tables_in_parts`, :func:`dentalkit.contract.contract_report_in_parts`)
with pieces of one or two patients, so that every table and the problems rows cross the
cuts between pieces. The store also holds hand-made bad answers in several patients (a body
that is not JSON, a landmark without coordinates, a TMJ sentence no phrase recognises), so that problem rows, and their row numbers in the whole table, come from
more than one piece.
"""

from __future__ import annotations

import hashlib
import json

import pandas as pd
import pyarrow.parquet as pq
import pytest

from dentalkit import convert, io
from dentalkit.contract import contract_report, contract_report_in_parts
from dentalkit.fetch import read_responses, read_responses_in_parts
from dentalkit.fetch.store import ResponseStore
from tests.helpers import STORE_PATIENTS, STORE_SESSIONS

N = len(STORE_PATIENTS)  # 6 patients, 16 rows each (8 endpoints × 2 sessions)
P = STORE_PATIENTS
SESSIONS = STORE_SESSIONS


def _bad_row(pid: str, ts: str, endpoint: str, body: str, n: int) -> dict:
    key = hashlib.sha256(f"hand-made {pid} {ts} {endpoint} {n}".encode()).hexdigest()
    return {
        "patient_id": pid,
        "timestamp": ts,
        "endpoint": endpoint,
        "model_version": None,
        "request_key": key,
        "image_url": f"https://images.example.org/bad/{n}.png",
        "options": None,
        "status_code": 200,
        "body": body,
        "fetched_at": pd.Timestamp("2026-01-01", tz="UTC"),
        "from_cache": False,
        "error": None,
    }


def _meta(schema) -> dict:
    """A file's metadata, without pandas' count of the categories of the key columns (the
    first piece's in a file written in pieces; key columns are plain strings on disk)."""
    meta = {k: json.loads(v) for k, v in (schema.metadata or {}).items()}
    for col in meta.get(b"pandas", {}).get("columns", []):
        (col.get("metadata") or {}).pop("num_categories", None)
    return meta


@pytest.fixture(scope="module")
def store(sandbox_store, tmp_path_factory):
    """A copy of the run's small sandbox store (tests/conftest.py), with hand-made bad
    answers of four patients added: 16 or 17 rows per patient."""
    import shutil

    shared, base_url = sandbox_store
    out = tmp_path_factory.mktemp("stream-store") / "store"
    shutil.copytree(shared, out)
    lateral = json.dumps(
        {
            "ImageName": "x.png",
            "TimeStamp": SESSIONS[0],
            "Version": "v1",
            "NumberOfPredictedPoints": 1,
            "Results": {"Later_1": {"x_coordinate": None, "y_coordinate": 3}},
        }
    )
    tmj = json.dumps({"ImageName": "t.png", "Results": {"Finding": "Something odd here."}})
    bad = [
        _bad_row(P[1], SESSIONS[0], "ceph_lateral_points", "{not json", 0),
        _bad_row(P[2], SESSIONS[1], "ceph_lateral_points", lateral, 1),
        _bad_row(P[3], SESSIONS[0], "tmj_xsectional", tmj, 2),
        _bad_row(P[4], SESSIONS[1], "tmj_xsectional", tmj, 3),
    ]
    with ResponseStore(out, base_url) as st:
        st.append(bad)
    return out


def test_the_pieces_are_the_whole_table_cut_between_patients(store):
    whole = read_responses(store)
    pieces = list(read_responses_in_parts(store, rows=13))
    assert len(pieces) == N  # 16 or 17 rows per patient: one patient per piece
    for piece in pieces:
        assert len(set(piece["patient_id"])) == 1
    assert [len(p) for p in read_responses_in_parts(store, rows=34)] == [33, 34, 33]  # pairs
    ids = [set(p["patient_id"]) for p in pieces]
    assert all(not (a & b) for i, a in enumerate(ids) for b in ids[i + 1 :])  # never split
    pd.testing.assert_frame_equal(pd.concat(pieces, ignore_index=True), whole)
    assert all(p.attrs["timestamp_format"] == whole.attrs["timestamp_format"] for p in pieces)
    # only some columns: the same rows, the same order
    keys = pd.concat(read_responses_in_parts(store, rows=40, columns=["request_key"]))
    assert keys["request_key"].tolist() == whole["request_key"].tolist()


@pytest.mark.parametrize("rows", [13, 34])  # pieces of one patient, of two
def test_streamed_tables_equal_the_tables_of_the_whole_responses(store, tmp_path, rows):
    whole = read_responses(store)
    old = convert.tables(whole, errors="collect")
    io.write_tables(old, tmp_path / "old")
    parts = convert.tables_in_parts(read_responses_in_parts(store, rows=rows), errors="collect")
    written = io.write_tables_in_parts(parts, tmp_path / "new")
    assert sorted(written) == sorted(old)
    # the hand-made answers made problems in several pieces, named by whole-table rows
    problems = old["problems"]
    assert set(problems["patient_id"].astype(str)) == set(P[1:4])  # P[4]: one TMJ row
    assert set(problems["endpoint"].dropna().astype(str)) >= {
        "ceph_lateral_points",
        "tmj_xsectional",
    }
    for name in old:
        a, b = (
            pq.read_table(tmp_path / "old" / f"{name}.parquet"),
            pq.read_table(tmp_path / "new" / f"{name}.parquet"),
        )
        assert a.schema.equals(b.schema), name  # types, nullability, field metadata
        assert _meta(a.schema) == _meta(b.schema), name  # the geo entry (bbox) included
        pd.testing.assert_frame_equal(a.to_pandas(), b.to_pandas(), obj=name)
    back_old, back_new = io.read_tables(tmp_path / "old"), io.read_tables(tmp_path / "new")
    for name in old:
        pd.testing.assert_frame_equal(back_old[name], back_new[name], obj=name)
    # the TMJ sentence no phrase knows: one row for its two responses in two pieces
    unknown = problems[problems["path"] == "$.Results.Finding"]
    assert len(unknown) == 1 and "2 response" in unknown["reason"].iloc[0]


def test_streamed_contract_report_equals_the_report_of_the_whole_table(store):
    whole = contract_report(read_responses(store))
    pieces = contract_report_in_parts(read_responses_in_parts(store, rows=13))
    pd.testing.assert_frame_equal(pieces, whole)
    assert (whole["verdict"] == "drift").any()  # the hand-made bodies differ from the registry


def test_the_analyses_responses_give_the_analyses_of_the_whole_table(store):
    from dentalkit.findings import analysed_images
    from dentalkit.study.run import _analysis_responses

    whole = read_responses(store)
    light = _analysis_responses(store)
    pd.testing.assert_frame_equal(analysed_images(light), analysed_images(whole))
    assert light["body"].notna().sum() == 0  # no /tle query here: no body kept
    assert len(light) < len(whole)


def test_a_streamed_study_writes_what_the_whole_table_gave(sandbox, tmp_path):
    """study.run (streamed) against the old way on its own store: tables and analyses."""
    from dentalkit.fetch import read_calibration
    from dentalkit.fetch.client import Client
    from dentalkit.study import Design, analyze, run
    from dentalkit.study.demo import demo_manifest, demo_patients, sandbox_calibration
    from dentalkit.study.run import NOT_WRITTEN

    # 3 patients with the /tle parameters (treatment length is estimated and summarised);
    # the analyses that read the responses table besides the tables (findings, /tle) and
    # one per kind of table; no figures (they read what is compared here)
    patients = demo_patients(3)
    design = Design(
        out=tmp_path / "study", analyses=("ceph", "teeth", "findings", "tmj", "tle"), figures=()
    ).with_(mm_per_px=sandbox_calibration())
    client = Client(sandbox.base_url, api_key=sandbox.api_key, cache="memory")
    result = run(demo_manifest(sandbox, patients), patients=patients, design=design, client=client)
    out = result.paths["store"]
    whole = read_responses(out)
    assert (whole["endpoint"].astype(str) == "tle").sum() == 3
    own = read_calibration(out) if (out / "calibration.parquet").exists() else None
    old = convert.tables(whole, errors="collect", calibration=own)
    io.write_tables(old, tmp_path / "old")
    new_tables = io.read_tables(out / "tables")
    old_tables = io.read_tables(tmp_path / "old")
    assert sorted(new_tables) == sorted(old_tables)
    for name in old_tables:
        pd.testing.assert_frame_equal(new_tables[name], old_tables[name], obj=name)
    # the analyses of the whole responses table, on the tables as the old run held them
    analyses = analyze(
        old, design.mm_per_px, responses=whole, patients=patients, design=design,
        errors="collect",
    )  # fmt: skip
    written = {p.stem for p in (out / "analyses").glob("*.parquet")}
    assert written == set(analyses) - set(NOT_WRITTEN)
    assert {"tle_estimates", "findings_prevalence", "ceph_measures"} <= written
    for name in written:
        io.write_parquet(analyses[name], tmp_path / "old-analyses" / f"{name}.parquet", name=name)
        pd.testing.assert_frame_equal(
            pd.read_parquet(out / "analyses" / f"{name}.parquet"),
            pd.read_parquet(tmp_path / "old-analyses" / f"{name}.parquet"),
            obj=name,
        )
