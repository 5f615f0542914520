"""The client over real HTTP on loopback against the sandbox: cache, retries, typed errors."""

from __future__ import annotations

import math
import time

import orjson
import pytest
import requests

from dentalkit.errors import (
    AuthError,
    BadRequestError,
    RateLimitedError,
    ResponseFormatError,
    ServerError,
    TransportError,
)

IMG = "https://images.example.org/P001/ceph-2024-03-05.png"
TLE = dict(p01="14", p02="F", p03="2", p04="1", p05="0", p06="4.5", p07="3.0", p08="0", p09="0", p10="1", p11="6.5")  # fmt: skip


def _n(sb):
    return sb.stats()["total"]


def _cached(client):
    return len(list(client.session.cache.responses.keys()))


# ---- no simulator needed (the sandbox answers these before simulating) ----------------


def test_401_is_an_auth_error_at_once_without_retries(make_client, fresh):
    wrong = "wrong-key-5b9e01c2d7"
    client = make_client(api_key=wrong, max_retries=5)
    with pytest.raises(AuthError) as err:
        client.classifier("P001", "2024-03-05", IMG)
    assert _n(fresh) == 1
    e = err.value
    assert (e.status, e.error, e.message) == (401, "Unauthorized", "Invalid or missing API key")
    assert e.endpoint == "/classifier" and e.patient_id == "P001"
    assert e.__cause__ is None and e.__context__ is None
    assert wrong not in str(e) and wrong not in repr(e) and wrong not in e.body
    assert _cached(client) == 0


def test_5xx_is_retried_then_raised_and_never_cached(make_client, fresh):
    fresh.set_faults(error_rate=1.0)
    client = make_client(max_retries=3)
    with pytest.raises(ServerError) as err:
        client.classifier("P001", "2024-03-05", IMG)
    assert _n(fresh) == 4  # 1 + 3 retries
    assert err.value.status in (500, 502, 503) and "simulated server fault" in str(err.value)
    assert _cached(client) == 0


def test_other_4xx_are_not_retried_and_not_cached(make_client, fresh):
    client = make_client(max_retries=5)
    bad = {**TLE, "p01": "999"}  # the sandbox's codebook allows ages up to a limit
    for _ in range(2):
        with pytest.raises(BadRequestError) as err:
            client.tle(**bad)
    assert err.value.status == 400 and "p01" in err.value.message
    assert _n(fresh) == 2 and _cached(client) == 0


def test_timeouts_are_retried_then_a_transport_error(make_client, fresh):
    fresh.set_faults(slow_rate=1.0, slow_seconds=2.0)
    client = make_client(max_retries=1, timeout=(1.0, 0.2))
    t0 = time.perf_counter()
    with pytest.raises(TransportError, match="Timeout"):
        client.classifier("P001", "2024-03-05", IMG)
    assert time.perf_counter() - t0 < 3.5  # two attempts waiting for the slow answer: >= 4 s
    assert _n(fresh) == 2


def test_connection_refused_is_a_transport_error(tmp_path):
    import socket

    from dentalkit.fetch.client import Client

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed once the block ends
    client = Client(f"http://127.0.0.1:{port}/api/v2", api_key="k", cache="memory", max_retries=1, backoff_base=0.01)  # fmt: skip
    with pytest.raises(TransportError, match="ConnectionError") as err:
        client.classifier("P001", "t", IMG)
    assert err.value.__cause__ is None


# ---- the sandbox answers 200s ----------------------------------------------------------


def test_second_call_is_a_cache_hit_without_any_request(make_client, fresh):
    client = make_client()
    first = client.ceph_lateral_points("P001", "2024-03-05", IMG)
    second = client.ceph_lateral_points("P001", "2024-03-05", IMG)
    assert _n(fresh) == 1
    assert (first.from_cache, second.from_cache) == (False, True)
    assert second.text == first.text and second.data == orjson.loads(first.text)
    assert second.request_key == first.request_key
    assert abs((second.fetched_at - first.fetched_at).total_seconds()) < 1.0


@pytest.mark.parametrize("kind", ["c.sqlite", "fs-dir", "memory"])
def test_a_cache_hit_returns_the_exact_bytes_received(make_client, fresh, tmp_path, kind):
    client = make_client(cache=kind if kind == "memory" else tmp_path / kind)
    first = client.pano_segmentation("P001", "2024-03-05", IMG)
    again = (
        make_client(cache=kind if kind == "memory" else tmp_path / kind)
        if kind != "memory"
        else client
    )
    second = again.pano_segmentation("P001", "2024-03-05", IMG)
    assert second.from_cache and second.text == first.text


