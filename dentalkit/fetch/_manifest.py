"""Manifest validation and request planning for :func:`dentalkit.fetch_cohort` (private).

A manifest is a CSV file, a Parquet file or a DataFrame with one row per image
(``docs/manifest.md`` lists every column):

* ``patient_id``, ``timestamp`` (kept and sent verbatim; ISO 8601 unless a
  ``timestamp_format`` is given) and ``image_url`` (a full http(s) URL);
* either an ``endpoint`` column (registry name, path or slug) or one ``endpoints=`` argument
  (a name or a list: every row goes to each of them);
* optional per-row option columns named as the registry's optional fields, by Python or wire
  name (``draw_contours`` / ``DrawContours``, ``standard_name``, ``plot_labels``);
* optional calibration columns ``mm_per_px`` (millimetres per pixel, a finite number > 0) and
  ``calibration_source`` (short text; ``manifest`` when left empty): never sent, kept in the
  store's ``calibration.parquet``;
* for ``/tle`` rows, the eleven columns ``p01`` … ``p11`` (strings; ``image_url`` unused).

Text that is sent (patient ids, timestamps, image URLs, option values, ``p01`` … ``p11``)
holds no control character and is at most :data:`MAX_LENGTH` characters long. Every problem
of every row is found before anything is sent. Files are read by
:mod:`~dentalkit.fetch._manifest_file`; the manifest as a whole (its columns, its rows) is
checked by :mod:`~dentalkit.fetch._manifest_columns`, each cell by
:mod:`~dentalkit.fetch._manifest_cells`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from datetime import UTC, datetime
from numbers import Real
from typing import Any

import numpy as np
import pandas as pd

from dentalkit.convert import schemas
from dentalkit.convert._calibration import DEFAULT_SOURCE as DEFAULT_CALIBRATION_SOURCE
from dentalkit.convert._requests import check_timestamp_format, parse_session_times
from dentalkit.endpoints import ENDPOINTS, Endpoint, get_endpoint
from dentalkit.errors import PROBLEM_COLUMNS, InputError, problems_frame
from dentalkit.fetch._http import (
    canonical_request,
    link_expiry,
    request_key,
    session_request_key,
)
from dentalkit.fetch._manifest_cells import (
    BAD,
    MAX_LENGTH,
    RowProblems,
    bool_values,
    check_text,
    not_text,
    text_cells,
    type_reason,
)
from dentalkit.fetch._manifest_columns import (
    CALIBRATION_COLUMNS,
    KEY_COLUMNS,
    OPTION_NAMES,
    TLE_COLUMNS,
    check_columns,
    check_image_column,
    warn_ignored_columns,
)
from dentalkit.fetch._manifest_file import read_manifest, show_cell

__all__ = [
    "CALIBRATION_COLUMNS",
    "KEY_COLUMNS",
    "MAX_LENGTH",
    "PROBLEM_COLUMNS",
    "Plan",
    "plan_requests",
    "read_manifest",
]

#: Columns of the calibration kept from a manifest (``STORE/calibration.parquet``): the
#: declared ``calibration`` table's.
CALIBRATION_TABLE_COLUMNS = tuple(schemas.SCHEMAS["calibration"].names)
_URL = re.compile(r"(?i)^https?://[^/\s?#]+")


class Plan:
    """The validated requests of a manifest: one row per request, plus the problems found.

    ``calibration`` holds the per-image scales of the planned image requests
    (:data:`CALIBRATION_TABLE_COLUMNS`); ``timestamp_format`` the format the timestamps
    were checked with (None: ISO 8601).
    """

    def __init__(
        self,
        requests: pd.DataFrame,
        payloads: list[Any],
        problems: pd.DataFrame,
        calibration: pd.DataFrame | None = None,
        timestamp_format: str | None = None,
    ):
        self.requests = requests
        self.payloads = payloads
        self.problems = problems
        self.calibration = (
            calibration
            if calibration is not None
            else pd.DataFrame(columns=list(CALIBRATION_TABLE_COLUMNS))
        )
        self.timestamp_format = timestamp_format


def plan_requests(
    manifest: pd.DataFrame,
    endpoints: str | Sequence[str] | None = None,
    *,
    timestamp_format: str | None = None,
) -> Plan:
    """Validate ``manifest`` and build one request per (row, endpoint).

    Returns a :class:`Plan` whose ``requests`` table has ``row`` (1-based manifest row; CSV
    line = row + 1), ``patient_id``, ``timestamp``, ``endpoint``, ``image_url``, ``options``
    (JSON text), ``request_key`` (the store's key) and ``http_key`` (the key of the HTTP
    request; equal to ``request_key`` except for ``/tle``, whose query carries no patient, see
    :func:`dentalkit.fetch._http.session_request_key`), whose ``problems`` table lists every
    bad row with ``row``, ``field``, ``value`` and ``reason`` (valid rows are still planned),
    and whose ``calibration`` table holds the ``mm_per_px`` of the planned image requests.

    ``timestamp_format``: the strptime format of the image rows' timestamps (``"%d/%m/%Y"``);
    None: ISO 8601. A timestamp that does not parse is a problem of its row (a ``/tle``
    row's timestamp is the store's label of the query, not a date, and is not parsed).

    The phases, in the order the data flows through them (each a function of this module
    or of :mod:`~dentalkit.fetch._manifest_columns`):

    1. :func:`check_columns` — the manifest as a whole (rows, required columns, misspelled
       columns, one source of endpoints); raises, as no row can be planned as meant;
    2. :func:`_read_keys` — the key cells as text (``_row``, ``_pid``, ``_ts``, ``_url``);
    3. :func:`_expand_endpoints` — one row per (manifest row, endpoint), ``_ep_name``;
       :func:`check_image_column` raises when image rows have no ``image_url`` column;
    4. :func:`warn_ignored_columns` — columns that are neither key, endpoint, option nor
       calibration;
    5. :func:`_check_keys`, :func:`_read_options`, :func:`_check_tle_queries`,
       :func:`_read_calibration` — every problem of every row, collected (never raised) in
       one :class:`RowProblems`;
    6. :func:`_build_requests` — the request (store key, HTTP key, payload) of every valid row;
    7. :func:`_drop_duplicates` — a request planned twice is sent once and reported;
    8. :func:`_calibration_rows` — the scales of the requests planned.

    Raises
    ------
    ManifestError
        For problems with the manifest as a whole (no rows, a missing or misspelled
        column, no endpoint given), listing the columns found and the closest expected.
    InputError
        For a ``timestamp_format`` that is not a strptime format with a year.
    """
    timestamp_format = check_timestamp_format(timestamp_format)
    columns = set(manifest.columns)
    check_columns(manifest, endpoints)
    rows = _expand_endpoints(_read_keys(manifest), endpoints)
    check_image_column(rows, columns)
    warn_ignored_columns(columns)
    problems = RowProblems()
    _check_keys(rows, problems, timestamp_format)
    options = _read_options(rows, columns, problems)
    _check_tle_queries(rows, columns, problems)
    scales = _read_calibration(rows, columns, problems)
    table = problems.table()
    reqs, payloads = _build_requests(rows, _valid(rows, table), options)
    reqs, payloads, duplicates = _drop_duplicates(reqs, payloads)
    if duplicates is not None:
        table = pd.concat([table, duplicates], ignore_index=True) if len(table) else duplicates
        table = problems_frame(table, severity="error")
    table = table.sort_values(["row", "field"], kind="stable").reset_index(drop=True)
    return Plan(reqs, payloads, table, _calibration_rows(rows, scales, reqs), timestamp_format)


def _read_keys(manifest: pd.DataFrame) -> pd.DataFrame:
    """A copy of ``manifest`` with its key cells as text, in private columns.

    ``_row`` (1-based manifest row), ``_pid``, ``_ts`` and ``_url`` (``image_url``, all None
    without that column): object strings, None where missing or blank (see :func:`_text`).
    """
    rows = manifest.copy()
    rows["_row"] = np.arange(1, len(rows) + 1)
    rows["_pid"] = text_cells(rows["patient_id"])
    rows["_ts"] = text_cells(rows["timestamp"])
    rows["_url"] = text_cells(rows["image_url"]) if "image_url" in rows.columns else None
    return rows


def _expand_endpoints(rows: pd.DataFrame, endpoints: Any) -> pd.DataFrame:
    """One row per (manifest row, endpoint), with ``_ep_name`` and ``_ep_raw``.

    With an ``endpoint`` column each row keeps its place; ``_ep_raw`` is the cell as text
    and ``_ep_name`` the registry name it resolves to (None when it does not: reported by
    :func:`_check_keys`). With ``endpoints=`` every row is repeated once per endpoint, in
    the given order (a bad ``endpoints=`` raises :class:`InputError`, as it concerns no row).
    """
    if "endpoint" in rows.columns:
        raw_ep = text_cells(rows["endpoint"])
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
            f"endpoints= must be an endpoint name or a list of names, got {show_cell(endpoints)}"
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


def _check_keys(rows: pd.DataFrame, problems: RowProblems, timestamp_format: str | None) -> None:
    """Collect the problems of the key cells: patient, timestamp, endpoint, image URL.

    Patient and timestamp must be present, clean text (UTF-8 encodable, no control
    character, not longer than :data:`MAX_LENGTH`); an image row's timestamp must parse
    (ISO 8601 or ``timestamp_format``); the endpoint must resolve; image endpoints need a
    full http(s) ``image_url`` (``/tle`` rows do not).
    """
    everywhere = np.ones(len(rows), dtype=bool)
    problems.add(rows, rows["_pid"].isna(), "patient_id", rows["_pid"], "missing field")
    problems.add(rows, rows["_ts"].isna(), "timestamp", rows["_ts"], "missing field")
    sendable = {}
    for col, values in (("patient_id", rows["_pid"]), ("timestamp", rows["_ts"])):
        problems.add(rows, not_text(values), col, values, type_reason(values))
        sendable[col] = check_text(rows, problems, col, values, MAX_LENGTH[col], everywhere)
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
    _check_session_times(
        rows, problems, is_img & sendable["timestamp"].to_numpy(), timestamp_format
    )
    url = rows["_url"]
    url_wrong = not_text(url).to_numpy()
    url_sendable = check_text(rows, problems, "image_url", url, MAX_LENGTH["image_url"], is_img)
    url_ok = url.map(
        lambda v: isinstance(v, str) and v.strip() == v and bool(_URL.match(v)),
        na_action="ignore",
    )
    url_ok = url_ok.eq(True)
    problems.add(rows, is_img & url.isna().to_numpy(), "image_url", url, "missing field")
    problems.add(rows, is_img & url_wrong, "image_url", url, type_reason(url))
    problems.add(
        rows,
        url_sendable.to_numpy() & ~url_ok.to_numpy(),
        "image_url",
        url,
        "not a full http(s) URL (the service needs the image's URL, not a file path)",
    )
    _check_link_expiry(rows, problems, url_sendable.to_numpy() & url_ok.to_numpy(), url)


def _check_link_expiry(
    rows: pd.DataFrame, problems: RowProblems, mask: np.ndarray, url: pd.Series
) -> None:
    """Record the presigned links of ``mask`` that have expired (:func:`link_expiry`, signed).

    The service would answer such a request with an error about the image (after the
    request was paid for); the manifest is refused before, naming each row, so the links
    can be signed again. Links that state no expiry, or state it outside their signature, are not checked.
    """
    cells = url.to_numpy(dtype=object)
    signed = mask & np.fromiter(
        (isinstance(v, str) and "?" in v for v in cells), dtype=bool, count=len(cells)
    )
    if not signed.any():
        return
    now = datetime.now(UTC)
    reasons = np.full(len(rows), None, dtype=object)
    for i, link in zip(np.flatnonzero(signed), cells[signed], strict=True):
        end = link_expiry(link, signed_only=True)
        if end is not None and end <= now:
            reasons[i] = (
                f"the presigned link expired at {end:%Y-%m-%d %H:%M} UTC, so the service "
                "cannot read the image; sign the links again (dentalkit manifest, or "
                "images.build_manifest) with a lifetime that covers the fetch"
            )
    problems.add(rows, reasons != None, "image_url", url, reasons)  # noqa: E711


def _check_session_times(
    rows: pd.DataFrame, problems: RowProblems, mask: np.ndarray, timestamp_format: str | None
) -> None:
    """Record the timestamps of ``mask`` that do not parse (ISO 8601, or the format given)."""
    if not mask.any():
        return
    parsed = parse_session_times(rows["_ts"].to_numpy(dtype=object)[mask], timestamp_format)
    unread = np.zeros(len(rows), dtype=bool)
    unread[np.flatnonzero(mask)] = parsed.isna()
    if timestamp_format is None:
        reason = (
            "not an ISO 8601 date or date-time (e.g. 2024-03-05 or 2024-03-05T10:30:00Z) "
            "between 1677 and 2262; if your timestamps have another format, give it: "
            "--timestamp-format '%d/%m/%Y' (timestamp_format= in Python). The timestamp is "
            "sent as written either way"
        )
    else:
        reason = (
            f"does not match the timestamp format {timestamp_format!r} (or is outside 1677–2262)"
        )
    problems.add(rows, unread, "timestamp", rows["_ts"], reason)


def _is_tle(rows: pd.DataFrame) -> np.ndarray:
    """Boolean mask of the ``/tle`` rows (a query, no image)."""
    return (rows["_ep_name"] == "tle").to_numpy()


def _having(rows: pd.DataFrame, wire: str) -> pd.Series:
    """Mask of the rows whose endpoint has the optional field ``wire``."""
    having = {e.name for e in ENDPOINTS.values() if any(f.name == wire for f in e.optional_fields)}
    return pd.Series([n in having for n in rows["_ep_name"].tolist()], index=rows.index, dtype=bool)


def _read_options(
    rows: pd.DataFrame, columns: set[Any], problems: RowProblems
) -> dict[str, pd.Series]:
    """The option values of every row, by wire name, and the problems of the option cells.

    Each option column (Python or wire spelling) is parsed by its registry type (booleans
    from ``true``/``false``/``1``/``0`` …, text otherwise: no control character, at most
    ``MAX_LENGTH["option"]`` characters) and kept only on rows whose endpoint has that
    option. With an ``endpoint`` column a value on a row whose endpoint lacks the option is
    a problem of that row; with ``endpoints=`` only an option that applies to none of them is.
    """
    per_row = "endpoint" in columns
    bad_ep = rows["_ep_name"].isna()
    options: dict[str, pd.Series] = {}
    for col in sorted(columns & set(OPTION_NAMES)):
        wire = OPTION_NAMES[col]
        ftype = next(
            f.type for e in ENDPOINTS.values() for f in e.optional_fields if f.name == wire
        )
        if ftype is bool:
            values, bad = bool_values(rows[col])
            problems.add(rows, bad, col, rows[col], "wrong option type: expected true/false")
        else:
            values = text_cells(rows[col])
            bad = not_text(values)
            problems.add(rows, bad, col, rows[col], "wrong option type: expected a string")
            sendable = check_text(rows, problems, col, values, MAX_LENGTH["option"], ~bad)
            bad = bad | (values.notna() & ~bad & ~sendable)
            values = values.where(~bad, None)
        applies = _having(rows, wire)
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


def _check_tle_queries(rows: pd.DataFrame, columns: set[Any], problems: RowProblems) -> None:
    """Collect the problems of the ``p01`` … ``p11`` cells of ``/tle`` rows (all required text,
    no control character, at most ``MAX_LENGTH["option"]`` characters)."""
    is_tle = _is_tle(rows)
    if not is_tle.any():
        return
    for q in TLE_COLUMNS:
        if q not in columns:
            problems.add(rows, is_tle, q, None, "missing column (required for tle rows)")
            continue
        v = text_cells(rows[q])
        problems.add(rows, is_tle & v.isna().to_numpy(), q, v, "missing field")
        nonstr = not_text(v)
        problems.add(rows, is_tle & nonstr.to_numpy(), q, v, type_reason(v))
        check_text(rows, problems, q, v, MAX_LENGTH["option"], is_tle)


def _scale(v: Any) -> Any:
    """A ``mm_per_px`` cell as a float, None when empty, or ``BAD`` when not a number."""
    if v is None or (isinstance(v, str) and not v.strip()):
        return None
    if isinstance(v, bool | np.bool_):
        return BAD
    if isinstance(v, Real):
        return None if math.isnan(float(v)) else float(v)
    if isinstance(v, str):
        try:
            return float(v.strip())
        except ValueError:
            return BAD
    return BAD


def _read_calibration(
    rows: pd.DataFrame, columns: set[Any], problems: RowProblems
) -> pd.DataFrame | None:
    """The ``mm_per_px`` and ``calibration_source`` of every image row; the problems of both.

    ``mm_per_px`` must be a finite number > 0 (millimetres per pixel); ``calibration_source``
    is text (no control character, at most ``MAX_LENGTH["option"]`` characters), read only
    where ``mm_per_px`` is given, ``manifest`` when empty. A ``/tle`` row has no image: a
    scale on it is a problem with an ``endpoint`` column, and left out with ``endpoints=``.
    Returns None when the manifest has no ``mm_per_px`` column.
    """
    if "mm_per_px" not in columns:
        return None
    raw = rows["mm_per_px"].astype(object).where(rows["mm_per_px"].notna(), None)
    parsed = raw.map(_scale)
    is_tle = _is_tle(rows)
    bad = parsed.map(lambda v: v is BAD).to_numpy(bool)
    value = parsed.map(lambda v: v if isinstance(v, float) else np.nan).astype(float)
    out_of_range = value.notna().to_numpy() & ~(np.isfinite(value) & (value > 0)).to_numpy()
    problems.add(
        rows,
        bad,
        "mm_per_px",
        raw,
        "not a number: mm_per_px is millimetres per pixel, e.g. 0.1 (a point as decimal "
        "separator, or a comma in a semicolon-separated file)",
    )
    problems.add(
        rows,
        out_of_range,
        "mm_per_px",
        raw,
        "mm_per_px must be a finite number > 0 (millimetres per pixel)",
    )
    given = value.notna().to_numpy() & ~bad
    if "endpoint" in columns:
        problems.add(
            rows, given & is_tle, "mm_per_px", raw, "mm_per_px applies to images; /tle has none"
        )
    source = pd.Series(None, index=rows.index, dtype=object)
    if "calibration_source" in columns:
        source = text_cells(rows["calibration_source"])
        problems.add(
            rows, given & not_text(source).to_numpy(), "calibration_source", source,
            type_reason(source),
        )  # fmt: skip
        check_text(rows, problems, "calibration_source", source, MAX_LENGTH["option"], given)
    source = source.where(source.notna(), DEFAULT_CALIBRATION_SOURCE)
    return pd.DataFrame(
        {"mm_per_px": value.where(given & ~is_tle), "calibration_source": source},
        index=rows.index,
    )


def _calibration_rows(
    rows: pd.DataFrame, scales: pd.DataFrame | None, reqs: pd.DataFrame
) -> pd.DataFrame:
    """The scales of the planned requests: one row per image request with a ``mm_per_px``."""
    if scales is None or not len(reqs):
        return pd.DataFrame(columns=list(CALIBRATION_TABLE_COLUMNS))
    given = scales["mm_per_px"].notna().to_numpy()
    sub = pd.DataFrame(
        {
            "row": rows["_row"].to_numpy()[given],
            "endpoint": rows["_ep_name"].to_numpy()[given],
            "mm_per_px": scales["mm_per_px"].to_numpy()[given],
            "calibration_source": scales["calibration_source"].to_numpy()[given],
        }
    )
    keys = reqs[["row", "patient_id", "timestamp", "endpoint", "image_url"]]
    merged = keys.merge(sub, on=["row", "endpoint"], how="inner", validate="one_to_one")
    return merged[list(CALIBRATION_TABLE_COLUMNS)].reset_index(drop=True)


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
    tle_cols = [c for c in TLE_COLUMNS if c in rows.columns]
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
            query = {q: tle[q] for q in TLE_COLUMNS}
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
