"""The contract report: what a service actually sent, against what the registry expects.

The specification leaves much unsaid (label sets, wordings, formats, versions), and a real
service may change. :func:`contract_report` reads any responses table (sandbox or real,
:func:`dentalkit.fetch.store.read_responses`) and summarises, **per endpoint**:

* ``responses`` — how many responses, of how many patients;
* ``version`` — each ``Version`` value seen (or its absence) against the registry
  (:mod:`dentalkit.endpoints`), and ``versions_pooled`` when one endpoint answered with
  several;
* ``missing_field`` / ``extra_field`` / ``type_change`` — fields of the response and of its
  records (``Results.*.x_coordinate`` …) that the registry expects but were absent, that it
  does not know, or whose JSON type differs (a number sent as a string);
* ``unknown_label`` — landmark keys outside the landmark map, tooth keys outside the tooth-key
  grammar (``{i1|i2|c|p1|p2|m1|m2|m3}_{rgt|lft}_{up|lo}``), keypoint and catenary keys that
  are not ``centroid``/``tNN``, class names and categories outside
  ``dentalkit/data/known_labels.csv`` (the spec's and the sandbox's documented labels);
* ``landmark_count`` — ``NumberOfPredictedPoints`` or the number of landmarks differing from
  the registry's 169 / 118;
* ``tmj_sentence`` — TMJ sentences that the phrases (:func:`dentalkit.convert.has_finding`)
  recognise neither as "no finding" nor as a finding;
* ``timestamp_format`` — the shape of each echoed ``TimeStamp`` (digits as ``9``,
  ``2024-03-05T10:00:00Z`` → ``9999-99-99T99:99:99Z``) against the request's;
* ``output_link_host`` / ``output_link_lifetime`` — hosts of ``OutputImageUrl`` and, when the
  link states its expiry (``expires``, ``Expires``, ``X-Amz-Date`` + ``X-Amz-Expires``,
  ``se``, ``exp``), its lifetime from the time of fetch, against the spec's 72 hours;
* ``malformed_body`` — bodies that are not a JSON object.

Each row has a ``verdict``: ``ok`` (as the registry expects), ``drift`` (differs from the
registry or the spec; the converters handle it as documented, and the difference is
listed here so that it is never silent) or ``info`` (the spec is silent: a summary). The
patient is the unit: ``n_patients`` counts distinct patients beside ``n_responses``.

The function is pure; :func:`write_contract` writes ``contract.md`` and
``contract.parquet``; ``dentalkit contract STORE --out DIR`` does both from the command line.
"""

from __future__ import annotations

import csv
import io
import math
import os
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import numpy as np
import orjson
import pandas as pd

from dentalkit.convert.schemas import FDI_TOOTH_TYPES
from dentalkit.endpoints import ENDPOINTS, Endpoint, Kind, get_endpoint
from dentalkit.errors import InputError
from dentalkit.fetch._http import link_expiry

__all__ = [
    "ASPECTS",
    "CONTRACT_COLUMNS",
    "contract_markdown",
    "contract_report",
    "contract_report_in_parts",
    "timestamp_shape",
    "write_contract",
]

#: Columns of :func:`contract_report`.
CONTRACT_COLUMNS = (
    "endpoint",
    "aspect",
    "item",
    "expected",
    "seen",
    "verdict",
    "n_responses",
    "n_patients",
    "example",
)
#: The aspects, in report order.
ASPECTS = (
    "responses",
    "version",
    "versions_pooled",
    "missing_field",
    "extra_field",
    "type_change",
    "unknown_label",
    "landmark_count",
    "tmj_sentence",
    "timestamp_format",
    "output_link_host",
    "output_link_lifetime",
    "malformed_body",
)
#: Validity of ``OutputImageUrl`` stated by the spec ("Limits"), hours.
LINK_HOURS = 72.0
#: Top-level JSON types of the registry's response fields.
FIELD_TYPES: Mapping[str, str] = {
    "Version": "string",
    "PatientID": "string",
    "TimeStamp": "string",
    "ImageName": "string",
    "OutputImageUrl": "string",
    "Results": "object",
    "ImageContents": "object",
    "NumberOfPredictedPoints": "integer",
    "Teeth": "object",
    "CatenaryPoints": "object",
    "Classification": "object",
    "app": "string",
    "estimate_length": "number",
}
_TOOTH_KEY = re.compile(
    r"(?:" + "|".join(map(re.escape, FDI_TOOTH_TYPES)) + r")_(?:rgt|lft)_(?:up|lo)"
)
_POINT_KEY = re.compile(r"t\d{2}")


