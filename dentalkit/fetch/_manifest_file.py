"""Reading a manifest file into a DataFrame, and what can be wrong with the file as a whole.

Every problem of the file as a whole is a :class:`~dentalkit.errors.ManifestError` with one
problems row whose ``row`` is null (it concerns no data row): an empty file, text that is not
UTF-8, a line with more cells than the header, a column named twice, a Parquet file that
cannot be read. The rules (``docs/manifest.md``):

* CSV files are read as text (no type guessing on patient ids or timestamps), UTF-8 with or
  without a byte-order mark;
* the separator is the one the header line uses: a comma, or a semicolon as spreadsheets
  write CSV where the decimal separator is a comma, or a tab (``.tsv``: always a tab); in a
  semicolon-separated file a calibration ``0,1`` is read as 0.1;
* spaces around a column name are dropped (``" patient_id"`` is ``patient_id``).
"""

from __future__ import annotations

import csv
import io
import logging
import os
import re
import reprlib
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from dentalkit.convert._values import printable
from dentalkit.errors import InputError, ManifestError

__all__ = ["SEPARATORS", "clean_text", "read_manifest", "show_cell", "whole_manifest_error"]

log = logging.getLogger("dentalkit")

#: Separators a CSV manifest may use, by the name the docs give them.
SEPARATORS: Mapping[str, str] = {",": "comma", ";": "semicolon", "\t": "tab"}
_DECIMAL_COMMA = re.compile(r"^\s*[+-]?\d*,\d+\s*$")
_NUMBER_COLUMNS = ("mm_per_px",)


_REPR = reprlib.Repr()  # keyword arguments need Python 3.12
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother, _REPR.maxlist, _REPR.maxdict = 3, 120, 120, 4, 4


def show_cell(v: Any) -> str | None:
    """A short, printable, UTF-8-safe rendering of a cell for a problems table: control
    characters escaped (``P\\x001``), lone surrogates escaped, cut to 120 characters."""
    if v is None:
        return None
    text = v[:200] if isinstance(v, str) else _REPR.repr(v)  # repr is safe for deep nesting
    text = text.encode("utf-8", "backslashreplace").decode("utf-8")  # lone surrogates
    return printable(text)


def clean_text(v: Any) -> bool:
    """True for a string that UTF-8 can encode (JSON bodies cannot carry lone surrogates)."""
    if not isinstance(v, str):
        return False
    try:
        v.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def whole_manifest_error(field: str | None, reason: str, value: Any = None) -> ManifestError:
    """A :class:`ManifestError` about the manifest as a whole (one problems row, no ``row``)."""
    return ManifestError(
        pd.DataFrame(
            [{"table": "manifest", "row": None, "field": field, "value": value, "reason": reason}]
        )
    )


def read_manifest(manifest: Any) -> pd.DataFrame:
    """Load a manifest from a DataFrame, a list of row dicts, or a ``.csv``/``.parquet`` path.

    CSV files are read as text (no type guessing on patient ids or timestamps); the
    separator (comma, semicolon or tab) is the one the header line uses.

    Raises
    ------
    ManifestError
        For a file that cannot be read as a manifest (empty, not UTF-8, ragged lines, a
        column named twice, an unreadable Parquet file), naming what is wrong.
    InputError
        For a path that does not exist or an object that is no manifest.
    """
    if isinstance(manifest, pd.DataFrame):
        return manifest.reset_index(drop=True)
    if isinstance(manifest, list | tuple) and all(isinstance(r, Mapping) for r in manifest):
        rows = list(manifest)
        names = list(dict.fromkeys(k for r in rows for k in r))
        # object columns: text that UTF-8 cannot encode (a lone surrogate) reaches validation,
        # which reports it as a problem row, instead of failing in pandas' string inference
        return pd.DataFrame(rows, columns=pd.Index(names, dtype=object), dtype=object)
    if isinstance(manifest, str | os.PathLike):
        path = Path(manifest)
        if not path.exists():
            raise InputError(f"manifest {path} does not exist")
        if path.is_dir():
            raise InputError(f"manifest {path} is a folder; give a .csv or .parquet file")
        suffix = path.suffix.lower()
        if suffix in (".parquet", ".pq"):
            return _read_parquet(path)
        if suffix in (".csv", ".txt", ".tsv"):
            return _read_csv(path, "\t" if suffix == ".tsv" else None)
        raise InputError(f"manifest {path}: give a .csv or .parquet file (or a DataFrame)")
    raise InputError(
        "manifest must be a DataFrame, a list of row dicts or a .csv/.parquet path, "
        f"got {type(manifest).__name__}"
    )


