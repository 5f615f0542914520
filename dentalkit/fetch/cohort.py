"""Fetch a whole cohort: validated manifest → concurrent cached calls → the responses store.

:func:`fetch_cohort` is resumable and loses nothing:

* the store (:mod:`dentalkit.fetch.store`) is read first, and every request already in it is skipped
  without any HTTP request or cache lookup;
* each answer is committed to the HTTP cache the moment it arrives (requests-cache writes it
  before returning), so the cache is the write-ahead log: what a killed run received but had
  not yet flushed to Parquet comes back as a cache hit on the next run, and no completed
  request reaches the service twice;
* Parquet parts are written atomically every ``flush_every`` answers or ``flush_interval``
  seconds and at the end; a request key is never written twice.

Only the calling process writes the store, holding its lock (one writer per store: a second
fetch into the same folder refuses at once, or waits ``settings.store_lock_timeout``);
workers (threads, processes or a ``dask.distributed`` executor) only call the service and
return results. A damaged store file or SQLite cache is moved aside (never deleted) and its
requests are sent again (see :mod:`dentalkit.fetch.store`).

:func:`fetch_cohort` reads as three steps: :func:`_select_requests` chooses what to send (the
plan, plus the requests of quarantined parts, minus what is stored, minus earlier failures),
the scheduler of :mod:`dentalkit.fetch._schedule` sends it and stores the answers as they
arrive, and :func:`_merge_failures` writes the failures table.
"""

from __future__ import annotations

import json
import logging
import os
import time
import warnings
from collections.abc import Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dentalkit import settings
from dentalkit.convert._requests import check_timestamp_format
from dentalkit.endpoints import ENDPOINTS
from dentalkit.errors import (
    DentalkitWarning,
    Errors,
    InputError,
    ManifestError,
    check_errors,
)
from dentalkit.fetch._manifest import plan_requests, read_manifest
from dentalkit.fetch._schedule import _STOPPED, _Scheduler

# public names that lived here before the scheduler moved to _schedule: still importable here
from dentalkit.fetch._schedule import MAX_BATCH as MAX_BATCH
from dentalkit.fetch._schedule import stop_reason as stop_reason
from dentalkit.fetch._sidefiles import keep_manifest_records, store_timestamp_format
from dentalkit.fetch.client import Client
from dentalkit.fetch.store import FAILURES_SCHEMA, ResponseStore, read_responses, store_lock

__all__ = ["FetchReport", "Fetcher", "FirstContactPlan", "fetch_cohort", "first_contact_plan"]

log = logging.getLogger("dentalkit")


