"""Send a fetch's selected requests on an executor and store the answers as they arrive.

The middle step of :func:`dentalkit.fetch.cohort.fetch_cohort` (selection → **schedule** →
failure merge): :class:`_Scheduler` owns the executor and its tasks, the flush cadence, the
progress bar and the early stop; the worker functions (:func:`_fetch_one`,
:func:`_fetch_batch`) are module-level so that a process pool or a ``dask.distributed``
executor can pickle them; :func:`stop_reason` decides when one failure stops the run.
Only the calling process writes the store; workers only call the service.
"""

from __future__ import annotations

import logging
import re
import time
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ThreadPoolExecutor, wait
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from dentalkit import settings
from dentalkit.endpoints import ENDPOINTS
from dentalkit.errors import (
    ApiError,
    AuthError,
    DentalkitError,
    Errors,
    RedirectRefusedError,
    TransportError,
)
from dentalkit.fetch.client import ApiResult, Client, ClientSpec, get_client
from dentalkit.fetch.store import ResponseStore

if TYPE_CHECKING:  # annotations only: cohort imports this module
    from dentalkit.fetch.cohort import FetchReport, _Selection

log = logging.getLogger("dentalkit")

_STOPPED = {
    "auth": "the service rejected the API key",
    "unreachable": "the service could not be reached",
}


#: ``[Errno 111] Connection refused``: the operating system's words inside urllib3's reprs.
_ERRNO = re.compile(r"\[Errno -?\d+\] ([^'\")\]]+)")


def plain_reason(text: str) -> str:
    """A transport failure's cause in words, without the HTTP library's reprs.

    ``requests`` words a refused connection as ``HTTPConnectionPool(host='…', port=…):
    Max retries exceeded … (Caused by NewConnectionError(…))``; a terminal line or log
    needs only the request and the cause the operating system gave. Other texts are
    returned unchanged (the full text stays in the failures table).

    >>> plain_reason(
    ...     "POST /tle for patient 'P1': ConnectionError: HTTPConnectionPool("
    ...     "host='h', port=1): Max retries exceeded (Caused by NewConnectionError('x: "
    ...     "[Errno 111] Connection refused'))"
    ... )
    "POST /tle for patient 'P1': Connection refused"
    >>> plain_reason("GET /tle: ReadTimeout: HTTPConnectionPool(host='h', port=1): Read timed out.")
    'GET /tle: timed out'
    >>> plain_reason(
    ...     "POST /tle for patient 'P1': SSLError: HTTPSConnectionPool(host='h', port=1): Max "
    ...     "retries exceeded (Caused by SSLError(SSLCertVerificationError(1, '[SSL: "
    ...     "CERTIFICATE_VERIFY_FAILED] certificate verify failed: unable to get local issuer "
    ...     "certificate (_ssl.c:1006)'))) — the server's TLS certificate could not be verified"
    ... )
    "POST /tle for patient 'P1': the server's TLS certificate could not be verified (unable to get local issuer certificate)"
    """
    causes = _ERRNO.findall(text)
    if is_tls_failure(text):
        why = _TLS_WHY.search(text)
        cause = "the server's TLS certificate could not be verified" + (
            f" ({why.group(1).strip().rstrip('.')})" if why else ""
        )
    elif causes:
        cause = causes[-1].strip().rstrip(".")
    elif re.search(r"timed out", text, re.IGNORECASE) and "Pool(" in text:
        cause = "timed out"
    else:
        return text
    request, sep, _ = text.partition(": ")
    return f"{request}: {cause}" if sep else cause


#: ``certificate verify failed: unable to get local issuer certificate (_ssl.c:1006)``.
_TLS_WHY = re.compile(r"certificate verify failed: ([^'\"()]+)")


def is_tls_failure(text: str) -> bool:
    """Whether a transport failure's text says the server's certificate was not verified.

    >>> is_tls_failure("SSLError(... [SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed")
    True
    >>> is_tls_failure("POST /tle: ConnectionError: [Errno 111] Connection refused")
    False
    """
    return "CERTIFICATE_VERIFY_FAILED" in text or "certificate verify failed" in text.lower()


