"""What a cohort is too small for: the ``analysis_problems`` rows that say why.

A real cohort may have one patient, a group of 0 or 1 patient, one session, an endpoint
never asked. :func:`dentalkit.study.analyze` runs what it can, and every table an analysis
declares is either made or named by a row of producer :data:`NOT_RUN` saying why (an
analysis that cannot run, a table it did not make, a comparison that ran no test). These
rows are not data left out: :func:`left_out` counts the others, and only those make the
commands exit 1.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd

from dentalkit.errors import PROBLEM_COLUMNS, empty_problems, problems_frame
from dentalkit.study._parts import in_whole

__all__ = ["NOT_RUN", "Problems", "group_counts", "left_out", "untested", "why_not"]

#: ``producer`` of the ``analysis_problems`` rows that say why an analysis, one of its
#: tables or one of its comparisons was not made on this cohort (too few patients, groups
#: or sessions, an endpoint without answers …): ``table`` names what is missing, ``path``
#: the analysis (or the comparison), ``reason`` why. The rest of the study goes on.
NOT_RUN = "study.analyze"


class Problems:
    """The problems of every analysis :func:`dentalkit.study.analyze` runs, gathered in run order."""

    def __init__(self) -> None:
        self.parts: list[pd.DataFrame] = []
        #: Per table the QC policy removed rows from: the position in the table given to
        #: :func:`dentalkit.study.analyze` of each row the analyses see (set by ``qc``).
        self.kept_rows: dict[str, np.ndarray] = {}

    def add(self, producer: str, problems: pd.DataFrame, rows: np.ndarray | None = None) -> None:
        """Keep ``problems`` of ``producer``; ``rows`` maps the positions of an analysed
        subset back to the positions of the table the analysis was given, and
        ``kept_rows`` those back to the table given to :func:`dentalkit.study.analyze`."""
        if problems is None or not len(problems):
            return
        part = problems_frame(problems)[list(PROBLEM_COLUMNS)]
        if rows is not None:
            part["row"] = in_whole(part["row"], rows)
        for name, kept in self.kept_rows.items():
            mine = (part["table"].astype(str) == name).to_numpy(dtype=bool)
            if mine.any():
                part.loc[mine, "row"] = in_whole(part.loc[mine, "row"], kept)
        self.parts.append(part.assign(producer=producer))

    def not_run(self, table: str, reason: str, **where: str | None) -> None:
        """Say why ``table`` (or a part of it, ``path=``) was not made on this cohort: a row
        of producer :data:`NOT_RUN` (``field=``, ``value=``, ``endpoint=`` optional)."""
        row = {"table": table, "reason": reason, "severity": "error", **where}
        self.parts.append(problems_frame(pd.DataFrame([row])).assign(producer=NOT_RUN))

    def said(self, table: str) -> bool:
        """Whether a :data:`NOT_RUN` row already says why ``table`` is missing."""
        return any(((p["producer"] == NOT_RUN) & (p["table"] == table)).any() for p in self.parts)

    def table(self, producers: Sequence[str]) -> pd.DataFrame:
        """One table: :data:`~dentalkit.errors.PROBLEM_COLUMNS`, then ``producer`` (a
        categorical of ``producers``)."""
        if self.parts:
            out = pd.concat(self.parts, ignore_index=True)
        else:
            out = empty_problems()
            out["producer"] = pd.Series(dtype="object")
        out = problems_frame(out)
        out["producer"] = pd.Categorical(
            out["producer"].astype("object"), categories=list(producers)
        )
        return out


def left_out(problems: pd.DataFrame | None) -> int:
    """How many ``analysis_problems`` rows left data out (bad rows, implausible scales):
    every row but the :data:`NOT_RUN` ones, which say why an analysis could not run on
    this cohort. The commands exit 1 when this is not 0.

    Examples
    --------
    >>> left_out(pd.DataFrame({"producer": ["ceph.measure", NOT_RUN]}))
    1
    """
    if problems is None:
        return 0
    return int((problems["producer"].astype(str) != NOT_RUN).sum())


def why_not(spec: Any, inputs: Any, unasked: set[str]) -> str | None:
    """Why an :class:`~dentalkit.study.AnalysisSpec` cannot run on ``inputs`` (its
    ``ready`` is False), in words; None when it was not asked: a table it needs was not
    given at all (not even empty), or the results it needs are in ``unasked`` (the tables
    of analyses not asked), or it needs the responses and none were given."""
    if any(t not in inputs.tables for t in spec.tables):
        return None
    absent = [t for t in spec.tables if inputs.rows(t) is None]
    if absent:
        return (
            f"not run: the tables have no {absent[0]} rows (no answer of an endpoint "
            "that gives them was converted)"
        )
    missing = [n for n in spec.needs if n not in inputs.results]
    if missing:
        if set(missing) & unasked:
            return None
        return f"not run: it needs {missing[0]}, which was not made (see its row)"
    if spec.when is not None and not spec.when(inputs):
        return None if inputs.responses is None else f"not run: {spec.unmet}"
    if "ceph_classes" in unasked:  # the default groups come from a table not given
        return None
    return (
        "not run: there are no groups to compare — no patient has a skeletal class (no "
        "lateral cephalogram was measured); name a column of the patients table in the "
        "study file's [groups] to compare other groups"
    )


def untested(name: str, cmp: pd.DataFrame, keys: list[str], col: str, inputs: Any) -> pd.DataFrame:
    """The comparisons of ``cmp`` that ran a test; each one that did not (a group of one
    patient …) is a :data:`NOT_RUN` row saying why, and is left out of table ``name``."""
    ran = cmp["test"].notna().to_numpy(dtype=bool)
    for r in cmp[~ran].itertuples(index=False):
        sizes = getattr(r, "n_units_per_group", None)
        groups = list(r.groups) if r.groups is not None else []
        counts = (
            ", ".join(f"{g}: {int(n)}" for g, n in zip(groups, sizes, strict=True))
            if sizes is not None and len(groups) == len(sizes)
            else ", ".join(map(str, groups))
        )
        where = ", ".join(f"{k}={getattr(r, k)}" for k in keys)
        note = r.note if isinstance(r.note, str) and r.note else "no test could run"
        inputs.problems.not_run(
            name,
            f"not tested, left out of {name}: {note} (patients per {col}: {counts or 'none'})",
            path=where,
            field=col,
            value=counts or None,
        )
    return cmp[ran].reset_index(drop=True)


def group_counts(table: pd.DataFrame, col: str) -> str:
    """``"Class I: 4 patients"``: the patients of each group of ``table``."""
    counts = table.groupby(col, observed=True)["patient_id"].nunique()
    return ", ".join(f"{g}: {n} patient(s)" for g, n in counts.items()) or "no patient"
