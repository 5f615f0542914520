"""Manifest validation: every bad row reported at once, with row number, field and reason."""

from __future__ import annotations

import hashlib
import warnings

import pandas as pd
import pytest

from dentalkit.errors import DentalkitWarning, InputError, ManifestError
from dentalkit.fetch._manifest import plan_requests, read_manifest

URL = "https://img.example.org/{}.png"


def _manifest(n=3, **cols):
    base = {
        "patient_id": [f"P{i}" for i in range(n)],
        "timestamp": ["2024-03-05"] * n,
        "image_url": [URL.format(i) for i in range(n)],
    }
    base.update(cols)
    return pd.DataFrame(base)


def test_every_bad_row_is_reported_with_its_reason():
    m = pd.DataFrame(
        {
            "patient_id": ["P1", "P2", None, "P4", "P5", "P6", "P1", "P8"],
            "timestamp": ["2024-03-05", "2024-03-05", "2024-03-05", "  ", "2024-03-05", "2024-03-05", "2024-03-05", "2024-03-05"],
            "image_url": [URL.format(1), "C:/scans/p2.png", URL.format(3), URL.format(4), URL.format(5), URL.format(6), URL.format(1), None],
            "endpoint": ["pano_segmentation", "classifier", "classifier", "classifier", "nope", "classifier", "/pano-segmentation", "classifier"],
            "draw_contours": [True, None, None, None, None, True, True, None],
        }
    )  # fmt: skip
    plan = plan_requests(m)
    got = plan.problems[["row", "field", "reason"]]
    expected = [
        (2, "image_url", "not a full http(s) URL"),
        (3, "patient_id", "missing field"),
        (4, "timestamp", "missing field"),
        (5, "endpoint", "unknown endpoint"),
        (6, "draw_contours", "does not apply to endpoint classifier"),
        (7, "request", "duplicate request"),
        (8, "image_url", "missing field"),
    ]
    assert len(got) == len(expected)
    for (row, field, reason), rec in zip(expected, got.itertuples(index=False), strict=True):
        assert (rec.row, rec.field) == (row, field)
        assert reason in rec.reason
    assert "row 1" in plan.problems.loc[plan.problems["row"] == 7, "reason"].item()
    # only row 1 is valid; its body carries the option under its wire name
    assert plan.requests["row"].tolist() == [1]
    assert plan.payloads == [
        (
            "pano_segmentation",
            {
                "PatientID": "P1",
                "TimeStamp": "2024-03-05",
                "ImageName": URL.format(1),
                "DrawContours": True,
            },
            None,
        )
    ]


def test_manifest_error_lists_every_row():
    m = _manifest(12, endpoint=["nope"] * 12)
    plan = plan_requests(m)
    err = ManifestError(plan.problems)
    assert len(err.problems) == 12
    assert "row 1: endpoint='nope'" in str(err) and "2 more" in str(err)


def test_wrong_option_types_in_a_csv(tmp_path):
    path = tmp_path / "m.csv"
    path.write_text(
        "patient_id,timestamp,image_url,endpoint,draw_contours\n"
        f"P1,2024-03-05,{URL.format(1)},pano_segmentation,TRUE\n"
        f"P2,2024-03-05,{URL.format(2)},pano_segmentation,false\n"
        f"P3,2024-03-05,{URL.format(3)},pano_segmentation,maybe\n"
        f"P4,2024-03-05,{URL.format(4)},pano_segmentation,\n"
    )
    plan = plan_requests(read_manifest(path))
    assert plan.problems[["row", "field", "value"]].to_numpy().tolist() == [
        [3, "draw_contours", "maybe"]
    ]
    opts = [p[1].get("DrawContours") for p in plan.payloads]
    assert opts == [True, False, None]
    assert plan.requests["options"].tolist() == [
        '{"DrawContours":true}',
        '{"DrawContours":false}',
        "{}",
    ]


def test_one_endpoint_argument_or_several_for_every_row():
    plan = plan_requests(_manifest(2), ["classifier", "ceph-lateral-points"])
    assert plan.requests[["row", "endpoint"]].to_numpy().tolist() == [
        [1, "classifier"],
        [1, "ceph_lateral_points"],
        [2, "classifier"],
        [2, "ceph_lateral_points"],
    ]
    assert plan.requests["request_key"].is_unique


def test_options_apply_only_where_the_endpoint_has_them_with_endpoints_list():
    plan = plan_requests(
        _manifest(1, draw_contours=[True]), ["pano_segmentation", "panos_findings"]
    )
    assert [p[1].get("DrawContours") for p in plan.payloads] == [True, None]
    assert plan.problems.empty


