"""Input checks and design matrices of :func:`dentalkit.stats.growth` (private).

Everything that does not depend on the measure is done once for the whole table:
the time variable, the fixed-effects design (intercept, time, group dummies and
their interactions with time, covariates), the unit codes, and the row positions
of every measure. The fitting loop then only slices arrays.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from dentalkit.errors import InputError
from dentalkit.stats._tables import present_levels, require_columns

SECONDS_PER_YEAR = 365.25 * 86400.0  # Julian year, as ceph.change and the sandbox


@dataclass(frozen=True)
class Design:
    """Arrays over all rows of the table, and the row positions of every measure."""

    indices: dict[tuple, np.ndarray]
    y: np.ndarray
    t: np.ndarray
    X: np.ndarray
    units: np.ndarray
    names: list[str]
    value: str
    unit: str
    time_name: str
    time_text: str
    group: str | None
    levels: list[Any]
    covariates: list[str]
    origin: float
    unit_codes: np.ndarray | None
    unit_labels: list[str]
    baseline_terms: tuple[str, ...] = ()  # the covariates of a baseline adjustment
    baseline_note: str | None = None

    def value_unit(self, idx: np.ndarray) -> str | None:
        """The measurement unit(s) of these rows (``"mm"``; ``"mm, px"`` if mixed)."""
        if self.unit_codes is None:
            return None
        codes = np.unique(self.unit_codes[idx])
        labels = sorted(self.unit_labels[c] for c in codes if c >= 0)
        return ", ".join(labels) if labels else None

    def counts(self, g: np.ndarray, t: np.ndarray) -> dict[str, Any]:
        """Units, rows and distinct times per unit of the modelled rows."""
        if not len(g):
            return {"n_units": 0, "n_rows": 0, "n_units_repeated": 0, "_units_3times": 0}
        order = np.lexsort((t, g))
        gs, ts = g[order], t[order]
        new = np.r_[True, (gs[1:] != gs[:-1]) | (ts[1:] != ts[:-1])]
        per_unit = np.bincount(gs[new])
        per_unit = per_unit[np.bincount(gs) > 0]
        return {
            "n_units": len(per_unit),
            "n_rows": len(g),
            "n_units_repeated": int((per_unit >= 2).sum()),
            "sessions_per_unit_mean": float(per_unit.mean()),
            "sessions_per_unit_min": int(per_unit.min()),
            "sessions_per_unit_max": int(per_unit.max()),
            "_units_3times": int((per_unit >= 3).sum()),
        }

    def units_per_level(self, g: np.ndarray, X: np.ndarray) -> dict[Any, int]:
        """Distinct units per group level among the modelled rows (design ``X``)."""
        out = {}
        dummies = [self.names.index(self.dummy(lv)) for lv in self.levels[1:]]
        in_other = np.zeros(len(g), dtype=bool)
        for lv, j in zip(self.levels[1:], dummies, strict=True):
            mask = X[:, j] == 1
            in_other |= mask
            out[lv] = len(np.unique(g[mask]))
        return {self.levels[0]: len(np.unique(g[~in_other])), **out}

    def dummy(self, level: Any) -> str:
        return f"{self.group}[T.{level}]"

    def formula(self, names: list[str], slope: bool) -> str:
        """The model in lme4's notation, e.g. ``value ~ years + (years | patient_id)``."""
        fixed = " + ".join(["1", *names[1:]])
        random = f"1 + {self.time_name}" if slope else "1"
        return f"{self.value} ~ {fixed} + ({random} | {self.unit})"


