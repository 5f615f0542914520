"""Manifest reading and up-front validation for :func:`dentalkit.fetch_cohort` (private).

A manifest is a CSV file, a Parquet file or a DataFrame with one row per image:

* ``patient_id``, ``timestamp`` (kept verbatim) and ``image_url`` (a full http(s) URL);
* either an ``endpoint`` column (registry name, path or slug) or one ``endpoints=`` argument
  (a name or a list: every row goes to each of them);
* optional per-row option columns named as the registry's optional fields, by Python or wire
  name (``draw_contours`` / ``DrawContours``, ``standard_name``, ``plot_labels``);
* for ``/tle`` rows, the eleven columns ``p01`` … ``p11`` (strings; ``image_url`` unused).

Every problem of every row is found before anything is sent.
"""

from __future__ import annotations

import os
import re
import reprlib
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dentalkit.endpoints import ENDPOINTS, TLE_PARAMETERS, Endpoint, get_endpoint
from dentalkit.errors import (
    PROBLEM_COLUMNS,
    DentalkitWarning,
    InputError,
    ManifestError,
    empty_problems,
    problems_frame,
)
from dentalkit.fetch._http import canonical_request, request_key, session_request_key

__all__ = ["PROBLEM_COLUMNS", "Plan", "plan_requests", "read_manifest"]

KEY_COLUMNS = ("patient_id", "timestamp", "image_url")
_TLE_COLUMNS = [q.name for q in TLE_PARAMETERS]
_URL = re.compile(r"(?i)^https?://[^/\s?#]+")
_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}
# optional field -> wire name, by Python and wire spelling, over all endpoints
_OPTION_NAMES: dict[str, str] = {}
for _e in ENDPOINTS.values():
    for _f in _e.optional_fields:
        _OPTION_NAMES[_f.param] = _f.name
        _OPTION_NAMES[_f.name] = _f.name


def read_manifest(manifest: Any) -> pd.DataFrame:
    """Load a manifest from a DataFrame, a list of row dicts, or a ``.csv``/``.parquet`` path.

    CSV files are read as text (no type guessing on patient ids or timestamps).
    """
    if isinstance(manifest, pd.DataFrame):
        return manifest.reset_index(drop=True)
    if isinstance(manifest, list | tuple) and all(isinstance(r, Mapping) for r in manifest):
        rows = list(manifest)
        names = list(dict.fromkeys(k for r in rows for k in r))
        _check_names(names)
        # object columns: text that UTF-8 cannot encode (a lone surrogate) reaches validation,
        # which reports it as a problem row, instead of failing in pandas' string inference
        return pd.DataFrame(rows, columns=pd.Index(names, dtype=object), dtype=object)
    if isinstance(manifest, str | os.PathLike):
        path = Path(manifest)
        if not path.exists():
            raise InputError(f"manifest {path} does not exist")
        suffix = path.suffix.lower()
        if suffix in (".parquet", ".pq"):
            return pd.read_parquet(path).reset_index(drop=True)
        if suffix in (".csv", ".txt", ".tsv"):
            sep = "\t" if suffix == ".tsv" else ","
            return pd.read_csv(path, dtype=str, keep_default_na=False, sep=sep)
        raise InputError(f"manifest {path}: give a .csv or .parquet file (or a DataFrame)")
    raise InputError(
        "manifest must be a DataFrame, a list of row dicts or a .csv/.parquet path, "
        f"got {type(manifest).__name__}"
    )


def _check_names(names: list[Any]) -> None:
    """Raise :class:`ManifestError` (a problems row per name) for column names that UTF-8
    cannot encode (lone surrogates): they could be neither matched nor reported as text."""
    bad = [k for k in names if isinstance(k, str) and not _clean_text(k)]
    if bad:
        raise ManifestError(
            problems_frame(
                pd.DataFrame(
                    {
                        "table": "manifest",
                        "row": None,
                        "field": [_show(k) for k in bad],
                        "value": [_show(k) for k in bad],
                        "reason": "column name is not valid Unicode text (lone surrogate)",
                        "severity": "error",
                    }
                )
            )
        )


