"""``link_expiry``: the one reader of a presigned link's end, for the manifest check
(``signed_only=True``) and the contract report (``signed_only=False``).

Expected instants are worked by hand: 2027-01-01T00:00Z is Unix 1,798,761,600
(2025-01-01 = 1,735,689,600, plus 365 + 365 days of 86,400 s); a SigV4 link dated
2026-11-27 10:00 with 604,800 s (7 days) ends 2026-12-04 10:00.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dentalkit.fetch._http import link_expiry

HOST = "https://store.example.org/scans/p1.png"
NEW_YEAR = datetime(2027, 1, 1, tzinfo=UTC)
WEEK_LATER = datetime(2026, 12, 4, 10, 0, tzinfo=UTC)

SIGV4 = (
    f"{HOST}?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=AK%2F20261127%2Fus-east-1%2Fs3"
    "%2Faws4_request&X-Amz-Date=20261127T100000Z&X-Amz-Expires=604800"
    "&X-Amz-SignedHeaders=host&X-Amz-Signature=00ff"
)
GCS_V4 = (
    f"{HOST}?X-Goog-Algorithm=GOOG4-RSA-SHA256&X-Goog-Credential=sa%40p.iam"
    "&X-Goog-Date=20261127T100000Z&X-Goog-Expires=604800&X-Goog-SignedHeaders=host"
    "&X-Goog-Signature=00ff"
)
AZURE_SAS = f"{HOST}?sv=2022-11-02&sr=b&sp=r&se=2027-01-01T00:00:00Z&sig=Zm9v"
V2_SIGNED = f"{HOST}?AWSAccessKeyId=AK&Expires=1798761600&Signature=Zm9v"


@pytest.mark.parametrize("signed_only", [True, False])
@pytest.mark.parametrize(
    ("url", "expected"),
    [
        pytest.param(SIGV4, WEEK_LATER, id="aws-sigv4"),
        pytest.param(GCS_V4, WEEK_LATER, id="gcs-x-goog"),
        pytest.param(AZURE_SAS, NEW_YEAR, id="azure-se-with-sig"),
        pytest.param(V2_SIGNED, NEW_YEAR, id="v2-expires-with-signature"),
        pytest.param(HOST, None, id="no-query"),
        pytest.param(f"{HOST}?v=3&size=large", None, id="no-expiry"),
        pytest.param(f"{HOST}?X-Amz-Date=20261127T100000Z", None, id="sigv4-date-only"),
    ],
)
def test_signed_forms_read_alike_for_both_callers(url, expected, signed_only):
    assert link_expiry(url, signed_only=signed_only) == expected


@pytest.mark.parametrize(
    ("url", "bare"),
    [
        pytest.param(f"{HOST}?expires=1798761600", NEW_YEAR, id="expires-unix"),
        pytest.param(f"{HOST}?Expires=2027-01-01T00:00:00Z", NEW_YEAR, id="expires-iso"),
        pytest.param(f"{HOST}?exp=1798761600", NEW_YEAR, id="exp"),
        pytest.param(f"{HOST}?se=2027-01-01T00:00:00Z", NEW_YEAR, id="azure-se-without-sig"),
        pytest.param(f"{HOST}?se=2027-01-01T00:00:00", NEW_YEAR, id="no-zone-is-utc"),
    ],
)
def test_an_unsigned_end_counts_for_the_report_only(url, bare):
    """The contract report describes any stated end; the manifest refuses rows only on a
    signed one (a bare ``expires`` may be the application's own parameter)."""
    assert link_expiry(url, signed_only=False) == bare
    assert link_expiry(url, signed_only=True) is None


def test_the_first_stated_field_decides_in_a_fixed_order():
    both = f"{HOST}?se=2030-01-01T00:00:00Z&expires=1798761600"
    assert link_expiry(both, signed_only=False) == NEW_YEAR  # expires before se
    signed_se = f"{both}&sig=Zm9v"  # expires unsigned, se signed
    assert link_expiry(signed_se, signed_only=True) == datetime(2030, 1, 1, tzinfo=UTC)


@pytest.mark.parametrize(
    "url",
    [
        f"{HOST}?X-Amz-Date=yesterday&X-Amz-Expires=3600&X-Amz-Signature=00",
        f"{HOST}?X-Amz-Date=20261127T100000Z&X-Amz-Expires=inf&X-Amz-Signature=00",
        f"{HOST}?X-Goog-Date=20261127T100000Z&X-Goog-Expires=nan&X-Goog-Signature=00",
        f"{HOST}?Expires=soon&Signature=00",
        f"{HOST}?Expires=1e400&Signature=00",
        f"{HOST}?Expires=99999999999999999999&Signature=00",
        f"{HOST}?se=&sig=00",
        "http://[not-a-host/x.png?expires=1798761600",
    ],
)
def test_an_end_that_does_not_parse_is_none(url):
    for signed_only in (True, False):
        assert link_expiry(url, signed_only=signed_only) is None
