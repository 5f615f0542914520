"""tables(): the responses table as input — rows, endpoints, session key, echo, modes."""

from __future__ import annotations

import json
import warnings

import numpy as np
import orjson
import pandas as pd
import pytest

from dentalkit import convert
from dentalkit.convert import schemas
from dentalkit.errors import (
    DentalkitWarning,
    EchoMismatchWarning,
    InputError,
    ResponseFormatError,
)
from tests.convert._helpers import PID, TS, all_endpoints_rows, frame, load, row

pytestmark = pytest.mark.filterwarnings("error::dentalkit.errors.DentalkitWarning")

TABLES = [
    "landmarks",
    "teeth",
    "tooth_keypoints",
    "arch_points",
    "findings",
    "finding_counts",
    "classifications",
    "tmj",
    "tle",
    "problems",
]


def test_every_table_from_one_response_per_endpoint(all_endpoints_frame):
    out = convert.tables(all_endpoints_frame)
    assert list(out) == TABLES
    for name, df in out.items():
        schemas.check(df, name)
    counts = {k: len(v) for k, v in out.items()}
    assert counts == {
        "landmarks": 169 + 118,
        "teeth": 3 + 2 + 2 + 1,
        "tooth_keypoints": 4 + 2,
        "arch_points": 3,
        "findings": 3,
        "finding_counts": 2,
        "classifications": 1,
        "tmj": 1,
        "tle": 1,
        "problems": 0,
    }


def test_empty_responses_give_every_table_empty_with_its_schema():
    out = convert.tables(frame())
    for name, df in out.items():
        assert len(df) == 0
        schemas.check(df, name)


def test_endpoint_by_name_path_or_slug():
    body = load("classifier")
    out = convert.classifications(
        frame(row("classifier", body), row("/classifier", body), row("classifier", body))
    )
    assert out["endpoint"].astype(str).tolist() == ["classifier"] * 3


def test_failed_fetches_are_skipped_without_problems():
    good = row("classifier", load("classifier"), status_code=200, error=None)
    unauthorised = row(
        "classifier",
        '{"error":"Unauthorized","message":"Invalid or missing API key","statusCode":401}',
        status_code=401,
        error="Unauthorized",
    )
    timeout = row("classifier", None, status_code=None, error="timeout after 3 retries")
    out = convert.tables(frame(good, unauthorised, timeout))
    assert len(out["classifications"]) == 1 and len(out["problems"]) == 0


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"endpoint": "ceph-sideways-points"}, "endpoint"),
        ({"endpoint": None}, "endpoint"),
        ({"patient_id": None}, "patient_id"),
        ({"timestamp": None}, "timestamp"),
        ({"patient_id": 17}, "patient_id"),
    ],
)
def test_bad_request_rows(change, field):
    bad = row("classifier", load("classifier")) | change
    good = row("classifier", load("classifier"))
    responses = frame(good, bad)
    responses["patient_id"] = responses["patient_id"].astype(object)
    with pytest.raises(InputError, match=rf"responses row 1 \(0-based position\): {field}"):
        convert.tables(responses)
    out = convert.tables(responses, errors="collect")
    assert len(out["classifications"]) == 1
    p = out["problems"]
    assert p["table"].tolist() == ["responses"] and p["path"].tolist() == [field]
    assert p["row"].tolist() == [1] and p["reason"][0].endswith("(row skipped)")


def test_bodies_as_text_bytes_or_dict_convert_identically():
    body = load("ceph_lateral_points")
    as_text = convert.landmarks(frame(row("ceph_lateral_points", json.dumps(body))))
    as_bytes = convert.landmarks(frame(row("ceph_lateral_points", orjson.dumps(body))))
    as_dict = frame(row("ceph_lateral_points", "{}"))
    as_dict["body"] = pd.Series([body], dtype=object)
    pd.testing.assert_frame_equal(as_text, as_bytes)
    pd.testing.assert_frame_equal(as_text, convert.landmarks(as_dict))


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ('{"Version": "1", ', "not valid JSON"),
        ("[1, 2]", "JSON array"),
        ("", "not valid JSON"),
    ],
)
def test_unparsable_bodies(body, reason):
    with pytest.raises(ResponseFormatError, match=reason) as info:
        convert.tables(frame(row("classifier", body)))
    assert info.value.path == "$" and info.value.row == 0


