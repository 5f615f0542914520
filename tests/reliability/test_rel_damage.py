"""Nothing lost, nothing leaked: every kind of damage to every file a store is read back from
(responses parts, failures table, marker, SQLite cache) heals with no row lost; a canary key
is in no byte of caches, stores, logs or errors after same- and cross-origin redirects; two
writers never share a store; hostile exports and answers meet their bounds."""

from __future__ import annotations

import base64
import contextlib
import json
import logging
import multiprocessing
import secrets
import threading
import time
import traceback
from pathlib import Path

import pandas as pd
import pytest
import requests

from dentalkit.errors import (
    DentalkitError,
    ManifestError,
    ResponseTooLargeError,
    StoreLockedError,
)
from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import fetch_cohort
from dentalkit.fetch.store import read_responses, verify_store
from dentalkit.sandbox import running
from tests.damage import KINDS, garbled_middle
from tests.hostile_servers import Recorder, Service, huge, redirect_to, send
from tests.reliability.cohort import (
    CHILD_PRELOAD,
    ENDPOINTS,
    add_figure,
    cohort_manifest,
    fetch_child_outcome,
)

pytestmark = pytest.mark.slow

TLE = {"p01": "14", "p02": "unknown-sex", "p03": "2", "p04": "1", "p05": "0", "p06": "4.5", "p07": "3.0", "p08": "0", "p09": "0", "p10": "1", "p11": "6.5"}  # fmt: skip
BAD_TLE = pd.DataFrame([{"patient_id": "R0000", "timestamp": "2025-02-03", "endpoint": "tle", **TLE}])  # fmt: skip


def quiet(sb):
    sb.set_faults(latency=0.0, error_rate=0.0, slow_rate=0.0, malformed_rate=0.0, rate_limit=None)


def lost(reference: pd.DataFrame, got: pd.DataFrame) -> int:
    """Reference rows whose exact body is not in ``got`` (byte for byte)."""
    have = set(zip(got["request_key"], got["body"], strict=True))
    return sum(pair not in have for pair in zip(reference["request_key"], reference["body"], strict=True))  # fmt: skip


def test_every_kind_of_damage_to_every_store_file_heals_with_no_row_lost(frozen_sandbox, reference, tmp_path):  # fmt: skip
    sb = frozen_sandbox
    quiet(sb)
    out, cache = tmp_path / "out", tmp_path / "http.sqlite"
    client = Client(sb.base_url, api_key=sb.api_key, cache=cache)

    n_patients = 150  # 600 requests, in parts of 100 rows
    reference = reference[reference["patient_id"].isin(set(cohort_manifest(n_patients)["patient_id"]))]  # fmt: skip

    def fetch(c):
        return fetch_cohort(
            cohort_manifest(n_patients), ENDPOINTS, out, client=c, progress=False, flush_every=100
        )

    fetch(client)
    fetch_cohort(
        BAD_TLE, None, out, client=client, progress=False, errors="collect"
    )  # one failure row
    damaged = recovered = 0
    kinds = list(KINDS)
    # round 1: four parts, one per kind of damage, and the failures table and the marker;
    # round 2: the failures table and the marker damaged the other ways
    rounds = [
        (kinds, kinds[0], kinds[2]),
        ([], kinds[3], kinds[1]),
    ]
    for part_kinds, failures_kind, marker_kind in rounds:
        parts = sorted((out / "responses").glob("part-*.parquet"))[: len(part_kinds)]
        for part, kind in zip(parts, part_kinds, strict=True):
            KINDS[kind](part)
        KINDS[failures_kind](out / "failures.parquet")
        KINDS[marker_kind](out / "_dentalkit.json")
        expected = {"responses/" + p.name for p in parts} | {"failures.parquet", "_dentalkit.json"}
        found = verify_store(out)
        assert set(found.loc[~found["ok"], "file"]) == expected
        sb.reset_stats()
        rep = fetch(client)
        tle = fetch_cohort(
            BAD_TLE, None, out, client=client, progress=False, errors="collect"
        )  # sent again
        assert sb.stats()["total"] == 1  # the lost rows came from the cache; the tle 400
        assert rep.failed == 0 and tle.failed == 1 and len(rep.quarantined) == len(expected)
        assert rep.stored == 100 * len(parts) and rep.from_cache == rep.stored
        got = read_responses(out)
        assert lost(reference, got) == 0 and len(got) == len(reference)
        assert verify_store(out)["ok"].all()
        damaged += len(expected)
        recovered += len(expected)
    # the HTTP cache damaged too: the lost part's rows come from the service
    client.close()
    garbled_middle(cache)
    part = sorted((out / "responses").glob("part-*.parquet"))[0]
    rows = pq_rows(part)
    KINDS["garbage"](part)
    sb.reset_stats()
    healed = Client(sb.base_url, api_key=sb.api_key, cache=cache, heal_cache=True)
    rep = fetch(healed)
    assert sb.stats()["total"] == rows and rep.stored == rows and rep.failed == 0
    assert set(rep.quarantined["kind"]) >= {"responses part", "HTTP cache (SQLite)"}
    assert list(tmp_path.glob("http.sqlite.damaged-*"))  # moved aside, not deleted
    got = read_responses(out)
    assert lost(reference, got) == 0 and len(got) == len(reference)
    damaged += 2
    recovered += 2
    assert len(list((out / "_quarantine").iterdir())) == damaged - 1  # the cache sits beside
    add_figure("files damaged", damaged)
    add_figure("files recovered", recovered)
    add_figure("rows lost", lost(reference, got))
    add_figure("requests sent", rows + len(rounds) + 1)


