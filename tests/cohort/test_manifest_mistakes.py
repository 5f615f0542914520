"""Manifests a user gets wrong (issue 32, item 6; issue 30, item 5).

Each mistake is named — the file, the row, the field, the value — before anything is sent:
an empty file, a header without rows, a semicolon-separated file, a file that is not UTF-8,
missing or misspelled columns (with the columns found and the closest expected names),
timestamps that are not ISO 8601 (an explicit format, or a problem per row), control
characters and over-long values (never sent).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from typer.testing import CliRunner

from dentalkit.errors import InputError, ManifestError
from dentalkit.fetch._manifest import MAX_LENGTH, plan_requests, read_manifest
from dentalkit.fetch.cohort import fetch_cohort

URL = "https://img.example.org/{}.png"
HEADER = "patient_id,timestamp,image_url,endpoint"


def _run(args, fresh):
    from dentalkit.cli import app

    env = {"DENTALKIT_API_KEY": fresh.api_key, "DENTALKIT_BASE_URL": fresh.base_url}
    cache = ["--cache", "memory"] if args[0] == "fetch" else []
    return CliRunner().invoke(app, [*args, *cache, "--no-progress"], env=env)


def _whole(err: pytest.ExceptionInfo) -> str:
    """The one reason of a ManifestError about the manifest as a whole (row null)."""
    problems = err.value.problems
    assert len(problems) == 1 and problems["row"].isna().all()
    return problems["reason"].item()


def _plan(text: str, tmp_path, name="m.csv", **kwargs):
    path = tmp_path / name
    path.write_bytes(text.encode("utf-8") if isinstance(text, str) else text)
    return plan_requests(read_manifest(path), **kwargs)


# ------------------------------------------------------------------ the file as a whole


@pytest.mark.parametrize(
    ("content", "says"), [(b"", "is empty (0 bytes)"), (b"\n \r\n\n", "is blank")]
)
def test_an_empty_or_blank_file_is_named_not_a_pandas_traceback(tmp_path, content, says):
    path = tmp_path / "m.csv"
    path.write_bytes(content)
    with pytest.raises(ManifestError) as err:
        read_manifest(path)
    assert says in _whole(err) and "m.csv" in _whole(err)


def test_a_header_without_rows_is_an_error_in_every_mode(tmp_path, fresh):
    path = tmp_path / "m.csv"
    path.write_text(HEADER + "\n\n")
    for errors in ("raise", "collect"):
        with pytest.raises(ManifestError) as err:
            fetch_cohort(path, out=tmp_path / "out", progress=False, errors=errors)
        assert "has a header ('patient_id', 'timestamp', 'image_url', 'endpoint') but no rows" in _whole(err)  # fmt: skip
    res = _run(["fetch", str(path), "--out", str(tmp_path / "out")], fresh)
    assert res.exit_code == 2 and "but no rows" in res.output  # not 0 saying nothing
    assert fresh.stats()["total"] == 0
    with pytest.raises(ManifestError, match="no rows"):
        plan_requests(pd.DataFrame(columns=["patient_id", "timestamp", "image_url"]), "classifier")


def test_a_semicolon_separated_file_is_read_and_its_decimal_commas_too(tmp_path):
    text = (
        "patient_id;timestamp;image_url;endpoint;mm_per_px;calibration_source\n"
        f"P1;2024-03-05;{URL.format(1)};pano_segmentation;0,1;dicom:PixelSpacing\n"
        f'"P;2";2024-03-05;{URL.format(2)};pano_segmentation;0.085;\n'
    )
    plan = _plan(text, tmp_path)
    assert plan.problems.empty
    assert plan.requests["patient_id"].tolist() == ["P1", "P;2"]  # a quoted separator stays
    cal = plan.calibration
    assert cal["mm_per_px"].tolist() == [0.1, 0.085]
    assert cal["calibration_source"].tolist() == ["dicom:PixelSpacing", "manifest"]


def test_a_comma_file_refuses_a_decimal_comma_it_cannot_tell_from_a_separator(tmp_path):
    text = f'{HEADER},mm_per_px\nP1,2024-03-05,{URL.format(1)},classifier,"0,1"\n'
    plan = _plan(text, tmp_path)
    assert plan.problems[["row", "field", "value"]].to_numpy().tolist() == [[1, "mm_per_px", "0,1"]]
    assert "a point as decimal separator" in plan.problems["reason"].item()


def test_tab_separated_text_and_spaces_around_column_names(tmp_path):
    text = f" patient_id \ttimestamp\timage_url\tendpoint\nP1\t2024-03-05\t{URL.format(1)}\tclassifier\n"
    plan = _plan(text, tmp_path, name="m.txt")
    assert plan.problems.empty and plan.requests["patient_id"].tolist() == ["P1"]


def test_a_file_that_is_not_utf8_names_its_line(tmp_path):
    text = f"{HEADER}\nP1,2024-03-05,{URL.format(1)},classifier\nMüller,2024-03-05,{URL.format(2)},classifier\n"  # fmt: skip
    path = tmp_path / "m.csv"
    path.write_bytes(text.encode("latin-1"))
    with pytest.raises(ManifestError) as err:
        read_manifest(path)
    assert "not UTF-8 text (byte 0xFC on line 3)" in _whole(err)
    path.write_bytes(b"\xef\xbb\xbf" + text.encode("utf-8"))  # Excel's CSV UTF-8: a BOM
    assert read_manifest(path)["patient_id"].tolist() == ["P1", "Müller"]


def test_a_line_with_more_cells_than_the_header_is_named(tmp_path):
    text = f"{HEADER}\nP1,2024-03-05,{URL.format(1)},classifier\nP2,2024,03,05,x,classifier\n"
    (tmp_path / "m.csv").write_text(text)
    with pytest.raises(ManifestError) as err:
        read_manifest(tmp_path / "m.csv")
    assert "line 3" in _whole(err) and "as many cells as the header" in _whole(err)


def test_a_column_named_twice_and_unnamed_columns(tmp_path):
    with pytest.raises(ManifestError) as err:
        _plan(f"{HEADER},patient_id\nP1,2024-03-05,{URL.format(1)},classifier,P2\n", tmp_path)
    assert "names column(s) 'patient_id' more than once" in _whole(err)
    # a spreadsheet's trailing separators: empty unnamed columns are dropped
    plan = _plan(f"{HEADER},,\nP1,2024-03-05,{URL.format(1)},classifier,,\n", tmp_path)
    assert plan.problems.empty and len(plan.requests) == 1
    with pytest.raises(ManifestError) as err:
        _plan(f"{HEADER},\nP1,2024-03-05,{URL.format(1)},classifier,x\n", tmp_path)
    assert "leaves column 5 (counting from 1) unnamed, but manifest row 1 has a value" in _whole(err)  # fmt: skip


def test_an_unreadable_parquet_manifest_is_named(tmp_path):
    path = tmp_path / "m.parquet"
    path.write_bytes(b"PAR1 this is not parquet PAR1")
    with pytest.raises(ManifestError) as err:
        read_manifest(path)
    assert "m.parquet cannot be read as Parquet" in _whole(err)


# ------------------------------------------------------------------ columns


def test_missing_columns_list_the_columns_found_and_the_closest_expected(tmp_path):
    text = "PatientID,Date,url,endpoint\nP1,2024-03-05,https://x.org/a.png,classifier\n"
    with pytest.raises(ManifestError) as err:
        _plan(text, tmp_path)
    got = dict(zip(err.value.problems["field"], err.value.problems["reason"], strict=True))
    found = "the manifest's columns are 'PatientID', 'Date', 'url', 'endpoint'"
    assert got["patient_id"] == f"missing column; {found}; did you mean 'PatientID'? Rename it patient_id"  # fmt: skip
    assert got["timestamp"] == f"missing column; {found}; did you mean 'Date'? Rename it timestamp"
    assert len(got) == 2


def test_a_misspelled_image_url_column_is_an_error_naming_the_closest(tmp_path):
    text = "patient_id,timestamp,image_ulr,endpoint\nP1,2024-03-05,https://x.org/a.png,classifier\n"
    with pytest.raises(ManifestError) as err:
        _plan(text, tmp_path)
    assert err.value.problems["field"].tolist() == ["image_url"]
    assert "did you mean 'image_ulr'? Rename it image_url" in _whole(err)
    assert "manifest row 1" in _whole(err)


def test_a_first_line_of_data_is_recognised_as_a_missing_header(tmp_path):
    with pytest.raises(ManifestError) as err:
        _plan(f"P1,2024-03-05,{URL.format(1)},classifier\n", tmp_path)
    got = err.value.problems.set_index("field")["reason"]
    assert "the first line looks like data" in got["patient_id"]
    assert "the first line looks like data" in got["timestamp"]


@pytest.mark.parametrize(
    ("column", "meant"),
    [
        ("draw_contour", "draw_contours"),
        ("Draw-Contours", "draw_contours"),
        ("mm_per_pixel", "mm_per_px"),
        ("calibration source", "calibration_source"),
        ("standardname", "standard_name"),
    ],
)
def test_a_misspelled_optional_column_is_an_error_not_an_ignored_column(column, meant):
    m = pd.DataFrame(
        {"patient_id": ["P1"], "timestamp": ["2024-03-05"], "image_url": [URL.format(1)]}
    ).assign(**{column: ["1"]})
    with pytest.raises(ManifestError) as err:
        plan_requests(m, "pano_segmentation")
    assert err.value.problems["field"].tolist() == [column]
    assert f"not a manifest column; did you mean {meant}?" in _whole(err)


# ------------------------------------------------------------------ timestamps


def test_a_timestamp_that_is_not_iso_is_refused_naming_row_and_value(tmp_path, fresh):
    path = tmp_path / "m.csv"
    path.write_text(
        f"{HEADER}\nP1,2024-03-05,{URL.format(1)},classifier\n"
        f"P2,05/03/2024,{URL.format(2)},classifier\n"
    )
    plan = plan_requests(read_manifest(path))
    assert plan.problems[["row", "field", "value"]].to_numpy().tolist() == [
        [2, "timestamp", "05/03/2024"]
    ]
    assert "not an ISO 8601 date" in plan.problems["reason"].item()
    assert "--timestamp-format '%d/%m/%Y'" in plan.problems["reason"].item()
    res = _run(["fetch", str(path), "--out", str(tmp_path / "out"), "--errors", "raise"], fresh)
    assert res.exit_code == 2 and "manifest row 2 (CSV line 3): timestamp='05/03/2024'" in res.output  # fmt: skip
    assert fresh.stats()["total"] == 0


def test_an_explicit_timestamp_format_reads_them_and_the_store_records_it(tmp_path, fresh):
    path = tmp_path / "m.csv"
    path.write_text(
        f"{HEADER}\nP1,05/03/2024,{URL.format(1)},classifier\n"
        f"P2,2024-03-05,{URL.format(2)},classifier\n"
    )
    out = tmp_path / "out"
    res = _run(["fetch", str(path), "--out", str(out), "--timestamp-format", "%d/%m/%Y"], fresh)
    assert res.exit_code == 1, res.output  # the ISO row does not match the format given
    problems = pd.read_csv(out / "manifest-problems.csv", dtype=str)
    assert problems[["row", "field", "value"]].to_numpy().tolist() == [["2", "timestamp", "2024-03-05"]]  # fmt: skip
    assert "does not match the timestamp format '%d/%m/%Y'" in problems["reason"].item()
    from dentalkit.fetch import read_responses

    got = read_responses(out)
    assert got["timestamp"].tolist() == ["05/03/2024"]  # sent and kept verbatim
    assert got["session_time"].tolist() == [pd.Timestamp("2024-03-05", tz="UTC")]
    assert got.attrs["timestamp_format"] == "%d/%m/%Y"
    # dentalkit tables reads session_time with the recorded format: no problem row
    res = _run(["tables", str(out), "--out", str(tmp_path / "tables")], fresh)
    assert res.exit_code == 0, res.output
    table = pd.read_parquet(tmp_path / "tables" / "classifications.parquet")
    assert table["session_time"].tolist() == [pd.Timestamp("2024-03-05", tz="UTC")]
    # another format into this store is refused; the recorded one is used when none is given
    res = _run(["fetch", str(path), "--out", str(out), "--timestamp-format", "%m/%d/%Y"], fresh)
    assert res.exit_code == 2 and "holds answers whose timestamps were read as '%d/%m/%Y'" in res.output  # fmt: skip
    rep = fetch_cohort(path, out=out, progress=False, errors="collect", client=_client(fresh))
    assert rep.already_stored == 1 and rep.problems["row"].tolist() == [2]


def _client(fresh):
    from dentalkit.fetch.client import Client

    return Client(fresh.base_url, api_key=fresh.api_key, cache="memory")


def test_a_format_may_change_while_the_store_holds_no_answer(tmp_path, fresh):
    m = pd.DataFrame(
        {"patient_id": ["P1"], "timestamp": ["05/03/2024"], "image_url": [URL.format(1)]}
    )
    out = tmp_path / "out"
    first = fetch_cohort(m, "classifier", out, client=_client(fresh), progress=False, errors="collect")  # fmt: skip
    assert first.stored == 0 and first.problems["field"].tolist() == ["timestamp"]
    again = fetch_cohort(
        m, "classifier", out, client=_client(fresh), progress=False, timestamp_format="%d/%m/%Y"
    )
    assert again.stored == 1


def test_tle_timestamps_are_labels_not_dates():
    cols = {f"p{i:02d}": ["1"] for i in range(1, 12)}
    plan = plan_requests(pd.DataFrame({"patient_id": ["P1"], "timestamp": ["tle"], **cols}), "tle")
    assert plan.problems.empty


def test_a_bad_timestamp_format_is_refused_before_anything():
    with pytest.raises(InputError, match="has no year"):
        plan_requests(pd.DataFrame({"patient_id": ["P1"]}), "classifier", timestamp_format="%d/%m")


# ------------------------------------------------------------------ control characters, lengths


@pytest.mark.parametrize(
    ("field", "value", "shown", "what"),
    [
        ("patient_id", "P\x001", "P\\x001", "U+0000 (NUL) at position 2"),
        ("patient_id", "P1\x1b[31m", "P1\\x1b[31m", "U+001B (ESC) at position 3"),
        ("timestamp", "2024-03-05\n", "2024-03-05\\n", "U+000A (LF) at position 11"),
        ("timestamp", "2024-03-05\x85", "2024-03-05\\x85", "U+0085 at position 11"),
        ("standard_name", "ICON\x07", "ICON\\x07", "U+0007 at position 5"),
        ("image_url", URL.format("a\tb"), URL.format("a\\tb"), "U+0009 (TAB)"),
        ("patient_id", "P\u20281", "P\\u20281", "U+2028 at position 2"),
    ],
)
def test_control_characters_are_manifest_problems_and_never_sent(
    tmp_path, fresh, field, value, shown, what
):
    good = {
        "patient_id": "P9",
        "timestamp": "2024-03-05",
        "image_url": URL.format(9),
        "endpoint": "frontal_segmentation",
    }
    rows = [{**good, field: value}, {**good, "patient_id": "P8"}]
    rep = fetch_cohort(rows, out=tmp_path / "out", client=_client(fresh), progress=False, errors="collect")  # fmt: skip
    got = rep.problems
    assert got[["row", "field", "value"]].to_numpy().tolist() == [[1, field, shown]]
    assert got["reason"].item().startswith(f"control character {what}")
    assert rep.stored == 1 and fresh.stats()["total"] == 1  # only the good row was sent
    # the problems table is safe to export: the key columns hold the escaped text too
    assert not got.astype(str).apply(lambda c: c.str.contains("[\x00-\x1f\x7f]")).any().any()


@pytest.mark.parametrize(
    ("field", "length"),
    [
        ("patient_id", MAX_LENGTH["patient_id"] + 1),
        ("patient_id", 1_048_576),  # the sandbox answered 413 to these
        ("timestamp", MAX_LENGTH["timestamp"] + 1),
        ("image_url", MAX_LENGTH["image_url"] + 1),
        ("standard_name", MAX_LENGTH["option"] + 1),
    ],
)
def test_over_long_values_are_manifest_problems_and_never_sent(tmp_path, fresh, field, length):
    good = {
        "patient_id": "P9",
        "timestamp": "2024-03-05",
        "image_url": URL.format(9),
        "endpoint": "frontal_segmentation",
    }
    filler = {"timestamp": "2024-03-05T" + "0" * length, "image_url": URL.format("x" * length)}
    value = filler.get(field, "x" * length)[:length]
    rep = fetch_cohort([{**good, field: value}], out=tmp_path / "out", client=_client(fresh), progress=False, errors="collect")  # fmt: skip
    got = rep.problems
    assert got[["row", "field"]].to_numpy().tolist() == [[1, field]]
    limit = MAX_LENGTH.get(field, MAX_LENGTH["option"])
    assert got["reason"].item() == f"{length:,} characters long; at most {limit:,} are sent (docs/manifest.md)"  # fmt: skip
    assert len(got["value"].item()) <= 120 and len(str(got["patient_id"].item())) <= 256
    assert fresh.stats()["total"] == 0


def test_values_at_the_limits_are_sent(tmp_path, fresh):
    row = {
        "patient_id": "P" * MAX_LENGTH["patient_id"],
        "timestamp": "2024-03-05T10:00:00.123456789+02:00",
        "image_url": URL.format("x" * (MAX_LENGTH["image_url"] - len(URL.format("")))),
        "endpoint": "classifier",
    }
    rep = fetch_cohort([row], out=tmp_path / "out", client=_client(fresh), progress=False)
    assert rep.stored == 1 and rep.problems.empty


def test_control_characters_in_tle_query_values_and_calibration_source(fresh):
    cols = {f"p{i:02d}": ["1"] for i in range(1, 12)}
    tle = pd.DataFrame({"patient_id": ["P1"], "timestamp": ["tle"], **cols}).assign(p03="1\x00")
    assert plan_requests(tle, "tle").problems[["field", "value"]].to_numpy().tolist() == [
        ["p03", "1\\x00"]
    ]
    m = pd.DataFrame(
        {
            "patient_id": ["P1"],
            "timestamp": ["2024-03-05"],
            "image_url": [URL.format(1)],
            "mm_per_px": ["0.1"],
            "calibration_source": ["dicom\x1b"],
        }
    )
    assert plan_requests(m, "classifier").problems["field"].tolist() == ["calibration_source"]


# ------------------------------------------------------------------ calibration cells


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ("0", "finite number > 0"),
        ("-0.1", "finite number > 0"),
        ("inf", "finite number > 0"),
        (float("inf"), "finite number > 0"),
        ("abc", "not a number"),
        (True, "not a number"),
    ],
)
def test_a_bad_mm_per_px_is_a_problem_of_its_row(value, says):
    m = pd.DataFrame(
        {
            "patient_id": ["P1", "P2"],
            "timestamp": ["2024-03-05"] * 2,
            "image_url": [URL.format(1), URL.format(2)],
            "mm_per_px": pd.Series([value, 0.1], dtype=object),
        }
    )
    plan = plan_requests(m, "pano_segmentation")
    assert plan.problems[["row", "field"]].to_numpy().tolist() == [[1, "mm_per_px"]]
    assert says in plan.problems["reason"].item()
    assert plan.calibration[["patient_id", "mm_per_px"]].to_numpy().tolist() == [["P2", 0.1]]


def test_calibration_is_not_sent_and_not_part_of_the_request_key():
    base = pd.DataFrame(
        {"patient_id": ["P1"], "timestamp": ["2024-03-05"], "image_url": [URL.format(1)]}
    )
    plain = plan_requests(base, "classifier")
    scaled = plan_requests(base.assign(mm_per_px=[0.1], calibration_source=["x"]), "classifier")
    assert scaled.requests["request_key"].tolist() == plain.requests["request_key"].tolist()
    assert scaled.payloads == plain.payloads
    # a scale on a /tle row (no image) is a problem with an endpoint column
    cols = {f"p{i:02d}": ["1"] for i in range(1, 12)}
    tle = pd.DataFrame(
        {
            "patient_id": ["P1"],
            "timestamp": ["tle"],
            "endpoint": ["tle"],
            "mm_per_px": [0.1],
            **cols,
        }
    )
    assert plan_requests(tle).problems[["field", "reason"]].to_numpy().tolist() == [
        ["mm_per_px", "mm_per_px applies to images; /tle has none"]
    ]


def test_the_docs_page_lists_every_manifest_column_and_limit():
    from pathlib import Path

    from dentalkit.fetch._manifest_columns import KNOWN

    page = (Path(__file__).resolve().parents[2] / "docs" / "manifest.md").read_text("utf-8")
    missing = [c for c in sorted(KNOWN) if f"`{c}`" not in page and c not in ("p02", "p03", "p04", "p05", "p06", "p07", "p08", "p09", "p10")]  # fmt: skip
    assert not missing, f"docs/manifest.md does not list the manifest column(s) {missing}"
    for field, limit in MAX_LENGTH.items():
        assert f"{limit:,} characters" in page, (field, limit)


def _sigv4(signed_at: datetime, seconds: int) -> str:
    return (
        f"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date={signed_at:%Y%m%dT%H%M%SZ}"
        f"&X-Amz-Expires={seconds}&X-Amz-SignedHeaders=host&X-Amz-Signature=00ff"
    )


def test_an_expired_presigned_link_is_a_problem_of_its_row_and_never_sent(tmp_path, fresh):
    now = datetime.now(UTC).replace(microsecond=0)
    past = now - timedelta(hours=73)  # signed for 72 h, three days and an hour ago
    sas_end = (now - timedelta(minutes=5)).strftime("%Y-%m-%dT%H:%M:%SZ")
    m = pd.DataFrame(
        {
            "patient_id": ["P1", "P2", "P3", "P4"],
            "timestamp": ["2024-03-05"] * 4,
            "image_url": [
                URL.format(1) + _sigv4(now, 72 * 3600),  # fresh
                URL.format(2) + _sigv4(past, 72 * 3600),  # expired an hour ago
                URL.format(3) + f"?sv=2022-11-02&sr=b&sp=r&se={sas_end}&sig=Zm9v",  # Azure SAS
                URL.format(4) + "?se=2000-01-01",  # no sig: not a SAS token, not checked
            ],
        }
    )
    plan = plan_requests(m, "classifier")
    assert plan.problems[["row", "field"]].to_numpy().tolist() == [
        [2, "image_url"],
        [3, "image_url"],
    ]
    expired_at = past + timedelta(hours=72)
    assert f"expired at {expired_at:%Y-%m-%d %H:%M} UTC" in plan.problems["reason"].iloc[0]
    assert "sign the links again" in plan.problems["reason"].iloc[1]
    assert plan.requests["patient_id"].tolist() == ["P1", "P4"]
    path = tmp_path / "m.csv"
    m.assign(endpoint="classifier").to_csv(path, index=False)
    res = _run(["fetch", str(path), "--out", str(tmp_path / "out"), "--errors", "raise"], fresh)
    assert res.exit_code == 2 and "manifest row 2" in res.output and "expired" in res.output
    assert fresh.stats()["total"] == 0
