"""Predicted treatment lengths for a cohort from ``GET /tle`` answers, and sensitivity curves.

:func:`estimate` validates and encodes the whole patient table first (nothing is sent
for an invalid row) and maps each row to the stored answer for its query. The answers
come from the **responses store** — the same lossless, resumable store the image
endpoints are fetched into: pass the responses table itself (nothing is sent), or a
*fetcher* such as :class:`dentalkit.fetch.cohort.Fetcher` that fetches the queries the store
lacks through :func:`dentalkit.fetch_cohort` (one request per distinct query; planned,
sent, stored, failed and resumed like every other request). This module never imports
the HTTP client. :func:`sensitivity` varies one factor while holding the others (a
partial-dependence curve) on top of :func:`estimate`.
"""

from __future__ import annotations

import json
import logging
import math
import warnings
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import orjson
import pandas as pd

from dentalkit.endpoints import get_endpoint
from dentalkit.errors import (
    DentalkitError,
    DentalkitWarning,
    Errors,
    InputError,
    ManifestError,
    ResponseFormatError,
    attached_problems,
    check_errors,
    problems_error,
    problems_frame,
)
from dentalkit.tle.codebook import Codebook, load_codebook
from dentalkit.tle.encoding import PROBLEM_COLUMNS, encode

__all__ = [
    "ESTIMATE_PROBLEM_COLUMNS",
    "SENSITIVITY_TIMESTAMP",
    "TLE_TIMESTAMP",
    "estimate",
    "problems",
    "sensitivity",
]

log = logging.getLogger("dentalkit")

_ENDPOINT = get_endpoint("tle")
_PARAMS = [q.name for q in _ENDPOINT.query]
#: Columns of :func:`problems` (of an :func:`estimate` or :func:`sensitivity` result): the
#: encoding problems' columns plus the error type and HTTP status of a failed call.
ESTIMATE_PROBLEM_COLUMNS = (*PROBLEM_COLUMNS, "error_type", "status_code")
#: The ``timestamp`` of the /tle requests a fetcher stores for a patient table without a
#: ``timestamp`` column (the store keys every request by patient, session and query).
TLE_TIMESTAMP = "tle"
#: The ``timestamp`` of the /tle requests :func:`sensitivity` stores through a fetcher.
SENSITIVITY_TIMESTAMP = "tle-sensitivity"

# Reason of a query the responses do not answer (the advice that follows depends on the source).
_NO_ANSWER = "no stored answer for this query"
#: What :func:`estimate` reads answers from: a responses table, or a fetcher.
Source = pd.DataFrame | Callable[..., pd.DataFrame]