@dataclass
class FetchReport:
    """What one :func:`fetch_cohort` run did.

    Attributes
    ----------
    out : Path
        The store folder.
    requested : int
        Valid requests in the manifest.
    already_stored : int
        Skipped because the store already held them (no HTTP, no cache lookup).
    skipped_failed : int
        Skipped because an earlier run failed them (retry with ``retry_failed=True``).
    sent : int
        Requests this run attempted.
    stored : int
        New rows written to the responses store.
    from_cache : int
        Of ``stored``, how many the HTTP cache answered.
    failed : int
        Requests that failed this run.
    seconds : float
        Wall time of the run.
    problems : DataFrame
        Manifest problems (``errors="collect"``), columns
        :data:`dentalkit.errors.PROBLEM_COLUMNS` (row, field, value, reason …).
    failures : DataFrame
        The store's failures table after this run.
    stopped : str or None
        Why the run stopped sending early: ``"auth"`` (the service rejected the API key:
        every other request would fail the same way) or ``"unreachable"`` (the service
        could not be reached, after all retries, before any answer arrived). The unsent
        requests are neither stored nor failures; a rerun sends them.
    stop_reason : str or None
        The error message of that request (never the key).
    quarantined : DataFrame
        Damaged files this run moved aside (never deleted): ``file``, ``kind``, ``reason``,
        ``moved_to``, ``rows`` (rows the file held, when its request columns could still be
        read).
    lost : int
        Rows that quarantined parts held and the store no longer holds, as far as known
        (their readable request columns, or the store's key ledger for a part that cannot
        be read at all).
    recovered : int
        Of ``stored``, the rows that quarantined parts had held (sent again; the HTTP cache
        answers those it holds). Requests of a quarantined part that are not in the manifest
        are rebuilt from the part's request columns and sent too (their failure ``row`` is 0).
    """

    out: Path
    requested: int = 0
    already_stored: int = 0
    skipped_failed: int = 0
    sent: int = 0
    stored: int = 0
    from_cache: int = 0
    failed: int = 0
    seconds: float = 0.0
    problems: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    failures: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    stopped: str | None = None
    stop_reason: str | None = None
    quarantined: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    lost: int = 0
    recovered: int = 0

    @property
    def bad_rows(self) -> int:
        """Manifest rows skipped for their problems (a row may have several problems)."""
        return int(self.problems["row"].nunique()) if len(self.problems) else 0

    def responses(self) -> pd.DataFrame:
        """The whole responses table of :attr:`out` (see :func:`dentalkit.fetch.store.read_responses`)."""
        return read_responses(self.out)

    def summary(self) -> str:
        """One line for humans."""
        text = (
            f"{self.requested} requests: {self.already_stored} already stored, "
            f"{self.stored} stored now ({self.from_cache} from the HTTP cache), "
            f"{self.failed} failed"
        )
        if self.skipped_failed:
            text += f", {self.skipped_failed} failed earlier and not retried"
        if len(self.problems):
            text += f"; {self.bad_rows} bad manifest row(s) skipped"
        if self.stopped:
            unsent = self.sent - self.stored - self.failed
            text += f"; stopped early ({_STOPPED[self.stopped]}), {unsent} not sent"
        if len(self.quarantined):
            text += f"; {len(self.quarantined)} damaged file(s) moved aside"
            parts = self.quarantined[self.quarantined["kind"] == "responses part"]
            if len(parts):
                text += f", {self.recovered} of the {self.lost} rows they held stored again"
                unknown = int(parts["rows"].isna().sum())
                if unknown:
                    text += f" (what {unknown} unreadable part(s) held is not known)"
        return text + f" [{self.seconds:.1f} s]"


def _member(keys: pd.Series, known: set[str]) -> np.ndarray:
    """Boolean mask of ``keys`` in ``known`` (a set lookup; faster than ``isin`` on str)."""
    return np.fromiter((k in known for k in keys.tolist()), dtype=bool, count=len(keys))


def _open_store(out: str | os.PathLike[str], client: Client) -> ResponseStore:
    """Take the store's write lock, heal the HTTP cache and open the store to heal it.

    The cache: a SQLite file that fails ``PRAGMA integrity_check`` is moved aside, and the
    entries of a SQLite or filesystem cache that fail their checksum or cannot be read back
    are deleted (what ``dentalkit verify --cache`` reports is what this repairs). The
    returned store holds the lock: use it as a context manager (``with _open_store(...)
    as store:``), which releases the lock however the block ends. If opening fails, the
    lock is released here.
    """
    from dentalkit.fetch._cache import (
        evict_damaged_entries,
        quarantine_cache,
        sqlite_cache_problem,
    )

    lock = store_lock(out, settings.store_lock_timeout)
    try:
        moved: list[dict[str, Any]] = []
        problem = sqlite_cache_problem(client.spec.cache)
        if problem:
            files = quarantine_cache(client.spec.cache)
            client._reopen()
            moved = [
                {
                    "file": str(client.spec.cache),
                    "kind": "HTTP cache (SQLite)",
                    "reason": problem,
                    "moved_to": str(files[0]) if files else None,
                    "rows": None,
                }
            ]
        moved += [
            {
                "file": str(client.spec.cache),
                "kind": "HTTP cache (SQLite)",
                "reason": "could not be opened",
                "moved_to": f,
                "rows": None,
            }
            for f in getattr(client, "quarantined_cache", [])[:1]
        ]
        client.quarantined_cache = []  # reported once
        evicted = evict_damaged_entries(client.session, client.spec.cache)
        if evicted:
            moved.append(
                {
                    "file": str(client.spec.cache),
                    "kind": "HTTP cache entries",
                    "reason": f"{evicted} damaged entr{'y' if evicted == 1 else 'ies'} deleted",
                    "moved_to": None,
                    "rows": evicted,
                }
            )
        store = ResponseStore(out, client.base_url, heal=True)
        store.done = store.completed_keys()  # read (and healed) while the lock is released on error
        store.quarantined[:0] = moved
        store.lock = lock
    except BaseException:
        lock.release()
        raise
    return store


