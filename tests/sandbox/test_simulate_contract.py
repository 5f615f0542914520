"""The simulator answers every image endpoint exactly in the spec's shape."""

import orjson
import pytest

from dentalkit.endpoints import Kind, VersionFamily, get_endpoint, image_endpoints
from dentalkit.sandbox import simulate
from dentalkit.sandbox.simulate import (
    ANALYSIS_VERSION,
    KEYPOINTS_VERSION,
    TLE_APP,
    estimate_tle,
    respond,
    stored_image_name,
)

URL = "https://images.example.org/clinic/2024/scan%2001.png"
REQ = {"PatientID": "P-contract", "TimeStamp": "2024-03-01T09:30:00Z", "ImageName": URL}
ENDPOINTS = image_endpoints()


def _ids(ep):
    return ep.name


@pytest.mark.parametrize("ep", ENDPOINTS, ids=_ids)
def test_field_set_is_the_registry_minus_output_image(ep):
    body = respond(ep, REQ)
    assert list(body) == [f for f in ep.response_fields if f != "OutputImageUrl"]


@pytest.mark.parametrize("ep", ENDPOINTS, ids=_ids)
def test_deterministic_and_json_serialisable(ep):
    a = respond(ep, REQ)
    b = respond(ep, dict(REQ))
    assert a == b
    assert orjson.loads(orjson.dumps(a)) == a
    c = respond(ep, REQ, noise=False)
    assert orjson.loads(orjson.dumps(c)) == c


@pytest.mark.parametrize("ep", ENDPOINTS, ids=_ids)
def test_echo_and_version_family(ep):
    body = respond(ep, REQ)
    if "PatientID" in body:
        assert body["PatientID"] == REQ["PatientID"]
    if "TimeStamp" in body:
        assert body["TimeStamp"] == REQ["TimeStamp"]
    if "ImageName" in body:
        # the stored file name, not the URL (spec quirk)
        assert body["ImageName"] != URL
        assert "/" not in body["ImageName"]
        assert ":" not in body["ImageName"]
        assert body["ImageName"].endswith("scan_01.png")
    if ep.version is None:
        assert "Version" not in body
    elif ep.version is VersionFamily.KEYPOINTS:
        assert body["Version"] == KEYPOINTS_VERSION
    else:
        assert body["Version"] == ANALYSIS_VERSION


def test_keypoint_version_is_newer_second_part_higher():
    a = [int(x) for x in ANALYSIS_VERSION.split("-")[0].split(".")]
    k = [int(x) for x in KEYPOINTS_VERSION.split("-")[0].split(".")]
    assert k[0] == a[0]
    assert k[1] > a[1]


def test_different_patients_and_sessions_differ():
    ep = get_endpoint("ceph-lateral-points")
    a = respond(ep, REQ)["Results"]
    b = respond(ep, {**REQ, "PatientID": "P-other"})["Results"]
    c = respond(ep, {**REQ, "TimeStamp": "2025-03-01T09:30:00Z"})["Results"]
    assert a != b
    assert a != c


@pytest.mark.parametrize(("slug", "n", "prefixes"), [
    ("ceph-lateral-points", 169, ("Later_",)),
    ("ceph-frontal-points", 118, ("Front_", "SasFront_")),
])  # fmt: skip
def test_landmark_counts_and_prefixes(slug, n, prefixes):
    body = respond(get_endpoint(slug), REQ)
    assert body["NumberOfPredictedPoints"] == n
    assert len(body["Results"]) == n
    for key, value in body["Results"].items():
        assert key.startswith(prefixes)
        assert set(value) == {"x_coordinate", "y_coordinate"}
        assert all(isinstance(v, float) for v in value.values())
    if slug == "ceph-frontal-points":
        assert sum(k.startswith("SasFront_") for k in body["Results"]) == 18


def test_stored_image_name_is_a_file_name():
    name = stored_image_name(URL)
    assert name == stored_image_name(URL)
    assert name != stored_image_name(URL + "?v=2")
    assert len(name.split("_", 1)[0]) == 12
    sandbox = "http://127.0.0.1:8765/_sandbox/images/lateral_ceph/P1/2024-01-01.png"
    assert stored_image_name(sandbox).endswith("_lateral_ceph.png")


def test_tle_answer_shape():
    q = dict(p01="14", p02="F", p03="2", p04="1", p05="0", p06="5.5", p07="3", p08="0",
             p09="0", p10="1", p11="4.5")  # fmt: skip
    out = estimate_tle(q)
    assert list(out) == list(get_endpoint("/tle").response_fields)
    assert out["app"] == TLE_APP
    assert isinstance(out["estimate_length"], float)


def test_tle_is_not_an_image_endpoint():
    with pytest.raises(simulate.InputError, match="estimate_tle"):
        respond(get_endpoint("/tle"), REQ)


def test_missing_request_field_names_it():
    with pytest.raises(simulate.InputError, match="TimeStamp"):
        respond(get_endpoint("classifier"), {"PatientID": "x", "ImageName": URL})


def test_kinds_cover_every_response_shape():
    assert {ep.kind for ep in ENDPOINTS} == set(Kind) - {Kind.TLE}


def test_sandbox_image_urls_give_the_same_answer_on_any_host_and_port():
    """A rerun of a demo or notebook on a new sandbox port must reproduce its numbers."""
    from dentalkit.endpoints import ENDPOINTS
    from dentalkit.sandbox import simulate

    path = "/_sandbox/images/lateral_ceph/P-77/2024-05-01.png"

    def answer(ep_name, url):
        req = {"PatientID": "P-77", "TimeStamp": "2024-05-01", "ImageName": url}
        return simulate.respond(ENDPOINTS[ep_name], req)

    for name in ("ceph_lateral_points", "classifier", "clinical_images"):
        assert answer(name, "http://127.0.0.1:40001" + path) == answer(
            name, "http://localhost:52999" + path
        )
    # Any other URL still counts as a different image (different noise draw).
    lateral = answer("ceph_lateral_points", "http://127.0.0.1:40001" + path)
    assert answer("ceph_lateral_points", "https://x.org/a.png")["Results"] != lateral["Results"]