def stop_reason(exc: Exception, answered: bool) -> str | None:
    """``"auth"`` / ``"unreachable"`` when one failure means every other request fails too.

    A 401 (:class:`~dentalkit.errors.AuthError`) concerns the key, not the request. A
    :class:`~dentalkit.errors.TransportError` (after all retries) before any answer
    arrived means the service cannot be reached; after answers arrived it may concern one
    request, so the run goes on. A refused redirect
    (:class:`~dentalkit.errors.RedirectRefusedError`) is an answer, not an unreachable
    service: it is recorded per request and the run goes on; so is an answer cut short,
    undecodable or past the deadline (:class:`~dentalkit.errors.IncompleteResponseError`,
    not a ``TransportError``): a connection was made.
    """
    if isinstance(exc, AuthError):
        return "auth"
    if (
        isinstance(exc, TransportError)
        and not isinstance(exc, RedirectRefusedError)
        and not answered
    ):
        return "unreachable"
    return None


def _fetch_one(client: Client | ClientSpec, payload: tuple[str, Any, Any]) -> ApiResult | Exception:
    """Worker: one request. Picklable (module-level), builds its client from a spec if needed."""
    if isinstance(client, ClientSpec):
        client = get_client(client)
    name, body, query = payload
    ep = ENDPOINTS[name]
    try:
        return client._send(
            ep, body=body, query=query, patient_id=body.get("PatientID") if body else None
        )
    except DentalkitError as exc:
        return exc


def _fetch_batch(
    client: Client | ClientSpec, payloads: list[tuple[str, Any, Any]]
) -> list[ApiResult | Exception]:
    """Worker: one or several requests, one after another, in one task (picklable)."""
    return [_fetch_one(client, payload) for payload in payloads]


#: Most requests per task on an external executor (see ``batch_size`` of fetch_cohort).
MAX_BATCH = 8