def estimate(
    patients: pd.DataFrame,
    responses: Source,
    errors: Errors = "raise",
    *,
    codebook: Codebook | str | None = None,
    timestamp: str | None = None,
) -> pd.DataFrame:
    """Predicted treatment length of every patient, from stored ``GET /tle`` answers.

    Parameters
    ----------
    patients : pandas.DataFrame
        Typed patient table with the codebook's columns (see :func:`~dentalkit.tle.encode`);
        ``patient_id`` (and ``timestamp``) when present key the requests a fetcher stores.
    responses : DataFrame or fetcher
        Where the answers come from:

        * a responses table (:func:`dentalkit.fetch.store.read_responses`): nothing is sent; a
          query without a stored answer leaves the row missing and is listed by
          :func:`problems`;
        * a fetcher, e.g. ``dentalkit.fetch.cohort.Fetcher(out, client)``: a callable that takes
          a ``/tle`` manifest (``patient_id``, ``timestamp``, ``endpoint``, ``p01`` …
          ``p11``) and ``errors=``, fetches it into its store with
          :func:`dentalkit.fetch_cohort` and returns the store's responses table (with the
          run's failures in ``attrs["failures"]``). Only queries the store does not answer
          yet are sent, one request per distinct query; a killed run resumes from the store.
    errors : {"raise", "collect", "warn"}, default "raise"
        dentalkit's one ``errors=`` rule (:func:`dentalkit.errors.check_errors`).
        ``"collect"``: invalid rows are not sent and failed calls do not stop the run; both
        leave ``app``/``estimate_length_months`` missing and are listed by
        :func:`problems` ``(result)``. ``"warn"``: the same, and a
        :class:`~dentalkit.errors.DentalkitWarning` says how many. ``"raise"`` (the
        default): any invalid row raises :class:`~dentalkit.errors.ManifestError` before
        anything is sent; with a fetcher, the first failed call stops the fetch (what
        arrived is stored) and raises its error; a query left without an answer raises
        :class:`~dentalkit.errors.InputError` naming its patient rows (its ``problems``
        attribute lists every one).
    codebook : Codebook or path, optional
        Default: the shipped codebook.
    timestamp : str, optional
        Session label of the requests a fetcher stores; default the ``timestamp`` column,
        else :data:`TLE_TIMESTAMP`.

    Returns
    -------
    pandas.DataFrame
        The input rows (same index and order, input not modified) plus ``p01`` … ``p11``
        (the strings sent; missing for invalid rows), ``app`` (the estimator's name) and
        ``estimate_length_months`` (float64, months as the service answered).
        :func:`problems` ``(result)`` gives one row per invalid value, failed call or
        missing answer (columns :data:`ESTIMATE_PROBLEM_COLUMNS`); ``attrs["requests"]``
        is the number of distinct parameter sets, ``attrs["from_store"]`` how many the
        store already answered before this call, ``attrs["sent"]`` how many the fetcher
        sent and ``attrs["from_cache"]`` how many of those the HTTP cache answered.
        ``attrs`` hold plain values only (the problems as records), so results
        concatenate with :func:`pandas.concat` and copy cheaply.

    Raises
    ------
    InputError
        ``patients`` is not a DataFrame or lacks a codebook column, or ``responses`` is
        neither a responses table nor a fetcher (either mode).
    ManifestError
        ``errors="raise"`` and some value is invalid (every one listed; nothing sent).
    ApiError, TransportError, ResponseFormatError
        ``errors="raise"`` and a call failed or a stored answer is malformed.
    InputError
        ``errors="raise"`` and some query has no stored answer (responses table given).

    Examples
    --------
    >>> from dentalkit import tle
    >>> from dentalkit.fetch.client import Client
    >>> from dentalkit.fetch.cohort import Fetcher
    >>> from dentalkit.sandbox import running
    >>> with running() as sb:  # doctest: +SKIP
    ...     fetcher = Fetcher("study-store", Client(sb.base_url, api_key=sb.api_key))
    ...     est = tle.estimate(tle.example_patients(20), fetcher, errors="collect")
    """
    errors = check_errors(errors, "dentalkit.tle.estimate")
    fetch = _check_source(responses)
    book = load_codebook(codebook)
    if not isinstance(patients, pd.DataFrame):
        encode(patients, book)  # raises the InputError that explains
    # encode by position (labels may repeat); problems give position and the caller's label
    encoded, problems = encode(patients.reset_index(drop=True), book, errors="collect")
    problems["index_label"] = pd.Series(
        patients.index[problems["row"].to_numpy(dtype=np.int64)], dtype=object
    )
    if errors == "raise" and len(problems):
        raise ManifestError(
            problems,
            what="patients table",
            hint="Or pass errors='collect' to estimate the valid rows and list these in "
            "dentalkit.tle.problems(result)",
        )
    problems = problems.assign(
        error_type=pd.Series("InputError", index=problems.index, dtype="str"),
        status_code=pd.Series(pd.NA, index=problems.index, dtype="Int16"),
    )
    unique = encoded.drop_duplicates(ignore_index=True)
    stored = _stored(responses if fetch is None else _current(fetch))
    malformed: dict[tuple, DentalkitError] = {}
    answers = _lookup(unique, stored, errors, malformed)
    counts = {"from_store": len(answers), "sent": 0, "from_cache": 0}
    failures: dict[tuple, DentalkitError] = {}
    missing = [q for q in _queries(unique) if q not in answers]
    if fetch is not None and missing:
        manifest = _manifest(patients, encoded, set(missing), timestamp)
        fetched = fetch(manifest, errors="raise" if errors == "raise" else "collect")
        if not isinstance(fetched, pd.DataFrame):
            raise InputError(
                f"the fetcher returned a {type(fetched).__name__}, not a responses table"
            )
        malformed = {}
        answers = _lookup(unique, _stored(fetched), errors, malformed)
        info = fetched.attrs.get("fetch", {})
        counts["sent"] = int(info.get("sent", len(missing)))
        counts["from_cache"] = int(info.get("from_cache", 0))
        failures = _failures(fetched.attrs.get("failures", ()))
    table = _answers_table(answers)

    n, valid = len(patients), encoded.index.to_numpy()
    keyed = encoded.merge(table, on=_PARAMS, how="left", validate="many_to_one")
    out = patients.copy()
    for name, source, dtype in (
        *((param, encoded, "str") for param in _PARAMS),
        ("app", keyed, "str"),
        ("estimate_length_months", keyed, "float64"),
    ):
        column = np.full(n, np.nan if dtype == "float64" else None, dtype=object)
        column[valid] = source[name].to_numpy(dtype=object)
        out[name] = pd.Series(column, index=patients.index).astype(dtype)

    unanswered = [q for q in _queries(unique) if q not in answers]
    if unanswered:
        why = {
            q: failures.get(q)
            or malformed.get(q)
            or ResponseFormatError(
                _NO_ANSWER
                + (
                    " (not fetched: pass a fetcher such as dentalkit.fetch.cohort.Fetcher, or fetch "
                    "the query with fetch_cohort first)"
                    if fetch is None
                    else " (the call failed or was not sent; see failures.parquet in the store)"
                ),
                endpoint=_ENDPOINT.path,
            )
            for q in unanswered
        }
        frame = pd.DataFrame([dict(zip(_PARAMS, q, strict=True)) for q in unanswered])
        frame["error"] = [why[q] for q in unanswered]
        failed = encoded.reset_index(names="_pos").merge(frame, on=_PARAMS, how="inner")
        unanswered_rows = _failure_problems(failed, patients)
        if errors == "raise":
            # the message shows each error's reason, not its generic advice; the error's
            # problems attribute is the table errors="collect" would list
            shown = unanswered_rows.assign(
                path=None, reason=[_short_reason(e) for e in failed["error"]]
            )
            err = problems_error(
                shown,
                f"dentalkit.tle.estimate: {len(unanswered_rows)} patient row(s) have no "
                "/tle answer",
                (
                    "Fetch them first (pass a fetcher such as dentalkit.fetch.cohort.Fetcher "
                    "instead of the responses table)"
                    if fetch is None
                    else "The fetch stored no answer for them (see failures.parquet in the "
                    "store; run again to resume)"
                )
                + ", or pass errors='collect' to estimate the others and list these in "
                "dentalkit.tle.problems(result)",
            )
            err.problems = _problems_table(
                _records(pd.concat([problems, unanswered_rows], ignore_index=True))
            )
            raise err
        problems = pd.concat([problems, unanswered_rows], ignore_index=True)
    out.attrs["problems"] = _records(problems)
    out.attrs["requests"] = len(unique)
    out.attrs.update(counts)
    if len(problems) and errors == "warn":
        n_rows = int(out["estimate_length_months"].isna().sum())
        warnings.warn(
            f"{n_rows} of {len(out)} patient row(s) have no estimate "
            f"({len(problems)} problem(s)); see dentalkit.tle.problems(result)",
            DentalkitWarning,
            stacklevel=2,
        )
    return out


