"""A store that heals: damaged files are named, moved aside (never deleted) and their rows
sent again — from the HTTP cache where it holds them, else from the service — and nothing is
reported stored that cannot be read. One writer per store; readers never wait."""

from __future__ import annotations

import threading
import time

import pandas as pd
import pytest

from dentalkit.errors import DamagedFileError, StoreLockedError
from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import fetch_cohort
from dentalkit.fetch.store import read_failures, read_responses, verify_store
from tests.damage import KINDS, body_column, garbled_middle, truncated


def manifest(n: int, start: int = 0) -> pd.DataFrame:
    ids = [f"H{i:03d}" for i in range(start, start + n)]
    return pd.DataFrame(
        {
            "patient_id": ids,
            "timestamp": "2024-03-05",
            "image_url": [f"https://images.example.org/{p}/x.png" for p in ids],
        }
    )


def first_fetch(client, out, n=20, start=0):
    rep = fetch_cohort(manifest(n, start), "classifier", out, client=client, progress=False, flush_every=10)  # fmt: skip
    assert rep.stored == n
    return read_responses(out)


def same_table(a: pd.DataFrame, b: pd.DataFrame) -> None:
    cols = ["patient_id", "timestamp", "endpoint", "request_key", "body"]
    pd.testing.assert_frame_equal(a[cols], b[cols])


@pytest.mark.parametrize("kind", list(KINDS))
def test_a_damaged_part_is_named_then_healed_from_the_http_cache(
    make_client, fresh, tmp_path, kind
):
    client = make_client()
    out = tmp_path / "out"
    before = first_fetch(client, out)
    part = sorted((out / "responses").glob("part-*.parquet"))[0]
    KINDS[kind](part)
    damaged = part.read_bytes()
    with pytest.raises(DamagedFileError, match=part.name) as info:
        read_responses(out)
    assert "dentalkit fetch" in str(info.value) and "verify" in str(info.value)
    report = verify_store(out)
    assert report.loc[~report["ok"], "file"].tolist() == [f"responses/{part.name}"]

    fresh.reset_stats()
    rep = fetch_cohort(manifest(20), "classifier", out, client=client, progress=False)
    assert (rep.already_stored, rep.stored, rep.from_cache, rep.failed) == (10, 10, 10, 0)
    assert fresh.stats()["total"] == 0  # every lost row came back from the HTTP cache
    assert len(rep.quarantined) == 1 and rep.quarantined["kind"].iloc[0] == "responses part"
    moved = list((out / "_quarantine").iterdir())
    assert [p.read_bytes() for p in moved] == [damaged]  # moved aside byte for byte
    same_table(read_responses(out), before)  # rows lost: 0
    assert verify_store(out)["ok"].all()
    assert "damaged file(s) moved aside" in rep.summary()


def test_without_the_cache_exactly_the_lost_rows_go_to_the_service(make_client, fresh, tmp_path):
    out = tmp_path / "out"
    before = first_fetch(make_client(), out)
    part = sorted((out / "responses").glob("part-*.parquet"))[1]
    body_column(part)
    fresh.reset_stats()
    other = make_client(cache=tmp_path / "other-cache.sqlite")  # an empty cache
    rep = fetch_cohort(manifest(20), "classifier", out, client=other, progress=False)
    assert fresh.stats()["total"] == 10 and rep.quarantined["rows"].tolist() == [10]
    assert (rep.stored, rep.recovered, rep.from_cache) == (10, 10, 0)
    same_table(read_responses(out), before)


def test_rows_of_a_damaged_part_outside_the_manifest_are_rebuilt_and_fetched(make_client, fresh, tmp_path):  # fmt: skip
    out = tmp_path / "out"
    client = make_client()
    m = manifest(6)
    m["draw_contours"] = [True, False, None, True, None, None]  # options survive the rebuild
    fetch_cohort(m, "pano_segmentation", out, client=client, progress=False)
    before = read_responses(out)
    (part,) = (out / "responses").glob("part-*.parquet")
    body_column(part)
    # the next run is about other patients: the six lost rows are still sent again
    rep = fetch_cohort(manifest(3, start=50), "pano_segmentation", out, client=client, progress=False)  # fmt: skip
    assert (rep.stored, rep.recovered, rep.failed) == (9, 6, 0)
    after = read_responses(out)
    same_table(after[after["patient_id"] < "H050"].reset_index(drop=True), before)