def json_type(value: Any) -> str:
    """JSON type name of a parsed value: string, integer, number, boolean, object, array, null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def _type_ok(expected: str, seen: str) -> bool:
    return seen == expected or (expected == "number" and seen == "integer")


def timestamp_shape(value: str) -> str:
    """The shape of a timestamp string: every digit becomes ``9``, letters are kept.

    >>> timestamp_shape("2024-03-05T10:00:00Z"), timestamp_shape("05/03/2024 10:00")
    ('9999-99-99T99:99:99Z', '99/99/9999 99:99')
    """
    return re.sub(r"\d", "9", value)


@lru_cache(maxsize=1)
def _known_labels() -> dict[str, frozenset[str]]:
    text = resources.files("dentalkit.data").joinpath("known_labels.csv").read_text("utf-8")
    out: dict[str, set[str]] = {}
    for rec in csv.DictReader(io.StringIO(text)):
        out.setdefault(rec["kind"], set()).add(rec["label"])
    return {k: frozenset(v) for k, v in out.items()}


def _landmark_keys(landmark_map: Any) -> dict[str, frozenset[str]]:
    from dentalkit.landmark_map import load_landmark_map

    table = load_landmark_map(path=landmark_map) if landmark_map is not None else None
    if table is None:
        table = load_landmark_map()
    return {
        str(view): frozenset(group["key"].astype(str))
        for view, group in table.groupby("view", sort=False)
    }


@dataclass
class _Cell:
    n: int = 0
    patients: set = field(default_factory=set)
    example: str | None = None


class _Collector:
    """Counts per (endpoint, aspect, item, expected, seen, verdict)."""

    def __init__(self) -> None:
        self.cells: dict[tuple[str, str, str, str, str, str], _Cell] = {}

    def add(
        self,
        ep: str,
        aspect: str,
        item: str,
        verdict: str,
        who: tuple[str | None, str | None],
        *,
        expected: str = "",
        seen: str = "",
    ) -> None:
        cell = self.cells.setdefault((ep, aspect, item, expected, seen, verdict), _Cell())
        cell.n += 1
        if who[0] is not None:
            cell.patients.add(who[0])
        if cell.example is None and who[0] is not None:
            cell.example = f"{who[0]} @ {who[1]}"

    def frame(self, per_endpoint: Mapping[str, tuple[int, int]]) -> pd.DataFrame:
        order = {a: i for i, a in enumerate(ASPECTS)}
        ep_order = {name: i for i, name in enumerate(ENDPOINTS)}
        rows = [
            (ep, "responses", "responses", "", "", "info", n, p, None)
            for ep, (n, p) in per_endpoint.items()
        ]
        rows += [
            (ep, aspect, item, expected, seen, verdict, c.n, len(c.patients), c.example)
            for (ep, aspect, item, expected, seen, verdict), c in self.cells.items()
        ]
        rows.sort(key=lambda r: (ep_order.get(r[0], 99), order[r[1]], r[5] == "ok", -r[6], r[2]))
        df = pd.DataFrame(rows, columns=list(CONTRACT_COLUMNS))
        text = [c for c in CONTRACT_COLUMNS if c not in ("n_responses", "n_patients")]
        return df.astype(
            {**dict.fromkeys(text, "str"), "n_responses": "int64", "n_patients": "int64"}
        )


def contract_report(
    responses: pd.DataFrame,
    *,
    landmark_map: str | os.PathLike[str] | pd.DataFrame | None = None,
    tmj_phrases: Any = None,
) -> pd.DataFrame:
    """Summarise what the service sent against the registry, per endpoint (pure).

    Parameters
    ----------
    responses : pandas.DataFrame
        A responses table (:func:`dentalkit.fetch.store.read_responses`): ``endpoint``,
        ``patient_id``, ``timestamp``, ``body`` and optionally ``status_code``, ``error``,
        ``fetched_at``. Rows with an error or a status other than 200 are skipped.
    landmark_map : path or DataFrame, optional
        Landmark map whose keys count as known (default: the shipped map).
    tmj_phrases : path or list of paths, optional
        Extra TMJ phrases files (see :func:`dentalkit.convert.has_finding`).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`CONTRACT_COLUMNS`: ``endpoint`` (registry name), ``aspect`` (one of
        :data:`ASPECTS`), ``item`` (the field, label, version, sentence, shape or host),
        ``expected`` (what the registry or spec says), ``seen``, ``verdict``
        (``ok``/``drift``/``info``), ``n_responses``, ``n_patients`` (distinct patients:
        the unit) and ``example`` (``patient @ timestamp`` of the first response
        concerned). One ``responses`` row per endpoint present, first.

    Raises
    ------
    InputError
        ``responses`` lacks a required column.

    Notes
    -----
    The registry (:mod:`dentalkit.endpoints`) holds the field set of each response; the
    record fields (``x_coordinate`` …) and JSON types come from the spec's tables. Label
    sets the spec does not show are compared with ``dentalkit/data/known_labels.csv`` and
    the landmark map; a label outside them is a ``drift`` row, never an error.
    """
    scan = _Scan(landmark_map, tmj_phrases)
    scan.feed(responses)
    return scan.frame()


def contract_report_in_parts(
    parts: Iterable[pd.DataFrame],
    *,
    landmark_map: str | os.PathLike[str] | pd.DataFrame | None = None,
    tmj_phrases: Any = None,
) -> pd.DataFrame:
    """:func:`contract_report` of a responses table that comes in pieces (pure).

    For a study too large to hold every body at once: each piece (e.g. from
    :func:`dentalkit.fetch.read_responses_in_parts`) is read and dropped before the next,
    so memory holds one piece and the counts. The result equals
    ``contract_report(pandas.concat(parts))``: the counts, the patients and the first
    example of each row are those of the whole table, given its pieces in order.

    Parameters
    ----------
    parts : iterable of pandas.DataFrame
        Consecutive pieces of one responses table (each with the columns
        :func:`contract_report` needs).
    landmark_map, tmj_phrases
        As for :func:`contract_report`.

    Returns
    -------
    pandas.DataFrame
        As :func:`contract_report`.

    Raises
    ------
    InputError
        A piece is not a DataFrame or lacks a required column.
    """
    scan = _Scan(landmark_map, tmj_phrases)
    for part in parts:
        scan.feed(part)
    return scan.frame()


def _check_responses(responses: object) -> None:
    if not isinstance(responses, pd.DataFrame):
        raise InputError(f"responses must be a pandas DataFrame, got {type(responses).__name__}")
    missing = [c for c in ("endpoint", "patient_id", "timestamp", "body") if c not in responses]
    if missing:
        raise InputError(
            f"responses lacks column(s) {missing}; give dentalkit.fetch.store.read_responses(out)"
        )


class _Scan:
    """The contract report's counts, fed one responses table (or piece of one) at a time."""

    def __init__(self, landmark_map: Any = None, tmj_phrases: Any = None) -> None:
        from dentalkit.convert._tmj import load_phrases

        self.phrases = load_phrases(tmj_phrases)
        self.labels = _known_labels()
        self.lm_keys = _landmark_keys(landmark_map)
        self.out = _Collector()
        self.per_endpoint: dict[str, tuple[int, set]] = {}
        # endpoint → Version → who answered
        self.versions: dict[str, dict[str, list[tuple]]] = {}
        self.lifetimes: dict[str, list[tuple[float, tuple]]] = {}
        self.sentences: dict[str, dict[str, list]] = {}

    def feed(self, responses: pd.DataFrame) -> None:
        """Count the rows of ``responses`` (the next piece of the table, in order)."""
        _check_responses(responses)
        out, per_endpoint = self.out, self.per_endpoint
        versions, lifetimes, sentences = self.versions, self.lifetimes, self.sentences
        labels, lm_keys = self.labels, self.lm_keys
        ok = np.ones(len(responses), dtype=bool)
        if "status_code" in responses:
            status = pd.to_numeric(responses["status_code"], errors="coerce")
            ok &= (status.isna() | (status == 200)).to_numpy()
        if "error" in responses:
            ok &= responses["error"].isna().to_numpy()
        fetched = (
            pd.to_datetime(responses["fetched_at"], utc=True, errors="coerce")
            if "fetched_at" in responses
            else pd.Series(pd.NaT, index=responses.index)
        )
        cols = zip(
            responses["endpoint"].astype("object"),
            responses["patient_id"].astype("object"),
            responses["timestamp"].astype("object"),
            responses["body"],
            fetched,
            ok,
            strict=True,
        )
        for name, pid, ts, raw, at, good in cols:
            if not good:
                continue
            try:
                ep = get_endpoint(name)
            except KeyError:
                ep_name = str(name)
                out.add(ep_name, "malformed_body", "unknown endpoint", "drift", (pid, ts))
                continue
            who = (None if pid is None or pid != pid else str(pid), None if ts != ts else ts)
            n, pats = per_endpoint.get(ep.name, (0, set()))
            if who[0] is not None:
                pats.add(who[0])
            per_endpoint[ep.name] = (n + 1, pats)
            try:
                body = orjson.loads(raw) if isinstance(raw, str | bytes) else raw
            except orjson.JSONDecodeError:
                out.add(ep.name, "malformed_body", "not JSON", "drift", who)
                continue
            if not isinstance(body, dict):
                out.add(ep.name, "malformed_body", f"a JSON {json_type(body)}", "drift", who)
                continue
            _fields(out, ep, body, who)
            version = body.get("Version")
            if ep.version is None:
                if "Version" in body:
                    out.add(
                        ep.name, "version", str(version), "drift", who, expected="no Version field"
                    )
            elif "Version" in body:
                out.add(ep.name, "version", str(version), "ok", who, expected="a Version string")
                versions.setdefault(ep.name, {}).setdefault(str(version), []).append(who)
            if ep.output_image and isinstance(body.get("OutputImageUrl"), str):
                host, hours = _link(body["OutputImageUrl"], at)
                out.add(ep.name, "output_link_host", host, "info", who)
                if hours is not None:
                    lifetimes.setdefault(ep.name, []).append((hours, who))
                else:
                    out.add(
                        ep.name,
                        "output_link_lifetime",
                        "not stated in the link",
                        "info",
                        who,
                        expected=f"{LINK_HOURS:g} h (spec)",
                    )
            echo = body.get("TimeStamp")
            if isinstance(echo, str) and isinstance(ts, str):
                shape, sent = timestamp_shape(echo), timestamp_shape(ts)
                verdict = "ok" if echo == ts else "drift"
                out.add(ep.name, "timestamp_format", shape, verdict, who, expected=sent)
            _labels(out, ep, body, who, labels, lm_keys)
            if ep.kind is Kind.TMJ:
                finding = (
                    (body.get("Results") or {}).get("Finding")
                    if isinstance(body.get("Results"), dict)
                    else None
                )
                if isinstance(finding, str):
                    sentences.setdefault(ep.name, {}).setdefault(finding, []).append(who)

    def frame(self) -> pd.DataFrame:
        """The report of everything fed (once: it adds the rows that need every response)."""
        from dentalkit.convert._tmj import classify

        out, per_endpoint, phrases = self.out, self.per_endpoint, self.phrases
        versions, lifetimes, sentences = self.versions, self.lifetimes, self.sentences
        # one row per endpoint that pooled several Versions, counting every response that
        # carried a Version and its patient (each pooled response, not the row itself)
        for ep_name, by_version in versions.items():
            if len(by_version) > 1:
                item = ", ".join(sorted(by_version))
                for whos in by_version.values():
                    for who in whos:
                        out.add(
                            ep_name,
                            "versions_pooled",
                            item,
                            "drift",
                            who,
                            expected="one Version per endpoint",
                            seen=f"{len(by_version)} versions",
                        )
        for ep_name, stated in lifetimes.items():
            arr = np.asarray([h for h, _ in stated])
            lo, med, hi = np.min(arr), np.median(arr), np.max(arr)
            verdict = "ok" if abs(med - LINK_HOURS) <= 1.0 else "drift"
            for _, who in stated:
                out.add(
                    ep_name,
                    "output_link_lifetime",
                    f"{med:.1f} h (median; {lo:.1f}–{hi:.1f})",
                    verdict,
                    who,
                    expected=f"{LINK_HOURS:g} h (spec)",
                )
        for ep_name, by_sentence in sentences.items():
            for sentence, whos in by_sentence.items():
                if classify(sentence, phrases) is None:
                    for who in whos:
                        out.add(
                            ep_name,
                            "tmj_sentence",
                            sentence,
                            "drift",
                            who,
                            expected="a recognised 'no finding' or finding wording",
                            seen="unrecognised: has_finding is NA",
                        )
        return out.frame({k: (n, len(p)) for k, (n, p) in per_endpoint.items()})


