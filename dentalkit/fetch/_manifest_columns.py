"""The columns of a manifest: which exist, and what is wrong with the manifest as a whole.

A manifest that has no rows, lacks a required column, or has a column that looks like a
misspelled manifest column (``draw_contour``, ``mm_per_pixel``, ``Patient ID``) cannot be
planned as the user meant it: :func:`check_columns` raises a
:class:`~dentalkit.errors.ManifestError` that lists the columns found and the closest
expected names (compared without case, spaces or punctuation, then by
:func:`difflib.get_close_matches`). Columns that resemble nothing are only warned about
(:func:`warn_ignored_columns`): a study keeps its own columns (``group``, ``notes``) in the
manifest.
"""

from __future__ import annotations

import difflib
import re
import warnings
from collections.abc import Iterable
from typing import Any

import pandas as pd

from dentalkit.endpoints import ENDPOINTS, TLE_PARAMETERS
from dentalkit.errors import DentalkitWarning, ManifestError, problems_frame
from dentalkit.fetch._manifest_file import clean_text, show_cell

__all__ = [
    "CALIBRATION_COLUMNS",
    "KEY_COLUMNS",
    "OPTION_NAMES",
    "TLE_COLUMNS",
    "check_columns",
    "check_image_column",
    "warn_ignored_columns",
]

#: The key columns of every image row.
KEY_COLUMNS = ("patient_id", "timestamp", "image_url")
#: Columns of per-image calibration: read, never sent, kept in ``calibration.parquet``.
CALIBRATION_COLUMNS = ("mm_per_px", "calibration_source")
#: The query columns of ``/tle`` rows.
TLE_COLUMNS = tuple(q.name for q in TLE_PARAMETERS)
#: Option column (Python or wire spelling) → wire name, over all endpoints.
OPTION_NAMES: dict[str, str] = {}
for _e in ENDPOINTS.values():
    for _f in _e.optional_fields:
        OPTION_NAMES[_f.param] = _f.name
        OPTION_NAMES[_f.name] = _f.name
#: Every column name a manifest may have.
KNOWN = frozenset({"endpoint", *KEY_COLUMNS, *CALIBRATION_COLUMNS, *TLE_COLUMNS, *OPTION_NAMES})
#: Columns a column that is not one of them may be a misspelling of (not the key columns:
#: a missing key column is its own error, with these suggestions).
_OPTIONAL = ("endpoint", *CALIBRATION_COLUMNS, *TLE_COLUMNS, *OPTION_NAMES)
#: Other names of the key columns (compared normalised), named when the column is missing.
_SYNONYMS = {
    "patient": "patient_id",
    "subject": "patient_id",
    "id": "patient_id",
    "date": "timestamp",
    "datetime": "timestamp",
    "time": "timestamp",
    "session": "timestamp",
    "visit": "timestamp",
    "url": "image_url",
    "image": "image_url",
    "imagename": "image_url",
    "imagepath": "image_url",
    "path": "image_url",
    "file": "image_url",
    "filename": "image_url",
}
_CUTOFF = 0.8  # difflib ratio of two normalised names that counts as a misspelling
_DATA_LIKE = re.compile(r"(?i)^(https?://|[a-z]:[\\/]|/)|^\d{4}-\d{2}")


def _norm(name: Any) -> str:
    """A column name without case, spaces or punctuation: ``Patient ID`` → ``patientid``."""
    return re.sub(r"[^0-9a-z]", "", str(name).lower())


def closest(wanted: str, found: Iterable[Any]) -> list[str]:
    """Columns of ``found`` that are probably meant as ``wanted``, best first."""
    by_norm: dict[str, list[str]] = {}
    for col in found:
        by_norm.setdefault(_norm(col), []).append(str(col))
    target = _norm(wanted)
    same = [c for n, cols in by_norm.items() for c in cols if n == target]
    named = [c for n, cols in by_norm.items() for c in cols if _SYNONYMS.get(n) == wanted]
    near = difflib.get_close_matches(target, [n for n in by_norm if n], n=3, cutoff=_CUTOFF)
    hits = same + named + [c for n in near for c in by_norm[n]]
    return list(dict.fromkeys(hits))


def _meant(column: Any) -> str | None:
    """The optional manifest column that ``column`` (not one itself) is probably meant as."""
    norm = _norm(column)
    same = [c for c in _OPTIONAL if _norm(c) == norm]
    if same:
        return same[0]
    near = difflib.get_close_matches(norm, [_norm(c) for c in _OPTIONAL], n=1, cutoff=_CUTOFF)
    return next(c for c in _OPTIONAL if _norm(c) == near[0]) if near else None


def _listed(columns: list[Any]) -> str:
    shown = ", ".join(repr(show_cell(str(c))) for c in columns[:20])
    return shown + (f" … ({len(columns)} columns)" if len(columns) > 20 else "") or "none"


def _error(rows: list[tuple[str | None, str]]) -> ManifestError:
    return ManifestError(
        pd.DataFrame(
            [
                {"table": "manifest", "row": None, "field": f, "value": None, "reason": r}
                for f, r in rows
            ]
        )
    )


