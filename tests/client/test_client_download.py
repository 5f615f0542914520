"""Annotated output images behind 72-hour links."""

from __future__ import annotations

import socket
from datetime import UTC, datetime, timedelta

import pytest

from dentalkit.errors import ExpiredLinkError, InputError
from dentalkit.fetch.client import ApiResult, download_output_image

IMG = "https://images.example.org/P001/ceph.png"
PNG = b"\x89PNG\r\n\x1a\n"


def test_download_writes_the_png(make_client, tmp_path):
    res = make_client().ceph_lateral_points("P001", "2024-03-05", IMG)
    path = make_client().download_output_image(res, tmp_path / "img" / "out.png")
    assert path.read_bytes().startswith(PNG)
    assert [p.name for p in path.parent.iterdir()] == ["out.png"]  # no temporary file left


def test_download_from_a_responses_row(make_client, tmp_path):
    import pandas as pd

    from dentalkit.fetch.cohort import fetch_cohort
    from dentalkit.fetch.store import read_responses

    m = pd.DataFrame({"patient_id": ["P001"], "timestamp": ["2024-03-05"], "image_url": [IMG]})
    fetch_cohort(m, "ceph_lateral_points", tmp_path / "out", client=make_client(), progress=False)
    row = read_responses(tmp_path / "out").iloc[0]
    assert download_output_image(row, tmp_path / "x.png").read_bytes().startswith(PNG)


def test_a_link_older_than_72_hours_is_refused_before_any_request(make_client):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # nothing listens: any attempt would be a TransportError
    old = ApiResult(
        endpoint="ceph_lateral_points",
        request={"PatientID": "P001"},
        request_key="k",
        data={"OutputImageUrl": f"http://127.0.0.1:{port}/x.png"},
        text="{}",
        status_code=200,
        from_cache=True,
        fetched_at=datetime.now(UTC) - timedelta(hours=72, seconds=1),
    )
    with pytest.raises(ExpiredLinkError, match="refresh=True") as err:
        download_output_image(old, "never.png")
    assert "P001" in str(err.value) and "72 hours" in str(err.value)
    # one second before expiry it is tried (and fails on the closed port, as it must)
    fresh = ApiResult(**{**{f: getattr(old, f) for f in old.__slots__}, "fetched_at": datetime.now(UTC) - timedelta(hours=71, minutes=59)})  # fmt: skip
    with pytest.raises(Exception, match="Connection") as tried:
        download_output_image(fresh, "never.png")
    assert not isinstance(tried.value, ExpiredLinkError)


def test_the_link_hosts_expired_answer_is_an_expired_link_error(make_client, fresh, tmp_path):
    res = make_client().ceph_lateral_points("P001", "2024-03-05", IMG)
    fresh.config.clock_offset = 73 * 3600  # the sandbox's clock moves past the link's expiry
    try:
        with pytest.raises(ExpiredLinkError, match=r"HTTP 403.*refresh=True"):
            download_output_image(res, tmp_path / "x.png")
    finally:
        fresh.config.clock_offset = 0.0
    assert not (tmp_path / "x.png").exists()


def test_endpoints_without_output_image(make_client):
    res = make_client().classifier("P001", "2024-03-05", IMG)
    with pytest.raises(InputError, match="no OutputImageUrl"):
        download_output_image(res, "x.png")
