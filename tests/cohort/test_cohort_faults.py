"""A cohort against a faulty sandbox (5xx, malformed JSON, rate limit) completes correctly."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import orjson
import pandas as pd

from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import fetch_cohort
from dentalkit.fetch.store import read_responses
from dentalkit.sandbox import running

ENDPOINTS = ["classifier", "pano_segmentation"]


def normalized(body: str) -> dict:
    """The body with OutputImageUrl's time-dependent expiry and signature removed."""
    data = orjson.loads(body)
    if "OutputImageUrl" in data:
        parts = urlsplit(data["OutputImageUrl"])
        data["OutputImageUrl"] = (parts.path, parse_qs(parts.query)["req"])
    return data


def test_cohort_completes_through_5xx_malformed_bodies_and_rate_limits(tmp_path):
    ids = [f"F{i:03d}" for i in range(16)]
    manifest = pd.DataFrame(
        {
            "patient_id": ids,
            "timestamp": "2024-06-01",
            "image_url": [f"https://images.example.org/{p}/pano.png" for p in ids],
        }
    )
    n = len(ids) * len(ENDPOINTS)
    with running() as sb:
        clean = Client(sb.base_url, api_key=sb.api_key, cache=tmp_path / "clean.sqlite")
        fetch_cohort(manifest, ENDPOINTS, tmp_path / "clean", client=clean, progress=False)
        sb.set_faults(
            latency=0.005,
            error_rate=0.2,
            malformed_rate=0.15,
            rate_limit=5,
            rate_window=0.25,
            seed=7,
        )
        client = Client(
            sb.base_url,
            api_key=sb.api_key,
            cache=tmp_path / "faulty.sqlite",
            max_retries=30,  # generous: 8 workers compete for 5 requests per 0.25 s
            backoff_base=0.02,
            backoff_max=0.25,  # caps Retry-After too (keeps the test fast)
        )
        rep = fetch_cohort(manifest, ENDPOINTS, tmp_path / "faulty", client=client, max_workers=8, progress=False)  # fmt: skip
        stats = sb.stats()
    by_status = {int(k): v for k, v in stats["by_status"].items()}
    # the faults really happened
    assert by_status.get(429, 0) > 0
    assert sum(v for k, v in by_status.items() if k >= 500) > 0
    # every request is stored once; a 200 is re-sent only when its body was malformed, so the
    # 200s beyond n are the malformed answers, and they were retried
    assert (rep.stored, rep.failed) == (n, 0)
    assert by_status[200] > n
    assert set(by_status) <= {200, 429, 500, 502, 503}
    got, ref = read_responses(tmp_path / "faulty"), read_responses(tmp_path / "clean")
    assert got["request_key"].tolist() == ref["request_key"].tolist()
    for a, b in zip(got["body"], ref["body"], strict=True):
        assert normalized(a) == normalized(b)
    # only well-formed answers were cached: one entry per request, each a JSON object equal
    # to the stored body
    cached = sorted(r.content.decode() for r in client.session.cache.responses.values())
    assert cached == sorted(got["body"])
    assert all(isinstance(orjson.loads(c), dict) for c in cached)
