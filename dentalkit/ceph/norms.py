"""Norms and z-scores.

``dentalkit/data/ceph_norms.csv`` holds one row per (measure, norm group, sex, age
band): ``mean``, ``sd`` (blank where the source gives none), the source's range,
``source`` (the publication), ``checked_in`` (where the value was confirmed) and
``verified``. A row is ``verified`` only when its mean (and SD, if given) were
confirmed in a retrievable source; the others are textbook values kept for
reference and **excluded from z-scores by default** (``include_unverified=True``
uses them, with a warning). Rows without an SD never give a z-score.

User norm tables (by age, sex, ethnicity, study group …) have at least the columns
``measure``, ``mean``, ``sd``; any other column can be matched with ``by=``.
"""

from __future__ import annotations

import warnings
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from dentalkit.errors import DentalkitWarning, InputError

__all__ = ["NORM_COLUMNS", "load_norms", "zscores"]

NORM_COLUMNS = [
    "measure",
    "group",
    "mean",
    "sd",
    "range_low",
    "range_high",
    "age_min",
    "age_max",
    "sex",
    "unit",
    "source",
    "checked_in",
    "verified",
    "note",
]
_NUMERIC = ["mean", "sd", "range_low", "range_high", "age_min", "age_max"]


@lru_cache(maxsize=1)
def _default() -> pd.DataFrame:
    with resources.files("dentalkit.data").joinpath("ceph_norms.csv").open(encoding="utf-8") as fh:
        return pd.read_csv(fh, dtype=str, keep_default_na=False)


def load_norms(path: str | Path | pd.DataFrame | None = None) -> pd.DataFrame:
    """Return a norm table (shipped by default), validated, with typed columns.

    Parameters
    ----------
    path : path-like or DataFrame, optional
        A user norm table. Required columns: ``measure``, ``mean``, ``sd``. Missing
        optional columns are added empty (``group`` = ``"user"``, ``verified`` =
        True: a table you supply is yours to vouch for).

    Returns
    -------
    DataFrame
        Numeric columns float64 (NaN = not given); ``age_min`` and ``age_max``
        inclusive, in completed years (a norm for ages 9–9 applies from the 9th to
        the 10th birthday: ``age_min <= age < age_max + 1``); ``sex`` ``F``/``M``
        or empty (= any);
        ``verified`` bool.
    """
    if path is None:
        table = _default().copy()
        user = False
    else:
        table = path.copy() if isinstance(path, pd.DataFrame) else pd.read_csv(path)
        user = True
    missing = {"measure", "mean", "sd"} - set(table.columns)
    if missing:
        raise InputError(f"norm table lacks column(s) {sorted(missing)}; needs measure, mean, sd")
    for col in NORM_COLUMNS:
        if col not in table.columns:
            table[col] = {"group": "user", "verified": True}.get(col, "") if user else ""
    for col in _NUMERIC:
        table[col] = pd.to_numeric(table[col].replace("", np.nan), errors="coerce").astype(float)
    if (table["sd"] <= 0).any():
        bad = table.loc[table["sd"] <= 0, "measure"].tolist()
        raise InputError(f"norm table has non-positive sd for {bad}")
    v = table["verified"]
    table["verified"] = (
        v.astype(str).str.strip().str.lower().isin(["true", "1", "yes"]) if v.dtype != bool else v
    )
    for col in ("measure", "group", "sex", "unit", "source", "checked_in", "note"):
        table[col] = table[col].fillna("").astype(str)
    return table.reset_index(drop=True)


_SEX_CODES = {"f": "F", "female": "F", "w": "F", "m": "M", "male": "M"}
#: Columns read as the age in years at the session (first present wins).
AGE_COLUMNS = ("age", "age_years")


def _sex_codes(values: pd.Series) -> pd.Series:
    """F / M / None from common spellings (F, female, M, male; any case)."""
    text = values.astype("object").where(values.notna(), None)
    return text.map(lambda v: None if v is None else _SEX_CODES.get(str(v).strip().lower()))


