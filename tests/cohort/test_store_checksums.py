"""Every stored body is verifiable (issue 30, items 2 and 6): Parquet page checksums and a
SHA-256 of each body and request identity, checked by read_responses, verify and the fetch;
a mismatch is a DamagedFileError that the fetch heals like any damaged part; stores written
before the digests existed still read; the healing summary counts what it stored again."""

from __future__ import annotations

import hashlib
import logging

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dentalkit.errors import DamagedFileError
from dentalkit.fetch.cohort import fetch_cohort
from dentalkit.fetch.store import CHECKSUM_COLUMNS, read_responses, verify_store
from tests.cohort.test_store_heal import first_fetch, manifest, same_table
from tests.damage import truncated


def _rewrite(part, change) -> None:
    """Rewrite a part with ``change(table)`` applied and valid page checksums: damage that
    happened before the pages were checksummed (or a file edited by hand)."""
    table = pq.read_table(part)
    pq.write_table(change(table), part, write_page_checksum=True)


def _set(table: pa.Table, column: str, row: int, value: str) -> pa.Table:
    values = table.column(column).to_pylist()
    values[row] = value
    i = table.schema.get_field_index(column)
    return table.set_column(i, table.schema.field(i), pa.array(values, table.schema.field(i).type))


def test_each_row_carries_the_sha256_of_its_body_and_identity(make_client, tmp_path):
    out = tmp_path / "out"
    got = first_fetch(make_client(), out, n=4)
    for body, digest in zip(got["body"], got["body_sha256"], strict=True):
        assert digest == hashlib.sha256(body.encode("utf-8")).hexdigest()  # as sha256sum
    row = got.iloc[0]
    fields = [row[c] for c in ("request_key", "patient_id", "timestamp")]
    fields += [str(row["endpoint"]), row["image_url"], row["options"]]
    assert row["key_sha256"] == hashlib.sha256("\x1f".join(fields).encode()).hexdigest()
    part = next((out / "responses").glob("part-*.parquet"))
    meta = pq.ParquetFile(part).metadata
    assert meta.num_columns == len(got.columns)  # the two digests are columns of the part


@pytest.mark.parametrize(
    ("column", "value", "words"),
    [
        ("body", '{"Version": "changed"}', "body does not match its body_sha256"),
        ("patient_id", "H999", "request identity does not match its key_sha256"),
        ("request_key", "0" * 64, "request identity does not match its key_sha256"),
    ],
)
def test_a_changed_row_is_damage_and_the_fetch_heals_it(make_client, fresh, tmp_path, column, value, words):  # fmt: skip
    client = make_client()
    out = tmp_path / "out"
    before = first_fetch(client, out)
    part = sorted((out / "responses").glob("part-*.parquet"))[0]
    _rewrite(part, lambda t: _set(t, column, 3, value))
    with pytest.raises(DamagedFileError, match=words):
        read_responses(out)
    report = verify_store(out)
    assert report.loc[~report["ok"], "file"].tolist() == [f"responses/{part.name}"]
    assert words in report.loc[~report["ok"], "reason"].iloc[0]
    fresh.reset_stats()
    rep = fetch_cohort(manifest(20), "classifier", out, client=client, progress=False)
    assert rep.stored == 10 and rep.from_cache == 10 and fresh.stats()["total"] == 0
    assert rep.quarantined["kind"].tolist() == ["responses part"]
    same_table(read_responses(out), before)  # the original bodies, from the HTTP cache
    assert verify_store(out)["ok"].all()


def test_stores_written_before_the_digests_still_read(make_client, fresh, tmp_path):
    client = make_client()
    out = tmp_path / "out"
    before = first_fetch(client, out)
    for part in (out / "responses").glob("part-*.parquet"):  # as dentalkit wrote them before
        table = pq.read_table(part).drop_columns(list(CHECKSUM_COLUMNS))
        pq.write_table(table, part, write_page_checksum=False)
    got = read_responses(out)
    same_table(got, before)
    assert got["body_sha256"].isna().all() and got["key_sha256"].isna().all()
    assert verify_store(out)["ok"].all()
    fresh.reset_stats()
    rep = fetch_cohort(manifest(24), "classifier", out, client=client, progress=False)
    assert (rep.already_stored, rep.stored, fresh.stats()["total"]) == (20, 4, 4)
    mixed = read_responses(out)  # old parts and a new one, each read as written
    assert mixed["body_sha256"].notna().sum() == 4


def test_the_summary_counts_the_rows_an_unreadable_part_held(make_client, tmp_path):
    client = make_client()
    out = tmp_path / "out"
    first_fetch(client, out)
    part = sorted((out / "responses").glob("part-*.parquet"))[0]
    truncated(part)  # nothing of it can be read: the key ledger says what it held
    rep = fetch_cohort(manifest(20), "classifier", out, client=client, progress=False)
    assert rep.quarantined["rows"].tolist() == [10]
    assert (rep.stored, rep.lost, rep.recovered) == (10, 10, 10)
    assert (
        "1 damaged file(s) moved aside, 10 of the 10 rows they held stored again" in rep.summary()
    )


def test_rows_of_an_unreadable_part_outside_the_manifest_are_named(make_client, tmp_path, caplog):
    client = make_client()
    out = tmp_path / "out"
    first_fetch(client, out)
    truncated(sorted((out / "responses").glob("part-*.parquet"))[0])
    caplog.set_level(logging.WARNING, logger="dentalkit")
    rep = fetch_cohort(manifest(3, start=50), "classifier", out, client=client, progress=False)
    assert (rep.stored, rep.lost, rep.recovered) == (3, 10, 0)
    assert "0 of the 10 rows they held stored again" in rep.summary()
    assert "10 request(s) that damaged part(s) held are not in this manifest" in caplog.text
    assert "_ledger.tsv" in caplog.text
