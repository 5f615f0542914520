"""Predicted treatment lengths for a cohort through ``GET /tle``, and sensitivity curves.

:func:`estimate` validates and encodes the whole patient table first (nothing is sent
for an invalid row), sends **one** request per distinct parameter set through the cached
client (the HTTP cache also de-duplicates across runs) and maps the answers back to
every row. :func:`sensitivity` varies one factor while holding the others (a
partial-dependence curve) on top of :func:`estimate`.
"""

from __future__ import annotations

import logging
import math
import warnings
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import pandas as pd

from dentalkit.endpoints import get_endpoint
from dentalkit.errors import (
    ApiError,
    DentalkitError,
    DentalkitWarning,
    InputError,
    ManifestError,
    ResponseFormatError,
)
from dentalkit.tle.codebook import Codebook, load_codebook
from dentalkit.tle.encoding import PROBLEM_COLUMNS, encode

if TYPE_CHECKING:
    from dentalkit.client import Client

__all__ = ["ESTIMATE_PROBLEM_COLUMNS", "estimate", "problems", "sensitivity"]

log = logging.getLogger("dentalkit")

_ENDPOINT = get_endpoint("tle")
_PARAMS = [q.name for q in _ENDPOINT.query]
#: Columns of :func:`problems` (of an :func:`estimate` or :func:`sensitivity` result): the
#: encoding problems' columns plus the error type and HTTP status of a failed call.
ESTIMATE_PROBLEM_COLUMNS = (*PROBLEM_COLUMNS, "error_type", "status_code")


