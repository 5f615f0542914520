"""Nothing lost, nothing silent, second round (issue 30): answers cut short are retried and
never stored; answers trickled a byte at a time are ended by the deadline; single-bit flips
in a responses part and in the HTTP cache are caught or harmless, never silent (a smaller
sample of ``benchmarks/bitflips.py``, whose full run flips 400 bits in each)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import fetch_cohort
from tests.hostile_servers import Service, send, trickle
from tests.reliability.cohort import add_figure, cohort_manifest

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]


def _whole(patient: str) -> bytes:
    return json.dumps(
        {"PatientID": patient, "Version": "h-1", "Results": {"pad": "x" * 300}}
    ).encode()


def test_cut_short_bodies_are_retried_and_never_stored(tmp_path):
    attempts: dict[str, int] = {}

    def first_cut(h, server):  # every request's first answer stops halfway, then closes
        patient = json.loads(server.requests[-1]["body"])["PatientID"]
        attempts[patient] = attempts.get(patient, 0) + 1
        body = _whole(patient)
        if attempts[patient] > 1:
            send(h, 200, body)
            return
        h.send_response(200)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        h.end_headers()
        h.wfile.write(body[: len(body) // 2])
        h.wfile.flush()
        h.close_connection = True

    n = 40
    with Service({"/api/v2/classifier": first_cut}) as svc:
        client = Client(svc.base_url, api_key="k-hostile", cache=tmp_path / "c.sqlite", backoff_base=0.01, backoff_max=0.02)  # fmt: skip
        rep = fetch_cohort(cohort_manifest(n), "classifier", tmp_path / "out", client=client, max_workers=4, progress=False, errors="collect")  # fmt: skip
    got = rep.responses()
    cut_sent = sum(1 for a in attempts.values() if a >= 1)
    whole = {p: _whole(p).decode() for p in attempts}
    cut_stored = sum(body != whole[p] for p, body in zip(got["patient_id"], got["body"], strict=True))  # fmt: skip
    assert (rep.stored, rep.failed, rep.stopped) == (n, 0, None)
    assert cut_sent == n and set(attempts.values()) == {2}  # each retried once, no more
    assert cut_stored == 0
    add_figure("cut-short answers sent", cut_sent)
    add_figure("cut-short bodies stored", cut_stored)


def test_trickled_answers_are_ended_by_the_deadline(tmp_path):
    body = _whole("T")  # ~340 bytes at one per 20 ms: 7 s each, a byte far within 1 s
    n = 8
    with Service({"/api/v2/classifier": trickle(body, every=0.02)}) as svc:
        client = Client(svc.base_url, api_key="k-hostile", cache="memory", timeout=(2.0, 1.0), request_deadline=0.5, max_retries=0)  # fmt: skip
        rep = fetch_cohort(cohort_manifest(n), "classifier", tmp_path / "out", client=client, max_workers=4, progress=False, errors="collect")  # fmt: skip
        sent = len(svc.requests)
    ended = int(rep.failures["error"].str.contains("request_deadline").sum())
    assert (rep.stored, rep.failed, rep.stopped) == (0, n, None)
    assert set(rep.failures["error_type"]) == {"IncompleteResponseError"} and ended == n
    add_figure("trickled requests sent", sent)
    add_figure("trickled requests ended", ended)


def test_bit_flips_in_parts_and_cache_are_caught_or_harmless_never_silent():
    spec = importlib.util.spec_from_file_location("bitflips", ROOT / "benchmarks" / "bitflips.py")
    bitflips = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bitflips)
    results = bitflips.main(["--smoke"])
    part, cache = results["part"], results["cache"]
    for counts in (part, cache):
        assert counts["tried"] == 40
        assert counts["silent"] == 0 and counts["other errors"] == 0, counts
        assert counts["caught"] > 0  # the sample does hit data, not only padding
    assert part["bodies changed"] == part["keys changed"] == 0
    add_figure("bit flips tried in responses", part["tried"])
    add_figure("bit flips caught in responses", part["caught"])
    add_figure("bit flips that silently changed stored", part["silent"])
    add_figure("bit flips tried in the HTTP", cache["tried"])
    add_figure("bit flips caught in the HTTP", cache["caught"])
    add_figure("bit flips that silently changed cached", cache["silent"])
