"""Group comparisons of arch-form parameters and arch dimensions (a thin layer over stats)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from dentalkit.arch._models import MODELS
from dentalkit.errors import InputError
from dentalkit.stats import compare as _stats_compare

__all__ = ["compare"]


def compare(
    table: pd.DataFrame,
    by: str,
    paired: str | None = None,
    *,
    model: str | None = None,
    correction: str | None = "holm",
    **kwargs: Any,
) -> pd.DataFrame:
    """Compare arch forms or arch dimensions between groups, per arch and parameter.

    Parameters
    ----------
    table : DataFrame
        Either the output of :func:`dentalkit.arch.fit` (one row per arch × model) or of
        :func:`dentalkit.arch.measure` (one row per arch × measure), with the group column
        ``by`` merged in by the caller. Only rows with ``status == "ok"`` are compared.
    by : str
        Column whose levels are the groups (e.g. ``"skeletal_class"``), or with ``paired``
        the repeated condition (e.g. ``"timestamp"``).
    paired : str, optional
        Unit measured at every level of ``by`` (``"patient_id"`` for sessions of the same
        patients); switches to paired tests.
    model : str, optional
        For a fit table: which model's shape parameters to compare (``"catenary"`` → ``a``,
        ``"beta"`` → ``depth``, ``width``, …). Required when the table holds several models.
    correction : str or None
        Multiple-comparison adjustment across all (arch, parameter) comparisons; Holm
        (1979) by default.
    **kwargs
        Passed to :func:`dentalkit.stats.compare` (``unit=``, ``aggregate=``, ``test=``,
        ``order=``, ``confidence=``…). The unit of analysis is ``patient_id``: a patient
        with two sessions (two rows per arch and parameter) is refused unless you pick one
        session first (:func:`dentalkit.stats.one_row_per_unit`) or pass
        ``aggregate="mean"``.

    Returns
    -------
    DataFrame
        One row per arch × parameter (fits) or arch × measure (measures): the test chosen
        and why, statistic, p and adjusted p, effect size and difference with confidence
        intervals (see :func:`dentalkit.stats.compare`).

    Raises
    ------
    InputError
        When the table is neither a fit nor a measures table, lacks ``by``, mixes models
        without ``model=``, mixes units for a measure, or holds several rows of a patient
        per group (see :func:`dentalkit.stats.compare`).
    """
    if by not in table.columns:
        raise InputError(f"arch.compare: the table has no column {by!r}; merge the groups in first")
    ok = table[table["status"].astype(str) == "ok"] if "status" in table.columns else table
    if "model" in table.columns and "measure" not in table.columns:
        models = sorted(ok["model"].astype(str).unique())
        if model is None:
            if len(models) != 1:
                raise InputError(
                    f"arch.compare: the fit table holds models {models}; choose one with model="
                )
            model = models[0]
        if model not in MODELS:
            raise InputError(f"arch.compare: unknown model {model!r}; models: {sorted(MODELS)}")
        rows = ok[ok["model"].astype(str) == model]
        params = list(MODELS[model].params)
        keep = [c for c in rows.columns if c not in params]
        long = rows.melt(id_vars=keep, value_vars=params, var_name="parameter", value_name="value")
        per = ["arch", "parameter"]
    elif "measure" in table.columns:
        units = ok.groupby("measure", observed=True)["unit"].nunique()
        mixed = units[units > 1].index.tolist()
        if mixed:
            raise InputError(
                f"arch.compare: measures {mixed} come in several units (px and mm); "
                "calibrate every arch or compare in pixels"
            )
        long = ok
        per = ["arch", "measure"]
    else:
        raise InputError(
            "arch.compare takes the table of arch.fit (a 'model' column) or of arch.measure "
            "(a 'measure' column)"
        )
    return _stats_compare(long, "value", by, paired, per=per, correction=correction, **kwargs)
