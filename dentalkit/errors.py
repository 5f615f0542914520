"""One exception hierarchy for dentalkit.

Every error names what was wrong, where (endpoint, patient, row, field, JSON
path) and how to fix it. No message, ``repr`` or ``str`` of these exceptions
ever contains the API key: the key is never passed to them.

Hierarchy::

    DentalkitError
    ├── ConfigurationError          settings, key, base URL, insecure scheme
    ├── InputError                  bad arguments or bad rows (manifest, patients)
    │   └── ManifestError           every bad manifest row at once (``problems``)
    ├── ApiError                    the service answered with an error status
    │   ├── BadRequestError         400 / 404 / 405 / 413 / other 4xx
    │   ├── AuthError               401
    │   ├── RateLimitedError        429 (``retry_after``)
    │   └── ServerError             5xx
    ├── TransportError              connection failure or timeout after retries
    │   └── RedirectRefusedError    a redirect to another origin or to plain HTTP (key kept)
    ├── ResponseTooLargeError       an answer larger than ``settings.max_response_bytes``
    ├── DamagedFileError            a store file or the HTTP cache cannot be read back
    ├── StoreLockedError            another fetch is writing into the same store
    ├── ResponseFormatError         a success body that is not shaped as the spec says
    ├── ExpiredLinkError            an ``OutputImageUrl`` past its 72 h validity
    └── MissingDependencyError      an optional extra is not installed (also ImportError)

Warnings derive from :class:`DentalkitWarning`.

One problems table and one ``errors=`` rule
-------------------------------------------
Every function that can meet bad rows takes ``errors=`` with the same three values,
checked by :func:`check_errors`:

``"raise"`` (default, for every function: :data:`ERRORS_DEFAULT`)
    Nothing partial is returned: one exception lists every problem found, each with
    where it is and the message's last line saying how to go on (its ``.problems``
    attribute holds the table; see :func:`problems_error`). A direct call on bad data
    fails loudly. A fetch that meets a failed request stores what arrived and raises
    that request's error.
``"collect"``
    The rest is computed; every problem becomes a row of the problems table returned
    with (or attached to) the result, silently.
``"warn"``
    As ``"collect"``, plus one :class:`DentalkitWarning` summarising the problems.

Every problems table has the columns :data:`PROBLEM_COLUMNS`, typed as
:data:`PROBLEM_SCHEMA` declares (build or conform one with :func:`problems_frame`);
some producers append context columns after them (``view``, ``landmark``, ``side`` …).
The declared columns are scalars (text, an integer row, the severity), so the problems
tables of every producer concatenate on them; a context column belongs to its producer
and holds what its cells are: ``measures`` of :func:`dentalkit.ceph.measure` is a list of
measure ids per row (in Parquet an Arrow ``list<string>``), not joined text.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

__all__ = [
    "ERRORS_DEFAULT",
    "ERRORS_VALUES",
    "PROBLEM_COLUMNS",
    "PROBLEM_SCHEMA",
    "SEVERITIES",
    "ApiError",
    "AuthError",
    "BadRequestError",
    "ConfigurationError",
    "DamagedFileError",
    "DentalkitError",
    "DentalkitWarning",
    "EchoMismatchWarning",
    "Errors",
    "ExpiredLinkError",
    "IncompleteResponseError",
    "InputError",
    "ManifestError",
    "MissingDependencyError",
    "ProblemColumn",
    "RateLimitedError",
    "RedirectRefusedError",
    "ResponseFormatError",
    "ResponseTooLargeError",
    "ServerError",
    "StoreLockedError",
    "TransportError",
    "api_error_for_status",
    "attached_problems",
    "check_errors",
    "empty_problems",
    "problems_error",
    "problems_frame",
    "require",
]


class DentalkitError(Exception):
    """Base class of every error dentalkit raises on purpose."""


class ConfigurationError(DentalkitError):
    """Settings are missing or unsafe (no key, bad base URL, plain HTTP to a remote host)."""


class InputError(DentalkitError, ValueError):
    """An argument, a table row or a field a caller supplied is invalid.

    Attributes
    ----------
    problems : pandas.DataFrame or None
        When the error stops an ``errors="raise"`` call that met bad rows: every problem
        found, as the problems table ``errors="collect"`` would have returned (see
        :func:`problems_error`); None otherwise.
    """

    problems: Any = None


def _given(v: Any) -> bool:
    """A cell that holds something to show (not None, NaN, ``<NA>`` or empty)."""
    return v is not None and not (isinstance(v, float) and v != v) and str(v) not in ("", "<NA>")


def _problem_line(rec: dict, what: str) -> str:
    """``manifest row 3: timestamp='2024-13-01': not a date`` (never a Python ``None``)."""
    given = _given
    row, label = rec.get("row"), rec.get("index_label")
    if isinstance(row, float) and row.is_integer():
        row = int(row)  # a row number read back from a float column
    if what == "manifest":  # manifest rows count data rows from 1 (docs/conventions.md)
        where = f"manifest row {row}"
    else:  # any other table: the 0-based position, and the caller's index label if it differs
        shown = f", index {label!r}" if given(label) and label != row else ""
        where = f"row {row} (0-based position{shown})"
    parts = [where if given(row) else f"the {what} as a whole"]
    field, value = rec.get("field"), rec.get("value")
    if given(field):
        parts.append(f"{field}={str(value)!r}" if given(value) else str(field))
    return ": ".join([*parts, str(rec.get("reason"))])


class ManifestError(InputError):
    """The manifest has bad rows; ``problems`` lists every one of them.

    Parameters
    ----------
    problems : pandas.DataFrame
        One row per problem with at least ``row``, ``field``, ``value`` and
        ``reason`` columns.
    what : str
        The table, as the message names it (``"manifest"``, ``"patients table"``).
    hint : str, optional
        How to go on, the message's last line (e.g. ``"Or pass errors='collect' …"``).
    """

    def __init__(self, problems: Any, what: str = "manifest", hint: str = "") -> None:
        self.problems = problems
        #: How to go on (the message's last line), e.g. which ``errors=`` to pass.
        self.hint = hint
        n = len(problems)
        lines = [f"  {_problem_line(rec, what)}" for rec in problems.head(10).to_dict("records")]
        more = f"\n  … and {n - 10} more (all are in the problems table)" if n > 10 else ""
        super().__init__(
            f"{what} has {n} problem(s); nothing was sent. Fix these rows:\n"
            + "\n".join(lines)
            + more
            + (f"\n{hint}" if hint else "")
        )


def _problem_place(rec: dict) -> str:
    """Where one problem is: endpoint, patient, session, row (index label), field or path."""
    parts = []
    if _given(rec.get("endpoint")):
        parts.append(f"endpoint {rec['endpoint']}")
    if _given(rec.get("patient_id")):
        parts.append(f"patient {str(rec['patient_id'])!r}")
    if _given(rec.get("timestamp")):
        parts.append(f"session {str(rec['timestamp'])!r}")
    row, label = rec.get("row"), rec.get("index_label")
    if _given(row):
        row = int(row) if isinstance(row, float) and row.is_integer() else row
        shown = f", index {label!r}" if _given(label) and label != row else ""
        parts.append(f"row {row} (0-based position{shown})")
    field, value, path = rec.get("field"), rec.get("value"), rec.get("path")
    if _given(field):
        parts.append(f"{field}={str(value)!r}" if _given(value) else str(field))
    elif _given(path):
        parts.append(str(path))
    return ", ".join(parts)


def problems_error(problems: Any, headline: str, hint: str, *, limit: int = 10) -> InputError:
    """The :class:`InputError` of an ``errors="raise"`` call that met bad rows.

    Parameters
    ----------
    problems : pandas.DataFrame
        The problems table (:data:`PROBLEM_COLUMNS` first); kept whole on the error's
        ``problems`` attribute.
    headline : str
        What was being done, e.g. ``"dentalkit.ceph.measure met 2 problem(s)"``.
    hint : str
        How to keep going, e.g. ``"pass errors='collect' to get … in a problems table"``.
    limit : int
        At most this many problems are listed in the message, each with where it is
        (endpoint, patient, session, row, field or path) and its reason.

    Returns
    -------
    InputError
        To be raised by the caller (so that the traceback ends in the public function).
    """
    records = problems.head(limit).to_dict("records")
    lines = []
    for rec in records:
        place = _problem_place(rec)
        lines.append(f"  {place}: {rec.get('reason')}" if place else f"  {rec.get('reason')}")
    n = len(problems)
    more = (
        f"\n  … and {n - limit} more (all are in the error's problems table)" if n > limit else ""
    )
    err = InputError(f"{headline}:\n" + "\n".join(lines) + more + f"\n{hint}")
    err.problems = problems
    return err


class ApiError(DentalkitError):
    """The service answered with an error status.

    Attributes
    ----------
    status : int
        HTTP status code.
    error, message : str or None
        The ``error`` and ``message`` fields of the service's
        ``{error, message, statusCode}`` body, when it sent one.
    endpoint : str or None
        Endpoint path.
    patient_id : str or None
        Patient of the request, when there was one.
    body : str
        The raw response body (never contains the key: the service does not
        echo it).
    """

    def __init__(
        self,
        status: int,
        *,
        error: str | None = None,
        message: str | None = None,
        endpoint: str | None = None,
        patient_id: str | None = None,
        body: str = "",
        hint: str = "",
    ) -> None:
        self.status = status
        self.error = error
        self.message = message
        self.endpoint = endpoint
        self.patient_id = patient_id
        self.body = body
        self.hint = hint
        where = f" from {endpoint}" if endpoint else ""
        who = f" for patient {patient_id!r}" if patient_id is not None else ""
        what = ": ".join(x for x in (error, message) if x) or (body[:200] if body else "no body")
        text = f"HTTP {status}{where}{who}: {what}"
        if hint:
            text += f". {hint}"
        super().__init__(text)

    def __reduce__(self):  # picklable across process pools, extra attributes included
        return (
            _rebuild_api_error,
            (
                type(self),
                self.status,
                {
                    "error": self.error,
                    "message": self.message,
                    "endpoint": self.endpoint,
                    "patient_id": self.patient_id,
                    "body": self.body,
                    "hint": self.hint,
                },
                dict(self.__dict__),
            ),
        )


def _rebuild_api_error(
    cls: type[ApiError], status: int, kwargs: dict[str, Any], state: dict[str, Any]
) -> ApiError:
    obj = cls.__new__(cls)
    ApiError.__init__(obj, status, **kwargs)
    obj.__dict__.update(state)
    return obj


class BadRequestError(ApiError):
    """A 4xx other than 401 and 429: the request itself is wrong; retrying will not help."""


class AuthError(ApiError):
    """401: the API key is missing or invalid. Not retried."""

    def __init__(self, status: int = 401, **kwargs: Any) -> None:
        kwargs.setdefault(
            "hint",
            "Check DENTALKIT_API_KEY (or Client(api_key=...)): a sandbox key only works "
            "against the sandbox, a production key only against the production service",
        )
        super().__init__(status, **kwargs)


class RateLimitedError(ApiError):
    """429 after all retries were used; ``retry_after`` is the server's hint in seconds."""

    def __init__(self, status: int = 429, *, retry_after: float | None = None, **kwargs: Any):
        self.retry_after = retry_after
        kwargs.setdefault("hint", "Lower max_workers or raise settings.max_retries")
        super().__init__(status, **kwargs)