def build_design(
    table: pd.DataFrame,
    value: str,
    *,
    per: list[str],
    time: str,
    unit: str,
    group: str | None,
    covariates: list[str],
    patients: pd.DataFrame | None,
    origin: float,
    baseline: str | None = None,
    adjust_baseline: bool = True,
) -> Design:
    """Check the input and build the arrays of :class:`Design`."""
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"table must be a pandas DataFrame, got {type(table).__name__}")
    if unit not in table.columns:
        raise InputError(
            f"unit column {unit!r} is not in the table (columns: {list(table.columns)}); "
            "pass unit=<the column that identifies a patient>"
        )
    require_columns(
        table,
        [value, *per],
        "table",
        "pass value= (the numeric column) and per= (the columns that name a measure).",
    )
    table = _join_patients(table, patients, unit, [group, *covariates, time, "birth_date"])
    for role, cols in (("group", [group] if group else []), ("covariate", covariates)):
        absent = [c for c in cols if c not in table.columns]
        if absent:
            raise InputError(
                f"{role} column(s) {absent} are neither in the table nor in patients; "
                f"pass patients=<one row per {unit} with those columns>"
            )
    values = table[value]
    if not pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
        raise InputError(
            f"value column {value!r} is {values.dtype}, not numeric; a growth model needs "
            "a continuous value"
        )
    t, time_name, time_text = _time(table, time, unit)
    t = t - origin
    if origin:
        time_text += f", minus {origin:g}"
    units, _ = pd.factorize(table[unit].astype("object"), use_na_sentinel=True)
    y = values.to_numpy(dtype=float, na_value=np.nan).copy()
    y[units < 0] = np.nan  # rows without a unit cannot be modelled
    names = ["Intercept", time_name]
    columns = [np.ones(len(table)), t]
    levels: list[Any] = []
    if group is not None:
        levels = _group_levels(table, group, unit)
        codes = pd.Categorical(table[group], categories=levels).codes
        missing = codes < 0
        dummies = []
        for i, lv in enumerate(levels[1:], start=1):
            d = (codes == i).astype(float)
            d[missing] = np.nan
            dummies.append((f"{group}[T.{lv}]", d))
        names += [n for n, _ in dummies] + [f"{time_name}:{n}" for n, _ in dummies]
        columns += [d for _, d in dummies] + [t * d for _, d in dummies]
    for cov in covariates:
        for name, col in _covariate_columns(table[cov], cov):
            names.append(name)
            columns.append(col)
    baseline_terms: tuple[str, ...] = ()
    baseline_note = None
    if baseline is not None:
        if group is None or not per:
            raise InputError(
                f"group_defined_by={baseline!r} names the measure that defined group=; it "
                "needs group= and per= (the column whose value is that measure)"
            )
        if adjust_baseline:
            extra = _baseline_columns(table, values, per[0], baseline, units, t, time_name)
            baseline_terms = tuple(name for name, _ in extra)
            names += list(baseline_terms)
            columns += [col for _, col in extra]
        baseline_note = _baseline_text(baseline, group, adjust_baseline)
    X = np.column_stack(columns).astype(float)
    if per:
        grouped = table.groupby(per, sort=True, observed=True, dropna=False).indices
        indices = {(k if isinstance(k, tuple) else (k,)): v for k, v in grouped.items()}
    else:
        indices = {(): np.arange(len(table))}
    unit_codes, unit_labels = None, []
    if "unit" in table.columns and unit != "unit" and value != "unit":
        codes, uniques = pd.factorize(table["unit"].astype("object"), use_na_sentinel=True)
        unit_codes, unit_labels = codes, [str(u) for u in uniques]
    return Design(
        indices=indices,
        y=y,
        t=t,
        X=X,
        units=units,
        names=names,
        value=value,
        unit=unit,
        time_name=time_name,
        time_text=time_text,
        group=group,
        levels=levels,
        covariates=covariates,
        origin=origin,
        unit_codes=unit_codes,
        unit_labels=unit_labels,
        baseline_terms=baseline_terms,
        baseline_note=baseline_note,
    )


def _baseline_columns(
    table: pd.DataFrame,
    values: pd.Series,
    measure_col: str,
    defining: str,
    units: np.ndarray,
    t: np.ndarray,
    time_name: str,
) -> list[tuple[str, np.ndarray]]:
    """The defining measure's first-session value per unit, centred, as covariates.

    With groups defined by that value (a class from the first-session ANB), a row's
    expected value given the baseline is linear in it, with a slope that changes with
    time and jumps at the first session itself (which shares its tracing error):
    d, d·time and d·[first session], d the unit's centred baseline. Conditioning on
    them takes regression to the mean out of the group × time terms (ANCOVA, Barnett
    et al. 2005). Units without the defining measure at their first session get NaN
    (their rows are left out, and the note counts them).
    """
    is_def = (table[measure_col].astype("object") == defining).to_numpy()
    if not is_def.any():
        raise InputError(
            f"group_defined_by={defining!r} is not a value of {measure_col!r}; the table "
            "needs the defining measure's rows (its first-session value is the covariate)"
        )
    ok = units >= 0
    first = pd.Series(t[ok]).groupby(units[ok]).min()
    first_t = np.full(len(t), np.nan)
    first_t[ok] = first.reindex(units[ok]).to_numpy()
    at_first = np.isclose(t, first_t) & np.isfinite(t)
    y = values.to_numpy(dtype=float, na_value=np.nan)
    rows = is_def & at_first & np.isfinite(y) & ok
    base = pd.Series(y[rows]).groupby(units[rows]).mean()
    d = np.full(len(t), np.nan)
    d[ok] = base.reindex(units[ok]).to_numpy() - float(base.mean())
    name = f"baseline {defining}"
    return [
        (name, d),
        (f"{name}:{time_name}", d * t),
        (f"{name}:first session", d * at_first),
    ]


def _baseline_text(defining: str, group: str, adjusted: bool) -> str:
    if adjusted:
        return (
            f"{group} is defined by the first-session {defining}: baseline-adjusted (the "
            f"unit's first-session {defining} as covariate, also × time and at the first "
            f"session), so the {group} × time terms are not regression to the mean"
        )
    return (
        f"{group} is defined by the first-session {defining} and the model is NOT "
        f"baseline-adjusted (adjust_baseline=False): the {group} × time terms of {defining} "
        "and of every measure sharing its landmarks or tracing error include regression to "
        "the mean"
    )