def _check_source(responses: Any) -> Callable[..., pd.DataFrame] | None:
    """The fetcher, or None for a responses table; anything else is an InputError."""
    if isinstance(responses, pd.DataFrame):
        missing = {"endpoint", "options", "body"} - set(responses.columns)
        if missing:
            raise InputError(
                "responses must be a responses table (dentalkit.fetch.store.read_responses) with "
                f"the columns endpoint, options and body; missing {sorted(missing)}"
            )
        return None
    if callable(responses):
        return responses
    raise InputError(
        "tle.estimate reads GET /tle answers from the responses store: pass the responses "
        "table (dentalkit.fetch.store.read_responses(out)) or a fetcher such as "
        f"dentalkit.fetch.cohort.Fetcher(out, client); got a {type(responses).__name__} "
        "(a Client is no longer taken directly, so that every answer is stored and a killed "
        "run resumes)"
    )


def _current(fetch: Callable[..., pd.DataFrame]) -> pd.DataFrame | None:
    """What the fetcher's store already holds (None when it cannot say)."""
    stored = getattr(fetch, "stored", None)
    return stored() if callable(stored) else None


def _queries(unique: pd.DataFrame) -> list[tuple]:
    return list(unique[_PARAMS].itertuples(index=False, name=None))


def _stored(responses: pd.DataFrame | None) -> pd.DataFrame:
    """The stored /tle answers: their query (p01 … p11), body and fetch time."""
    cols = [*_PARAMS, "body", "fetched_at"]
    if responses is None or not len(responses):
        return pd.DataFrame(columns=cols)
    ok = np.array([_is_tle(e) for e in responses["endpoint"].astype("object")], dtype=bool)
    if "status_code" in responses.columns:
        status = pd.to_numeric(responses["status_code"], errors="coerce")
        ok &= (status.isna() | (status == 200)).to_numpy()
    if "error" in responses.columns:
        ok &= responses["error"].isna().to_numpy()
    sub = responses.loc[ok]
    rows = []
    fetched = sub["fetched_at"] if "fetched_at" in sub.columns else pd.Series(pd.NaT, sub.index)
    for opts, body, at in zip(sub["options"], sub["body"], fetched, strict=True):
        try:
            query = json.loads(opts) if isinstance(opts, str | bytes) else opts
        except ValueError:
            continue
        if not isinstance(query, Mapping) or any(
            not isinstance(query.get(p), str) for p in _PARAMS
        ):
            continue
        rows.append((*(query[p] for p in _PARAMS), body, at))
    return pd.DataFrame(rows, columns=cols)