def _fields(out: _Collector, ep: Endpoint, body: dict, who: tuple) -> None:
    expected = ep.response_fields
    for f in expected:
        if f not in body:
            out.add(ep.name, "missing_field", f, "drift", who, expected="present (registry)")
    for f, v in body.items():
        if f not in expected:
            out.add(ep.name, "extra_field", f, "drift", who, expected="absent", seen=json_type(v))
            continue
        want, got = FIELD_TYPES.get(f), json_type(v)
        if want is not None and not _type_ok(want, got):
            out.add(ep.name, "type_change", f, "drift", who, expected=want, seen=got)
    for path, want, got in _record_types(ep, body):
        if want == "absent":
            out.add(ep.name, "extra_field", path, "drift", who, expected="absent", seen=got)
        elif got == "absent":
            out.add(ep.name, "missing_field", path, "drift", who, expected="present (spec)")
        else:
            out.add(ep.name, "type_change", path, "drift", who, expected=want, seen=got)


def _check_record(path: str, rec: Any, spec: Mapping[str, str], extra_ok: Any = None):
    """(path, expected, seen) for each difference of one record against ``spec``."""
    if not isinstance(rec, Mapping):
        yield path, "object", json_type(rec)
        return
    for k, want in spec.items():
        if k not in rec:
            yield f"{path}.{k}", want, "absent"
        else:
            got = json_type(rec[k])
            if not _type_ok(want, got):
                yield f"{path}.{k}", want, got
    for k, v in rec.items():
        if k not in spec and not (extra_ok and extra_ok(k)):
            yield f"{path}.{k}", "absent", json_type(v)