class ServerError(ApiError):
    """5xx after all retries were used."""


class TransportError(DentalkitError):
    """The request could not be completed (connection refused, timeout) after all retries."""


class RedirectRefusedError(TransportError):
    """The service answered with a redirect dentalkit does not follow.

    A redirect to another origin (scheme, host or port) would carry the API key to a server
    that is not the configured service; one to plain ``http://`` on a non-loopback host would
    send it unencrypted. Neither is followed: the key never leaves for the new address. Not
    retried (a redirect is the server's fixed answer).
    """


class IncompleteResponseError(DentalkitError):
    """The service began answering but the answer did not arrive whole.

    Its body was cut short (fewer bytes than its ``Content-Length``, or a chunked body that
    stopped), could not be decoded (a broken ``Content-Encoding``), or did not finish within
    :data:`dentalkit.settings.request_deadline`. Retried with the same backoff as a dropped
    connection; never cached or stored. Unlike a :class:`TransportError` it never means
    that the service cannot be reached: a connection was made and an answer had begun.
    """


class ResponseTooLargeError(DentalkitError):
    """An answer is larger than :data:`dentalkit.settings.max_response_bytes`.

    The body is not read beyond the limit and nothing is cached or stored. Not retried.
    """


class DamagedFileError(DentalkitError):
    """A file dentalkit reads back (a store part, ``failures.parquet``, ``_dentalkit.json``,
    the HTTP cache) is truncated, emptied or garbled.

    Attributes
    ----------
    path : str
        The damaged file.
    what : str
        Which kind of file it is (``"responses part"``, ``"failures table"`` …).
    reason : str
        What reading it reported.
    """

    def __init__(self, path: Any, what: str, reason: str, fix: str = "") -> None:
        self.path = str(path)
        self.what = what
        self.reason = reason
        self.fix = fix
        text = f"{self.path} ({what}) is damaged and cannot be read: {reason}"
        super().__init__(text + (f". {fix}" if fix else ""))

    def __reduce__(self):
        return (DamagedFileError, (self.path, self.what, self.reason, self.fix))


