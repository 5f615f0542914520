"""The analyses stage at scale: tooth outlines measured a batch of patients at a time, the
outlines read a batch of WKB at a time, tables read without the outlines (issue 32)."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import shapely

from dentalkit import io, study, teeth
from dentalkit.study import _parts

#: The demo's partial calibration: panoramic outlines in mm, every other image in pixels
#: (so that the teeth are measured in two parts, each in batches).
PARTIAL = {"pano_segmentation": 0.1, "ceph_lateral_points": 0.1}


def test_batches_of_patients_give_the_measures_of_one_call(demo_tables):
    table = demo_tables["teeth"]
    whole, whole_problems = teeth.measure(table, mm_per_px=0.1, errors="collect")
    batched, problems = _parts.by_patients(teeth.measure, 1)(table, mm_per_px=0.1, errors="collect")
    assert table["patient_id"].nunique() == 3  # three batches
    pd.testing.assert_frame_equal(batched, whole)
    assert len(problems) == len(whole_problems)


def test_batches_keep_the_table_order_and_name_the_whole_tables_row(demo_tables):
    table = demo_tables["teeth"]
    # the patients' rows interleaved (patient 1 row, patient 2 row …), one outline broken
    order = np.argsort(np.arange(len(table)) % 7, kind="stable")
    shuffled = table.iloc[order].reset_index(drop=True)
    present = np.flatnonzero(~shuffled["missing"].to_numpy(bool))
    broken = int(present[len(present) // 2])
    geometry = shuffled["geometry"].to_numpy(dtype=object).copy()
    geometry[broken] = shapely.Polygon([(0, 0), (10, 10), (10, 0), (0, 10)])  # a bow tie
    shuffled["geometry"] = geometry
    whole, whole_problems = teeth.measure(shuffled, errors="collect")
    batched, problems = _parts.by_patients(teeth.measure, 2)(shuffled, errors="collect")
    pd.testing.assert_frame_equal(batched, whole)
    assert problems["row"].tolist() == [broken]
    assert problems["row"].tolist() == whole_problems["row"].tolist()
    assert problems["patient_id"].astype(str).tolist() == [str(shuffled["patient_id"][broken])]


def test_the_analyses_are_the_same_with_batches_of_one_patient(demo_tables, monkeypatch):
    # the old way: every outline in one call (a batch larger than the cohort)
    monkeypatch.setattr(_parts, "BATCH_PATIENTS", 10**9)
    old = study.analyze(demo_tables, PARTIAL, errors="collect")
    monkeypatch.setattr(_parts, "BATCH_PATIENTS", 1)
    new = study.analyze(demo_tables, PARTIAL, errors="collect")
    assert sorted(new) == sorted(old)
    assert "tooth_measures" in new and len(new["tooth_measures"])
    for name in old:
        pd.testing.assert_frame_equal(new[name], old[name], obj=name)


def _outlines(tmp_path, n: int):
    """A GeoParquet teeth-like file of ``n`` round outlines (33 vertices), every 5th None."""
    centres = shapely.points(np.arange(n, dtype=float), np.zeros(n))
    geoms = shapely.buffer(centres, 0.4, quad_segs=8).astype(object)
    geoms[::5] = None
    frame = pd.DataFrame({"tooth": [f"t{i}" for i in range(n)], "geometry": geoms})
    path = io.write_geoparquet(frame, tmp_path / "outlines.parquet")
    return path, geoms


def test_geoparquet_outlines_read_in_batches(tmp_path, monkeypatch):
    path, geoms = _outlines(tmp_path, 1000)
    monkeypatch.setattr(io, "WKB_BATCH", 64)  # many batches, the last one short
    back = io.read_geoparquet(path)
    assert back.columns.tolist() == ["tooth", "geometry"]
    is_none = np.array([g is None for g in geoms])
    assert back["geometry"].isna().to_numpy().tolist() == is_none.tolist()
    assert shapely.equals_exact(
        back["geometry"].to_numpy()[~is_none], geoms[~is_none], tolerance=0
    ).all()


def test_geoparquet_never_holds_every_outline_as_bytes(tmp_path, monkeypatch):
    # The WKB of 20,000 outlines is ~11 MB: read whole into pandas, the bytes objects
    # of every outline are alive at once; read by batches, one batch of them is.
    path, _ = _outlines(tmp_path, 20_000)
    wkb = pq.read_table(path, columns=["geometry"]).column(0)
    total = sum(len(v) for v in wkb.to_pylist() if v is not None)
    del wkb
    monkeypatch.setattr(io, "WKB_BATCH", 1000)
    tracemalloc.start()
    try:
        io.read_geoparquet(path)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < total / 2, (peak, total)


def test_tables_without_outlines(demo_study):
    out = demo_study[0] / "tables"
    whole = io.read_tables(out, ["teeth", "landmarks"])
    light = io.read_tables(out, ["teeth", "landmarks"], geometry=False)
    assert "geometry" not in light["teeth"].columns
    pd.testing.assert_frame_equal(light["teeth"], whole["teeth"].drop(columns="geometry"))
    pd.testing.assert_frame_equal(light["landmarks"], whole["landmarks"])


def test_an_empty_geoparquet_reads_back(tmp_path):
    frame = pd.DataFrame({"tooth": pd.Series([], dtype=object), "geometry": []})
    back = io.read_geoparquet(io.write_geoparquet(frame, tmp_path / "empty.parquet"))
    assert len(back) == 0 and back.columns.tolist() == ["tooth", "geometry"]