@pytest.mark.parametrize("kind", list(KINDS))
def test_damaged_failures_and_marker_are_named_and_healed(make_client, fresh, tmp_path, kind):
    out = tmp_path / "out"
    fresh.set_faults(error_rate=1.0)
    client = make_client(max_retries=0)
    rep = fetch_cohort(
        manifest(4), "classifier", out, client=client, progress=False, errors="collect"
    )
    assert rep.failed == 4
    fresh.set_faults(error_rate=0.0)
    KINDS[kind](out / "failures.parquet")
    KINDS[kind](out / "_dentalkit.json")
    with pytest.raises(DamagedFileError, match=r"failures\.parquet"):
        read_failures(out)
    with pytest.raises(DamagedFileError, match=r"_dentalkit\.json"):
        read_responses(out)
    assert set(verify_store(out).query("not ok")["kind"]) == {"failures table", "store marker"}
    rep = fetch_cohort(manifest(4), "classifier", out, client=client, progress=False)
    # the failures list is gone, so its requests are sent again rather than skipped
    assert (rep.skipped_failed, rep.stored) == (0, 4)
    assert sorted(rep.quarantined["kind"]) == ["failures table", "store marker"]
    assert len(read_responses(out)) == 4 and verify_store(out)["ok"].all()


def test_a_damaged_sqlite_cache_is_moved_aside_and_the_service_asked(make_client, fresh, tmp_path):
    cache = tmp_path / "http-cache.sqlite"
    out = tmp_path / "out"
    with make_client(cache=cache) as client:
        before = first_fetch(client, out, n=12)
    garbled_middle(cache)
    problems = verify_store(out, cache=cache).query("kind == 'HTTP cache'")
    assert not problems["ok"].iloc[0]
    with pytest.raises(DamagedFileError, match=r"http-cache\.sqlite"):
        Client(fresh.base_url, api_key=fresh.api_key, cache=cache).classifier("H000", "t", "https://a.b/c.png")  # fmt: skip
    for part in (out / "responses").glob("part-*.parquet"):
        part.unlink()  # the store must be rebuilt from somewhere: not from the damaged cache
    fresh.reset_stats()
    client = make_client(cache=cache, heal_cache=True)
    rep = fetch_cohort(manifest(12), "classifier", out, client=client, progress=False)
    assert (rep.stored, rep.from_cache, rep.failed) == (12, 0, 0)
    assert fresh.stats()["total"] == 12
    assert list(tmp_path.glob("http-cache.sqlite.damaged-*"))  # kept, not deleted
    same_table(read_responses(out), before)


def test_truncated_sqlite_cache_file_is_healed_on_open(make_client, fresh, tmp_path):
    cache = tmp_path / "http-cache.sqlite"
    with make_client(cache=cache) as client:
        first_fetch(client, tmp_path / "out", n=4)
    truncated(cache)
    for suffix in ("-wal", "-shm"):
        (tmp_path / f"http-cache.sqlite{suffix}").unlink(missing_ok=True)
    cache.write_bytes(b"not a database at all" * 10)
    with pytest.raises(DamagedFileError, match=r"HTTP cache.*fetch_cohort.*heal_cache=True"):
        make_client(cache=cache, heal_cache=False)
    client = make_client(cache=cache)  # heals by default, as `dentalkit fetch` does
    assert client.quarantined_cache and client.classifier("H000", "t", "https://a.b/c.png").data
    assert list(tmp_path.glob("http-cache.sqlite.damaged-*"))  # moved aside, not deleted


def test_a_cached_body_that_does_not_parse_is_evicted_before_the_retry(make_client, fresh, tmp_path, caplog):  # fmt: skip
    client = make_client(cache=tmp_path / "fs-cache")  # a folder: the filesystem backend
    url = "https://images.example.org/E1/x.png"
    good = client.classifier("E1", "2024-03-05", url)
    cache = client.session.cache
    (key,) = list(cache.responses.keys())
    entry = cache.responses[key]
    entry._content = b'{"Results": {"trunc'  # a damaged entry that still deserialises
    cache.responses[key] = entry
    fresh.reset_stats()
    again = client.classifier("E1", "2024-03-05", url)
    assert not again.from_cache and again.text == good.text
    assert fresh.stats()["total"] == 1  # the retry reached the service, once
    assert "evicted" in caplog.text
    assert client.classifier("E1", "2024-03-05", url).from_cache  # the good answer is cached


