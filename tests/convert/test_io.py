"""Parquet / GeoParquet 1.1 I/O: lossless round trip, metadata, geopandas and DuckDB."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow.parquet as pq
import pytest
import shapely

from dentalkit import convert, io
from dentalkit.convert import schemas
from dentalkit.errors import InputError

pytestmark = pytest.mark.filterwarnings("error::dentalkit.errors.DentalkitWarning")


@pytest.fixture
def tables(all_endpoints_frame) -> dict[str, pd.DataFrame]:
    return convert.tables(all_endpoints_frame)


def assert_same(a: pd.DataFrame, b: pd.DataFrame) -> None:
    """Exact equality: values, dtypes, category lists and order, geometries coordinate by coordinate."""
    if "geometry" in a.columns:
        ga, gb = a["geometry"].to_numpy(), b["geometry"].to_numpy()
        assert (pd.isna(a["geometry"]) == pd.isna(b["geometry"])).all()
        both = ~pd.isna(a["geometry"]).to_numpy()
        assert shapely.equals_exact(ga[both], gb[both], tolerance=0).all()
        a, b = a.drop(columns="geometry"), b.drop(columns="geometry")
    pd.testing.assert_frame_equal(a, b, check_exact=True, check_categorical=True)


def test_round_trip_is_lossless(tables, tmp_path):
    paths = io.write_tables(tables, tmp_path)
    assert sorted(p.name for p in paths.values()) == sorted(f"{n}.parquet" for n in tables)
    back = io.read_tables(tmp_path)
    assert list(back) == list(tables)
    for name in tables:
        assert_same(tables[name], back[name])
        schemas.check(back[name], name)
    # convert does no I/O: its old write_tables / read_tables aliases are gone (issue 32)
    assert not hasattr(convert, "write_tables") and not hasattr(convert, "read_tables")


def test_empty_and_all_null_categoricals_round_trip(tmp_path):
    out = convert.tables(
        pd.DataFrame({"endpoint": [], "patient_id": [], "timestamp": [], "body": []})
    )
    io.write_tables(out, tmp_path)
    back = io.read_tables(tmp_path)
    for name in out:
        assert_same(out[name], back[name])


def test_geoparquet_metadata(tables, tmp_path):
    path = tmp_path / "teeth.parquet"
    io.write_geoparquet(tables["teeth"], path)
    schema = pq.read_schema(path)
    geo = json.loads(schema.metadata[b"geo"])
    assert geo["version"] == "1.1.0" and geo["primary_column"] == "geometry"
    col = geo["columns"]["geometry"]
    assert col["encoding"] == "WKB"
    assert col["geometry_types"] == ["Polygon"]
    assert "crs" in col and col["crs"] is None  # explicit null: pixel coordinates
    assert col["covering"] == {"bbox": {k: ["bbox", k] for k in ("xmin", "ymin", "xmax", "ymax")}}
    geoms = tables["teeth"]["geometry"].dropna()
    assert col["bbox"] == list(shapely.total_bounds(geoms.to_numpy()))
    bbox_type = schema.field("bbox").type
    assert [f.name for f in bbox_type] == ["xmin", "ymin", "xmax", "ymax"]
    assert all(str(f.type) == "double" for f in bbox_type)
    assert str(schema.field("geometry").type) == "binary"
    # the covering column holds each row's bounds, null where there is no geometry
    raw = pq.read_table(path).to_pandas()
    for g, box in zip(tables["teeth"]["geometry"], raw["bbox"], strict=True):
        if g is None:
            assert box is None
        else:
            assert [box[k] for k in ("xmin", "ymin", "xmax", "ymax")] == list(g.bounds)
    # WKB is 2D ISO, readable by shapely without dentalkit
    wkb = raw["geometry"].dropna().iloc[0]
    assert shapely.from_wkb(wkb).equals(geoms.iloc[0])


def test_geopandas_reads_the_file(tables, tmp_path):
    geopandas = pytest.importorskip("geopandas")
    path = tmp_path / "teeth.parquet"
    io.write_geoparquet(tables["teeth"], path)
    gdf = geopandas.read_parquet(path)
    assert isinstance(gdf, geopandas.GeoDataFrame) and gdf.crs is None
    ours = tables["teeth"]["geometry"]
    np.testing.assert_array_equal(
        gdf.geometry.area.to_numpy(), shapely.area(ours.to_numpy()).astype(float)
    )
    assert (
        gdf["tooth"].astype(str).tolist()
        == ours.index.map(tables["teeth"]["tooth"]).astype(str).tolist()
    )
    assert gdf["fdi"].tolist() == tables["teeth"]["fdi"].tolist()


def test_duckdb_reads_the_file(tables, tmp_path):
    duckdb = pytest.importorskip("duckdb")
    path = tmp_path / "teeth.parquet"
    io.write_geoparquet(tables["teeth"], path)
    con = duckdb.connect()
    [(n, n_geom)] = con.execute(
        f"SELECT count(*), count(geometry) FROM read_parquet('{path}')"
    ).fetchall()
    teeth = tables["teeth"]
    assert (n, n_geom) == (len(teeth), int(teeth["geometry"].notna().sum()))
    described = con.execute(f"DESCRIBE SELECT * FROM read_parquet('{path}')").fetchall()
    types = {r[0]: r[1] for r in described}
    # DuckDB understands the geo metadata (GEOMETRY) or at least sees WKB bytes (BLOB)
    assert types["geometry"] in ("GEOMETRY", "BLOB")
    to_wkb = "ST_AsWKB(geometry)" if types["geometry"] == "GEOMETRY" else "geometry"
    rows = con.execute(
        f"SELECT tooth, {to_wkb} FROM read_parquet('{path}') WHERE geometry IS NOT NULL"
    ).fetchall()
    ours = dict(zip(teeth["tooth"].astype(str), teeth["geometry"], strict=True))
    for tooth, wkb in rows:
        assert shapely.equals_exact(shapely.from_wkb(bytes(wkb)), ours[tooth], tolerance=0)
    # the covering column works for bounding-box filters without any extension
    hits = con.execute(
        f"SELECT tooth FROM read_parquet('{path}') WHERE bbox.xmax < 200 ORDER BY tooth"
    ).fetchall()
    want = sorted(t for t, g in ours.items() if g is not None and g.bounds[2] < 200)
    assert [h[0] for h in hits] == want
    try:
        con.execute("LOAD spatial")
    except duckdb.Error:
        return  # the spatial extension is not installed (offline); the checks above suffice
    areas = dict(
        con.execute(f"SELECT tooth, ST_Area(geometry) FROM read_parquet('{path}')").fetchall()
    )
    for tooth, g in ours.items():
        assert areas[tooth] == (None if g is None else g.area)


def test_core_io_works_without_geopandas(tables, tmp_path):
    path = tmp_path / "teeth.parquet"
    script = f"""