def _record_types(ep: Endpoint, body: dict) -> Iterable[tuple[str, str, str]]:
    """Differences of the records inside a body (first of each distinct path per body)."""
    seen: set[tuple[str, str, str]] = set()

    def once(items: Iterable[tuple[str, str, str]]) -> Iterable[tuple[str, str, str]]:
        for item in items:
            if item not in seen:
                seen.add(item)
                yield item

    results = body.get("Results")
    if ep.kind is Kind.LANDMARKS and isinstance(results, Mapping):
        spec = {"x_coordinate": "number", "y_coordinate": "number"}
        for rec in results.values():
            yield from once(_check_record("Results.*", rec, spec))
    elif ep.kind is Kind.SEGMENTATION and isinstance(results, Mapping):
        spec = {"missing": "boolean", "points": "array"}
        for rec in results.values():
            yield from once(_check_record("Results.*", rec, spec))
    elif ep.kind is Kind.FINDINGS and isinstance(results, Mapping):
        spec = {"ClassName": "string", "TopLeft": "array", "BottomRight": "array"}
        for dets in results.values():
            if not isinstance(dets, list):
                yield from once([("Results.*", "array", json_type(dets))])
                continue
            for rec in dets:
                yield from once(_check_record("Results.*[]", rec, spec))
        contents = body.get("ImageContents")
        if isinstance(contents, Mapping):
            for v in contents.values():
                if json_type(v) != "integer":
                    yield from once([("ImageContents.*", "integer", json_type(v))])
    elif ep.kind is Kind.KEYPOINTS:
        teeth = body.get("Teeth")
        if isinstance(teeth, Mapping):
            spec = {"missing": "boolean", "centroid": "array"}
            for rec in teeth.values():
                yield from once(_check_record("Teeth.*", rec, spec, extra_ok=_POINT_KEY.fullmatch))
    elif ep.kind is Kind.CLASSIFIER:
        cls = body.get("Classification")
        if cls is not None:
            spec = {"category": "string", "confidence": "number"}
            yield from once(_check_record("Classification", cls, spec))
    elif ep.kind is Kind.TMJ and results is not None:
        yield from once(_check_record("Results", results, {"Finding": "string"}))


