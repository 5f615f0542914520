"""The sandbox's memory does not grow with the length of the URLs it is sent (issue 30,
item 7: 60 KB image URLs took it from 149 to 680 MB over 5,000 requests, because its
request counters and two URL-keyed caches kept whole URLs). ``benchmarks/sandbox_memory.py
--http --url-chars 60000`` measures the server; here the bounds that make it level off."""

from __future__ import annotations

import pytest

from dentalkit.endpoints import ENDPOINTS
from dentalkit.sandbox import _images, _placement
from dentalkit.sandbox.app import Stats
from dentalkit.sandbox.validate import IDENTITY_VALUE_CHARS, request_identity


def _long_url(i: int, chars: int = 60_000) -> str:
    return f"https://images.example.org/L{i}/" + "x" * chars + "/image.png"


def test_request_counters_keep_short_identities_whatever_the_url():
    stats = Stats()
    for i in range(50):
        body = {"PatientID": f"L{i}", "TimeStamp": "2024-03-05", "ImageName": _long_url(i)}
        stats.count_request(request_identity(ENDPOINTS["classifier"], body))
    keys = list(stats.as_dict()["by_request"])
    assert len(keys) == 50  # still one counter per distinct request
    assert max(map(len, keys)) < 3 * IDENTITY_VALUE_CHARS
    # a short request keeps its readable identity (tests and users compare it)
    short = {"PatientID": "P1", "TimeStamp": "t", "ImageName": "https://a.b/x.png"}
    assert request_identity(ENDPOINTS["classifier"], short) == "/classifier|P1|t|https://a.b/x.png"


@pytest.mark.parametrize("cached", [_images.image_identity, _placement._image_where])
def test_url_keyed_caches_do_not_keep_long_urls(cached):
    cached.cache_clear()
    for i in range(20):
        cached(_long_url(i))
    assert cached.cache_info().currsize == 0
    cached("https://images.example.org/P1/image.png")
    assert cached.cache_info().currsize == 1  # short URLs are still cached
    assert _images.image_identity(_long_url(1)) == _long_url(1)  # same answer, uncached
