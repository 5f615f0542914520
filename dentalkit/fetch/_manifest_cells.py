"""The cells of a manifest: text, limits, control characters, and the problems they make.

Shared by the phases of :func:`dentalkit.fetch._manifest.plan_requests`: every check of a
cell records its problems in one :class:`RowProblems` (one problems row per bad cell, named
by manifest row, field and value) and never raises.
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

import numpy as np
import pandas as pd

from dentalkit.convert._values import CONTROL_CHARACTERS
from dentalkit.errors import empty_problems, problems_frame
from dentalkit.fetch._manifest_file import clean_text, show_cell

__all__ = [
    "BAD",
    "MAX_LENGTH",
    "RowProblems",
    "bool_values",
    "check_text",
    "key_cell",
    "not_text",
    "text_cells",
    "type_reason",
]

#: Longest accepted value of each column that is sent, in characters (Unicode code points):
#: a longer value is a manifest problem and never sent. ``option`` is every option column,
#: ``p01`` … ``p11`` and ``calibration_source``. A presigned object-store URL is far below
#: 8,192 characters; all of them together stay well below the sandbox's 64 KiB body limit.
MAX_LENGTH: Mapping[str, int] = MappingProxyType(
    {"patient_id": 256, "timestamp": 64, "image_url": 8192, "option": 256}
)
#: Marks a cell that does not parse (a boolean option, a scale).
BAD = object()
_TRUE = {"true", "1", "yes", "y", "t"}
_FALSE = {"false", "0", "no", "n", "f"}
_NAMES = {0: "NUL", 9: "TAB", 10: "LF", 13: "CR", 27: "ESC", 127: "DEL"}


def text_cells(col: pd.Series) -> pd.Series:
    """Column as object strings with None for missing/blank (no float NaN leaking through)."""
    values = col.astype("object")
    blank = values.map(lambda v: isinstance(v, str) and not v.strip(), na_action="ignore")
    return values.where(col.notna() & ~blank.eq(True), None)


class RowProblems:
    """The problems of a manifest's rows, collected phase by phase (one frame per check)."""

    def __init__(self) -> None:
        self.frames: list[pd.DataFrame] = []

    def add(self, df: pd.DataFrame, mask: Any, field: str, values: Any, reason: Any) -> None:
        """Record ``reason`` for ``field`` on the rows where ``mask`` holds."""
        mask = np.asarray(mask, dtype=bool)
        if not mask.any():
            return
        sub = df.loc[mask]
        shown = (
            values[mask].map(show_cell).to_numpy()
            if isinstance(values, pd.Series)
            else show_cell(values)
        )
        many = isinstance(reason, pd.Series | np.ndarray)
        why = np.asarray(reason, dtype=object)[mask] if many else reason
        self.frames.append(
            pd.DataFrame(
                {
                    "table": "manifest",
                    "row": sub["_row"].to_numpy(),
                    "patient_id": sub["_pid"].map(key_cell).to_numpy(),
                    "timestamp": sub["_ts"].map(key_cell).to_numpy(),
                    "endpoint": sub["_ep_name"].to_numpy(),
                    "field": field,
                    "path": field,
                    "value": shown,
                    "reason": why,
                }
            )
        )

    def table(self) -> pd.DataFrame:
        """All problems so far as one problems table, by row then field."""
        if not self.frames:
            return empty_problems()
        out = pd.concat(self.frames, ignore_index=True)
        out = out.sort_values(["row", "field"], kind="stable").reset_index(drop=True)
        return problems_frame(out, severity="error")


def key_cell(v: Any) -> str | None:
    """A patient or timestamp for the problems table: as given when it could be sent,
    else shown escaped and shortened (a key that is not sent joins no table)."""
    ok = v is None or (
        clean_text(v) and len(v) <= MAX_LENGTH["patient_id"] and not CONTROL_CHARACTERS.search(v)
    )
    return v if ok else show_cell(v)


def not_text(values: pd.Series) -> pd.Series:
    """True where a (non-missing) value is not a string that UTF-8 can encode."""
    bad = values.map(lambda v: not clean_text(v), na_action="ignore")
    return bad.eq(True)


def type_reason(values: pd.Series) -> pd.Series:
    return values.map(
        lambda v: (
            "not valid Unicode text (lone surrogate)"
            if isinstance(v, str)
            else f"wrong type: expected a string, got {type(v).__name__}"
        )
    )


def control_reason(v: Any) -> str | None:
    found = CONTROL_CHARACTERS.search(v) if isinstance(v, str) else None
    if found is None:
        return None
    pos, char = found.start(), found.group()
    name = _NAMES.get(ord(char))
    what = f"U+{ord(char):04X}" + (f" ({name})" if name else "")
    return (
        f"control character {what} at position {pos + 1} (counting from 1): not sent; remove "
        "it (a control character breaks the files and exports the value reaches)"
    )


def check_text(
    rows: pd.DataFrame, problems: RowProblems, field: str, values: pd.Series, limit: int, mask: Any
) -> pd.Series:
    """Record control characters and over-long text of ``values`` on the rows of ``mask``.

    Returns the mask of the values that are clean text, free of control characters and
    at most ``limit`` characters long (missing values are not).
    """
    mask = np.asarray(mask, dtype=bool)
    text = values.map(clean_text, na_action="ignore").eq(True).to_numpy() & mask
    ctrl = np.zeros(len(values), dtype=bool)
    long = np.zeros(len(values), dtype=bool)
    where = np.flatnonzero(text)
    cells = values.to_numpy(dtype=object)[where]
    ctrl[where] = [CONTROL_CHARACTERS.search(v) is not None for v in cells]
    long[where] = [len(v) > limit for v in cells]
    cells = values.to_numpy(dtype=object)
    problems.add(rows, ctrl, field, values, _reasons(cells, ctrl, control_reason))
    too_long = long & ~ctrl
    problems.add(
        rows,
        too_long,
        field,
        values,
        _reasons(
            cells,
            too_long,
            lambda v: f"{len(v):,} characters long; at most {limit:,} are sent (docs/manifest.md)",
        ),
    )
    return pd.Series(text & ~ctrl & ~long, index=values.index)


def _reasons(cells: np.ndarray, mask: np.ndarray, reason: Any) -> np.ndarray:
    """``reason(cell)`` where ``mask`` holds (text cells only), None elsewhere."""
    out = np.full(len(cells), None, dtype=object)
    out[mask] = [reason(v) for v in cells[mask]]
    return out


def bool_values(col: pd.Series) -> tuple[pd.Series, pd.Series]:
    """(parsed booleans or None, bad mask) for a boolean option column."""
    raw = col.astype("object").where(col.notna(), None)

    def parse(v: Any) -> Any:
        if v is None or (isinstance(v, str) and not v.strip()):
            return None
        if isinstance(v, bool | np.bool_):
            return bool(v)
        if isinstance(v, str) and v.strip().lower() in _TRUE:
            return True
        if isinstance(v, str) and v.strip().lower() in _FALSE:
            return False
        return BAD

    parsed = raw.map(parse)
    bad = parsed.map(lambda v: v is BAD)
    return parsed.where(~bad, None), bad