class StoreLockedError(DentalkitError):
    """Another fetch holds the write lock of the store (one writer per store).

    Reading a store never needs the lock.
    """


class ResponseFormatError(DentalkitError, ValueError):
    """A success body that is not shaped as the specification says.

    Attributes
    ----------
    endpoint, patient_id, timestamp : str or None
        Which response.
    path : str
        JSON path of the offending value, e.g. ``$.Results.Later_12.x_coordinate``.
    reason : str
        What is wrong with it.
    """

    def __init__(
        self,
        reason: str,
        *,
        endpoint: str | None = None,
        patient_id: str | None = None,
        timestamp: str | None = None,
        path: str = "$",
        row: int | None = None,
    ) -> None:
        self.reason = reason
        self.endpoint = endpoint
        self.patient_id = patient_id
        self.timestamp = timestamp
        self.path = path
        self.row = row
        where = ", ".join(
            f"{k}={v!r}"
            for k, v in (
                ("row", row),
                ("endpoint", endpoint),
                ("patient_id", patient_id),
                ("timestamp", timestamp),
            )
            if v is not None
        )
        super().__init__(
            f"malformed response at {path} ({where}): {reason}. "
            "Use errors='collect' to convert the rest and list this in the problems table"
        )

    def __reduce__(self):
        return (
            _rebuild_format_error,
            (
                self.reason,
                {
                    "endpoint": self.endpoint,
                    "patient_id": self.patient_id,
                    "timestamp": self.timestamp,
                    "path": self.path,
                    "row": self.row,
                },
            ),
        )