def check_columns(manifest: pd.DataFrame, endpoints: Any) -> None:
    """Raise :class:`ManifestError` when no row can be planned as the user meant it.

    That is: a column name that is not text UTF-8 can encode; no rows; ``patient_id`` or
    ``timestamp`` missing; the endpoints given both by an ``endpoint`` column and
    ``endpoints=`` (or by neither); a column that looks like a misspelled optional column
    (an option, ``mm_per_px``, ``p01`` …) while that column is absent. Every such problem is
    listed, with the columns found and the closest expected names.
    """
    names = list(manifest.columns)
    _check_names(names)
    found = [c for c in names if not str(c).startswith("_")]
    columns = set(names)
    problems: list[tuple[str | None, str]] = []
    has_ep_col = "endpoint" in columns
    if has_ep_col and endpoints is not None:
        problems.append(
            (
                "endpoint",
                "both an endpoint column and an endpoint for every row (--endpoint, or "
                "endpoints in Python) were given; use one",
            )
        )
    if not has_ep_col and endpoints is None:
        problems.append(
            (
                "endpoint",
                "no endpoint column and no endpoint for every row: add an endpoint column or "
                "give one (--endpoint, or endpoints in Python)" + _did_you_mean("endpoint", found),
            )
        )
    for col in ("patient_id", "timestamp"):
        if col not in columns:
            problems.append((col, _missing(col, found)))
    wires = {OPTION_NAMES[c] for c in columns if c in OPTION_NAMES}
    for col in found:
        meant = None if col in KNOWN else _meant(col)
        if meant in OPTION_NAMES and OPTION_NAMES[meant] in wires:
            continue  # the option is given under its other spelling
        if meant is not None and meant not in columns and meant != "endpoint":
            problems.append(
                (
                    show_cell(str(col)),
                    f"not a manifest column; did you mean {meant}? Rename it (a misspelled "
                    "column would be ignored: requests sent without it) — the manifest's "
                    "columns are listed in docs/manifest.md",
                )
            )
    if not problems and not len(manifest):
        problems.append(
            (
                None,
                f"the manifest has a header ({_listed(found)}) but no rows: add one row per "
                "image (docs/manifest.md); nothing to fetch",
            )
        )
    if problems:
        raise _error(problems)


def _did_you_mean(wanted: str, found: list[Any]) -> str:
    near = closest(wanted, found)
    return f"; did you mean {', '.join(map(repr, near))}? Rename it {wanted}" if near else ""


def _missing(col: str, found: list[Any]) -> str:
    """Why a required column is missing, with the columns found and the closest ones."""
    text = f"missing column; the manifest's columns are {_listed(found)}"
    text += _did_you_mean(col, found)
    if any(_DATA_LIKE.search(str(c)) for c in found):
        text += (
            " — the first line looks like data: a manifest's first line names its columns "
            "(patient_id,timestamp,image_url …)"
        )
    return text


def check_image_column(rows: pd.DataFrame, columns: set[Any]) -> None:
    """Raise :class:`ManifestError` when rows go to an image endpoint and there is no
    ``image_url`` column (every one of them would miss its image)."""
    if "image_url" in columns:
        return
    images = rows["_ep_name"].map(lambda n: n is not None and ENDPOINTS[n].is_image)
    if images.any():
        first = int(rows.loc[images.to_numpy(bool), "_row"].iloc[0])
        found = [c for c in columns if not str(c).startswith("_")]
        raise _error(
            [
                (
                    "image_url",
                    f"{_missing('image_url', sorted(found, key=str))}; manifest row {first} "
                    "(and every row for an endpoint that analyses an image) needs the image's "
                    "full http(s) URL",
                )
            ]
        )


def warn_ignored_columns(columns: set[Any]) -> None:
    """Warn (:class:`DentalkitWarning`) about columns no phase reads, naming the option columns.

    The warning points at the caller of :func:`dentalkit.fetch_cohort` (or of whatever
    called :func:`~dentalkit.fetch._manifest.plan_requests`).
    """
    ignored = sorted(str(c) for c in columns - KNOWN if not str(c).startswith("_"))
    if ignored:
        warnings.warn(
            "manifest columns ignored (not a key, endpoint, option or calibration column): "
            f"{', '.join(ignored)}; the option columns are "
            f"{', '.join(sorted(set(OPTION_NAMES)))} (docs/manifest.md)",
            DentalkitWarning,
            stacklevel=4,
        )


def _check_names(names: list[Any]) -> None:
    """Raise :class:`ManifestError` (a problems row per name) for column names that UTF-8
    cannot encode (lone surrogates): they could be neither matched nor reported as text."""
    bad = [k for k in names if isinstance(k, str) and not clean_text(k)]
    if bad:
        raise ManifestError(
            problems_frame(
                pd.DataFrame(
                    {
                        "table": "manifest",
                        "row": None,
                        "field": [show_cell(k) for k in bad],
                        "value": [show_cell(k) for k in bad],
                        "reason": "column name is not valid Unicode text (lone surrogate)",
                        "severity": "error",
                    }
                )
            )
        )
