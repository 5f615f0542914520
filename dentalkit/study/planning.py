"""Power of the study's growth comparisons where groups are small, and planning from a pilot.

The growth analysis (:func:`dentalkit.study.growth_by_group`) compares the rate of change
of each measure between groups. Where a compared group has fewer than
:data:`SMALL_GROUP` patients the report states the power those group sizes have for a
pre-specified difference in rate (:data:`POWER_EFFECT`), simulated with
:func:`dentalkit.stats.simulate_power` from the fitted variance components
(:func:`small_group_power`). :func:`plan` is ``dentalkit plan``: power for given group
sizes, or the group size for a target power, from a pilot study's saved growth tables or
from variance components given as numbers.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dentalkit.errors import InputError
from dentalkit.study.groups import GROWTH_DATA_COLUMNS

__all__ = [
    "POWER_EFFECT",
    "POWER_N_SIMS",
    "SMALL_GROUP",
    "pilot_growth",
    "plan",
    "power_lines",
    "read_pilot",
    "session_times",
    "small_group_power",
]

#: A compared group with fewer patients than this is *small*: the report then states the
#: power its comparison has. Why 20: below about 20 patients per group the growth model's
#: Satterthwaite df are small, the between-patient variance is estimated from little
#: information, and a non-significant rate difference says little — orthodontic cohorts
#: of 8–40 patients per group are the case issue 29 names, and 20 is the rule of thumb
#: stated in advance, not chosen after seeing the data.
SMALL_GROUP = 20
#: The difference in the rate of change (per year) the report's power is stated for, by
#: the measure's unit: half a degree or half a millimetre per year, a difference in growth
#: rate of clinical interest, fixed in advance. Power for the *observed* difference is not
#: reported: it is a function of the p-value and adds nothing to it (Hoenig & Heisey 2001).
POWER_EFFECT: Mapping[str, float] = {"deg": 0.5, "mm": 0.5}
#: Simulated studies per stated power in the report: a few thousand simulated t tests run
#: in well under a second; the Monte Carlo interval (Wilson) is stated beside the power.
POWER_N_SIMS = 1000
#: The growth tables a pilot needs (``analyses/<name>.parquet``).
PILOT_TABLES = ("growth_fixed", "growth_variance", "growth_models")


def pilot_growth(analyses: Mapping[str, pd.DataFrame]):
    """A :class:`~dentalkit.stats.GrowthResult` rebuilt from a study's growth tables.

    Parameters
    ----------
    analyses : mapping of DataFrames
        The study's analyses with ``growth_fixed``, ``growth_variance`` and
        ``growth_models`` (:func:`dentalkit.study.growth_by_group`).

    Returns
    -------
    GrowthResult
        Without the fits (no ``predict``): enough for
        :func:`dentalkit.stats.simulate_power`, whose pilot it is.

    Raises
    ------
    InputError
        A growth table is absent.
    """
    from dentalkit.stats import GrowthResult

    missing = [name for name in PILOT_TABLES if analyses.get(name) is None]
    if missing:
        raise InputError(
            f"the pilot has no {', '.join(missing)} table(s): the study's growth analysis "
            "did not run (it needs patients with two or more sessions, in two or more "
            "groups); give the variance components instead (--sd-intercept, --sd-slope, "
            "--correlation, --sd-residual)"
        )
    return GrowthResult(
        fixed=analyses["growth_fixed"],
        variance=analyses["growth_variance"],
        models=analyses["growth_models"],
        per=["measure"],
    )


def read_pilot(folder: str | Path):
    """The growth model of a pilot study folder (its ``analyses/`` or the folder itself).

    Parameters
    ----------
    folder : path
        A folder written by ``dentalkit study`` / ``dentalkit demo`` (with ``analyses/``)
        or by ``dentalkit analyze`` (the Parquet files themselves).

    Returns
    -------
    GrowthResult
        :func:`pilot_growth` of its tables.

    Raises
    ------
    InputError
        The folder does not exist or holds no growth tables.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(f"pilot folder {folder} does not exist")
    where = folder / "analyses" if (folder / "analyses").is_dir() else folder
    tables = {
        name: pd.read_parquet(where / f"{name}.parquet")
        for name in PILOT_TABLES
        if (where / f"{name}.parquet").exists()
    }
    if not tables:
        raise InputError(
            f"{where} holds no growth tables ({', '.join(f'{n}.parquet' for n in PILOT_TABLES)}):"
            " give a folder written by dentalkit study, demo or analyze whose patients have "
            "two or more sessions, or the variance components (--sd-intercept, --sd-slope, "
            "--correlation, --sd-residual)"
        )
    return pilot_growth(tables)


