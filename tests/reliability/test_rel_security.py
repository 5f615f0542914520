"""Security: the API key never lands anywhere (Redis, SQLite, Parquet, logs of the parent and
of dask workers, tracebacks); the sandbox never fetches an image, refuses non-http(s) image
URLs and oversized bodies, and compares keys with ``hmac.compare_digest`` against every key."""

from __future__ import annotations

import base64
import hmac
import json
import logging
import pickle
import secrets
import socket
import traceback
from pathlib import Path

import pandas as pd
import pytest
import requests

from dentalkit.errors import AuthError, DentalkitError, InputError, TransportError
from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import fetch_cohort
from dentalkit.sandbox import running
from tests.reliability.cohort import add_figure

pytestmark = pytest.mark.slow

SECRET = "dk-live-" + secrets.token_hex(16)  # a production-like key, new every run
TLE = {"p01": "14", "p02": "F", "p03": "2", "p04": "1", "p05": "0", "p06": "4.5", "p07": "3.0", "p08": "0", "p09": "0", "p10": "1", "p11": "6.5"}  # fmt: skip


@pytest.fixture(scope="module")
def sb():
    with running(production_like_key=SECRET) as server:
        yield server


def files_bytes(folder: Path, pattern: str = "*") -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob(pattern)) if p.is_file())


def redis_bytes(server) -> bytes:
    r = server.client()
    out = []
    for key in r.scan_iter("*"):
        kind = r.type(key)
        out.append(key)
        if kind == b"string":
            out.append(r.get(key))
        elif kind == b"hash":
            out.extend(b"".join(kv) for kv in r.hgetall(key).items())
        else:  # pragma: no cover - requests-cache writes strings and hashes only
            pytest.fail(f"unexpected Redis type {kind!r} for {key!r}")
    return b"".join(out)


def test_the_key_is_nowhere(sb, redis_server, dask_client, tmp_path, caplog):
    caplog.set_level(logging.DEBUG)  # every logger: urllib3, requests_cache, dentalkit, dask
    ids = [f"S{i:03d}" for i in range(30)]
    manifest = pd.DataFrame(
        {
            "patient_id": ids,
            "timestamp": "2025-01-01",
            "image_url": [f"https://images.example.org/{p}.png" for p in ids],
        }
    )
    tle = pd.DataFrame(
        [{"patient_id": "S000", "timestamp": "2025-01-01", "endpoint": "tle", **TLE}]
    )
    bad_tle = tle.assign(patient_id="S001", p02="unknown-sex")  # the sandbox answers 400
    # 1. on the dask cluster, Redis cache; a failure lands in failures.parquet
    shared = Client(sb.base_url, api_key=SECRET, cache=redis_server.url, max_retries=1)
    pool = dask_client.get_executor(pure=False)
    rep = fetch_cohort(manifest, ["classifier", "pano_segmentation"], tmp_path / "out", client=shared, executor=pool, progress=False)  # fmt: skip
    rep2 = fetch_cohort(pd.concat([tle, bad_tle]), None, tmp_path / "out", client=shared, executor=pool, progress=False, errors="collect")  # fmt: skip
    assert (rep.stored, rep2.stored, rep2.failed) == (60, 1, 1)
    # 2. in this process, SQLite and filesystem caches
    for cache in (tmp_path / "http.sqlite", tmp_path / "fs-cache"):
        with Client(sb.base_url, api_key=SECRET, cache=cache) as local:
            fetch_cohort(manifest, "classifier", tmp_path / f"out-{cache.name}", client=local, progress=False)  # fmt: skip
    # 3. errors and their tracebacks: a 401 (wrong key), a transport error, an input error
    wrong = "dk-live-" + secrets.token_hex(16)
    errors: list[BaseException] = []
    for call in (
        lambda: Client(sb.base_url, api_key=wrong, cache="memory").classifier("S1", "t", "https://i.example/x.png"),
        lambda: Client("http://127.0.0.1:9/api/v2", api_key=SECRET, cache="memory", max_retries=0).classifier("S1", "t", "https://i.example/x.png"),
        lambda: Client(sb.base_url, api_key=SECRET, cache="memory").classifier("S1", "t", "file:///etc/passwd"),
    ):  # fmt: skip
        with pytest.raises(DentalkitError) as info:
            call()
        errors.append(info.value)
    assert [type(e) for e in errors] == [AuthError, TransportError, InputError]
    texts = [
        "".join(traceback.format_exception(e)) + repr(e) + str(e) + repr(pickle.dumps(e))
        for e in errors
    ]

    stored = files_bytes(tmp_path / "out", "*.parquet")
    sqlite = files_bytes(tmp_path, "http.sqlite*")  # database, -wal, -shm
    fs_cache = files_bytes(tmp_path / "fs-cache")
    fs_cache += b"".join(  # the JSON files hold bodies base64-encoded: scan them decoded too
        base64.b64decode(json.loads(p.read_bytes())["_content"])
        for p in (tmp_path / "fs-cache").rglob("*.json")
    )
    in_redis = redis_bytes(redis_server)
    worker_logs = repr(dask_client.get_worker_logs()) + repr(dask_client.get_scheduler_logs())
    places = {
        "Parquet store": stored,
        "SQLite cache": sqlite,
        "filesystem cache": fs_cache,
        "Redis": in_redis,
        "parent logs": caplog.text.encode(),
        "dask logs": worker_logs.encode(),
    }
    for e, text in zip(errors, texts, strict=True):
        places[f"traceback of {type(e).__name__}"] = text.encode()
    # the scans read real content (not vacuous) ...
    for where in ("Parquet store", "SQLite cache", "filesystem cache", "Redis"):
        assert b"S029" in places[where], where  # a patient of the cohort
    assert b"unknown-sex" in stored  # failures.parquet is among the scanned bytes
    assert b"REDACTED" in in_redis and b"REDACTED" in sqlite
    # ... and the keys are in none of it
    for where, blob in places.items():
        for key in (SECRET, wrong):
            assert key.encode() not in blob, f"the API key appears in the {where}"
    add_figure("bad inputs tried", 3)


