"""The store's write lock lives exactly as long as the fetch that took it, however it ends.

A lock left held by an error would make the next fetch into the same folder, in the same
process (a notebook after a Ctrl-C, a script's retry), refuse with ``StoreLockedError`` until
the garbage collector happened to drop the failed run's frame, which a kept traceback
(``sys.last_traceback``, a test's ``excinfo``) prevents.
"""

from __future__ import annotations

import pandas as pd
import pytest

from dentalkit import settings
from dentalkit.errors import StoreLockedError
from dentalkit.fetch import cohort
from dentalkit.fetch.cohort import fetch_cohort
from dentalkit.fetch.store import ResponseStore, read_responses, store_lock


def manifest(n: int) -> pd.DataFrame:
    ids = [f"L{i:03d}" for i in range(n)]
    return pd.DataFrame(
        {
            "patient_id": ids,
            "timestamp": "2024-03-05",
            "image_url": [f"https://images.example.org/{p}/x.png" for p in ids],
        }
    )


@pytest.mark.parametrize(
    ("point", "error"),
    [
        ("_select_requests", KeyboardInterrupt),  # Ctrl-C while the store is being read
        ("_Scheduler", RuntimeError),  # the sending machinery fails to start
    ],
)
def test_an_error_after_the_lock_is_taken_releases_it(
    make_client, fresh, tmp_path, monkeypatch, point, error
):
    def broken(*args, **kwargs):
        raise error("injected")

    out = tmp_path / "out"
    monkeypatch.setattr(cohort, point, broken)
    with pytest.raises(error, match="injected") as failed:
        fetch_cohort(manifest(2), "classifier", out, client=make_client(), progress=False)
    monkeypatch.undo()
    monkeypatch.setattr(settings, "store_lock_timeout", 0.0)  # refuse at once if still held
    # the failed run's traceback (and so its frame, which held the store) is still alive here
    rep = fetch_cohort(manifest(2), "classifier", out, client=make_client(), progress=False)
    assert (rep.stored, rep.failed) == (2, 0)
    assert len(read_responses(out)) == 2 and fresh.stats()["total"] == 2
    assert failed.traceback  # kept alive until after the second fetch


def test_store_lock_is_held_inside_a_with_block_and_released_after_it(tmp_path):
    out = tmp_path / "out"
    with store_lock(out) as lock:
        assert lock.is_locked and lock.lock_file.endswith(".dentalkit.lock")
        with pytest.raises(StoreLockedError, match="another fetch is writing"):
            store_lock(out)
    assert not lock.is_locked
    with pytest.raises(ValueError, match="inside"), store_lock(out):
        raise ValueError("inside")
    again = store_lock(out)  # free again after the error too
    again.release()
    again.release()  # a second release is harmless
    assert not again.is_locked


def test_a_store_used_as_a_context_manager_releases_its_lock(tmp_path):
    out = tmp_path / "out"
    with ResponseStore(out, "http://127.0.0.1:1") as store:
        store.lock = store_lock(out)
    assert store.lock is None
    store_lock(out).release()  # nobody holds it
