"""The unit of analysis: one row per patient before a between-group test (private).

A between-group test treats its rows as independent. Sessions, teeth or images of one
patient are not: two sessions of a patient correlate at 0.9 or more, so counting them as
two patients shrinks the standard error and inflates the false-positive rate (a null
simulation in ``benchmarks/units.py``: 0.16 instead of 0.05). The helpers
here find the unit column, refuse tables in which a unit repeats, and reduce a table to
one row per unit with a named rule when the caller asks for it.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np
import pandas as pd

from dentalkit.errors import DentalkitWarning, InputError
from dentalkit.stats._tables import as_list, require_columns

__all__ = ["AGGREGATES", "DEFAULT_UNIT", "RULES", "one_row_per_unit"]

#: The unit column :func:`dentalkit.stats.compare` uses when the table has it.
DEFAULT_UNIT = "patient_id"
#: Rules of ``compare(aggregate=...)`` (numeric values, per unit and group).
AGGREGATES = ("mean", "median")
#: Rules of :func:`one_row_per_unit`.
RULES = ("first", "last", "mean", "median")
#: Columns that identify a session of a unit (never keys of an aggregate).
SESSION_COLUMNS = ("timestamp", "session_time")

GROWTH_HINT = (
    "or model the repeated rows with a linear mixed-effects growth model, "
    "dentalkit.stats.growth(...) (a random intercept per patient)"
)


def resolve_unit(
    table: pd.DataFrame, unit: str | None, default: str = DEFAULT_UNIT
) -> tuple[str | None, str | None]:
    """(unit column or None, note) for ``table``; warns whenever rows become the units.

    ``unit=None`` states that the rows are independent, and a table without the default
    unit column is analysed row by row: either way the rows are tested as if each were a
    different patient, which is wrong when a patient has several rows (two sessions
    tested as rows: a false-positive rate of 0.16 instead of 0.05, ``benchmarks/units.py``).
    Neither is silent — one :class:`~dentalkit.errors.DentalkitWarning`, the note, and
    ``unit_of_analysis="row"`` in the result say so. Any other absent name is an error.
    """
    if unit is None:
        note = "unit=None: each row taken as an independent unit (the caller's choice)"
        _warn_rows(note, "if several rows belong to one patient, pass unit='patient_id'")
        return None, note
    if not isinstance(unit, str):
        raise InputError(f"unit must be a column name or None, got {type(unit).__name__}")
    if unit in table.columns:
        return unit, None
    if unit == default:
        note = (
            f"no {default} column: each row taken as an independent unit "
            f"(pass unit=<column> to name the unit)"
        )
        _warn_rows(note, "name the column that identifies a patient with unit=")
        return None, note
    raise InputError(
        f"unit column {unit!r} is not in the table (columns: {list(table.columns)}); "
        f"name the column that identifies a patient, e.g. unit={default!r}, "
        "or unit=None if every row is a separate patient"
    )


def _warn_rows(note: str, fix: str) -> None:
    warnings.warn(
        f"{note}: the rows are tested as independent patients (unit_of_analysis='row'); {fix}",
        DentalkitWarning,
        stacklevel=4,
    )


def check_group_fixed(clean: pd.DataFrame, unit: str, by: str, where: str) -> None:
    """Refuse units whose group changes between rows (never filed under the first)."""
    levels = clean.groupby(unit, observed=True, sort=False)[by].nunique()
    moving = levels[levels > 1]
    if len(moving):
        uid = moving.index[0]
        seen = sorted(map(str, pd.unique(clean.loc[clean[unit] == uid, by])))
        raise InputError(
            f"{where}: {len(moving)} {unit}(s) appear in more than one group of {by!r} "
            f"(e.g. {uid!r} in {seen}): a unit's group must be fixed, or its rows would be "
            "filed under two groups. Give each unit one group (e.g. the group of its first "
            "session, merged in by patient_id), pick one session per unit with "
            "stats.one_row_per_unit(table, rule='first'), " + GROWTH_HINT
        )


def refuse_repeats(clean: pd.DataFrame, unit: str, by: str | None, where: str, value: str) -> None:
    """Raise when a unit contributes more than one row (to a group, when ``by``)."""
    keys = [unit, by] if by else [unit]
    sizes = clean.groupby(keys, observed=True, sort=False).size()
    rep = sizes[sizes > 1]
    if not len(rep):
        return
    uid = rep.index[0]
    example = uid[0] if isinstance(uid, tuple) else uid
    n_units = len({k[0] if isinstance(k, tuple) else k for k in rep.index})
    total = clean[unit].nunique()
    raise InputError(
        f"{where}: {n_units} of {total} units ({unit}) contribute more than one row of "
        f"{value!r}{' to a group of ' + repr(by) if by else ''} (e.g. {unit}={example!r} "
        f"has {int(rep.iloc[0])} rows); they are not independent patients. Ways out: "
        f"pick one session per unit, stats.one_row_per_unit(table, rule='first' or 'last'); "
        f"aggregate per unit with a named rule, aggregate='mean' or 'median' "
        f"(the output states it); " + GROWTH_HINT + "; or unit=None if the rows really "
        "are independent patients"
    )


def aggregate_per_unit(
    clean: pd.DataFrame, unit: str, keys: Sequence[str], value: str, rule: str
) -> pd.DataFrame:
    """``value`` reduced to one row per ``unit`` × ``keys`` with ``rule`` (mean / median)."""
    g = clean.groupby([unit, *keys], observed=True, sort=True)[value]
    return g.agg(rule).reset_index()


def aggregation_text(rule: str, unit: str, n_rows: int, n_units: int) -> str:
    """What an aggregation did, in words (for the output's ``aggregation`` column)."""
    return f"{rule} per {unit} ({n_rows} rows → {n_units} units)"


def one_row_per_unit(
    table: pd.DataFrame,
    rule: Literal["first", "last", "mean", "median"] = "first",
    *,
    unit: str = DEFAULT_UNIT,
    values: str | Sequence[str] = "value",
    session: str | Sequence[str] = "timestamp",
) -> pd.DataFrame:
    """Reduce a long table to one session (or one aggregate) per unit, before comparing groups.

    Parameters
    ----------
    table : DataFrame
        Long table with a ``unit`` column and, for ``"first"`` / ``"last"``, the
        ``session`` column(s) (``timestamp``; ``session_time`` is used to order
        sessions when present).
    rule : {"first", "last", "mean", "median"}
        ``"first"`` / ``"last"``: every row of each unit's first / last session
        (sessions ordered by ``session_time`` when present, then by ``session``;
        all measures of that session are kept). ``"mean"`` / ``"median"``: the
        ``values`` columns averaged over each unit's rows that share every other
        column except the session columns and other float columns (which are
        dropped) — so a measures table keeps one row per unit × measure.
    unit : str
        Column identifying the unit of analysis (default ``"patient_id"``).
    values : str or list of str
        Columns aggregated by ``"mean"`` / ``"median"`` (default ``"value"``).
    session : str or list of str
        Columns identifying a session (default ``"timestamp"``).

    Returns
    -------
    DataFrame
        The reduced table, plus ``n_rows_aggregated`` (rows behind each row: 1 for
        ``first``/``last``). ``attrs["aggregation"]`` states the rule in words.

    Raises
    ------
    InputError
        Unknown rule, unit or session column; a unit whose rows are split by a
        group column that changes between sessions is left as several rows, which
        :func:`dentalkit.stats.compare` then refuses (it names the unit).

    Notes
    -----
    Choosing the session (or the aggregate) before looking at the results is part of
    a pre-specified analysis; state it in the methods. Repeated sessions analysed
    together belong in a mixed-effects model, not in a between-group test.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame(
    ...     {
    ...         "patient_id": ["a", "a", "b", "b"],
    ...         "timestamp": ["2024", "2025", "2024", "2025"],
    ...         "value": [1.0, 3.0, 5.0, 7.0],
    ...     }
    ... )
    >>> one_row_per_unit(t, "last")["value"].tolist()
    [3.0, 7.0]
    >>> one_row_per_unit(t, "mean")["value"].tolist()
    [2.0, 6.0]
    """
    if rule not in RULES:
        raise InputError(f"rule={rule!r} is not allowed; use one of {RULES}")
    require_columns(table, [unit], "table", f"name the unit column with unit= (e.g. {unit!r}).")
    if rule in ("first", "last"):
        sess = as_list(session)
        require_columns(
            table, sess, "table", "name the session column(s) with session= (e.g. 'timestamp')."
        )
        order_cols = ["session_time", *sess] if "session_time" in table.columns else sess
        keys = table[[unit, *dict.fromkeys(order_cols)]].astype("object")
        sessions = keys.drop_duplicates().sort_values(
            [unit, *dict.fromkeys(order_cols)], na_position="last", kind="stable"
        )
        grouped = sessions.groupby(unit, sort=False)
        pick = grouped.head(1) if rule == "first" else grouped.tail(1)
        chosen = pick[[unit, *sess]].drop_duplicates().assign(_keep=True)
        flagged = keys[[unit, *sess]].merge(chosen, on=[unit, *sess], how="left")
        mask = flagged["_keep"].notna().to_numpy()
        out = table.loc[np.asarray(mask, dtype=bool)].copy()
        out["n_rows_aggregated"] = np.int64(1)
        out.attrs["aggregation"] = f"{rule} session per {unit}"
        return out.reset_index(drop=True)
    vals = as_list(values)
    require_columns(table, vals, "table", "name the value column(s) with values=.")
    non_numeric = [v for v in vals if not pd.api.types.is_numeric_dtype(table[v])]
    if non_numeric:
        raise InputError(
            f"rule={rule!r} needs numeric values; {non_numeric} are not numeric "
            "(use rule='first' or 'last' for categories)"
        )
    keys = [
        c
        for c in table.columns
        if c not in (unit, *vals, *SESSION_COLUMNS, *as_list(session))
        and not pd.api.types.is_float_dtype(table[c])
    ]
    grouped = table.groupby([unit, *keys], observed=True, sort=True, dropna=False)
    out = grouped[vals].agg(rule)
    out["n_rows_aggregated"] = grouped.size().astype("int64")
    out = out.reset_index()
    out.attrs["aggregation"] = f"{rule} over the sessions of each {unit}"
    return out


def unit_counts(
    clean: pd.DataFrame, unit: str | None, by: str, levels: list[Any]
) -> tuple[list[int], list[int]]:
    """(units per level, rows per level) of the cleaned rows."""
    rows = [int((clean[by] == lv).sum()) for lv in levels]
    if unit is None:
        return rows, rows
    units = [int(clean.loc[clean[by] == lv, unit].nunique()) for lv in levels]
    return units, rows
