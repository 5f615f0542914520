"""Power and sample size of a planned growth study, simulated from a pilot's variance components.

:func:`simulate_power` draws planned two-group studies — every patient seen at the same
times, a random intercept and slope per patient and a residual, as the growth model
(:func:`dentalkit.stats.growth`) fitted them on pilot data — and counts how often the
group × time difference in the rate of change is significant. For a balanced, complete
design the growth model's Satterthwaite t test of that term *is* the two-sample t test of
the per-patient least-squares slopes (``tests/stats/test_growth_ddf.py``), so the default
analysis runs that test on every simulated study (thousands per second);
``analysis="model"`` fits :func:`~dentalkit.stats.growth` to each instead.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd
from scipy import stats

from dentalkit.errors import InputError
from dentalkit.stats._growth import GrowthResult, growth
from dentalkit.stats._proportions import proportion_ci

__all__ = ["COMPONENTS", "POWER_COLUMNS", "simulate_power"]

#: The variance components a planned study is simulated from (SDs in the measure's unit).
COMPONENTS = ("sd_intercept", "sd_slope", "correlation", "sd_residual")
#: Columns of :func:`simulate_power`'s result.
POWER_COLUMNS = [
    "measure",
    "effect",
    "unit",
    "n_per_group",
    "times",
    "alpha",
    "power",
    "power_ci_low",
    "power_ci_high",
    "n_sims",
    "closed_form_power",
    "closed_form_n",
    *COMPONENTS,
    "analysis",
    "method",
    "why",
    "note",
]


def simulate_power(
    pilot: GrowthResult | Mapping[str, float],
    *,
    effect: float,
    n_per_group: int | Sequence[int] | None = None,
    power: float | None = None,
    times: Sequence[float] = (0.0, 1.0, 2.0, 3.0),
    measure: Any = None,
    alpha: float = 0.05,
    n_sims: int = 2000,
    seed: int = 0,
    analysis: str = "slopes",
    max_n: int = 2000,
    unit: str | None = None,
) -> pd.DataFrame:
    """Power of a planned two-group growth study, or the patients it needs, by simulation.

    Parameters
    ----------
    pilot : GrowthResult or mapping
        A fitted growth model (:func:`dentalkit.stats.growth` on pilot data; its
        variance components of ``measure`` are used), or the components themselves:
        ``sd_intercept``, ``sd_slope``, ``correlation``, ``sd_residual``. A
        :class:`~dentalkit.stats.GrowthResult` rebuilt from a study's saved tables
        (``GrowthResult(fixed, variance, models, per=["measure"])``, as ``dentalkit plan``
        does) works too: its ``models`` rows with status ``ok`` name the fitted measures.
    effect : float
        The difference in the rate of change between the two groups to detect, in the
        measure's unit per unit of time (per year with ``time="years"``); ``unit`` of
        the result says which (``deg/year``).
    n_per_group : int or (int, int), optional
        Patients per group (one number: both groups): returns the power.
    power : float, optional
        Target power (e.g. 0.8) instead of ``n_per_group``: returns the smallest equal
        number of patients per group whose simulated power reaches it.
    times : sequence of float
        The planned sessions, on the pilot's time scale (default 0, 1, 2, 3 years).
    measure : optional
        The measure (value of the pilot's ``per`` columns) when the pilot has several.
    alpha : float
        Two-sided level of the test.
    n_sims : int
        Simulated studies per sample size (seeded with ``seed``: results repeat).
    analysis : {"slopes", "model"}
        How each simulated study is tested: the t test of the per-patient slopes (the
        growth model's test for this balanced design; default) or a full
        :func:`~dentalkit.stats.growth` fit (slow; for checking).
    max_n : int
        Largest number per group the search for ``power`` tries.
    unit : str, optional
        The unit of ``effect`` for a pilot given as components (e.g. ``"deg/year"``); a
        fitted pilot's unit comes from its ``models`` table.

    Returns
    -------
    DataFrame
        One row (:data:`POWER_COLUMNS`): the power with its Monte Carlo interval
        (Wilson), the closed-form power and sample size of Diggle et al. (2002) for
        comparison, the components used, ``method`` and ``why`` — a sentence ready for a
        report — and ``note``.

    Raises
    ------
    InputError
        Neither or both of ``n_per_group`` and ``power``; fewer than 2 times; a pilot
        without the measure, or without a fitted model for it; bad numbers.

    Notes
    -----
    Each simulated patient has b₀ + b₁·t + ε at the planned times, (b₀, b₁) bivariate
    normal with the pilot's SDs and correlation, ε normal with the residual SD; the
    second group's mean rate is ``effect`` higher. Its closed-form counterpart
    (Diggle, Heagerty, Liang & Zeger 2002, §2.4, comparing rates of change): with m
    patients per group and ξ = σ²_slope + σ²_residual/Σ(tⱼ − t̄)², the variance of
    one patient's slope, power = Φ(|δ|/√(2ξ/m) − z₁₋α/₂) and
    m = 2(z₁₋α/₂ + z_power)²ξ/δ². The simulation uses the t distribution the analysis
    uses, so with few patients its power is below the normal-theory formula. A pilot
    fitted with a random intercept only gives a slope SD of 0 — every patient assumed
    to change at the same rate, an optimistic plan — and ``note`` says so.

    References
    ----------
    Diggle PJ, Heagerty P, Liang K-Y, Zeger SL. *Analysis of Longitudinal Data*, 2nd ed.
    Oxford University Press 2002, §2.4. Matthews JNS, Altman DG, Campbell MJ, Royston P.
    Analysis of serial measurements in medical research. *BMJ* 1990;300:230–235.

    Examples
    --------
    >>> pilot = {"sd_intercept": 3.0, "sd_slope": 0.4, "correlation": 0.0, "sd_residual": 0.8}
    >>> row = simulate_power(pilot, effect=0.5, n_per_group=20, n_sims=500).iloc[0]
    >>> bool(0.6 < row["power"] < 0.85), round(float(row["closed_form_power"]), 2)
    (True, 0.84)
    """
    if (n_per_group is None) == (power is None):
        raise InputError("give either n_per_group (→ power) or power (→ patients per group)")
    if analysis not in ("slopes", "model"):
        raise InputError(f"analysis={analysis!r} is not allowed; use 'slopes' or 'model'")
    if not 0 < alpha < 1 or (power is not None and not 0 < power < 1):
        raise InputError("alpha and power must be between 0 and 1")
    t = np.asarray(times, dtype=float)
    if t.ndim != 1 or len(np.unique(t)) < 2 or not np.all(np.isfinite(t)):
        raise InputError(f"times={list(times)!r}: a rate needs ≥ 2 distinct, finite times")
    if not np.isfinite(effect) or n_sims < 1:
        raise InputError("effect must be a finite number and n_sims ≥ 1")
    comp, fitted_unit, label, notes = _components(pilot, measure)
    unit = fitted_unit if fitted_unit is not None else unit
    xi = comp["sd_slope"] ** 2 + comp["sd_residual"] ** 2 / ((t - t.mean()) ** 2).sum()
    z_a = stats.norm.ppf(1 - alpha / 2)

    def simulated(sizes: tuple[int, int]) -> float:
        rng = np.random.default_rng(seed)  # the same draws for every size: a monotone search
        return _simulate(rng, sizes, t, comp, effect, alpha, n_sims, analysis)

    closed_n = float(np.ceil(2 * (z_a + stats.norm.ppf(power)) ** 2 * xi / effect**2)) if (
        power is not None and effect != 0
    ) else np.nan  # fmt: skip
    if power is not None:
        sizes, achieved = _search(simulated, power, closed_n, max_n, notes)
    else:
        sizes = _sizes(n_per_group)
        achieved = simulated(sizes)
    se = np.sqrt(xi * (1 / sizes[0] + 1 / sizes[1]))
    closed = float(stats.norm.cdf(abs(effect) / se - z_a)) if se > 0 else np.nan
    k = round(achieved * n_sims)
    low, high = proportion_ci(k, n_sims)
    rate = f"{effect:g} {unit}" if unit else f"{effect:g} per unit of time"
    method = f"{n_sims} simulated studies (seed {seed}); each tested by " + (
        "the two-sample t test of the per-patient slopes (the growth model's "
        "Satterthwaite test for a balanced, complete design)"
        if analysis == "slopes"
        else "stats.growth (group × time, Satterthwaite t)"
    )
    why = (
        f"Power {achieved:.2f} (Monte Carlo 95 % CI {float(low):.2f}–{float(high):.2f}) to "
        f"detect a difference of {rate} in the rate of change between "
        f"two groups of {sizes[0]} and {sizes[1]} patients seen at {_times_text(t)}, "
        f"two-sided α = {alpha:g}; simulated from the pilot's variance components "
        f"(intercept SD {comp['sd_intercept']:.3g}, slope SD {comp['sd_slope']:.3g}, "
        f"residual SD {comp['sd_residual']:.3g}); closed form (Diggle et al. 2002) "
        f"{closed:.2f}."
    )
    row = {
        "measure": label,
        "effect": float(effect),
        "unit": unit,
        "n_per_group": [int(s) for s in sizes],
        "times": [float(v) for v in t],
        "alpha": float(alpha),
        "power": float(achieved),
        "power_ci_low": float(low),
        "power_ci_high": float(high),
        "n_sims": int(n_sims),
        "closed_form_power": closed,
        "closed_form_n": closed_n,
        **{c: float(comp[c]) for c in COMPONENTS},
        "analysis": analysis,
        "method": method,
        "why": why,
        "note": "; ".join(notes) or None,
    }
    return pd.DataFrame([row], columns=POWER_COLUMNS)


def _sizes(n_per_group: int | Sequence[int]) -> tuple[int, int]:
    sizes = [n_per_group, n_per_group] if np.isscalar(n_per_group) else list(n_per_group)
    if len(sizes) != 2 or any(int(s) != s or s < 2 for s in sizes):
        raise InputError(
            f"n_per_group={n_per_group!r}: give the patients per group, ≥ 2 each (one "
            "number for equal groups, or two)"
        )
    return int(sizes[0]), int(sizes[1])


def _times_text(t: np.ndarray) -> str:
    return "times " + ", ".join(f"{v:g}" for v in t)


def _components(
    pilot: GrowthResult | Mapping[str, float], measure: Any
) -> tuple[dict[str, float], str | None, Any, list[str]]:
    """(components, unit, measure label, notes) from a fitted growth model or a mapping."""
    notes: list[str] = []
    if isinstance(pilot, GrowthResult):
        key = () if measure is None else (measure if isinstance(measure, tuple) else (measure,))
        per = pilot.per
        # a result rebuilt from its saved tables (a study's growth_* Parquet files) has no
        # fits: its models rows with status "ok" say which measures were fitted
        fitted_keys = list(pilot._fits) or [
            tuple(k) for k in pilot.models.loc[pilot.models["status"] == "ok", per].to_numpy()
        ]
        if measure is None and len(fitted_keys) == 1:
            key = fitted_keys[0]
        if key not in fitted_keys:
            fitted = [k[0] if len(k) == 1 else k for k in fitted_keys]
            raise InputError(
                f"the pilot has no fitted model for measure={measure!r}; fitted: {fitted[:10]}"
            )
        var = pilot.variance
        for col, v in zip(per, key, strict=True):
            var = var[var[col] == v]
        models = pilot.models
        for col, v in zip(per, key, strict=True):
            models = models[models[col] == v]
        sds = var.loc[var["kind"] == "sd"].set_index("component")["estimate"]
        corr = var.loc[var["kind"] == "correlation", "estimate"]
        slope = [c for c in sds.index if ": slope on " in str(c)]
        intercept = [c for c in sds.index if str(c).endswith(": intercept")]
        comp = {
            "sd_intercept": float(sds[intercept[0]]) if intercept else 0.0,
            "sd_slope": float(sds[slope[0]]) if slope else 0.0,
            "correlation": float(corr.iloc[0]) if len(corr) and np.isfinite(corr.iloc[0]) else 0.0,
            "sd_residual": float(sds["residual"]),
        }
        if not slope:
            notes.append(
                "the pilot model has a random intercept only: the plan assumes every patient "
                "changes at the same rate (slope SD 0), which overstates the power"
            )
        unit = models["unit"].iloc[0] if len(models) else None
        time = str(models["time"].iloc[0]) if len(models) else ""
        per = "year" if time.startswith(("years", "age")) else (time.split(" ")[0] or "time")
        label = key[0] if len(key) == 1 else (key or None)
        return comp, (None if pd.isna(unit) else f"{unit}/{per}"), label, notes
    missing = [c for c in COMPONENTS if c not in pilot]
    if missing:
        raise InputError(f"pilot components lack {missing}; give {list(COMPONENTS)}")
    comp = {c: float(pilot[c]) for c in COMPONENTS}
    if min(comp["sd_intercept"], comp["sd_slope"], comp["sd_residual"]) < 0 or not (
        -1 <= comp["correlation"] <= 1
    ):
        raise InputError(f"pilot components {comp}: SDs must be ≥ 0, the correlation in [−1, 1]")
    if comp["sd_residual"] <= 0:
        raise InputError("sd_residual must be > 0")
    return comp, None, measure, notes


def _simulate(
    rng: np.random.Generator,
    sizes: tuple[int, int],
    t: np.ndarray,
    comp: dict[str, float],
    effect: float,
    alpha: float,
    n_sims: int,
    analysis: str,
) -> float:
    """Share of ``n_sims`` simulated studies whose group × time test has p < alpha."""
    n = sizes[0] + sizes[1]
    s0, s1, r = comp["sd_intercept"], comp["sd_slope"], comp["correlation"]
    z0 = rng.standard_normal((n_sims, n))
    z1 = r * z0 + np.sqrt(max(1 - r**2, 0.0)) * rng.standard_normal((n_sims, n))
    group = np.r_[np.zeros(sizes[0]), np.ones(sizes[1])]
    slope = s1 * z1 + effect * group
    y = (
        (s0 * z0)[:, :, None]
        + slope[:, :, None] * t
        + comp["sd_residual"] * rng.standard_normal((n_sims, n, len(t)))
    )
    if analysis == "model":
        return float(np.mean([_model_p(y[i], t, group) < alpha for i in range(n_sims)]))
    tc = t - t.mean()
    slopes = (y * tc).sum(axis=2) / (tc**2).sum()  # each patient's least-squares slope
    res = stats.ttest_ind(slopes[:, sizes[0] :], slopes[:, : sizes[0]], axis=1)
    return float(np.mean(res.pvalue < alpha))


def _model_p(y: np.ndarray, t: np.ndarray, group: np.ndarray) -> float:
    """p of the group × time term of stats.growth fitted to one simulated study."""
    import warnings

    n, k = y.shape
    table = pd.DataFrame(
        {
            "patient_id": np.repeat([f"s{i}" for i in range(n)], k),
            "years": np.tile(t, n),
            "value": y.ravel(),
            "group": np.repeat(np.where(group == 1, "b", "a"), k),
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        fit = growth(table, per=None, group="group", correction=None)
    row = fit.fixed[fit.fixed["term"] == "years:group[T.b]"]
    return float(row["p_value"].iloc[0]) if len(row) else np.nan


def _search(simulated, target: float, start: float, max_n: int, notes: list[str]):
    """Smallest equal group size whose simulated power reaches ``target`` (bisection)."""
    lo, hi = 2, int(min(max(start if np.isfinite(start) else 10, 3), max_n))
    p_hi = simulated((hi, hi))
    while p_hi < target and hi < max_n:
        lo, hi = hi, min(2 * hi, max_n)
        p_hi = simulated((hi, hi))
    if p_hi < target:
        notes.append(f"power {target:g} not reached with {max_n} patients per group (max_n)")
        return (hi, hi), p_hi
    while hi - lo > 1:
        mid = (lo + hi) // 2
        p_mid = simulated((mid, mid))
        if p_mid >= target:
            hi, p_hi = mid, p_mid
        else:
            lo = mid
    return (hi, hi), p_hi
