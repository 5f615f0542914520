"""fetch_cohort over loopback: store contents, resume, failures, retry_failed, executors."""

from __future__ import annotations

import multiprocessing
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor

import orjson
import pandas as pd
import pyarrow.parquet as pq
import pytest

from dentalkit.errors import ConfigurationError, InputError, ManifestError, ServerError
from dentalkit.fetch.cohort import fetch_cohort
from dentalkit.fetch.store import read_failures, read_responses

KEY_PROD = "prod-like-key-7f3a9c1e55"


def manifest(n: int, start: int = 0) -> pd.DataFrame:
    ids = [f"P{i:03d}" for i in range(start, start + n)]
    return pd.DataFrame(
        {
            "patient_id": ids,
            "timestamp": "2024-03-05",
            "image_url": [f"https://images.example.org/{p}/pano.png" for p in ids],
        }
    )


def test_fetch_writes_the_responses_table(make_client, fresh, tmp_path):
    client = make_client(api_key=KEY_PROD)
    m = manifest(6)
    m["draw_contours"] = [True, False, None, None, None, None]
    rep = fetch_cohort(m, "pano_segmentation", tmp_path / "out", client=client, progress=False)
    assert (rep.requested, rep.sent, rep.stored, rep.failed, rep.from_cache) == (6, 6, 6, 0, 0)
    df = read_responses(tmp_path / "out")
    assert df["patient_id"].tolist() == m["patient_id"].tolist()
    assert df["endpoint"].astype(str).unique().tolist() == ["pano_segmentation"]
    assert df["options"].tolist()[:3] == ['{"DrawContours":true}', '{"DrawContours":false}', "{}"]
    assert (df["status_code"] == 200).all() and df["error"].isna().all()
    assert (df["session_time"] == pd.Timestamp("2024-03-05", tz="UTC")).all()
    # the body is the exact text the client received, and it is what a direct call returns
    direct = client.pano_segmentation("P002", "2024-03-05", m.loc[2, "image_url"])
    assert direct.from_cache and df.loc[2, "body"] == direct.text
    assert df.loc[2, "model_version"] == orjson.loads(direct.text).get("Version")
    # the key is in no file of the store: raw bytes, and every decoded Parquet value
    files = [p for p in (tmp_path / "out").rglob("*") if p.is_file()]
    assert KEY_PROD.encode() not in b"".join(p.read_bytes() for p in files)
    text = "".join(
        pq.read_table(p).to_pandas().astype(str).to_csv() for p in files if p.suffix == ".parquet"
    )
    assert "P003" in text and KEY_PROD not in text


def test_rerun_skips_stored_requests_without_http_or_cache(make_client, fresh, tmp_path):
    client = make_client()
    fetch_cohort(manifest(5), "classifier", tmp_path / "out", client=client, progress=False)
    before = fresh.stats()["total"]
    client.session.cache.clear()  # were the cache consulted, every request would go out again
    rep = fetch_cohort(manifest(8), "classifier", tmp_path / "out", client=client, progress=False)
    assert (rep.already_stored, rep.sent, rep.stored) == (5, 3, 3)
    assert fresh.stats()["total"] - before == 3
    df = read_responses(tmp_path / "out")
    assert len(df) == 8 and df["request_key"].is_unique


def signed(m: pd.DataFrame, stamp: str) -> pd.DataFrame:
    """The manifest's links presigned (SigV4 query parameters) at another moment."""
    out = m.copy()
    out["image_url"] = out["image_url"] + (
        f"?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Date={stamp}&X-Amz-Expires=259200"
        f"&X-Amz-SignedHeaders=host&X-Amz-Signature={stamp}ab12"
    )
    return out