def _rebuild_format_error(reason: str, kwargs: dict[str, Any]) -> ResponseFormatError:
    return ResponseFormatError(reason, **kwargs)


class ExpiredLinkError(DentalkitError):
    """An ``OutputImageUrl`` is past its 72-hour validity.

    Re-request the analysis with ``refresh=True`` to get a fresh link.
    """


class MissingDependencyError(DentalkitError, ImportError):
    """An optional extra is needed: the message names the ``pip install`` command."""


class DentalkitWarning(UserWarning):
    """Base class of dentalkit's warnings."""


class EchoMismatchWarning(DentalkitWarning):
    """A response echoes a PatientID/TimeStamp that differs from the request."""


class MixedVersionsWarning(DentalkitWarning):
    """An analysis pools responses of one endpoint that carry different ``Version`` labels."""


def api_error_for_status(status: int, **kwargs: Any) -> ApiError:
    """Build the right :class:`ApiError` subclass for an HTTP status."""
    if status == 401:
        return AuthError(status, **kwargs)
    if status == 429:
        return RateLimitedError(status, **kwargs)
    if status >= 500:
        return ServerError(status, **kwargs)
    return BadRequestError(status, **kwargs)


def require(module: str, extra: str) -> Any:
    """Import an optional dependency or explain which extra installs it.

    >>> require("json", "core").__name__
    'json'
    """
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingDependencyError(
            f"{module} is needed for this; install it with: pip install 'dentalkit[{extra}]'"
        ) from exc


# ----------------------------------------------------------------- the errors= rule

