"""Request validation of the sandbox: every message names the field and how to fix it.

The spec does not show the service's errors for invalid bodies or parameters; the
sandbox answers them with the spec's error shape ``{error, message, statusCode}`` and
status 400 (documented sandbox choice). It is deliberately strict — unknown fields
are rejected — so client bugs such as a misspelt ``DrawContours`` surface in tests.
"""

from __future__ import annotations

import csv
import hashlib
import re
from collections.abc import Mapping
from functools import lru_cache
from importlib import resources
from typing import Any

from dentalkit.endpoints import REQUIRED_BODY_FIELDS, Endpoint

__all__ = [
    "IMAGE_URL_PATTERN",
    "InvalidRequestError",
    "request_identity",
    "tle_accepted_values",
    "validate_body",
    "validate_tle_query",
]

#: What the sandbox accepts as ImageName: a full http(s) URL with a host name or address.
#: (Path and query may hold any character but controls and spaces; no ``\s`` so that the
#: pattern means the same in Python and ECMA-262 regular expressions.)
IMAGE_URL_PATTERN = r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?([/?][^\x00-\x20]*)?$"
_IMAGE_URL = re.compile(IMAGE_URL_PATTERN)

_MAX_SHOWN = 80


class InvalidRequestError(Exception):
    """A request the sandbox rejects with 400; the message is sent to the client."""


def _show(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 1] + "…"


_JSON_TYPE = {str: "string", bool: "boolean"}


def _json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "array"
    return "object"


def validate_body(endpoint: Endpoint, body: Any) -> dict[str, Any]:
    """Return the body if it is a valid request for ``endpoint``; raise InvalidRequestError otherwise."""
    if not isinstance(body, dict):
        raise InvalidRequestError(f"request body must be a JSON object, got {_json_type(body)}")
    for name in REQUIRED_BODY_FIELDS:
        if name not in body:
            raise InvalidRequestError(f"missing required field '{name}' (a string)")
        value = body[name]
        if not isinstance(value, str):
            raise InvalidRequestError(f"field '{name}' must be a string, got {_json_type(value)}")
        if not value.strip():
            raise InvalidRequestError(f"field '{name}' must not be empty")
    url = body["ImageName"]
    if not _IMAGE_URL.fullmatch(url):
        raise InvalidRequestError(
            f"field 'ImageName' must be the full http(s) URL of the image, got {_show(url)}"
        )
    allowed = {f.name: f for f in endpoint.optional_fields}
    for name, value in body.items():
        if name in REQUIRED_BODY_FIELDS:
            continue
        field = allowed.get(name)
        if field is None:
            names = ", ".join(allowed) or "none"
            raise InvalidRequestError(
                f"unknown field '{name}' for {endpoint.path}; optional fields: {names}"
            )
        if type(value) is not field.type:
            raise InvalidRequestError(
                f"field '{name}' must be a {_JSON_TYPE[field.type]}, got {_json_type(value)}"
            )
    return body


@lru_cache(maxsize=1)
def _codebook() -> dict[str, dict[str, Any]]:
    with (
        resources.files("dentalkit.data").joinpath("tle_codebook.csv").open(encoding="utf-8") as fh
    ):
        rows = list(csv.DictReader(fh))
    book = {}
    for r in rows:
        if r["levels"]:
            codes = [lv.split(":", 1)[1] for lv in r["levels"].split("|")]
            book[r["param"]] = {"meaning": r["meaning"], "codes": codes, "number": False}
        else:
            lo, hi, dec = float(r["minimum"]), float(r["maximum"]), int(r["decimals"] or 0)
            step = 10.0**-dec
            codes = [f"{lo + i * step:.{dec}f}" for i in range(round((hi - lo) / step) + 1)]
            book[r["param"]] = {
                "meaning": r["meaning"],
                "codes": codes,
                "number": True,
                "range": f"{lo:g} to {hi:g} written with {dec} decimal(s), e.g. {codes[len(codes) // 2]}",
            }
    return book


def tle_accepted_values() -> dict[str, list[str]]:
    """Every /tle query value the sandbox accepts, per parameter (our codebook's encodings).

    Numbers must be written exactly as the codebook formats them (``4.5``, not ``4.50``).
    """
    return {k: list(v["codes"]) for k, v in _codebook().items()}


def validate_tle_query(endpoint: Endpoint, items: list[tuple[str, str]]) -> dict[str, str]:
    """Validate the /tle query (all 11 parameters, once each, values as our codebook encodes)."""
    expected = [q.name for q in endpoint.query]
    seen: dict[str, str] = {}
    for key, value in items:
        if key not in expected:
            raise InvalidRequestError(
                f"unknown query parameter '{key}'; expected {', '.join(expected)}"
            )
        if key in seen:
            raise InvalidRequestError(f"query parameter '{key}' given more than once")
        seen[key] = value
    missing = [k for k in expected if k not in seen]
    if missing:
        raise InvalidRequestError(f"missing required query parameter(s): {', '.join(missing)}")
    book = _codebook()
    for key in expected:
        rule, value = book[key], seen[key]
        if value in rule["codes"]:
            continue
        what = f"query parameter '{key}' ({rule['meaning']})"
        if rule["number"]:
            raise InvalidRequestError(
                f"{what} must be a number from {rule['range']}, got {_show(value)}"
            )
        raise InvalidRequestError(
            f"{what} must be one of {', '.join(rule['codes'])}, got {_show(value)}"
        )
    return seen


#: Longest value kept as it is in a request identity; a longer one is replaced by its hash.
IDENTITY_VALUE_CHARS = 128


def _short_value(value: object) -> str:
    text = str(value)
    if len(text) <= IDENTITY_VALUE_CHARS:
        return text
    return "sha256:" + hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def request_identity(endpoint: Endpoint, data: Mapping[str, Any]) -> str:
    """A readable identity of a request for the sandbox's per-request counters.

    ``path|PatientID|TimeStamp|ImageName`` (image endpoints) or ``path?p01=…&…`` (``/tle``);
    a value longer than :data:`IDENTITY_VALUE_CHARS` characters appears as
    ``sha256:<32 hex digits>``, so an identity is short whatever the request holds.

    >>> from dentalkit.endpoints import ENDPOINTS
    >>> request_identity(
    ...     ENDPOINTS["classifier"],
    ...     {"PatientID": "P1", "TimeStamp": "t", "ImageName": "https://x/" + "a" * 200},
    ... )
    '/classifier|P1|t|sha256:1274c8d3ece1d1a0f8876f07aee5ce58'
    """
    if endpoint.is_image:
        fields = (_short_value(data.get(f, "")) for f in REQUIRED_BODY_FIELDS)
        return "|".join([endpoint.path, *fields])
    return endpoint.path + "?" + "&".join(f"{k}={_short_value(data[k])}" for k in sorted(data))
