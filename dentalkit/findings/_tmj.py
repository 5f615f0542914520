"""TMJ findings per patient, with unknown wordings counted apart (private)."""

from __future__ import annotations

import numpy as np
import pandas as pd

from dentalkit.errors import InputError
from dentalkit.stats import proportion_ci

__all__ = ["tmj_prevalence"]


def tmj_prevalence(tmj: pd.DataFrame, confidence: float = 0.95) -> pd.DataFrame:
    """Prevalence of TMJ findings among patients; an unknown sentence is never a finding.

    The patient is the unit: a patient **with** a finding has ``has_finding`` True in at
    least one response (any session, any joint); **without** when every response is False;
    **unknown** when none is True and at least one is missing (a sentence no TMJ phrase
    recognises, see :func:`dentalkit.convert.has_finding`).

    Parameters
    ----------
    tmj : pandas.DataFrame
        The ``tmj`` table (``patient_id``, ``has_finding``: nullable boolean).
    confidence : float
        Level of the Wilson interval.

    Returns
    -------
    pandas.DataFrame
        One row: ``unit_of_analysis`` (``"patient"``), ``n_units`` (patients), ``n_responses``,
        ``n_with``, ``n_without``, ``n_unknown``, ``prevalence`` (``n_with / (n_with +
        n_without)``: among patients whose answer is known), ``ci_low``/``ci_high``
        (Wilson score interval of that proportion; Wilson 1927, Newcombe 1998),
        ``bound_low``/``bound_high`` (the prevalence over all patients if every unknown
        were without / with a finding: the range the unknowns allow, Manski 2003) and
        ``method``. The complete-case prevalence assumes the unknown wordings are
        unrelated to the finding (missing at random); the bounds make no assumption.

    Raises
    ------
    InputError
        ``tmj`` lacks ``patient_id`` or ``has_finding``.

    References
    ----------
    Wilson EB. J Am Stat Assoc 1927;22:209-212. Newcombe RG. Stat Med 1998;17:857-872.
    Manski CF. Partial Identification of Probability Distributions. Springer; 2003.

    Examples
    --------
    >>> t = pd.DataFrame(
    ...     {
    ...         "patient_id": ["A", "A", "B", "C", "D"],
    ...         "has_finding": pd.array([False, True, False, None, False], dtype="boolean"),
    ...     }
    ... )
    >>> r = tmj_prevalence(t).iloc[0]
    >>> int(r.n_with), int(r.n_without), int(r.n_unknown), float(r.prevalence)
    (1, 2, 1, 0.3333333333333333)
    >>> float(r.bound_low), float(r.bound_high)
    (0.25, 0.5)
    """
    missing = [c for c in ("patient_id", "has_finding") if c not in getattr(tmj, "columns", ())]
    if missing:
        raise InputError(
            f"tmj_prevalence needs the tmj table (dentalkit.convert.tmj); missing {missing}"
        )
    flags = pd.array(tmj["has_finding"], dtype="boolean")
    pid = tmj["patient_id"].astype("object").to_numpy()
    frame = pd.DataFrame(
        {
            "pid": pid,
            "true": flags.fillna(False).to_numpy(dtype=bool),
            "na": flags.isna(),
        }
    )
    per = frame.groupby("pid", sort=False).agg(any_true=("true", "any"), any_na=("na", "any"))
    n_with = int(per["any_true"].sum())
    n_unknown = int((~per["any_true"] & per["any_na"]).sum())
    n_units = len(per)
    n_without = n_units - n_with - n_unknown
    known = n_with + n_without
    low, high = proportion_ci([n_with], [known], confidence)
    with np.errstate(invalid="ignore", divide="ignore"):
        prevalence = n_with / known if known else np.nan
        bounds = (n_with / n_units, (n_with + n_unknown) / n_units) if n_units else (np.nan,) * 2
    return pd.DataFrame(
        {
            "unit_of_analysis": ["patient"],
            "n_units": [n_units],
            "n_responses": [len(tmj)],
            "n_with": [n_with],
            "n_without": [n_without],
            "n_unknown": [n_unknown],
            "prevalence": [prevalence],
            "ci_low": low,
            "ci_high": high,
            "bound_low": [bounds[0]],
            "bound_high": [bounds[1]],
            "method": [
                f"patients with a TMJ finding in any response; prevalence among the {known} "
                f"patients with a known answer, Wilson {confidence:.0%} CI; bounds over all "
                f"{n_units} patients with the {n_unknown} unknown counted as without / with"
            ],
        }
    ).astype({"n_units": "int64", "n_responses": "int64", "n_with": "int64",
              "n_without": "int64", "n_unknown": "int64"})  # fmt: skip