def _is_tle(endpoint: Any) -> bool:
    try:
        return get_endpoint(endpoint) is _ENDPOINT
    except KeyError:
        return False


def _lookup(
    unique: pd.DataFrame,
    stored: pd.DataFrame,
    errors: str,
    malformed: dict[tuple, DentalkitError] | None = None,
) -> dict[tuple, tuple]:
    """Query → (app, months) for the queries of ``unique`` that ``stored`` answers.

    Several stored answers of one query (several sessions asked it): the latest is used.
    A malformed stored body raises in ``errors="raise"``, else it counts as unanswered and
    its error goes to ``malformed`` (the reason listed by :func:`problems`).
    """
    wanted = set(_queries(unique))
    out: dict[tuple, tuple] = {}
    if not len(stored):
        return out
    order = stored.sort_values("fetched_at", kind="stable", na_position="first")
    for rec in order.itertuples(index=False, name=None):
        query, body = tuple(rec[: len(_PARAMS)]), rec[len(_PARAMS)]
        if query not in wanted:
            continue
        try:
            out[query] = _parse(orjson.loads(body) if isinstance(body, str | bytes) else body)
        except (orjson.JSONDecodeError, ResponseFormatError) as exc:
            err = (
                exc
                if isinstance(exc, ResponseFormatError)
                else ResponseFormatError(
                    "the stored /tle body is not JSON", endpoint=_ENDPOINT.path
                )
            )
            if errors == "raise":
                raise err from None
            if malformed is not None and query not in out:
                malformed[query] = err
    return out


def _answers_table(answers: dict[tuple, tuple]) -> pd.DataFrame:
    rows = [(*q, app, months) for q, (app, months) in answers.items()]
    table = pd.DataFrame(rows, columns=[*_PARAMS, "app", "estimate_length_months"])
    return table.astype(
        {**dict.fromkeys(_PARAMS, "str"), "app": "str", "estimate_length_months": "float64"}
    )