def session_times(growth_data: pd.DataFrame) -> tuple[float, ...]:
    """The cohort's typical session times, in years since each patient's first session.

    The most common number of sessions k per patient, and the mean time of each of the k
    sessions over the patients seen k times (rounded to 0.01 year).

    Examples
    --------
    >>> t = pd.DataFrame(
    ...     {
    ...         "patient_id": ["a", "a", "b", "b"],
    ...         "session_time": pd.to_datetime(
    ...             ["2024-01-01", "2025-01-01", "2024-06-01", "2025-12-01"]
    ...         ),
    ...     }
    ... )
    >>> session_times(t)
    (0.0, 1.25)
    """
    sessions = growth_data[["patient_id", "session_time"]].dropna().drop_duplicates()
    sessions = sessions.assign(session_time=pd.to_datetime(sessions["session_time"], utc=True))
    first = sessions.groupby("patient_id")["session_time"].transform("min")
    years = (sessions["session_time"] - first).dt.total_seconds() / (365.25 * 86400)
    sessions = sessions.assign(years=years.to_numpy()).sort_values(["patient_id", "years"])
    counts = sessions.groupby("patient_id")["years"].size()
    k = int(counts.mode().max())
    keep = sessions[sessions["patient_id"].isin(counts.index[counts == k])]
    order = keep.groupby("patient_id").cumcount()
    return tuple(round(float(v), 2) for v in keep.groupby(order.to_numpy())["years"].mean())


def _group_column(growth_data: pd.DataFrame) -> str:
    return next(c for c in growth_data.columns if c not in GROWTH_DATA_COLUMNS)


def small_group_power(
    analyses: Mapping[str, pd.DataFrame],
    *,
    threshold: int = SMALL_GROUP,
    effects: Mapping[str, float] = POWER_EFFECT,
    n_sims: int = POWER_N_SIMS,
    seed: int = 0,
    alpha: float = 0.05,
) -> pd.DataFrame | None:
    """Power of each growth comparison with a group of fewer than ``threshold`` patients.

    For every fitted measure and every group compared with the reference group, where
    either has fewer than ``threshold`` patients (with a value of the measure), the
    power to detect a difference in rate of ``effects[unit]`` per year with those two
    group sizes at the cohort's :func:`session_times`, simulated
    (:func:`dentalkit.stats.simulate_power`, ``n_sims`` studies, ``seed``) from the
    measure's fitted variance components.

    Parameters
    ----------
    analyses : mapping of DataFrames
        The study's analyses with the growth tables and ``growth_data``.
    threshold : int
        Patients per group below which a group is small (:data:`SMALL_GROUP`).
    effects : mapping of str to float
        The rate difference per year by the measure's unit (:data:`POWER_EFFECT`);
        measures in other units are left out.
    n_sims, seed, alpha
        Passed to :func:`~dentalkit.stats.simulate_power`.

    Returns
    -------
    DataFrame or None
        One row per measure × compared group: ``measure``, ``reference``, ``group``,
        then the columns of :data:`dentalkit.stats._power.POWER_COLUMNS` (``n_per_group`` in
        the order reference, group). None without growth tables; 0 rows when no compared
        group is small.
    """
    from dentalkit.stats import simulate_power

    data, models = analyses.get("growth_data"), analyses.get("growth_models")
    if data is None or models is None or not len(data) or analyses.get("growth_fixed") is None:
        return None
    pilot = pilot_growth(analyses)
    col = _group_column(data)
    fixed = analyses["growth_fixed"]
    times = session_times(data)
    rows = []
    for model in models[models["status"] == "ok"].itertuples():
        effect = effects.get(str(model.unit))
        if effect is None or len(times) < 2:
            continue
        rows_m = data[(data["measure"].astype(str) == str(model.measure)) & data["value"].notna()]
        sizes = rows_m.groupby(rows_m[col].astype("object"))["patient_id"].nunique()
        prefix = f"years:{col}[T."
        terms = fixed.loc[fixed["measure"].astype(str) == str(model.measure), "term"].astype(str)
        others = [t[len(prefix) : -1] for t in terms if t.startswith(prefix)]
        reference = [g for g in sizes.index if str(g) not in others]
        if len(reference) != 1:
            continue
        ref = reference[0]
        for g in others:
            n_ref, n_g = int(sizes.get(ref, 0)), int(sizes.get(g, 0))
            if min(n_ref, n_g) >= threshold or min(n_ref, n_g) < 2:
                continue
            row = simulate_power(
                pilot,
                measure=model.measure,
                effect=effect,
                n_per_group=(n_ref, n_g),
                times=times,
                alpha=alpha,
                n_sims=n_sims,
                seed=seed,
            ).iloc[0]
            rows.append({"reference": str(ref), "group": str(g), **row.to_dict()})
    from dentalkit.stats._power import POWER_COLUMNS

    cols = ["measure", "reference", "group", *[c for c in POWER_COLUMNS if c != "measure"]]
    return pd.DataFrame(rows, columns=cols)