def _text(col: pd.Series) -> pd.Series:
    """Column as object strings with None for missing/blank (no float NaN leaking through)."""
    values = col.astype("object")
    blank = values.map(lambda v: isinstance(v, str) and not v.strip(), na_action="ignore")
    return values.where(col.notna() & ~blank.eq(True), None)


class _Problems:
    """The problems of a manifest's rows, collected phase by phase (one frame per check)."""

    def __init__(self) -> None:
        self.frames: list[pd.DataFrame] = []

    def add(self, df: pd.DataFrame, mask: Any, field: str, values: Any, reason: Any) -> None:
        """Record ``reason`` for ``field`` on the rows where ``mask`` holds."""
        mask = np.asarray(mask, dtype=bool)
        if not mask.any():
            return
        sub = df.loc[mask]
        shown = (
            values[mask].map(_show).to_numpy() if isinstance(values, pd.Series) else _show(values)
        )
        why = reason[mask].to_numpy() if isinstance(reason, pd.Series) else reason
        self.frames.append(
            pd.DataFrame(
                {
                    "table": "manifest",
                    "row": sub["_row"].to_numpy(),
                    "patient_id": sub["_pid"].map(_key_cell).to_numpy(),
                    "timestamp": sub["_ts"].map(_key_cell).to_numpy(),
                    "endpoint": sub["_ep_name"].to_numpy(),
                    "field": field,
                    "path": field,
                    "value": shown,
                    "reason": why,
                }
            )
        )

    def table(self) -> pd.DataFrame:
        """All problems so far as one problems table, by row then field."""
        if not self.frames:
            return empty_problems()
        out = pd.concat(self.frames, ignore_index=True)
        out = out.sort_values(["row", "field"], kind="stable").reset_index(drop=True)
        return problems_frame(out, severity="error")


_REPR = reprlib.Repr()  # keyword arguments need Python 3.12
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxdict = 3, 120, 120, 4, 4


def _show(v: Any) -> str | None:
    """A short, printable, UTF-8-safe rendering of a cell for the problems table."""
    if v is None:
        return None
    text = v[:200] if isinstance(v, str) else _REPR.repr(v)  # repr is safe for deep nesting
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates
    return text if len(text) <= 120 else text[:119] + "…"


def _clean_text(v: Any) -> bool:
    """True for a string that UTF-8 can encode (JSON bodies cannot carry lone surrogates)."""
    if not isinstance(v, str):
        return False
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _key_cell(v: Any) -> str | None:
    """A patient or timestamp for the problems table: as given when it is clean text."""
    return v if v is None or _clean_text(v) else _show(v)


def _not_text(values: pd.Series) -> pd.Series:
    """True where a (non-missing) value is not a string that UTF-8 can encode."""
    bad = values.map(lambda v: not _clean_text(v), na_action="ignore")
    return bad.eq(True)


def _type_reason(values: pd.Series) -> pd.Series:
    return values.map(
        lambda v: (
            "not valid Unicode text (lone surrogate)"
            if isinstance(v, str)
            else f"wrong type: expected a string, got {type(v).__name__}"
        )
    )


def _bool_values(col: pd.Series) -> tuple[pd.Series, pd.Series]:
    """(parsed booleans or None, bad mask) for a boolean option column."""
    raw = col.astype("object").where(col.notna(), None)

    def parse(v: Any) -> Any:
        if v is None or (isinstance(v, str) and not v.strip()):
            return None
        if isinstance(v, bool | np.bool_):
            return bool(v)
        if isinstance(v, str) and v.strip().lower() in _TRUE:
            return True
        if isinstance(v, str) and v.strip().lower() in _FALSE:
            return False
        return _BAD

    parsed = raw.map(parse)
    bad = parsed.map(lambda v: v is _BAD)
    return parsed.where(~bad, None), bad


_BAD = object()