def pq_rows(path: Path) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows


def files_bytes(folder: Path) -> bytes:
    blob = b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())
    for p in folder.rglob("*.json"):  # filesystem-cache bodies are base64 inside JSON
        with contextlib.suppress(ValueError, AttributeError):
            blob += base64.b64decode(json.loads(p.read_bytes()).get("_content", ""))
    return blob


def test_canary_key_is_nowhere_after_same_and_cross_origin_redirects(tmp_path, caplog):
    caplog.set_level(logging.DEBUG)
    canary = "dk-live-" + secrets.token_hex(16)
    with running(production_like_key=canary) as sb:
        upstream = sb.base_url  # http://127.0.0.1:<port>/api/v2

        def forward(h, server):  # same-origin hop: this server forwards to the sandbox
            endpoint = h.path.split("/fwd/", 1)[1]
            got = requests.post(f"{upstream}/{endpoint}", data=server.requests[-1]["body"], headers={"x-api-key": h.headers.get("x-api-key", ""), "content-type": "application/json"}, timeout=30)  # fmt: skip
            send(h, got.status_code, got.content)

        routes = {f"/api/v2/{ep.replace('_', '-')}": redirect_to(f"/fwd/{ep.replace('_', '-')}") for ep in ENDPOINTS}  # fmt: skip
        routes.update({f"/fwd/{ep.replace('_', '-')}": forward for ep in ENDPOINTS})
        m = cohort_manifest(10)
        errors: list[BaseException] = []
        with Recorder() as elsewhere, Service(routes) as same:
            cross = Service({f"/api/v2/{ep.replace('_', '-')}": redirect_to(f"{elsewhere.origin}/x") for ep in ENDPOINTS})  # fmt: skip
            with cross:
                for name, base in (("same", same.base_url), ("cross", cross.base_url)):
                    for cache in (tmp_path / f"{name}.sqlite", tmp_path / f"{name}-fs"):
                        with Client(base, api_key=canary, cache=cache, max_retries=1, backoff_base=0.01) as c:  # fmt: skip
                            rep = fetch_cohort(m, ENDPOINTS, tmp_path / f"out-{cache.name}", client=c, progress=False, errors="collect")  # fmt: skip
                            if name == "same":
                                assert (rep.stored, rep.failed) == (40, 0)
                            else:
                                assert (rep.stored, rep.failed) == (0, 40)
                                assert set(rep.failures["error_type"]) == {"RedirectRefusedError"}
                            try:
                                c.classifier("R0001", "2025-02-03", "https://images.example.org/R0001/image.png", refresh=True)  # fmt: skip
                            except DentalkitError as exc:
                                errors.append(exc)
            assert elsewhere.requests == []  # the other origin never saw a request
            assert any("/fwd/" in r["path"] for r in same.requests)  # hops were followed
    texts = "".join("".join(traceback.format_exception(e)) + repr(e) for e in errors)
    places = {
        "caches and stores": files_bytes(tmp_path),
        "logs": caplog.text.encode(),
        "errors": texts.encode(),
    }
    assert b"REDACTED" in places["caches and stores"] and b"/fwd/" in places["caches and stores"]
    assert len(errors) == 2  # the cross-origin calls
    found = sum(blob.count(canary.encode()) for blob in places.values())
    add_figure("keys found", found)
    add_figure("bad inputs tried", 80)
    assert found == 0, [w for w, b in places.items() if canary.encode() in b]


def test_two_concurrent_fetch_processes_never_share_a_store(frozen_sandbox, reference, tmp_path):  # fmt: skip
    sb = frozen_sandbox
    quiet(sb)
    sb.set_faults(latency=0.01)
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload(CHILD_PRELOAD)
    out = tmp_path / "out"
    n_patients = 120
    procs = []
    for i in range(2):
        args = (sb.base_url, sb.api_key, str(tmp_path / f"c{i}.sqlite"), str(out), n_patients, str(tmp_path / f"r{i}"))  # fmt: skip
        procs.append(ctx.Process(target=fetch_child_outcome, args=args))
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    outcomes = sorted((tmp_path / f"r{i}").read_text() for i in range(2))
    sent = sb.stats()["total"]
    quiet(sb)  # (resets the counters)
    n = n_patients * len(ENDPOINTS)
    assert outcomes[0].startswith("StoreLockedError: another fetch is writing"), outcomes
    assert outcomes[1] == f"stored {n}", outcomes
    assert sent == n  # nothing paid twice
    got = read_responses(out)
    assert len(got) == n and got["request_key"].is_unique
    assert lost(reference[reference["patient_id"].isin(set(got["patient_id"]))], got) == 0
    add_figure("second writers refused", 1)
    add_figure("requests sent", n)
    add_figure("duplicates", len(got) - got["request_key"].nunique())


