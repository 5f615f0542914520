"""Answers larger than ``KEEP_PARSE_BYTES`` (issue 30, item 4): parsed once, after their
bytes are released, by Python's ``json`` (which parses a ``str`` without copying it), with
orjson's results; checked for being a JSON object only after they were cached, so a bad
one is deleted from the cache by the client."""

from __future__ import annotations

import tracemalloc

import orjson
import pytest
import requests

from dentalkit.errors import ResponseFormatError
from dentalkit.fetch._http import KEEP_PARSE_BYTES, _cacheable, parse_large_body, take_body
from dentalkit.fetch.client import Client
from tests.hostile_servers import Service, send

IMG = "https://images.example.org/P1/x.png"
PAD = "p" * (KEEP_PARSE_BYTES + 10)


def _orjson(text: str):
    """The truth: what orjson makes of ``text`` (``None`` where it refuses it)."""
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return None


@pytest.mark.parametrize(
    "inner",
    [
        '"a": 1, "b": [1.5, -0, 1E2, 1e-400, true, false, null], "c": {"d": "\\u00e9\\n"}',
        '"big": 18446744073709551615, "bigger": 18446744073709551616',
        '"low": -9223372036854775808, "lower": -9223372036854775809',
        '"x": NaN',
        '"x": Infinity',
        '"x": 1e400',
        '"pair": "\\ud83d\\ude00"',
        '"lone": "\\ud800"',
        '"escaped backslash": "\\\\ud800"',
        '"x": 1} {"y": 2',
        '"x": "\x01"',
        '"x": [' * 2000 + "]" * 2000,
    ],
)
def test_a_large_body_is_parsed_as_orjson_parses_it(inner):
    text = '{"pad": "' + PAD + '", ' + inner + "}"
    assert parse_large_body(text) == _orjson(text)


def _response(content: bytes) -> requests.Response:
    response = requests.Response()
    response.status_code = 200
    response._content = content
    response._content_consumed = True
    return response


def test_a_large_answer_holds_at_most_two_forms_of_its_body():
    size = 8 << 20
    response = _response(b'{"Version": "v", "x": "' + b"a" * (size - 25) + b'"}')
    tracemalloc.start()
    try:
        assert _cacheable(response)  # before it is cached: only looked at
        assert tracemalloc.get_traced_memory()[1] < 0.01 * size
        text, data = take_body(response)
        held, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert data["Version"] == "v" and len(data["x"]) == size - 25 and len(text) == size
    assert response._content is None  # the bytes are released before the text is parsed
    # the text and the parsed string: 2x; orjson's copy of its input (and its value
    # pool, which tracemalloc counts) made it 3x and more
    assert held < 2.1 * size and peak < 2.2 * size, (held / size, peak / size)


@pytest.mark.parametrize(
    ("body", "verdict"),
    [
        (b'  {"x": "' + PAD.encode() + b'"}\n', True),
        (b'["' + PAD.encode() + b'"]', False),  # JSON, not an object
        (b'{"x": "' + PAD.encode(), False),  # cut short
        (b"<html>" + PAD.encode() + b"</html>", False),
    ],
)
def test_a_large_body_is_only_looked_at_before_it_is_cached(body, verdict):
    assert _cacheable(_response(body)) is verdict


def _client(svc: Service, tmp_path) -> Client:
    client = Client(svc.base_url, api_key="k", cache=tmp_path / "c.sqlite", max_retries=1)
    client._sleep = lambda s: None
    return client


def test_a_large_answer_that_is_not_json_is_not_kept_in_the_cache(tmp_path):
    bad = b'{"x": "' + PAD.encode() + b'", oops}'  # looks like an object, does not parse
    with Service({"/api/v2/classifier": lambda h, s: send(h, 200, bad)}) as svc:
        client = _client(svc, tmp_path)
        with pytest.raises(ResponseFormatError, match="not a JSON object"):
            client.classifier("P1", "2024-03-05", IMG)
        assert len(svc.requests) == 2  # retried, never answered from the cache
        assert len(client.session.cache.responses) == 0


def test_a_large_answer_is_cached_and_read_back_whole(tmp_path):
    good = b'{"Version": "big-1", "x": "' + PAD.encode() + b'", "n": [1, 2.5]}'
    with Service({"/api/v2/classifier": lambda h, s: send(h, 200, good)}) as svc:
        client = _client(svc, tmp_path)
        first = client.classifier("P1", "2024-03-05", IMG)
        again = client.classifier("P1", "2024-03-05", IMG)
    assert not first.from_cache and again.from_cache and len(svc.requests) == 1
    for res in (first, again):
        assert res.text == good.decode() and res.data == orjson.loads(good)


def test_a_large_cache_hit_holds_at_most_two_forms_of_its_body(tmp_path):
    size = 8 << 20
    good = b'{"Version": "v", "x": "' + b"a" * (size - 25) + b'"}'
    with Service({"/api/v2/classifier": lambda h, s: send(h, 200, good)}) as svc:
        client = _client(svc, tmp_path)
        client.classifier("P1", "2024-03-05", IMG)  # cached; its result is dropped
        tracemalloc.start()
        try:
            hit = client.classifier("P1", "2024-03-05", IMG)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    assert hit.from_cache and hit.data["Version"] == "v" and len(hit.text) == size
    # the entry read from SQLite and its body, then the body and its text, then the text
    # and the parsed data: 2x; the body kept by the cached raw response made it 3x
    assert peak < 2.4 * size, peak / size