def test_request_key_matches_an_independent_hash():
    plan = plan_requests(_manifest(1), "classifier")
    text = 'POST /classifier\n{"ImageName":"https://img.example.org/0.png","PatientID":"P0","TimeStamp":"2024-03-05"}'
    assert plan.requests["request_key"].item() == hashlib.sha256(text.encode()).hexdigest()


def test_tle_rows_need_the_eleven_query_columns():
    cols = {f"p{i:02d}": ["1"] for i in range(1, 12)}
    m = pd.DataFrame({"patient_id": ["P1"], "timestamp": ["t"], **cols})
    plan = plan_requests(m, "tle")
    assert plan.problems.empty
    name, body, query = plan.payloads[0]
    assert (name, body, list(query)) == ("tle", None, [f"p{i:02d}" for i in range(1, 12)])
    assert plan.requests["image_url"].isna().all()
    bad = plan_requests(m.drop(columns="p07"), "tle").problems
    assert bad[["row", "field"]].to_numpy().tolist() == [[1, "p07"]]


@pytest.mark.parametrize(
    ("column", "endpoints", "fields"),
    [
        ("patient_id", "classifier", ["patient_id"]),
        ("image_url", "classifier", ["image_url"]),
        ("endpoint", None, ["endpoint"]),
        ("standard_name", "frontal_segmentation", []),  # an unset option is no problem
        ("p03", "tle", ["p03"]),
    ],
)
def test_a_column_of_float_nan_is_missing_without_a_pandas_warning(column, endpoints, fields):
    # a DataFrame column built from np.nan only is float64: every cell is "missing", and the
    # checks must not lean on pandas filling booleans into it (deprecated, an error in pandas 4)
    m = _manifest(2, **{f"p{i:02d}": ["1", "1"] for i in range(1, 12)})
    m[column] = [float("nan")] * 2
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        plan = plan_requests(m, endpoints)
    assert plan.problems[["row", "field", "reason"]].to_numpy().tolist() == [
        [row, f, "missing field"] for row in (1, 2) for f in fields
    ]
    assert len(plan.requests) == (0 if fields else 2)


@pytest.mark.parametrize(
    ("frame", "kwargs", "field"),
    [
        (_manifest(1).drop(columns="timestamp"), {"endpoints": "classifier"}, "timestamp"),
        (_manifest(1), {}, "endpoint"),
        (_manifest(1, endpoint=["classifier"]), {"endpoints": "classifier"}, "endpoint"),
    ],
)
def test_structural_problems_raise_even_when_collecting(frame, kwargs, field):
    with pytest.raises(ManifestError) as err:
        plan_requests(frame, **kwargs)
    assert err.value.problems["field"].tolist() == [field]


def test_unknown_columns_are_named_in_a_warning():
    # named as words, not as a Python list repr
    with pytest.warns(DentalkitWarning, match=r"calibration column\): group, notes; the option"):
        plan_requests(_manifest(1, notes=["x"], group=["a"]), "pano_segmentation")


def test_parquet_manifest(tmp_path):
    path = tmp_path / "m.parquet"
    _manifest(3, draw_contours=[True, False, None]).to_parquet(path)
    plan = plan_requests(read_manifest(path), "pano_segmentation")
    assert [p[1].get("DrawContours") for p in plan.payloads] == [True, False, None]


def test_a_list_of_row_dicts_is_a_manifest_and_other_objects_are_refused():
    rows = [{"patient_id": "P1", "timestamp": "2024-03-05", "image_url": URL.format(1)}]
    plan = plan_requests(read_manifest(rows), "pano_segmentation")
    assert plan.requests["patient_id"].tolist() == ["P1"]
    with pytest.raises(InputError, match="list of row dicts"):
        read_manifest([("P1", "t")])


def test_tle_rows_of_different_sessions_share_one_http_request():
    cols = {f"p{i:02d}": ["1", "1", "1"] for i in range(1, 12)}
    m = pd.DataFrame({"patient_id": ["P1", "P2", "P1"], "timestamp": ["t", "t", "t"], **cols})
    plan = plan_requests(m, "tle")
    # the third row repeats the first session: a duplicate; the second is another patient
    assert plan.problems[["row", "field"]].to_numpy().tolist() == [[3, "request"]]
    reqs = plan.requests
    assert reqs["request_key"].is_unique
    http = hashlib.sha256(("GET /tle\n" + "&".join(f"p{i:02d}=1" for i in range(1, 12))).encode()).hexdigest()  # fmt: skip
    assert reqs["http_key"].tolist() == [http, http]
    assert reqs["request_key"].tolist() == [
        hashlib.sha256(f"{http}\n{p}\nt".encode()).hexdigest() for p in ("P1", "P2")
    ]