def _read_parquet(path: Path) -> pd.DataFrame:
    try:
        return pd.read_parquet(path).reset_index(drop=True)
    except (OSError, ValueError) as exc:  # pyarrow's errors derive from these
        raise whole_manifest_error(
            None, f"{path.name} cannot be read as Parquet ({type(exc).__name__}: {exc})"
        ) from None


def _read_csv(path: Path, sep: str | None) -> pd.DataFrame:
    """A CSV manifest as text cells: checked for emptiness, encoding, separator and shape."""
    raw = path.read_bytes()
    if not raw.strip():
        what = "empty (0 bytes)" if not raw else "blank (only spaces and line breaks)"
        raise whole_manifest_error(
            None,
            f"the file {path.name} is {what}: a manifest starts with a header line naming its "
            "columns (patient_id,timestamp,image_url …) and has one line per image; see "
            "docs/manifest.md",
        )
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise whole_manifest_error(
            None,
            f"the file {path.name} is not UTF-8 text (byte 0x{raw[exc.start]:02X} on line "
            f"{line}); save it as 'CSV UTF-8' (most spreadsheets offer it) and try again",
        ) from None
    header = next(iter(text.splitlines()), "")
    sep = sep or _separator(header)
    if sep != ",":
        log.info("manifest %s: read as %s-separated", path, SEPARATORS[sep])
    names = next(csv.reader([header], delimiter=sep))
    _check_header(names, path)
    try:
        frame = pd.read_csv(
            io.StringIO(text), dtype=str, keep_default_na=False, sep=sep, skipinitialspace=False
        )
    except (pd.errors.ParserError, ValueError) as exc:
        reason = " ".join(str(exc).split())
        raise whole_manifest_error(
            None,
            f"the file {path.name} cannot be read as {SEPARATORS[sep]}-separated values "
            f"({reason}); every line must have as many cells as the header (a cell holding "
            f"the separator {sep!r} must be quoted)",
        ) from None
    frame = _drop_unnamed(frame, names, path)
    if sep == ";":  # spreadsheets that write ';' write the decimal separator as ','
        for col in _NUMBER_COLUMNS:
            if col in frame.columns:
                cells = frame[col]
                comma = cells.str.match(_DECIMAL_COMMA)
                frame[col] = cells.where(~comma, cells.str.replace(",", ".", regex=False))
    return frame


def _separator(header: str) -> str:
    """The separator of a header line: the one of comma, semicolon and tab it holds most
    often (a comma on a tie or when it holds none: a one-column header)."""
    counts = {sep: header.count(sep) for sep in SEPARATORS}
    return max(SEPARATORS, key=lambda sep: counts[sep])  # max keeps the first on a tie


def _check_header(names: list[str], path: Path) -> None:
    """Refuse a header that names a column twice (pandas would rename the second)."""
    seen: set[str] = set()
    twice = []
    for name in (n.strip() for n in names):
        if name and name in seen and name not in twice:
            twice.append(name)
        seen.add(name)
    if twice:
        raise whole_manifest_error(
            twice[0],
            f"the header of {path.name} names column(s) {', '.join(map(repr, twice))} more than "
            "once; each column must appear once",
        )


def _drop_unnamed(frame: pd.DataFrame, names: list[str], path: Path) -> pd.DataFrame:
    """Columns named as the header names them (spaces around a name dropped), without the
    unnamed ones that hold nothing (a spreadsheet's trailing separators); an unnamed column
    that holds a value is refused."""
    frame.columns = [n.strip() for n in names] if len(names) == frame.shape[1] else frame.columns
    unnamed = [i for i, c in enumerate(frame.columns) if not str(c)]
    for i in unnamed:
        filled = frame.iloc[:, i].str.strip().ne("")
        if filled.any():
            row = int(filled.to_numpy().argmax()) + 1
            raise whole_manifest_error(
                None,
                f"the header of {path.name} leaves column {i + 1} (counting from 1) unnamed, "
                f"but manifest row {row} has a value there; name the column or remove it",
            )
    return frame.drop(columns=frame.columns[unnamed]) if unnamed else frame