def test_bodies_differing_only_in_key_order_hit_the_same_entry(make_client, fresh):
    client = make_client()
    a = client.frontal_segmentation("P001", "t", IMG, standard_name="ICON", plot_labels=True)
    b = client.call("frontal_segmentation", "P001", "t", IMG, options={"PlotLabels": True, "StandardName": "ICON"})  # fmt: skip
    # and a raw request whose JSON text lists every field in reverse order
    raw = orjson.dumps(dict(reversed(list({"PatientID": "P001", "TimeStamp": "t", "ImageName": IMG, "StandardName": "ICON", "PlotLabels": True}.items()))))  # fmt: skip
    assert raw.startswith(b'{"PlotLabels":true,"StandardName"')
    c = client.session.post(
        fresh.base_url + "/frontal-segmentation",
        data=raw,
        headers={"Content-Type": "application/json", "x-api-key": fresh.api_key},
    )
    assert (a.from_cache, b.from_cache, c.from_cache) == (False, True, True)
    assert _n(fresh) == 1 and c.content.decode() == a.text


def test_different_keys_hit_the_same_entry(make_client, fresh, tmp_path):
    cache = tmp_path / "shared.sqlite"
    sandbox_key = make_client(cache=cache).classifier("P001", "t", IMG)
    prod_like = make_client(cache=cache, api_key="prod-like-key-7f3a9c1e55").classifier("P001", "t", IMG)  # fmt: skip
    assert (sandbox_key.from_cache, prod_like.from_cache) == (False, True)
    assert _n(fresh) == 1


def test_refresh_bypasses_the_cache_read_and_stores_the_fresh_answer(make_client, fresh):
    client = make_client()
    client.classifier("P001", "t", IMG)
    again = client.classifier("P001", "t", IMG, refresh=True)
    assert not again.from_cache and _n(fresh) == 2
    assert client.classifier("P001", "t", IMG).from_cache and _n(fresh) == 2


def test_429_retry_after_is_honoured(make_client, fresh):
    fresh.set_faults(rate_limit=1, rate_window=1.0)
    client = make_client(max_retries=4, backoff_base=0.001, backoff_max=5.0)
    slept: list[float] = []
    client._sleep = lambda s: (slept.append(s), time.sleep(s))
    # the in-process sandbox counts fixed windows of time.monotonic(): start just after a
    # window opens, so both calls below fall into the same window even on a loaded machine
    now = time.monotonic()
    time.sleep(math.ceil(now) - now + 0.01)
    client.classifier("P001", "t", IMG)
    res = client.classifier("P002", "t", IMG)  # over the limit of 1 per window
    statuses = fresh.stats()["by_status"]
    assert statuses.get("429", 0) >= 1 and res.status_code == 200
    # every wait after a 429 lasted at least the Retry-After the sandbox sent (>= 1 s) —
    # far longer than the 0.001 s exponential backoff would have waited
    assert len(slept) == statuses["429"] and all(s >= 1.0 for s in slept)


def test_429_after_all_retries_is_rate_limited_error_with_retry_after(make_client, fresh):
    fresh.set_faults(rate_limit=1, rate_window=60.0)
    client = make_client(max_retries=0)
    client.classifier("P001", "t", IMG)

    def two_more() -> None:  # the second one is over the limit even if P002 opened a window
        client.classifier("P002", "t", IMG)
        client.classifier("P003", "t", IMG)

    with pytest.raises(RateLimitedError) as err:
        two_more()
    assert err.value.status == 429 and 1 <= err.value.retry_after <= 60


def test_malformed_200_bodies_are_retried_and_never_cached(make_client, fresh):
    fresh.set_faults(malformed_rate=1.0)
    client = make_client(max_retries=2)
    with pytest.raises(ResponseFormatError, match="not a JSON object"):
        client.classifier("P001", "t", IMG)
    assert _n(fresh) == 3 and _cached(client) == 0
    fresh.set_faults(malformed_rate=0.0)
    good = client.classifier("P001", "t", IMG)
    assert not good.from_cache and _cached(client) == 1


def test_usage_headers_are_returned(make_client, fresh):
    fresh.set_faults(rate_limit=100, rate_window=60.0)
    res = make_client().classifier("P001", "t", IMG)
    assert res.usage["x-ratelimit-limit"] == "100"
    assert int(res.usage["x-ratelimit-remaining"]) == 99


def test_requests_exceptions_do_not_carry_the_key_into_messages(tmp_path):
    """requests' exceptions hold the PreparedRequest (with headers); our errors never chain them."""
    import socket

    from dentalkit.fetch.client import Client

    key = "sk-live-NEVER-PRINT-ME-42"
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = Client(f"http://127.0.0.1:{port}/api/v2", api_key=key, cache="memory", max_retries=0)
    with pytest.raises(TransportError) as err:
        client.classifier("P001", "t", IMG)
    chain, e = [], err.value
    while e is not None:
        chain.append(e)
        e = e.__cause__ or e.__context__
    assert len(chain) == 1
    assert key not in str(err.value) and key not in repr(err.value)
    assert not any(isinstance(x, requests.RequestException) for x in chain)


def test_expiry_is_configurable(make_client, fresh):
    client = make_client(expire_after=2)  # seconds
    client.classifier("P001", "t", IMG)
    assert client.classifier("P001", "t", IMG).from_cache
    time.sleep(2.1)
    assert not client.classifier("P001", "t", IMG).from_cache
    assert _n(fresh) == 2