def test_the_dask_path_keeps_one_writer(frozen_sandbox, dask_client, tmp_path):
    sb = frozen_sandbox
    quiet(sb)
    sb.set_faults(latency=0.02)
    out = tmp_path / "out"
    cache = tmp_path / "http.sqlite"
    started = threading.Event()
    result: dict = {}

    def run():
        c = Client(sb.base_url, api_key=sb.api_key, cache=cache)
        started.set()
        result["rep"] = fetch_cohort(cohort_manifest(60), ENDPOINTS, out, client=c, executor=dask_client.get_executor(pure=False), progress=False)  # fmt: skip

    t = threading.Thread(target=run)
    t.start()
    started.wait()
    deadline = time.monotonic() + 60
    while sb.stats()["total"] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)
    with pytest.raises(StoreLockedError):
        fetch_cohort(cohort_manifest(60), ENDPOINTS, out, client=Client(sb.base_url, api_key=sb.api_key, cache="memory"), progress=False)  # fmt: skip
    t.join()
    sent = sb.stats()["total"]
    quiet(sb)
    assert result["rep"].stored == 240 and sent == 240
    got = read_responses(out)
    assert got["request_key"].is_unique and len(got) == 240
    add_figure("second writers refused", 1)


def test_oversized_answers_and_localhost_lookalikes(tmp_path):
    tried = 0
    for chunked in (False, True):
        with Service({"/api/v2/classifier": huge(30 * 2**20, chunked=chunked)}) as svc:
            c = Client(svc.base_url, api_key="k", cache=tmp_path / "c.sqlite", max_response_bytes=8 * 2**20)  # fmt: skip
            with pytest.raises(ResponseTooLargeError):
                c.classifier("P1", "t", "https://a.b/c.png")
            assert len(c.session.cache.responses) == 0
            tried += 1
    from dentalkit.errors import ConfigurationError

    for host in ("evil.localhost", "localhost.evil.org", "127.0.0.1.nip.io", "[::ffff:7f00:1]"):
        with pytest.raises(ConfigurationError):
            Client(f"http://{host}:8765/api/v2", api_key="k", cache="memory")
        tried += 1
    add_figure("bad inputs tried", tried)


def test_formula_payloads_never_reach_a_csv_bare(frozen_sandbox, tmp_path):
    from typer.testing import CliRunner

    from dentalkit.cli import app

    sb = frozen_sandbox
    quiet(sb)
    payloads = ["=cmd|' /C calc'!A0", "@SUM(A1)", "+1+1", "-1-1", "=1+1"]
    # timestamps must read as dates (ISO 8601 or the format given), so formula-shaped ones
    # come with a format that reads them; a TAB (a control character) is never sent at all
    m = pd.DataFrame(
        {
            "patient_id": payloads,
            "timestamp": [
                "=2024-03-05",
                "=2024-03-06",
                "=2024-03-07",
                "=2024-03-08",
                "=2025-02-03",
            ],
            "image_url": [f"https://images.example.org/f{i}/image.png" for i in range(5)],
        }
    )
    store = tmp_path / "store"
    client = Client(sb.base_url, api_key=sb.api_key, cache="memory")
    rep = fetch_cohort(m, "classifier", store, client=client, progress=False, timestamp_format="=%Y-%m-%d")  # fmt: skip
    assert rep.stored == 5
    tab = m.iloc[:1].assign(patient_id="\t=1+1")
    with pytest.raises(ManifestError, match="control character U\\+0009"):
        fetch_cohort(tab, "classifier", store, client=client, progress=False)
    runner = CliRunner()
    env = {"SECRET": secrets.token_urlsafe(32)}
    assert runner.invoke(app, ["tables", str(store), "--out", str(tmp_path / "t")]).exit_code in (0, 1)  # fmt: skip
    for extra in ([], ["--secret-env", "SECRET"]):
        out = tmp_path / ("x" + "".join(extra))
        res = runner.invoke(app, ["export", str(tmp_path / "t"), "--out", str(out), *extra], env=env)  # fmt: skip
        assert res.exit_code == 0, res.output
        import csv

        for path in out.glob("*.csv"):
            with open(path, encoding="utf-8", newline="") as fh:
                for row in csv.reader(fh):
                    for cell in row:
                        bare = cell.startswith(("=", "+", "-", "@", "\t", "\r"))
                        number = cell.lstrip("+-").replace(".", "", 1).replace("e-", "").replace("e+", "").isdigit()  # fmt: skip
                        assert not bare or number, (path.name, cell)
                        assert "\x00" not in cell
    add_figure("bad inputs tried", len(payloads) * 2)