def plan(
    pilot: str | Path | Mapping[str, float],
    *,
    effect: float,
    measure: Any = None,
    n_per_group: int | Sequence[int] | None = None,
    power: float | None = None,
    times: Sequence[float] = (0.0, 1.0, 2.0, 3.0),
    alpha: float = 0.05,
    n_sims: int = 2000,
    seed: int = 0,
    unit: str | None = None,
) -> pd.DataFrame:
    """Power for given group sizes, or the group size for a power: ``dentalkit plan``.

    Parameters
    ----------
    pilot : path or mapping
        A pilot study folder (:func:`read_pilot`: its growth tables), or the variance
        components ``sd_intercept``, ``sd_slope``, ``correlation``, ``sd_residual``.
    effect : float
        The difference in the rate of change between the two groups, in the measure's
        unit per year.
    measure : optional
        The pilot's measure whose components are used (needed when it has several).
    n_per_group, power
        One of them: patients per group (one number or two) → power; a target power →
        patients per group.
    times : sequence of float
        The planned sessions in years (default 0, 1, 2, 3).
    alpha, n_sims, seed
        Two-sided level, simulated studies, random seed.
    unit : str, optional
        The unit of ``effect`` for a pilot given as components (e.g. ``"deg/year"``).

    Returns
    -------
    DataFrame
        One row: :func:`dentalkit.stats.simulate_power`'s.

    Raises
    ------
    InputError
        No growth tables in the folder, an unknown measure, or what
        :func:`~dentalkit.stats.simulate_power` refuses.
    """
    from dentalkit.stats import simulate_power

    source = pilot if isinstance(pilot, Mapping) else read_pilot(pilot)
    if isinstance(pilot, Mapping) and measure is None:
        measure = "(given components)"
    elif measure is None:
        models = source.models
        fitted = models.loc[models["status"] == "ok", "measure"].astype(str).tolist()
        if len(fitted) != 1:
            raise InputError(
                f"the pilot {pilot} has {len(fitted)} fitted growth models "
                f"({', '.join(fitted) or 'none'}): name the measure to plan for (--measure, "
                "measure=)"
            )
    return simulate_power(
        source,
        effect=effect,
        n_per_group=n_per_group,
        power=power,
        times=times,
        measure=measure,
        alpha=alpha,
        n_sims=n_sims,
        seed=seed,
        unit=unit,
    )


def power_lines(result: pd.DataFrame) -> list[str]:
    """The lines ``dentalkit plan`` prints for a :func:`plan` result (one row)."""
    r = result.iloc[0]
    n = r["n_per_group"]
    unit = r["unit"] or "per unit of time"
    closed_n = r["closed_form_n"]
    lines = [
        f"measure: {r['measure']}; effect: {r['effect']:g} {unit}; times: "
        + ", ".join(f"{t:g}" for t in r["times"])
        + f"; alpha {r['alpha']:g}",
        f"patients per group: {n[0]} and {n[1]}",
        f"power: {r['power']:.3f} (Monte Carlo 95 % CI {r['power_ci_low']:.3f}–"
        f"{r['power_ci_high']:.3f}; {r['n_sims']} simulated studies)",
        f"closed form (Diggle et al. 2002): power {r['closed_form_power']:.3f}"
        + (f", n per group {int(closed_n)}" if np.isfinite(closed_n) else ""),
        f"components: intercept SD {r['sd_intercept']:.4g}, slope SD {r['sd_slope']:.4g}, "
        f"correlation {r['correlation']:.3g}, residual SD {r['sd_residual']:.4g}",
        f"method: {r['method']}",
    ]
    if r["note"]:
        lines.append(f"note: {r['note']}")
    return lines
