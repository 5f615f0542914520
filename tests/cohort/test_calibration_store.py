"""Per-image calibration from the manifest, through the fetch, to the tables (issue 32, item 3).

A manifest's ``mm_per_px`` / ``calibration_source`` are never sent; the fetch keeps them in
``STORE/calibration.parquet``; ``dentalkit tables`` (and ``convert.tables(...,
calibration=read_calibration(store))``) return them as the declared ``calibration`` table. The
expected values are the manifest's own cells.
"""

from __future__ import annotations

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from typer.testing import CliRunner

from dentalkit import convert, io
from dentalkit.fetch import read_calibration, read_responses
from dentalkit.fetch.cohort import fetch_cohort

URL = "https://img.example.org/{}.png"
COLUMNS = ["patient_id", "timestamp", "endpoint", "image_url", "mm_per_px", "calibration_source"]


def _manifest_csv(path):
    path.write_text(
        "patient_id,timestamp,endpoint,image_url,mm_per_px,calibration_source\n"
        f"C1,2024-03-05,ceph_lateral_points,{URL.format('c1-ceph')},0.1,dicom:PixelSpacing\n"
        f"C1,2024-03-05,pano_segmentation,{URL.format('c1-pano')},0.085,\n"
        f"C2,2024-03-05,ceph_lateral_points,{URL.format('c2-ceph')},,\n"
        f"C2,2025-03-04,ceph_lateral_points,{URL.format('c2-ceph-2')},0.11,manifest\n"
    )
    return path


def _cli(args, fresh):
    from dentalkit.cli import app

    env = {"DENTALKIT_API_KEY": fresh.api_key, "DENTALKIT_BASE_URL": fresh.base_url}
    return CliRunner().invoke(app, args, env=env)


def test_a_calibrated_manifest_gives_the_calibration_table_after_fetch_and_tables(tmp_path, fresh):
    manifest = _manifest_csv(tmp_path / "m.csv")
    store, tables = tmp_path / "store", tmp_path / "tables"
    res = _cli(["fetch", str(manifest), "--out", str(store), "--cache", "memory", "--no-progress"], fresh)  # fmt: skip
    assert res.exit_code == 0, res.output
    # never sent: the bodies the sandbox received carry no calibration
    responses = read_responses(store)
    assert len(responses) == 4 and not responses["options"].str.contains("mm_per_px").any()
    want = [
        [
            "C1",
            "2024-03-05",
            "ceph_lateral_points",
            URL.format("c1-ceph"),
            0.1,
            "dicom:PixelSpacing",
        ],
        ["C1", "2024-03-05", "pano_segmentation", URL.format("c1-pano"), 0.085, "manifest"],
        ["C2", "2025-03-04", "ceph_lateral_points", URL.format("c2-ceph-2"), 0.11, "manifest"],
    ]
    side = pq.read_table(store / "calibration.parquet")
    assert side.schema.field("patient_id").type == pa.string()
    assert side.schema.field("mm_per_px").type == pa.float64()
    assert side.to_pandas()[COLUMNS].to_numpy().tolist() == want

    res = _cli(["tables", str(store), "--out", str(tables), "--no-progress"], fresh)
    assert res.exit_code == 0, res.output
    assert "calibration                  3 rows" in res.output
    cal = io.read_tables(tables, ["calibration"])["calibration"]
    assert cal[COLUMNS].astype(object).to_numpy().tolist() == want
    assert str(cal["endpoint"].dtype) == "category" and cal["mm_per_px"].dtype == "float64"

    # the Python path gives the same table
    out = convert.tables(responses, calibration=read_calibration(store))
    pd.testing.assert_frame_equal(out["calibration"], cal)

    # and it joins the landmarks on the session key in polars and DuckDB
    polars = pytest.importorskip("polars")
    duckdb = pytest.importorskip("duckdb")
    lm = polars.read_parquet(tables / "landmarks.parquet")
    joined = lm.join(polars.read_parquet(tables / "calibration.parquet"), on=["patient_id", "timestamp", "endpoint"])  # fmt: skip
    pid, ts = polars.col("patient_id"), polars.col("timestamp")
    scaled = lm.filter(((pid == "C1") & (ts == "2024-03-05")) | ((pid == "C2") & (ts == "2025-03-04")))  # fmt: skip
    assert joined.height == scaled.height > 0
    assert set(joined["mm_per_px"]) == {0.1, 0.11}
    [(n,)] = duckdb.execute(
        f"SELECT count(*) FROM read_parquet('{tables / 'landmarks.parquet'}') "
        f"JOIN read_parquet('{tables / 'calibration.parquet'}') "
        "USING (patient_id, timestamp, endpoint)"
    ).fetchall()
    assert n == joined.height


def _client(fresh):
    from dentalkit.fetch.client import Client

    return Client(fresh.base_url, api_key=fresh.api_key, cache="memory")


