"""The OpenAPI 3.1 document of interface v2, generated from the endpoint registry.

Only what the specification shows is asserted: paths, methods, request fields and
types, response field sets, the error shape and the 401 body. Where the spec says
"not shown" (formats of TimeStamp and of the /tle parameters, the full tooth and
landmark key lists), the schema stays open (plain strings, maps with key patterns).
Error statuses other than 401 are the sandbox's documented choices and are marked so.

>>> doc = openapi_document("https://example.org/api/v2")
>>> doc["openapi"], len(doc["paths"])
('3.1.0', 13)
"""

from __future__ import annotations

from typing import Any

from dentalkit.endpoints import (
    ENDPOINTS,
    INTERFACE_VERSION,
    REQUIRED_BODY_FIELDS,
    Endpoint,
    Kind,
)

__all__ = ["DEFAULT_SERVER", "openapi_document"]

# The sandbox's documented narrowing of what the spec leaves open; one definition, used
# both by the sandbox's validation and by the sandbox variant of this document.
from dentalkit.sandbox.validate import IMAGE_URL_PATTERN, tle_accepted_values

_PAIR = {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}
_REF = "#/components/schemas/"


def _ref(name: str) -> dict[str, str]:
    return {"$ref": _REF + name}


def _components() -> dict[str, Any]:
    schemas: dict[str, Any] = {
        "Point": {**_PAIR, "description": "[x, y] pair of numbers"},
        "Error": {
            "type": "object",
            "required": ["error", "message", "statusCode"],
            "properties": {
                "error": {"type": "string"},
                "message": {"type": "string"},
                "statusCode": {"type": "integer"},
            },
        },
        "Detection": {
            "type": "object",
            "required": ["ClassName", "TopLeft", "BottomRight"],
            "properties": {
                "ClassName": {"type": "string"},
                "TopLeft": _ref("Point"),
                "BottomRight": _ref("Point"),
            },
        },
        "ToothRecord": {
            "type": "object",
            "required": ["missing", "points"],
            "properties": {
                "missing": {"type": "boolean"},
                "points": {
                    "type": "array",
                    "items": _ref("Point"),
                    "minItems": 1,
                    "description": "Outline; the single pair [0,0] when missing is true",
                },
            },
        },
        "ToothKeypoints": {
            "type": "object",
            "required": ["missing", "centroid"],
            "properties": {"missing": {"type": "boolean"}, "centroid": _ref("Point")},
            "patternProperties": {"^t[0-9]+$": _ref("Point")},
            "additionalProperties": False,
        },
        "Landmark": {
            "type": "object",
            "required": ["x_coordinate", "y_coordinate"],
            "properties": {
                "x_coordinate": {"type": "number"},
                "y_coordinate": {"type": "number"},
            },
        },
    }
    return schemas


def _field_schema(name: str, endpoint: Endpoint) -> dict[str, Any]:
    if name in ("Version", "PatientID", "TimeStamp", "ImageName"):
        return {"type": "string"}
    if name == "OutputImageUrl":
        return {"type": "string", "description": "Time-limited link, valid 72 hours"}
    if name == "ImageContents":
        return {"type": "object", "additionalProperties": {"type": "integer"}}
    if name == "NumberOfPredictedPoints":
        return {"type": "integer"}
    if name == "Teeth":
        return {"type": "object", "additionalProperties": _ref("ToothKeypoints")}
    if name == "CatenaryPoints":
        return {
            "type": "object",
            "patternProperties": {"^t[0-9]+$": _ref("Point")},
            "additionalProperties": False,
        }
    if name == "Classification":
        return {
            "type": "object",
            "required": ["category", "confidence"],
            "properties": {"category": {"type": "string"}, "confidence": {"type": "number"}},
        }
    if name == "Results":
        kind = endpoint.kind
        if kind is Kind.FINDINGS:
            return {
                "type": "object",
                "additionalProperties": {"type": "array", "items": _ref("Detection")},
                "description": "Class name → detections; can be {} when nothing is detected",
            }
        if kind is Kind.SEGMENTATION:
            return {
                "type": "object",
                "additionalProperties": _ref("ToothRecord"),
                "description": "Tooth key ({type}_{rgt|lft}_{up|lo}) → tooth record",
            }
        if kind is Kind.LANDMARKS:
            prefix = "Later_" if endpoint.view == "lateral" else "(Front_|SasFront_)"
            return {
                "type": "object",
                "patternProperties": {f"^{prefix}[0-9]+$": _ref("Landmark")},
                "additionalProperties": False,
            }
        if kind is Kind.TMJ:
            return {
                "type": "object",
                "required": ["Finding"],
                "properties": {"Finding": {"type": "string"}},
            }
    if name == "app":
        return {"type": "string"}
    if name == "estimate_length":
        return {"type": "number", "description": "Predicted treatment duration in months"}
    raise KeyError(name)  # pragma: no cover - registry and generator out of step


def _response_schema(endpoint: Endpoint) -> dict[str, Any]:
    fields = endpoint.response_fields
    return {
        "type": "object",
        "required": list(fields),
        "properties": {f: _field_schema(f, endpoint) for f in fields},
        "additionalProperties": False,
    }


