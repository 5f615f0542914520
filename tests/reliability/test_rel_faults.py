"""2,000 requests through 20 % 5xx, 5 % slow answers past the client timeout, 5 % malformed
JSON and a rate limit: the cohort completes and every body is byte-identical to the
fault-free run; only well-formed answers are cached."""

from __future__ import annotations

from collections import Counter

import orjson
import pytest

from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import fetch_cohort
from dentalkit.fetch.store import read_responses
from tests.reliability.cohort import ENDPOINTS, add_figure, cohort_manifest

pytestmark = pytest.mark.slow

READ_TIMEOUT = 1.0  # client read timeout (s); slow answers take 1.6 s more than usual


def count_decisions(sb) -> Counter:
    """Wrap the sandbox's fault injector to count what it decided (test instrumentation)."""
    injector = sb.app.state.injector
    decide = injector.decide
    seen: Counter = Counter()

    def counting():
        d = decide()
        seen["attempts"] += 1
        seen["slow"] += d.delay >= injector.faults.slow_seconds
        seen["5xx"] += d.status is not None
        seen["malformed"] += d.malformed
        return d

    injector.decide = counting
    return seen


def test_two_thousand_requests_through_faults_are_byte_identical(
    frozen_sandbox, reference, tmp_path
):
    sb = frozen_sandbox
    n = len(reference)
    assert n == 2000
    sb.set_faults(
        error_rate=0.20,
        slow_rate=0.05,
        slow_seconds=1.6,
        malformed_rate=0.05,
        rate_limit=24,  # per 0.2 s: the first burst of 32 workers always exceeds it
        rate_window=0.2,
        seed=11,
    )
    seen = count_decisions(sb)
    try:
        client = Client(
            sb.base_url,
            api_key=sb.api_key,
            cache=tmp_path / "http.sqlite",
            timeout=(5.0, READ_TIMEOUT),
            max_retries=50,  # ~30 % of attempts fail; 32 workers burst past the rate limit
            backoff_base=0.02,
            backoff_max=0.3,  # also caps Retry-After, keeping the run short
        )
        rep = fetch_cohort(
            cohort_manifest(), ENDPOINTS, tmp_path / "out", client=client, max_workers=32,
            progress=False, flush_every=250,
        )  # fmt: skip
        stats = sb.stats()
        cached = [r.content for r in client.session.cache.responses.values()]
        client.close()
    finally:
        del sb.app.state.injector.decide  # back to the class method
        sb.set_faults(error_rate=0.0, slow_rate=0.0, malformed_rate=0.0, rate_limit=None)

    by_status = Counter({int(k): v for k, v in stats["by_status"].items()})
    # the faults really happened, in about the configured proportions (a 5xx that was also
    # slow may never be counted as answered: its client had given up and gone)
    served_5xx = by_status[500] + by_status[502] + by_status[503]
    assert seen["5xx"] > 0.15 * seen["attempts"]
    assert seen["5xx"] - seen["slow"] <= served_5xx <= seen["5xx"]
    assert seen["slow"] > 0.03 * seen["attempts"] and seen["malformed"] > 0
    assert by_status[429] > 0
    assert set(by_status) <= {200, 429, 500, 502, 503}

    got = read_responses(tmp_path / "out")
    assert (rep.stored, rep.failed, len(got)) == (n, 0, n)
    assert got["request_key"].is_unique
    assert got["request_key"].tolist() == reference["request_key"].tolist()
    assert got["body"].tolist() == reference["body"].tolist()  # byte for byte
    # only well-formed answers were cached, one per request
    assert sorted(c.decode() for c in cached) == sorted(reference["body"])
    assert all(isinstance(orjson.loads(c), dict) for c in cached)

    faults = seen["5xx"] + seen["slow"] + seen["malformed"] + by_status[429]
    add_figure("requests sent", stats["total"])
    add_figure("faults injected", faults)
    add_figure("rows lost", n - len(set(got["request_key"]) & set(reference["request_key"])))
    add_figure("duplicates", len(got) - got["request_key"].nunique())