class Plan:
    """The validated requests of a manifest: one row per request, plus the problems found."""

    def __init__(self, requests: pd.DataFrame, payloads: list[Any], problems: pd.DataFrame):
        self.requests = requests
        self.payloads = payloads
        self.problems = problems


def plan_requests(manifest: pd.DataFrame, endpoints: str | Sequence[str] | None = None) -> Plan:
    """Validate ``manifest`` and build one request per (row, endpoint).

    Returns a :class:`Plan` whose ``requests`` table has ``row`` (1-based manifest row; CSV
    line = row + 1), ``patient_id``, ``timestamp``, ``endpoint``, ``image_url``, ``options``
    (JSON text), ``request_key`` (the store's key) and ``http_key`` (the key of the HTTP
    request; equal to ``request_key`` except for ``/tle``, whose query carries no patient, see
    :func:`dentalkit.fetch._http.session_request_key`), and whose ``problems`` table lists every bad row with
    ``row``, ``field``, ``value`` and ``reason`` (valid rows are still planned).

    The phases, in the order the data flows through them (each a function of this module):

    1. :func:`_check_structure` — the manifest as a whole (required columns, one source of
       endpoints); raises, as no row can be planned without them;
    2. :func:`_read_keys` — the key cells as text (``_row``, ``_pid``, ``_ts``, ``_url``);
    3. :func:`_warn_ignored_columns` — columns that are neither key, endpoint nor option;
    4. :func:`_expand_endpoints` — one row per (manifest row, endpoint), ``_ep_name``;
    5. :func:`_check_keys`, :func:`_read_options`, :func:`_check_tle_queries` — every
       problem of every row, collected (never raised) in one :class:`_Problems`;
    6. :func:`_build_requests` — the request (store key, HTTP key, payload) of every valid row;
    7. :func:`_drop_duplicates` — a request planned twice is sent once and reported.

    Raises
    ------
    ManifestError
        For problems with the manifest as a whole (a missing column, no endpoint given).
    """
    columns = set(manifest.columns)
    _check_structure(columns, endpoints)
    rows = _read_keys(manifest)
    _warn_ignored_columns(columns)
    rows = _expand_endpoints(rows, endpoints)
    problems = _Problems()
    _check_keys(rows, problems)
    options = _read_options(rows, columns, problems)
    _check_tle_queries(rows, columns, problems)
    table = problems.table()
    reqs, payloads = _build_requests(rows, _valid(rows, table), options)
    reqs, payloads, duplicates = _drop_duplicates(reqs, payloads)
    if duplicates is not None:
        table = pd.concat([table, duplicates], ignore_index=True) if len(table) else duplicates
        table = problems_frame(table, severity="error")
    table = table.sort_values(["row", "field"], kind="stable").reset_index(drop=True)
    return Plan(reqs, payloads, table)


def _check_structure(columns: set[Any], endpoints: Any) -> None:
    """Raise :class:`ManifestError` when no row can be planned.

    That is when ``patient_id`` or ``timestamp`` is not a column, or when the endpoints
    come from both an ``endpoint`` column and ``endpoints=`` (or from neither).
    """
    structural = []
    has_ep_col = "endpoint" in columns
    if has_ep_col and endpoints is not None:
        structural.append(
            (
                "endpoint",
                "both an endpoint column and an endpoint for every row (--endpoint, or "
                "endpoints in Python) were given; use one",
            )
        )
    if not has_ep_col and endpoints is None:
        structural.append(
            (
                "endpoint",
                "no endpoint column and no endpoint for every row: add an endpoint column or "
                "give one (--endpoint, or endpoints in Python)",
            )
        )
    for c in ("patient_id", "timestamp"):
        if c not in columns:
            structural.append((c, "missing column"))
    if structural:
        raise ManifestError(
            pd.DataFrame(
                [
                    {"table": "manifest", "row": None, "field": f, "value": None, "reason": r}
                    for f, r in structural
                ]
            )
        )


