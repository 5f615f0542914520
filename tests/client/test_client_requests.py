"""Request building, request keys, backoff and Retry-After parsing (no network)."""

from __future__ import annotations

import hashlib
import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from dentalkit.endpoints import TLE_PARAMETERS, get_endpoint
from dentalkit.errors import InputError
from dentalkit.fetch._build import build_body, build_query
from dentalkit.fetch._http import backoff_delay, parse_retry_after, request_key

TLE = {q.name: "1" for q in TLE_PARAMETERS}


def test_request_key_is_sha256_of_method_path_and_sorted_compact_body():
    body = {"TimeStamp": "2024-03-05", "PatientID": "P1", "ImageName": "https://h/x.png"}
    text = 'POST /classifier\n{"ImageName":"https://h/x.png","PatientID":"P1","TimeStamp":"2024-03-05"}'
    assert request_key("POST", "/classifier", body) == hashlib.sha256(text.encode()).hexdigest()


def test_request_key_of_a_query_uses_the_sorted_query():
    text = "GET /tle\np01=14&p02=F"
    assert (
        request_key("GET", "/tle", query={"p02": "F", "p01": "14"})
        == hashlib.sha256(text.encode()).hexdigest()
    )


def test_request_key_depends_on_content_not_order():
    a = {"PatientID": "P1", "TimeStamp": "t", "ImageName": "u", "DrawContours": True}
    b = dict(reversed(list(a.items())))
    assert request_key("POST", "/pano-segmentation", a) == request_key(
        "POST", "/pano-segmentation", b
    )
    assert request_key("POST", "/pano-segmentation", a) != request_key(
        "POST", "/pano-segmentation", {**a, "DrawContours": False}
    )
    assert request_key("POST", "/pano-segmentation", a) != request_key("POST", "/pano-findings", a)


def test_build_body_accepts_python_and_wire_option_names():
    ep = get_endpoint("frontal_segmentation")
    body = build_body(
        ep, "P1", "t", "https://h/x.png", {"standard_name": "ICON", "PlotLabels": True}
    )
    assert body == {
        "PatientID": "P1",
        "TimeStamp": "t",
        "ImageName": "https://h/x.png",
        "StandardName": "ICON",
        "PlotLabels": True,
    }


def test_build_body_leaves_unset_options_out():
    ep = get_endpoint("pano_segmentation")
    assert "DrawContours" not in build_body(ep, "P1", "t", "https://h/x", {"draw_contours": None})


@pytest.mark.parametrize(
    ("args", "match"),
    [
        (("", "t", "https://h/x", {}), "patient_id"),
        (("P1", None, "https://h/x", {}), "timestamp"),
        (("P1", "t", "/data/x.png", {}), "http"),
        (("P1", "t", "https://h/x", {"draw_contour": True}), "no optional field"),
        (("P1", "t", "https://h/x", {"draw_contours": "yes"}), "boolean"),
        (("P1", "t", "https://h/x", {"draw_contours": 1}), "boolean"),
    ],
)
def test_build_body_rejects_bad_arguments_naming_the_field(args, match):
    with pytest.raises(InputError, match=match) as err:
        build_body(get_endpoint("pano_segmentation"), *args)
    assert "pano_segmentation" in str(err.value)


def test_build_query_requires_all_eleven_strings():
    ep = get_endpoint("tle")
    assert list(build_query(ep, dict(reversed(list(TLE.items()))))) == list(TLE)
    with pytest.raises(InputError, match="p11"):
        build_query(ep, {k: v for k, v in TLE.items() if k != "p11"})
    with pytest.raises(InputError, match=r"p06=4\.5"):
        build_query(ep, {**TLE, "p06": 4.5})
    with pytest.raises(InputError, match="p12"):
        build_query(ep, {**TLE, "p12": "1"})


def test_retry_after_seconds_and_http_date():
    assert parse_retry_after("7") == 7.0
    assert parse_retry_after(" 0 ") == 0.0
    # 07:28:00 GMT is 1445412480 s after the epoch (21 Oct 2015); 'now' is 25 s earlier
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412455.0) == 25.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412490.0) == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None


@given(
    attempt=st.integers(0, 20),
    base=st.floats(0.001, 5),
    cap=st.floats(0.01, 60),
    retry_after=st.none() | st.floats(0, 120),
    seed=st.integers(0, 2**32 - 1),
)
def test_backoff_is_full_jitter_capped_and_honours_retry_after(
    attempt, base, cap, retry_after, seed
):
    delay = backoff_delay(
        attempt, base=base, cap=cap, retry_after=retry_after, rng=random.Random(seed)
    )
    assert 0.0 <= delay <= cap
    if retry_after is None:
        assert delay <= base * 2**attempt
    else:
        assert delay >= min(retry_after, cap)


def test_backoff_spreads_over_the_whole_window():
    rng = random.Random(1)
    draws = [backoff_delay(3, base=0.5, cap=30, rng=rng) for _ in range(2000)]
    # full jitter over [0, 0.5 * 2**3 = 4]: mean 2, both ends reached
    assert 1.85 < sum(draws) / len(draws) < 2.15
    assert min(draws) < 0.1 and max(draws) > 3.9


_json_values = st.one_of(st.text(), st.booleans())


@given(st.dictionaries(st.text(min_size=1), _json_values, min_size=1, max_size=8), st.randoms())
def test_request_key_is_order_free_and_matches_stdlib_json(body, rnd):
    import json

    items = list(body.items())
    rnd.shuffle(items)
    shuffled = dict(items)
    # independent canonical form: the standard library's sorted, compact, unescaped JSON
    text = json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    expected = hashlib.sha256(f"POST /classifier\n{text}".encode()).hexdigest()
    assert request_key("POST", "/classifier", shuffled) == expected
