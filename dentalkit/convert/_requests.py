"""The responses table as input: successful rows, endpoints, session key and bodies."""

from __future__ import annotations

import gc
import math
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np
import orjson
import pandas as pd

from dentalkit.convert._problems import Problems
from dentalkit.convert._values import BodyError, short, text, type_name
from dentalkit.endpoints import Endpoint, Kind, get_endpoint
from dentalkit.errors import InputError


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while bodies are flattened.

    A parsed body is a tree of thousands of lists and dicts that reference counting
    frees as soon as the body is flattened; it holds no reference cycles. Left running,
    the cyclic collector repeatedly walks these short-lived trees (and, once they reach
    the old generation, every object of the interpreter) and finds nothing: measured at
    up to half of the conversion time. The previous state is restored on exit, also on
    error.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


@dataclass
class Requests:
    """The successful rows of a responses table, resolved (arrays aligned)."""

    row: np.ndarray  # positional row in the responses table
    ep: list[Endpoint]
    patient_id: np.ndarray  # object: str or None
    timestamp: np.ndarray  # object: str or None
    session_time: pd.DatetimeIndex  # ns, UTC
    body: np.ndarray  # object: str / bytes / dict
    options: np.ndarray | None  # object, or None when the column is absent

    def of_kind(self, kind: Kind) -> np.ndarray:
        """Indices (into these arrays) of the requests whose endpoint has ``kind``."""
        return np.fromiter((i for i, e in enumerate(self.ep) if e.kind is kind), dtype=np.intp)


_REQUIRED_COLUMNS = ("endpoint", "patient_id", "timestamp", "body")


def prepare(
    responses: pd.DataFrame,
    problems: Problems,
    timestamp_format: str | None = None,
    offset: int = 0,
) -> Requests:
    """Select the successful rows of a responses table and resolve their endpoints.

    Rows whose ``status_code`` is present and not 200, or whose ``error`` is set, are
    failures of fetching (the fetcher lists them) and are skipped without a problem.
    ``session_time`` is parsed from ``timestamp`` (ISO 8601, or ``timestamp_format``); an
    image request's timestamp that does not parse is a problem (rows kept, session_time
    missing). A ``/tle`` request's timestamp is the store's label of the query, not a date.
    ``offset``: rows of the whole table before ``responses`` when it is one piece of it
    (:func:`dentalkit.convert.tables_in_parts`); problems name rows of the whole table.
    """
    if not isinstance(responses, pd.DataFrame):
        raise InputError(
            f"responses must be a pandas DataFrame (the responses table), got {type(responses).__name__}"
        )
    missing = [c for c in _REQUIRED_COLUMNS if c not in responses.columns]
    if missing:
        raise InputError(
            f"the responses table lacks column(s) {missing}; it needs at least "
            f"{list(_REQUIRED_COLUMNS)} (see docs/data-contract.md)"
        )
    n = len(responses)
    ok = np.ones(n, dtype=bool)
    if "status_code" in responses.columns:
        sc = pd.to_numeric(responses["status_code"], errors="coerce")
        ok &= (responses["status_code"].isna() | (sc == 200)).to_numpy(bool)
    if "error" in responses.columns:
        err = responses["error"]
        ok &= (err.isna() | (err.astype(object) == "")).to_numpy(bool)

    endpoint = responses["endpoint"].to_numpy(object)
    pid = responses["patient_id"].to_numpy(object)
    ts = responses["timestamp"].to_numpy(object)
    pid_null = responses["patient_id"].isna().to_numpy(bool)
    ts_null = responses["timestamp"].isna().to_numpy(bool)

    # resolve each distinct endpoint value once; check the keys with array operations
    cand = np.flatnonzero(ok)
    cache: dict[str, Endpoint | str] = {}
    try:
        codes, uniques = pd.factorize(endpoint[cand])
        found = [_resolve(u, cache) for u in uniques]
    except TypeError:  # unhashable values in the endpoint column
        found = [_resolve(v, {}) for v in endpoint[cand]]
        codes = np.arange(len(cand))
    found.append("endpoint is null; expected a registry name, path or slug")  # code -1
    is_ep = np.array([isinstance(e, Endpoint) for e in found])[codes]
    is_image = np.array([isinstance(e, Endpoint) and e.is_image for e in found])[codes]
    bad = ~is_ep
    for values, nulls, column in ((pid, pid_null, "patient_id"), (ts, ts_null, "timestamp")):
        nul = nulls[cand]
        bad |= nul & is_image
        if not isinstance(responses[column].dtype, pd.StringDtype):
            bad |= ~nul & ~np.fromiter(
                (isinstance(v, str) for v in values[cand]), dtype=bool, count=len(cand)
            )
    for k in np.flatnonzero(bad):  # rare: say exactly what is wrong with each row
        r = int(cand[k])
        ep = found[codes[k]]
        if isinstance(ep, str):
            problems.bad_row(r + offset, None, pid[r], ts[r], "endpoint", ep)
            continue
        why = _bad_key(pid[r], pid_null[r], ep, "patient_id") or _bad_key(
            ts[r], ts_null[r], ep, "timestamp"
        )
        problems.bad_row(r + offset, ep.name, pid[r], ts[r], *why)
    keep = ~bad
    rows = cand[keep]
    eps = [found[c] for c in codes[keep].tolist()]

    idx = rows.astype(np.intp)
    pid_k = np.where(pid_null[idx], None, pid[idx]).astype(object)
    ts_k = np.where(ts_null[idx], None, ts[idx]).astype(object)
    options = responses["options"].to_numpy(object)[idx] if "options" in responses.columns else None
    req = Requests(
        row=idx + offset,
        ep=eps,
        patient_id=pid_k,
        timestamp=ts_k,
        session_time=parse_session_times(ts_k, timestamp_format),
        body=responses["body"].to_numpy(object)[idx],
        options=options,
    )
    unread = req.session_time.isna() & pd.notna(ts_k) & np.array([e.is_image for e in eps], bool)
    for i in np.flatnonzero(unread).tolist():
        problems.session_time(req, i, _unread_timestamp(timestamp_format))
    return req