def _add_lost_requests(plan: Any, store: ResponseStore, done: set[str]) -> set[str]:
    """Add to ``plan`` the requests that quarantined parts held and the manifest lacks.

    They are rebuilt from the parts' request columns (patient, timestamp, endpoint, image,
    options) and kept only when the rebuilt request key equals the stored one. Returns the
    keys of every row the quarantined parts held and the store no longer has; a warning
    names those that can be sent neither from the manifest nor from a rebuilt request.
    """
    lost_keys = store.lost_keys - done
    if not lost_keys:
        return set()
    from urllib.parse import parse_qsl

    from dentalkit.fetch._manifest import plan_requests

    planned = set(plan.requests["request_key"])
    lost = (
        pd.concat(store.lost_rows, ignore_index=True).drop_duplicates("request_key")
        if store.lost_rows
        else pd.DataFrame(columns=["request_key"])
    )
    lost = lost[~_member(lost["request_key"], done)]
    missing = lost[~_member(lost["request_key"], planned)]
    rebuilt: set[str] = set()
    if len(missing):
        rows = []
        for rec in missing.to_dict("records"):
            row = {k: rec[k] for k in ("patient_id", "timestamp", "endpoint")}
            if rec["endpoint"] == "tle":
                row.update(parse_qsl(rec["options"] or "", keep_blank_values=True))
            else:
                row["image_url"] = rec["image_url"]
                row.update(json.loads(rec["options"] or "{}"))
            rows.append(row)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DentalkitWarning)
            extra = plan_requests(pd.DataFrame(rows), timestamp_format=store.timestamp_format)
        keep = _member(extra.requests["request_key"], set(missing["request_key"]))
        if keep.any():
            added = extra.requests.loc[keep].assign(row=0)
            rebuilt = set(added["request_key"])
            plan.requests = pd.concat([plan.requests, added], ignore_index=True)
            plan.payloads = plan.payloads + [
                p for p, k in zip(extra.payloads, keep, strict=True) if k
            ]
    unsendable = lost_keys - planned - rebuilt
    if unsendable:
        log.warning(
            "%d request(s) that damaged part(s) held are not in this manifest and could not "
            "be rebuilt from what could be read: they are not sent again. The damaged parts "
            "are in %s and the keys they held in %s",
            len(unsendable),
            store.out / "_quarantine",
            store.parts / "_ledger.tsv",
        )
    return lost_keys


@dataclass
class _Selection:
    """What a run sends: the plan minus the stored requests minus the failures to keep.

    Attributes
    ----------
    requests : DataFrame
        The plan's requests (see :func:`~dentalkit.fetch._manifest.plan_requests`), with the
        requests of quarantined parts that the manifest lacks added at the end (``row`` 0).
    payloads : list
        ``(endpoint, body, query)`` of each row of ``requests``.
    todo : list of int
        Positions in ``requests`` of the requests to send, in plan order.
    already_stored : int
        Requests the store holds (skipped without any HTTP request or cache lookup).
    skipped_failed : int
        Requests an earlier run failed that this run does not send (``retry_failed=False``).
    previous : DataFrame
        The store's failures table without the requests stored since.
    lost_keys : set of str
        Keys of the rows quarantined parts held and the store no longer has.
    """

    requests: pd.DataFrame
    payloads: list[Any]
    todo: list[int]
    already_stored: int
    skipped_failed: int
    previous: pd.DataFrame
    lost_keys: set[str]


def _select_requests(plan: Any, store: ResponseStore, retry_failed: bool) -> _Selection:
    """Choose the requests to send: the plan, plus lost requests, minus stored, minus failed.

    A request is sent when the store does not hold it and, unless ``retry_failed``, no
    earlier run failed it; with ``retry_failed`` only the earlier failures are sent. A 401
    (``AuthError``) concerns the key, not the request, so it never keeps a request back.
    Requests that quarantined parts held come back through :func:`_add_lost_requests`.
    """
    done = store.done
    lost_keys = _add_lost_requests(plan, store, done)
    reqs = plan.requests
    previous = store.read_failures()
    previous = previous[~_member(previous["request_key"], done)]
    stored_mask = _member(reqs["request_key"], done)
    # a 401 concerns the key, not the request: once the key is fixed, a rerun sends it again
    request_specific = previous["error_type"].astype("object") != "AuthError"
    failed_before = _member(reqs["request_key"], set(previous.loc[request_specific, "request_key"]))
    todo = ~stored_mask & (failed_before if retry_failed else ~failed_before)
    return _Selection(
        requests=reqs,
        payloads=plan.payloads,
        todo=[int(i) for i in todo.nonzero()[0]],
        already_stored=int(stored_mask.sum()),
        skipped_failed=0 if retry_failed else int((~stored_mask & failed_before).sum()),
        previous=previous,
        lost_keys=lost_keys,
    )