def _auto_batch(n_requests: int, workers: int) -> int:
    """Requests per task for ``n_requests`` over ``workers`` concurrent tasks.

    The batch (at most :data:`MAX_BATCH`) that makes the last round of tasks as full as
    possible: with equal request times the run lasts ``ceil(n / (workers × b)) × b``
    request times; the largest ``b`` within 2 % of the shortest such run is taken, as
    every task costs the executor something. 800 requests over 16 workers: 5 (10 full
    rounds) rather than 8 (7 rounds, the last one half empty); a million: 8.
    """
    workers = max(workers, 1)
    if n_requests <= workers:
        return 1
    span = {b: -(-n_requests // (workers * b)) * b for b in range(1, MAX_BATCH + 1)}
    best = min(span.values())
    return max(b for b, t in span.items() if t <= best * 1.02)


def _row(req: dict[str, Any], res: ApiResult) -> dict[str, Any]:
    version = res.data.get("Version")
    return {
        "patient_id": req["patient_id"],
        "timestamp": req["timestamp"],
        "endpoint": req["endpoint"],
        "model_version": version if isinstance(version, str) else None,
        "request_key": req["request_key"],
        "image_url": req["image_url"],
        "options": req["options"],
        "status_code": res.status_code,
        "body": res.text,
        "fetched_at": res.fetched_at,
        "from_cache": res.from_cache,
        "error": None,
    }


def _failure(req: dict[str, Any], exc: Exception) -> dict[str, Any]:
    return {
        "row": req["row"],
        "patient_id": req["patient_id"],
        "timestamp": req["timestamp"],
        "endpoint": req["endpoint"],
        "request_key": req["request_key"],
        "image_url": req["image_url"],
        "options": req["options"],
        "error_type": type(exc).__name__,
        "status_code": exc.status if isinstance(exc, ApiError) else None,
        "error": str(exc),
        "failed_at": datetime.now(UTC),
    }


def _progress(total: int, enabled: bool) -> Any:
    if not enabled:  # no tqdm.auto import: in a notebook without ipywidgets it warns
        from tqdm.std import tqdm as plain

        return plain(total=total, disable=True)
    from tqdm.auto import tqdm

    return tqdm(total=total, unit="req", desc="fetch", smoothing=0.1)


class _Scheduler:
    """Send the selected requests on an executor and store the answers as they arrive.

    One object per run owns what the sending loop needs, so the loop reads as
    "submit, wait, receive, flush":

    * **the executor and its tasks**: the built-in thread pool (``max_workers`` threads, shut
      down at the end) sends one request per task; an ``executor`` you pass gets
      ``batch_size`` requests per task (default :func:`_auto_batch`), run by
      :func:`_fetch_batch` with the picklable :class:`ClientSpec` unless it is a thread pool.
      At most ``max(2 × workers, 4)`` tasks are in flight. ``/tle`` rows of several sessions
      with the same query share one HTTP request (one group per ``http_key``) and each
      session still gets its own row;
    * **the flush cadence**: answers are buffered and written as one Parquet part every
      ``flush_every`` answers, whenever ``flush_interval`` seconds have passed since the last
      flush (the wait for answers times out at that interval), and at :meth:`close`;
    * **the progress bar** (tqdm): one step per request, cache hits and failures as postfix;
    * **the early stop**: no new task is submitted after the first failure in
      ``errors="raise"`` mode (:attr:`first_error`) or after a failure that every other
      request would share (:func:`stop_reason`: ``report.stopped``). Tasks already in flight
      are still received.

    Counts go straight into ``report`` (``stored``, ``from_cache``, ``failed``,
    ``recovered``, ``stopped``, ``stop_reason``); :attr:`failures` and :attr:`attempted`
    feed :func:`_merge_failures`.
    """

    def __init__(
        self,
        selection: _Selection,
        store: ResponseStore,
        report: FetchReport,
        client: Client,
        *,
        executor: Executor | None,
        max_workers: int | None,
        batch_size: int | None,
        flush_every: int | None,
        flush_interval: float | None,
        errors: Errors,
        progress: bool,
    ) -> None:
        self.store, self.report, self.errors = store, report, errors
        self.payloads = selection.payloads
        self.lost_keys = selection.lost_keys
        workers = max_workers or settings.max_workers
        self.own_executor = executor is None
        self.pool = executor or ThreadPoolExecutor(
            max_workers=workers, thread_name_prefix="dentalkit"
        )
        self.worker_client: Client | ClientSpec = (
            client if isinstance(self.pool, ThreadPoolExecutor) else client.spec
        )
        if self.worker_client is client.spec and client.spec.cache is None:
            log.warning(
                "an in-memory cache is not shared with worker processes; use SQLite or Redis"
            )
        self.every = flush_every or settings.flush_every
        self.interval = flush_interval if flush_interval is not None else settings.flush_interval

        indices = selection.todo
        self.records = dict(
            zip(indices, selection.requests.iloc[indices].to_dict("records"), strict=True)
        )
        self.buffer: list[dict[str, Any]] = []
        #: Failure records of this run (columns of the store's failures table).
        self.failures: list[dict[str, Any]] = []
        #: Store keys of every request this run received an outcome for.
        self.attempted: set[str] = set()
        self.last_flush = time.monotonic()
        #: The first failure in ``errors="raise"`` mode (raised by fetch_cohort at the end).
        self.first_error: Exception | None = None
        self.bar = _progress(len(indices), progress)
        groups: dict[str, list[int]] = {}
        http_keys = selection.requests["http_key"].tolist()
        for i in indices:
            groups.setdefault(http_keys[i], []).append(i)
        self.pending: dict[Future, list[list[int]]] = {}
        self.window = max(2 * workers, 4)
        if self.own_executor:
            batch = 1
        elif batch_size is None:
            batch = _auto_batch(len(groups), workers)
        else:
            batch = batch_size
        ordered = list(groups.values())
        self.queue = iter([ordered[k : k + batch] for k in range(0, len(ordered), batch)])

    def run(self) -> None:
        """Send every batch and receive every answer, unless the run stops early."""
        while True:
            self._submit()
            if not self.pending:
                break
            finished, _ = wait(self.pending, timeout=self.interval, return_when=FIRST_COMPLETED)
            # in submission order (``finished`` is a set): the first failure recorded, and
            # named by the stop line, is the first request sent, not an arbitrary one
            for fut in [f for f in self.pending if f in finished]:
                self._receive(fut)
            if finished:
                report = self.report
                self.bar.set_postfix(cache=report.from_cache, failed=report.failed, refresh=False)
            if time.monotonic() - self.last_flush >= self.interval:
                self._flush()

    def close(self) -> None:
        """Cancel tasks not started, shut down the own thread pool, flush, close the bar."""
        for fut in self.pending:
            fut.cancel()
        if self.own_executor:
            self.pool.shutdown(wait=True, cancel_futures=True)
        self._flush()
        self.bar.close()

    def _stopping(self) -> bool:
        """True once no new task may be submitted (``errors="raise"`` failure or a stop)."""
        return self.first_error is not None or self.report.stopped is not None

    def _submit(self) -> None:
        """Fill the window of tasks in flight from the queue of batches."""
        while len(self.pending) < self.window and not self._stopping():
            chunk = next(self.queue, None)
            if chunk is None:
                break
            payloads = [self.payloads[group[0]] for group in chunk]
            self.pending[self.pool.submit(_fetch_batch, self.worker_client, payloads)] = chunk

    def _receive(self, fut: Future) -> None:
        """Record the outcome of every request of a finished task (a crash fails them all)."""
        chunk = self.pending.pop(fut)
        try:
            results = fut.result()
        except Exception as exc:  # a worker crash: record it like any failure
            results = [exc] * len(chunk)
        if not isinstance(results, list):  # an executor that hands back another sequence
            results = list(results)
        for k, group in zip(range(len(results)), chunk, strict=True):
            # the task's answers are not held past their rows: a flush then holds each
            # body once (the row's text), not also the answer's parsed data
            res, results[k] = results[k], None
            for n, i in enumerate(group, 1):
                req = self.records[i]
                self.attempted.add(req["request_key"])
                if isinstance(res, ApiResult):
                    self._answered(req, res)
                else:
                    self._failed(req, res)
                if n < len(group) and len(self.buffer) >= self.every:
                    self._flush()
            del res
            self.bar.update(len(group))
            if len(self.buffer) >= self.every:
                self._flush()

    def _answered(self, req: dict[str, Any], res: ApiResult) -> None:
        """Buffer an answer as a responses row (:meth:`_receive` flushes)."""
        self.buffer.append(_row(req, res))
        self.report.from_cache += res.from_cache

    def _failed(self, req: dict[str, Any], exc: Exception) -> None:
        """Record a failure; decide whether the run stops (see :func:`stop_reason`)."""
        report = self.report
        self.failures.append(_failure(req, exc))
        report.failed += 1
        why = stop_reason(exc, bool(report.stored or self.buffer))
        if why and report.stopped is None:
            report.stopped, report.stop_reason = why, str(exc)
            # the user's words, not the function's name: the CLI shows this line as it is
            log.error(
                "the fetch stopped sending requests: %s (%s); every failed request and its "
                "reason are listed in %s",
                _STOPPED[why],
                plain_reason(str(exc)),
                self.store.out / "failures.parquet",
                extra={"fetch_stop": why},  # the CLI prints its own line for it instead
            )
        if self.errors == "raise" and self.first_error is None:
            self.first_error = exc

    def _flush(self) -> None:
        """Write the buffered answers as one Parquet part (atomically) and restart the clock."""
        buffer = self.buffer
        if buffer:
            n = len(buffer)
            recovered = sum(r["request_key"] in self.lost_keys for r in buffer)
            # the buffer is emptied once its rows are in Arrow (their texts freed before
            # the part is written), and gets them back if the part cannot be written
            self.store.append(buffer, consume=True)
            self.report.stored += n
            self.report.recovered += recovered
            buffer.clear()
        self.last_flush = time.monotonic()
