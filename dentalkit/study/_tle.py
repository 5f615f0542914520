"""Treatment length in a study: the ``/tle`` questions and their estimates.

A study asks ``GET /tle`` when its patients table has the codebook's parameters
(:func:`dentalkit.tle.load_codebook`: malocclusion class, crowding, overjet …, with sex
and either ``age_years`` or ``birth_date``): one query per patient, at the patient's first
session, with the sex and age of the patient record (:func:`tle_inputs`), so that a
patient has one sex and one age in every output. Observed durations, when the patients
table has ``observed_months``, give the calibration of the estimates.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from dentalkit.errors import InputError

__all__ = ["TLE_ENDPOINT", "first_sessions", "tle_inputs", "tle_patients", "tle_queries"]

#: Registry name of the treatment-length endpoint.
TLE_ENDPOINT = "tle"
#: Column of the patients table with observed treatment durations (months).
OBSERVED = "observed_months"


def tle_patients(
    patients: pd.DataFrame | None, timestamps: Mapping[str, str] | None = None
) -> tuple[pd.DataFrame | None, str]:
    """The typed ``/tle`` table of a patients table, or None and why not.

    Parameters
    ----------
    patients : DataFrame, optional
        The study's patients table.
    timestamps : mapping, optional
        When each patient's query is asked (``patient_id`` → timestamp), for the age
        from ``birth_date`` when the table has no ``age_years``.

    Returns
    -------
    (DataFrame or None, str)
        ``patient_id`` and the codebook's columns in the codebook's order (sex and age
        from the record when it has ``birth_date``); or None and a sentence saying which
        columns are missing.
    """
    from dentalkit import tle

    book = tle.load_codebook()
    if patients is None:
        return None, "no patients table"
    have = set(patients.columns)
    age, sex = book["p01"].column, book["p02"].column
    needed = [c for c in book.columns if c not in (age,)]
    missing = [c for c in ("patient_id", *needed) if c not in have]
    if age not in have and "birth_date" not in have:
        missing.append(f"{age} (or birth_date)")
    if missing:
        return None, f"the patients table has no {', '.join(missing)}"
    typed = patients[["patient_id", *(c for c in book.columns if c in have)]].copy()
    typed["patient_id"] = typed["patient_id"].astype(str)
    if "birth_date" in have and timestamps is not None:
        record = patients[["patient_id", sex, "birth_date"]].assign(
            patient_id=patients["patient_id"].astype(str)
        )
        typed = tle_inputs(typed.assign(**{age: np.nan}), record, timestamps)
    return typed[["patient_id", *book.columns]], ""


def first_sessions(manifest: pd.DataFrame) -> dict[str, str]:
    """Each patient's first session in ``manifest`` (``patient_id`` → timestamp as given):
    the earliest by parsed time, else the first in text order when none parses."""
    rows = manifest[["patient_id", "timestamp"]].dropna().astype(str)
    when = pd.to_datetime(rows["timestamp"], errors="coerce", utc=True, format="ISO8601")
    rows = rows.assign(_when=when).sort_values(["patient_id", "_when", "timestamp"])
    first = rows.drop_duplicates("patient_id")
    return dict(zip(first["patient_id"], first["timestamp"], strict=True))


def tle_queries(typed: pd.DataFrame, timestamps: Mapping[str, str]) -> pd.DataFrame:
    """The manifest rows of the ``/tle`` queries: one per patient at its first session
    (``patient_id``, ``timestamp``, ``endpoint``, ``p01`` … ``p11``)."""
    from dentalkit import tle

    queries = tle.encode(typed)
    rows = typed[["patient_id"]].astype(str)
    rows = rows.assign(timestamp=rows["patient_id"].map(timestamps), endpoint=TLE_ENDPOINT)
    return pd.concat([rows.reset_index(drop=True), queries.reset_index(drop=True)], axis=1)


def tle_inputs(
    typed: pd.DataFrame, record: pd.DataFrame, timestamp: str | Mapping[str, str]
) -> pd.DataFrame:
    """The typed ``/tle`` patient table with sex and age taken from the patient record.

    A patient has one sex and one age in every output: the z-scores take them from the
    patient record (sex, birth date), and so does the ``/tle`` query. The study passes its
    patients table as both ``typed`` and ``record``; the demo's clinical columns
    (malocclusion class, crowding, overjet …) are drawn by
    :func:`dentalkit.tle.example_patients` for the sandbox patients whose record
    :func:`dentalkit.study.demo.sandbox_patients` gives.

    Parameters
    ----------
    typed : DataFrame
        Typed patient table in the codebook's columns (``patient_id``, ``sex``,
        ``age_years`` …), one row per patient.
    record : DataFrame
        ``patient_id``, ``sex`` (the record's codes ``F`` / ``M``, or the codebook's
        labels and aliases) and ``birth_date`` (ISO date), one row per patient of ``typed``.
    timestamp : str or mapping
        When the ``/tle`` question is asked: the session the age is computed for (one
        for every patient, or one per ``patient_id``; the study asks at each patient's
        first session).

    Returns
    -------
    DataFrame
        ``typed`` with the codebook's sex column (p02) as the codebook label of the
        record's code (``F`` → ``female``, ``M`` → ``male``; a label or alias is kept
        as the codebook reads it) and its age column (p01) as
        the age at ``timestamp`` in years: (timestamp − birth_date) in days / 365.25, the
        rule :func:`dentalkit.ceph.zscores` uses for the same record, unrounded (the
        codebook floors it to completed years when encoding).

    Raises
    ------
    InputError
        When a patient of ``typed`` has no record, or the record's sex is not a code of
        the codebook's p02 or its birth date does not parse.
    """
    from dentalkit import tle
    from dentalkit.tle.codebook import normalize_spelling

    book = tle.load_codebook()
    sex_param, age_param = book["p02"], book["p01"]
    label_of = {code: label for label, code in sex_param.levels}
    rec = record.assign(patient_id=record["patient_id"].astype(str)).set_index("patient_id")
    ids = typed["patient_id"].astype(str)
    missing = sorted(set(ids) - set(rec.index))
    if missing:
        raise InputError(
            f"the patient record has no row for patient_id {', '.join(missing[:5])}"
            + (" …" if len(missing) > 5 else "")
            + "; give every patient of the typed table a sex and a birth date"
        )
    rec = rec.loc[ids]
    spelled = rec["sex"].astype(str).map(lambda s: sex_param.lookup.get(normalize_spelling(s)))
    sex = rec["sex"].astype(str).map(label_of).fillna(spelled)
    born = pd.to_datetime(rec["birth_date"], errors="coerce", utc=True)
    for what, bad in (("sex", sex.isna()), ("birth_date", born.isna())):
        if bad.any():
            pid = bad.index[bad.to_numpy()][0]
            allowed = ", ".join(label_of)
            raise InputError(
                f"patient {pid}: the record's {what} {rec.loc[pid, what]!r} is not "
                + (f"one of the codebook's p02 codes ({allowed})" if what == "sex" else "a date")
            )
    when = pd.to_datetime(
        ids.map(timestamp) if isinstance(timestamp, Mapping) else pd.Series(timestamp, ids.index),
        errors="coerce",
        utc=True,
    )
    span = when.dt.tz_convert(None).to_numpy() - born.dt.tz_convert(None).to_numpy()
    age = span / np.timedelta64(1, "s") / (365.25 * 86400.0)
    return typed.assign(
        **{
            sex_param.column: pd.Categorical(sex.to_numpy(), categories=list(sex_param.labels)),
            age_param.column: np.asarray(age, dtype=float),
        }
    )