def _merge_failures(
    previous: pd.DataFrame, failures: list[dict[str, Any]], attempted: set[str]
) -> pd.DataFrame:
    """The store's failures table after a run.

    Earlier failures (``previous``, already without the requests stored since) are kept
    unless this run attempted the request again: then its new outcome counts (a new failure
    record, or none when it was answered). Sorted by manifest row, then endpoint.
    """
    kept = previous[~_member(previous["request_key"], attempted)]
    fresh = pd.DataFrame(failures, columns=FAILURES_SCHEMA.names)
    frames = [d for d in (kept, fresh) if len(d)]
    merged = pd.concat(frames, ignore_index=True) if frames else fresh
    return merged.sort_values(["row", "endpoint"], kind="stable", ignore_index=True)


def fetch_cohort(
    manifest: Any,
    endpoints: str | Sequence[str] | None = None,
    out: str | os.PathLike[str] = "dentalkit-out",
    client: Client | None = None,
    max_workers: int | None = None,
    executor: Executor | None = None,
    progress: bool = True,
    errors: Errors = "raise",
    retry_failed: bool = False,
    flush_every: int | None = None,
    flush_interval: float | None = None,
    batch_size: int | None = None,
    *,
    timestamp_format: str | None = None,
) -> FetchReport:
    """Fetch every request of a manifest into the responses store under ``out``.

    Parameters
    ----------
    manifest : DataFrame, list of dict or path
        CSV / Parquet / DataFrame / list of row dicts with ``patient_id``, ``timestamp``,
        ``image_url`` and an ``endpoint`` column, or give ``endpoints=``. Optional option columns
        (``draw_contours`` …) and, for ``/tle`` rows, ``p01`` … ``p11``.
    endpoints : str or list of str, optional
        Endpoint(s) for every row (registry name, path or slug) when there is no ``endpoint``
        column. With several, each row is sent to each endpoint.
    out : path
        Store folder (``out/responses/*.parquet``, ``out/failures.parquet``).
    client : Client, optional
        Default ``Client()`` from :mod:`dentalkit.settings` and the environment.
    max_workers : int, optional
        Concurrent requests, at least 1 (default :data:`dentalkit.settings.max_workers`).
    executor : concurrent.futures.Executor, optional
        Run requests on this executor instead of a thread pool — e.g. a
        ``ProcessPoolExecutor`` or ``dask.distributed.Client.get_executor()``. Workers rebuild
        the client from its picklable :class:`~dentalkit.fetch.client.ClientSpec` (use a shared
        SQLite file or Redis cache so they share answers). The caller's process alone writes
        the store.
    progress : bool
        Show a tqdm bar (requests done, cache hits, failures, rate).
    errors : {"raise", "collect", "warn"}, default "raise"
        dentalkit's one ``errors=`` rule (:func:`dentalkit.errors.check_errors`).
        ``"raise"``: a bad manifest raises :class:`~dentalkit.errors.ManifestError` before
        anything is sent (every bad row listed); the first failed request stops the run:
        no new request is sent, the answers of requests already in flight are kept,
        everything received is stored, ``failures.parquet`` names the failed request, and
        its error is raised (a rerun resumes: stored answers are not sent again, and the
        failed request is skipped unless ``retry_failed``).
        ``"collect"``: bad manifest rows go to ``report.problems``, the valid ones are
        fetched and failed requests go to ``failures.parquet`` and ``report.failures``;
        the right choice for a long cohort fetch. ``"warn"``: the same, plus one
        :class:`~dentalkit.errors.DentalkitWarning` when there were bad rows or failures.
    retry_failed : bool
        Send only the requests the store's failures table lists (earlier failures are
        otherwise skipped, so a rerun does not pay again for requests that cannot succeed;
        a 401 is not the request's fault, so those are always sent again).
    flush_every, flush_interval : int, float, optional
        Write a Parquet part after this many answers or seconds (defaults in settings).
    batch_size : int, optional
        Requests per task on an ``executor`` you pass: a task sends its batch one request
        after another, so the executor's per-task cost (on dask a few milliseconds of
        scheduler and worker CPU) is shared by the batch. Default: automatic — at most
        :data:`MAX_BATCH`, chosen so that the last round of tasks is as full as
        possible. The built-in thread pool always sends one request per task. Answers are stored as tasks finish;
        a task killed mid-way loses nothing that the shared HTTP cache already holds.
    timestamp_format : str, optional
        The strptime format of the manifest's timestamps (``"%d/%m/%Y"``); default: the
        one ``out`` recorded, ISO 8601 for a new store. Timestamps are sent verbatim; the
        format checks them (a row whose timestamp does not parse is a manifest problem)
        and parses ``session_time``; it is recorded in ``out/_dentalkit.json`` for
        ``dentalkit tables`` (see ``docs/manifest.md``). The manifest's ``mm_per_px``
        are kept in ``out/calibration.parquet``.

    Returns
    -------
    FetchReport

    Raises
    ------
    ManifestError
        In ``errors="raise"`` mode for any bad row (all of them listed), and in every mode
        when a required column is missing.
    ApiError, TransportError, ResponseTooLargeError
        In ``errors="raise"`` mode, the first failed request's error (a note says what
        was stored and how to go on).
    ConfigurationError
        ``out`` holds answers of another service, or the client is not configured.

    Examples
    --------
    >>> import tempfile
    >>> import pandas as pd
    >>> from dentalkit.sandbox import running
    >>> m = pd.DataFrame(
    ...     {
    ...         "patient_id": ["P1", "P2"],
    ...         "timestamp": "2024-03-05",
    ...         "image_url": ["https://img.example.org/P1.png", "https://img.example.org/P2.png"],
    ...     }
    ... )
    >>> with running() as sb, tempfile.TemporaryDirectory() as out:
    ...     client = Client(sb.base_url, api_key=sb.api_key, cache="memory")
    ...     first = fetch_cohort(m, "classifier", out, client=client, progress=False)
    ...     again = fetch_cohort(m, "classifier", out, client=client, progress=False)
    ...     first.stored, again.already_stored, again.sent, len(again.responses())
    (2, 2, 0, 2)
    """
    errors = check_errors(errors, "dentalkit.fetch_cohort")
    if batch_size is not None and not (isinstance(batch_size, int) and batch_size >= 1):
        raise InputError(f"batch_size must be a positive integer, got {batch_size!r}")
    if max_workers is not None and not (
        isinstance(max_workers, int) and not isinstance(max_workers, bool) and max_workers >= 1
    ):
        raise InputError(
            f"max_workers must be a positive integer (requests in flight), got {max_workers!r}; "
            "leave it out for settings.max_workers"
        )
    started = time.perf_counter()
    fmt = store_timestamp_format(out, check_timestamp_format(timestamp_format))
    plan = plan_requests(read_manifest(manifest), endpoints, timestamp_format=fmt)
    if len(plan.problems) and errors == "raise":
        raise ManifestError(
            plan.problems,
            hint="Or pass errors='collect' to fetch the valid rows and list these in "
            "report.problems",
        )
    client = client or Client(heal_cache=True)
    # The write lock is held from here to the end of the block, however the block ends.
    with _open_store(out, client) as store:
        keep_manifest_records(store, plan)  # timestamp format, calibration.parquet
        report = FetchReport(out=store.out, requested=len(plan.requests), problems=plan.problems)

        # (a) what to send
        selection = _select_requests(plan, store, retry_failed)
        report.requested = len(selection.requests)
        report.already_stored = selection.already_stored
        report.skipped_failed = selection.skipped_failed
        report.lost = len(selection.lost_keys)
        if report.skipped_failed:
            log.warning(
                "%d request(s) failed in an earlier run and are skipped; "
                "pass retry_failed=True to retry them (see %s)",
                report.skipped_failed,
                store.out / "failures.parquet",
            )
        report.sent = len(selection.todo)

        # (b) send it, storing answers as they arrive
        scheduler = _Scheduler(
            selection,
            store,
            report,
            client,
            executor=executor,
            max_workers=max_workers,
            batch_size=batch_size,
            flush_every=flush_every,
            flush_interval=flush_interval,
            errors=errors,
            progress=progress,
        )
        try:
            scheduler.run()
        finally:
            scheduler.close()
            # (c) the failures table: earlier failures not sent again, plus this run's
            failures = _merge_failures(selection.previous, scheduler.failures, scheduler.attempted)
            if len(failures) or (store.out / "failures.parquet").exists():
                store.write_failures(failures)
            report.failures = failures
            report.quarantined = pd.DataFrame(
                store.quarantined, columns=["file", "kind", "reason", "moved_to", "rows"]
            )
    report.seconds = time.perf_counter() - started
    log.info("fetch_cohort: %s", report.summary())
    if scheduler.first_error is not None:
        error = scheduler.first_error
        error.add_note(
            f"dentalkit.fetch_cohort stopped at this failed request (errors='raise'): "
            f"{report.stored} answer(s) of this run are stored in {store.out} and "
            f"{store.out / 'failures.parquet'} lists the failure; run again to resume "
            "(stored answers are not sent again, the failed request only with "
            "retry_failed=True unless it was a 401), or pass errors='collect' to fetch past "
            "failures and list them in report.failures"
        )
        raise error
    n_problems = len(report.problems) + int(report.failed)
    if n_problems and errors == "warn":
        warnings.warn(
            f"fetch_cohort: {report.bad_rows} bad manifest row(s) skipped and "
            f"{report.failed} request(s) failed ({report.summary()}); see report.problems "
            "and report.failures",
            DentalkitWarning,
            stacklevel=2,
        )
    return report