def _labels(
    out: _Collector,
    ep: Endpoint,
    body: dict,
    who: tuple,
    labels: Mapping[str, frozenset[str]],
    lm_keys: Mapping[str, frozenset[str]],
) -> None:
    found: set[tuple[str, str]] = set()
    results = body.get("Results")
    if ep.kind is Kind.LANDMARKS and isinstance(results, Mapping):
        known = lm_keys.get(ep.view or "", frozenset())
        found |= {("landmark", k) for k in results if k not in known}
        n_sent = body.get("NumberOfPredictedPoints")
        if ep.n_landmarks is not None and (
            n_sent != ep.n_landmarks or len(results) != ep.n_landmarks
        ):
            out.add(
                ep.name,
                "landmark_count",
                f"NumberOfPredictedPoints {n_sent!r}, {len(results)} landmarks",
                "drift",
                who,
                expected=str(ep.n_landmarks),
            )
    elif ep.kind is Kind.SEGMENTATION and isinstance(results, Mapping):
        found |= {("tooth key", k) for k in results if not _TOOTH_KEY.fullmatch(str(k))}
    elif ep.kind is Kind.FINDINGS:
        known = labels.get("class_name", frozenset())
        names: set[str] = set()
        if isinstance(results, Mapping):
            names |= {str(k) for k in results}
            for dets in results.values():
                if isinstance(dets, list):
                    names |= {
                        d["ClassName"]
                        for d in dets
                        if isinstance(d, Mapping) and isinstance(d.get("ClassName"), str)
                    }
        if isinstance(body.get("ImageContents"), Mapping):
            names |= {str(k) for k in body["ImageContents"]}
        found |= {("class", n) for n in names if n not in known}
    elif ep.kind is Kind.KEYPOINTS:
        teeth = body.get("Teeth")
        if isinstance(teeth, Mapping):
            found |= {("tooth key", k) for k in teeth if not _TOOTH_KEY.fullmatch(str(k))}
        cat = body.get("CatenaryPoints")
        if isinstance(cat, Mapping):
            found |= {("catenary key", k) for k in cat if not _POINT_KEY.fullmatch(str(k))}
    elif ep.kind is Kind.CLASSIFIER:
        cls = body.get("Classification")
        category = cls.get("category") if isinstance(cls, Mapping) else None
        if isinstance(category, str) and category not in labels.get("category", frozenset()):
            found.add(("category", category))
    for what, label in sorted(found):
        out.add(
            ep.name,
            "unknown_label",
            f"{what} {label}",
            "drift",
            who,
            expected="a known label (landmark map, tooth-key grammar, known_labels.csv)",
        )


