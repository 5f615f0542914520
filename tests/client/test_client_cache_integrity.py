"""Cache entries are verifiable (issue 30, items 2 and 6): each carries a SHA-256 that a
read checks; an entry that fails it, or that holds another request's answer, is never
served — the service is asked and the entry replaced. ``verify --cache`` reports what the
fetch then repairs and leaves no file behind; entries written before checksums still read."""

from __future__ import annotations

import hashlib
import logging
import sqlite3
from contextlib import closing

import pandas as pd
from typer.testing import CliRunner

from dentalkit.cli import app
from dentalkit.fetch._cache import TRAILER, check_http_cache
from dentalkit.fetch.cohort import fetch_cohort

IMG = "https://images.example.org/{}/x.png"


def _fill(client, n=4):
    return {f"K{i}": client.classifier(f"K{i}", "t", IMG.format(i)).text for i in range(n)}


def _entries(cache):
    with closing(sqlite3.connect(cache)) as con:
        return dict(con.execute("SELECT key, value FROM responses"))


def _put(cache, key, value):
    with closing(sqlite3.connect(cache)) as con, con:  # closed: no -wal / -shm stay
        con.execute("UPDATE responses SET value = ? WHERE key = ?", (value, key))


def _key_of(cache, patient):
    """The cache key whose entry answers ``patient`` (its pickle holds the request body)."""
    needle = f'"PatientID": "{patient}"'.encode()
    return next(k for k, v in _entries(cache).items() if needle in v)


def test_entries_end_with_a_sha256_of_their_pickle(make_client, tmp_path):
    cache = tmp_path / "c.sqlite"
    client = make_client(cache=cache)
    _fill(client, 2)
    client.close()
    for value in _entries(cache).values():
        body, tail = value[: -len(TRAILER) - 32], value[-len(TRAILER) - 32 :]
        assert tail[: len(TRAILER)] == TRAILER
        assert tail[len(TRAILER) :] == hashlib.sha256(body).digest()


def test_an_entry_that_fails_its_checksum_is_not_served(make_client, fresh, tmp_path, caplog):
    cache = tmp_path / "c.sqlite"
    client = make_client(cache=cache)
    good = _fill(client)
    client.close()
    key = _key_of(cache, "K1")
    value = bytearray(_entries(cache)[key])
    i = value.index(b"Classification")  # a byte of the body: the pickle still loads
    value[i] ^= 0x20
    _put(cache, key, bytes(value))
    fresh.reset_stats()
    client = make_client(cache=cache)
    caplog.set_level(logging.WARNING, logger="dentalkit")
    res = client.classifier("K1", "t", IMG.format(1))
    assert res.text == good["K1"] and not res.from_cache and fresh.stats()["total"] == 1
    assert "failed its checksum" in caplog.text
    assert client.classifier("K1", "t", IMG.format(1)).from_cache  # replaced, whole


def test_another_requests_answer_under_a_key_is_not_served(make_client, fresh, tmp_path):
    cache = tmp_path / "c.sqlite"
    client = make_client(cache=cache)
    good = _fill(client)
    client.close()
    entries = _entries(cache)
    _put(cache, _key_of(cache, "K1"), entries[_key_of(cache, "K2")])  # intact, but K2's
    fresh.reset_stats()
    client = make_client(cache=cache)
    res = client.classifier("K1", "t", IMG.format(1))
    assert res.text == good["K1"] and res.data["PatientID"] == "K1"
    assert fresh.stats()["total"] == 1
    assert client.classifier("K1", "t", IMG.format(1)).from_cache


def test_verify_reports_damaged_entries_the_fetch_deletes_and_leaves_no_file(make_client, fresh, tmp_path):  # fmt: skip
    cache = tmp_path / "c.sqlite"
    out = tmp_path / "out"
    client = make_client(cache=cache)
    m = pd.DataFrame({"patient_id": ["K0", "K1", "K2"], "timestamp": "2024-03-05", "image_url": [IMG.format(i) for i in range(3)]})  # fmt: skip
    fetch_cohort(m, "classifier", out, client=client, progress=False)
    client.close()
    for patient in ("K0", "K2"):  # two entries of stored requests: never read again
        key = _key_of(cache, patient)
        value = bytearray(_entries(cache)[key])
        value[len(value) // 2] ^= 0x01
        _put(cache, key, bytes(value))
    before = sorted(p.name for p in tmp_path.iterdir())
    assert before == ["c.sqlite", "out"]
    result = CliRunner().invoke(app, ["verify", str(out), "--cache", str(cache)])
    assert result.exit_code == 1, result.output
    assert "2 of 3 entries are damaged (2 fail their checksum)" in result.output
    assert f"--out {out} --cache {cache}` again" in result.output  # the advice names the cache
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no -wal / -shm left behind
    rep = fetch_cohort(m, "classifier", out, client=make_client(cache=cache), progress=False)
    assert "HTTP cache entries" in set(rep.quarantined["kind"])
    assert check_http_cache(cache)[0][1:] == (1, "")
    again = CliRunner().invoke(app, ["verify", str(out), "--cache", str(cache)])
    assert again.exit_code == 0, again.output


def test_entries_written_before_checksums_still_read(make_client, fresh, tmp_path):
    cache = tmp_path / "c.sqlite"
    client = make_client(cache=cache)
    good = _fill(client, 2)
    client.close()
    for key, value in _entries(cache).items():
        _put(cache, key, value[: -len(TRAILER) - 32])  # a plain pickle, as before
    assert check_http_cache(cache)[0][1:] == (2, "")
    fresh.reset_stats()
    client = make_client(cache=cache)
    res = client.classifier("K0", "t", IMG.format(0))
    assert res.from_cache and res.text == good["K0"] and fresh.stats()["total"] == 0