def test_re_signed_links_of_the_same_images_resume_without_a_request(make_client, fresh, tmp_path):
    """A manifest rebuilt with fresh presigned links (new X-Amz-Date and -Signature) names the
    same images: the rerun sends only what is new; a link to another object version is new."""
    client = make_client()
    first = signed(manifest(4), "20261127T100000Z")
    fetch_cohort(first, "classifier", tmp_path / "out", client=client, progress=False)
    before = fresh.stats()["total"]
    again = signed(manifest(5), "20261128T090000Z")
    other = again.iloc[[0]].assign(
        patient_id="P000", image_url=again["image_url"].iloc[0] + "&versionId=2"
    )
    rep = fetch_cohort(again, "classifier", tmp_path / "out", client=client, progress=False)
    assert (rep.already_stored, rep.sent, rep.stored) == (4, 1, 1)
    assert fresh.stats()["total"] - before == 1
    rep = fetch_cohort(other, "classifier", tmp_path / "out", client=client, progress=False)
    assert (rep.already_stored, rep.sent) == (0, 1)
    df = read_responses(tmp_path / "out")
    assert len(df) == 6 and df["request_key"].is_unique
    # the links stored are the ones that were sent, signature included
    assert df["image_url"].str.contains("X-Amz-Signature=20261127T100000Zab12").sum() == 4


def test_a_new_study_is_served_from_the_http_cache(make_client, fresh, tmp_path):
    client = make_client()
    fetch_cohort(manifest(4), "classifier", tmp_path / "a", client=client, progress=False)
    fresh.reset_stats()
    rep = fetch_cohort(manifest(4), "classifier", tmp_path / "b", client=client, progress=False)
    assert rep.from_cache == 4 and fresh.stats()["total"] == 0
    a, b = read_responses(tmp_path / "a"), read_responses(tmp_path / "b")
    assert a["body"].tolist() == b["body"].tolist()
    assert b["from_cache"].all() and not a["from_cache"].any()
    assert (a["fetched_at"] - b["fetched_at"]).abs().max() < pd.Timedelta("1s")


def test_failures_are_recorded_skipped_on_rerun_and_retried_on_request(
    make_client, fresh, tmp_path
):
    client = make_client(max_retries=0)
    fresh.set_faults(error_rate=1.0)
    rep = fetch_cohort(manifest(3), "classifier", tmp_path / "out", client=client, progress=False, errors="collect")  # fmt: skip
    assert (rep.failed, rep.stored) == (3, 0)
    fails = read_failures(tmp_path / "out")
    assert fails["error_type"].unique().tolist() == ["ServerError"]
    assert fails["status_code"].isin([500, 502, 503]).all()
    assert fails["row"].tolist() == [1, 2, 3]
    fresh.set_faults(error_rate=0.0)
    rep = fetch_cohort(manifest(4), "classifier", tmp_path / "out", client=client, progress=False, errors="collect")  # fmt: skip
    assert (rep.skipped_failed, rep.sent, rep.stored) == (3, 1, 1)
    assert len(read_failures(tmp_path / "out")) == 3
    rep = fetch_cohort(manifest(4), "classifier", tmp_path / "out", client=client, progress=False, retry_failed=True, errors="collect")  # fmt: skip
    assert (rep.sent, rep.stored, rep.failed) == (3, 3, 0)
    assert read_failures(tmp_path / "out").empty
    assert len(read_responses(tmp_path / "out")) == 4


def test_errors_raise_stops_at_the_first_failure_and_keeps_what_arrived(
    make_client, fresh, tmp_path
):
    client = make_client(max_retries=0)
    fetch_cohort(manifest(2), "classifier", tmp_path / "out", client=client, progress=False)
    fresh.set_faults(error_rate=1.0)
    with pytest.raises(ServerError) as info:  # "raise" is the default
        fetch_cohort(manifest(6), "classifier", tmp_path / "out", client=client, progress=False, max_workers=1)  # fmt: skip
    assert len(read_responses(tmp_path / "out")) == 2
    failures = read_failures(tmp_path / "out")
    assert len(failures) >= 1
    # the error names the request (endpoint, patient) and a note says what was kept and
    # how to go on
    assert "/classifier" in str(info.value) and "P002" in str(info.value)
    (note,) = info.value.__notes__
    assert "stopped at this failed request (errors='raise')" in note
    assert str(tmp_path / "out" / "failures.parquet") in note and "errors='collect'" in note
    # the note's advice holds: a rerun sends nothing stored again and skips the failure
    fresh.set_faults(error_rate=0.0)
    fresh.reset_stats()
    rep = fetch_cohort(manifest(6), "classifier", tmp_path / "out", client=client, progress=False)  # fmt: skip
    assert rep.already_stored == 2 and rep.skipped_failed == len(failures)
    assert fresh.stats()["total"] == rep.sent == 4 - len(failures)


