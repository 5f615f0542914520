"""Growth and change models: one linear mixed-effects model per measure (private).

:func:`growth` fits ``value ~ time (* group) (+ covariates)`` with a random
intercept per unit (patient) and, where the data identify it, a correlated
random slope on time — the model of Laird & Ware (1982) that lme4's
``lmer(value ~ time + (time | patient))`` fits — with statsmodels' ``MixedLM``
(REML by default), for every measure of a long table at once. The design
matrices are built once for the whole table and sliced per measure, and
``MixedLM`` is called directly (no formula parsing), so the wrapper adds little
to the fits themselves (``benchmarks/growth.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dentalkit.errors import InputError, require
from dentalkit.stats._growth_design import build_design
from dentalkit.stats._growth_fit import DF_METHODS, FittedModel, fit_one
from dentalkit.stats._tables import as_list

__all__ = ["FIXED_COLUMNS", "MODEL_COLUMNS", "VARIANCE_COLUMNS", "GrowthResult", "growth"]

#: Columns of :attr:`GrowthResult.fixed` after the ``per`` columns.
FIXED_COLUMNS = [
    "term",
    "estimate",
    "se",
    "ci_low",
    "ci_high",
    "statistic_name",
    "statistic",
    "df",
    "p_value",
    "p_adjusted",
    "correction",
    "unit",
    "unit_of_analysis",
    "n_units",
    "n_rows",
    "method",
]
#: Columns of :attr:`GrowthResult.variance` after the ``per`` columns.
VARIANCE_COLUMNS = ["component", "kind", "estimate", "unit"]
#: Columns of :attr:`GrowthResult.models` after the ``per`` columns.
MODEL_COLUMNS = [
    "status",
    "unit",
    "unit_of_analysis",
    "n_units",
    "n_rows",
    "n_units_repeated",
    "sessions_per_unit_mean",
    "sessions_per_unit_min",
    "sessions_per_unit_max",
    "time",
    "random_effects",
    "formula",
    "method",
    "converged",
    "singular",
    "log_likelihood",
    "note",
]


@dataclass(frozen=True)
class GrowthResult:
    """Tidy result of :func:`growth` (all tables long, keyed by the ``per`` columns).

    Attributes
    ----------
    fixed : DataFrame
        One row per measure × fixed-effect term (:data:`FIXED_COLUMNS`).
    variance : DataFrame
        One row per measure × variance component: SDs of the random intercept and
        slope, their correlation, the residual SD (:data:`VARIANCE_COLUMNS`).
    models : DataFrame
        One row per measure (:data:`MODEL_COLUMNS`): counts, the model, method,
        convergence and boundary flags, and a plain-words note. Measures that could
        not be fitted are here with ``status`` ``"not fitted"`` or ``"failed"``.
    per : list of str
        The columns that identify a measure.
    """

    fixed: pd.DataFrame
    variance: pd.DataFrame
    models: pd.DataFrame
    per: list[str]
    _fits: dict[tuple, FittedModel] = field(default_factory=dict, repr=False)

    def predict(
        self,
        key: Any = (),
        time: Sequence[float] | np.ndarray = (0.0, 1.0),
        group: Any = None,
        *,
        confidence: float = 0.95,
    ) -> pd.DataFrame:
        """Population-average fit and its confidence band at ``time``.

        Parameters
        ----------
        key : value or tuple
            The measure (values of the ``per`` columns; ``()`` without ``per``).
        time : array of float
            Times on the scale of the ``time`` the model was fitted on (years, or age
            in years before ``origin`` is subtracted).
        group : optional
            Level of ``group`` (default: the reference level).
        confidence : float
            Level of the pointwise band x'β ± t·√(x'Σx) (Σ the fixed effects'
            covariance; t on the Satterthwaite df of the contrast x'β, or z when the
            model was fitted with ``df_method="wald"``).

        Returns
        -------
        DataFrame
            ``time``, ``group``, ``estimate``, ``ci_low``, ``ci_high``; covariates are
            held at their mean over the measure's rows (a dummy at its share).
        """
        k = key if isinstance(key, tuple) else (key,)
        fit = self._fits.get(k)
        if fit is None:
            raise InputError(
                f"no fitted model for {dict(zip(self.per, k, strict=False))}; fitted: "
                f"{[dict(zip(self.per, f, strict=False)) for f in list(self._fits)[:5]]}"
            )
        t = np.asarray(time, dtype=float)
        x = np.tile(fit.mean_x, (len(t), 1))
        names = fit.names
        x[:, names.index("Intercept")] = 1.0
        x[:, names.index(fit.time_name)] = t - fit.origin
        if fit.group is not None:
            prefix = f"{fit.group}[T."
            wanted = f"{prefix}{group}]"
            if group is not None and group != fit.reference and wanted not in names:
                raise InputError(f"{fit.group} level {group!r} is not in the model of {k}")
            for j, name in enumerate(names):
                if name.startswith(prefix):
                    x[:, j] = 1.0 if name == wanted else 0.0
                elif name.startswith(f"{fit.time_name}:{prefix}"):
                    x[:, j] = (t - fit.origin) if name.endswith(wanted) else 0.0
        est = x @ fit.beta
        se = np.sqrt(np.einsum("ij,jk,ik->i", x, fit.cov, x))
        crit = stats.t.ppf(0.5 + confidence / 2, fit.df(x))
        return pd.DataFrame(
            {
                "time": t,
                "group": group if group is not None else fit.reference,
                "estimate": est,
                "ci_low": est - crit * se,
                "ci_high": est + crit * se,
            }
        )

    def bands(self, points: int = 25, *, confidence: float = 0.95) -> pd.DataFrame:
        """The fit and its band (:meth:`predict`) of every fitted measure and group level.

        Parameters
        ----------
        points : int
            Times per curve, evenly spaced over the measure's observed time range.
        confidence : float
            Level of the pointwise band.

        Returns
        -------
        DataFrame
            The ``per`` columns, then ``group``, ``time``, ``estimate``, ``ci_low``,
            ``ci_high`` (a long table, ready for :func:`dentalkit.plot.growth_lines`).
        """
        parts = []
        for key, fit in self._fits.items():
            times = np.linspace(*fit.time_range, points)
            for level in fit.levels:
                band = self.predict(key, times, level, confidence=confidence)
                for col, v in zip(self.per, key, strict=True):
                    band[col] = v
                parts.append(band)
        cols = [*self.per, "group", "time", "estimate", "ci_low", "ci_high"]
        if not parts:
            return pd.DataFrame(columns=cols)
        return pd.concat(parts, ignore_index=True)[cols]


def growth(
    table: pd.DataFrame,
    value: str = "value",
    *,
    per: str | Sequence[str] | None = "measure",
    time: str = "years",
    unit: str = "patient_id",
    group: str | None = None,
    covariates: str | Sequence[str] | None = None,
    patients: pd.DataFrame | None = None,
    origin: float = 0.0,
    random_slope: bool | str = "auto",
    reml: bool = True,
    correction: str | None = "holm",
    confidence: float = 0.95,
    progress: bool = False,
    df_method: str = "satterthwaite",
    group_defined_by: str | None = None,
    adjust_baseline: bool = True,
) -> GrowthResult:
    """Fit a linear mixed-effects growth model per measure of a long table.

    The model of each measure is

    ``value = β0 + β1·time [+ group + group×time] [+ covariates] + b0 + b1·time + ε``

    with ``(b0, b1)`` a patient's random intercept and slope (bivariate normal,
    correlated) and ε the residual (Laird & Ware 1982). β1 is the mean rate of
    change per year of ``time`` in the reference group; ``time:group[T.x]`` is how
    much faster group x changes. The patient (``unit``) is the unit of analysis:
    repeated sessions are grouped, never counted as more patients.

    Parameters
    ----------
    table : DataFrame
        Long table, one row per unit × session × measure, e.g. ``ceph_measures``,
        ``arch_measures`` or ``tooth_measures`` (columns ``patient_id``,
        ``timestamp``, ``session_time``, ``measure``, ``value``, ``unit``).
    value : str
        Numeric column to model (default ``"value"``).
    per : str or list of str, optional
        Columns identifying a measure; one model per value (e.g. ``"measure"``, or
        ``["arch", "measure"]`` for arch measures). ``None``: one model.
    time : str
        ``"years"`` (default): years since the unit's first session, from
        ``session_time`` (Julian years of 365.25 days). ``"age"``: age in years —
        a numeric ``age`` column, or ``session_time`` minus a ``birth_date``
        (from ``table`` or ``patients``). Or the name of any numeric column
        (in ``table`` or ``patients``) on the scale you want the rate per. A column
        named ``years`` or ``age`` is used as it is.
    unit : str
        Column of the unit of analysis (default ``"patient_id"``): the grouping
        factor of the random effects and what ``n_units`` counts.
    group : str, optional
        A between-unit factor (e.g. ``"skeletal_class"``), constant within a unit;
        adds ``group`` and ``group × time`` (treatment coding, first level —
        categorical order, else sorted — is the reference).
    covariates : str or list of str, optional
        More fixed effects (e.g. ``"sex"``): numeric columns enter as they are,
        others as treatment-coded dummies.
    patients : DataFrame, optional
        One row per ``unit`` with columns not in ``table`` (group, covariates,
        ``birth_date``), joined on ``unit``.
    origin : float
        Subtracted from time, so the intercept is the value at ``time = origin``
        (e.g. ``origin=12`` with ``time="age"``: the value at age 12).
    random_slope : {"auto", True, False}
        ``"auto"`` (default): a correlated random slope where the data identify it
        — more rows than random effects (lme4's rule, ``n_rows > 2·n_units``) and at
        least 5 units with ≥ 3 distinct times — and where that fit converges to a
        finite likelihood; otherwise a random intercept only, said in
        ``random_effects`` and ``note``. ``True`` fits the slope wherever the
        rows outnumber the random effects; ``False`` never.
    reml : bool
        Restricted maximum likelihood (default, as lme4) or maximum likelihood.
    correction : str, optional
        Adjustment of each term's p-values across the measures (``"holm"``,
        default, Holm 1979; ``"fdr_bh"``, Benjamini & Hochberg 1995; any method of
        :func:`statsmodels.stats.multitest.multipletests`; ``None``: none). The
        intercept is not tested.
    confidence : float
        Level of the intervals of the fixed effects.
    progress : bool
        Show a tqdm bar over the measures.
    df_method : {"satterthwaite", "wald"}
        ``"satterthwaite"`` (default): t tests and t intervals on Satterthwaite's
        degrees of freedom, computed as lmerTest does (``df`` column); ``"wald"``:
        Wald z (statsmodels' default inference, too narrow with few patients).
    group_defined_by : str, optional
        The measure (a value of the first ``per`` column) whose first-session value
        defined ``group`` — ``"ANB"`` for a skeletal class taken at the first session.
        Such groups differ in their baseline tracing error, so an unadjusted model
        finds group × time effects that are regression to the mean (in ANB, and in
        SNA and SNB which share its landmarks; ``benchmarks/regression_to_mean.py``).
        Then every measure is modelled baseline-adjusted: the patient's centred
        first-session value of this measure as a covariate, also × time and at the
        first session (``baseline ANB``, ``baseline ANB:years``, ``baseline ANB:first
        session`` terms; the last only where patients have ≥ 3 sessions), which is an
        analysis of covariance (Barnett et al. 2005); the ``note`` says so.
    adjust_baseline : bool
        With ``group_defined_by``: ``True`` (default) adjusts as above; ``False`` fits
        the unadjusted model and the ``note`` warns that its group × time terms
        include regression to the mean.

    Returns
    -------
    GrowthResult
        ``fixed``, ``variance`` and ``models`` tables and a ``predict`` method.

    Raises
    ------
    InputError
        An unknown value, unit, time, group or covariate column; a non-numeric
        value or time; a group that changes within a unit; an unknown ``df_method``. Problems of one measure
        (one session per unit, a group level with one unit, mixed units, a fit that
        fails) are reported in its ``models`` row; the other measures are fitted.

    Notes
    -----
    **Small-sample inference.** Each fixed effect is tested with t = estimate / SE on
    Satterthwaite's (1946) degrees of freedom, derived as lmerTest does for lme4
    (Kuznetsova et al. 2017): from the gradient of the fixed effects' covariance with
    respect to the variance parameters (θ, σ) and their asymptotic covariance (twice
    the inverse Hessian of the REML deviance), analytically from the fitted model —
    on sleepstudy df 17.0 for both terms, Days t = 6.771, p = 3.26e-06, 95 % CI
    7.206–13.729, as lmerTest. Wald z (``df_method="wald"``; p 1.3e-11 and CI
    7.438–13.497 on the same fit) treats the variance components as known and covers
    below the nominal level with few patients (docs/statistics.md). Where the df cannot
    be formed (the variance parameters' information is singular) the units minus the
    fixed effects are used and the note says so. Kenward–Roger is not offered: no
    published value was found that would check it beyond what Satterthwaite's already
    matches. A fit is *singular* when a diagonal
    element of the random effects' relative Cholesky factor is below 1e-4 (lme4's
    ``isSingular``): a variance component estimated at zero, or a correlation at
    ±1. With two sessions per patient the random slope is not identifiable
    separately from the residual (lme4 refuses it); the model then has a random
    intercept only and the rate is estimated from within-patient change.
    ``sessions_per_unit_*`` count distinct times per unit among the modelled rows.

    **Optimiser.** statsmodels' default (BFGS, then L-BFGS, then CG) often stops at
    a point it reports as converged that is not the REML maximum when a random
    slope is fitted: on simulated cohorts of 2,000 patients × 3 sessions (slope SD
    0.4, residual SD 0.8) it returned slope SDs of 0.23–0.30 with a REML
    log-likelihood up to 20 units below the maximum that Powell's derivative-free
    method reaches (slope SD 0.38–0.40), and took longer. lme4 also optimises
    derivative-free (BOBYQA, Nelder–Mead). Here one sweep of Powell's derivative-free
    method moves from statsmodels' start into the basin of the maximum, then BFGS
    (gradient tolerance 1e-6) finishes; if BFGS does not converge, a full Powell run
    and BFGS again. This reached the maximum on those cohorts in about half the time
    of the default, and lme4's sleepstudy fit (REML criterion 6e-8 lower than lme4's).
    The variance components, and so the standard errors of the rates, depend on it.

    References
    ----------
    Laird NM, Ware JH (1982) Random-effects models for longitudinal data.
    Biometrics 38:963–974. Bates D, Kliegl R, Vasishth S, Baayen H (2015)
    Parsimonious mixed models. arXiv:1506.04967. Matuschek H, Kliegl R, Vasishth S,
    Baayen H, Bates D (2017) Balancing type I error and power in linear mixed models.
    J Mem Lang 94:305–315. Bates D, Mächler M, Bolker B, Walker S (2015) Fitting
    linear mixed-effects models using lme4. J Stat Softw 67(1). Belenky G et al.
    (2003) Patterns of performance degradation and restoration during sleep
    restriction and subsequent recovery. J Sleep Res 12:1–12 (the ``sleepstudy``
    data the tests reproduce). Satterthwaite FE (1946) An approximate distribution of
    estimates of variance components. Biometrics Bull 2:110–114. Kuznetsova A,
    Brockhoff PB, Christensen RHB (2017) lmerTest package: tests in linear mixed
    effects models. J Stat Softw 82(13). Barnett AG, van der Pols JC, Dobson AJ (2005)
    Regression to the mean: what it is and how to deal with it. Int J Epidemiol
    34:215–220.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame(
    ...     {
    ...         "patient_id": ["a", "a", "b", "b", "c", "c", "d", "d"],
    ...         "years": [0.0, 1.0] * 4,
    ...         "measure": "SNB",
    ...         "value": [78.0, 78.6, 80.1, 80.5, 76.2, 77.0, 79.0, 79.5],
    ...     }
    ... )
    >>> r = growth(t, time="years", random_slope=False)
    >>> row = r.fixed.set_index("term").loc["years"]
    >>> round(float(row["estimate"]), 3), int(row["n_units"]), int(row["n_rows"])
    (0.575, 4, 8)
    """
    if random_slope not in ("auto", True, False):
        raise InputError(f"random_slope={random_slope!r} is not allowed; use 'auto', True or False")
    if not 0 < confidence < 1:
        raise InputError(f"confidence={confidence!r} must be between 0 and 1")
    if df_method not in DF_METHODS:
        raise InputError(f"df_method={df_method!r} is not allowed; use one of {DF_METHODS}")
    per = as_list(per)
    design = build_design(
        table,
        value,
        per=per,
        time=time,
        unit=unit,
        group=group,
        covariates=as_list(covariates),
        baseline=group_defined_by,
        adjust_baseline=adjust_baseline,
        patients=patients,
        origin=float(origin),
    )
    mixedlm = require("statsmodels.regression.mixed_linear_model", "stats")
    keys = list(design.indices)
    if progress:
        from tqdm.auto import tqdm

        keys = tqdm(keys, desc="growth models", unit="measure")
    fixed_rows: list[dict[str, Any]] = []
    variance_rows: list[dict[str, Any]] = []
    model_rows: list[dict[str, Any]] = []
    fits: dict[tuple, FittedModel] = {}
    for key in keys:
        labels = dict(zip(per, key, strict=True))
        one = fit_one(design, key, mixedlm.MixedLM, random_slope, reml, confidence, df_method)
        model_rows.append({**labels, **one.model})
        fixed_rows += [{**labels, **r} for r in one.fixed]
        variance_rows += [{**labels, **r} for r in one.variance]
        if one.fit is not None:
            fits[key] = one.fit
    fixed = pd.DataFrame(fixed_rows).reindex(columns=[*per, *FIXED_COLUMNS])
    fixed = _adjust(fixed, correction, per)
    variance = pd.DataFrame(variance_rows).reindex(columns=[*per, *VARIANCE_COLUMNS])
    models = pd.DataFrame(model_rows).reindex(columns=[*per, *MODEL_COLUMNS])
    for frame, ints in ((fixed, ("n_units", "n_rows")), (models, ("n_units", "n_rows"))):
        for c in ints:
            frame[c] = frame[c].astype("int64")
    for c in ("estimate", "se", "ci_low", "ci_high", "statistic", "df", "p_value", "p_adjusted"):
        fixed[c] = fixed[c].astype("float64")
    variance["estimate"] = variance["estimate"].astype("float64")
    return GrowthResult(fixed=fixed, variance=variance, models=models, per=per, _fits=fits)


def _adjust(fixed: pd.DataFrame, correction: str | None, per: list[str]) -> pd.DataFrame:
    """Adjust each term's p-values across the measures (the intercept is not tested)."""
    adjusted = np.full(len(fixed), np.nan)
    label = np.full(len(fixed), None, dtype=object)
    if correction is not None and len(fixed):
        multitest = require("statsmodels.stats.multitest", "stats")
        p = fixed["p_value"].to_numpy(dtype=float)
        for _, rows in fixed.groupby("term", sort=False).indices.items():
            ok = rows[np.isfinite(p[rows])]
            if not len(ok):
                continue
            try:
                _, adj, _, _ = multitest.multipletests(p[ok], method=correction)
            except ValueError as exc:
                raise InputError(f"correction={correction!r}: {exc}") from None
            adjusted[ok] = adj
            label[ok] = f"{correction} across {len(ok)} measure(s), per term" if per else correction
    fixed["p_adjusted"] = adjusted
    fixed["correction"] = pd.Series(label, index=fixed.index, dtype="object")
    return fixed
