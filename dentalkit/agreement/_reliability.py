"""Reliability coefficients from maintained packages: the ICC (pingouin) and Cohen's
kappa (statsmodels), with the form and the interval stated."""

from __future__ import annotations

import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
import pandas as pd
from scipy import stats as sps

from dentalkit.agreement._stats import check_confidence, wilson_interval
from dentalkit.errors import InputError, require

__all__ = ["ICC_FORMS", "ICC_MIN_RATINGS", "cohens_kappa", "icc", "icc_min_targets"]

#: Fewest ratings (targets × raters) :func:`pingouin.intraclass_corr` accepts: its
#: two-way ANOVA (``pingouin.anova``) refuses fewer than 5 non-missing values. This is a
#: guard of the software, not of the statistic (the ANOVA mean squares exist from 2
#: targets and 2 raters); with two raters it means at least 3 targets.
ICC_MIN_RATINGS = 5


def icc_min_targets(raters: int) -> int:
    """Fewest targets (sessions) an ICC with ``raters`` raters can be computed from here.

    Parameters
    ----------
    raters : int
        Number of raters (methods) rating every target.

    Returns
    -------
    int
        ``max(2, ceil(ICC_MIN_RATINGS / raters))``: two targets for the ANOVA's
        degrees of freedom, and pingouin's 5 ratings.

    Examples
    --------
    >>> icc_min_targets(2), icc_min_targets(3), icc_min_targets(5)
    (3, 2, 2)
    """
    return max(2, -(-ICC_MIN_RATINGS // max(int(raters), 1)))


#: Shrout & Fleiss (1979) forms → (pingouin ≥ 0.6 row label, pingouin ≤ 0.5 row label,
#: McGraw & Wong 1996 description).
ICC_FORMS: dict[str, tuple[str, str, str]] = {
    "ICC(1,1)": ("ICC(1,1)", "ICC1", "one-way random effects, absolute agreement, single rater"),
    "ICC(2,1)": ("ICC(A,1)", "ICC2", "two-way random effects, absolute agreement, single rater"),
    "ICC(3,1)": ("ICC(C,1)", "ICC3", "two-way mixed effects, consistency, single rater"),
    "ICC(1,k)": ("ICC(1,k)", "ICC1k", "one-way random effects, absolute agreement, mean of k"),
    "ICC(2,k)": ("ICC(A,k)", "ICC2k", "two-way random effects, absolute agreement, mean of k"),
    "ICC(3,k)": ("ICC(C,k)", "ICC3k", "two-way mixed effects, consistency, mean of k"),
}


@contextmanager
def _full_precision(pg) -> Iterator[None]:
    """pingouin rounds its CI95 column to 2 decimals by default; switch that off."""
    old = dict(pg.options)
    pg.options["round.column.CI95"] = None
    try:
        yield
    finally:
        pg.options.clear()
        pg.options.update(old)


def icc(
    data: pd.DataFrame,
    targets: str,
    raters: str,
    ratings: str,
    form: str = "ICC(2,1)",
) -> pd.Series:
    """One intraclass correlation with its 95 % CI, via :func:`pingouin.intraclass_corr`.

    Parameters
    ----------
    data : DataFrame
        Long table, one row per (target, rater), complete and balanced.
    targets, raters, ratings : str
        Column names (e.g. session, ``"method"``, ``"value"``).
    form : str
        Shrout & Fleiss (1979) form: ``"ICC(2,1)"`` (default: two-way random effects,
        absolute agreement, single rater — McGraw & Wong's ICC(A,1)), ``"ICC(3,1)"``,
        ``"ICC(1,1)"`` or their ``k`` (mean of k raters) variants.

    Returns
    -------
    pandas.Series
        ``form``, ``description``, ``icc``, ``ci95_low``, ``ci95_high`` (pingouin's
        CI: always 95 %), ``F``, ``df1``, ``df2``, ``pval``.

    Raises
    ------
    InputError
        A column is missing, or fewer than 2 targets or raters or fewer than
        :data:`ICC_MIN_RATINGS` ratings are given (pingouin's minimum; with two raters,
        3 targets).

    References
    ----------
    Shrout PE, Fleiss JL. Intraclass correlations: uses in assessing rater
    reliability. *Psychol Bull* 1979;86:420–428. McGraw KO, Wong SP. Forming
    inferences about some intraclass correlation coefficients. *Psychol Methods*
    1996;1:30–46.
    """
    if form not in ICC_FORMS:
        raise InputError(f"unknown ICC form {form!r}; choose one of {list(ICC_FORMS)}")
    for column in (targets, raters, ratings):
        if column not in data.columns:
            raise InputError(
                f"the ICC's data table lacks column {column!r} (targets, raters, ratings)"
            )
    given = data.loc[data[ratings].notna(), [targets, raters]]
    n_targets, n_raters = given[targets].nunique(), given[raters].nunique()
    if len(given) < ICC_MIN_RATINGS or n_targets < 2 or n_raters < 2:
        raise InputError(
            f"an ICC needs at least {icc_min_targets(max(n_raters, 2))} targets rated by every "
            f"rater, and at least 2 raters; the data have {len(given)} rating(s) of {n_targets} "
            f"target(s) by {n_raters} rater(s) (pingouin's two-way ANOVA, which gives the "
            f"ICC's mean squares, refuses fewer than {ICC_MIN_RATINGS} ratings)"
        )
    pg = require("pingouin", "stats")
    new, old, description = ICC_FORMS[form]
    with _full_precision(pg), warnings.catch_warnings(), np.errstate(all="ignore"):
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.filterwarnings("ignore", module="pingouin")  # its own pandas deprecations
        table = pg.intraclass_corr(data=data, targets=targets, raters=raters, ratings=ratings)
    labels = table["Type"].astype(str).tolist()
    label = new if new in labels else old
    if label not in labels:
        raise InputError(f"pingouin returned ICC types {labels}; none matches {form!r}")
    row = table.loc[table["Type"] == label].iloc[0]
    ci = np.asarray(row["CI95"], dtype=float)
    return pd.Series(
        {
            "form": form,
            "description": description,
            "icc": float(row["ICC"]),
            "ci95_low": float(ci[0]),
            "ci95_high": float(ci[1]),
            "F": float(row["F"]),
            "df1": float(row["df1"]),
            "df2": float(row["df2"]),
            "pval": float(row["pval"]),
        }
    )


KAPPA_WEIGHTS = (None, "linear", "quadratic")


def cohens_kappa(
    reference: Sequence,
    test: Sequence,
    categories: Sequence | None = None,
    confidence: float = 0.95,
    weights: str | None = None,
) -> pd.Series:
    """Cohen's kappa (unweighted, or weighted for ordered classes) with its CI, and raw agreement.

    Parameters
    ----------
    reference, test : sequence
        Paired category labels; missing labels are not allowed (drop them first).
    categories : sequence, optional
        All categories (the contingency table is square over them); default the
        union of the labels seen, in sorted order. For weighted kappa this is the
        **order** of the classes (e.g. ``["Class III", "Class I", "Class II"]``).
    confidence : float
        Level of both intervals.
    weights : {None, "linear", "quadratic"}
        ``None``: Cohen's (1960) unweighted kappa (nominal classes). For ordered
        classes, weighted kappa (Cohen 1968) with agreement weights
        ``1 − |i − j|/(k − 1)`` (linear) or ``1 − (i − j)²/(k − 1)²`` (quadratic):
        a disagreement by one class counts less than one by two.

    Returns
    -------
    pandas.Series
        ``n``, ``n_agree``, ``agreement`` (share of agreeing pairs) with a Wilson
        interval (``agreement_ci_low``, ``agreement_ci_high``), ``kappa`` with its
        asymptotic standard error ``kappa_se`` (statsmodels; Fleiss, Cohen & Everitt
        1969; the non-null variance, for weighted kappa too) and the normal interval
        ``kappa ± z·se``, truncated to [−1, 1]; ``weights`` (None, "linear" or
        "quadratic"). Kappa is NaN when chance agreement is 1 (both raters used a
        single, identical category).

    References
    ----------
    Cohen J. A coefficient of agreement for nominal scales. *Educ Psychol Meas*
    1960;20:37–46. Cohen J. Weighted kappa: nominal scale agreement with provision
    for scaled disagreement or partial credit. *Psychol Bull* 1968;70:213–220.
    Fleiss JL, Cohen J, Everitt BS. Large sample standard errors of kappa and
    weighted kappa. *Psychol Bull* 1969;72:323–327.

    Examples
    --------
    >>> s = cohens_kappa(["I", "I", "II", "II"], ["I", "II", "II", "II"])
    >>> float(s["agreement"]), round(float(s["kappa"]), 3)
    (0.75, 0.5)
    """
    c = check_confidence(confidence)
    if weights not in KAPPA_WEIGHTS:
        raise InputError(f"weights={weights!r} is not allowed; use None, 'linear' or 'quadratic'")
    ref = pd.Series(list(reference), dtype=object)
    tst = pd.Series(list(test), dtype=object)
    if len(ref) != len(tst):
        raise InputError(
            f"reference and test must have the same length (paired labels), got {len(ref)} and {len(tst)}"
        )
    if ref.isna().any() or tst.isna().any():
        raise InputError("missing category labels: drop the unclassified pairs first")
    cats = list(categories) if categories is not None else sorted(set(ref) | set(tst), key=str)
    pos = {v: i for i, v in enumerate(cats)}
    unknown = (set(ref) | set(tst)) - set(pos)
    if unknown:
        raise InputError(f"labels {sorted(map(str, unknown))} are not among categories {cats}")
    k = len(cats)
    ri = ref.map(pos).to_numpy(dtype=np.int64)
    ti = tst.map(pos).to_numpy(dtype=np.int64)
    n = ri.size
    n_agree = int((ri == ti).sum())
    lo, hi = wilson_interval(np.array([n_agree]), np.array([n]), c)
    out = {
        "n": n,
        "n_agree": n_agree,
        "agreement": n_agree / n if n else np.nan,
        "agreement_ci_low": float(lo[0]),
        "agreement_ci_high": float(hi[0]),
        "kappa": np.nan,
        "kappa_se": np.nan,
        "kappa_ci_low": np.nan,
        "kappa_ci_high": np.nan,
        "weights": weights,
    }
    if n == 0 or k == 0:
        return pd.Series(out)
    table = np.bincount(ri * k + ti, minlength=k * k).reshape(k, k).astype(float)
    p_row = table.sum(axis=1) / n
    p_col = table.sum(axis=0) / n
    if np.isclose(float(p_row @ p_col), 1.0) or (weights is not None and k < 2):
        return pd.Series(out)
    ir = require("statsmodels.stats.inter_rater", "stats")
    res = ir.cohens_kappa(table, wt=weights, return_results=True)
    se = float(np.sqrt(res.var_kappa))
    zq = float(sps.norm.ppf(0.5 + c / 2))
    out |= {
        "kappa": float(res.kappa),
        "kappa_se": se,
        "kappa_ci_low": max(-1.0, float(res.kappa) - zq * se),
        "kappa_ci_high": min(1.0, float(res.kappa) + zq * se),
    }
    return pd.Series(out)
