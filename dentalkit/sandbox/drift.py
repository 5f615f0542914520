"""Drift mode of the sandbox: answers as a *changed* service could (off by default).

The specification leaves labels, wordings, formats and versions unsaid, and a real
service changes. With ``drift=("new_labels", …)`` (``running(drift=…)``,
``dentalkit sandbox --drift …``, ``dentalkit demo --drift …``) the sandbox rewrites its
valid answers by the named scenarios, deterministically per request, so that dentalkit's
handling of each difference can be tested end to end. The answers stay the sandbox's:
every drifted ``Version`` keeps its ``-sandbox`` suffix, and the banner and the
``/_sandbox/config`` route say that drift is on. The scenarios:

``extra_fields``
    Two top-level fields the registry does not know (``RequestId``, ``ModelInfo``) on
    every image answer, and ``server`` on the ``/tle`` answer.
``new_labels``
    A landmark key beyond the spec's count (``Later_170`` / ``Front_119``), a finding
    class ``fracture`` (one detection, counted in ``ImageContents``), a classifier
    category ``cbct_axial`` for half the patients, and a supernumerary tooth
    ``s1_rgt_up`` (missing) in segmentation answers.
``other_wordings``
    TMJ sentences in other words: "Within normal limits bilaterally." for no finding,
    "{Label} of the {side} condyle." for findings, and for half the patients with no
    finding a hedge the phrases leave unknown: "No definite abnormality; clinical
    correlation advised.".
``timestamp_format``
    The echoed ``TimeStamp`` in another format (``DD/MM/YYYY HH:MM:SS`` of the request's
    time when it is ISO 8601, else the request's string upper-cased and reversed).
``other_version``
    ``Version`` ``3.0.0-sandbox`` instead of the usual label for half the patients.
``numbers_as_strings``
    ``Classification.confidence`` and the ``/tle`` ``estimate_length`` sent as strings
    (``"0.93"``): a changed serialiser.
``optional_absent``
    The echo fields (``PatientID``, ``TimeStamp``, ``ImageName``) and ``OutputImageUrl``
    left out for half the patients (the spec: "absent in some responses"). The other half
    keep them, so that under ``all`` the ``timestamp_format`` drift of their echoes shows.
``keys_reordered``
    Every JSON object's keys in reverse order (JSON objects are unordered: nothing may
    change in the tables).

"Half the patients" is decided by a CRC-32 of the ``PatientID`` (even → drifted), so the
same request always gets the same answer.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from dentalkit.endpoints import Endpoint, Kind

__all__ = ["DRIFTED_VERSION", "SCENARIOS", "apply_drift", "check_scenarios"]

#: The ``Version`` of the ``other_version`` scenario (a sandbox label, like every other).
DRIFTED_VERSION = "3.0.0-sandbox"

Body = dict[str, Any]


def _half(request: Mapping[str, Any]) -> bool:
    pid = str(request.get("PatientID", ""))
    return zlib.crc32(pid.encode("utf-8")) % 2 == 0


def _extra_fields(ep: Endpoint, body: Body, request: Mapping[str, Any]) -> Body:
    if ep.kind is Kind.TLE:
        return {**body, "server": "sandbox-drift"}
    return {**body, "RequestId": f"sbx-{zlib.crc32(repr(sorted(request.items())).encode()):08x}",
            "ModelInfo": {"name": "sandbox", "drift": True}}  # fmt: skip


def _new_labels(ep: Endpoint, body: Body, request: Mapping[str, Any]) -> Body:
    body = dict(body)
    if ep.kind is Kind.LANDMARKS and isinstance(body.get("Results"), dict):
        key = "Later_170" if ep.view == "lateral" else "Front_119"
        body["Results"] = {**body["Results"], key: {"x_coordinate": 10.5, "y_coordinate": 20.5}}
    elif ep.kind is Kind.FINDINGS and isinstance(body.get("Results"), dict):
        det = {"ClassName": "fracture", "TopLeft": [10, 10], "BottomRight": [40, 30]}
        body["Results"] = {**body["Results"], "fracture": [det]}
        if isinstance(body.get("ImageContents"), dict):
            body["ImageContents"] = {**body["ImageContents"], "fracture": 1}
    elif ep.kind is Kind.CLASSIFIER and _half(request):
        body["Classification"] = {**body["Classification"], "category": "cbct_axial"}
    elif ep.kind is Kind.SEGMENTATION and isinstance(body.get("Results"), dict):
        body["Results"] = {**body["Results"], "s1_rgt_up": {"missing": True, "points": [[0, 0]]}}
    return body


_WORDS = {
    "Condylar flattening": "Flattening",
    "Cortical erosion": "Cortical erosion",
    "Osteophyte": "Osteophyte formation",
}


def _other_wordings(ep: Endpoint, body: Body, request: Mapping[str, Any]) -> Body:
    if ep.kind is not Kind.TMJ or not isinstance(body.get("Results"), dict):
        return body
    from dentalkit.sandbox._findings import NO_TMJ_FINDING

    sentence = body["Results"].get("Finding")
    if sentence == NO_TMJ_FINDING:
        new = (
            "No definite abnormality; clinical correlation advised."
            if _half(request)
            else "Within normal limits bilaterally."
        )
    else:
        parts = []
        for part in str(sentence).split(". "):
            part = part.rstrip(".")
            label, _, side = part.partition(" detected on the ")
            parts.append(f"{_WORDS.get(label, label)} of the {side}.")
        new = " ".join(parts)
    return {**body, "Results": {**body["Results"], "Finding": new}}


def _timestamp_format(ep: Endpoint, body: Body, request: Mapping[str, Any]) -> Body:
    if "TimeStamp" not in body:
        return body
    ts = str(request.get("TimeStamp", ""))
    try:
        when = datetime.fromisoformat(ts.replace("Z", "+00:00"))
        other = when.strftime("%d/%m/%Y %H:%M:%S")
    except ValueError:
        other = ts[::-1].upper()
    return {**body, "TimeStamp": other}


def _other_version(ep: Endpoint, body: Body, request: Mapping[str, Any]) -> Body:
    if "Version" in body and _half(request):
        return {**body, "Version": DRIFTED_VERSION}
    return body


def _numbers_as_strings(ep: Endpoint, body: Body, request: Mapping[str, Any]) -> Body:
    if ep.kind is Kind.CLASSIFIER and isinstance(body.get("Classification"), dict):
        cls = body["Classification"]
        return {**body, "Classification": {**cls, "confidence": str(cls.get("confidence"))}}
    if ep.kind is Kind.TLE and "estimate_length" in body:
        return {**body, "estimate_length": str(body["estimate_length"])}
    return body


def _optional_absent(ep: Endpoint, body: Body, request: Mapping[str, Any]) -> Body:
    if not _half(request):
        return body
    drop = {"PatientID", "TimeStamp", "ImageName", "OutputImageUrl"}
    return {k: v for k, v in body.items() if k not in drop}


def _reverse(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _reverse(value[k]) for k in reversed(list(value))}
    if isinstance(value, list):
        return [_reverse(v) for v in value]
    return value


def _keys_reordered(ep: Endpoint, body: Body, request: Mapping[str, Any]) -> Body:
    return _reverse(body)


#: Scenario name → function(endpoint, body, request) → drifted body.
SCENARIOS: Mapping[str, Callable[[Endpoint, Body, Mapping[str, Any]], Body]] = {
    "extra_fields": _extra_fields,
    "new_labels": _new_labels,
    "other_wordings": _other_wordings,
    "timestamp_format": _timestamp_format,
    "other_version": _other_version,
    "numbers_as_strings": _numbers_as_strings,
    "optional_absent": _optional_absent,
    "keys_reordered": _keys_reordered,
}


def check_scenarios(names: Iterable[str] | str | None) -> tuple[str, ...]:
    """Validate scenario names (``"all"`` selects every one); return them as a tuple."""
    if names is None:
        return ()
    if isinstance(names, str):
        names = [n for n in names.split(",") if n]
    names = tuple(names)
    if "all" in names:
        return tuple(SCENARIOS)
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        raise ValueError(
            f"unknown drift scenario(s) {unknown}; scenarios: {', '.join(SCENARIOS)} or all"
        )
    return names


def apply_drift(
    scenarios: Iterable[str], endpoint: Endpoint, body: Body, request: Mapping[str, Any]
) -> Body:
    """Apply ``scenarios`` (in :data:`SCENARIOS` order) to one answer body."""
    chosen = set(scenarios)
    for name, fn in SCENARIOS.items():
        if name in chosen:
            body = fn(endpoint, body, request)
    return body
