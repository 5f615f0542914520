"""Contract tests of the sandbox over real HTTP on loopback.

Expected shapes come from the specification (via the registry and the OpenAPI document
validated independently with jsonschema), never from the simulator's own output.
"""

from __future__ import annotations

import re
import socket

import jsonschema
import orjson
import pytest
import requests

from dentalkit.endpoints import ENDPOINTS, VersionFamily, image_endpoints
from dentalkit.openapi import openapi_document
from tests.helpers import VALID_TLE_QUERY

UNAUTHORIZED = b'{"error":"Unauthorized","message":"Invalid or missing API key","statusCode":401}'
IMAGE_EPS = image_endpoints()
TLE_OK = VALID_TLE_QUERY


def body_for(
    ep, patient="P-001", ts="2024-03-05T10:00:00Z", image="https://images.example.org/a/lateral.png"
):
    return {"PatientID": patient, "TimeStamp": ts, "ImageName": image}


def post(sb, ep, body, key="default", **kw):
    headers = {} if key is None else {"x-api-key": sb.api_key if key == "default" else key}
    return requests.post(sb.base_url + ep.path, json=body, headers=headers, timeout=30, **kw)


@pytest.fixture(scope="module")
def doc(sandbox):
    return openapi_document(sandbox.base_url)


def response_validator(doc, ep):
    """A jsonschema validator for the 200 body, with the components inlined as $defs."""
    op = doc["paths"][ep.path][ep.method.lower()]
    schema = op["responses"]["200"]["content"]["application/json"]["schema"]
    whole = {**schema, "$defs": doc["components"]["schemas"]}
    text = orjson.dumps(whole).decode().replace("#/components/schemas/", "#/$defs/")
    return jsonschema.Draft202012Validator(orjson.loads(text))


@pytest.mark.parametrize("ep", IMAGE_EPS, ids=lambda e: e.slug)
def test_success_body_has_exactly_the_spec_fields(sandbox, doc, ep):
    r = post(sandbox, ep, body_for(ep))
    assert r.status_code == 200, r.text
    assert r.headers["content-type"].startswith("application/json")
    assert r.headers["x-sandbox"] == "true"
    data = r.json()
    assert list(data) == list(ep.response_fields)
    response_validator(doc, ep).validate(data)
    if "PatientID" in ep.echo:
        assert data["PatientID"] == "P-001"
    if "TimeStamp" in ep.echo:
        assert data["TimeStamp"] == "2024-03-05T10:00:00Z"
    if "ImageName" in ep.echo:
        # Spec quirk: the stored file name, not the submitted URL.
        assert "://" not in data["ImageName"] and "/" not in data["ImageName"]
        assert data["ImageName"]


def test_landmark_counts_and_key_prefixes(sandbox):
    lat = post(sandbox, ENDPOINTS["ceph_lateral_points"], body_for(None)).json()
    assert lat["NumberOfPredictedPoints"] == 169 == len(lat["Results"])
    assert all(re.fullmatch(r"Later_\d+", k) for k in lat["Results"])
    fro = post(sandbox, ENDPOINTS["ceph_frontal_points"], body_for(None)).json()
    assert fro["NumberOfPredictedPoints"] == 118 == len(fro["Results"])
    assert all(re.fullmatch(r"(Front|SasFront)_\d+", k) for k in fro["Results"])
    assert any(k.startswith("SasFront_") for k in fro["Results"])


def _version_parts(v):
    return [int(x) for x in re.findall(r"\d+", v)[:2]]


def test_keypoint_version_is_newer_in_its_second_part(sandbox):
    kp = post(sandbox, ENDPOINTS["occlusogram_upper_points"], body_for(None)).json()["Version"]
    other = post(sandbox, ENDPOINTS["pano_segmentation"], body_for(None)).json()["Version"]
    assert _version_parts(kp)[0] == _version_parts(other)[0]
    assert _version_parts(kp)[1] > _version_parts(other)[1]
    for ep in ENDPOINTS.values():
        assert (ep.version is VersionFamily.KEYPOINTS) == (
            ep.name.startswith("occlusogram_") and ep.name.endswith("points")
        )


