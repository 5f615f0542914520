"""Quality control in the study: the AI's answers checked before the analyses use them.

:func:`check_tables` runs the checks of :mod:`dentalkit.qc` on the tables a study built
(each check on its own table: :data:`CHECKED`) and concatenates them into the declared
``qc`` table; :func:`apply_policy` applies the study's pre-specified policy
(``Design.qc``: ``"exclude"`` by default, ``"flag"`` or ``"ignore"``) through
:func:`dentalkit.qc.apply`, each check to the table it checked, and lists every excluded
item (``qc_excluded``). :func:`sensitivity` gives the main results (the cohort means of
the reported cephalometric measures, one session per patient) with and without the
excluded items; :func:`sensitivity_results` runs the analyses again on the tables as
built and sets their main statistics (group comparisons, growth slopes, arch comparisons,
tooth symmetry) beside the ones with QC. docs/qc.md ("For a study") describes the order.
"""

from __future__ import annotations

import warnings
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from typing import Any

import numpy as np
import pandas as pd

from dentalkit.errors import DentalkitWarning
from dentalkit.study._not_run import Problems
from dentalkit.study._parts import measure_scaled
from dentalkit.study.calibration import Calibration

__all__ = [
    "CHECKED",
    "QC_MEASURES",
    "apply_policy",
    "check_tables",
    "drawn_without",
    "run_qc",
    "sensitivity",
    "sensitivity_results",
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
#: The analyses run again without QC for :func:`sensitivity_results` (those whose input
#: tables QC can exclude rows from, and those that use their results).
RERUN = ("ceph", "ceph_compare", "arch", "arch_groups", "growth", "teeth")
#: The tables QC removes rows from that these analyses read.
RERUN_TABLES = ("landmarks", "arch_points", "teeth")
#: The main statistic of each result table compared with and without QC: (table, key
#: columns, estimate column, the estimate's name — a column or words —, p-value column,
#: patients column, only rows whose ``term`` contains this). A comparison gives its
#: effect size (one scale for every test), a growth model its rates per year (the time
#: terms), tooth symmetry its geometric mean right/left ratio.
RESULTS = (
    ("ceph_compare", ("measure",), "effect_size", "effect_size_name", "p_adjusted", "n_units", None),
    ("arch_compare", ("arch", "measure"), "effect_size", "effect_size_name", "p_adjusted",
     "n_units", None),
    ("growth_fixed", ("measure", "term"), "estimate", "coefficient (per year)", "p_adjusted",
     "n_units", "years"),
    ("tooth_symmetry_cohort", ("source", "arch", "tooth_type"), "gm_ratio",
     "geometric mean right/left ratio", None, "n_patients", None),
)  # fmt: skip


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


#: What a figure's caption calls the excluded items of each check.
EXCLUDED_WORDS = {
    "landmarks": "session(s) of landmarks",
    "teeth": "tooth row(s)",
    "arch_points": "arch(es) of points",
    "findings": "detection box(es)",
    "tle_inputs": "treatment-length row(s)",
}


def drawn_without(
    tables: Mapping[str, pd.DataFrame], analyses: Mapping[str, pd.DataFrame]
) -> tuple[dict[str, pd.DataFrame], dict[str, str]]:
    """The tables a study's figures draw: without the items ``qc="exclude"`` left out of
    the analyses (as the analysis tables the figures read), and what each caption says.

    Parameters
    ----------
    tables : mapping of str to DataFrame
        The study's tables as built.
    analyses : mapping of str to DataFrame
        Its analyses: ``qc`` (the checks) and ``qc_excluded`` (present only under
        ``qc="exclude"``).

    Returns
    -------
    tables : dict of str to DataFrame
        The tables with the rows of every excluded item left out (the same tables when
        nothing was excluded or the policy was not ``"exclude"``).
    notes : dict of str to str
        Per table rows were left out of: the caption's sentence naming how many items of
        which check, and where each is listed with its reason.
    """
    excluded, checks = analyses.get("qc_excluded"), analyses.get("qc")
    if excluded is None or not len(excluded) or checks is None or not len(checks):
        return dict(tables), {}
    kept, _, _ = apply_policy(tables, checks, "exclude")
    counts = excluded["check"].astype(str).value_counts()
    notes = {
        name: (
            f"Drawn without the {int(counts[check])} {EXCLUDED_WORDS[check]} that quality "
            "control excluded from the analyses (qc = 'exclude'; each is listed with its "
            "reason in analyses/qc_excluded.parquet)."
        )
        for check, name in CHECKED
        if check in counts.index and name in tables
    }
    return kept, notes


def _two_arms(both: pd.DataFrame, n: str, stats: Mapping[str, str]) -> dict[str, np.ndarray]:
    """The columns of a with/without-QC table from an outer merge of the two arms
    (suffixes ``_without``, ``_with``): n of each arm (0 when it has no row), each of
    ``stats`` (output name → merged column) per arm, and the first one's difference."""
    out: dict[str, np.ndarray] = {}
    for arm in ("without", "with"):
        out[f"n_{arm}_qc"] = both[f"{n}_{arm}"].fillna(0).to_numpy(np.int64)
        for name, col in stats.items():
            out[f"{name}_{arm}_qc"] = both[f"{col}_{arm}"].to_numpy(float)
    first = next(iter(stats.values()))
    out["difference"] = (both[f"{first}_with"] - both[f"{first}_without"]).to_numpy(float)
    return out


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
            **_two_arms(both, "size", {"mean": "mean", "sd": "std"}),
            "unit_of_analysis": "patient",
            "method": (
                f"mean of each patient's {session} lateral session: every session as "
                "built (without QC) and the sessions qc='exclude' kept (with QC)"
            ),
        }
    )


