"""Answers that begin and do not arrive whole (issue 30, items 1 and 3), from hostile local
servers: a body cut short, a chunked body that stops, a body that does not decode, and one
trickled a byte at a time. Each is retried with the backoff of a dropped connection, is an
``IncompleteResponseError``, is never cached, and never makes a fetch call the service
unreachable; the per-attempt deadline ends a trickle that no read timeout ends."""

from __future__ import annotations

import pandas as pd
import pytest

from dentalkit.errors import IncompleteResponseError, TransportError
from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import fetch_cohort
from tests.hostile_servers import Service, bad_encoding, chunked_cut, cut_short, trickle

BODY = b'{"Version": "hostile-1", "Results": {"Finding": "none"}, "pad": "xxxxxxxxxx"}'
IMG = "https://images.example.org/P1/x.png"


def client_for(svc: Service, tmp_path, **kwargs) -> Client:
    kwargs.setdefault("max_retries", 3)
    kwargs.setdefault("cache", tmp_path / "c.sqlite")
    client = Client(svc.base_url, api_key="hostile-key", **kwargs)
    client.slept = []
    client._sleep = client.slept.append  # record the backoff instead of waiting
    return client


def test_a_body_cut_short_is_retried_and_the_whole_answer_kept(tmp_path):
    route = cut_short(BODY, sent=len(BODY) // 2, times=2)  # two cut answers, then whole
    with Service({"/api/v2/classifier": route}) as svc:
        client = client_for(svc, tmp_path)
        res = client.classifier("P1", "t", IMG)
        assert res.text == BODY.decode() and res.attempts == 3 and not res.from_cache
        assert len(svc.requests) == 3
        # the backoff of a dropped connection: two waits, each drawn in [0, base·2^k]
        assert len(client.slept) == 2 and all(d >= 0 for d in client.slept)
        again = client.classifier("P1", "t", IMG)  # only the whole answer was cached
        assert again.from_cache and again.text == BODY.decode() and len(svc.requests) == 3


@pytest.mark.parametrize(
    ("route", "words"),
    [
        (cut_short(BODY, sent=34), "cut short"),
        (chunked_cut(BODY, sent=7), "cut short"),
        (bad_encoding(), "could not be decoded"),
    ],
    ids=["content-length", "chunked", "gzip"],
)
def test_incomplete_answers_fail_after_every_retry_and_are_never_cached(tmp_path, route, words):
    with Service({"/api/v2/classifier": route}) as svc:
        client = client_for(svc, tmp_path, max_retries=2)
        with pytest.raises(IncompleteResponseError, match=words) as info:
            client.classifier("P1", "t", IMG)
        assert len(svc.requests) == 3 and len(client.slept) == 2  # retried like a drop
        assert "/classifier" in str(info.value) and "hostile-key" not in str(info.value)
        assert not isinstance(info.value, TransportError)
        assert len(client.session.cache.responses) == 0


def test_the_deadline_ends_a_trickled_body_that_no_read_timeout_ends(tmp_path):
    # 80 bytes at one per 0.1 s: 8 s to arrive, never 1 s without a byte
    with Service({"/api/v2/classifier": trickle(BODY, every=0.1)}) as svc:
        client = client_for(svc, tmp_path, max_retries=1, timeout=(2.0, 1.0), request_deadline=0.6)  # fmt: skip
        # without the deadline the whole body would arrive (in 8 s) and be returned
        with pytest.raises(IncompleteResponseError, match="request_deadline"):
            client.classifier("P1", "t", IMG)
        assert len(svc.requests) == 2
        assert len(client.session.cache.responses) == 0


def test_the_deadline_ends_trickled_headers_too(tmp_path):
    with Service({"/api/v2/classifier": trickle(BODY, every=0.05, headers_too=True)}) as svc:
        client = client_for(svc, tmp_path, max_retries=0, timeout=(2.0, 1.0), request_deadline=0.5)  # fmt: skip
        # the status line and headers alone take 4 s; the answer would then arrive whole
        with pytest.raises(IncompleteResponseError, match="request_deadline"):
            client.classifier("P1", "t", IMG)


def test_no_deadline_lets_a_slow_answer_finish(tmp_path):
    with Service({"/api/v2/classifier": trickle(BODY, every=0.005)}) as svc:
        client = client_for(svc, tmp_path, max_retries=0, request_deadline=None)
        assert client.classifier("P1", "t", IMG).text == BODY.decode()


def test_the_deadline_setting_is_checked():
    from dentalkit.errors import ConfigurationError

    for bad in (0, -1, "60", True):
        with pytest.raises(ConfigurationError, match="request_deadline"):
            Client("http://127.0.0.1:9/api/v2", api_key="k", cache="memory", request_deadline=bad)


def test_a_fetch_with_cut_short_answers_does_not_call_the_service_unreachable(tmp_path):
    manifest = pd.DataFrame(
        {"patient_id": ["P1", "P2"], "timestamp": "2024-03-05", "image_url": [IMG, IMG + "?2"]}
    )
    with Service({"/api/v2/classifier": cut_short(BODY, sent=20)}) as svc:
        client = client_for(svc, tmp_path, max_retries=1, cache="memory")
        rep = fetch_cohort(
            manifest,
            "classifier",
            tmp_path / "out",
            client=client,
            progress=False,
            errors="collect",
        )
    assert rep.stopped is None  # a connection was made: not "unreachable"
    assert (rep.stored, rep.failed) == (0, 2)
    assert set(rep.failures["error_type"]) == {"IncompleteResponseError"}
    assert rep.failures["error"].str.contains("cut short").all()
