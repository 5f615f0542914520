"""Quality control in the study: the AI's answers checked before the analyses use them.

:func:`check_tables` runs the checks of :mod:`dentalkit.qc` on the tables a study built
(each check on its own table: :data:`CHECKED`) and concatenates them into the declared
``qc`` table; :func:`apply_policy` applies the study's pre-specified policy
(``Design.qc``: ``"flag"`` by default, ``"exclude"`` or ``"ignore"``) through
:func:`dentalkit.qc.apply`, each check to the table it checked, and lists every excluded
item (``qc_excluded``). :func:`sensitivity` gives the main results (the cohort means of
the reported cephalometric measures, one session per patient) with and without the
excluded items. docs/qc.md ("For a study") describes the order.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from dentalkit.study._parts import measure_scaled
from dentalkit.study.calibration import Calibration

__all__ = [
    "CHECKED",
    "QC_MEASURES",
    "apply_policy",
    "check_tables",
    "run_qc",
    "sensitivity",
]

#: Each check of :mod:`dentalkit.qc` and the study table it checks (and applies to).
CHECKED = (
    ("landmarks", "landmarks"),
    ("teeth", "teeth"),
    ("arch_points", "arch_points"),
    ("findings", "findings"),
    ("tle_inputs", "tle"),
)
#: The cephalometric measures the study reports (summary, group comparisons): their
#: landmarks decide whether a session is flagged (``qc.landmarks(measures=...)``).
QC_MEASURES = (
    "SNA", "SNB", "ANB", "Wits", "SN_MP", "SN_GoGn", "FMA", "gonial_angle", "N_Me",
    "ANS_Me", "S_Go", "IMPA", "U1_SN",
)  # fmt: skip
#: The measures of the sensitivity analysis (the report's main cephalometric results).
SENSITIVITY_MEASURES = ("SNA", "SNB", "ANB", "SN_MP", "FMA", "N_Me")


def _check(check: str, table: pd.DataFrame, calibration: Calibration):
    """One check on its table, errors collected: ``(qc rows, problems)``."""
    from dentalkit import qc

    if check == "landmarks":
        # calibrated sessions in mm (lengths enter the plausible ranges), the others in px
        return measure_scaled(partial(qc.landmarks, measures=list(QC_MEASURES)), table, calibration)
    function = {
        "teeth": qc.teeth,
        "arch_points": qc.arch_points,
        "findings": qc.findings,
        "tle_inputs": qc.tle_inputs,
    }[check]
    return function(table, errors="collect")


def check_tables(
    tables: Mapping[str, pd.DataFrame], calibration: Calibration
) -> pd.DataFrame | None:
    """Every check of :data:`CHECKED` whose table has rows, on the tables as built.

    Returns
    -------
    DataFrame or None
        The checks' rows concatenated (the declared ``qc`` table, checks in the order of
        :data:`CHECKED`); None when no table has rows. An item a check could not check (a
        session with fewer than three landmarks, a tooth key without an FDI number …) is a
        row with ``method`` "not checked" and ``method_reason`` saying why, counted in
        ``qc_summary``; it is not an analysis problem (the analyses still use it, and
        report their own problems with it).
    """
    parts = []
    for check, name in CHECKED:
        table = tables.get(name)
        if table is None or not len(table):
            continue
        rows, _ = _check(check, table, calibration)  # not checked: rows of `rows` say why
        parts.append(rows)
    return pd.concat(parts, ignore_index=True) if parts else None


def apply_policy(
    tables: Mapping[str, pd.DataFrame], checks: pd.DataFrame, policy: str
) -> tuple[dict[str, pd.DataFrame], pd.DataFrame, dict[str, np.ndarray]]:
    """The study's pre-specified QC policy, each check on the table it checked.

    Parameters
    ----------
    tables : mapping of str to DataFrame
        The study's tables.
    checks : DataFrame
        The ``qc`` table of :func:`check_tables`.
    policy : {"exclude", "flag", "ignore"}
        ``"exclude"``: the rows of flagged items are left out; ``"flag"`` and ``"ignore"``:
        every row stays (flagged items are listed in ``qc`` and counted in the report).

    Returns
    -------
    tables : dict of str to DataFrame
        The tables the analyses use (index reset), the others unchanged.
    excluded : DataFrame
        One row per excluded item (``qc_excluded``): check, patient, session, item,
        reason, failed rules and the rows of its table it removed; 0 rows unless
        ``"exclude"``.
    kept_rows : dict of str to ndarray
        For each table rows were removed from: the position in the table as built of each
        kept row (problem rows of later analyses are mapped back with it).
    """
    from dentalkit import qc

    out = dict(tables)
    excluded, kept_rows = [], {}
    for check, name in CHECKED:
        table = tables.get(name)
        if table is None or not len(table) or policy != "exclude":
            continue
        mine = checks[checks["check"].astype(str) == check]
        if not mine["flagged"].astype(bool).any():
            continue
        applied = qc.apply(table.reset_index(drop=True), mine, policy="exclude")
        excluded.append(applied.excluded)
        kept_rows[name] = applied.kept.index.to_numpy(dtype=np.int64)
        out[name] = applied.kept.reset_index(drop=True)
    empty = qc.apply(checks.iloc[:0], checks.iloc[:0], policy="ignore").excluded
    listing = pd.concat(excluded, ignore_index=True) if excluded else empty
    return out, listing, kept_rows


def sensitivity(
    tables: Mapping[str, pd.DataFrame],
    kept: Mapping[str, pd.DataFrame],
    calibration: Calibration,
    session: str,
) -> pd.DataFrame | None:
    """The main results with and without the items QC excluded (``qc_sensitivity``).

    The cohort mean of each of :data:`SENSITIVITY_MEASURES` (lateral cephalograms, the
    design's session of each patient: the patient is the unit), from every session as
    built (``without QC``) and from the sessions the policy kept (``with QC``), with the
    difference. None when no lateral landmarks were excluded (both arms are the same).
    """
    from dentalkit import ceph
    from dentalkit.stats import one_row_per_unit

    before, after = tables.get("landmarks"), kept.get("landmarks")
    if before is None or after is None or len(before) == len(after):
        return None
    arms = {}
    for arm, table in (("without", before), ("with", after)):
        table = table[table["view"].astype(str) == "lateral"]
        measures, _ = measure_scaled(
            partial(ceph.measure, measures=list(SENSITIVITY_MEASURES)), table, calibration
        )
        measures = one_row_per_unit(measures, session).dropna(subset=["value"])
        arms[arm] = measures.groupby(["measure", "unit"], observed=True)["value"].agg(
            ["size", "mean", "std"]
        )
    both = (
        arms["without"]
        .reset_index()
        .merge(
            arms["with"].reset_index(),
            on=["measure", "unit"],
            how="outer",
            suffixes=("_without", "_with"),
        )
    )
    if not len(both):
        return None
    order = {m: i for i, m in enumerate(SENSITIVITY_MEASURES)}
    both = both.iloc[np.argsort([order.get(str(m), 99) for m in both["measure"]], kind="stable")]
    return pd.DataFrame(
        {
            "measure": both["measure"].astype(str).to_numpy(),
            "unit": both["unit"].astype(str).to_numpy(),
            "n_without_qc": both["size_without"].fillna(0).to_numpy(np.int64),
            "mean_without_qc": both["mean_without"].to_numpy(float),
            "sd_without_qc": both["std_without"].to_numpy(float),
            "n_with_qc": both["size_with"].fillna(0).to_numpy(np.int64),
            "mean_with_qc": both["mean_with"].to_numpy(float),
            "sd_with_qc": both["std_with"].to_numpy(float),
            "difference": (both["mean_with"] - both["mean_without"]).to_numpy(float),
            "unit_of_analysis": "patient",
            "method": (
                f"mean of each patient's {session} lateral session: every session as "
                "built (without QC) and the sessions qc='exclude' kept (with QC)"
            ),
        }
    )


def run_qc(inputs: Any) -> dict[str, pd.DataFrame]:
    """The study's QC step (the ``qc`` analysis, run before the others) on ``inputs``
    (:class:`dentalkit.study.AnalysisInputs`).

    Checks the tables as built; under ``"exclude"`` replaces ``inputs.tables`` by the kept
    rows (``inputs.problems`` maps later problem rows back to the tables as built) and
    adds the sensitivity table. Returns ``qc``, ``qc_summary``, and under ``"exclude"``
    ``qc_excluded`` and (when sessions were excluded) ``qc_sensitivity``.
    """
    from dentalkit import qc

    checks = check_tables(inputs.tables, inputs.calibration)
    if checks is None:
        return {}
    out = {"qc": checks, "qc_summary": qc.summarize(checks)}
    policy = inputs.design.qc
    if policy != "exclude":
        return out
    built = inputs.tables
    kept, excluded, kept_rows = apply_policy(built, checks, policy)
    inputs.tables = kept
    inputs.problems.kept_rows = kept_rows
    out["qc_excluded"] = excluded
    table = sensitivity(built, kept, inputs.calibration, inputs.design.session)
    if table is not None:
        out["qc_sensitivity"] = table
    return out
