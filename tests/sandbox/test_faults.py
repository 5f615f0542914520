"""Fault injection, rate limiting and a second key, each on its own sandbox."""

from __future__ import annotations

import time

import orjson
import pytest
import requests

from dentalkit.endpoints import ENDPOINTS
from dentalkit.sandbox import running

EP = ENDPOINTS["classifier"]
BODY = {"PatientID": "P-9", "TimeStamp": "2024-01-01", "ImageName": "https://x.org/a.png"}


def call(sb, key=None):
    return requests.post(
        sb.base_url + EP.path, json=BODY, headers={"x-api-key": key or sb.api_key}, timeout=10
    )


def test_every_request_fails_with_error_rate_one():
    with running(faults={"error_rate": 1.0}) as sb:
        statuses = {call(sb).status_code for _ in range(6)}
        assert statuses <= {500, 502, 503} and statuses
        r = call(sb)
        assert set(r.json()) == {"error", "message", "statusCode"}


def test_malformed_bodies_are_cut_short_json():
    with running(faults={"malformed_rate": 1.0}) as sb:
        r = call(sb)
        assert r.status_code == 200
        with pytest.raises(orjson.JSONDecodeError):
            orjson.loads(r.content)


def test_rate_limit_answers_429_with_retry_after_and_usage_headers():
    # a long window: a fixed-window boundary falling between the four calls would reset the
    # count (the test was flaky under load with 30 s)
    with running(faults={"rate_limit": 3, "rate_window": 3600}) as sb:
        first = [call(sb) for _ in range(3)]
        assert [r.status_code for r in first] == [200, 200, 200]
        assert [r.headers["X-RateLimit-Remaining"] for r in first] == ["2", "1", "0"]
        r = call(sb)
        assert r.status_code == 429
        assert int(r.headers["Retry-After"]) >= 1
        assert r.json()["statusCode"] == 429


def test_latency_is_added():
    sandbox_latency = 0.3
    with running(faults={"latency": sandbox_latency}) as sb:
        t0 = time.perf_counter()
        assert call(sb).status_code == 200
        assert time.perf_counter() - t0 >= sandbox_latency


def test_production_like_key_is_accepted_and_gives_the_same_answer():
    with running(production_like_key="prod-like-key") as sb:
        a, b = call(sb), call(sb, key="prod-like-key")
        assert a.status_code == b.status_code == 200
        assert a.content == b.content


def test_faults_change_at_runtime_through_the_control_route():
    with running() as sb:
        h = {"x-api-key": sb.api_key}
        r = requests.put(
            sb.root_url + "/_sandbox/config", json={"faults": {"error_rate": 1.0}}, headers=h
        )
        assert r.status_code == 200 and r.json()["faults"]["error_rate"] == 1.0
        assert call(sb).status_code >= 500
        r = requests.put(sb.root_url + "/_sandbox/config", json={"faults": {"nope": 1}}, headers=h)
        assert r.status_code == 400 and "nope" in r.json()["message"]
        sb.set_faults(error_rate=0.0)
        assert call(sb).status_code == 200
        assert sb.stats()["total"] == 1