def test_missing_teeth_use_the_zero_pair_quirk(sandbox):
    seen_missing = False
    for i in range(40):
        data = post(
            sandbox, ENDPOINTS["pano_segmentation"], body_for(None, patient=f"M-{i}")
        ).json()
        for key, rec in data["Results"].items():
            assert re.fullmatch(r"(i1|i2|c|p1|p2|m1|m2|m3)_(rgt|lft)_(up|lo)", key)
            if rec["missing"]:
                seen_missing = True
                assert rec["points"] == [[0, 0]]
            else:
                assert len(rec["points"]) >= 3
    assert seen_missing, "40 patients without a single missing tooth: the quirk is never exercised"


def test_pano_findings_are_sometimes_empty_objects(sandbox):
    results = [
        post(sandbox, ENDPOINTS["panos_findings"], body_for(None, patient=f"F-{i}")).json()[
            "Results"
        ]
        for i in range(40)
    ]
    assert any(r == {} for r in results)


def test_same_request_twice_gives_the_same_body(sandbox):
    for ep in IMAGE_EPS:
        a = post(sandbox, ep, body_for(ep)).json()
        b = post(sandbox, ep, body_for(ep)).json()
        link_a, link_b = a.pop("OutputImageUrl", ""), b.pop("OutputImageUrl", "")
        assert a == b, ep.path
        # The link differs only in its expiry (72 h from each issue), never in its request.
        assert link_a.split("&expires=")[0] == link_b.split("&expires=")[0]
    t1 = requests.get(
        sandbox.base_url + "/tle", params=TLE_OK, headers={"x-api-key": sandbox.api_key}
    )
    t2 = requests.get(
        sandbox.base_url + "/tle", params=TLE_OK, headers={"x-api-key": sandbox.api_key}
    )
    assert t1.status_code == 200 and t1.content == t2.content
    assert list(t1.json()) == ["app", "estimate_length"]


@pytest.mark.parametrize("ep", list(ENDPOINTS.values()), ids=lambda e: e.slug)
@pytest.mark.parametrize("key", [None, "wrong-key", ""])
def test_401_body_is_byte_exact(sandbox, ep, key):
    headers = {} if key is None else {"x-api-key": key}
    if ep.is_image:
        r = requests.post(sandbox.base_url + ep.path, json=body_for(ep), headers=headers)
    else:
        r = requests.get(sandbox.base_url + ep.path, params=TLE_OK, headers=headers)
    assert r.status_code == 401
    assert r.content == UNAUTHORIZED


BAD_BODIES = [
    ({"TimeStamp": "t", "ImageName": "https://x/y.png"}, "PatientID"),
    ({"PatientID": 7, "TimeStamp": "t", "ImageName": "https://x/y.png"}, "PatientID"),
    ({"PatientID": "p", "TimeStamp": "", "ImageName": "https://x/y.png"}, "TimeStamp"),
    ({"PatientID": "p", "TimeStamp": "t", "ImageName": "file:///etc/passwd"}, "ImageName"),
    ({"PatientID": "p", "TimeStamp": "t", "ImageName": "ftp://host/a.png"}, "ImageName"),
    ({"PatientID": "p", "TimeStamp": "t", "ImageName": "not a url"}, "ImageName"),
    ({"PatientID": "p", "TimeStamp": "t", "ImageName": "https://x/y.png", "Extra": 1}, "Extra"),
    (["PatientID"], "JSON object"),
]


@pytest.mark.parametrize(("body", "named"), BAD_BODIES)
def test_bad_bodies_get_the_error_shape_naming_the_field(sandbox, body, named):
    r = post(sandbox, ENDPOINTS["ceph_lateral_points"], body)
    assert r.status_code == 400
    err = r.json()
    assert set(err) == {"error", "message", "statusCode"} and err["statusCode"] == 400
    assert named in err["message"]


def test_optional_field_types_are_checked(sandbox):
    ep = ENDPOINTS["pano_segmentation"]
    ok = post(sandbox, ep, {**body_for(ep), "DrawContours": True})
    assert ok.status_code == 200
    bad = post(sandbox, ep, {**body_for(ep), "DrawContours": "yes"})
    assert bad.status_code == 400 and "DrawContours" in bad.json()["message"]
    fs = ENDPOINTS["frontal_segmentation"]
    assert (
        post(sandbox, fs, {**body_for(fs), "StandardName": "ICON", "PlotLabels": False}).status_code
        == 200
    )
    wrong = post(sandbox, fs, {**body_for(fs), "DrawContours": True})
    assert wrong.status_code == 400 and "StandardName" in wrong.json()["message"]


