"""Build and validate request bodies and /tle queries from the registry (private)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from dentalkit.endpoints import Endpoint
from dentalkit.errors import InputError

__all__ = ["build_body", "build_query", "check_image_url", "option_value_problem"]

_JSON_NAME = {str: "string", bool: "boolean"}


def check_image_url(value: object) -> str | None:
    """Why ``value`` is not a usable image URL, or ``None`` when it is one."""
    if not isinstance(value, str) or not value.strip():
        return "missing image URL"
    parts = urlsplit(value.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return "not a full http(s) URL (the service needs the image's URL, not a file path)"
    return None


def option_value_problem(endpoint: Endpoint, name: str, value: object) -> str | None:
    """Why ``value`` is not valid for optional field ``name`` of ``endpoint``, or ``None``."""
    try:
        field = endpoint.field(name)
    except KeyError:
        allowed = ", ".join(f"{f.name} ({f.param})" for f in endpoint.optional_fields) or "none"
        return f"{endpoint.path} has no optional field {name!r}; its optional fields: {allowed}"
    if type(value) is not field.type:
        return (
            f"{field.name} must be a {_JSON_NAME[field.type]} "
            f"({field.type.__name__}), got {type(value).__name__} {value!r}"
        )
    return None


def build_body(
    endpoint: Endpoint,
    patient_id: object,
    timestamp: object,
    image_url: object,
    options: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of an image request, validated against the registry.

    Optional fields may be given by wire name (``DrawContours``) or Python name
    (``draw_contours``); ``None`` values are left out so the service applies its default.

    Raises
    ------
    InputError
        Naming the endpoint, patient and field, for a missing/non-string key field, a
        non-URL image, an unknown optional field or a wrongly typed one.
    """
    who = f"{endpoint.name} request for patient {patient_id!r}"
    for name, value in (("patient_id", patient_id), ("timestamp", timestamp)):
        if not isinstance(value, str) or not value.strip():
            raise InputError(f"{who}: {name} must be a non-empty string, got {value!r}")
    if (problem := check_image_url(image_url)) is not None:
        raise InputError(f"{who}: image_url {image_url!r}: {problem}")
    body: dict[str, Any] = {"PatientID": patient_id, "TimeStamp": timestamp, "ImageName": image_url}
    for name, value in (options or {}).items():
        if value is None:
            continue
        if (problem := option_value_problem(endpoint, name, value)) is not None:
            raise InputError(f"{who}: {problem}")
        body[endpoint.field(name).name] = value
    return body


def build_query(endpoint: Endpoint, params: Mapping[str, Any]) -> dict[str, str]:
    """The query of ``GET /tle``: all eleven ``p01``…``p11``, each a string, in registry order.

    Raises
    ------
    InputError
        For a missing, unknown or non-string parameter.
    """
    expected = [q.name for q in endpoint.query]
    unknown = sorted(set(params) - set(expected))
    if unknown:
        raise InputError(
            f"{endpoint.path}: unknown parameter(s) {unknown}; expected {', '.join(expected)}"
        )
    missing = [k for k in expected if params.get(k) is None]
    if missing:
        raise InputError(
            f"{endpoint.path}: missing required parameter(s) {', '.join(missing)} "
            "(the spec requires all eleven)"
        )
    bad = {k: params[k] for k in expected if not isinstance(params[k], str)}
    if bad:
        shown = ", ".join(f"{k}={v!r}" for k, v in bad.items())
        raise InputError(
            f"{endpoint.path}: parameters must be strings as the spec types them, got {shown}; "
            "pass e.g. p06='4.5' (dentalkit.tle encodes a patient table for you)"
        )
    return {k: params[k] for k in expected}