def _request_schema(endpoint: Endpoint, sandbox: bool) -> dict[str, Any]:
    props: dict[str, Any] = {
        "PatientID": {"type": "string", "description": "Unique patient identifier"},
        "TimeStamp": {
            "type": "string",
            "description": "Analysis session timestamp (format not shown by the spec)",
        },
        "ImageName": {"type": "string", "description": "Full URL of the image to analyse"},
    }
    for f in endpoint.optional_fields:
        schema: dict[str, Any] = {
            "type": "string" if f.type is str else "boolean",
            "description": f.description,
        }
        if f.default is not None:
            schema["default"] = f.default
        props[f.name] = schema
    if sandbox:
        for name in REQUIRED_BODY_FIELDS:
            props[name].update(minLength=1, pattern=r"\S")
        props["ImageName"]["pattern"] = IMAGE_URL_PATTERN
    return {
        "type": "object",
        "required": list(REQUIRED_BODY_FIELDS),
        "properties": props,
        "additionalProperties": False,
    }


def _error(description: str) -> dict[str, Any]:
    return {
        "description": description,
        "content": {"application/json": {"schema": _ref("Error")}},
    }


def _operation(endpoint: Endpoint, sandbox: bool = False) -> dict[str, Any]:
    op: dict[str, Any] = {
        "operationId": endpoint.name,
        "summary": endpoint.summary,
        "security": [{"ApiKey": []}],
        "responses": {
            "200": {
                "description": "Request succeeded",
                "content": {"application/json": {"schema": _response_schema(endpoint)}},
            },
            "400": _error("Invalid body or parameters (not shown by the spec; sandbox choice)"),
            "401": _error("API key missing or invalid"),
            "429": _error("Rate limit exceeded (not shown by the spec; sandbox choice)"),
            "500": _error("Server error (not shown by the spec)"),
            "502": _error("Bad gateway (not shown by the spec)"),
            "503": _error("Service unavailable (not shown by the spec)"),
        },
    }
    if endpoint.is_image:
        op["requestBody"] = {
            "required": True,
            "content": {"application/json": {"schema": _request_schema(endpoint, sandbox)}},
        }
        op["responses"]["413"] = _error("Body too large (not shown by the spec; sandbox choice)")
        op["responses"]["415"] = _error("Body is not JSON (sandbox choice)")
    else:
        values = tle_accepted_values() if sandbox else {}
        op["parameters"] = [
            {
                "name": q.name,
                "in": "query",
                "required": True,
                "description": q.meaning
                + (
                    " (the spec does not show allowed values: these are dentalkit's codebook "
                    "encodings, which the sandbox enforces)"
                    if sandbox
                    else " (allowed values not shown by the spec)"
                ),
                "schema": {"type": "string", **({"enum": values[q.name]} if sandbox else {})},
            }
            for q in endpoint.query
        ]
    return op


#: Default of the ``base_url`` server variable: the local sandbox (``dentalkit sandbox``).
DEFAULT_SERVER = "http://127.0.0.1:8765/api/v2"


def _servers(base_url: str | None) -> list[dict[str, Any]]:
    """``servers``: the given URL, or a ``{base_url}`` variable (default: the sandbox)."""
    if base_url and base_url != "{base_url}":
        return [{"url": base_url}]
    return [
        {
            "url": "{base_url}",
            "variables": {
                "base_url": {
                    "default": DEFAULT_SERVER,
                    "description": (
                        "Service URL ending in /api/v2 (the spec's {base_url}); the default "
                        "is the local dentalkit sandbox"
                    ),
                }
            },
        }
    ]


def openapi_document(
    base_url: str | None = "{base_url}", *, sandbox: bool = False
) -> dict[str, Any]:
    """Return the OpenAPI 3.1 document of interface v2 as a dict.

    Parameters
    ----------
    base_url : str, optional
        Server URL ending in ``/api/v2``. ``None`` or ``"{base_url}"`` (the spec's
        placeholder) give a ``servers`` entry with a ``base_url`` variable whose default
        is the local sandbox (:data:`DEFAULT_SERVER`), so tools can use the document as
        it is.
    sandbox : bool
        Narrow the formats the spec leaves open to what dentalkit sends and the sandbox
        enforces (an http(s) ``ImageName`` URL, non-blank strings, the /tle codebook's
        codes). The sandbox serves this variant, ``dentalkit openapi`` writes it by
        default (``--spec-only`` for the open one), and schemathesis's positive-data
        check passes against the sandbox with it.
    """
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Dental Image Analysis Service",
            "version": INTERFACE_VERSION,
            "description": (
                "Interface v2 as dentalkit's endpoint registry records it. Generated by "
                "dentalkit.openapi from dentalkit.endpoints; statuses other than 200 and 401 "
                "are the dentalkit sandbox's documented choices."
            ),
        },
        "servers": _servers(base_url),
        "components": {
            "securitySchemes": {"ApiKey": {"type": "apiKey", "in": "header", "name": "x-api-key"}},
            "schemas": _components(),
        },
        "security": [{"ApiKey": []}],
        "paths": {e.path: {e.method.lower(): _operation(e, sandbox)} for e in ENDPOINTS.values()},
    }
