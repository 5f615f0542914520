"""dentalkit.tracings: long and wide CSV, ISBI 2015 files, name maps, bad input."""

from __future__ import annotations

import warnings

import agreement_fixtures as fx
import numpy as np
import pandas as pd
import pytest

from dentalkit import agreement, tracings
from dentalkit.errors import DentalkitWarning, InputError

LONG_CSV = """patient_id,timestamp,view,name,x,y,mm_per_px
P001,2024-03-01,lateral,S,812.4,655.0,0.1
P001,2024-03-01,lateral,N,1490.2,601.7,0.1
P002,2024-03-02T10:30:00+02:00,lateral,S,800,650,0.1
"""
WIDE_CSV = """patient_id,timestamp,mm_per_px,S_x,S_y,N_x,N_y
P001,2024-03-01,0.1,812.4,655.0,1490.2,601.7
P002,2024-03-02T10:30:00+02:00,0.1,800,650,,
"""


def test_long_csv(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(LONG_CSV)
    t = tracings.read_tracings(path)
    assert list(t.columns) == [
        "patient_id",
        "timestamp",
        "session_time",
        "view",
        "landmark",
        "name",
        "x",
        "y",
        "mm_per_px",
    ]
    assert t["x"].tolist() == [812.4, 1490.2, 800.0] and t["x"].dtype == np.float64
    assert isinstance(t["patient_id"].dtype, pd.CategoricalDtype)
    assert str(t["session_time"].dtype) == "datetime64[ns, UTC]"
    assert t["session_time"].iloc[2] == pd.Timestamp("2024-03-02T08:30:00Z")
    assert t["name"].tolist() == ["S", "N", "S"]


def test_wide_csv_reads_like_the_long_one_and_empty_pairs_are_untraced(tmp_path):
    (tmp_path / "w.csv").write_text(WIDE_CSV)
    (tmp_path / "l.csv").write_text(LONG_CSV)
    wide = tracings.read_tracings(tmp_path / "w.csv")
    long = tracings.read_tracings(tmp_path / "l.csv")
    cols = ["patient_id", "timestamp", "name", "x", "y", "mm_per_px"]
    assert len(wide) == 3  # P002's N is not traced
    pd.testing.assert_frame_equal(
        wide[cols].astype(object).reset_index(drop=True),
        long[cols].astype(object).reset_index(drop=True),
    )


def test_isbi_files_reuse_the_ceph_reader(tmp_path):
    pts = fx.to_image(np.array(list(fx.ISBI_MM.values())))
    lines = "\n".join(f"{x:.0f},{y:.0f}" for x, y in pts) + "\n1\n2\n"
    for stem in ("001", "002"):
        (tmp_path / f"{stem}.txt").write_text(lines)
    t = tracings.read_tracings(tmp_path, timestamp="2024-03-01", annotator="senior")
    assert len(t) == 38 and set(t["patient_id"]) == {"001", "002"}
    assert t["name"].tolist()[:19] == fx.NAMES
    assert set(t["timestamp"]) == {"2024-03-01"} and t["mm_per_px"].eq(0.1).all()
    assert t["session_time"].iloc[0] == pd.Timestamp("2024-03-01", tz="UTC")
    with pytest.raises(InputError, match="isbi2015"):
        tracings.read_tracings(tmp_path, name_map="anatomical_en")


def test_name_maps_shipped_and_loose_matching():
    table = pd.DataFrame(
        {
            "patient_id": "P1",
            "name": ["sella", "Soft-tissue pogonion", "POINT_A", "L05", "Go"],
            "x": 1.0,
            "y": 2.0,
        }
    )
    with pytest.warns(DentalkitWarning, match="L05"):
        t = tracings.tracings_from_long(table, name_map="anatomical_en")
    names = t["name"].astype(object)
    assert names.isna().tolist() == [False, False, False, True, False]
    assert names.dropna().tolist() == ["S", "Pog'", "A", "Go"]
    assert t["landmark"].astype(str).tolist()[3] == "L05"  # the tracing's own text kept
    isbi = tracings.tracings_from_long(table.iloc[3:4], name_map="isbi2015")
    assert isbi["name"].tolist() == ["A"]
    custom = pd.DataFrame({"source_name": ["sella"], "name": ["S"]})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        assert tracings.tracings_from_long(table, name_map=custom)["name"].iloc[0] == "S"


def test_unmapped_tracing_names_become_agreement_problems():
    ref = fx.tracing("p1").assign(name=lambda d: d["name"].replace({"Go": "Gonion-ish"}))
    with pytest.warns(DentalkitWarning):
        ref = tracings.tracings_from_long(ref, mm_per_px=0.1)
    with pytest.warns(DentalkitWarning):
        res = agreement.landmarks(ref, fx.tracing("p1"), mm_per_px="mm_per_px", errors="warn")
    assert res.problems["reason"].str.contains("unmapped: no name for key Gonion-ish").any()
    assert "Go" not in set(res.summary["name"].astype(str))


def test_a_written_and_read_tracing_agrees_exactly(tmp_path):
    ref = fx.cohort(5, np.random.default_rng(0))
    ref.to_csv(tmp_path / "r.csv", index=False)
    back = tracings.read_tracings(tmp_path / "r.csv", mm_per_px=0.1)
    res = agreement.landmarks(back, ref, mm_per_px=0.1)
    assert res.overall["mre"].iloc[0] == pytest.approx(0.0, abs=1e-9)


@pytest.mark.parametrize(
    ("csv", "match"),
    [
        ("patient_id,name,x,y\nP1,S,12a,3\n", r"not numbers: row 0 \(line 2\): '12a'"),
        ("patient_id,name,x\nP1,S,1\n", "lacks column"),
        ("patient_id,name,x,y,view\nP1,S,1,2,PA\n", "view 'PA'"),
        ("patient_id,name,x,y\n,S,1,2\n", "patient_id is empty at row 0"),
        ("patient_id,S_x,S_y,N_x\nP1,1,2,3\n", "neither key columns"),
        ("patient_id,S_x,S_y\nP1,1,\n", "only one of S_x/S_y"),
        ("patient_id,foo\nP1,1\n", "neither key columns"),
    ],
)
def test_bad_tracing_files(tmp_path, csv, match):
    path = tmp_path / "bad.csv"
    path.write_text(csv)
    with pytest.raises(InputError, match=match):
        tracings.read_tracings(path)


def test_argument_and_column_conflicts(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(LONG_CSV)
    with pytest.raises(InputError, match="do not pass them"):
        tracings.read_tracings(path, mm_per_px=0.1)
    with pytest.raises(InputError, match="does not exist"):
        tracings.read_tracings(tmp_path / "nope.csv")
    with pytest.raises(InputError, match="layout"):
        tracings.read_tracings(path, layout="xml")