def test_one_writer_per_store_readers_never_wait(make_client, fresh, tmp_path):
    out = tmp_path / "out"
    client = make_client()
    first_fetch(client, out, n=4)
    fresh.set_faults(latency=0.3)
    started = threading.Event()
    result: dict = {}

    def slow_fetch():
        started.set()
        result["rep"] = fetch_cohort(manifest(12), "classifier", out, client=make_client(cache=tmp_path / "c2.sqlite"), max_workers=2, progress=False)  # fmt: skip

    t = threading.Thread(target=slow_fetch)
    t.start()
    started.wait()
    deadline = time.monotonic() + 10
    while fresh.stats()["total"] == 0 and time.monotonic() < deadline:
        time.sleep(0.01)  # the first fetch is sending: it holds the lock
    with pytest.raises(StoreLockedError, match="another fetch is writing"):
        fetch_cohort(manifest(12), "classifier", out, client=client, progress=False)
    assert len(read_responses(out)) >= 4  # a reader does not wait for the writer
    t.join()
    fresh.set_faults(latency=0.0)
    assert result["rep"].stored == 8
    rep = fetch_cohort(manifest(12), "classifier", out, client=client, progress=False)
    assert (rep.already_stored, rep.sent) == (12, 0)  # nothing paid twice


def test_iso_years_nanoseconds_cannot_hold_are_manifest_problems_and_stored_with_nat(
    make_client, fresh, tmp_path
):
    # "-3-3" is valid ISO 8601 (3 BC): it used to crash the flush after the answers arrived.
    # A manifest now refuses it (no session_time could be read from it) ...
    m = manifest(2).assign(timestamp=["-3-3", "99999-01-01"])
    rep = fetch_cohort(
        m, "classifier", tmp_path / "out", client=make_client(), progress=False, errors="collect"
    )
    assert rep.stored == 0 and rep.problems["field"].tolist() == ["timestamp", "timestamp"]
    assert rep.problems["value"].tolist() == ["-3-3", "99999-01-01"]
    # ... and the store still writes such rows (a store filled before) with NaT
    from dentalkit.fetch.store import ResponseStore

    store = ResponseStore(tmp_path / "direct", "http://127.0.0.1:1/api/v2")
    row = read_responses(_one_stored(make_client, tmp_path)).iloc[0].to_dict()
    store.append([{**row, "timestamp": ts, "request_key": ts} for ts in ("-3-3", "99999-01-01")])
    got = read_responses(tmp_path / "direct")
    assert got["session_time"].isna().all()
    assert got["timestamp"].tolist() == ["-3-3", "99999-01-01"]


def _one_stored(make_client, tmp_path):
    out = tmp_path / "one"
    fetch_cohort(manifest(1), "classifier", out, client=make_client(), progress=False)
    return out


def test_a_second_fetch_waits_for_the_lock_when_told_to(make_client, fresh, tmp_path, monkeypatch):
    from dentalkit import settings
    from dentalkit.fetch.store import store_lock

    out = tmp_path / "out"
    lock = store_lock(out)
    timer = threading.Timer(0.3, lock.release)
    timer.start()
    monkeypatch.setattr(settings, "store_lock_timeout", 10.0)
    started = time.monotonic()
    rep = fetch_cohort(manifest(2), "classifier", out, client=make_client(), progress=False)
    assert rep.stored == 2 and time.monotonic() - started >= 0.25  # it waited, then wrote
    monkeypatch.setattr(settings, "store_lock_timeout", 0.2)
    held = store_lock(out)
    try:
        with pytest.raises(StoreLockedError, match=r"waited 0\.2 s"):
            fetch_cohort(manifest(2), "classifier", out, client=make_client(), progress=False)
    finally:
        held.release()
