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
from dentalkit.stats._proportions import cluster_mean_variance, effective_wilson

__all__ = [
    "ICC_FORMS",
    "ICC_MIN_RATINGS",
    "KAPPA_CI",
    "cohens_kappa",
    "icc",
    "icc_min_targets",
]

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
#: Intervals of kappa: ``"mover"`` (default, holds in small samples) or ``"normal"``.
KAPPA_CI = ("mover", "normal")
KAPPA_CI_TEXT = {
    "mover": "MOVER (Zou & Donner 2008): κ = 1 − d/(1 − p_e), Wilson on the effective n of "
    "the disagreement d (Korn & Graubard 1998), delta method for 1 − p_e",
    "normal": "normal, κ ± z·SE (Fleiss, Cohen & Everitt 1969)",
}


def cohens_kappa(
    reference: Sequence,
    test: Sequence,
    categories: Sequence | None = None,
    confidence: float = 0.95,
    weights: str | None = None,
    *,
    units: Sequence | None = None,
    ci: str = "mover",
) -> pd.Series:
    """Cohen's kappa (unweighted, or weighted for ordered classes) with its CI, and raw agreement.

    Parameters
    ----------
    reference, test : sequence
        Paired category labels; missing labels are not allowed (drop them first).
        Ordered pandas categoricals (as :func:`dentalkit.ceph.classify` returns) carry
        their order.
    categories : sequence, optional
        All categories (the contingency table is square over them). For weighted kappa
        this is the **order** of the classes (e.g. ``ceph.class_order("skeletal_class")``
        = ``["Class III", "Class I", "Class II"]``). Default: the categories of ordered
        categorical labels, else (unweighted kappa only) the labels seen, sorted.
    confidence : float
        Level of both intervals.
    weights : {None, "linear", "quadratic"}
        ``None``: Cohen's (1960) unweighted kappa (nominal classes). For ordered
        classes, weighted kappa (Cohen 1968) with agreement weights
        ``1 − |i − j|/(k − 1)`` (linear) or ``1 − (i − j)²/(k − 1)²`` (quadratic):
        a disagreement by one class counts less than one by two. Needs the order:
        ``categories=`` or ordered categoricals, else an error (an alphabetical order
        would silently change κ).
    units : sequence, optional
        The unit (patient) of each pair, when a unit has several pairs (sessions): the
        ``"mover"`` interval then clusters on it. Default: every pair its own unit.
    ci : {"mover", "normal"}
        ``"mover"`` (default): an interval that holds in small samples (below);
        ``"normal"``: κ ± z·SE with the large-sample SE, truncated to [−1, 1]
        (85–92 % coverage at 20 pairs in ``benchmarks/kappa_coverage.py``).

    Returns
    -------
    pandas.Series
        ``n``, ``n_units``, ``n_agree``, ``agreement`` (share of agreeing pairs) with a
        Wilson interval (``agreement_ci_low``, ``agreement_ci_high``; clustered on
        ``units`` when given), ``kappa`` with its asymptotic standard error
        ``kappa_se`` (statsmodels; Fleiss, Cohen & Everitt 1969; the non-null variance,
        for weighted kappa too), its interval ``kappa_ci_low``/``kappa_ci_high`` and
        ``kappa_ci_method``; ``weights``; ``categories`` (the order used). Kappa is NaN
        when chance agreement is 1 (both raters used a single, identical category).

    Notes
    -----
    **The small-sample interval.** κ = 1 − d/q with d = 1 − p_o the (weighted)
    disagreement and q = 1 − p_e. The interval combines one for each part by the
    method of variance estimates recovery for a ratio (MOVER-R; Zou & Donner 2008,
    Donner & Zou 2012): d gets Wilson's score interval on Kish's effective sample size
    d(1 − d)/V̂(d) — the pairs' own count for unweighted kappa, more for weighted
    scores that are not 0/1, the units with Korn & Graubard's (1998) df correction when
    clustered, and never zero-width when every pair agrees; q a delta-method interval
    from the influence of each pair on the marginals. Simulated coverage at 20 pairs
    (three ordered classes, κ 0.3–0.85): 94.5–97 % unweighted and weighted, where the
    normal interval gave 85–92 % and a percentile bootstrap over patients 90–94 %
    (74 % at 10 pairs); ``benchmarks/kappa_coverage.py``.

    References
    ----------
    Cohen J. A coefficient of agreement for nominal scales. *Educ Psychol Meas*
    1960;20:37–46. Cohen J. Weighted kappa: nominal scale agreement with provision
    for scaled disagreement or partial credit. *Psychol Bull* 1968;70:213–220.
    Fleiss JL, Cohen J, Everitt BS. Large sample standard errors of kappa and
    weighted kappa. *Psychol Bull* 1969;72:323–327. Zou GY, Donner A. Construction of
    confidence limits about effect measures: a general approach. *Stat Med*
    2008;27:1693–1702. Donner A, Zou GY. Closed-form confidence intervals for functions
    of the normal mean and standard deviation. *Stat Methods Med Res* 2012;21:347–359.
    Korn EL, Graubard BI. Confidence intervals for proportions with small expected
    number of positive counts estimated from survey data. *Surv Methodol*
    1998;24:193–201.

    Examples
    --------
    >>> s = cohens_kappa(["I", "I", "II", "II"], ["I", "II", "II", "II"])
    >>> float(s["agreement"]), round(float(s["kappa"]), 3)
    (0.75, 0.5)
    """
    c = check_confidence(confidence)
    if weights not in KAPPA_WEIGHTS:
        raise InputError(f"weights={weights!r} is not allowed; use None, 'linear' or 'quadratic'")
    if ci not in KAPPA_CI:
        raise InputError(f"ci={ci!r} is not allowed; use one of {KAPPA_CI}")
    cats = _kappa_categories(reference, test, categories, weights)
    ref = pd.Series(list(reference), dtype=object)
    tst = pd.Series(list(test), dtype=object)
    if len(ref) != len(tst):
        raise InputError(
            f"reference and test must have the same length (paired labels), got {len(ref)} and {len(tst)}"
        )
    if ref.isna().any() or tst.isna().any():
        raise InputError("missing category labels: drop the unclassified pairs first")
    if cats is None:
        cats = sorted(set(ref) | set(tst), key=str)
    pos = {v: i for i, v in enumerate(cats)}
    unknown = (set(ref) | set(tst)) - set(pos)
    if unknown:
        raise InputError(f"labels {sorted(map(str, unknown))} are not among categories {cats}")
    k = len(cats)
    ri = ref.map(pos).to_numpy(dtype=np.int64)
    ti = tst.map(pos).to_numpy(dtype=np.int64)
    n = ri.size
    clusters = _kappa_units(units, n)
    n_units = len(np.unique(clusters))
    n_agree = int((ri == ti).sum())
    agree_mean, agree_var, _, _ = cluster_mean_variance((ri == ti).astype(float), clusters)
    if units is None:
        lo, hi = wilson_interval(np.array([n_agree]), np.array([n]), c)
    else:
        lo, hi = effective_wilson(agree_mean, agree_var, n, n_units, c)
    out = {
        "n": n,
        "n_units": n_units,
        "n_agree": n_agree,
        "agreement": n_agree / n if n else np.nan,
        "agreement_ci_low": float(lo[0]),
        "agreement_ci_high": float(hi[0]),
        "kappa": np.nan,
        "kappa_se": np.nan,
        "kappa_ci_low": np.nan,
        "kappa_ci_high": np.nan,
        "kappa_ci_method": KAPPA_CI_TEXT[ci],
        "weights": weights,
        "categories": [str(v) for v in cats],
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
    kappa = float(res.kappa)
    if ci == "normal":
        zq = float(sps.norm.ppf(0.5 + c / 2))
        low, high = max(-1.0, kappa - zq * se), min(1.0, kappa + zq * se)
    else:
        w = _agreement_weights(k, weights)
        low, high = _mover(ri, ti, w, clusters, units is not None, c)
    out |= {"kappa": kappa, "kappa_se": se, "kappa_ci_low": low, "kappa_ci_high": high}
    return pd.Series(out)


def _kappa_categories(
    reference: Sequence, test: Sequence, categories: Sequence | None, weights: str | None
) -> list | None:
    """The category order: given, or the ordered categoricals'; weighted kappa needs one."""
    if categories is not None:
        return list(categories)
    dtypes = [getattr(v, "dtype", None) for v in (reference, test)]
    ordered = [d for d in dtypes if isinstance(d, pd.CategoricalDtype) and d.ordered]
    if len(ordered) == 2 and list(ordered[0].categories) == list(ordered[1].categories):
        return list(ordered[0].categories)
    if weights is None:
        return None
    raise InputError(
        f"weights={weights!r}: weighted kappa counts a miss by two classes more than a miss "
        "by one, so it needs the order of the classes, and the labels do not carry one. Pass "
        "categories=[...] in order — for skeletal class ceph.class_order('skeletal_class') = "
        "['Class III', 'Class I', 'Class II'] — or ordered categoricals with the same "
        "categories (ceph.classify returns them); a sorted (alphabetical) order would change "
        "kappa silently"
    )


def _kappa_units(units: Sequence | None, n: int) -> np.ndarray:
    if units is None:
        return np.arange(n)
    u = pd.Series(list(units), dtype=object)
    if len(u) != n:
        raise InputError(f"units must give one unit per pair ({n}), got {len(u)}")
    if u.isna().any():
        raise InputError("units has missing values: every pair needs its unit (patient)")
    return pd.factorize(u)[0]


def _agreement_weights(k: int, weights: str | None) -> np.ndarray:
    i = np.arange(k)
    if weights is None:
        return np.eye(k)
    dist = np.abs(i[:, None] - i[None, :]) / max(k - 1, 1)
    return 1.0 - (dist if weights == "linear" else dist**2)


def _mover(
    ri: np.ndarray,
    ti: np.ndarray,
    w: np.ndarray,
    clusters: np.ndarray,
    clustered: bool,
    confidence: float,
) -> tuple[float, float]:
    """MOVER-R interval of κ = 1 − d/q (see :func:`cohens_kappa`, Notes)."""
    k = w.shape[0]
    n = ri.size
    p_row = np.bincount(ri, minlength=k) / n
    p_col = np.bincount(ti, minlength=k) / n
    pe = float(p_row @ w @ p_col)
    dis = 1.0 - w[ri, ti]  # each pair's weighted disagreement
    d_mean, d_var, _, g = cluster_mean_variance(dis, clusters)
    d, q = float(d_mean[0]), 1.0 - pe
    l1, u1 = (
        float(v[0])
        for v in effective_wilson(d, d_var, n, g, confidence, df_correction=clustered, cap=False)
    )
    # influence of each pair on p_e = r'Wc: (Wc)[r_i] + (W'r)[t_i] − 2 p_e
    infl = (w @ p_col)[ri] + (p_row @ w)[ti] - 2.0 * pe
    _, pe_var, _, _ = cluster_mean_variance(infl, clusters)
    g1 = float(g[0])
    crit = (
        sps.t.ppf(0.5 + confidence / 2, g1 - 1)
        if clustered and g1 > 1
        else sps.norm.ppf(0.5 + confidence / 2)
    )
    half = float(crit * np.sqrt(pe_var[0])) if np.isfinite(pe_var[0]) else np.inf
    l2, u2 = q - half, min(q + half, 1.0)
    # MOVER-R for the ratio d/q (Donner & Zou 2012), then κ = 1 − ratio
    dq = d * q
    lower = (dq - np.sqrt(max(dq**2 - l1 * u2 * (2 * d - l1) * (2 * q - u2), 0.0))) / (
        u2 * (2 * q - u2)
    )
    if l2 > 0:
        upper = (dq + np.sqrt(max(dq**2 - u1 * l2 * (2 * d - u1) * (2 * q - l2), 0.0))) / (
            l2 * (2 * q - l2)
        )
    else:
        upper = np.inf  # 1 − p_e may be 0: no upper bound on the ratio
    return max(-1.0, 1.0 - upper), min(1.0, 1.0 - lower)
