"""Files → image rows, by a file-name pattern or a mapping CSV (private; pure but for reading
the mapping file).

An image row says which file it is (``file``, relative to the source), whose and which
session it is (``patient_id``, ``date``) and where it goes (``kind`` → endpoints, or an
``endpoint``); a mapping may add ``mm_per_px`` and ``calibration_source``. A file that no
row takes is a problem row: nothing is dropped without a word.
"""

from __future__ import annotations

import difflib
import fnmatch
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from dentalkit.endpoints import ENDPOINTS, get_endpoint
from dentalkit.errors import InputError
from dentalkit.images._pattern import compile_pattern, parse_date

__all__ = ["MAPPING_COLUMNS", "Problems", "drop_ignored", "from_mapping", "from_pattern"]

#: Columns a mapping CSV may have (``file`` is required).
MAPPING_COLUMNS = (
    "file",
    "patient_id",
    "date",
    "timestamp",
    "kind",
    "endpoint",
    "mm_per_px",
    "calibration_source",
)
ROW_COLUMNS = (
    "file",
    "mapping_row",
    "patient_id",
    "date",
    "kind",
    "endpoint",
    "mm_per_px",
    "calibration_source",
)


class Problems:
    """Problem records of one build, as plain dicts (conformed to PROBLEM_SCHEMA at the end)."""

    def __init__(self) -> None:
        self.records: list[dict[str, Any]] = []

    def add(self, reason: str, *, severity: str = "error", **where: Any) -> None:
        """One problem: ``where`` holds table, row, path, field, value, patient_id …"""
        self.records.append({"table": "images", "severity": severity, "reason": reason, **where})

    def file(self, rel: str, reason: str, *, mapping_row: Any = None, **more: Any) -> None:
        """A problem of one file (``path`` is the file; ``row`` its mapping row, if any)."""
        row = None if mapping_row is None or pd.isna(mapping_row) else int(mapping_row)
        table = "mapping" if row is not None else "images"
        self.add(reason, table=table, row=row, path=rel, **more)


def drop_ignored(files: list[str], ignore: Sequence[str]) -> tuple[list[str], int]:
    """The files that no ``ignore`` glob matches (on the path or the file name), and how
    many were ignored."""
    if isinstance(ignore, str):
        ignore = [ignore]
    if not ignore:
        return files, 0
    kept = [
        f
        for f in files
        if not any(fnmatch.fnmatchcase(f, g) or fnmatchcase_name(f, g) for g in ignore)
    ]
    return kept, len(files) - len(kept)


def fnmatchcase_name(path: str, glob: str) -> bool:
    return "/" not in glob and fnmatch.fnmatchcase(path.rsplit("/", 1)[-1], glob)


def _endpoint_name(text: str) -> str | None:
    try:
        ep = get_endpoint(text.strip())
    except KeyError:
        return None
    return ep.name if ep.is_image else None


def from_pattern(
    files: list[str],
    pattern: str,
    *,
    kinds: dict[str, tuple[str, ...]],
    date_format: str | None,
    problems: Problems,
) -> pd.DataFrame:
    """Image rows of the files that match ``pattern``; a problem row for each other file."""
    names = [*ENDPOINTS, *(e.slug for e in ENDPOINTS.values())]
    compiled = compile_pattern(pattern, kinds=kinds, endpoints=names, date_format=date_format)
    records = []
    for rel in files:
        m = compiled.strict.fullmatch(rel)
        fields = m.groupdict() if m else None
        if fields is None:
            problems.file(rel, _why_not(rel, compiled, kinds, date_format), field="file", value=rel)
            continue
        date = fields.get("date")
        if date is not None:
            iso = parse_date(date, date_format)
            if iso is None:
                problems.file(rel, _bad_date(date_format), field="date", value=date)
                continue
            date = iso
        endpoint = fields.get("endpoint")
        records.append(
            {
                "file": rel,
                "patient_id": fields.get("patient_id"),
                "date": date,
                "kind": fields.get("kind"),
                "endpoint": _endpoint_name(endpoint) if endpoint else None,
            }
        )
    return _rows(records)


def _rows(records: list[dict[str, Any]]) -> pd.DataFrame:
    frame = pd.DataFrame.from_records(records, columns=list(ROW_COLUMNS))
    return frame.astype(object).where(frame.notna(), None)


def _bad_date(date_format: str | None) -> str:
    if date_format is None:
        return (
            "not a date in ISO form (YYYY-MM-DD or YYYYMMDD); for another form give "
            "date_format (--date-format), e.g. %d.%m.%Y"
        )
    return f"not a date in the form date_format={date_format!r}"


def _why_not(rel: str, compiled: Any, kinds: dict[str, Any], date_format: str | None) -> str:
    """Why ``rel`` does not match: an unknown kind or endpoint, a bad date, or its shape."""
    loose = compiled.loose.fullmatch(rel)
    if loose is not None:
        fields = loose.groupdict()
        kind = fields.get("kind")
        if kind is not None and kind not in kinds:
            close = difflib.get_close_matches(kind, list(kinds), n=3)
            hint = f" (closest: {', '.join(close)})" if close else ""
            return (
                f"unknown kind {kind!r}{hint}; declare it with kinds={{{kind!r}: ENDPOINT}} "
                f"(--kind {kind}=ENDPOINT) or see docs/images.md for the known kinds"
            )
        endpoint = fields.get("endpoint")
        if endpoint is not None and _endpoint_name(endpoint) is None:
            return f"{endpoint!r} is not an image endpoint of the registry"
        date = fields.get("date")
        if date is not None and parse_date(date, date_format) is None:
            return f"{{date}} = {date!r} is " + _bad_date(date_format)
    depth = rel.count("/")
    if depth != compiled.depth and "**" not in compiled.text:
        return (
            f"does not match the pattern {compiled.text!r}: the file is {depth} folder(s) "
            f"deep, the pattern {compiled.depth}"
        )
    return f"does not match the pattern {compiled.text!r}"