#: Type of every ``errors=`` argument.
Errors = Literal["raise", "collect", "warn"]
#: The values every ``errors=`` argument accepts.
ERRORS_VALUES: tuple[str, ...] = ("raise", "collect", "warn")
#: The one default: a direct call on bad data fails loudly and lists every problem.
ERRORS_DEFAULT = "raise"


def check_errors(errors: Any, where: str) -> str:
    """Validate an ``errors=`` argument and return its canonical value.

    Parameters
    ----------
    errors : str
        ``"raise"``, ``"collect"`` or ``"warn"`` (see the module docstring).
    where : str
        The public function checking it, named in the message
        (``"dentalkit.ceph.measure"``).

    Returns
    -------
    str
        One of :data:`ERRORS_VALUES`.

    Raises
    ------
    InputError
        Any other value; the message names the allowed ones.

    Examples
    --------
    >>> check_errors("collect", "dentalkit.convert.tables")
    'collect'
    """
    if isinstance(errors, str) and errors in ERRORS_VALUES:
        return errors
    raise InputError(
        f"{where}: errors={errors!r} is not allowed; use one of "
        f"{', '.join(map(repr, ERRORS_VALUES))} (default {ERRORS_DEFAULT!r}): 'raise' stops "
        "and lists every problem, 'collect' returns the problems table with the results, "
        "'warn' does the same and warns once"
    )


# ------------------------------------------------------------ the problems schema


@dataclass(frozen=True)
class ProblemColumn:
    """One declared column of the problems table.

    Attributes
    ----------
    name : str
        Column name.
    dtype : str
        pandas dtype: ``"str"`` (nullable text), ``"Int64"`` or ``"category"``.
    nullable : bool
        Whether the column may hold nulls.
    description : str
        What it holds (copied to ``data/columns.csv`` and ``docs/columns.md``).
    """

    name: str
    dtype: str
    nullable: bool
    description: str


#: Values of ``severity``: ``error`` — the row, response or value was left out (or is
#: NaN in the result); ``warning`` — data contradicts itself or the spec, the rows are kept.
SEVERITIES: tuple[str, ...] = ("error", "warning")

#: The one problems-table schema of dentalkit, in column order.
PROBLEM_SCHEMA: tuple[ProblemColumn, ...] = (
    ProblemColumn(
        "table",
        "str",
        False,
        "table the problem concerns: an input table (responses, manifest, patients, "
        "teeth …) or the output being built (ceph_measures, agreement_landmarks …)",
    ),
    ProblemColumn("endpoint", "str", True, "endpoint registry name, when the row has one"),
    ProblemColumn("patient_id", "str", True, "patient of the row (request PatientID)"),
    ProblemColumn("timestamp", "str", True, "session of the row (request TimeStamp, verbatim)"),
    ProblemColumn(
        "row",
        "Int64",
        True,
        "row of the input: for a manifest the manifest data row counted from 1 (CSV line = "
        "row + 1); for any other table (responses, patients, the analysed table) its 0-based "
        "position; null when the problem concerns the whole input or a whole session",
    ),
    ProblemColumn(
        "field",
        "str",
        True,
        "column of the input table concerned (body for a response's JSON); null when none",
    ),
    ProblemColumn(
        "path",
        "str",
        True,
        "where exactly: JSON path in the body ($.Results.Later_12.x_coordinate), a column "
        "name, or view/landmark",
    ),
    ProblemColumn(
        "value",
        "str",
        True,
        "the offending value, shortened and printable; null when not a single value",
    ),
    ProblemColumn("reason", "str", False, "what is wrong and what happened to the rows"),
    ProblemColumn(
        "severity",
        "category",
        False,
        "error: the row, response or value was left out (NaN in the result); warning: "
        "kept, but the data contradicts itself or the spec",
    ),
)
#: Names of the declared problems columns, in order.
PROBLEM_COLUMNS: tuple[str, ...] = tuple(c.name for c in PROBLEM_SCHEMA)


def _problem_dtype(column: ProblemColumn) -> Any:
    import numpy as np
    import pandas as pd

    if column.dtype == "str":
        return pd.StringDtype(na_value=np.nan)
    if column.dtype == "category":
        return pd.CategoricalDtype(
            pd.Index(list(SEVERITIES), dtype=pd.StringDtype(na_value=np.nan))
        )
    return column.dtype