def estimate(
    patients: pd.DataFrame,
    client: Client | None = None,
    max_workers: int = 8,
    progress: bool = True,
    errors: Literal["collect", "raise"] = "collect",
    *,
    codebook: Codebook | str | None = None,
    refresh: bool = False,
) -> pd.DataFrame:
    """Predict the treatment length of every patient with ``GET /tle``.

    Parameters
    ----------
    patients : pandas.DataFrame
        Typed patient table with the codebook's columns (see :func:`~dentalkit.tle.encode`).
    client : dentalkit.Client, optional
        The cached client; default ``dentalkit.Client()`` (settings and environment). For
        the local sandbox: ``Client(sb.base_url, api_key=sb.api_key)``.
    max_workers : int
        Concurrent requests (threads sharing the client).
    progress : bool
        Show a tqdm progress bar over the distinct requests.
    errors : {"collect", "raise"}
        ``"collect"`` (default): invalid rows are not sent and failed calls do not stop the
        run; both leave ``app``/``estimate_length_months`` missing and are listed by
        :func:`problems` ``(result)`` (a :class:`~dentalkit.errors.DentalkitWarning` says how
        many). ``"raise"``: any invalid row raises :class:`~dentalkit.errors.ManifestError`
        before anything is sent; the first failed call raises its error.
    codebook : Codebook or path, optional
        Default: the shipped codebook.
    refresh : bool
        Bypass the cache read and store fresh answers.

    Returns
    -------
    pandas.DataFrame
        The input rows (same index and order, input not modified) plus ``p01`` … ``p11``
        (the strings sent; missing for invalid rows), ``app`` (the estimator's name) and
        ``estimate_length_months`` (float64, months as the service answered).
        :func:`problems` ``(result)`` gives one row per invalid value or failed call
        (columns :data:`ESTIMATE_PROBLEM_COLUMNS`); ``attrs["requests"]`` is the number of
        distinct parameter sets and ``attrs["from_cache"]`` how many the HTTP cache
        answered. ``attrs`` hold plain values only (the problems as records), so results
        concatenate with :func:`pandas.concat` and copy cheaply.

    Raises
    ------
    InputError
        ``patients`` is not a DataFrame or lacks a codebook column (either mode).
    ManifestError
        ``errors="raise"`` and some value is invalid (every one listed; nothing sent).
    ApiError, TransportError, ResponseFormatError
        ``errors="raise"`` and a call failed.

    Examples
    --------
    >>> from dentalkit import tle
    >>> from dentalkit.client import Client
    >>> from dentalkit.sandbox import running
    >>> with running() as sb:  # doctest: +SKIP
    ...     client = Client(sb.base_url, api_key=sb.api_key)
    ...     est = tle.estimate(tle.example_patients(20), client)
    """
    if errors not in ("collect", "raise"):
        raise InputError(f"errors must be 'collect' or 'raise', got {errors!r}")
    if max_workers < 1:
        raise InputError(f"max_workers must be at least 1, got {max_workers}")
    book = load_codebook(codebook)
    if not isinstance(patients, pd.DataFrame):
        encode(patients, book)  # raises the InputError that explains
    # encode by position (labels may repeat), report problems by the caller's labels
    encoded, problems = encode(patients.reset_index(drop=True), book, errors="collect")
    problems["row"] = patients.index[problems["row"].to_numpy(dtype=np.int64)]
    if errors == "raise" and len(problems):
        raise ManifestError(problems, what="patients table")
    problems = problems.assign(
        error_type=pd.Series("InputError", index=problems.index, dtype="str"),
        status_code=pd.Series(pd.NA, index=problems.index, dtype="Int16"),
    )
    unique = encoded.drop_duplicates(ignore_index=True)
    answers, failures, from_cache = _call_all(
        unique, client, max_workers, progress, errors, refresh
    )

    n, valid = len(patients), encoded.index.to_numpy()
    keyed = encoded.merge(answers, on=_PARAMS, how="left", validate="many_to_one")
    out = patients.copy()
    for name, source, dtype in (
        *((param, encoded, "str") for param in _PARAMS),
        ("app", keyed, "str"),
        ("estimate_length_months", keyed, "float64"),
    ):
        column = np.full(n, np.nan if dtype == "float64" else None, dtype=object)
        column[valid] = source[name].to_numpy(dtype=object)
        out[name] = pd.Series(column, index=patients.index).astype(dtype)

    if len(failures):
        failed = encoded.reset_index(names="_pos").merge(failures, on=_PARAMS, how="inner")
        problems = pd.concat([problems, _failure_problems(failed, patients)], ignore_index=True)
    out.attrs["problems"] = _records(problems)
    out.attrs["requests"] = len(unique)
    out.attrs["from_cache"] = from_cache
    if len(problems):
        n_rows = int(out["estimate_length_months"].isna().sum())
        warnings.warn(
            f"{n_rows} of {len(out)} patient row(s) have no estimate "
            f"({len(problems)} problem(s)); see dentalkit.tle.problems(result)",
            DentalkitWarning,
            stacklevel=2,
        )
    return out


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
        (``row`` is the label of the patient row in the input table); empty when there
        were none.

    Raises
    ------
    InputError
        ``result`` carries no problems record (not a tle result, or its ``attrs`` were
        dropped, as pandas does when concatenating results whose problems differ).
    """
    records = getattr(result, "attrs", {}).get("problems")
    if records is None:
        raise InputError(
            "this table carries no tle problems record: pass a result of tle.estimate or "
            "tle.sensitivity (pandas drops attrs when concatenated results differ in them; "
            "collect problems(result) before concatenating)"
        )
    table = pd.DataFrame.from_records(list(records), columns=list(ESTIMATE_PROBLEM_COLUMNS))
    text = [c for c in ESTIMATE_PROBLEM_COLUMNS if c not in ("row", "status_code")]
    return table.astype({**dict.fromkeys(text, "str"), "status_code": "Int16"})


def _records(table: pd.DataFrame) -> tuple[dict[str, Any], ...]:
    """Problems as a tuple of plain-value dicts (comparable with ``==``, JSON-able)."""
    clean = table.astype(object).where(table.notna(), None)
    return tuple(
        {k: (v.item() if isinstance(v, np.generic) else v) for k, v in row.items()}
        for row in clean.to_dict("records")
    )


def _call_all(
    unique: pd.DataFrame,
    client: Client | None,
    max_workers: int,
    progress: bool,
    errors: str,
    refresh: bool,
) -> tuple[pd.DataFrame, pd.DataFrame, int]:
    """Send each distinct parameter set once; return answers, failures and cache hits."""
    answers = {c: [] for c in [*_PARAMS, "app", "estimate_length_months"]}
    failures: list[dict[str, Any]] = []
    from_cache = 0
    if len(unique):
        if client is None:
            from dentalkit.client import Client

            client = Client()
        from tqdm.auto import tqdm

        queries = unique.to_dict("records")
        with (
            ThreadPoolExecutor(
                max_workers=min(max_workers, len(queries)), thread_name_prefix="dentalkit-tle"
            ) as pool,
            tqdm(total=len(queries), unit="req", desc="tle", disable=not progress) as bar,
        ):
            futures = {pool.submit(_one, client, q, refresh): q for q in queries}
            for future in as_completed(futures):
                query = futures[future]
                outcome = future.result()
                bar.update(1)
                if isinstance(outcome, Exception):
                    if errors == "raise":
                        for f in futures:
                            f.cancel()
                        raise outcome
                    failures.append({**query, "error": outcome})
                    continue
                app, months, cached = outcome
                from_cache += cached
                for param in _PARAMS:
                    answers[param].append(query[param])
                answers["app"].append(app)
                answers["estimate_length_months"].append(months)
    table = pd.DataFrame(answers).astype(
        {**dict.fromkeys(_PARAMS, "str"), "app": "str", "estimate_length_months": "float64"}
    )
    return table, pd.DataFrame(failures, columns=[*_PARAMS, "error"]), from_cache


def _one(client: Client, query: dict[str, str], refresh: bool) -> tuple | Exception:
    """Worker: one /tle call; a DentalkitError is returned, not raised."""
    try:
        result = client.call(_ENDPOINT, refresh=refresh, **query)
        app, months = _parse(result.data)
    except DentalkitError as exc:
        return exc
    return app, months, bool(result.from_cache)


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
    return pd.DataFrame(
        {
            "table": pd.Series(["tle"] * n, dtype="str"),
            "endpoint": pd.Series(["tle"] * n, dtype="str"),
            "patient_id": pd.Series(ids, dtype="str"),
            "timestamp": pd.Series([pd.NA] * n, dtype="str"),
            "row": patients.index[pos],
            "path": pd.Series([getattr(e, "path", "$") for e in errors_], dtype="str"),
            "field": pd.Series([pd.NA] * n, dtype="str"),
            "param": pd.Series([pd.NA] * n, dtype="str"),
            "value": query.astype("str").to_numpy(),
            "reason": pd.Series([str(e) for e in errors_], dtype="str"),
            "error_type": pd.Series([type(e).__name__ for e in errors_], dtype="str"),
            "status_code": pd.Series(
                [e.status if isinstance(e, ApiError) else pd.NA for e in errors_], dtype="Int16"
            ),
        }
    )


def sensitivity(
    patient_or_patients: pd.DataFrame | pd.Series | Mapping[str, Any],
    parameter: str,
    values: Sequence[Any],
    client: Client | None = None,
    *,
    codebook: Codebook | str | None = None,
    max_workers: int = 8,
    progress: bool = False,
    errors: Literal["collect", "raise"] = "raise",
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
    client : dentalkit.Client, optional
        As for :func:`estimate`; identical parameter sets are sent once.
    codebook, max_workers, progress
        As for :func:`estimate`.
    errors : {"raise", "collect"}
        ``"raise"`` (default): an invalid value (in ``values`` or in a patient's other
        columns) or a failed call raises. ``"collect"``: those points are NaN, and a mean
        over patients at a value with any NaN is NaN too (never a mean over a different
        subset of patients); ``attrs["problems"]`` lists them.

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
    ...     patient, "crowding", ["none", "mild", "severe"], client
    ... )  # doctest: +SKIP
    >>> curve.query("curve == 'mean'").plot(x="value", y="estimate_length_months")  # doctest: +SKIP
    """
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
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DentalkitWarning)  # reported once below
        result = estimate(grid, client, max_workers, progress, errors, codebook=book)
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
    if len(out.attrs["problems"]):
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