import sys
sys.modules["geopandas"] = None  # importing it now fails
import pandas as pd
from dentalkit import io
df = pd.read_pickle({str(tmp_path / "t.pkl")!r})
io.write_geoparquet(df, {str(path)!r})
back = io.read_geoparquet({str(path)!r})
assert "geopandas" not in {{k for k, v in sys.modules.items() if v is not None}}
print(len(back))
"""
    tables["teeth"].to_pickle(tmp_path / "t.pkl")
    root = Path(__file__).resolve().parents[2]
    res = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, cwd=root, check=False
    )
    assert res.returncode == 0, res.stderr
    assert res.stdout.strip() == str(len(tables["teeth"]))


def test_writes_are_atomic(tables, tmp_path, monkeypatch):
    io.write_tables({"tmj": tables["tmj"]}, tmp_path)
    before = (tmp_path / "tmj.parquet").read_bytes()

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(io.pq, "write_table", boom)
    changed = tables["tmj"].copy()
    changed["has_finding"] = ~changed["has_finding"]
    with pytest.raises(OSError, match="disk full"):
        io.write_tables({"tmj": changed}, tmp_path)
    assert (tmp_path / "tmj.parquet").read_bytes() == before  # old file intact
    assert os.listdir(tmp_path) == ["tmj.parquet"]  # no temporary left behind


def test_io_refuses_what_it_cannot_write_or_read(tables, tmp_path):
    with pytest.raises(
        InputError, match=r"unknown table 'measurements'; write_tables writes .*tmj"
    ):
        io.write_tables({"measurements": tables["tmj"]}, tmp_path)
    pieces = [{"measurements": tables["tmj"]}]
    with pytest.raises(InputError, match="unknown table 'measurements'; write_tables_in_parts"):
        io.write_tables_in_parts(pieces, tmp_path / "parts")
    with pytest.raises(InputError, match=r"unknown table 'measurements'; tables are: .*tmj"):
        io.read_tables(tmp_path, ["measurements"])
    broken = tables["tmj"].drop(columns="has_finding")
    with pytest.raises(InputError, match="columns"):
        io.write_tables({"tmj": broken}, tmp_path)
    with pytest.raises(InputError, match="not a folder"):
        io.read_tables(tmp_path / "nowhere")
    with pytest.raises(InputError, match="does not exist"):
        io.read_tables(tmp_path, ["teeth"])
    pq.write_table(
        pq.read_table(io.write_tables({"tmj": tables["tmj"]}, tmp_path)["tmj"]),
        tmp_path / "plain.parquet",
    )
    with pytest.raises(InputError, match="not a GeoParquet"):
        io.read_geoparquet(tmp_path / "plain.parquet")
    with pytest.raises(InputError, match="geometry"):
        io.write_geoparquet(pd.DataFrame({"geometry": [1]}), tmp_path / "x.parquet")
