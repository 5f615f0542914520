"""The problems collector: what was wrong where, and what happened to the rows."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import pandas as pd

from dentalkit.convert import schemas
from dentalkit.convert._values import BodyError, printable
from dentalkit.errors import EchoMismatchWarning, InputError, ResponseFormatError

if TYPE_CHECKING:
    from dentalkit.convert._requests import Requests


class Problems:
    """Collects problems; in raise mode, raises on the first fatal one.

    Fatal problems (a malformed body) drop the whole response; notes (data the service
    sent that contradicts itself, an unknown tooth prefix …) keep the rows.
    """

    def __init__(self, errors: str) -> None:
        # errors is already checked (check_errors) by the public function
        self.collect = errors != "raise"
        self.records: list[tuple | None] = []
        self._echo: dict[int, str] = {}  # row → first echo mismatch message
        self._notes: dict[int, list[int]] = {}  # row → positions of its notes in records
        # (table, path, value) → (position in records, responses counted) of a note made
        # once per distinct value, recounted when later pieces of the responses carry it
        self._once: dict[tuple[str, str, str], tuple[int, int]] = {}

    def _who(self, req: Requests, i: int) -> tuple:
        return req.ep[i].name, req.patient_id[i], req.timestamp[i], int(req.row[i])

    def fatal(self, req: Requests, i: int, tables: Sequence[str], err: BodyError) -> None:
        """A malformed body: raise, or record it against ``tables`` and drop the response."""
        ep, pid, ts, row = self._who(req, i)
        if not self.collect:
            raise ResponseFormatError(
                err.reason, endpoint=ep, patient_id=pid, timestamp=ts, path=err.path, row=row
            )
        for k in self._notes.pop(row, ()):  # notes of a dropped response no longer apply
            self.records[k] = None
        self._echo.pop(row, None)
        for t in tables:
            self.records.append(
                (
                    t,
                    ep,
                    pid,
                    ts,
                    row,
                    "body",
                    err.path,
                    None,
                    f"{err.reason} (response dropped)",
                    "error",
                )
            )

    def note(self, req: Requests, i: int, table: str, path: str, reason: str) -> None:
        """Data that contradicts the spec or itself; the rows are kept."""
        ep, pid, ts, row = self._who(req, i)
        self._notes.setdefault(row, []).append(len(self.records))
        self.records.append(
            (table, ep, pid, ts, row, "body", path, None, f"{reason} (rows kept)", "warning")
        )

    def session_time(self, req: Requests, i: int, reason: str) -> None:
        """A timestamp that gives no session_time: the rows are kept, session_time missing."""
        ep, pid, ts, row = self._who(req, i)
        self._notes.setdefault(row, []).append(len(self.records))
        self.records.append(
            (
                "responses",
                ep,
                pid,
                ts,
                row,
                "timestamp",
                "timestamp",
                printable(ts),
                f"{reason} (rows kept)",
                "warning",
            )
        )

    def note_once(
        self, req: Requests, i: int, table: str, path: str, value: str, n: int, reason: Callable
    ) -> None:
        """One note per distinct ``value`` of ``path``, on the first response that carries it;
        ``reason(count)`` words it for the ``count`` responses seen so far (a later piece of
        the same responses table adds to that count and rewords the note)."""
        seen = self._once.get((table, path, value))
        if seen is None:
            self._once[(table, path, value)] = (len(self.records), n)
            self.note(req, i, table, path, reason(n))
            return
        k, before = seen
        self._once[(table, path, value)] = (k, before + n)
        rec = self.records[k]
        if rec is not None:
            self.records[k] = (*rec[:8], f"{reason(before + n)} (rows kept)", rec[9])

    def echo(self, req: Requests, i: int, tables: Sequence[str], path: str, reason: str) -> None:
        """An echo that differs from the request: noted, and warned about once per call."""
        for t in tables:
            self.note(req, i, t, path, reason)
        self._echo.setdefault(int(req.row[i]), f"row {int(req.row[i])}: {reason}")

    def bad_row(self, row: int, endpoint, pid, ts, field: str, reason: str) -> None:
        """A responses-table row that cannot be converted (not the body's fault)."""
        if not self.collect:
            raise InputError(f"responses row {row} (0-based position): {field}: {reason}")
        ep = endpoint if isinstance(endpoint, str) else None
        pid = pid if isinstance(pid, str) else None
        ts = ts if isinstance(ts, str) else None
        self.records.append(
            ("responses", ep, pid, ts, row, field, field, None, f"{reason} (row skipped)", "error")
        )

    def calibration(self, row: int, pid, ts, endpoint, field: str, value, reason: str) -> None:
        """A row of the calibration table that cannot be used (left out)."""
        if not self.collect:
            shown = f"={value!r}" if value is not None else ""
            raise InputError(f"calibration row {row} (0-based position): {field}{shown}: {reason}")
        self.records.append(
            (
                "calibration",
                endpoint if isinstance(endpoint, str) else None,
                pid if isinstance(pid, str) else None,
                ts if isinstance(ts, str) else None,
                row,
                field,
                field,
                value,
                f"{reason} (row left out)",
                "error",
            )
        )

    def frame(self, tables: Sequence[str] | None = None) -> pd.DataFrame:
        """The problems table (schema ``problems``), in the order of the responses rows."""
        recs = [r for r in self.records if r is not None]
        if tables is not None:
            keep = {*tables, "responses"}
            recs = [r for r in recs if r[0] in keep]
        if not recs:
            return schemas.empty("problems")
        # by responses row, the calibration table's after; stable: order of discovery kept
        recs.sort(key=lambda r: (r[0] == "calibration", r[4]))
        cols = list(zip(*recs, strict=True))
        dtypes = schemas.pandas_dtypes("problems")
        df = pd.DataFrame(
            {
                name: pd.array(list(col), dtype=dtypes[name])
                for name, col in zip(schemas.SCHEMAS["problems"].names, cols, strict=True)
            }
        )
        schemas.check(df, "problems")
        return df

    def warn(self, stacklevel: int = 3) -> None:
        """Emit one :class:`EchoMismatchWarning` summarising the echo mismatches."""
        if self._echo:
            n = len(self._echo)
            first = self._echo[min(self._echo)]
            warnings.warn(
                f"{n} response(s) echo a PatientID/TimeStamp that differs from the request; "
                f"the tables keep the request values (see the problems table). First: {first}",
                EchoMismatchWarning,
                stacklevel=stacklevel,
            )