class Fetcher:
    """Fetch manifests into one responses store on demand: a callable for analyses.

    Analyses that need answers they may not have yet (:func:`dentalkit.tle.estimate`,
    :func:`dentalkit.tle.sensitivity`) take a fetcher instead of an HTTP client, so they
    never import the client, and every request goes the one fetch path: planned by the
    manifest rules, keyed by the store's request key, sent through the cache, stored
    losslessly, recorded in ``failures.parquet`` when it fails, and resumed by the next
    run (a killed run sends again only what was not yet answered).

    Parameters
    ----------
    out : path
        The store folder (created on first use).
    client : Client, optional
        Default ``Client()`` from :mod:`dentalkit.settings` and the environment; built on
        first use.
    max_workers, progress, flush_every, flush_interval, retry_failed
        As for :func:`fetch_cohort` (a request that failed in an earlier run is skipped
        unless ``retry_failed``).

    Examples
    --------
    >>> import tempfile
    >>> from dentalkit import tle
    >>> from dentalkit.sandbox import running
    >>> with running() as sb, tempfile.TemporaryDirectory() as out:
    ...     fetcher = Fetcher(out, Client(sb.base_url, api_key=sb.api_key, cache="memory"))
    ...     first = tle.estimate(tle.example_patients(3), fetcher)
    ...     again = tle.estimate(tle.example_patients(3), fetcher)
    ...     first.attrs["sent"], again.attrs["from_store"], again.attrs["sent"]
    (3, 3, 0)
    """

    def __init__(
        self,
        out: str | os.PathLike[str],
        client: Client | None = None,
        *,
        max_workers: int | None = None,
        progress: bool = False,
        flush_every: int | None = None,
        flush_interval: float | None = None,
        retry_failed: bool = False,
    ) -> None:
        self.out = Path(out)
        self.retry_failed = retry_failed
        self._client = client
        self.max_workers = max_workers
        self.progress = progress
        self.flush_every = flush_every
        self.flush_interval = flush_interval
        self.last_report: FetchReport | None = None

    def __repr__(self) -> str:
        return f"Fetcher(out={str(self.out)!r})"

    @property
    def client(self) -> Client:
        """The client (built from settings on first use when none was given)."""
        if self._client is None:
            self._client = Client()
        return self._client

    def stored(self) -> pd.DataFrame | None:
        """The store's responses table, or None while the store does not exist yet."""
        if not (self.out / "_dentalkit.json").exists():
            return None
        return read_responses(self.out)

    def __call__(self, manifest: Any, errors: Errors = "raise") -> pd.DataFrame:
        """Fetch ``manifest`` into the store; return the whole responses table.

        ``errors`` is passed to :func:`fetch_cohort` (default ``"raise"``: a bad row or the
        first failed request raises, after what arrived is stored).

        ``attrs["fetch"]`` holds the run's counts (``sent``, ``stored``, ``from_cache``,
        ``failed``, ``already_stored``) and ``attrs["failures"]`` the failure records of
        this manifest's requests (plain dicts).
        """
        report = fetch_cohort(
            manifest,
            out=self.out,
            client=self.client,
            max_workers=self.max_workers,
            progress=self.progress,
            errors=errors,
            flush_every=self.flush_every,
            flush_interval=self.flush_interval,
            retry_failed=self.retry_failed,
        )
        self.last_report = report
        responses = report.responses()
        responses.attrs["fetch"] = {
            k: int(getattr(report, k))
            for k in ("sent", "stored", "from_cache", "failed", "already_stored")
        }
        failures = report.failures
        records = failures.astype(object).where(failures.notna(), None).to_dict("records")
        responses.attrs["failures"] = [
            {k: r.get(k) for k in ("options", "error_type", "status_code", "error")}
            for r in records
        ]
        return responses