def attached_problems(result: Any, package: str, producers: str) -> list[Any]:
    """The problem records a collect-mode result carries in ``result.attrs["problems"]``.

    Results whose problems are listed on demand (``arch.problems(result)``,
    ``tle.problems(result)``) keep plain records in the frame's ``attrs``; this reads them,
    or says what to pass when there are none.

    Parameters
    ----------
    result : pandas.DataFrame
        The result passed to the package's ``problems`` function.
    package : str
        The package, as the message names it (``"arch"``, ``"tle"``).
    producers : str
        The functions whose results carry a record (``"arch.fit or arch.measure"``).

    Raises
    ------
    InputError
        ``result`` carries no record: not such a result, or its ``attrs`` were dropped, as
        pandas does when concatenating results whose ``attrs`` differ.
    """
    records = getattr(result, "attrs", {}).get("problems")
    if records is None:
        raise InputError(
            f"this table carries no {package} problems record: pass a result of {producers} "
            "(pandas drops attrs when concatenated results differ in them; collect "
            f"{package}.problems(result) before concatenating)"
        )
    return list(records)


def empty_problems(extra: tuple[str, ...] | list[str] = ()) -> Any:
    """A problems table with no rows: the declared columns, then ``extra`` (text)."""
    import pandas as pd

    return problems_frame(pd.DataFrame(columns=[*PROBLEM_COLUMNS, *extra]), severity="error")


def problems_frame(frame: Any, *, table: str | None = None, severity: str | None = None) -> Any:
    """Conform a table of problems to :data:`PROBLEM_SCHEMA`.

    Declared columns the producer cannot fill are added as nulls, every declared
    column gets its declared dtype, and the declared columns come first in declared
    order; any other columns (a producer's context, e.g. ``view``) follow unchanged.

    Parameters
    ----------
    frame : pandas.DataFrame
        Problems as one producer records them.
    table : str, optional
        Fill ``table`` with this name where it is missing.
    severity : {"error", "warning"}, optional
        Fill ``severity`` with this value where it is missing.

    Returns
    -------
    pandas.DataFrame
        A new table with a fresh ``RangeIndex``.

    Raises
    ------
    InputError
        A non-nullable column is left null, ``row`` holds a non-integer, or ``severity``
        a value outside :data:`SEVERITIES` (a bug of the producer, not of the data).
    """
    import pandas as pd

    out = frame.reset_index(drop=True).copy()
    n = len(out)
    if table is not None:
        out["table"] = out["table"].where(out["table"].notna(), table) if "table" in out else table
    if severity is not None:
        out["severity"] = (
            out["severity"].where(out["severity"].notna(), severity)
            if "severity" in out
            else severity
        )
    for col in PROBLEM_SCHEMA:
        values = out[col.name] if col.name in out.columns else pd.Series([None] * n, dtype=object)
        dtype = _problem_dtype(col)
        if col.dtype == "str":
            obj = values.astype(object)
            text = obj.map(lambda v: v if isinstance(v, str) else str(v), na_action="ignore")
            conformed = pd.Series(text.where(obj.notna(), None).to_numpy(object), dtype=dtype)
        elif col.dtype == "Int64":
            try:
                conformed = pd.Series(pd.array(values.astype(object).to_numpy(), dtype="Int64"))
            except (TypeError, ValueError) as exc:
                raise InputError(f"problems table: row must hold integers: {exc}") from exc
        else:
            raw = values.astype(object).to_numpy()
            unknown = {v for v in raw if isinstance(v, str)} - set(SEVERITIES)
            if unknown:
                raise InputError(
                    f"problems table: severity must be one of {SEVERITIES}, got {sorted(unknown)}"
                )
            conformed = pd.Series(pd.Categorical(raw, dtype=dtype))
        if not col.nullable and n and conformed.isna().any():
            raise InputError(f"problems table: column {col.name!r} must not be null")
        out[col.name] = conformed.array
    extra = [c for c in out.columns if c not in PROBLEM_COLUMNS]
    out = out[[*PROBLEM_COLUMNS, *extra]]
    for c in extra:  # object text, as before; no float NaN in place of a missing value
        if out[c].dtype == object:
            out[c] = out[c].where(out[c].notna(), None)
    return out
