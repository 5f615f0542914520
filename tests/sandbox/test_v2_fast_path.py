"""The sandbox's hot path: /api/v2 answered in raw ASGI, landmark bodies written as bytes.

``simulate.respond_json`` must give exactly ``orjson.dumps`` of ``respond()``'s dict (an
independent serialisation of the same answer), and the raw ASGI dispatcher must keep what
FastAPI's stack did for it: chunked bodies, disconnects, 405 and the 500 of a bug in the
spec's error shape, ``X-Sandbox`` on every answer.
"""

from __future__ import annotations

import asyncio

import orjson
import pytest

from dentalkit.endpoints import image_endpoints
from dentalkit.sandbox import simulate
from dentalkit.sandbox.app import create_app
from dentalkit.sandbox.config import SANDBOX_API_KEY, SandboxConfig

REQUESTS = [
    {"PatientID": "FP-1", "TimeStamp": "2024-03-05", "ImageName": "https://x.org/a/1.png"},
    {"PatientID": "FP-2", "TimeStamp": "2031-01-01T08:00:00+02:00", "ImageName": "https://x.org/2"},
    {"PatientID": "FP-3", "TimeStamp": "not a date", "ImageName": "https://x.org/3.jpg"},
    {
        "PatientID": "FP-4",
        "TimeStamp": "2024-03-05T10:00:00Z",
        "ImageName": "http://h:9/_sandbox/images/lateral_ceph/FP-4/2024-03-05.png",
    },
]


@pytest.mark.parametrize("ep", image_endpoints(), ids=lambda e: e.slug)
@pytest.mark.parametrize("noise", [True, False])
def test_respond_json_is_orjson_of_respond_plus_extra(ep, noise):
    for req in REQUESTS:
        expected = orjson.dumps({**simulate.respond(ep, req, noise=noise), "OutputImageUrl": "u"})
        got = simulate.respond_json(ep, req, noise=noise, extra={"OutputImageUrl": "u"})
        assert got == expected
        assert simulate.respond_json(ep, req, noise=noise) == orjson.dumps(
            simulate.respond(ep, req, noise=noise)
        )


def _call(app, path, chunks, method="POST", headers=None, disconnect=False):
    """Run one request through the ASGI app; return (status, headers dict, body, messages)."""
    hdrs = headers or [
        (b"host", b"127.0.0.1:8000"),
        (b"content-type", b"application/json"),
        (b"x-api-key", SANDBOX_API_KEY.encode()),
    ]
    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1",
             "method": method, "scheme": "http", "path": path, "raw_path": path.encode(),
             "query_string": b"", "root_path": "", "headers": hdrs,
             "server": ("127.0.0.1", 8000), "client": ("127.0.0.1", 50000)}  # fmt: skip
    incoming = [
        {"type": "http.request", "body": c, "more_body": i < len(chunks) - 1}
        for i, c in enumerate(chunks)
    ]
    if disconnect:
        incoming[-1]["more_body"] = True
        incoming.append({"type": "http.disconnect"})
    sent: list[dict] = []

    async def receive() -> dict:
        return incoming.pop(0)

    async def send(message: dict) -> None:
        sent.append(message)

    async def run() -> None:
        await app(scope, receive, send)

    asyncio.run(run())
    if not sent:
        return None, {}, b"", sent
    start = sent[0]
    return (
        start["status"],
        {k.decode(): v.decode() for k, v in start["headers"]},
        b"".join(m.get("body", b"") for m in sent[1:]),
        sent,
    )


PATH = "/api/v2/ceph-lateral-points"
BODY = orjson.dumps(REQUESTS[0])


def test_chunked_body_gives_the_same_answer_as_one_chunk():
    app = create_app(SandboxConfig(frozen_time=1.7e9))
    one = _call(app, PATH, [BODY])
    three = _call(app, PATH, [BODY[:5], BODY[5:40], BODY[40:]])
    assert one[0] == three[0] == 200
    assert one[2] == three[2]
    assert one[1]["x-sandbox"] == "true"
    assert one[1]["content-length"] == str(len(one[2]))
    data = orjson.loads(one[2])
    assert list(data) == [*simulate.respond("ceph-lateral-points", REQUESTS[0]), "OutputImageUrl"]


def test_a_client_disconnect_mid_body_gets_no_answer():
    status, _, _, sent = _call(create_app(), PATH, [BODY[:10]], disconnect=True)
    assert status is None and sent == []


def test_wrong_method_gets_405_with_allow_and_the_sandbox_header():
    status, headers, body, _ = _call(create_app(), PATH, [b""], method="GET")
    assert status == 405
    assert headers["allow"] == "POST" and headers["x-sandbox"] == "true"
    assert orjson.loads(body) == {
        "error": "Method Not Allowed",
        "message": f"GET is not allowed on {PATH}",
        "statusCode": 405,
    }


def test_the_first_of_repeated_headers_counts():
    hdrs = [
        (b"content-type", b"application/json"),
        (b"x-api-key", b"wrong"),
        (b"x-api-key", SANDBOX_API_KEY.encode()),
    ]
    status, _, body, _ = _call(create_app(), PATH, [BODY], headers=hdrs)
    assert status == 401 and orjson.loads(body)["statusCode"] == 401


def test_a_bug_answers_500_in_the_error_shape_then_propagates(monkeypatch):
    def broken(*args, **kwargs):
        raise ZeroDivisionError("simulated bug")

    monkeypatch.setattr(simulate, "respond_json", broken)
    app = create_app()
    sent: list[dict] = []
    scope = {"type": "http", "method": "POST", "path": PATH, "scheme": "http",
             "query_string": b"", "root_path": "", "server": ("127.0.0.1", 8000),
             "headers": [(b"content-type", b"application/json"),
                         (b"x-api-key", SANDBOX_API_KEY.encode())]}  # fmt: skip

    async def receive() -> dict:
        return {"type": "http.request", "body": BODY, "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    with pytest.raises(ZeroDivisionError):
        asyncio.run(app(scope, receive, send))
    assert sent[0]["status"] == 500
    assert (b"x-sandbox", b"true") in sent[0]["headers"]
    assert orjson.loads(sent[1]["body"]) == {
        "error": "Internal Server Error",
        "message": "sandbox bug (ZeroDivisionError); please report it",
        "statusCode": 500,
    }
