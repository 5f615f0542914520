"""Patient-partitioned Parquet: a stable hash, lossless round trips, dask and DuckDB readers,
and ``ceph.measure`` mapped over dask partitions giving exactly the single-machine result."""

from __future__ import annotations

import doctest
import hashlib
import json
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest

import dentalkit.io.partitioned as dist
from dentalkit.ceph import measure
from dentalkit.endpoints import get_endpoint
from dentalkit.errors import InputError
from dentalkit.io.partitioned import (
    map_partitions,
    partition_files,
    patient_bucket,
    read_dask,
    read_partitioned,
    write_partitioned,
)
from dentalkit.sandbox.simulate import respond
from dentalkit.sandbox.simulate import truth as sim_truth
from tests.distributed.realservers import ROOT


def by_definition(pid: str, buckets: int) -> int:
    """The documented scheme, written out with hashlib alone."""
    h = hashlib.blake2b(pid.encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(h, "big") % buckets


def test_bucket_is_the_documented_blake2b_hash():
    ids = ["P001", "P002", "Ünïcødé-患者", "", "x" * 1000, "P001"]
    got = patient_bucket(ids, 32)
    assert got.tolist() == [by_definition(p, 32) for p in ids]
    assert got.dtype == np.int32 and got[0] == got[-1]


def test_bucket_is_stable_across_processes_and_hash_seeds():
    ids = [f"P{i:05d}" for i in range(50)]
    code = "import sys; from dentalkit.io.partitioned import patient_bucket; " \
        "print(patient_bucket([f'P{i:05d}' for i in range(50)], 16).tolist())"  # fmt: skip
    seen = []
    for seed in ("1", "987"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "PYTHONPATH": str(ROOT)}
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
        assert out.returncode == 0, out.stderr
        seen.append(json.loads(out.stdout))
    assert seen[0] == seen[1] == patient_bucket(ids, 16).tolist()


def test_buckets_are_balanced():
    counts = np.bincount(patient_bucket([f"S{i:06d}" for i in range(20_000)], 32), minlength=32)
    # multinomial: expected 625 per bucket, SD ~ 24.6; ±25 % is > 6 SD
    assert counts.min() > 0.75 * 625 and counts.max() < 1.25 * 625, counts


@pytest.mark.parametrize(
    ("ids", "message"),
    [
        (["P1", None, "P3"], "missing at row 1"),
        (["P1", "P2", 7], r"row 2 \(0-based position\) is a int"),
        (["P1", float("nan")], "missing at row 1"),
    ],
)
def test_bad_patient_ids_name_the_row(ids, message):
    with pytest.raises(InputError, match=message):
        patient_bucket(ids, 8)


@pytest.mark.parametrize("buckets", [0, -3, 5000, 2.5, True])
def test_bad_bucket_counts_are_refused(buckets):
    with pytest.raises(InputError, match="buckets must be"):
        patient_bucket(["P1"], buckets)


def typed_table(n_patients: int = 40) -> pd.DataFrame:
    pids = [f"T{i:03d}" for i in range(n_patients)]
    rows = pd.DataFrame(
        {
            "patient_id": pd.Series(np.repeat(pids, 3), dtype="str"),
            "timestamp": np.tile(["2023-01-05", "2024-01-05", "2025-01-05"], n_patients),
            "view": pd.Categorical(np.tile(["lateral", "frontal", "lateral"], n_patients)),
            "x": np.arange(3 * n_patients, dtype="float64") * 1.5,
            "n": np.arange(3 * n_patients, dtype="int64"),
        }
    )
    rows["session_time"] = pd.to_datetime(rows["timestamp"], utc=True)
    rows.loc[5, "x"] = np.nan
    return rows


def test_round_trip_keeps_rows_dtypes_and_patients_together(tmp_path):
    t = typed_table()
    path = write_partitioned(t, tmp_path / "t", buckets=8)
    files = partition_files(path)
    assert 1 < len(files) <= 8
    meta = json.loads((path / dist.PARTITIONING_FILE).read_text())
    assert meta["rows"] == len(t) and sum(meta["files"].values()) == len(t)
    # each patient's rows are in exactly the file of its bucket
    for f in files:
        part = pd.read_parquet(f)
        bucket = int(f.stem.removeprefix("part-"))
        assert {by_definition(p, 8) for p in part["patient_id"]} == {bucket}
    back = read_partitioned(path)
    key = ["patient_id", "timestamp"]
    back = back.sort_values(key, ignore_index=True)
    pd.testing.assert_frame_equal(back, t.sort_values(key, ignore_index=True), check_categorical=False)  # fmt: skip
    assert back.dtypes.to_dict() == t.dtypes.to_dict()
    # one patient: only that patient's file is read
    one = read_partitioned(path, patients=["T007"])
    assert set(one["patient_id"]) == {"T007"} and len(one) == 3
    assert partition_files(path, ["T007"]) == [path / f"part-{by_definition('T007', 8)}.parquet"]
    none = read_partitioned(path, patients=["nobody"], columns=["patient_id", "x"])
    assert len(none) == 0 and list(none.columns) == ["patient_id", "x"]


def test_existing_folder_is_kept_unless_overwrite(tmp_path):
    t = typed_table(5)
    path = write_partitioned(t, tmp_path / "t", buckets=4)
    with pytest.raises(InputError, match="exists; pass overwrite=True"):
        write_partitioned(t, path)
    write_partitioned(t.iloc[:3], path, buckets=4, overwrite=True)
    assert len(read_partitioned(path)) == 3
    # no staging or old folders are left behind
    assert sorted(p.name for p in tmp_path.iterdir()) == ["t"]


def test_empty_table_keeps_its_schema(tmp_path):
    t = typed_table(3).iloc[:0]
    back = read_partitioned(write_partitioned(t, tmp_path / "e"))
    assert len(back) == 0 and list(back.columns) == list(t.columns)


def test_bad_calls_name_the_problem(tmp_path):
    with pytest.raises(InputError, match="no 'patient_id' column"):
        write_partitioned(pd.DataFrame({"x": [1]}), tmp_path / "a")
    with pytest.raises(InputError, match="not a partitioned dentalkit table"):
        read_partitioned(tmp_path)


def test_dask_and_duckdb_read_the_folder_as_one_table(tmp_path):
    import dask.dataframe as dd
    import duckdb

    t = typed_table()
    path = write_partitioned(t, tmp_path / "t", buckets=8)
    # dask's plain reader (its default options) sees every row
    plain = dd.read_parquet(str(path)).compute()
    assert len(plain) == len(t)
    assert plain["x"].sum() == pytest.approx(t["x"].sum())
    # our reader: one partition per file
    ddf = read_dask(path)
    assert ddf.npartitions == len(partition_files(path))
    # DuckDB: an aggregate per patient equals pandas'
    sql = (
        "SELECT patient_id, count(*) AS n, sum(n) AS s FROM read_parquet(?) "
        "GROUP BY patient_id ORDER BY patient_id"
    )
    got = duckdb.execute(sql, [str(path / "part-*.parquet")]).df()
    want = t.groupby("patient_id").agg(n=("n", "size"), s=("n", "sum")).reset_index()
    assert got["patient_id"].tolist() == want["patient_id"].tolist()
    assert got["n"].tolist() == want["n"].tolist() and got["s"].tolist() == want["s"].tolist()


def landmarks_table(n_patients: int) -> pd.DataFrame:
    """Long landmarks table from the simulator's bodies (two sessions per patient)."""
    rows = []
    for i in range(n_patients):
        pid = f"M{i:03d}"
        for ts in ("2023-02-01", "2025-03-15"):
            req = {"PatientID": pid, "TimeStamp": ts, "ImageName": f"https://img.example/{pid}"}
            cal = sim_truth(pid, ts)["ceph_lateral"]["mm_per_px"]
            body = respond(get_endpoint("ceph_lateral_points"), req, noise=True)
            for key, xy in body["Results"].items():
                rows.append((pid, ts, "lateral", key, xy["x_coordinate"], xy["y_coordinate"], cal))
    cols = ["patient_id", "timestamp", "view", "landmark", "x", "y", "cal"]
    return pd.DataFrame(rows, columns=cols)


def comparable(m: pd.DataFrame) -> pd.DataFrame:
    m = m.astype({c: "str" for c in ("patient_id", "timestamp", "view", "measure", "unit")})
    return m.sort_values(["patient_id", "timestamp", "measure"], ignore_index=True)[
        ["patient_id", "timestamp", "view", "measure", "value", "unit"]
    ]


def test_ceph_measure_over_dask_partitions_equals_single_machine(tmp_path, dask_client):
    lm = landmarks_table(12)
    whole = measure(lm, mm_per_px="cal", errors="warn")
    path = write_partitioned(lm, tmp_path / "landmarks", buckets=6)
    ddf = read_dask(path)
    assert ddf.npartitions > 1
    lazy = map_partitions(ddf, measure, mm_per_px="cal", errors="warn")
    out = lazy.compute()  # runs on the LocalCluster (the default scheduler while it is open)
    assert len(out) == len(whole) > 0
    pd.testing.assert_frame_equal(comparable(out), comparable(whole), check_exact=True)
    # and DuckDB over the same files gives the same landmark counts per session
    import duckdb

    per_session = duckdb.execute(
        "SELECT count(*) FROM read_parquet(?) GROUP BY patient_id, timestamp",
        [str(path / "part-*.parquet")],
    ).fetchall()
    assert {n for (n,) in per_session} == {169}


def test_map_partitions_refuses_a_function_that_returns_no_table(tmp_path):
    lm = landmarks_table(2)
    ddf = read_dask(write_partitioned(lm, tmp_path / "l", buckets=2))
    with pytest.raises(InputError, match="not a DataFrame"):
        map_partitions(ddf, measure, mm_per_px="cal", errors="collect")


def test_custom_writer_writes_geoparquet_partitions(tmp_path):
    geopandas = pytest.importorskip("geopandas")
    import shapely

    df = pd.DataFrame(
        {
            "patient_id": ["G1", "G2", "G3", "G1"],
            "tooth": ["m1_rgt_up", "c_lft_lo", "i1_rgt_up", "m2_rgt_up"],
            "geometry": shapely.box([0, 1, 2, 3], 0, [1, 2, 3, 4], 2),
        }
    )
    gdf = geopandas.GeoDataFrame(df, geometry="geometry", crs=None)
    path = write_partitioned(
        gdf, tmp_path / "teeth", buckets=4, writer=lambda f, p: f.to_parquet(p)
    )
    back = pd.concat([geopandas.read_parquet(f) for f in partition_files(path)])
    back = back.sort_values("tooth", ignore_index=True)
    assert back.geometry.area.tolist() == [2.0, 2.0, 2.0, 2.0]
    assert back["tooth"].tolist() == sorted(df["tooth"])


def test_docstring_examples():
    result = doctest.testmod(dist, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
