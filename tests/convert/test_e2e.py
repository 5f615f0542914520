"""End to end: sandbox → fetch_cohort → responses store → tables → Parquet/GeoParquet,
read back by dentalkit, geopandas and DuckDB. Values are checked against the stored
bodies read with the standard ``json`` module."""

from __future__ import annotations

import json

import pandas as pd
import pytest
import shapely

from dentalkit import convert, io
from dentalkit.endpoints import ENDPOINTS

pytestmark = pytest.mark.filterwarnings("error::dentalkit.errors.DentalkitWarning")


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    from dentalkit.fetch.client import Client
    from dentalkit.fetch.cohort import fetch_cohort
    from dentalkit.fetch.store import read_responses
    from dentalkit.sandbox import running
    from tests.helpers import VALID_TLE_QUERY as DEMO_TLE

    # fixed image URLs (not the sandbox's, which carry its random port): the simulated
    # answers, seeded by the request, are then the same on every run
    rows = []
    for pid in ("E2E-001", "E2E-002", "E2E-003"):
        for ep in ENDPOINTS.values():
            row = {"patient_id": pid, "timestamp": "2024-03-05T10:00:00Z", "endpoint": ep.name}
            if ep.is_image:
                row["image_url"] = f"https://images.example.org/{pid}/{ep.slug}.png"
            else:
                row.update(DEMO_TLE)
            rows.append(row)
    out = tmp_path_factory.mktemp("store")
    with running() as sb:
        client = Client(sb.base_url, api_key=sb.api_key, cache="memory")
        report = fetch_cohort(pd.DataFrame(rows), out=out, client=client, progress=False)
    assert report.failed == 0
    return read_responses(out)


@pytest.fixture(scope="module")
def tables(store):
    return convert.tables(store)


def bodies(store: pd.DataFrame, endpoint: str) -> list[tuple[str, dict]]:
    rows = store[store["endpoint"].astype(str) == endpoint]
    return [(p, json.loads(b)) for p, b in zip(rows["patient_id"], rows["body"], strict=True)]


def test_every_response_converts(store, tables):
    assert len(store) == 3 * 13
    # the only problem the simulator's outlines may cause (whole-pixel rounding can fold
    # a small outline onto itself): a tooth kept without geometry, never a dropped response
    probs = tables["problems"]
    assert (probs["table"] == "teeth").all()
    assert probs["reason"].str.contains("outline").all()
    assert probs["reason"].str.endswith("(rows kept)").all()
    for name, df in tables.items():
        convert.schemas.check(df, name)
    assert len(tables["classifications"]) == len(tables["tmj"]) == len(tables["tle"]) == 3


def test_landmarks_match_the_stored_bodies(store, tables):
    lm = tables["landmarks"]
    for endpoint in ("ceph_lateral_points", "ceph_frontal_points"):
        for pid, body in bodies(store, endpoint):
            got = lm[(lm["endpoint"] == endpoint) & (lm["patient_id"] == pid)]
            assert len(got) == body["NumberOfPredictedPoints"] == len(body["Results"])
            want = [(k, v["x_coordinate"], v["y_coordinate"]) for k, v in body["Results"].items()]
            assert list(zip(got["landmark"], got["x"], got["y"], strict=True)) == want
            assert set(got["model_version"]) == {body["Version"]}


def test_teeth_match_the_stored_bodies(store, tables):
    teeth = tables["teeth"]
    for endpoint in ("frontal_segmentation", "pano_segmentation", "occlusogram_upper_seg"):
        for pid, body in bodies(store, endpoint):
            got = teeth[(teeth["endpoint"] == endpoint) & (teeth["patient_id"] == pid)]
            assert got["tooth"].astype(str).tolist() == list(body["Results"])
            for (_, rec), geom, missing, repaired in zip(
                body["Results"].items(),
                got["geometry"],
                got["missing"],
                got["repaired"],
                strict=True,
            ):
                assert missing == rec["missing"]
                if rec["missing"]:
                    assert geom is None
                    continue
                plain = shapely.Polygon(rec["points"])
                if plain.is_valid:
                    assert shapely.equals_exact(geom, plain, tolerance=0) and not repaired
                else:  # repaired to its one polygon, or left without geometry (reported)
                    assert geom is None or (repaired and geom.equals(shapely.make_valid(plain)))


def test_keypoints_findings_and_single_rows_match(store, tables):
    for pid, body in bodies(store, "occlusogram_upper_points"):
        ap = tables["arch_points"]
        got = ap[(ap["patient_id"] == pid) & (ap["arch"] == "up")]
        assert got["point"].astype(str).tolist() == list(body["CatenaryPoints"])
        assert got[["x", "y"]].to_numpy().tolist() == list(body["CatenaryPoints"].values())
    for pid, body in bodies(store, "clinical_images"):
        fc = tables["finding_counts"]
        got = fc[fc["patient_id"] == pid]
        assert (
            dict(zip(got["class_name"].astype(str), got["count"], strict=True))
            == body["ImageContents"]
        )
    for pid, body in bodies(store, "tmj_xsectional"):
        t = tables["tmj"].set_index("patient_id").loc[pid]
        assert t["finding"] == body["Results"]["Finding"]
        assert t["image_name"] == body["ImageName"]
        # the sandbox's sentence when nothing is drawn is the spec's "no findings" statement
        assert t["has_finding"] == (body["Results"]["Finding"] != "No findings were detected.")


def test_written_tables_read_back_everywhere(tables, tmp_path):
    io.write_tables(tables, tmp_path)
    back = io.read_tables(tmp_path)
    for name, df in tables.items():
        if name == "teeth":
            assert (back[name]["geometry"].isna() == df["geometry"].isna()).all()
            pd.testing.assert_frame_equal(
                back[name].drop(columns="geometry"), df.drop(columns="geometry")
            )
        else:
            pd.testing.assert_frame_equal(back[name], df)
    geopandas = pytest.importorskip("geopandas")
    gdf = geopandas.read_parquet(tmp_path / "teeth.parquet")
    assert gdf.geometry.area.sum() == pytest.approx(
        tables["teeth"]["geometry"].dropna().map(lambda g: g.area).sum()
    )
    duckdb = pytest.importorskip("duckdb")
    [(n,)] = (
        duckdb.connect()
        .execute(
            f"SELECT count(*) FROM read_parquet('{tmp_path / 'landmarks.parquet'}') WHERE view = 'lateral'"
        )
        .fetchall()
    )
    assert n == 3 * 169


def test_the_analyses_read_the_tables(store, tables):
    """The tables are what the analysis modules read (a smoke test across modules)."""
    from dentalkit import arch, ceph, findings, teeth

    measured = teeth.measure(tables["teeth"])
    assert len(measured) == len(tables["teeth"])
    teeth.symmetry(measured)
    teeth.missing(tables["teeth"])
    assert len(ceph.measure(tables["landmarks"])) > 0
    result = findings.prevalence(
        tables["findings"], tables["finding_counts"], images=findings.analysed_images(store)
    )
    assert len(result.problems) == 0
    assert len(result.prevalence) > 0
    fitted = arch.fit(tables["arch_points"], "parabola", tooth_keypoints=tables["tooth_keypoints"])
    assert len(fitted) > 0
