"""The key stays with the service's origin: redirects elsewhere are refused before the next
hop is sent, same-origin hops are stored with the key redacted, loopback means exactly
127.0.0.0/8, ::1 and ``localhost``, and oversized answers are cut off at the limit."""

from __future__ import annotations

import base64
import json
import logging
import secrets
import traceback

import pandas as pd
import pytest

from dentalkit.errors import (
    ConfigurationError,
    RedirectRefusedError,
    ResponseTooLargeError,
)
from dentalkit.fetch._http import is_loopback
from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import fetch_cohort
from tests.hostile_servers import Recorder, Service, huge, redirect_to

CANARY = "dk-canary-" + secrets.token_hex(12)
URL = "https://images.example.org/P1.png"


def raw_bytes(folder) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


@pytest.mark.parametrize("cache_name", ["http.sqlite", "fs-cache"])
def test_same_origin_redirect_is_followed_and_stored_without_the_key(tmp_path, caplog, cache_name):
    caplog.set_level(logging.DEBUG)
    routes = {"/api/v2/classifier": redirect_to("/api/v2/moved/classifier")}
    with Service(routes) as svc:
        cache = tmp_path / cache_name
        with Client(svc.base_url, api_key=CANARY, cache=cache) as client:
            res = client.classifier("P1", "2024-01-01", URL)
            again = client.classifier("P1", "2024-01-01", URL)
        assert res.data["Version"] == "hostile-1" and again.from_cache
        paths = [r["path"] for r in svc.requests]
        assert paths == ["/api/v2/classifier", "/api/v2/moved/classifier"]
        assert svc.requests[1]["headers"].get("x-api-key") == CANARY  # same origin: kept
    blob = raw_bytes(tmp_path)
    if cache_name == "fs-cache":  # bodies are base64 in the JSON files: decode them too
        for p in cache.rglob("*.json"):
            doc = json.loads(p.read_bytes())
            blob += base64.b64decode(doc["_content"])
    assert b"moved/classifier" in blob  # the redirect history is in the cache ...
    assert b"REDACTED" in blob
    assert CANARY.encode() not in blob  # ... without the key
    assert CANARY not in caplog.text


@pytest.mark.parametrize("how", ["other-port", "other-scheme", "plain-http-remote"])
def test_cross_origin_redirect_is_refused_before_the_hop(tmp_path, caplog, how):
    caplog.set_level(logging.DEBUG)
    with Recorder() as elsewhere:
        target = {
            "other-port": f"{elsewhere.origin}/steal",
            "other-scheme": f"https://127.0.0.1:{elsewhere.port}/steal",
            "plain-http-remote": "http://10.255.255.1/steal",
        }[how]
        with Service({"/api/v2/classifier": redirect_to(target)}) as svc:
            cache = tmp_path / "http.sqlite"
            client = Client(svc.base_url, api_key=CANARY, cache=cache, max_retries=2)
            with client, pytest.raises(RedirectRefusedError) as info:
                client.classifier("P1", "2024-01-01", URL)
            assert len(svc.requests) == 1  # not retried: a redirect is a fixed answer
        assert elsewhere.requests == []  # the other origin was never contacted
    err = info.value
    text = "".join(traceback.format_exception(err)) + repr(err)
    assert "another origin" in str(err) and "not followed" in str(err).lower()
    assert CANARY not in text and CANARY not in caplog.text
    assert CANARY.encode() not in raw_bytes(tmp_path)


def test_fetch_records_a_refused_redirect_as_a_failure_without_the_key(tmp_path):
    with Recorder() as elsewhere:
        routes = {"/api/v2/classifier": redirect_to(f"{elsewhere.origin}/x", status=308)}
        with Service(routes) as svc:
            manifest = pd.DataFrame(
                {"patient_id": ["P1", "P2"], "timestamp": "2024-01-01", "image_url": URL}
            )
            with Client(svc.base_url, api_key=CANARY, cache=tmp_path / "c.sqlite") as client:
                rep = fetch_cohort(manifest, "classifier", tmp_path / "out", client=client, progress=False, errors="collect")  # fmt: skip
        assert elsewhere.requests == []
    assert (rep.stored, rep.failed) == (0, 2)
    assert set(rep.failures["error_type"]) == {"RedirectRefusedError"}
    assert CANARY.encode() not in raw_bytes(tmp_path)


@pytest.mark.parametrize(
    ("host", "loop"),
    [
        ("localhost", True),
        ("LOCALHOST", True),
        ("127.0.0.1", True),
        ("127.255.0.9", True),
        ("::1", True),
        ("[::1]", True),
        ("evil.localhost", False),
        ("localhost.evil.org", False),
        ("localhost.", False),
        ("128.0.0.1", False),
        ("::ffff:127.0.0.1", False),
        ("0.0.0.0", False),
        ("", False),
        (None, False),
    ],
)
def test_loopback_means_exactly_localhost_127_8_and_ipv6_one(host, loop):
    assert is_loopback(host) is loop


def test_plain_http_to_a_localhost_subdomain_is_refused():
    with pytest.raises(ConfigurationError, match="refusing plain http"):
        Client("http://evil.localhost:8765/api/v2", api_key=CANARY, cache="memory")


@pytest.mark.parametrize("chunked", [False, True])
def test_answers_over_the_size_limit_are_refused_and_not_cached(tmp_path, chunked):
    routes = {"/api/v2/classifier": huge(3_000_000, chunked=chunked)}
    with Service(routes) as svc:
        cache = tmp_path / "http.sqlite"
        with Client(
            svc.base_url, api_key=CANARY, cache=cache, max_response_bytes=1_000_000
        ) as client:
            with pytest.raises(ResponseTooLargeError, match="max_response_bytes") as info:
                client.classifier("P1", "2024-01-01", URL)
            assert len(svc.requests) == 1  # not retried
            assert len(client.session.cache.responses) == 0
        # under the limit the same answer is accepted
        with Client(
            svc.base_url, api_key=CANARY, cache="memory", max_response_bytes=4_000_000
        ) as client:
            assert len(client.classifier("P1", "2024-01-01", URL).text) > 2_999_000
    assert ("declared" in str(info.value)) is (not chunked)


def _link(url: str):
    from datetime import UTC, datetime

    from dentalkit.fetch.client import ApiResult

    return ApiResult(
        endpoint="ceph_lateral_points",
        request={"PatientID": "P1"},
        request_key="k",
        data={"OutputImageUrl": url},
        text="{}",
        status_code=200,
        from_cache=False,
        fetched_at=datetime.now(UTC),
    )


def test_output_image_redirects_obey_the_https_rule_on_every_hop(tmp_path):
    from dentalkit.fetch.client import download_output_image
    from tests.hostile_servers import send

    png = b"\x89PNG\r\n\x1a\nfake"
    routes = {
        "/img.png": redirect_to("/real.png", status=302),
        "/real.png": lambda h, s: send(h, 200, png, Content_Type="image/png"),
        "/away.png": redirect_to("http://10.255.255.1/img.png", status=302),
    }
    with Service(routes) as host:
        path = download_output_image(_link(host.origin + "/img.png"), tmp_path / "a.png")
        assert path.read_bytes() == png
        with pytest.raises(ConfigurationError, match="redirect target"):
            download_output_image(_link(host.origin + "/away.png"), tmp_path / "b.png")
    assert not (tmp_path / "b.png").exists()
