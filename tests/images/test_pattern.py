"""File-name patterns and dates (pure functions; expected values read off the names)."""

from __future__ import annotations

import pytest

from dentalkit.errors import InputError
from dentalkit.images import load_kinds
from dentalkit.images._kinds import resolve_kinds
from dentalkit.images._match import Problems, from_pattern
from dentalkit.images._pattern import compile_pattern, parse_date


def _rows(files, pattern, date_format=None, kinds=None):
    problems = Problems()
    rows = from_pattern(
        files, pattern, kinds=resolve_kinds(kinds), date_format=date_format, problems=problems
    )
    return rows, {r["path"]: r["reason"] for r in problems.records}


def test_fields_take_what_they_accept_so_underscored_names_split_right():
    rows, problems = _rows(
        ["AB_12_20240305_pano.jpg", "AB_12_20240305_lateral_ceph.jpg"],
        "{patient_id}_{date}_{kind}.jpg",
    )
    assert problems == {}
    assert rows[["patient_id", "date", "kind"]].to_numpy().tolist() == [
        ["AB_12", "2024-03-05", "pano"],
        ["AB_12", "2024-03-05", "lateral_ceph"],
    ]


def test_a_repeated_field_must_repeat_its_text():
    rows, problems = _rows(
        ["P7/P7_2024-01-02_tmj.png", "P7/P8_2024-01-02_tmj.png"],
        "{patient_id}/{patient_id}_{date}_{kind}.png",
    )
    assert rows["file"].tolist() == ["P7/P7_2024-01-02_tmj.png"]
    assert "does not match" in problems["P7/P8_2024-01-02_tmj.png"]


def test_wildcards_endpoints_and_declared_kinds():
    rows, problems = _rows(
        ["2024/b3/P1/20240102/opg.png", "x/P2/20240102/pano-segmentation.png"],
        "{**}/{patient_id}/{date}/{kind}.png",
        kinds={"opg": "panos_findings"},
    )
    assert problems == {} and rows["kind"].tolist() == ["opg", "pano-segmentation"]
    rows, _ = _rows(["P1/pano-segmentation.png"], "{patient_id}/{endpoint}.png")
    assert rows["endpoint"].tolist() == ["pano_segmentation"]


def test_dates_in_another_form_need_date_format():
    rows, problems = _rows(["P1/05.03.2024/pano.png"], "{patient_id}/{date}/{kind}.png")
    assert rows.empty and "date_format" in problems["P1/05.03.2024/pano.png"]
    rows, problems = _rows(["P1/05.03.2024/pano.png"], "{patient_id}/{date}/{kind}.png", "%d.%m.%Y")
    assert problems == {} and rows["date"].tolist() == ["2024-03-05"]
    rows, _ = _rows(["P1/20240305-1015/pano.png"], "{patient_id}/{date}/{kind}.png", "%Y%m%d-%H%M")
    assert rows["date"].tolist() == ["2024-03-05T10:15:00"]


@pytest.mark.parametrize(
    ("text", "fmt", "iso"),
    [
        ("2024-03-05", None, "2024-03-05"),
        ("20240305", None, "2024-03-05"),
        ("2024-03-05T10:00:00Z", None, "2024-03-05T10:00:00+00:00"),
        ("2024-02-30", None, None),  # no such day
        ("05/03/2024", None, None),
        ("05/03/2024", "%d/%m/%Y", "2024-03-05"),
    ],
)
def test_parse_date(text, fmt, iso):
    assert parse_date(text, fmt) == iso


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("", "empty"),
        ("{patient}/{kind}.png", "unknown field {patient}"),
        ("{patient_id}{date}.png", "need literal text"),
        ("/{patient_id}/{kind}.png", "relative to the source"),
        ("{patient_id}/{kind}_{endpoint}.png", "not both"),
    ],
)
def test_malformed_patterns_are_refused(pattern, message):
    with pytest.raises(InputError, match=message):
        compile_pattern(pattern, kinds=["pano"], endpoints=["tmj_xsectional"], date_format=None)


def test_shipped_kinds_agree_with_the_sandbox_images_of_each_endpoint():
    # the sandbox (its own table) says which image kind each endpoint takes; the shipped
    # kinds must send that kind to that endpoint
    from dentalkit.endpoints import image_endpoints
    from dentalkit.sandbox._images import default_image_kind

    kinds = load_kinds()
    for ep in image_endpoints():
        if ep.name == "classifier":  # any image: no kind sends everything to it
            continue
        assert ep.name in kinds[default_image_kind(ep)], ep.name
    with pytest.raises(InputError, match="not an endpoint"):
        resolve_kinds({"x": "nope"})
    with pytest.raises(InputError, match="takes no image"):
        resolve_kinds({"x": "tle"})