def read_mapping(mapping: str | os.PathLike | pd.DataFrame) -> pd.DataFrame:
    """The mapping as text cells; raise for an empty file or unknown columns."""
    if isinstance(mapping, pd.DataFrame):
        frame = mapping.reset_index(drop=True).astype(object)
        frame = frame.where(frame.notna(), "").astype(str)
    else:
        path = Path(mapping)
        if not path.is_file():
            raise InputError(f"mapping {path} does not exist")
        try:
            frame = pd.read_csv(path, dtype=str, keep_default_na=False, sep=None, engine="python")
        except (pd.errors.EmptyDataError, pd.errors.ParserError) as exc:
            raise InputError(f"mapping {path} cannot be read as CSV: {exc}") from None
    unknown = [c for c in frame.columns if c not in MAPPING_COLUMNS]
    if unknown or "file" not in frame.columns:
        hints = [
            f"{c!r} (did you mean {', '.join(repr(m) for m in difflib.get_close_matches(str(c), MAPPING_COLUMNS, n=2))}?)"
            if difflib.get_close_matches(str(c), MAPPING_COLUMNS, n=1)
            else repr(c)
            for c in unknown
        ]
        raise InputError(
            f"mapping columns found: {', '.join(map(str, frame.columns)) or 'none'}; "
            + (f"unknown: {', '.join(hints)}; " if unknown else "")
            + f"a mapping has 'file' and any of {', '.join(MAPPING_COLUMNS[1:])}"
        )
    if not len(frame):
        raise InputError("the mapping has no rows: give one row per image file")
    return frame


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value if math.isfinite(value) and value > 0 else None


def from_mapping(
    files: list[str],
    mapping: str | os.PathLike | pd.DataFrame,
    *,
    kinds: dict[str, tuple[str, ...]],
    date_format: str | None,
    problems: Problems,
) -> pd.DataFrame:
    """Image rows of the mapping's files; a problem row for a bad mapping row, for a
    mapped file that is not in the source and for a file the mapping does not name."""
    frame = read_mapping(mapping)
    present = set(files)
    named: set[str] = set()
    records = []
    for i, cells in enumerate(frame.to_dict("records"), start=1):
        rel = cells["file"].strip().replace("\\", "/").removeprefix("./")
        row = _mapping_row(rel, i, cells, present, named, kinds, date_format, problems)
        named.add(rel)
        if row is not None:
            records.append(row)
    for rel in files:
        if rel not in named:
            problems.file(
                rel, "not in the mapping: add a row for it, or --ignore it", field="file", value=rel
            )
    return _rows(records)


def _mapping_row(
    rel: str,
    i: int,
    cells: dict[str, str],
    present: set[str],
    named: set[str],
    kinds: dict[str, tuple[str, ...]],
    date_format: str | None,
    problems: Problems,
) -> dict[str, Any] | None:
    """The image row of mapping row ``i`` (1-based), or None after recording its problem."""

    def bad(field: str, value: Any, reason: str) -> None:
        problems.file(rel, reason, mapping_row=i, field=field, value=value)

    if not rel:
        bad("file", None, "missing file")
        return None
    if rel in named:
        bad("file", rel, "the file is named by an earlier mapping row")
        return None
    if rel not in present:
        bad("file", rel, "no such file under the source")
        return None
    date_text = (cells.get("date") or cells.get("timestamp") or "").strip()
    date = parse_date(date_text, date_format) if date_text else None
    if date_text and date is None:
        bad("date" if cells.get("date") else "timestamp", date_text, _bad_date(date_format))
        return None
    kind = (cells.get("kind") or "").strip() or None
    if kind is not None and kind not in kinds:
        bad("kind", kind, f"unknown kind; known kinds: {', '.join(sorted(kinds))}")
        return None
    endpoint_text = (cells.get("endpoint") or "").strip()
    endpoint = _endpoint_name(endpoint_text) if endpoint_text else None
    if endpoint_text and endpoint is None:
        bad("endpoint", endpoint_text, "not an image endpoint of the registry")
        return None
    mm_text = (cells.get("mm_per_px") or "").strip()
    mm = _number(mm_text) if mm_text else None
    if mm_text and mm is None:
        bad("mm_per_px", mm_text, "not a positive number of millimetres per pixel")
        return None
    source = (cells.get("calibration_source") or "").strip() or None
    return {
        "file": rel,
        "mapping_row": i,
        "patient_id": (cells.get("patient_id") or "").strip() or None,
        "date": date,
        "kind": kind,
        "endpoint": endpoint,
        "mm_per_px": mm,
        "calibration_source": (source or "manifest") if mm is not None else None,
    }