def test_bad_manifest_raises_before_anything_is_sent(make_client, fresh, tmp_path):
    m = manifest(3)
    m.loc[1, "image_url"] = "scan.png"
    with pytest.raises(ManifestError, match="row 2"):
        fetch_cohort(m, "classifier", tmp_path / "out", client=make_client(), errors="raise", progress=False)  # fmt: skip
    assert fresh.stats()["total"] == 0
    rep = fetch_cohort(m, "classifier", tmp_path / "out", client=make_client(), progress=False, errors="collect")  # fmt: skip
    assert rep.problems[["row", "field"]].to_numpy().tolist() == [[2, "image_url"]]
    assert rep.stored == 2


def test_one_out_folder_per_service(make_client, tmp_path):
    (tmp_path / "out").mkdir()
    fetch_cohort(manifest(1), "classifier", tmp_path / "out", client=make_client(), progress=False)
    from dentalkit.fetch.client import Client

    other = Client("https://svc.example.org/api/v2", api_key="k", cache="memory")
    with pytest.raises(ConfigurationError, match="one out folder per service"):
        fetch_cohort(manifest(1), "classifier", tmp_path / "out", client=other, progress=False)


def test_process_pool_executor_builds_clients_in_workers(make_client, fresh, tmp_path):
    client = make_client(cache=tmp_path / "shared.sqlite")
    ctx = multiprocessing.get_context("spawn")  # as a dask worker: nothing inherited
    with ProcessPoolExecutor(max_workers=2, mp_context=ctx) as pool:
        rep = fetch_cohort(manifest(6), ["classifier", "pano_segmentation"], tmp_path / "out", client=client, executor=pool, progress=False)  # fmt: skip
    assert (rep.stored, rep.failed) == (12, 0)
    assert fresh.stats()["total"] == 12
    # the workers wrote the shared cache: the parent now gets every answer as a hit
    again = fetch_cohort(manifest(6), ["classifier", "pano_segmentation"], tmp_path / "out2", client=client, progress=False)  # fmt: skip
    assert again.from_cache == 12 and fresh.stats()["total"] == 12
    assert (
        read_responses(tmp_path / "out")["body"].tolist()
        == read_responses(tmp_path / "out2")["body"].tolist()
    )