def _manifest(
    patients: pd.DataFrame, encoded: pd.DataFrame, missing: set[tuple], timestamp: str | None
) -> pd.DataFrame:
    """The /tle manifest of the rows whose query the store lacks (first row per query)."""
    pos = encoded.index.to_numpy()
    queries = _queries(encoded)
    first: dict[tuple, int] = {}
    for p, q in zip(pos, queries, strict=True):
        if q in missing and q not in first:
            first[q] = int(p)
    take = np.fromiter(first.values(), dtype=np.int64, count=len(first))
    if "patient_id" in patients.columns:
        ids = patients["patient_id"].astype("str").to_numpy()[take]
    else:
        ids = np.asarray([f"row-{patients.index[p]}" for p in take], dtype=object)
    if timestamp is not None:
        stamps = np.full(len(take), timestamp, dtype=object)
    elif "timestamp" in patients.columns:
        stamps = patients["timestamp"].astype("str").to_numpy()[take]
    else:
        stamps = np.full(len(take), TLE_TIMESTAMP, dtype=object)
    manifest = pd.DataFrame(
        {"patient_id": ids, "timestamp": stamps, "endpoint": _ENDPOINT.name}, dtype=object
    )
    for i, param in enumerate(_PARAMS):
        manifest[param] = [q[i] for q in first]
    return manifest


def _failures(records: Any) -> dict[tuple, DentalkitError]:
    """Query → the error of its failed call, from a fetcher's failure records."""
    out: dict[tuple, DentalkitError] = {}
    for rec in records or ():
        try:
            query = json.loads(rec.get("options") or "")
        except (ValueError, TypeError):
            continue
        if not isinstance(query, Mapping) or any(p not in query for p in _PARAMS):
            continue
        err = _StoredFailureError(rec.get("error") or "the call failed", rec)
        out[tuple(query[p] for p in _PARAMS)] = err
    return out


class _StoredFailureError(DentalkitError):
    """A failed /tle call as recorded in the store's failures table."""

    def __init__(self, message: str, record: Mapping[str, Any]) -> None:
        super().__init__(message)
        self.error_type = str(record.get("error_type") or "DentalkitError")
        code = record.get("status_code")
        self.status = None if code is None or pd.isna(code) else int(code)
        self.path = "$"


def problems(result: pd.DataFrame) -> pd.DataFrame:
    """The problems of an :func:`estimate` or :func:`sensitivity` result, as a table.

    Parameters
    ----------
    result : pandas.DataFrame
        A result of :func:`estimate` or :func:`sensitivity` (or a frame derived from one
        that kept its ``attrs``).

    Returns
    -------
    pandas.DataFrame
        One row per invalid value or failed call, columns :data:`ESTIMATE_PROBLEM_COLUMNS`
        (``row`` is the 0-based position of the patient row in the input table,
        ``index_label`` its label); empty when there were none.

    Raises
    ------
    InputError
        ``result`` carries no problems record (not a tle result, or its ``attrs`` were
        dropped, as pandas does when concatenating results whose problems differ).
    """
    return _problems_table(attached_problems(result, "tle", "tle.estimate or tle.sensitivity"))


def _problems_table(records: Sequence[Mapping[str, Any]]) -> pd.DataFrame:
    """The table :func:`problems` gives for these records (see :func:`_records`)."""
    table = pd.DataFrame.from_records(list(records), columns=list(ESTIMATE_PROBLEM_COLUMNS))
    table = problems_frame(table, severity="error")
    return table.astype({"param": "str", "error_type": "str", "status_code": "Int16"})


