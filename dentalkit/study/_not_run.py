"""What a cohort is too small for: the ``analysis_problems`` rows that say why.

A real cohort may have one patient, a group of 0 or 1 patient, one session, an endpoint
never asked. :func:`dentalkit.study.analyze` runs what it can, and every table an analysis
declares is either made or named by a row of producer :data:`NOT_RUN` saying why (an
analysis that cannot run, a table it did not make, a comparison that ran no test). These
rows are not data left out: :func:`left_out` counts the others, and only those make the
commands exit 1.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["NOT_RUN", "group_counts", "left_out", "untested", "why_not"]

#: ``producer`` of the ``analysis_problems`` rows that say why an analysis, one of its
#: tables or one of its comparisons was not made on this cohort (too few patients, groups
#: or sessions, an endpoint without answers …): ``table`` names what is missing, ``path``
#: the analysis (or the comparison), ``reason`` why. The rest of the study goes on.
NOT_RUN = "study.analyze"


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


def why_not(spec: Any, inputs: Any) -> str:
    """Why an :class:`~dentalkit.study.AnalysisSpec` cannot run on ``inputs`` (its
    ``ready`` is False), in words."""
    absent = [t for t in spec.tables if inputs.rows(t) is None]
    if absent:
        return (
            f"not run: the tables have no {absent[0]} rows (no answer of an endpoint "
            "that gives them was converted)"
        )
    missing = [n for n in spec.needs if n not in inputs.results]
    if missing:
        return f"not run: it needs {missing[0]}, which was not made (see its row)"
    if spec.when is not None and not spec.when(inputs):
        return f"not run: {spec.unmet}"
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
