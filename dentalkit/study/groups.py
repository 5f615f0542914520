"""Groups of patients, and the growth of measures compared between them.

A patient belongs to one group (the unit of analysis is the patient): by default the
skeletal class (ANB) of their first lateral session, or a column of the patients table
named by the study design. Patients whose class changes later are counted in
``ceph_class_changes``, never re-filed.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import pandas as pd

from dentalkit.errors import InputError

__all__ = [
    "CLASS_DEFINED_BY",
    "GROWTH_ARCH",
    "GROWTH_CEPH",
    "default_groups",
    "groups_from_patients",
    "growth_by_group",
    "merge_groups",
]

log = logging.getLogger("dentalkit")

#: Lateral ceph measures of the growth analysis (SNB and ANB as in issue 19, SN–MP the
#: vertical pattern) and the arch widths (upper and lower).
GROWTH_CEPH = ("SNB", "ANB", "SN_MP")
GROWTH_ARCH = ("intercanine_width", "intermolar_width")
#: The measure whose value at a patient's first session defines the skeletal class (the
#: default groups): the growth models are adjusted for it (``stats.growth(group_defined_by=)``).
CLASS_DEFINED_BY = "ANB"
#: Columns of ``growth_data`` besides the group column (the modelled rows).
GROWTH_DATA_COLUMNS = ("patient_id", "timestamp", "session_time", "measure", "value", "unit")


def default_groups(classes: pd.DataFrame, session: str = "first") -> pd.DataFrame:
    """``patient_id`` and ``skeletal_class`` of each patient's first session (the default
    groups; ``session`` is the design's rule, ``"first"`` unless it says otherwise).

    The group of a patient is fixed per patient: the class of one session.
    """
    from dentalkit.stats import one_row_per_unit

    return one_row_per_unit(classes, session)[["patient_id", "skeletal_class"]]


def groups_from_patients(patients: pd.DataFrame | None, column: str) -> pd.DataFrame:
    """``patient_id`` and the design's group ``column`` of the patients table.

    Raises
    ------
    InputError
        No patients table, no such column (the message lists the columns found and the
        closest name), or a patient given two different groups.
    """
    import difflib

    if patients is None:
        raise InputError(
            f"the study groups patients by the column {column!r} of the patients table, but "
            "no patients table was given: pass one (--patients FILE, patients=…), or leave "
            "[groups] column out to compare skeletal classes"
        )
    missing = [c for c in ("patient_id", column) if c not in patients.columns]
    if missing:
        near = difflib.get_close_matches(missing[-1], list(map(str, patients.columns)), n=1)
        raise InputError(
            f"the patients table has no column {missing[-1]!r}"
            + (" (it identifies each patient)" if missing[-1] == "patient_id" else " (the groups)")
            + (f"; did you mean {near[0]!r}?" if near else "")
            + f" Columns found: {', '.join(map(str, patients.columns))}"
        )
    table = patients[["patient_id", column]].dropna()
    table = table.assign(patient_id=table["patient_id"].astype(str))
    per = table.drop_duplicates().groupby("patient_id")[column].nunique()
    if (per > 1).any():
        pid = per.index[(per > 1).to_numpy()][0]
        values = sorted(map(str, table.loc[table["patient_id"] == pid, column].unique()))
        raise InputError(
            f"patient {pid} is in two groups of {column!r} in the patients table "
            f"({', '.join(values)}); a patient belongs to one group"
        )
    return table.drop_duplicates("patient_id").reset_index(drop=True)


def growth_by_group(
    ceph_measures: pd.DataFrame | None,
    arch_measures: pd.DataFrame | None,
    groups: pd.DataFrame,
    *,
    ceph: Sequence[str] = GROWTH_CEPH,
    arch: Sequence[str] = GROWTH_ARCH,
    correction: str | None = "holm",
    confidence: float = 0.95,
    why: list[str] | None = None,
    group_defined_by: str | None = None,
) -> dict[str, pd.DataFrame]:
    """Growth of ceph and arch measures over the sessions, compared between groups.

    One linear mixed-effects model per measure (:func:`dentalkit.stats.growth`):
    ``value ~ years × group`` with a random intercept per patient (and a random slope
    where ≥ 3 sessions identify it), REML, ``correction`` (Holm) across the measures per
    term. The
    patient is the unit; the group is the patient's (e.g. skeletal class at the first
    session), never a session's.

    Parameters
    ----------
    ceph_measures, arch_measures : DataFrame, optional
        Outputs of :func:`dentalkit.ceph.measure` and :func:`dentalkit.arch.measure`.
    groups : DataFrame
        ``patient_id`` and one group column (one row per patient).
    ceph, arch : sequence of str
        Lateral ceph measures and arch measures (each for the upper and lower arch) to
        model; arch measures in millimetres only.
    correction : str, optional
        Multiplicity correction across the measures, per term (default ``"holm"``).
    confidence : float
        Level of the intervals (default 0.95).
    why : list of str, optional
        Where to append, in words, why nothing was modelled (when the result is empty).
    group_defined_by : str, optional
        The ceph measure whose first-session value defined the groups (``"ANB"`` for the
        skeletal class): every measure is then modelled baseline-adjusted
        (:func:`dentalkit.stats.growth` ``group_defined_by=``), so the group × time terms
        are not regression to the mean. Its rows are modelled too (it is added to
        ``ceph`` when absent); without its rows the models are unadjusted and their notes
        say so.

    Returns
    -------
    dict of str to DataFrame
        ``growth_fixed``, ``growth_variance``, ``growth_models``, ``growth_bands``
        (fit and 95 % band per group, for :func:`dentalkit.plot.growth_lines`) and
        ``growth_data`` (the modelled rows with the group); empty when no patient has
        two sessions or the groups do not allow a model.
    """
    from dentalkit.stats import growth

    group_col = next(c for c in groups.columns if c != "patient_id")
    cols = list(GROWTH_DATA_COLUMNS)
    parts = []
    if ceph_measures is not None and len(ceph_measures):
        lat = ceph_measures
        if "view" in lat.columns:
            lat = lat[lat["view"] == "lateral"]
        wanted = list(ceph) + ([group_defined_by] if group_defined_by else [])
        lat = lat[lat["measure"].astype(str).isin(wanted)]
        parts.append(lat.reindex(columns=cols).astype({"measure": "object"}))
    if arch_measures is not None and len(arch_measures):
        am = arch_measures[
            arch_measures["arch"].isin(["up", "lo"])
            & arch_measures["measure"].astype(str).isin(list(arch))
            & (arch_measures["unit"] == "mm")
        ]
        if "status" in am.columns:
            am = am[am["status"] == "ok"]
        am = am.assign(
            measure=am["measure"].astype(str) + np.where(am["arch"] == "up", " (upper)", " (lower)")
        )
        parts.append(am.reindex(columns=cols))
    parts = [p for p in parts if len(p)]
    said = why if why is not None else []
    if not parts:
        said.append(
            f"no lateral measure ({', '.join(ceph)}) and no arch measure in mm "
            f"({', '.join(arch)}) to model"
        )
        return {}
    data = pd.concat(parts, ignore_index=True)
    data = data.astype({"patient_id": "object", "timestamp": "object", "unit": "object"})
    sessions = data.groupby("patient_id")["timestamp"].nunique()
    if not (sessions >= 2).any():
        said.append(
            "no patient has two sessions: a growth model needs patients seen more than once"
        )
        return {}
    groups = groups[["patient_id", group_col]]
    levels = list(pd.unique(groups[group_col].dropna()))
    if isinstance(groups[group_col].dtype, pd.CategoricalDtype):
        levels = [c for c in groups[group_col].cat.categories if c in levels]
    normal = [lv for lv in levels if str(lv) in ("I", "Class I")]
    if normal:  # Class I (the normal relation) is the reference of the comparisons
        order = normal + [lv for lv in levels if lv not in normal]
        # from plain values: recoding a categorical whose unused categories leave the new
        # order is deprecated in pandas (it would raise in a later release)
        values = groups[group_col].astype("object")
        groups = groups.assign(**{group_col: pd.Categorical(values, categories=order)})
    defining = group_defined_by
    if defining is not None and not (data["measure"].astype(str) == defining).any():
        log.warning("growth: no %s rows, so the models are not baseline-adjusted", defining)
        defining = None
    try:
        result = growth(
            data,
            group=group_col,
            patients=groups,
            correction=correction,
            confidence=confidence,
            group_defined_by=defining,
        )
    except InputError as exc:
        log.warning("growth analysis skipped: %s", exc)
        said.append(f"the growth model could not be fitted: {exc}")
        return {}
    grouped = merge_groups(data, groups)
    return {
        "growth_fixed": result.fixed,
        "growth_variance": result.variance,
        "growth_models": result.models,
        "growth_bands": result.bands().astype({"group": "object"}),
        "growth_data": grouped,
    }


def merge_groups(table: pd.DataFrame, groups: pd.DataFrame) -> pd.DataFrame:
    """``table`` with each row's group: a left join on ``patient_id`` (as text objects)."""
    left = table.assign(patient_id=table["patient_id"].astype("object"))
    right = groups.assign(patient_id=groups["patient_id"].astype("object"))
    return left.merge(right, on="patient_id", how="left")