def _unread_timestamp(timestamp_format: str | None) -> str:
    """Why a timestamp gives no session_time, and how to give its format."""
    if timestamp_format is None:
        return (
            "timestamp is not an ISO 8601 date or date-time (e.g. 2024-03-05 or "
            "2024-03-05T10:30:00Z) between 1677 and 2262, so session_time is missing; "
            "give its format with timestamp_format= (dentalkit tables --timestamp-format)"
        )
    return (
        f"timestamp does not match timestamp_format {timestamp_format!r} (or is outside "
        "1677–2262), so session_time is missing"
    )


def _resolve(name: object, cache: dict[str, Endpoint | str]) -> Endpoint | str:
    """The endpoint called ``name``, or the reason it is not one."""
    if not isinstance(name, str):
        return f"endpoint must be a registry name, path or slug, got {short(name)}"
    found = cache.get(name)
    if found is None:
        try:
            found = get_endpoint(name)
        except KeyError as exc:
            found = str(exc.args[0])
        cache[name] = found
    return found


def _bad_key(value: object, is_null: bool, ep: Endpoint, field: str) -> tuple[str, str] | None:
    if is_null:
        if ep.is_image:
            return field, f"{field} is null; every image request has one (the session key)"
        return None
    if not isinstance(value, str):
        return field, f"{field} must be a string, got {type(value).__name__} {short(value)}"
    return None


def check_timestamp_format(timestamp_format: object) -> str | None:
    """``timestamp_format`` as the parsers take it: None for ISO 8601, else a checked format.

    A format is a :func:`time.strptime` format with a year (``%Y``, ``%y`` or ``%G``), e.g.
    ``"%d/%m/%Y"`` or ``"%d.%m.%Y %H:%M"``; ``None`` and ``"ISO8601"`` mean ISO 8601.

    Raises
    ------
    InputError
        For anything else, saying why (not text, no year, a bad directive).
    """
    if timestamp_format is None or timestamp_format == "ISO8601":
        return None
    if not isinstance(timestamp_format, str) or not timestamp_format.strip():
        raise InputError(
            "timestamp_format must be a strptime format such as '%d/%m/%Y' (or None for ISO "
            f"8601), got {short(timestamp_format)}"
        )
    if not re.search(r"%[YyG]", timestamp_format):
        raise InputError(
            f"timestamp_format {timestamp_format!r} has no year (%Y, or %y for two digits): "
            "a session time needs its year"
        )
    try:
        pd.to_datetime(pd.Index(["2024"], dtype=object), format=timestamp_format, errors="coerce")
    except ValueError as exc:
        raise InputError(
            f"timestamp_format {timestamp_format!r} is not a strptime format ({exc}); "
            "e.g. '%d/%m/%Y' or '%d.%m.%Y %H:%M'"
        ) from None
    return timestamp_format


