"""One Arrow type per key column in every file dentalkit writes (issue 32, item 7).

``patient_id``, ``timestamp`` and ``endpoint`` are ``string`` in the tables, the problems
tables, the analyses, the contract report and the store's files, so that any two files join
on them. The demo run (``demo_study``, 3 patients) writes them all; every pair of its files is
joined on ``patient_id`` (and on every key they share) with polars and with DuckDB, and the
joined row counts are checked against a join of the key sets read with pyarrow.
"""

from __future__ import annotations

import itertools
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dentalkit import io
from dentalkit.convert import schemas

polars = pytest.importorskip("polars")
duckdb = pytest.importorskip("duckdb")

KEYS = ("patient_id", "timestamp", "endpoint")


def _files(root: Path) -> list[Path]:
    """Every Parquet file a run wrote (one responses part stands for the store's parts)."""
    files = sorted(p for p in root.rglob("*.parquet") if "_quarantine" not in p.parts)
    parts = [p for p in files if p.parent.name == "responses"]
    return [p for p in files if p.parent.name != "responses"] + parts[:1]


def _keyed(files: list[Path], key: str) -> list[Path]:
    return [p for p in files if key in pq.read_schema(p).names]


def test_every_file_of_a_demo_run_writes_its_keys_as_string(demo_study):
    root, _, result = demo_study
    assert result.exit_code == 0, result.output
    files = _files(root)
    names = {p.stem for p in files}
    assert {"landmarks", "problems", "analysis_problems", "ceph_measures", "contract"} <= names
    seen = {}
    for path in files:
        schema = pq.read_schema(path)
        for key in KEYS:
            if key in schema.names:
                seen.setdefault(key, set()).add(str(schema.field(key).type))
    assert seen == {key: {"string"} for key in KEYS}, seen
    assert pa.string() == schemas.KEY_TYPE


def _ids(path: Path, keys: list[str]) -> set[tuple]:
    """The distinct key tuples of a file, read with pyarrow (no null keys)."""
    table = pq.read_table(path, columns=keys).to_pandas().dropna().astype(object)
    return set(table.itertuples(index=False, name=None))


def test_every_pair_of_written_files_joins_on_patient_id_with_polars_and_duckdb(demo_study):
    root, _, _ = demo_study
    files = _keyed(_files(root), "patient_id")
    assert len(files) >= 20  # tables, problems, analyses, contract, the store's responses
    con = duckdb.connect()
    frames = {p: polars.read_parquet(p) for p in files}
    joined_rows = 0
    for a, b in itertools.combinations(files, 2):
        shared = [k for k in KEYS if k in frames[a].columns and k in frames[b].columns]
        for on in {("patient_id",), tuple(shared)}:
            left = frames[a].select(on).unique().drop_nulls()
            right = frames[b].select(on).unique().drop_nulls()
            got = left.join(right, on=list(on), how="inner").height  # raises on a type clash
            using = ", ".join(on)
            query = (
                f"SELECT count(*) FROM (SELECT DISTINCT {using} FROM read_parquet('{a}')) "
                f"JOIN (SELECT DISTINCT {using} FROM read_parquet('{b}')) USING ({using})"
            )
            [(duck,)] = con.execute(query).fetchall()
            want = len(_ids(a, list(on)) & _ids(b, list(on)))
            assert got == duck == want, (a.name, b.name, on)
            joined_rows += got
    assert joined_rows > 0


def test_landmarks_join_problems_in_polars_on_a_store_with_a_bad_response(tmp_path):
    # the case: landmarks (categorical in pandas) and problems (text) written, then
    # joined in polars on patient_id; a problem row names the patient of a landmark row
    from dentalkit import convert
    from tests.convert._helpers import frame, load, row

    good = row("ceph_lateral_points", load("ceph_lateral_points"))  # the fixture's patient
    bad_body = load("ceph_lateral_points")
    bad_body["NumberOfPredictedPoints"] += 1  # contradicts itself: a problem, rows kept
    bad_body["PatientID"] = "P2"
    bad = row("ceph_lateral_points", bad_body, patient_id="P2")
    out = convert.tables(frame(good, bad), errors="collect", include=["landmarks"])
    assert set(out["problems"]["patient_id"]) == {"P2"}
    io.write_tables(out, tmp_path)
    landmarks = polars.read_parquet(tmp_path / "landmarks.parquet")
    problems = polars.read_parquet(tmp_path / "problems.parquet")
    assert landmarks.schema["patient_id"] == problems.schema["patient_id"] == polars.String
    joined = landmarks.join(problems.select("patient_id", "reason"), on="patient_id")
    assert set(joined["patient_id"]) == {"P2"}
    assert joined.height == (landmarks["patient_id"] == "P2").sum()


@pytest.mark.parametrize(
    "frame",
    [
        pd.DataFrame({"patient_id": pd.Categorical(["P1", "P2"]), "value": [1.0, 2.0]}),
        pd.DataFrame({"patient_id": ["P1", "P2"], "timestamp": pd.Categorical(["t", None])}),
        pd.DataFrame({"endpoint": pd.Series(["classifier"], dtype="str"), "n": [1]}),
    ],
)
def test_files_written_without_a_declaration_write_keys_as_string(tmp_path, frame):
    path = io.write_parquet(frame, tmp_path / "x.parquet")  # no name: types inferred
    schema = pq.read_schema(path)
    for key in KEYS:
        if key in frame.columns:
            assert schema.field(key).type == pa.string(), key
    back = pd.read_parquet(path)
    for key in KEYS:
        if key in frame.columns:
            assert back[key].astype(object).tolist() == frame[key].astype(object).tolist()


def test_a_declared_analysis_table_writes_its_keys_as_string_whatever_the_catalogue(tmp_path):
    # model_versions declares endpoint in columns.csv; it is written as the key type
    from dentalkit.io._dictionary import declared_field, load_catalogue

    assert declared_field("model_versions", "endpoint").type == pa.string()
    cat = load_catalogue()
    keys = cat[cat["column"].isin(KEYS) & (cat["type"] != "")]
    assert set(keys["type"]) <= {"string"}, keys[["table", "column", "type"]]