def test_sandbox_never_fetches_and_refuses_other_schemes(sb):
    headers = {"x-api-key": sb.api_key}
    url = sb.base_url + "/classifier"
    with socket.socket() as trap:  # a loopback "image host" that records any connection
        trap.bind(("127.0.0.1", 0))
        trap.listen(8)
        trap.settimeout(0.3)
        port = trap.getsockname()[1]
        for image in (f"http://127.0.0.1:{port}/img.png", "http://10.1.2.3/img.png"):
            body = {"PatientID": "P1", "TimeStamp": "t", "ImageName": image}
            resp = requests.post(url, json=body, headers=headers, timeout=10)
            assert resp.status_code == 200  # answered from the simulator, not from the image
        with pytest.raises(TimeoutError):
            trap.accept()  # nobody ever connected to the image host
    for image in ("file:///etc/passwd", "ftp://example.org/a.png", "gopher://x/1", "/etc/passwd"):
        body = {"PatientID": "P1", "TimeStamp": "t", "ImageName": image}
        resp = requests.post(url, json=body, headers=headers, timeout=10)
        assert resp.status_code == 400 and "ImageName" in resp.json()["message"], image
    add_figure("bad inputs tried", 6)


def test_sandbox_rejects_oversized_bodies(sb):
    headers = {"x-api-key": sb.api_key, "content-type": "application/json"}
    url = sb.base_url + "/classifier"
    big = (
        b'{"PatientID": "'
        + b"x" * (1 << 20)
        + b'", "TimeStamp": "t", "ImageName": "https://a.b/c"}'
    )
    declared = requests.post(url, data=big, headers=headers, timeout=30)

    def chunks():
        for i in range(0, len(big), 8192):
            yield big[i : i + 8192]

    streamed = requests.post(url, data=chunks(), headers=headers, timeout=30)  # no length
    assert streamed.request.headers.get("transfer-encoding") == "chunked"
    for resp in (declared, streamed):
        assert resp.status_code == 413
        assert resp.json()["statusCode"] == 413 and "exceeds" in resp.json()["message"]
    add_figure("bad inputs tried", 2)


class CompareSpy:
    """Stands in for the ``hmac`` module in the sandbox app; records compare_digest calls."""

    def __init__(self) -> None:
        self.calls: list[tuple[bytes, bytes]] = []

    def compare_digest(self, a, b):
        self.calls.append((a, b))
        return hmac.compare_digest(a, b)


def test_keys_are_compared_in_constant_time_against_every_key(monkeypatch):
    import dentalkit.sandbox.app as app_module

    spy = CompareSpy()
    monkeypatch.setattr(app_module, "hmac", spy)
    prod = "prod-like-" + "k" * 20
    with running(production_like_key=prod) as server:
        accepted = [server.api_key.encode(), prod.encode()]
        url = server.base_url + "/classifier"
        body = {"PatientID": "P1", "TimeStamp": "t", "ImageName": "https://a.b/c.png"}
        for given, status in (
            (server.api_key, 200),  # matches the first key: the second is still compared
            (prod, 200),
            ("x" * len(server.api_key), 401),  # same length, wrong
            ("short", 401),
        ):
            spy.calls.clear()
            resp = requests.post(url, json=body, headers={"x-api-key": given}, timeout=10)
            assert resp.status_code == status, given
            assert spy.calls == [(given.encode(), k) for k in accepted], given
    add_figure("bad inputs tried", 2)