def test_non_json_and_oversized_bodies(sandbox):
    ep = ENDPOINTS["classifier"]
    headers = {"x-api-key": sandbox.api_key, "Content-Type": "application/json"}
    r = requests.post(sandbox.base_url + ep.path, data=b"{not json", headers=headers)
    assert r.status_code == 400 and "JSON" in r.json()["message"]
    r = requests.post(
        sandbox.base_url + ep.path,
        data=b"PatientID=p",
        headers={"x-api-key": sandbox.api_key, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == 415 and r.json()["statusCode"] == 415
    big = {**body_for(ep), "PatientID": "x" * (sandbox.config.max_body_bytes + 10)}
    r = post(sandbox, ep, big)
    assert r.status_code == 413 and r.json()["statusCode"] == 413


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"p01": None}, "p01"),
        ({"p02": "female"}, "p02"),
        ({"p06": "lots"}, "p06"),
        ({"p11": "nan"}, "p11"),
        ({"p99": "1"}, "p99"),
    ],
)
def test_bad_tle_parameters(sandbox, change, named):
    params = {**TLE_OK, **change}
    params = {k: v for k, v in params.items() if v is not None}
    r = requests.get(
        sandbox.base_url + "/tle", params=params, headers={"x-api-key": sandbox.api_key}
    )
    assert r.status_code == 400
    assert named in r.json()["message"]


def test_unknown_paths_and_methods_use_the_error_shape(sandbox):
    h = {"x-api-key": sandbox.api_key}
    r = requests.post(sandbox.base_url + "/does-not-exist", json={}, headers=h)
    assert r.status_code == 404 and r.json()["statusCode"] == 404
    r = requests.get(sandbox.base_url + "/classifier", headers=h)
    assert r.status_code == 405 and r.json()["statusCode"] == 405


def test_the_sandbox_never_fetches_the_image_url(sandbox):
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(1)
    listener.settimeout(0.5)
    port = listener.getsockname()[1]
    ep = ENDPOINTS["ceph_lateral_points"]
    r = post(sandbox, ep, body_for(ep, image=f"http://127.0.0.1:{port}/secret.png"))
    assert r.status_code == 200
    with pytest.raises(TimeoutError):
        listener.accept()
    listener.close()


def test_output_image_links_are_signed_and_expire(sandbox):
    ep = ENDPOINTS["ceph_lateral_points"]
    link = post(sandbox, ep, body_for(ep)).json()["OutputImageUrl"]
    ok = requests.get(link)
    assert ok.status_code == 200 and ok.headers["content-type"] == "image/png"
    assert ok.content[:8] == b"\x89PNG\r\n\x1a\n"
    forged = re.sub(r"signature=[0-9a-f]{4}", "signature=0000", link)
    r = requests.get(forged)
    assert r.status_code == 403 and "signature" in r.json()["message"]
    tampered = link.replace("req=", "req=A")
    assert requests.get(tampered).status_code == 403
    old = sandbox.config.clock_offset
    try:
        sandbox.config.clock_offset = 72 * 3600 + 5
        r = requests.get(link)
        assert r.status_code == 403 and "expired" in r.json()["message"]
    finally:
        sandbox.config.clock_offset = old


def test_synthetic_input_images_are_served(sandbox):
    url = sandbox.image_url("lateral_ceph", "P-001", "2024-03-05")
    r = requests.get(url)
    assert r.status_code == 200 and r.content[:4] == b"\x89PNG"


def test_control_routes_need_the_key_and_stay_out_of_the_openapi(sandbox, doc):
    assert requests.get(sandbox.root_url + "/_sandbox/stats").status_code == 401
    h = {"x-api-key": sandbox.api_key}
    stats = requests.get(sandbox.root_url + "/_sandbox/stats", headers=h).json()
    assert stats["total"] >= 1
    truth = requests.get(
        sandbox.root_url + "/_sandbox/truth",
        params={"PatientID": "P-001", "TimeStamp": "2024-03-05T10:00:00Z"},
        headers=h,
    )
    assert truth.status_code == 200 and isinstance(truth.json(), dict)
    assert not any(p.startswith("/_sandbox") for p in doc["paths"])
    banner = requests.get(sandbox.root_url + "/").json()
    assert banner["sandbox"] is True and "no AI model" in banner["message"]