class CountingExecutor(ThreadPoolExecutor):
    """An external executor (as dask's would be) that counts the tasks it is given."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.tasks = 0

    def submit(self, fn, /, *args, **kwargs):
        self.tasks += 1
        return super().submit(fn, *args, **kwargs)


@pytest.mark.parametrize(("batch_size", "tasks"), [(None, 4), (1, 20), (3, 7)])
def test_external_executors_get_batches_of_requests(
    make_client, fresh, tmp_path, batch_size, tasks
):
    client = make_client()
    reference = fetch_cohort(manifest(20), "classifier", tmp_path / "ref", client=make_client(cache=tmp_path / "ref.sqlite"), progress=False)  # fmt: skip
    assert reference.stored == 20
    fresh.reset_stats()
    with CountingExecutor(max_workers=4) as pool:
        rep = fetch_cohort(manifest(20), "classifier", tmp_path / "out", client=client, executor=pool, max_workers=4, batch_size=batch_size, progress=False)  # fmt: skip
    # automatic: 20 requests over 4 workers -> batches of 5 (one full round, 4 tasks)
    assert pool.tasks == tasks
    assert (rep.stored, rep.failed) == (20, 0)
    assert fresh.stats()["total"] == 20  # each request sent once, none lost in a batch
    got, ref = read_responses(tmp_path / "out"), read_responses(tmp_path / "ref")
    assert sorted(got["request_key"]) == sorted(ref["request_key"])
    assert got.set_index("request_key")["body"].sort_index().tolist() == ref.set_index("request_key")["body"].sort_index().tolist()  # fmt: skip


def test_a_failed_request_in_a_batch_fails_alone(make_client, fresh, tmp_path, monkeypatch):
    import dentalkit.fetch._schedule as schedule  # where _fetch_batch looks _fetch_one up
    from dentalkit.errors import TransportError

    real = schedule._fetch_one

    def flaky(client, payload):  # the request of P002 fails, as a lost connection would
        if payload[1]["PatientID"] == "P002":
            return TransportError("simulated: connection reset")
        return real(client, payload)

    monkeypatch.setattr(schedule, "_fetch_one", flaky)
    m = manifest(6)
    with CountingExecutor(max_workers=2) as pool:
        rep = fetch_cohort(m, "classifier", tmp_path / "out", client=make_client(), executor=pool, batch_size=3, progress=False, errors="collect")  # fmt: skip
    assert pool.tasks == 2
    stored = set(read_responses(tmp_path / "out")["patient_id"])
    failed = read_failures(tmp_path / "out")
    assert (rep.stored, rep.failed) == (5, 1)
    assert failed["patient_id"].tolist() == ["P002"]
    assert failed["error_type"].tolist() == ["TransportError"]
    assert stored == set(m["patient_id"]) - {"P002"}


def test_batch_size_must_be_positive(make_client, tmp_path):
    with CountingExecutor(max_workers=1) as pool, pytest.raises(InputError, match="batch_size"):
        fetch_cohort(manifest(2), "classifier", tmp_path / "out", client=make_client(), executor=pool, batch_size=0, progress=False)  # fmt: skip


@pytest.mark.parametrize("workers", [0, -1, 2.5, True])
def test_max_workers_must_be_positive_before_anything_is_opened(make_client, tmp_path, workers):
    # -1 reached ThreadPoolExecutor as a bare ValueError after the store had been locked
    with pytest.raises(InputError, match="max_workers must be a positive integer"):
        fetch_cohort(manifest(2), "classifier", tmp_path / "out", client=make_client(), max_workers=workers, progress=False)  # fmt: skip
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize(
    ("n", "workers", "batch"),
    [
        (800, 16, 5),  # ceil(800/(16*5)) * 5 = 50 request times = the ideal 800/16
        (1_000_000, 16, 8),  # all batches within 0.01 % of ideal: the largest
        (10, 16, 1),  # fewer requests than workers
        (17, 16, 2),  # one round of 2 instead of two rounds of 1
    ],
)
def test_automatic_batch_size_fills_the_last_round(n, workers, batch):
    from dentalkit.fetch._schedule import _auto_batch

    assert _auto_batch(n, workers) == batch


def test_many_threads_share_one_sqlite_cache(make_client, fresh, tmp_path):
    fresh.set_faults(latency=0.02)
    client = make_client()
    rep = fetch_cohort(manifest(60), "classifier", tmp_path / "out", client=client, max_workers=16, progress=False, flush_every=7, flush_interval=600)  # fmt: skip
    assert (rep.stored, rep.failed) == (60, 0)
    parts = sorted((tmp_path / "out" / "responses").glob("part-*.parquet"))
    assert [pq.read_metadata(p).num_rows for p in parts] == [7] * 8 + [4]
    assert len(list(client.session.cache.responses.keys())) == 60
    assert fresh.stats()["total"] == 60


def test_tle_for_two_patients_with_one_query_is_one_call_and_two_rows(make_client, fresh, tmp_path):
    from tests.helpers import VALID_TLE_QUERY as DEMO_TLE

    m = pd.DataFrame(
        [{"patient_id": p, "timestamp": "2024-03-05", **DEMO_TLE} for p in ("P1", "P2")]
    )
    rep = fetch_cohort(m, "tle", tmp_path / "out", client=make_client(), progress=False)
    assert rep.stored == 2 and fresh.stats()["by_path"] == {"/tle": 1}
    df = read_responses(tmp_path / "out")
    assert df["patient_id"].tolist() == ["P1", "P2"]
    assert df["body"].iloc[0] == df["body"].iloc[1]
    assert df["options"].iloc[0] == orjson.dumps(dict(sorted(DEMO_TLE.items()))).decode()


def test_progress_bar_shows_requests_cache_hits_and_failures(make_client, fresh, tmp_path, capsys):
    client = make_client()
    fetch_cohort(manifest(3), "classifier", tmp_path / "a", client=client, progress=False)
    assert capsys.readouterr().err == ""
    fetch_cohort(manifest(4), "classifier", tmp_path / "b", client=client, progress=True)
    err = capsys.readouterr().err
    assert "4/4" in err and "cache=3" in err and "failed=0" in err and "req/s" in err
