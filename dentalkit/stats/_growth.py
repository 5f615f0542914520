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

import warnings
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dentalkit.errors import InputError, require
from dentalkit.stats._growth_design import Design, build_design
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
    "p_value",
    "p_adjusted",
    "correction",
    "value_unit",
    "unit",
    "n_units",
    "n_rows",
    "method",
]
#: Columns of :attr:`GrowthResult.variance` after the ``per`` columns.
VARIANCE_COLUMNS = ["component", "kind", "estimate", "unit"]
#: Columns of :attr:`GrowthResult.models` after the ``per`` columns.
MODEL_COLUMNS = [
    "status",
    "value_unit",
    "unit",
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
#: lme4's ``isSingular`` tolerance on the relative Cholesky factor (Bates et al. 2015).
SINGULAR_TOL = 1e-4
#: Gradient tolerance of the BFGS stage (statsmodels' default 1e-5 stops early on flat REML
#: surfaces: sleepstudy's intercept SD 24.7425 instead of 24.7405).
BFGS_GTOL = 1e-6
#: Fewest units with ≥ 3 distinct times for an automatic random slope.
MIN_SLOPE_UNITS = 5


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
    _fits: dict[tuple, _Fit] = field(default_factory=dict, repr=False)

    def predict(
        self,
        key: Any = (),
        time: Sequence[float] | np.ndarray = (0.0, 1.0),
        group: Any = None,
        *,
        confidence: float = 0.95,
    ) -> pd.DataFrame:
        """Population-average fit and its Wald confidence band at ``time``.

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
            Level of the pointwise band x'β ± z·√(x'Σx) (Σ the fixed effects'
            covariance).

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
        z = stats.norm.ppf(0.5 + confidence / 2)
        return pd.DataFrame(
            {
                "time": t,
                "group": group if group is not None else fit.reference,
                "estimate": est,
                "ci_low": est - z * se,
                "ci_high": est + z * se,
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


@dataclass(frozen=True)
class _Fit:
    """What :meth:`GrowthResult.predict` needs of one fitted model."""

    names: list[str]
    beta: np.ndarray
    cov: np.ndarray
    mean_x: np.ndarray
    origin: float
    time_name: str
    group: str | None
    reference: Any
    levels: list[Any]
    time_range: tuple[float, float]


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
        Level of the Wald intervals of the fixed effects.
    progress : bool
        Show a tqdm bar over the measures.

    Returns
    -------
    GrowthResult
        ``fixed``, ``variance`` and ``models`` tables and a ``predict`` method.

    Raises
    ------
    InputError
        An unknown value, unit, time, group or covariate column; a non-numeric
        value or time; a group that changes within a unit. Problems of one measure
        (one session per unit, a group level with one unit, mixed units, a fit that
        fails) are reported in its ``models`` row; the other measures are fitted.

    Notes
    -----
    Fixed effects are tested with Wald z statistics from the REML fit
    (statsmodels' defaults); with few patients (< 30 or so) these intervals are
    somewhat narrow, as no small-sample (Kenward–Roger, Satterthwaite) degrees of
    freedom are available in statsmodels. A fit is *singular* when a diagonal
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
    data the tests reproduce).

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
    per = as_list(per)
    design = build_design(
        table,
        value,
        per=per,
        time=time,
        unit=unit,
        group=group,
        covariates=as_list(covariates),
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
    fits: dict[tuple, _Fit] = {}
    zcrit = float(stats.norm.ppf(0.5 + confidence / 2))
    for key in keys:
        labels = dict(zip(per, key, strict=True))
        one = _fit_one(design, key, mixedlm.MixedLM, random_slope, reml, zcrit)
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
    for c in ("estimate", "se", "ci_low", "ci_high", "statistic", "p_value", "p_adjusted"):
        fixed[c] = fixed[c].astype("float64")
    variance["estimate"] = variance["estimate"].astype("float64")
    return GrowthResult(fixed=fixed, variance=variance, models=models, per=per, _fits=fits)


@dataclass
class _One:
    model: dict[str, Any]
    fixed: list[dict[str, Any]]
    variance: list[dict[str, Any]]
    fit: _Fit | None


def _fit_one(
    design: Design,
    key: tuple,
    mixedlm: Any,
    random_slope: bool | str,
    reml: bool,
    zcrit: float,
) -> _One:
    """Check, fit and tabulate the model of one measure."""
    idx = design.indices[key]
    y = design.y[idx]
    t = design.t[idx]
    X = design.X[idx]
    g = design.units[idx]
    ok = np.isfinite(y) & np.isfinite(t) & np.isfinite(X).all(axis=1)
    notes: list[str] = []
    if not ok.all():
        notes.append(f"{int((~ok).sum())} row(s) with a missing value, time or covariate dropped")
        y, t, X, g = y[ok], t[ok], X[ok], g[ok]
    counts = design.counts(g, t)
    model: dict[str, Any] = {
        "status": "not fitted",
        "value_unit": design.value_unit(idx[ok]),
        "unit": design.unit,
        "time": design.time_text,
        **counts,
    }
    model["method"] = (
        "REML" if reml else "ML"
    ) + " (statsmodels MixedLM, Powell sweep + BFGS), Wald z"
    empty = _One(model, [], [], None)
    if model["value_unit"] is not None and "," in str(model["value_unit"]):
        model["note"] = (
            f"the rows mix units ({model['value_unit']}): convert to one unit, or split with per="
        )
        return empty
    if counts["n_units_repeated"] == 0:
        model["note"] = "; ".join(
            [
                *notes,
                "no unit has two distinct times: change over time is not identifiable "
                "(slope not estimable); add later sessions",
            ]
        )
        return empty
    if len(y) and np.std(y) <= 1e-10 * max(1.0, float(np.abs(y).max())):
        model["note"] = "; ".join([*notes, "the value is the same in every row: nothing to model"])
        return empty
    names = list(design.names)
    keep = np.ones(len(names), dtype=bool)
    if design.group is not None:
        level_units = design.units_per_level(g, X)
        absent = [lv for lv, n in level_units.items() if n == 0]
        lonely = {lv: n for lv, n in level_units.items() if n == 1}
        if lonely:
            model["note"] = "; ".join(
                [
                    *notes,
                    f"{design.group} level(s) {list(lonely)} have a single {design.unit}: "
                    "a group × time effect needs ≥ 2 units per level; merge or drop the level",
                ]
            )
            return empty
        present = [lv for lv in level_units if lv not in absent]
        if len(present) < 2:
            model["note"] = "; ".join(
                [*notes, f"fewer than two {design.group} levels have rows: no group effect"]
            )
            return empty
        if absent:
            notes.append(f"{design.group} level(s) {absent} have no rows here")
            for lv in absent:
                dummy = design.dummy(lv)
                keep &= ~np.isin(names, [dummy, f"{design.time_name}:{dummy}"])
        reference = present[0]
        if reference != design.levels[0]:
            notes.append("the reference level has no rows: refit with another order")
            model["note"] = "; ".join(notes)
            return empty
    else:
        reference = None
    constant = (X[:, keep].std(axis=0) == 0) & (np.array(names)[keep] != "Intercept")
    if constant.any():
        dropped = [n for n, c in zip(np.array(names)[keep], constant, strict=True) if c]
        notes.append(f"term(s) {dropped} constant here: left out")
        keep[np.flatnonzero(keep)[constant]] = False
    names = [n for n, k in zip(names, keep, strict=True) if k]
    X = X[:, keep]
    n_rows, n_units = counts["n_rows"], counts["n_units"]
    rows_ok = n_rows > 2 * n_units
    identified = rows_ok and counts["_units_3times"] >= MIN_SLOPE_UNITS
    slope = identified if random_slope == "auto" else (bool(random_slope) and rows_ok)
    if not slope and random_slope is not False:
        why = (
            f"{n_rows} rows do not outnumber the 2 random effects × {n_units} units"
            if not rows_ok
            else f"only {counts['_units_3times']} unit(s) have ≥ 3 distinct times"
        )
        notes.append(
            f"random slope not identifiable ({why}): random intercept only, "
            "so every unit is assumed to change at the same rate"
        )
    Z = X[:, [names.index("Intercept"), names.index(design.time_name)]] if slope else X[:, :1]
    model["random_effects"] = (
        f"intercept + slope on time (correlated) | {design.unit}"
        if slope
        else f"intercept | {design.unit}"
    )
    model["formula"] = design.formula(names, slope)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res = fit_mixedlm(mixedlm(y, X, g, exog_re=Z), reml)
            if slope and random_slope == "auto" and not _usable(res):
                # Drop the random slope the data do not support (Bates et al. 2015,
                # "parsimonious mixed models"; Matuschek et al. 2017) and say so.
                slope = False
                Z = X[:, :1]
                res = fit_mixedlm(mixedlm(y, X, g, exog_re=Z), reml)
                notes.append(
                    "the model with a random slope did not converge: random intercept only, "
                    "so every unit is assumed to change at the same rate"
                )
                model["random_effects"] = f"intercept | {design.unit}"
                model["formula"] = design.formula(names, slope)
            beta = np.asarray(res.fe_params, dtype=float)
            k = len(beta)
            cov = np.asarray(res.cov_params(), dtype=float)[:k, :k]
            cov_re = np.atleast_2d(np.asarray(res.cov_re, dtype=float))
            scale, llf, converged = float(res.scale), float(res.llf), bool(res.converged)
        except (np.linalg.LinAlgError, ValueError, FloatingPointError) as exc:
            model["status"] = "failed"
            model["note"] = "; ".join([*notes, f"the fit failed: {exc}"])
            return _One(model, [], [], None)
    if (
        scale > 0
        and np.all(np.isfinite(cov_re))
        and np.linalg.eigvalsh(cov_re / scale).max() < 1e-8
    ):
        # Every random-effect variance is ~0: the REML fit is ordinary least squares. Take
        # the fixed effects from OLS (statsmodels may return the between-unit terms as 0
        # here: statsmodels issue #10239).
        beta, cov, scale = _ols(y, X, reml)
        notes.append("every random-effect variance is ~0: fixed effects by least squares")
    se = np.sqrt(np.clip(np.diag(cov), 0, None))
    if not np.isfinite(llf):
        converged = False  # an infinite likelihood is a numerical breakdown, not a maximum
    if not (scale > 0 and np.all(np.isfinite(se) & (se > 0)) and np.all(np.isfinite(beta))):
        model.update(status="failed", converged=False, log_likelihood=llf)
        model["note"] = "; ".join(
            [
                *notes,
                "the fit is degenerate (no residual variation, e.g. a constant value, or "
                "an information matrix that cannot be inverted): no estimates",
            ]
        )
        return _One(model, [], [], None)
    singular = _singular(cov_re, scale)
    if not converged:
        messages = sorted({str(w.message).split("\n")[0] for w in caught})
        notes.append(
            "the optimiser did not converge: estimates are not trustworthy"
            + (f" (statsmodels: {'; '.join(messages)})" if messages else "")
        )
    if singular:
        notes.append(
            "boundary (singular) fit: a random-effect SD is ~0 or their correlation ±1; "
            "the data do not support that component (consider random_slope=False)"
        )
    model.update(
        status="ok" if converged else "not converged",
        converged=converged,
        singular=singular,
        log_likelihood=llf,
        note="; ".join(notes) or None,
    )
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = beta / se
    p = 2 * stats.norm.sf(np.abs(stat))
    fixed = [
        {
            "term": name,
            "estimate": beta[j],
            "se": se[j],
            "ci_low": beta[j] - zcrit * se[j],
            "ci_high": beta[j] + zcrit * se[j],
            "statistic_name": "z",
            "statistic": stat[j],
            "p_value": p[j] if name != "Intercept" else np.nan,
            "value_unit": model["value_unit"],
            "unit": design.unit,
            "n_units": n_units,
            "n_rows": n_rows,
            "method": model["method"],
        }
        for j, name in enumerate(names)
    ]
    sds = np.sqrt(np.clip(np.diag(cov_re), 0, None))
    variance = [
        {"component": f"{design.unit}: intercept", "kind": "sd", "estimate": sds[0]},
    ]
    if slope:
        corr = cov_re[0, 1] / (sds[0] * sds[1]) if sds[0] > 0 and sds[1] > 0 else np.nan
        variance += [
            {
                "component": f"{design.unit}: slope on {design.time_name}",
                "kind": "sd",
                "estimate": sds[1],
            },
            {
                "component": f"{design.unit}: intercept ~ slope",
                "kind": "correlation",
                "estimate": corr,
            },
        ]
    variance.append({"component": "residual", "kind": "sd", "estimate": np.sqrt(scale)})
    vu = model["value_unit"]
    per_time = "year" if design.time_name in ("years", "age") else design.time_name
    for v in variance:
        v["unit"] = None if v["kind"] != "sd" or vu is None else vu
    if slope and vu is not None:
        variance[1]["unit"] = f"{vu}/{per_time}"
    fit = _Fit(
        names=names,
        beta=beta,
        cov=cov,
        mean_x=X.mean(axis=0),
        origin=design.origin,
        time_name=design.time_name,
        group=design.group,
        reference=reference,
        levels=[reference] + [lv for lv in design.levels[1:] if design.dummy(lv) in names]
        if design.group is not None
        else [None],
        time_range=(float(t.min()) + design.origin, float(t.max()) + design.origin),
    )
    return _One(model, fixed, variance, fit)


def fit_mixedlm(model: Any, reml: bool = True) -> Any:
    """Fit a statsmodels ``MixedLM``: one Powell sweep, then BFGS; a full Powell if needed.

    A fit counts only if the optimiser converged *and* its log-likelihood is finite (at a
    random-effects covariance that is exactly singular, statsmodels can report a
    "converged" fit with an infinite likelihood and absurd standard errors). Returns the
    best such fit, or the last one tried when none qualifies.
    """
    start = model.fit(reml=reml, method="powell", maxiter=1)
    res = model.fit(reml=reml, method="bfgs", start_params=start.params_object, gtol=BFGS_GTOL)
    if _usable(res):
        return res
    full = model.fit(reml=reml, method="powell")
    again = model.fit(reml=reml, method="bfgs", start_params=full.params_object, gtol=BFGS_GTOL)
    candidates = [r for r in (again, full, res) if _usable(r)] or [again]
    return max(candidates, key=lambda r: r.llf)


def _usable(res: Any) -> bool:
    return bool(res.converged) and bool(np.isfinite(res.llf))


def _ols(y: np.ndarray, X: np.ndarray, reml: bool) -> tuple[np.ndarray, np.ndarray, float]:
    """Least-squares fixed effects, their covariance and the residual variance."""
    beta, *_ = np.linalg.lstsq(X, y, rcond=None)
    resid = y - X @ beta
    n, k = X.shape
    scale = float(resid @ resid) / (n - k if reml else n)
    return beta, scale * np.linalg.pinv(X.T @ X), scale


def _singular(cov_re: np.ndarray, scale: float) -> bool:
    """lme4's ``isSingular``: a diagonal of the relative Cholesky factor < 1e-4."""
    if not np.all(np.isfinite(cov_re)) or scale <= 0:
        return True
    try:
        theta = np.linalg.cholesky(cov_re / scale)
    except np.linalg.LinAlgError:
        return True
    return bool(np.any(np.abs(np.diag(theta)) < SINGULAR_TOL))


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