def _warn_ignored_columns(columns: set[Any]) -> None:
    """Warn (:class:`DentalkitWarning`) about columns no phase reads, naming the option columns.

    The warning points at the caller of :func:`dentalkit.fetch_cohort` (or of whatever
    called :func:`plan_requests`).
    """
    known = {"endpoint", *KEY_COLUMNS, *_TLE_COLUMNS, *_OPTION_NAMES}
    ignored = sorted(str(c) for c in columns - known if not str(c).startswith("_"))
    if ignored:
        warnings.warn(
            "manifest columns ignored (not a key, endpoint or option column): "
            f"{', '.join(ignored)}; the option columns are "
            f"{', '.join(sorted(set(_OPTION_NAMES)))}",
            DentalkitWarning,
            stacklevel=4,
        )


def _read_keys(manifest: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``manifest`` with its key cells as text, in private columns.

    ``_row`` (1-based manifest row), ``_pid``, ``_ts`` and ``_url`` (``image_url``, all None
    without that column): object strings, None where missing or blank (see :func:`_text`).
    """
    rows = manifest.copy()
    rows["_row"] = np.arange(1, len(rows) + 1)
    rows["_pid"] = _text(rows["patient_id"])
    rows["_ts"] = _text(rows["timestamp"])
    rows["_url"] = _text(rows["image_url"]) if "image_url" in rows.columns else None
    return rows


def _expand_endpoints(rows: pd.DataFrame, endpoints: Any) -> pd.DataFrame:
    """One row per (manifest row, endpoint), with ``_ep_name`` and ``_ep_raw``.

    With an ``endpoint`` column each row keeps its place; ``_ep_raw`` is the cell as text
    and ``_ep_name`` the registry name it resolves to (None when it does not: reported by
    :func:`_check_keys`). With ``endpoints=`` every row is repeated once per endpoint, in
    the given order (a bad ``endpoints=`` raises :class:`InputError`, as it concerns no row).
    """
    if "endpoint" in rows.columns:
        raw_ep = _text(rows["endpoint"])
        names: dict[str, str | None] = {}

        def resolve(v: Any) -> str | None:
            if not isinstance(v, str):  # lists, numbers …: reported by _check_keys
                return None
            if v not in names:
                try:
                    names[v] = get_endpoint(v.strip()).name
                except KeyError:
                    names[v] = None
            return names[v]

        rows["_ep_name"] = raw_ep.map(resolve)
        rows["_ep_raw"] = raw_ep
        return rows
    if isinstance(endpoints, str | Endpoint):
        eps = [endpoints]
    elif isinstance(endpoints, list | tuple) and all(
        isinstance(e, str | Endpoint) for e in endpoints
    ):
        eps = list(endpoints)
    else:
        raise InputError(
            f"endpoints= must be an endpoint name or a list of names, got {_show(endpoints)}"
        )
    try:
        resolved = [get_endpoint(e).name for e in eps]
    except KeyError as exc:
        raise InputError(f"endpoints=: {exc.args[0]}") from None
    if not resolved:
        raise InputError("endpoints= is empty; name at least one endpoint")
    rows = rows.loc[rows.index.repeat(len(resolved))].reset_index(drop=True)
    rows["_ep_name"] = np.tile(resolved, len(rows) // len(resolved))
    rows["_ep_raw"] = rows["_ep_name"]
    return rows


def _check_keys(rows: pd.DataFrame, problems: _Problems) -> None:
    """Collect the problems of the key cells: patient, timestamp, endpoint, image URL.

    Patient and timestamp must be clean text (UTF-8 encodable) and present; the endpoint
    must resolve; image endpoints need a full http(s) ``image_url`` (``/tle`` rows do not).
    """
    problems.add(rows, rows["_pid"].isna(), "patient_id", rows["_pid"], "missing field")
    problems.add(rows, rows["_ts"].isna(), "timestamp", rows["_ts"], "missing field")
    for col, values in (("patient_id", rows["_pid"]), ("timestamp", rows["_ts"])):
        problems.add(rows, _not_text(values), col, values, _type_reason(values))
    bad_ep = rows["_ep_name"].isna()
    problems.add(
        rows,
        bad_ep,
        "endpoint",
        rows["_ep_raw"],
        rows["_ep_raw"].map(
            lambda v: (
                "missing field"
                if v is None
                else f"unknown endpoint; valid: {', '.join(ENDPOINTS)}"
                if isinstance(v, str)
                else f"wrong type: expected an endpoint name, got {type(v).__name__}"
            )
        ),
    )
    is_img = (~bad_ep).to_numpy() & ~_is_tle(rows)
    url = rows["_url"]
    url_wrong = _not_text(url).to_numpy()
    url_ok = url.map(
        lambda v: isinstance(v, str) and v.strip() == v and bool(_URL.match(v)),
        na_action="ignore",
    )
    url_ok = url_ok.eq(True)
    problems.add(rows, is_img & url.isna().to_numpy(), "image_url", url, "missing field")
    problems.add(rows, is_img & url_wrong, "image_url", url, _type_reason(url))
    problems.add(
        rows,
        is_img & url.notna().to_numpy() & ~url_wrong & ~url_ok.to_numpy(),
        "image_url",
        url,
        "not a full http(s) URL (the service needs the image's URL, not a file path)",
    )


def _is_tle(rows: pd.DataFrame) -> np.ndarray:
    """Boolean mask of the ``/tle`` rows (a query, no image)."""
    return (rows["_ep_name"] == "tle").to_numpy()


def _read_options(
    rows: pd.DataFrame, columns: set[Any], problems: _Problems
) -> dict[str, pd.Series]:
    """The option values of every row, by wire name, and the problems of the option cells.

    Each option column (Python or wire spelling) is parsed by its registry type (booleans
    from ``true``/``false``/``1``/``0`` …, text otherwise) and kept only on rows whose
    endpoint has that option. With an ``endpoint`` column a value on a row whose endpoint
    lacks the option is a problem of that row; with ``endpoints=`` only an option that
    applies to none of them is.
    """
    per_row = "endpoint" in columns
    bad_ep = rows["_ep_name"].isna()
    options: dict[str, pd.Series] = {}
    for col in sorted(columns & set(_OPTION_NAMES)):
        wire = _OPTION_NAMES[col]
        ftype = next(
            f.type for e in ENDPOINTS.values() for f in e.optional_fields if f.name == wire
        )
        if ftype is bool:
            values, bad = _bool_values(rows[col])
            problems.add(rows, bad, col, rows[col], "wrong option type: expected true/false")
        else:
            values = _text(rows[col])
            bad = _not_text(values)
            problems.add(rows, bad, col, rows[col], "wrong option type: expected a string")
            values = values.where(~bad, None)
        having = [
            e.name for e in ENDPOINTS.values() if any(f.name == wire for f in e.optional_fields)
        ]
        applies = pd.Series(
            [n in having for n in rows["_ep_name"].tolist()], index=rows.index, dtype=bool
        )
        if per_row:
            problems.add(
                rows,
                values.notna() & ~applies & ~bad_ep,
                col,
                values,
                rows["_ep_name"].map(lambda n: f"option does not apply to endpoint {n}"),
            )
        elif not applies.any() and values.notna().any():
            problems.add(rows, values.notna(), col, values, "option applies to none of endpoints=")
        options[wire] = values.where(applies, None)
    return options


def _check_tle_queries(rows: pd.DataFrame, columns: set[Any], problems: _Problems) -> None:
    """Collect the problems of the ``p01`` … ``p11`` cells of ``/tle`` rows (all required text)."""
    is_tle = _is_tle(rows)
    if not is_tle.any():
        return
    for q in _TLE_COLUMNS:
        if q not in columns:
            problems.add(rows, is_tle, q, None, "missing column (required for tle rows)")
            continue
        v = _text(rows[q])
        problems.add(rows, is_tle & v.isna().to_numpy(), q, v, "missing field")
        nonstr = _not_text(v)
        problems.add(rows, is_tle & nonstr.to_numpy(), q, v, _type_reason(v))


def _valid(rows: pd.DataFrame, problems: pd.DataFrame) -> np.ndarray:
    """Boolean mask of the rows that no problem names (a row's every endpoint is dropped)."""
    bad_rows = set(problems["row"].dropna().astype(int)) if len(problems) else set()
    return ~np.isin(rows["_row"].to_numpy(), np.fromiter(bad_rows, dtype=np.int64))


def _build_requests(
    rows: pd.DataFrame, valid: np.ndarray, options: dict[str, pd.Series]
) -> tuple[pd.DataFrame, list[Any]]:
    """The requests table and the payloads (``(endpoint, body, query)``) of the valid rows.

    An image request's body carries the key cells and the options that are set, and its
    store key is its HTTP key. A ``/tle`` request's query carries ``p01`` … ``p11`` only, so
    its store key adds the session to its HTTP key (:func:`session_request_key`).
    """
    sub = rows.loc[valid]
    opt_frame = pd.DataFrame({k: v.loc[valid] for k, v in options.items()}, index=sub.index)
    tle_cols = [c for c in _TLE_COLUMNS if c in rows.columns]
    records = []
    payloads: list[Any] = []
    opt_records = opt_frame.to_dict("records") if len(opt_frame.columns) else [{}] * len(sub)
    tle_records = sub[tle_cols].to_dict("records") if tle_cols else [{}] * len(sub)
    for (row, pid, ts, url, name), opts, tle in zip(
        sub[["_row", "_pid", "_ts", "_url", "_ep_name"]].itertuples(index=False, name=None),
        opt_records,
        tle_records,
        strict=True,
    ):
        ep = ENDPOINTS[name]
        if ep.is_image:
            set_opts = {k: v for k, v in opts.items() if v is not None}
            body = {"PatientID": pid, "TimeStamp": ts, "ImageName": url, **set_opts}
            key = http = request_key(ep.method, ep.path, body)
            payloads.append((name, body, None))
            opts_text = canonical_request(set_opts)
        else:
            query = {q: tle[q] for q in _TLE_COLUMNS}
            http = request_key(ep.method, ep.path, query=query)
            key = session_request_key(http, pid, ts)
            payloads.append((name, None, query))
            url = None
            opts_text = canonical_request(query)
        records.append((int(row), pid, ts, name, url, opts_text, key, http))
    reqs = pd.DataFrame.from_records(
        records,
        columns=[
            "row",
            "patient_id",
            "timestamp",
            "endpoint",
            "image_url",
            "options",
            "request_key",
            "http_key",
        ],
    )
    return reqs, payloads


def _drop_duplicates(
    reqs: pd.DataFrame, payloads: list[Any]
) -> tuple[pd.DataFrame, list[Any], pd.DataFrame | None]:
    """Keep the first of requests with the same store key; report the others.

    Returns the kept requests and payloads, and a problems frame (None without
    duplicates) naming, for each dropped request, the row it repeats.
    """
    dup = reqs["request_key"].duplicated(keep="first")
    if not dup.any():
        return reqs, payloads, None
    first = reqs.drop_duplicates("request_key").set_index("request_key")["row"]
    d = reqs.loc[dup]
    duplicates = pd.DataFrame(
        {
            "table": "manifest",
            "row": d["row"].to_numpy(),
            "patient_id": d["patient_id"].to_numpy(),
            "timestamp": d["timestamp"].to_numpy(),
            "endpoint": d["endpoint"].to_numpy(),
            "field": "request",
            "path": "request",
            "value": d["endpoint"].to_numpy(),
            "reason": [
                f"duplicate request (same endpoint, patient, timestamp, image and options as manifest row {first[k]})"
                for k in d["request_key"]
            ],
        }
    )
    keep = ~dup.to_numpy()
    kept = reqs.loc[keep].reset_index(drop=True)
    return kept, [p for p, k in zip(payloads, keep, strict=True) if k], duplicates