def parse_session_times(
    timestamps: np.ndarray, timestamp_format: str | None = None
) -> pd.DatetimeIndex:
    """Parse timestamps (naive = UTC) to ``datetime64[ns, UTC]``; NaT where they do not parse.

    ``timestamp_format``: None for ISO 8601 (``pandas.to_datetime`` with
    ``format="ISO8601"``), else a strptime format that the whole string must match (see
    :func:`check_timestamp_format`). Only the unique strings are parsed, vectorized.
    Values outside the ``datetime64[ns]`` range (before 1677 or after 2262) are NaT too.
    """
    codes, uniques = pd.factorize(timestamps)
    parsed = pd.to_datetime(
        pd.Index(uniques, dtype=object),
        format=timestamp_format or "ISO8601",
        utc=True,
        errors="coerce",
    )
    ok = (parsed >= _NS_MIN) & (parsed <= _NS_MAX)
    ns = np.full(len(uniques) + 1, np.datetime64("NaT", "ns"))  # last slot: code -1
    ns[:-1][ok] = parsed[ok].as_unit("ns").tz_localize(None).to_numpy()
    return pd.DatetimeIndex(ns[codes]).tz_localize("UTC")


_NS_MIN = pd.Timestamp("1677-09-22", tz="UTC")
_NS_MAX = pd.Timestamp("2262-04-11", tz="UTC")


def bodies(
    req: Requests, idx: np.ndarray, problems: Problems, tables: Sequence[str]
) -> Iterator[tuple[int, dict]]:
    """Yield ``(i, parsed body)`` for the requests ``idx``; malformed JSON is fatal."""
    loads = orjson.loads
    body_of = req.body
    for i in idx.tolist():
        raw = body_of[i]
        try:
            t = type(raw)
            if t is dict:
                body = raw
            elif t is str or t is bytes or isinstance(raw, str | bytes | bytearray | memoryview):
                body = loads(raw)
                if not isinstance(body, dict):
                    raise BodyError(
                        "$", f"the body is a JSON {type_name(body)}, expected an object"
                    )
            elif raw is None or (isinstance(raw, float) and math.isnan(raw)):
                raise BodyError("$", "the body is empty (null) on a successful row")
            else:
                raise BodyError(
                    "$", f"the body must be JSON text, bytes or a dict, got {type(raw).__name__}"
                )
        except orjson.JSONDecodeError as exc:
            problems.fatal(req, i, tables, BodyError("$", f"the body is not valid JSON ({exc})"))
            continue
        except BodyError as exc:
            problems.fatal(req, i, tables, exc)
            continue
        yield i, body
        del body  # free the tree before the next parse, so its memory is reused warm


def reparse(req: Requests, i: int) -> dict:
    """Parse the body of request ``i`` again, to re-check a suspect response exactly."""
    raw = req.body[i]
    return raw if isinstance(raw, dict) else orjson.loads(raw)


def top_level(
    body: dict, ep: Endpoint, req: Requests, i: int, problems: Problems, tables: Sequence[str]
) -> str | None:
    """Check the fields every response may carry; return the ``Version`` (model_version).

    ``Version`` is required where the registry says the endpoint has one. The echo fields
    are optional (some responses omit them); when present they must be strings, and a
    ``PatientID``/``TimeStamp`` that differs from the request is noted and warned about.
    """
    version = body.get("Version")
    if version is None and "Version" not in body:
        if ep.version is not None:
            raise BodyError("$.Version", "required field 'Version' is missing")
    else:
        version = text(version, "$.Version")
    for field, sent, column in (
        ("PatientID", req.patient_id[i], "patient_id"),
        ("TimeStamp", req.timestamp[i], "timestamp"),
    ):
        if field in body:
            echo = body[field]
            if not isinstance(echo, str):
                raise BodyError(f"$.{field}", f"expected a string echo, got a {type_name(echo)}")
            if echo != sent:
                msg = (
                    f"{field} echo {short(echo)} differs from the request {column} "
                    f"{short(sent)}; the table keeps the request value"
                )
                problems.echo(req, i, tables, f"$.{field}", msg)
    for field in ("ImageName", "OutputImageUrl"):
        if field in body and not isinstance(body[field], str):
            raise BodyError(f"$.{field}", f"expected a string, got a {type_name(body[field])}")
    return version