@dataclass
class FirstContactPlan:
    """The requests of a first contact: one per endpoint, from the user's small manifest.

    Attributes
    ----------
    manifest : DataFrame
        A manifest of one row per endpoint (``patient_id``, ``timestamp``, ``endpoint``,
        ``image_url``, option and ``p01`` … ``p11`` columns), ready for :func:`fetch_cohort`.
    request_keys : list of str
        The store's request key of each row (to count what is already stored).
    missing : list of str
        Registry endpoints the manifest gives no valid row for (not contacted).
    problems : DataFrame
        The manifest's problems (bad rows are never chosen).
    """

    manifest: pd.DataFrame
    request_keys: list[str]
    missing: list[str]
    problems: pd.DataFrame


def first_contact_plan(
    manifest: Any,
    endpoints: str | Sequence[str] | None = None,
    *,
    timestamp_format: str | None = None,
) -> FirstContactPlan:
    """Choose one request per endpoint from a small manifest (nothing is sent).

    Parameters
    ----------
    manifest : DataFrame, list of dict or path
        As for :func:`fetch_cohort`: rows with ``patient_id``, ``timestamp``,
        ``image_url`` and an ``endpoint`` column (or ``endpoints=``); ``/tle`` rows carry
        ``p01`` … ``p11``. The first valid row of each endpoint is chosen.
    endpoints : str or list of str, optional
        Endpoints for every row when there is no ``endpoint`` column.
    timestamp_format : str, optional
        The strptime format of the timestamps (as for :func:`fetch_cohort`).

    Returns
    -------
    FirstContactPlan
    """
    import json

    plan = plan_requests(read_manifest(manifest), endpoints, timestamp_format=timestamp_format)
    chosen = plan.requests.drop_duplicates("endpoint", keep="first")
    # the chosen images keep their calibration (the fetch records it in calibration.parquet)
    key = ["patient_id", "timestamp", "endpoint", "image_url"]
    chosen = chosen.merge(plan.calibration, on=key, how="left")
    rows = []
    for rec in chosen.to_dict("records"):
        options = json.loads(rec["options"]) if rec["options"] else {}
        row = {
            "patient_id": rec["patient_id"],
            "timestamp": rec["timestamp"],
            "endpoint": rec["endpoint"],
            "image_url": rec["image_url"] if rec["image_url"] is not None else "",
        }
        row.update({k: str(v) if isinstance(v, bool) else v for k, v in options.items()})
        if pd.notna(rec.get("mm_per_px")):
            row.update(mm_per_px=rec["mm_per_px"], calibration_source=rec["calibration_source"])
        rows.append(row)
    order = {name: i for i, name in enumerate(ENDPOINTS)}
    rows.sort(key=lambda r: order[r["endpoint"]])
    keys = dict(zip(chosen["endpoint"], chosen["request_key"], strict=True))
    return FirstContactPlan(
        manifest=pd.DataFrame(rows),
        request_keys=[keys[r["endpoint"]] for r in rows],
        missing=[name for name in ENDPOINTS if name not in keys],
        problems=plan.problems,
    )
