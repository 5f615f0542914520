"""Fitting one measure's growth model and tabulating it (private; see ``_growth.py``).

:func:`fit_one` checks the rows of one measure, chooses the random effects, fits
statsmodels' ``MixedLM`` with :func:`fit_mixedlm` and returns the rows of the
``fixed``, ``variance`` and ``models`` tables.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy import stats

from dentalkit.stats._growth_ddf import Satterthwaite, satterthwaite
from dentalkit.stats._growth_design import Design

#: lme4's ``isSingular`` tolerance on the relative Cholesky factor (Bates et al. 2015).
SINGULAR_TOL = 1e-4
#: Gradient tolerance of the BFGS stage (statsmodels' default 1e-5 stops early on flat REML
#: surfaces: sleepstudy's intercept SD 24.7425 instead of 24.7405).
BFGS_GTOL = 1e-6
#: Fewest units with ≥ 3 distinct times for an automatic random slope.
MIN_SLOPE_UNITS = 5
#: How the fixed effects are tested (``stats.growth(df_method=...)``).
DF_METHODS = ("satterthwaite", "wald")
#: Errors a fit can raise on data it cannot handle (a singular Hessian, a bad start …).
FIT_ERRORS = (np.linalg.LinAlgError, ValueError, FloatingPointError, ZeroDivisionError)


@dataclass(frozen=True)
class FittedModel:
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
    ddf: Satterthwaite | None = None  # None: Wald z
    df_fallback: float | None = None  # df used where Satterthwaite's cannot be formed

    def df(self, L: np.ndarray) -> np.ndarray:
        """Degrees of freedom of the contrasts in the rows of ``L`` (inf: Wald z)."""
        L = np.atleast_2d(L)
        if self.ddf is None:
            return np.full(len(L), np.inf)
        nu = self.ddf.df(L)
        return np.where(np.isfinite(nu), nu, self.df_fallback or np.nan)


@dataclass
class _One:
    model: dict[str, Any]
    fixed: list[dict[str, Any]]
    variance: list[dict[str, Any]]
    fit: FittedModel | None


def fit_one(
    design: Design,
    key: tuple,
    mixedlm: Any,
    random_slope: bool | str,
    reml: bool,
    confidence: float,
    df_method: str = "satterthwaite",
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
        "unit": design.value_unit(idx[ok]),
        "unit_of_analysis": design.unit,
        "time": design.time_text,
        **counts,
    }
    model["method"] = ("REML" if reml else "ML") + (
        " (statsmodels MixedLM, Powell sweep + BFGS), "
        + ("t tests with Satterthwaite df" if df_method == "satterthwaite" else "Wald z")
    )
    empty = _One(model, [], [], None)
    if model["unit"] is not None and "," in str(model["unit"]):
        model["note"] = (
            f"the rows mix units ({model['unit']}): convert to one unit, or split with per="
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
    if design.baseline_terms and counts["_units_3times"] == 0:
        # with two sessions per unit, d·time and d·[first session] carry the same
        # information: the jump term is left out (silently: nothing is lost)
        keep &= np.array(names) != design.baseline_terms[-1]
    if design.baseline_note:
        notes.append(design.baseline_note)
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
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            res, slope = _fit_random_effects(mixedlm, y, X, g, Z, slope, random_slope, reml, notes)
            beta = np.asarray(res.fe_params, dtype=float)
            k = len(beta)
            cov = np.asarray(res.cov_params(), dtype=float)[:k, :k]
            cov_re = np.atleast_2d(np.asarray(res.cov_re, dtype=float))
            scale, llf, converged = float(res.scale), float(res.llf), bool(res.converged)
        except FIT_ERRORS as exc:
            model["status"] = "failed"
            model["note"] = "; ".join([*notes, f"the fit failed: {exc}"])
            return _One(model, [], [], None)
    Z = Z if slope else X[:, :1]
    model["random_effects"] = (
        f"intercept + slope on time (correlated) | {design.unit}"
        if slope
        else f"intercept | {design.unit}"
    )
    model["formula"] = design.formula(names, slope)
    if (
        scale > 0
        and np.all(np.isfinite(cov_re))
        and np.linalg.eigvalsh(cov_re / scale).max() < 1e-8
    ):
        # Every random-effect variance is ~0: the REML fit is ordinary least squares. Take
        # the fixed effects from OLS (statsmodels may return the between-unit terms as 0
        # here: statsmodels issue #10239).
        beta, cov, scale = _ols(y, X, reml)
        cov_re = np.zeros_like(cov_re)
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
    ddf, fallback = None, None
    if df_method == "satterthwaite":
        ddf, fallback = _small_sample(y, X, Z, g, beta, cov_re, scale, reml, n_units, notes)
    model.update(
        status="ok" if converged else "not converged",
        converged=converged,
        singular=singular,
        log_likelihood=llf,
        note="; ".join(notes) or None,
    )
    fit = FittedModel(
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
        ddf=ddf,
        df_fallback=fallback,
    )
    fixed = _fixed_rows(fit, se, confidence, model, design.unit, n_units, n_rows)
    variance = _variance_rows(cov_re, scale, slope, model["unit"], design)
    return _One(model, fixed, variance, fit)


def _fit_random_effects(
    mixedlm: Any,
    y: np.ndarray,
    X: np.ndarray,
    g: np.ndarray,
    Z: np.ndarray,
    slope: bool,
    random_slope: bool | str,
    reml: bool,
    notes: list[str],
) -> tuple[Any, bool]:
    """Fit with the random slope if asked; with ``"auto"`` fall back to the intercept.

    A random slope the data do not support — the fit does not converge to a finite
    likelihood, or it raises (e.g. a singular Hessian) — is dropped rather than reported
    from a broken fit (Bates et al. 2015, "parsimonious mixed models"; Matuschek et al.
    2017), and ``notes`` says so. Returns the fit and whether it has the slope.
    """
    if not slope:
        return fit_mixedlm(mixedlm(y, X, g, exog_re=Z), reml), False
    try:
        res = fit_mixedlm(mixedlm(y, X, g, exog_re=Z), reml)
        why = None if _usable(res) else "did not converge"
    except FIT_ERRORS as exc:
        if random_slope != "auto":
            raise
        res, why = None, f"could not be fitted ({type(exc).__name__}: {exc})"
    if why is None or random_slope != "auto":
        return res, True
    res = fit_mixedlm(mixedlm(y, X, g, exog_re=X[:, :1]), reml)
    notes.append(
        f"the model with a random slope {why}: random intercept only, "
        "so every unit is assumed to change at the same rate"
    )
    return res, False


def _small_sample(
    y: np.ndarray,
    X: np.ndarray,
    Z: np.ndarray,
    g: np.ndarray,
    beta: np.ndarray,
    cov_re: np.ndarray,
    scale: float,
    reml: bool,
    n_units: int,
    notes: list[str],
) -> tuple[Satterthwaite | None, float]:
    """Satterthwaite's pieces, and the df used for a contrast where they fail.

    That fallback, n_units − p (p fixed effects), is the between-unit residual df: it
    is no larger than Satterthwaite's for a between-unit effect, and smaller for a
    within-unit one, so a t test on it errs on the safe side.
    """
    fallback = float(max(n_units - X.shape[1], 1))
    try:
        with np.errstate(all="ignore"):
            ddf = satterthwaite(y, X, Z, g, beta, cov_re, scale, reml)
    except np.linalg.LinAlgError as exc:
        notes.append(
            f"Satterthwaite's df could not be computed ({exc}): t tests on "
            f"{fallback:g} df (units − fixed effects, conservative)"
        )
        return None, fallback
    if not np.all(np.isfinite(ddf.df(np.eye(X.shape[1])))):
        notes.append(
            "Satterthwaite's df could not be formed for every term (the variance "
            f"parameters' information is singular): those use {fallback:g} df "
            "(units − fixed effects, conservative)"
        )
    return ddf, fallback


def _fixed_rows(
    fit: FittedModel,
    se: np.ndarray,
    confidence: float,
    model: dict[str, Any],
    unit: str,
    n_units: int,
    n_rows: int,
) -> list[dict[str, Any]]:
    """One row per fixed effect: estimate, SE, t (or z) with its df, p and interval."""
    beta = fit.beta
    df = fit.df(np.eye(len(beta)))
    with np.errstate(divide="ignore", invalid="ignore"):
        stat = beta / se
    wald = fit.ddf is None and fit.df_fallback is None
    crit = stats.t.ppf(0.5 + confidence / 2, df)
    p = 2 * stats.t.sf(np.abs(stat), df)
    return [
        {
            "term": name,
            "estimate": beta[j],
            "se": se[j],
            "ci_low": beta[j] - crit[j] * se[j],
            "ci_high": beta[j] + crit[j] * se[j],
            "statistic_name": "z" if wald else "t",
            "statistic": stat[j],
            "df": np.nan if wald else df[j],
            "p_value": p[j] if name != "Intercept" else np.nan,
            "unit": model["unit"],
            "unit_of_analysis": unit,
            "n_units": n_units,
            "n_rows": n_rows,
            "method": model["method"],
        }
        for j, name in enumerate(fit.names)
    ]


def _variance_rows(
    cov_re: np.ndarray, scale: float, slope: bool, vu: str | None, design: Design
) -> list[dict[str, Any]]:
    """SDs of the random intercept and slope, their correlation, the residual SD."""
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
    per_time = "year" if design.time_name in ("years", "age") else design.time_name
    for v in variance:
        v["unit"] = None if v["kind"] != "sd" or vu is None else vu
    if slope and vu is not None:
        variance[1]["unit"] = f"{vu}/{per_time}"
    return variance


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