def test_null_body_on_a_successful_row():
    responses = frame(row("classifier", None))
    with pytest.raises(ResponseFormatError, match="empty"):
        convert.tables(responses)


def test_echo_mismatch_warns_reports_and_keeps_the_request_value():
    body = load("classifier")
    body["PatientID"] = "P999"
    body["TimeStamp"] = "2020-01-01"
    with pytest.warns(EchoMismatchWarning, match="1 response"):
        out = convert.tables(frame(row("classifier", body)))
    c = out["classifications"]
    assert c["patient_id"].tolist() == [PID] and c["timestamp"].tolist() == [TS]
    p = out["problems"]
    assert p["path"].tolist() == ["$.PatientID", "$.TimeStamp"]
    assert all(r.endswith("(rows kept)") for r in p["reason"])


def test_echo_absent_is_fine_and_echo_of_wrong_type_is_malformed():
    body = load("classifier")
    del body["PatientID"], body["TimeStamp"]
    assert len(convert.classifications(frame(row("classifier", body)))) == 1
    body["PatientID"] = 42
    with pytest.raises(ResponseFormatError) as info:
        convert.classifications(frame(row("classifier", body)))
    assert info.value.path == "$.PatientID"


@pytest.mark.parametrize(
    ("timestamp", "expected"),
    [
        ("2024-03-01T09:30:00Z", "2024-03-01 09:30:00+00:00"),
        ("2024-03-01T09:30:00", "2024-03-01 09:30:00+00:00"),  # naive = UTC
        ("2024-03-01T11:30:00+02:00", "2024-03-01 09:30:00+00:00"),
        ("2024-03-01", "2024-03-01 00:00:00+00:00"),
        ("2024-03-01T09:30:00.250Z", "2024-03-01 09:30:00.250000+00:00"),
        ("01/03/2024", None),  # not ISO 8601: ambiguous, never guessed
        ("session-1", None),
        ("1709285400", None),
        ("9999-12-31T00:00:00Z", None),  # beyond datetime64[ns]
    ],
)
def test_session_time_parses_iso_8601_only(timestamp, expected):
    responses = frame(row("classifier", _echo(timestamp), timestamp=timestamp))
    if expected is None:  # never a silent NaT: a problem row, and the one-table call warns
        with pytest.warns(DentalkitWarning, match="timestamp is not an ISO 8601 date"):
            c = convert.classifications(responses)
        probs = convert.tables(responses, include=["classifications"])["problems"]
        assert probs[["table", "row", "field", "value", "severity"]].to_numpy().tolist() == [
            ["responses", 0, "timestamp", timestamp, "warning"]
        ]
        assert probs["reason"].item().endswith("session_time is missing; give its format with timestamp_format= (dentalkit tables --timestamp-format) (rows kept)")  # fmt: skip
    else:
        c = convert.classifications(responses)
    got = c["session_time"].iloc[0]
    assert str(c["session_time"].dtype) == "datetime64[ns, UTC]"
    if expected is None:
        assert pd.isna(got)
    else:
        assert got == pd.Timestamp(expected)
    assert c["timestamp"].iloc[0] == timestamp  # kept verbatim


@pytest.mark.parametrize(
    ("timestamp", "fmt", "expected"),
    [
        ("05/03/2024", "%d/%m/%Y", "2024-03-05 00:00:00+00:00"),
        ("05/03/2024", "%m/%d/%Y", "2024-05-03 00:00:00+00:00"),
        ("05.03.2024 14:30", "%d.%m.%Y %H:%M", "2024-03-05 14:30:00+00:00"),  # naive = UTC
        ("05/03/2024 14:30 +0200", "%d/%m/%Y %H:%M %z", "2024-03-05 12:30:00+00:00"),
    ],
)
def test_session_time_reads_the_timestamp_format_given_or_recorded(timestamp, fmt, expected):
    responses = frame(row("classifier", _echo(timestamp), timestamp=timestamp))
    out = convert.tables(responses, include=["classifications"], timestamp_format=fmt)
    assert out["classifications"]["session_time"].item() == pd.Timestamp(expected)
    assert len(out["problems"]) == 0
    responses.attrs["timestamp_format"] = fmt  # as dentalkit.fetch.read_responses sets it
    again = convert.tables(responses, include=["classifications"])
    assert again["classifications"]["session_time"].item() == pd.Timestamp(expected)
    # an ISO timestamp is refused by a format it does not match: a problem, not a guess
    iso = frame(row("classifier", _echo("2024-03-05"), timestamp="2024-03-05"))
    probs = convert.tables(iso, include=["classifications"], timestamp_format=fmt)["problems"]
    assert probs["reason"].item().startswith(f"timestamp does not match timestamp_format {fmt!r}")