def _statistics(results: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The :data:`RESULTS` statistics of one arm: one row per table and item."""
    parts = []
    for table, keys, est, name, p, n, term in RESULTS:
        t = results.get(table)
        if t is None or not len(t) or est not in t.columns:
            continue
        if term is not None:
            t = t[t["term"].astype(str).str.contains(term, regex=False)]
        item = t[keys[0]].astype(str)
        for k in keys[1:]:
            item = item + " · " + t[k].astype(str)
        parts.append(
            pd.DataFrame(
                {
                    "table": table,
                    "item": item.to_numpy(),
                    "statistic": (t[name].astype(str) if name in t.columns else name),
                    "n": pd.to_numeric(t[n], errors="coerce").to_numpy(float),
                    "estimate": pd.to_numeric(t[est], errors="coerce").to_numpy(float),
                    "p": (
                        pd.to_numeric(t[p], errors="coerce").to_numpy(float)
                        if p in t.columns
                        else np.nan
                    ),
                }
            )
        )
    cols = ["table", "item", "statistic", "n", "estimate", "p"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)


def sensitivity_results(inputs: Any, specs: Sequence[Any]) -> dict[str, pd.DataFrame]:
    """The main statistics of the analyses with QC (``inputs.results``) and without it
    (the analyses of :data:`RERUN` among ``specs`` the design runs, run again on the
    tables as built, ``inputs.built_tables``):
    the ``qc_sensitivity_results`` table, one row per statistic of :data:`RESULTS`.

    Returns an empty dict (the table marked not asked) when the policy is not
    ``"exclude"`` or QC removed no row these analyses read (both arms are the same). The
    arm without QC makes its own groups (the default skeletal class is read from its own
    sessions) and its problems are not reported (they are the main analyses' problems
    plus those of the excluded rows, which ``qc_excluded`` lists).
    """
    if inputs.design.qc != "exclude" or not set(RERUN_TABLES) & set(inputs.problems.kept_rows):
        inputs.unasked.add("qc_sensitivity_results")
        return {}
    chosen = inputs.design.analyses or RERUN
    arm = replace(
        inputs, tables=inputs.built_tables, results={}, problems=Problems(), unasked=set()
    )
    with warnings.catch_warnings():  # the arm's problems are not the study's
        warnings.simplefilter("ignore", DentalkitWarning)
        for spec in specs:
            if spec.name in RERUN and spec.name in chosen and spec.ready(arm):
                arm.results.update(spec.run(arm))
    with_qc, without = _statistics(inputs.results), _statistics(arm.results)
    both = without.merge(
        with_qc, on=["table", "item", "statistic"], how="outer", suffixes=("_without", "_with")
    )
    if not len(both):
        inputs.unasked.add("qc_sensitivity_results")
        return {}
    order = {r[0]: i for i, r in enumerate(RESULTS)}
    both = both.iloc[np.argsort([order[t] for t in both["table"]], kind="stable")]
    out = pd.DataFrame(
        {
            "table": both["table"].astype(str).to_numpy(),
            "item": both["item"].astype(str).to_numpy(),
            "statistic": both["statistic"].astype(str).to_numpy(),
            **_two_arms(both, "n", {"estimate": "estimate", "p": "p"}),
            "unit_of_analysis": "patient",
            "method": (
                "the analyses run again on every row as built (without QC; groups, sessions "
                "and models chosen by the same design) beside the main analyses, which use "
                "the rows qc='exclude' kept (with QC)"
            ),
        }
    )
    return {"qc_sensitivity_results": out.reset_index(drop=True)}


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
    if checks is None:  # nothing to check: no table says why it is missing
        inputs.unasked.update(("qc", "qc_summary", "qc_excluded", "qc_sensitivity"))
        return {}
    out = {"qc": checks, "qc_summary": qc.summarize(checks)}
    policy = inputs.design.qc
    if policy != "exclude":
        inputs.unasked.update(("qc_excluded", "qc_sensitivity"))  # not asked by the design
        return out
    built = inputs.tables
    kept, excluded, kept_rows = apply_policy(built, checks, policy)
    inputs.built_tables, inputs.tables = built, kept
    inputs.problems.kept_rows = kept_rows
    out["qc_excluded"] = excluded
    table = sensitivity(built, kept, inputs.calibration, inputs.design.session)
    if table is not None:
        out["qc_sensitivity"] = table
    else:  # no session excluded: nothing to compare
        inputs.unasked.add("qc_sensitivity")
    return out
