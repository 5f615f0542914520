"""Errors keep what they carry across process boundaries and never hold the key."""

import pickle

from dentalkit.errors import AuthError, RateLimitedError, ResponseFormatError, ServerError


def test_api_errors_survive_pickling_with_their_attributes():
    err = RateLimitedError(429, retry_after=7.5, endpoint="/tle", message="slow down")
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is RateLimitedError
    assert back.retry_after == 7.5
    assert (back.status, back.endpoint, back.message) == (429, "/tle", "slow down")
    assert str(back) == str(err)
    for cls in (AuthError, ServerError):
        e = cls(503 if cls is ServerError else 401, endpoint="/classifier", patient_id="P1")
        b = pickle.loads(pickle.dumps(e))
        assert (type(b), b.status, b.patient_id, str(b)) == (cls, e.status, "P1", str(e))


def test_format_errors_name_where_and_survive_pickling():
    e = ResponseFormatError(
        "not a pair of finite numbers",
        endpoint="ceph_lateral_points",
        patient_id="P7",
        timestamp="2024",
        path="$.Results.Later_3.x_coordinate",
        row=4,
    )
    text = str(e)
    for part in ("P7", "ceph_lateral_points", "$.Results.Later_3.x_coordinate", "row=4"):
        assert part in text
    assert str(pickle.loads(pickle.dumps(e))) == text
