"""``qc.tle_inputs``: are the treatment-length inputs inside their codebook ranges?

Each row of a table of treatment-length inputs is checked against the codebook
(``dentalkit/data/tle_codebook.csv`` by default, :func:`dentalkit.tle.load_codebook`): a
number outside its range (after the codebook's rounding), a category or yes/no the
codebook does not know, or a value missing. The table may hold the encoded query
parameters ``p01`` … ``p11`` as sent (the ``tle`` table) or the typed patient columns
(``age_years``, ``overjet_mm`` …, as :func:`dentalkit.tle.encode` takes them); the
encoded form is used when both are there. Single-session rules: a row is checked on its
own. ``score`` is the number of parameters outside the codebook; a row is flagged when it
has one.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dentalkit.errors import InputError, check_errors
from dentalkit.qc._report import finish
from dentalkit.qc._table import key_columns, no_lists, qc_frame, tally
from dentalkit.tle import load_codebook
from dentalkit.tle.codebook import Codebook
from dentalkit.tle.encoding import encode_column

__all__ = ["tle_inputs"]


def tle_inputs(
    table: pd.DataFrame,
    *,
    codebook: Codebook | str | Path | pd.DataFrame | None = None,
    errors: str = "raise",
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """Quality control of treatment-length inputs: one row per row of ``table``.

    Parameters
    ----------
    table : DataFrame
        The ``tle`` table (``p01`` … ``p11`` as sent) or a typed patient table (the
        codebook's columns); ``patient_id`` (and ``timestamp``) identify the rows.
    codebook : Codebook, path or DataFrame, optional
        Default: the shipped codebook.
    errors : {"raise", "collect", "warn"}, default "raise"
        dentalkit's ``errors=`` rule (kept for a uniform interface).

    Returns
    -------
    DataFrame
        The ``qc_tle_inputs`` table: the common qc columns, then ``suspect_parameters``
        (the parameters outside the codebook, e.g. ``["p06"]``).

    Examples
    --------
    >>> enc = pd.DataFrame(
    ...     [["P1", "14", "F", "2", "1", "0", "24.5", "3.0", "0", "0", "1", "6.5"]],
    ...     columns=["patient_id", *[f"p{i:02d}" for i in range(1, 12)]],
    ... )
    >>> tle_inputs(enc)[["flagged", "suspect_parameters"]].to_dict("list")
    {'flagged': [True], 'suspect_parameters': [['p06']]}
    """
    errors = check_errors(errors, "dentalkit.qc.tle_inputs")
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    if "patient_id" not in table.columns:
        raise InputError("the treatment-length table needs a patient_id column")
    book = load_codebook(codebook)
    t = table.reset_index(drop=True)
    encoded = all(p.param in t.columns for p in book)
    typed = all(p.column in t.columns for p in book)
    if not (encoded or typed):
        raise InputError(
            "the treatment-length table has neither p01 … p11 (as sent) nor the codebook's "
            f"typed columns ({', '.join(book.columns)})"
        )
    n = len(t)
    fails: list[list[str]] = [[] for _ in range(n)]
    notes: list[list[str]] = [[] for _ in range(n)]
    for p in book:
        if encoded:
            values = t[p.param]
            if p.dtype != "number":  # codes back to labels (an unknown code stays unknown)
                labels = {code: label for label, code in p.levels}
                text = values.astype("str")
                values = text.map(labels).where(text.map(labels).notna(), "\x00" + text)
        else:
            values = t[p.column]
        _, reasons = encode_column(p, values)
        for i in np.flatnonzero(reasons != None):  # noqa: E711
            fails[i].append(p.param)
            shown = str(reasons[i]).replace("\x00", "")
            notes[i].append(f"{p.param} ({p.meaning}): {shown}")
    score, suspects, reason = tally(fails, notes)
    failed = no_lists(n)
    for i in np.flatnonzero(score):
        failed[i] = ["codebook range"]
    form = "p01 … p11 as sent" if encoded else "typed columns"
    out = qc_frame(
        "tle_inputs",
        key_columns(t),
        item="treatment-length inputs",
        flagged=score > 0,
        score=score,
        threshold=1.0,
        reason=reason,
        failed_checks=failed,
        method="single-session rules",
        method_reason=f"each row's {form} against the codebook ({book.source})",
        extra={"suspect_parameters": suspects},
    )
    return finish(out, pd.DataFrame(), errors, "dentalkit.qc.tle_inputs")