def _link(url: str, fetched_at: Any) -> tuple[str, float | None]:
    """Host of an output link and its lifetime in hours from ``fetched_at`` (if stated).

    The end is any the link states, signed or not
    (:func:`~dentalkit.fetch._http.link_expiry` with ``signed_only=False``).
    """
    try:
        parts = urlsplit(url)
    except ValueError:
        return "(not a URL)", None
    host = parts.hostname or "(no host)"
    if parts.port:
        host = f"{host}:{parts.port}"
    if fetched_at is None or pd.isna(fetched_at):
        return host, None
    expiry = link_expiry(url, signed_only=False)
    if expiry is None:
        return host, None
    issued = pd.Timestamp(fetched_at).to_pydatetime()
    hours = (expiry - issued).total_seconds() / 3600
    return host, hours if math.isfinite(hours) else None


def contract_markdown(report: pd.DataFrame, title: str = "Contract report") -> str:
    """The contract report as Markdown: a summary table, then the differences per endpoint.

    Parameters
    ----------
    report : pandas.DataFrame
        Output of :func:`contract_report`.
    title : str
        First-level heading.
    """
    lines = [f"# {title}", ""]
    lines += [
        "What the service sent, per endpoint, against dentalkit's endpoint registry "
        "(`dentalkit.endpoints`, from interface v2). `drift` rows differ from the registry "
        "or the spec and are handled as documented; none is silent. Patients are the unit "
        "(`n_patients`), responses beside them.",
        "",
    ]
    if report.empty:
        return "\n".join([*lines, "No responses.", ""])
    lines += [
        "| endpoint | responses | patients | Version(s) | differences (drift rows) |",
        "|---|---:|---:|---|---:|",
    ]
    for ep, group in report.groupby("endpoint", sort=False):
        base = group[group["aspect"] == "responses"]
        n = int(base["n_responses"].sum())
        p = int(base["n_patients"].sum())
        ver = group[group["aspect"] == "version"]
        versions = (
            ", ".join(f"{v} ({k})" for v, k in zip(ver["item"], ver["n_responses"], strict=True))
            or "—"
        )
        drift = int((group["verdict"] == "drift").sum())
        lines.append(f"| {ep} | {n} | {p} | {versions} | {drift} |")
    lines.append("")
    for ep, group in report.groupby("endpoint", sort=False):
        rest = group[group["aspect"] != "responses"]
        drift = rest[rest["verdict"] == "drift"]
        info = rest[
            (rest["verdict"] == "info")
            | rest["aspect"].isin(["timestamp_format", "output_link_lifetime"])
            & (rest["verdict"] == "ok")
        ]
        lines += [f"## {ep}", ""]
        if drift.empty:
            lines.append("As the registry expects.")
        else:
            lines += [
                "| aspect | item | expected | seen | responses | patients | example |",
                "|---|---|---|---|---:|---:|---|",
            ]
            for r in drift.itertuples(index=False):
                lines.append(
                    f"| {r.aspect} | {_md(r.item)} | {_md(r.expected)} | {_md(r.seen)} | "
                    f"{r.n_responses} | {r.n_patients} | {_md(r.example)} |"
                )
        if not info.empty:
            lines.append("")
            lines += [
                f"- {r.aspect}: {_md(r.item)} ({r.n_responses} responses"
                + (f"; expected {_md(r.expected)}" if r.expected and r.expected != "None" else "")
                + ")"
                for r in info.itertuples(index=False)
            ]
        lines.append("")
    return "\n".join(lines)


def _md(value: Any) -> str:
    text = "" if value is None or value == "None" or value != value else str(value)
    text = text.replace("|", "\\|").replace("\n", " ")
    return text if len(text) <= 120 else text[:119] + "…"


def write_contract(report: pd.DataFrame, folder: str | os.PathLike[str]) -> dict[str, Path]:
    """Write ``contract.md`` and ``contract.parquet`` into ``folder``; return their paths."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    md, pq = folder / "contract.md", folder / "contract.parquet"
    md.write_text(contract_markdown(report), encoding="utf-8")
    from dentalkit.io import write_parquet

    write_parquet(report, pq, name="contract")  # declared columns (docs/columns.md)
    return {"markdown": md, "parquet": pq}