def _join_patients(
    table: pd.DataFrame, patients: pd.DataFrame | None, unit: str, wanted: list[Any]
) -> pd.DataFrame:
    """Join the columns of ``patients`` that ``table`` lacks, on ``unit``."""
    if patients is None:
        return table
    if not isinstance(patients, pd.DataFrame) or unit not in patients.columns:
        raise InputError(f"patients must be a DataFrame with a {unit!r} column")
    dup = patients[unit].duplicated(keep=False)
    if dup.any():
        ids = sorted(map(str, patients.loc[dup, unit].unique()))[:5]
        raise InputError(f"patients has several rows for {unit} {ids}; give one row per {unit}")
    extra = [c for c in patients.columns if c in wanted and c not in table.columns]
    if not extra:
        return table
    right = patients[[unit, *extra]].astype({unit: "object"})
    left = table.astype({unit: "object"})
    return left.merge(right, on=unit, how="left", validate="many_to_one")


def _session_time(table: pd.DataFrame, why: str) -> pd.Series:
    if "session_time" not in table.columns:
        raise InputError(
            f"{why} needs a session_time column (the parsed session date-time of the "
            "data contract); pass time=<a numeric column> instead"
        )
    try:
        return pd.to_datetime(table["session_time"], utc=True)
    except (ValueError, TypeError) as exc:
        raise InputError(f"session_time cannot be read as date-times: {exc}") from None


def _time(table: pd.DataFrame, time: str, unit: str) -> tuple[np.ndarray, str, str]:
    """The time variable in years (or the column's own scale), its term name and a text."""
    if time == "years" and "years" not in table.columns:
        st = _session_time(table, "time='years'")
        first = st.groupby(table[unit].astype("object"), sort=False).transform("min")
        years = (st - first).dt.total_seconds() / SECONDS_PER_YEAR
        return (
            years.to_numpy(dtype=float, na_value=np.nan),
            "years",
            f"years since the {unit}'s first session (session_time)",
        )
    if time == "age" and "age" not in table.columns:
        if "birth_date" not in table.columns:
            raise InputError(
                "time='age' needs an 'age' column (years) or a 'birth_date' column, in the "
                "table or in patients=; pass time='years' for years since the first session"
            )
        st = _session_time(table, "time='age' from birth_date")
        try:
            birth = pd.to_datetime(table["birth_date"], utc=True)
        except (ValueError, TypeError) as exc:
            raise InputError(f"birth_date cannot be read as dates: {exc}") from None
        age = (st - birth).dt.total_seconds() / SECONDS_PER_YEAR
        return age.to_numpy(dtype=float, na_value=np.nan), "age", "age in years (birth_date)"
    if time not in table.columns:
        raise InputError(
            f"time column {time!r} is not in the table nor in patients (columns: "
            f"{list(table.columns)}); use time='years', time='age' or a numeric column"
        )
    col = table[time]
    if pd.api.types.is_datetime64_any_dtype(col):
        raise InputError(
            f"time column {time!r} holds date-times; use time='years' (years since the first "
            "session, from session_time) or convert it to years yourself"
        )
    if not pd.api.types.is_numeric_dtype(col) or pd.api.types.is_bool_dtype(col):
        bad = col[pd.to_numeric(col, errors="coerce").isna() & col.notna()]
        example = f", e.g. row {bad.index[0]!r}: {bad.iloc[0]!r}" if len(bad) else ""
        raise InputError(
            f"time column {time!r} is {col.dtype}, not numeric{example}; give the time in "
            "years (or days…) as numbers"
        )
    return col.to_numpy(dtype=float, na_value=np.nan), str(time), f"{time} (as given)"


def _group_levels(table: pd.DataFrame, group: str, unit: str) -> list[Any]:
    """Levels of the group (categorical order, else sorted); constant within a unit."""
    col = table[group]
    per_unit = table[[unit, group]].dropna().astype("object").drop_duplicates()
    changing = per_unit[unit][per_unit[unit].duplicated()].unique()
    if len(changing):
        ids = sorted(map(str, changing))[:5]
        raise InputError(
            f"{group} changes within {len(changing)} {unit}(s), e.g. {ids}; a growth model "
            f"compares groups of {unit}s: give one {group} per {unit} (e.g. at the first "
            f"session) through patients=<one row per {unit}>"
        )
    levels = present_levels(col)
    if len(levels) < 2:
        raise InputError(f"group column {group!r} has {len(levels)} level(s); it needs ≥ 2")
    return levels


def _covariate_columns(col: pd.Series, name: str) -> list[tuple[str, np.ndarray]]:
    """Numeric covariates as they are; others as treatment-coded dummies."""
    if pd.api.types.is_numeric_dtype(col) and not pd.api.types.is_bool_dtype(col):
        return [(name, col.to_numpy(dtype=float, na_value=np.nan))]
    levels = present_levels(col)
    codes = pd.Categorical(col, categories=levels).codes
    out = []
    for i, lv in enumerate(levels[1:], start=1):
        d = (codes == i).astype(float)
        d[codes < 0] = np.nan
        out.append((f"{name}[T.{lv}]", d))
    return out
