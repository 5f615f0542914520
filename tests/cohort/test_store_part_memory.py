"""How a responses part is written near the size limit (issue 30, item 4): the rows' texts
are released once they are in Arrow (and given back if the writer fails), and the pages
are Parquet data pages of version 2, which the writer compresses straight from its encoder
(a version-1 page is one more whole copy of the largest body)."""

from __future__ import annotations

from datetime import UTC, datetime

import pyarrow.parquet as pq
import pytest

from dentalkit.fetch import store as store_module
from dentalkit.fetch.store import ResponseStore, read_responses

BASE = "http://127.0.0.1:9/api/v2"


def _row(key: str, body: str) -> dict:
    return {
        "patient_id": f"P-{key}",
        "timestamp": "2024-03-05",
        "endpoint": "classifier",
        "model_version": "v1",
        "request_key": key,
        "image_url": "https://h/x.png",
        "options": "{}",
        "status_code": 200,
        "body": body,
        "fetched_at": datetime(2024, 3, 5, 10, 0, 1, tzinfo=UTC),
        "from_cache": False,
        "error": None,
    }


def test_a_consumed_list_is_emptied_once_its_rows_are_stored(tmp_path):
    store = ResponseStore(tmp_path, BASE)
    rows = [_row("a", '{"x": 1}'), _row("b", '{"x": "' + "y" * 5000 + '"}')]
    expected = [r["body"] for r in rows]
    kept = list(rows)  # the caller may keep its own list: only the given one is emptied
    store.append(rows, consume=True)
    assert rows == []
    assert read_responses(tmp_path)["body"].tolist() == expected
    store.append(kept)  # without consume, the list is left as it was
    assert len(kept) == 2


def test_a_consumed_list_gets_its_rows_back_when_the_writer_fails(tmp_path, monkeypatch):
    store = ResponseStore(tmp_path, BASE)
    rows = [_row("a", '{"x": 1}'), _row("b", '{"x": "\\u00e9"}')]
    before = [dict(r) for r in rows]

    def boom(*args, **kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(store_module.pq, "write_table", boom)
    with pytest.raises(OSError, match="disk full"):
        store.append(rows, consume=True)
    assert [{k: r[k] for k in before[0]} for r in rows] == before
    monkeypatch.undo()
    store.append(rows, consume=True)  # the rows given back store as they were
    assert read_responses(tmp_path)["request_key"].tolist() == ["a", "b"]


def test_parts_are_written_with_version_2_data_pages(tmp_path):
    store = ResponseStore(tmp_path, BASE)
    part = store.append([_row("a", '{"x": "' + "z" * 100_000 + '"}')])
    meta = pq.ParquetFile(part).metadata
    body = meta.row_group(0).column(meta.schema.names.index("body"))
    assert not body.has_dictionary_page
    with open(part, "rb") as fh:
        fh.seek(body.data_page_offset)
        head = fh.read(2)
    # Thrift compact protocol: field 1 (type) of the PageHeader, an i32 (0x15), zigzag
    # varint of PageType.DATA_PAGE_V2 = 3 (0x06); a version-1 page is DATA_PAGE = 0 (0x00)
    assert head == b"\x15\x06", head