def zscores(
    measures: pd.DataFrame,
    norms: pd.DataFrame | str | Path | None = None,
    by: list[str] | str | None = None,
    *,
    patients: pd.DataFrame | None = None,
    group: str | list[str] | None = None,
    include_unverified: bool = False,
) -> pd.DataFrame:
    """Attach norm mean / SD and z = (value − mean) / SD, from the norm of the patient's group.

    Parameters
    ----------
    measures : DataFrame
        Output of :func:`dentalkit.ceph.measure` (``measure``, ``value``, ``unit``),
        optionally with ``sex`` and age (``age`` or ``age_years``, years at the
        session) columns, or with those coming from ``patients``.
    norms : DataFrame or path, optional
        Norm table (default: the shipped one; see :func:`load_norms`).
    by : str or list of str, optional
        More columns of ``measures`` to match against the same-named norm columns
        (e.g. ``"ethnicity"``); an empty / NaN norm cell matches any value.
        ``sex`` and age need not be listed: they are always matched (below).
    patients : DataFrame, optional
        A patient table joined on ``patient_id`` to supply ``sex`` and the age:
        ``birth_date`` (age at each session from ``session_time``, or from the
        ``timestamp`` when it parses as a date; 365.25-day years), or ``age`` /
        ``age_years`` (used for every session as given). Columns already in
        ``measures`` are kept.
    group : str or list of str, optional
        Only these norm groups (e.g. ``"Steiner"``), in order of preference.
        Default: all groups, table order (the shipped table lists the classic
        analysis of each measure first).
    include_unverified : bool
        Also use rows with ``verified`` False (textbook values not confirmed in a
        retrieved source). Default False.

    Returns
    -------
    DataFrame
        ``measures`` plus ``norm_group``, ``norm_mean``, ``norm_sd``, ``z``,
        ``norm_source`` and ``norm_note``: for every row without a z, why — no norm
        for the measure, a norm not verified (excluded by default), a norm in
        another unit, by sex or age the row does not match (the age stated as it
        is, truncated to 1/100 year: 17.99, not 18), a norm without an SD, a
        missing value. A norm applies only when its ``unit`` equals the row's unit
        (a mm norm never scores a px value).

    Notes
    -----
    **Sex and age are matched by default.** A norm row given for one sex
    (``sex`` F or M) applies only to rows of that sex; a norm row with an age
    band (``age_min``–``age_max``, inclusive, completed years) only to rows whose
    age lies in the band. When the row's sex or age is unknown such a norm row is not
    used — never the first row of the table instead — and ``norm_note`` says
    what is missing. Norm rows without sex or age apply to everyone. When several
    rows match, the most specific (most constraints matched) wins, then the
    first in table order (the group preference). Sex is read from ``F``/``M``
    or ``female``/``male`` in any case.

    Examples
    --------
    >>> import pandas as pd
    >>> m = pd.DataFrame({"measure": ["APDI"], "value": [85.19], "unit": ["deg"], "age": [12]})
    >>> round(zscores(m)["z"].item(), 6)
    1.0
    >>> zscores(m.drop(columns="age"))["norm_note"].item()
    'no z: the Kim norm of APDI is for ages 6–18 and the row has no age'
    """
    for col in ("measure", "value", "unit"):
        if col not in measures.columns:
            raise InputError(f"measures table lacks column {col!r} (use the output of measure())")
    source = measures
    if patients is not None:
        if not isinstance(patients, pd.DataFrame) or "patient_id" not in patients.columns:
            raise InputError("patients must be a DataFrame with a patient_id column")
        if "patient_id" not in measures.columns:
            raise InputError("patients= needs a patient_id column in the measures table")
        has_age = any(c in measures for c in AGE_COLUMNS)
        wanted = ("sex", *AGE_COLUMNS, *(() if has_age else ("birth_date",)))
        extra = [c for c in wanted if c in patients and c not in measures]
        if patients["patient_id"].duplicated().any():
            raise InputError("patients has several rows for a patient_id; give one per patient")
        right = patients[["patient_id", *extra]].astype({"patient_id": "object"})
        source = measures.assign(patient_id=measures["patient_id"].astype("object")).merge(
            right, on="patient_id", how="left"
        )
        if "birth_date" in extra:
            source = _age_from_birth_date(source)
    table = load_norms(None if norms is None else norms)
    full = table
    by_cols = [c for c in ([by] if isinstance(by, str) else list(by or [])) if c not in ("sex",)]
    by_cols = [c for c in by_cols if c not in ("age", *AGE_COLUMNS)]
    for c in by_cols:
        if c not in source.columns:
            raise InputError(f"by column {c!r} is not a column of the measures table")
        if c not in table.columns:
            raise InputError(f"by column {c!r} is not a column of the norm table")
    if not include_unverified:
        table = table[table["verified"]]
    elif not table["verified"].all():
        warnings.warn(
            "include_unverified=True: z-scores use norms not confirmed in a retrieved source "
            "(see the 'checked_in' and 'note' columns of load_norms())",
            DentalkitWarning,
            stacklevel=2,
        )
    if group is not None:
        groups = [group] if isinstance(group, str) else list(group)
        unknown = set(groups) - set(table["group"])
        if unknown:
            raise InputError(
                f"norm group(s) {sorted(unknown)} not in the norm table "
                f"(groups: {sorted(set(table['group']))})"
            )
        table = table[table["group"].isin(groups)].copy()
        table["_pref"] = table["group"].map({g: i for i, g in enumerate(groups)})
        table = table.sort_values("_pref", kind="stable")
    table = table.reset_index(drop=True)
    table["_order"] = np.arange(len(table))

    age_col = next((c for c in AGE_COLUMNS if c in source.columns), None)
    left = pd.DataFrame(
        {
            "_row": np.arange(len(source)),
            "measure": source["measure"].astype(str).to_numpy(),
            "unit": source["unit"].astype(str).to_numpy(),
            "_sex": (
                _sex_codes(source["sex"]).to_numpy()
                if "sex" in source.columns
                else np.full(len(source), None, dtype=object)
            ),
            "_age": (
                pd.to_numeric(source[age_col], errors="coerce").to_numpy(dtype=float)
                if age_col
                else np.full(len(source), np.nan)
            ),
        }
    )
    for c in by_cols:
        left["_by_" + c] = source[c].to_numpy()
    right_cols = ["measure", "unit", "group", "mean", "sd", "source", "_order", "sex"]
    right = table[right_cols + [c for c in by_cols if c != "sex"] + ["age_min", "age_max"]].copy()
    right = right.rename(columns={"sex": "_norm_sex"})
    right.loc[right["unit"] == "", "unit"] = np.nan
    merged = left.merge(right, on="measure", how="inner", suffixes=("", "_norm"))
    merged = merged[(merged["unit_norm"].isna() | (merged["unit_norm"] == merged["unit"]))]
    merged = merged.reset_index(drop=True)
    ok = np.ones(len(merged), dtype=bool)
    score = np.zeros(len(merged))
    why = np.full(len(merged), "", dtype=object)
    # sex: a norm for one sex needs a row of that sex
    nsex = merged["_norm_sex"].fillna("").astype(str).str.upper().to_numpy()
    rsex = merged["_sex"].to_numpy()
    by_sex = nsex != ""
    sex_unknown = by_sex & pd.isna(rsex)
    sex_ok = ~by_sex | (~sex_unknown & (rsex == nsex))
    ok &= sex_ok
    score += by_sex
    why[sex_unknown] = "is by sex and the row has no sex"
    # age: a norm with an age band needs an age inside it
    lo, hi = merged["age_min"].to_numpy(float), merged["age_max"].to_numpy(float)
    age = merged["_age"].to_numpy(float)
    banded = ~np.isnan(lo) | ~np.isnan(hi)
    age_unknown = banded & np.isnan(age)
    with np.errstate(invalid="ignore"):  # age_max in completed years: 9.7 is "age 9"
        inside = (np.isnan(lo) | (age >= lo)) & (np.isnan(hi) | (age < hi + 1.0))
    ok &= ~banded | (~age_unknown & inside)
    score += banded
    band = [_band(a, b) for a, b in zip(lo, hi, strict=True)]
    for i in np.flatnonzero(banded & (age_unknown | ~inside)):
        if not why[i]:
            why[i] = (
                f"is for ages {band[i]} and the row has no age"
                if age_unknown[i]
                else f"is for ages {band[i]}, not {_age_text(age[i])}"
            )
    for c in by_cols:
        val = merged["_by_" + c]
        norm_val = merged[c]
        wildcard = norm_val.isna() | (norm_val.astype(str) == "")
        cond = (wildcard | (norm_val.astype(str) == val.astype(str))).to_numpy()
        ok &= cond
        score += (~wildcard).to_numpy()
    merged["_score"] = score
    merged["_why"] = [
        f"the {g} norm of {m} {w}" if w else ""
        for g, m, w in zip(merged["group"], merged["measure"], why, strict=True)
    ]
    candidates = merged
    merged = merged[ok].sort_values(["_row", "_score", "_order"], ascending=[True, False, True])
    best = merged.drop_duplicates("_row")
    out = measures.copy()
    for c in ("sex", "age"):  # the covariates the norms were matched on travel with the z
        if c in source.columns and c not in out.columns:
            out[c] = source[c].to_numpy()
    idx = best["_row"].to_numpy()
    for name, col in (("norm_group", "group"), ("norm_source", "source")):
        arr = np.full(len(out), None, dtype=object)
        arr[idx] = best[col].to_numpy()
        out[name] = pd.Categorical(arr)
    for name, col in (("norm_mean", "mean"), ("norm_sd", "sd")):
        arr = np.full(len(out), np.nan)
        arr[idx] = best[col].to_numpy(dtype=float)
        out[name] = arr
    out["z"] = (out["value"].to_numpy(dtype=float) - out["norm_mean"]) / out["norm_sd"]
    notes = np.full(len(out), None, dtype=object)
    unmatched = candidates[~candidates["_row"].isin(idx) & (candidates["_why"] != "")]
    if len(unmatched):
        text = unmatched.groupby("_row", sort=False)["_why"].agg(
            lambda w: "no z: " + "; ".join(dict.fromkeys(w))
        )
        notes[text.index.to_numpy()] = text.to_numpy()
    missing = np.flatnonzero(out["z"].isna().to_numpy() & pd.isna(notes))
    if len(missing):
        notes[missing] = _why_no_z(
            source.iloc[missing], best, missing, full, table, include_unverified, group
        )
    out["norm_note"] = notes
    return out