def test_the_latest_manifest_wins_for_every_image_it_names(tmp_path, fresh):
    out = tmp_path / "store"
    full = pd.DataFrame(
        {
            "patient_id": ["A", "B", "C"],
            "timestamp": "2024-03-05",
            "image_url": [URL.format(p) for p in "ABC"],
            "mm_per_px": [0.1, 0.2, 0.3],
        }
    )
    fetch_cohort(full, "pano_segmentation", out, client=_client(fresh), progress=False)
    assert read_calibration(out)["mm_per_px"].tolist() == [0.1, 0.2, 0.3]
    # a second manifest: A corrected, B without a scale any more, C not named (kept)
    part = full.iloc[:2].assign(mm_per_px=[0.15, None])
    rep = fetch_cohort(part, "pano_segmentation", out, client=_client(fresh), progress=False)
    assert rep.already_stored == 2 and rep.sent == 0
    got = read_calibration(out)
    assert got[["patient_id", "mm_per_px"]].to_numpy().tolist() == [["A", 0.15], ["C", 0.3]]
    # a /tle fetch into the same store names no image: the calibration stays
    cols = {f"p{i:02d}": ["1"] for i in range(1, 12)}
    tle = pd.DataFrame({"patient_id": ["A"], "timestamp": ["tle"], **cols})
    fetch_cohort(tle, "tle", out, client=_client(fresh), progress=False, errors="collect")
    assert read_calibration(out)["mm_per_px"].tolist() == [0.15, 0.3]


def test_a_store_without_any_scale_has_no_calibration_file(tmp_path, fresh):
    m = pd.DataFrame({"patient_id": ["A"], "timestamp": ["2024-03-05"], "image_url": [URL.format(1)]})  # fmt: skip
    out = tmp_path / "store"
    fetch_cohort(m, "classifier", out, client=_client(fresh), progress=False)
    assert not (out / "calibration.parquet").exists()
    assert read_calibration(out).columns.tolist() == COLUMNS and read_calibration(out).empty
    res = _cli(["tables", str(out), "--out", str(tmp_path / "t"), "--no-progress"], fresh)
    assert res.exit_code == 0 and not (tmp_path / "t" / "calibration.parquet").exists()


def test_a_damaged_calibration_file_is_moved_aside_and_rewritten(tmp_path, fresh):
    m = pd.DataFrame(
        {
            "patient_id": ["A", "B"],
            "timestamp": "2024-03-05",
            "image_url": [URL.format(1), URL.format(2)],
            "mm_per_px": [0.1, 0.2],
        }
    )
    out = tmp_path / "store"
    fetch_cohort(m, "classifier", out, client=_client(fresh), progress=False)
    (out / "calibration.parquet").write_bytes(b"PAR1 garbled PAR1")
    rep = fetch_cohort(m.iloc[:1], "classifier", out, client=_client(fresh), progress=False)
    assert rep.quarantined["file"].tolist() == ["calibration.parquet"]
    assert (out / "_quarantine").exists()
    assert read_calibration(out)["patient_id"].tolist() == ["A"]


def test_first_contact_keeps_the_calibration_of_the_images_it_sends(tmp_path, fresh):
    from dentalkit.fetch.cohort import first_contact_plan

    m = pd.DataFrame(
        {
            "patient_id": ["A", "B"],
            "timestamp": "2024-03-05",
            "endpoint": ["classifier", "pano_segmentation"],
            "image_url": [URL.format(1), URL.format(2)],
            "mm_per_px": [0.1, None],
        }
    )
    plan = first_contact_plan(m)
    out = tmp_path / "store"
    fetch_cohort(plan.manifest, out=out, client=_client(fresh), progress=False)
    assert read_calibration(out)[["patient_id", "endpoint", "mm_per_px"]].to_numpy().tolist() == [
        ["A", "classifier", 0.1]
    ]


@pytest.mark.parametrize(
    ("bad", "field"),
    [
        ({"mm_per_px": 0.0}, "mm_per_px"),
        ({"mm_per_px": float("nan")}, "mm_per_px"),
        ({"endpoint": "tle"}, "endpoint"),
    ],
)
def test_convert_checks_a_calibration_table_it_is_given(bad, field):
    good = {
        "patient_id": "A",
        "timestamp": "2024-03-05",
        "endpoint": "classifier",
        "image_url": URL.format(1),
        "mm_per_px": 0.1,
    }
    cal = pd.DataFrame([good, {**good, "patient_id": "B", **bad}])
    responses = pd.DataFrame(columns=["endpoint", "patient_id", "timestamp", "body"])
    out = convert.tables(responses, errors="collect", calibration=cal)
    assert out["calibration"]["patient_id"].tolist() == ["A"]
    assert out["calibration"]["calibration_source"].tolist() == ["manifest"]
    probs = out["problems"]
    assert probs[["table", "row", "field", "severity"]].to_numpy().tolist() == [
        ["calibration", 1, field, "error"]
    ]
    with pytest.raises(Exception, match=f"calibration row 1 \\(0-based position\\): {field}"):
        convert.tables(responses, calibration=cal)