@pytest.mark.parametrize(
    ("fmt", "says"),
    [("%d/%m", "has no year"), ("%d/%m/%Y%Q", "not a strptime format"), (5, "strptime")],
)
def test_a_timestamp_format_without_a_year_or_with_a_bad_directive_is_refused(fmt, says):
    responses = frame(row("classifier", _echo("05/03/2024"), timestamp="05/03/2024"))
    with pytest.raises(InputError, match=says):
        convert.tables(responses, timestamp_format=fmt)


def _echo(timestamp: str) -> dict:
    body = load("classifier")
    body["TimeStamp"] = timestamp
    return body


def test_collect_mode_drops_only_the_bad_response():
    bad = load("classifier")
    del bad["Classification"]
    rows = [row("classifier", load("classifier"), patient_id=f"P{i}") for i in range(3)]
    for i, r in enumerate(rows):
        r["body"] = json.dumps(load("classifier") | {"PatientID": f"P{i}"})
    rows.insert(1, row("classifier", bad, patient_id="PX"))
    out = convert.tables(frame(*rows), errors="collect")
    assert out["classifications"]["patient_id"].tolist() == ["P0", "P1", "P2"]
    p = out["problems"]
    assert pd.isna(p["value"].iloc[0])  # a missing field has no value to show
    assert p.iloc[0].drop("value").to_dict() == {
        "table": "classifications",
        "endpoint": "classifier",
        "patient_id": "PX",
        "timestamp": TS,
        "row": 1,
        "field": "body",
        "path": "$.Classification",
        "reason": "required field 'Classification' is missing (response dropped)",
        "severity": "error",
    }


def test_notes_of_a_dropped_response_are_withdrawn():
    body = load("ceph_lateral_points")
    body["PatientID"] = "someone else"  # an echo note …
    body["Results"]["Later_3"]["x_coordinate"] = "3"  # … then the response is dropped
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = convert.tables(frame(row("ceph_lateral_points", body)), errors="collect")
    assert out["problems"]["path"].tolist() == ["$.Results.Later_3.x_coordinate"]


def test_per_table_functions_warn_about_problems():
    body = load("classifier")
    body["Classification"]["confidence"] = 7
    with pytest.warns(DentalkitWarning, match="1 problem"):
        convert.classifications(frame(row("classifier", body)))


def test_argument_errors():
    with pytest.raises(InputError, match="'raise', 'collect', 'warn'"):
        convert.tables(frame(), errors="skip")
    with pytest.raises(InputError, match="DataFrame"):
        convert.tables([{"endpoint": "tle"}])
    with pytest.raises(InputError, match=r"lacks column\(s\) \['body'\]"):
        convert.tables(pd.DataFrame({"endpoint": [], "patient_id": [], "timestamp": []}))


def test_row_numbers_are_positions_in_the_responses_table():
    rows = all_endpoints_rows()
    bad = load("tmj_xsectional")
    bad["Results"] = {"Finding": 3}
    rows.append(row("tmj_xsectional", bad))
    responses = frame(*rows)
    responses.index = np.arange(100, 100 + len(responses))  # labels are not positions
    with pytest.raises(ResponseFormatError) as info:
        convert.tables(responses)
    assert info.value.row == len(rows) - 1


def test_inputs_are_not_modified(all_endpoints_frame):
    before = all_endpoints_frame.copy(deep=True)
    convert.tables(all_endpoints_frame)
    pd.testing.assert_frame_equal(before, all_endpoints_frame)
