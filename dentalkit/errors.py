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
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ApiError",
    "AuthError",
    "BadRequestError",
    "ConfigurationError",
    "DamagedFileError",
    "DentalkitError",
    "DentalkitWarning",
    "EchoMismatchWarning",
    "ExpiredLinkError",
    "InputError",
    "ManifestError",
    "MissingDependencyError",
    "RateLimitedError",
    "RedirectRefusedError",
    "ResponseFormatError",
    "ResponseTooLargeError",
    "ServerError",
    "StoreLockedError",
    "TransportError",
    "api_error_for_status",
    "require",
]


class DentalkitError(Exception):
    """Base class of every error dentalkit raises on purpose."""


class ConfigurationError(DentalkitError):
    """Settings are missing or unsafe (no key, bad base URL, plain HTTP to a remote host)."""


class InputError(DentalkitError, ValueError):
    """An argument, a table row or a field a caller supplied is invalid."""


def _problem_line(rec: dict, what: str) -> str:
    """``row 3: timestamp='2024-13-01': not a date`` (never a Python ``None``)."""

    def given(v: Any) -> bool:
        return (
            v is not None and not (isinstance(v, float) and v != v) and str(v) not in ("", "<NA>")
        )

    row = rec.get("row")
    if isinstance(row, float) and row.is_integer():
        row = int(row)  # a row number read back from a float column
    parts = [f"row {row}" if given(row) else f"the {what} as a whole"]
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
    """

    def __init__(self, problems: Any, what: str = "manifest") -> None:
        self.problems = problems
        n = len(problems)
        lines = [f"  {_problem_line(rec, what)}" for rec in problems.head(10).to_dict("records")]
        more = f"\n  … and {n - 10} more (all are in the problems table)" if n > 10 else ""
        super().__init__(
            f"{what} has {n} problem(s); nothing was sent. Fix these rows:\n"
            + "\n".join(lines)
            + more
        )


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