def _age_from_birth_date(table: pd.DataFrame) -> pd.DataFrame:
    """``age`` (years at the session) from ``birth_date`` and ``session_time`` / ``timestamp``."""
    born = pd.to_datetime(table["birth_date"], errors="coerce", utc=True)
    if "session_time" in table.columns:
        when = pd.to_datetime(table["session_time"], errors="coerce", utc=True)
    elif "timestamp" in table.columns:
        when = pd.to_datetime(table["timestamp"].astype(str), errors="coerce", utc=True)
    else:
        return table.drop(columns="birth_date")
    age = (when - born).dt.total_seconds() / (365.25 * 86400.0)
    return table.drop(columns="birth_date").assign(age=age.to_numpy())


def _age_text(age: float) -> str:
    """The age as it is, truncated (never rounded up) to 1/100 year: 17.99, not 18."""
    text = f"{np.floor(np.round(age * 100.0, 6)) / 100.0:.2f}".rstrip("0").rstrip(".")
    return f"{text} years"


def _why_no_z(
    rows: pd.DataFrame,
    best: pd.DataFrame,
    positions: np.ndarray,
    full: pd.DataFrame,
    usable: pd.DataFrame,
    include_unverified: bool,
    group: str | list[str] | None,
) -> list[str]:
    """Why each of ``rows`` (no z and no note yet) got no z-score, in words.

    The reason depends on the row only through its measure, unit, whether its value is
    finite and (for a norm without an SD) the norm chosen for it, so the norm tables are
    searched once per (measure, unit), not once per row.
    """
    chosen = best.set_index("_row")
    values = pd.to_numeric(rows["value"], errors="coerce").to_numpy(dtype=float)
    by_pair: dict[tuple[str, str], str | None] = {}

    def reason(m: str, unit: str) -> str | None:
        """The reason shared by every row of ``m`` in ``unit``; None: look at the chosen norm."""
        mine = full[full["measure"] == m]
        kept = usable[usable["measure"] == m]
        same_unit = kept[(kept["unit"] == "") | (kept["unit"] == unit)]
        groups = ", ".join(dict.fromkeys(mine["group"].astype(str)))
        if mine.empty:
            return f"no z: the norm table has no norm for {m}"
        if not include_unverified and not mine["verified"].any():
            return (
                f"no z: the {groups} norm of {m} is not verified in a retrieved source "
                "(include_unverified=True uses it, with a warning)"
            )
        if kept.empty:
            return f"no z: no norm of {m} in the norm group(s) {group!r}"
        if same_unit.empty:
            units = ", ".join(dict.fromkeys(kept["unit"].astype(str)))
            return f"no z: the norm of {m} is in {units}, the value in {unit}"
        return None

    out = []
    measures = rows["measure"].astype(str).to_numpy()
    units = rows["unit"].astype(str).to_numpy()
    for pos, m, unit, value in zip(positions, measures, units, values, strict=True):
        if not np.isfinite(value):
            out.append("no z: the value is missing (the measure could not be computed)")
            continue
        if (m, unit) not in by_pair:
            by_pair[m, unit] = reason(m, unit)
        shared = by_pair[m, unit]
        if shared is not None:
            out.append(shared)
        elif pos in chosen.index and not np.isfinite(chosen.loc[pos, "sd"]):
            g = chosen.loc[pos, "group"]
            out.append(
                f"no z: the {g} norm of {m} gives a mean ({chosen.loc[pos, 'mean']:g}) but no SD"
            )
        else:
            out.append(f"no z: no norm row of {m} matches this row's columns")
    return out


def _band(lo: float, hi: float) -> str:
    if np.isnan(lo):
        return f"up to {hi:g}"
    if np.isnan(hi):
        return f"{lo:g} and over"
    return f"{lo:g}" if lo == hi else f"{lo:g}–{hi:g}"