def _records(table: pd.DataFrame) -> tuple[dict[str, Any], ...]:
    """Problems as a tuple of plain-value dicts (comparable with ``==``, JSON-able)."""
    clean = table.astype(object).where(table.notna(), None)
    return tuple(
        {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
        for row in clean.to_dict("records")
    )


def _parse(data: Any) -> tuple[str, float]:
    """``app`` and ``estimate_length`` of a /tle body, checked against the spec."""
    if not isinstance(data, dict):
        raise ResponseFormatError("the /tle body is not a JSON object", endpoint=_ENDPOINT.path)
    months = data.get("estimate_length")
    if "estimate_length" not in data:
        raise ResponseFormatError(
            "no 'estimate_length' field", endpoint=_ENDPOINT.path, path="$.estimate_length"
        )
    if isinstance(months, bool) or not isinstance(months, int | float):
        raise ResponseFormatError(
            f"'estimate_length' must be a number of months, got {months!r}",
            endpoint=_ENDPOINT.path,
            path="$.estimate_length",
        )
    if not math.isfinite(months) or months < 0:
        raise ResponseFormatError(
            f"'estimate_length' must be a finite, non-negative number of months, got {months!r}",
            endpoint=_ENDPOINT.path,
            path="$.estimate_length",
        )
    app = data.get("app")
    if not isinstance(app, str):
        raise ResponseFormatError(
            f"'app' must be a string, got {app!r}", endpoint=_ENDPOINT.path, path="$.app"
        )
    return app, float(months)


def _short_reason(err: Exception) -> str:
    """An error's reason for one line of a message (without advice the message gives once)."""
    reason = getattr(err, "reason", None)
    if not isinstance(reason, str):
        return str(err)
    return _NO_ANSWER if reason.startswith(_NO_ANSWER) else reason


def _failure_problems(failed: pd.DataFrame, patients: pd.DataFrame) -> pd.DataFrame:
    n = len(failed)
    pos = failed["_pos"].to_numpy(dtype=np.int64)
    errors_ = failed["error"].tolist()
    ids = (
        patients["patient_id"].astype("str").to_numpy()[pos]
        if "patient_id" in patients.columns
        else [pd.NA] * n
    )
    query = failed[_PARAMS[0]].radd(f"{_PARAMS[0]}=")
    for param in _PARAMS[1:]:
        query = query + f"&{param}=" + failed[param]
    table = pd.DataFrame(
        {
            "table": "tle",
            "endpoint": "tle",
            "patient_id": pd.Series(ids, dtype="str"),
            "row": pos,
            "path": pd.Series([getattr(e, "path", "$") for e in errors_], dtype="str"),
            "value": query.astype("str").to_numpy(),
            "reason": pd.Series([str(e) for e in errors_], dtype="str"),
            "severity": "error",
            "param": pd.Series([pd.NA] * n, dtype="str"),
            "index_label": pd.Series(patients.index[pos], dtype=object),
            "error_type": pd.Series([_error_type(e) for e in errors_], dtype="str"),
            "status_code": pd.Series([_status(e) for e in errors_], dtype="Int16"),
        }
    )
    return problems_frame(table)


def _error_type(err: Exception) -> str:
    return err.error_type if isinstance(err, _StoredFailureError) else type(err).__name__


def _status(err: Exception) -> Any:
    status = getattr(err, "status", None)
    return pd.NA if status is None else int(status)


def sensitivity(
    patient_or_patients: pd.DataFrame | pd.Series | Mapping[str, Any],
    parameter: str,
    values: Sequence[Any],
    responses: Source,
    *,
    codebook: Codebook | str | None = None,
    errors: Errors = "raise",
    timestamp: str | None = SENSITIVITY_TIMESTAMP,
) -> pd.DataFrame:
    """Vary one factor, hold the others: predicted months per value (partial dependence).

    For each patient, the ``parameter`` column is set to each of ``values`` in turn while
    every other column keeps the patient's own value; the cohort curve is the mean over
    patients at each value (Friedman's partial-dependence function, Ann Stat 2001;
    29(5):1189-1232, evaluated on the given patients).

    Parameters
    ----------
    patient_or_patients : DataFrame, Series or mapping
        One patient (a mapping or Series of typed values) or a typed patient table.
    parameter : str
        The factor to vary: ``"p04"`` or its column name (``"crowding"``).
    values : sequence
        Typed values to try, in plotting order (e.g. ``["none", "mild", "moderate",
        "severe"]`` or ``range(10, 41, 2)``).
    responses : DataFrame or fetcher
        As for :func:`estimate`; identical parameter sets are sent once. Use a fetcher
        with its own store (``Fetcher(out / "tle-sensitivity", client)``): the varied
        queries are hypothetical patients, not observations of the cohort.
    codebook
        As for :func:`estimate`.
    timestamp : str, optional
        Session label of the requests a fetcher stores (default
        :data:`SENSITIVITY_TIMESTAMP`), so that they never pose as a patient's session.
    errors : {"raise", "collect", "warn"}
        dentalkit's one ``errors=`` rule (:func:`dentalkit.errors.check_errors`).
        ``"raise"`` (default): an invalid value (in ``values`` or in a patient's other
        columns) or a failed call raises. ``"collect"``: those points are NaN, and a mean
        over patients at a value with any NaN is NaN too (never a mean over a different
        subset of patients); ``attrs["problems"]`` lists them. ``"warn"``: the same, and
        one :class:`~dentalkit.errors.DentalkitWarning` says how many points are NaN.

    Returns
    -------
    pandas.DataFrame
        Tidy, one row per (patient, value) plus one ``mean`` row per value: ``curve``
        (``"patient"`` or ``"mean"``, categorical), ``patient`` (the ``patient_id`` column
        if present, else the row label; missing on mean rows), ``parameter`` (``p04``),
        ``column`` (``crowding``), ``value`` (as given), ``code`` (the string sent),
        ``estimate_length_months`` and ``n_patients`` (patients with an estimate at that
        value; mean rows only).

    Examples
    --------
    >>> curve = tle.sensitivity(
    ...     patient, "crowding", ["none", "mild", "severe"], fetcher
    ... )  # doctest: +SKIP
    >>> curve.query("curve == 'mean'").plot(x="value", y="estimate_length_months")  # doctest: +SKIP
    """
    errors = check_errors(errors, "dentalkit.tle.sensitivity")
    book = load_codebook(codebook)
    p = book[parameter]
    table = _as_table(patient_or_patients)
    values = list(values)
    if not values:
        raise InputError(f"give at least one value of {p.column} ({p.param}) to try")
    n, k = len(table), len(values)
    grid = table.iloc[np.repeat(np.arange(n), k)].reset_index(drop=True)
    tried = pd.Series(values * n)
    grid[p.column] = tried
    ids = (
        table["patient_id"].astype("str").to_numpy()
        if "patient_id" in table.columns
        else table.index.astype("str").to_numpy()
    )
    inner = "raise" if errors == "raise" else "collect"  # reported once below
    result = estimate(grid, responses, inner, codebook=book, timestamp=timestamp)
    curves = pd.DataFrame(
        {
            "curve": "patient",
            "patient": pd.Series(np.repeat(ids, k), dtype="str"),
            "parameter": p.param,
            "column": p.column,
            "value": tried,
            "code": result[p.param].to_numpy(),
            "estimate_length_months": result["estimate_length_months"].to_numpy(),
        }
    )
    by_value = result["estimate_length_months"].to_numpy().reshape(n, k)
    means = pd.DataFrame(
        {
            "curve": "mean",
            "patient": pd.Series([pd.NA] * k, dtype="str"),
            "parameter": p.param,
            "column": p.column,
            "value": pd.Series(values).astype(tried.dtype),
            "code": curves["code"].iloc[:k].to_numpy() if n else pd.NA,
            "estimate_length_months": by_value.mean(axis=0),  # NaN if any patient is NaN
            "n_patients": (~np.isnan(by_value)).sum(axis=0),
        }
    )
    out = pd.concat([curves, means], ignore_index=True)
    out["curve"] = pd.Categorical(out["curve"], categories=["patient", "mean"])
    out = out.astype({"parameter": "str", "column": "str", "code": "str", "n_patients": "Int64"})
    out.attrs["problems"] = result.attrs["problems"]
    if len(out.attrs["problems"]) and errors == "warn":
        warnings.warn(
            f"{int(np.isnan(by_value).sum())} point(s) of the sensitivity curves have no "
            "estimate; see dentalkit.tle.problems(result)",
            DentalkitWarning,
            stacklevel=2,
        )
    return out


def _as_table(patients: Any) -> pd.DataFrame:
    if isinstance(patients, pd.DataFrame):
        if patients.empty:
            raise InputError("the patient table is empty")
        return patients
    if isinstance(patients, pd.Series):
        return patients.to_frame().T.infer_objects()
    if isinstance(patients, Mapping):
        return pd.DataFrame([dict(patients)])
    raise InputError(
        "give one patient as a mapping or Series of typed values, or a patient DataFrame; "
        f"got {type(patients).__name__}"
    )
