"""``agreement.measure``: Bland–Altman, ICC, Dahlberg and classification agreement."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from dentalkit.agreement._classes import classification
from dentalkit.agreement._common import (
    Errors,
    check_errors,
    check_session,
    finish,
    one_session_per_unit,
    problems_frame,
    session_columns,
    unit_column,
)
from dentalkit.agreement._pairing import no_pairs_error, pair, prepare
from dentalkit.agreement._reliability import ICC_FORMS, ICC_MIN_RATINGS, icc, icc_min_targets
from dentalkit.agreement._stats import LoaCI, bland_altman_moments, repeated_moments
from dentalkit.errors import InputError

__all__ = ["MeasureAgreement", "measure"]

#: Fewest paired sessions an ICC is computed from (two methods: pingouin's 5 ratings).
ICC_MIN_PAIRS = icc_min_targets(2)


@dataclass(frozen=True)
class MeasureAgreement:
    """Result of :func:`measure`.

    Attributes
    ----------
    summary : DataFrame
        One row per (view, measure): ``unit`` (of the measure), ``n`` pairs analysed,
        ``unit_of_analysis`` (the unit column, ``"session"`` without one), ``n_units``
        (units behind the pairs), ``n_rows`` (paired sessions before the ``session``
        rule), ``session`` (the rule), ``mean_reference``,
        ``mean_test``; Bland–Altman ``bias`` (mean of test − reference) with
        ``bias_ci_low``/``bias_ci_high`` and ``p_bias`` (paired t test), ``sd_diff``,
        limits of agreement ``loa_low``/``loa_high`` with their intervals
        (``loa_low_ci_low`` …); ``dahlberg`` (method error); ``icc`` with
        ``icc_ci95_low``/``icc_ci95_high`` and ``icc_form``; ``method`` and ``why``
        (which pairs were analysed and what the intervals assume).
    classification : DataFrame
        One row per classification scheme (``skeletal_class`` from ANB,
        ``skeletal_class_wits``, ``vertical_sn_gogn``, ``vertical_fma``) whose measure
        both tables have: ``measure``, ``n`` (sessions), ``n_units`` (patients behind
        them), ``n_agree``, ``agreement_pct`` with a Wilson interval, Cohen's
        ``kappa`` with ``kappa_se`` and its interval, and — the classes are ordered —
        ``weighted_kappa`` (``weights``: linear or quadratic) with
        ``weighted_kappa_se`` and its interval.
    pairs : DataFrame
        One row per analysed paired (session, measure): ``reference``, ``test``,
        ``mean``, ``difference`` (test − reference), ``unit`` (only the sessions the
        ``session`` rule kept, so a figure drawn from it shows what the summary used).
    class_pairs : DataFrame
        One row per (session, scheme): ``reference`` and ``test`` category, ``agree``.
    problems : DataFrame
        Everything left out and why.
    settings : dict
        ``agreement``, ``confidence``, ``loa_ci``, ``icc_form``, ``session`` and
        ``unit`` used.
    """

    summary: pd.DataFrame
    classification: pd.DataFrame
    pairs: pd.DataFrame
    class_pairs: pd.DataFrame
    problems: pd.DataFrame
    settings: dict = field(default_factory=dict)

    def __repr__(self) -> str:
        return (
            f"MeasureAgreement({len(self.summary)} measure(s), "
            f"{len(self.classification)} classification scheme(s), "
            f"{len(self.problems)} problem(s))"
        )


def measure(
    reference: pd.DataFrame,
    test: pd.DataFrame,
    *,
    measures: Sequence[str] | None = None,
    session_cols: list[str] | None = None,
    agreement: float = 1.96,
    confidence: float = 0.95,
    loa_ci: LoaCI = "1999",
    icc_form: str = "ICC(2,1)",
    thresholds: pd.DataFrame | str | Path | None = None,
    schemes: Sequence[str] | None = None,
    errors: Errors = "raise",
    kappa_weights: str = "linear",
    session: Literal["first", "last", "all"] = "first",
    unit: str | None = "patient_id",
) -> MeasureAgreement:
    """Agreement of two long measures tables, per measure and per classification.

    Parameters
    ----------
    reference, test : DataFrame
        Long tables with session columns, ``measure``, ``value`` and optionally
        ``view`` and ``unit`` — the output of :func:`dentalkit.ceph.measure`, or any
        arch/tooth measure table of the same shape. Paired on session key, view and
        measure; differences are test − reference.
    measures : list of str, optional
        Only these measures (default: all both tables have).
    session_cols : list of str, optional
        Default: those of ``patient_id``, ``timestamp`` present in both tables.
    agreement : float
        Limits of agreement = bias ± ``agreement`` × SD (1.96; 2 in Bland & Altman 1986).
    confidence : float
        Level of the bias, LoA, agreement and kappa intervals. The ICC interval is
        always 95 % (pingouin).
    loa_ci : {"1999", "1986"}
        Standard error of the limits (see
        :func:`dentalkit.agreement.bland_altman_moments`).
    icc_form : str
        Default ``"ICC(2,1)"``: two-way random effects, absolute agreement, single
        rater (Shrout & Fleiss 1979; McGraw & Wong 1996's ICC(A,1)), via
        :func:`pingouin.intraclass_corr`.
    thresholds : DataFrame or path, optional
        Classification thresholds (default the shipped ``ceph_classes.csv``, see
        :func:`dentalkit.ceph.load_thresholds`).
    schemes : list of str, optional
        Classification schemes to compare (default: every scheme whose measure both
        tables have, in mm or deg).
    errors : {"raise", "collect", "warn"}, default "raise"
        dentalkit's one ``errors=`` rule (:func:`dentalkit.errors.check_errors`).
        Unpaired, NaN or repeated values are always listed in ``result.problems`` and left out of the
        statistics; ``"collect"`` says nothing more, ``"warn"`` also emits one
        :class:`~dentalkit.errors.DentalkitWarning`, ``"raise"`` (the default) raises
        :class:`~dentalkit.errors.InputError` instead, listing them (patient, session,
        side/item and reason; the whole table on its ``problems`` attribute).
    kappa_weights : {"linear", "quadratic"}
        Weights of the weighted kappa of the (ordered) classes; default linear.
    session : {"first", "last", "all"}
        Which paired sessions of each unit enter the statistics, pre-specified so
        that every unit (patient) counts once. Default ``"first"``: per measure (and
        view), each unit's earliest session measured by both methods (sessions
        ordered by ``timestamp``, read as a date when it is one, else as text);
        ``"last"`` its latest. ``"all"`` uses every paired session; where a unit
        has more than one, the limits are Bland & Altman's (2007) for repeated
        measurements whose true value changes (``sd_diff`` = √(σ²_between +
        σ²_within) of the differences, with ``sd_between`` and ``sd_within``;
        :func:`~dentalkit.agreement.bland_altman_repeated`), the bias interval and
        ``p_bias`` rest on the units' degrees of freedom, the limits' intervals and the
        ICC are NaN, and ``why`` says so. The classification table uses the same pairs
        (with ``"all"``, kappa intervals clustered on the unit and no large-sample SEs
        where a unit repeats).
    unit : str or None
        Column naming the unit of analysis, default ``"patient_id"``; it must be a
        session column. Without it (``None`` or absent from the tables) each paired
        session is a unit and ``session`` has no effect (``unit_of_analysis``
        ``"session"``).

    Returns
    -------
    MeasureAgreement
        Tables carry a ``view`` column only when an input has one (arch and tooth
        measure tables usually do not).

    Notes
    -----
    The patient is the unit of analysis (docs/conventions.md): with several sessions
    per patient, pooled differences are not independent, and the t intervals, the
    ICC's F-based interval and the kappa's standard error would be too narrow (Bland
    & Altman 2007, *J Biopharm Stat* 17:571–582). One session per unit keeps them
    valid; with one session per patient every rule gives the same result.

    Bland & Altman (1986, *Lancet* 327:307–310; 1999, *Stat Methods Med Res*
    8:135–160); Dahlberg's method error sqrt(Σd²/2n) (Dahlberg 1940; Houston 1983,
    *Am J Orthod* 83:382–390), which pools random and systematic error — read it with
    the bias and ``p_bias``; Cohen's kappa (Cohen 1960) and weighted kappa (Cohen
    1968) with the asymptotic standard errors of Fleiss, Cohen & Everitt (1969) from
    statsmodels.

    Examples
    --------
    >>> import pandas as pd
    >>> ref = pd.DataFrame(
    ...     {
    ...         "patient_id": list("abcd"),
    ...         "measure": "SNA",
    ...         "value": [80.0, 82, 84, 86],
    ...         "unit": "deg",
    ...     }
    ... )
    >>> tst = ref.assign(value=[81.0, 82, 85, 86])
    >>> res = measure(ref, tst)
    >>> res.summary[["measure", "n", "bias", "dahlberg"]].round(3).to_dict("list")
    {'measure': ['SNA'], 'n': [4], 'bias': [0.5], 'dahlberg': [0.5]}
    """
    errors = check_errors(errors, "dentalkit.agreement.measure")
    check_session(session)
    if icc_form not in ICC_FORMS:
        raise InputError(f"unknown icc_form {icc_form!r}; choose one of {list(ICC_FORMS)}")
    cols = session_columns(reference, test, session_cols)
    unit_col = unit_column(unit, cols, reference, test)
    has_view = "view" in reference.columns or "view" in test.columns
    sides = []
    for side, table in (("reference", reference), ("test", test)):
        for col in ("measure", "value"):
            if col not in table.columns:
                raise InputError(
                    f"the {side} measures table lacks column {col!r} (use the output of "
                    "dentalkit.ceph.measure or a long table of the same shape)"
                )
        sides.append(
            prepare(
                table,
                side,
                item="measure",
                item_values=table["measure"],
                values=("value",),
                session_cols=cols,
                subset=measures,
                keep=("unit",),
                bad_value_reason="value is NaN or non-finite (the measure could not be "
                "computed; see the problems of dentalkit.ceph.measure)",
                default_view="lateral" if has_view else "",
            )
        )
    paired = pair(
        *sides,
        item="measure",
        values=("value",),
        session_cols=cols,
        subset=measures,
        carry=("unit",),
    )
    pairs = paired.pairs
    problems = list(paired.problems)
    if not len(pairs):
        raise no_pairs_error("measure", cols, problems)
    unit = _units(pairs)

    ref = pairs["value_reference"].to_numpy(float)
    tst = pairs["value_test"].to_numpy(float)
    out_pairs = pairs[[*cols, "view", "measure"]].copy()
    out_pairs["reference"], out_pairs["test"] = ref, tst
    out_pairs["mean"] = (ref + tst) / 2.0
    out_pairs["difference"] = tst - ref
    out_pairs["unit"] = unit
    order = list(dict.fromkeys(sides[0].rows["measure"].tolist()))
    out_pairs["measure"] = out_pairs["measure"].cat.set_categories(order)
    out_pairs["view"] = out_pairs["view"].cat.remove_unused_categories()
    out_pairs = out_pairs.sort_values(["view", "measure"], kind="stable").reset_index(drop=True)
    # paired sessions per (view, measure) before the session rule: the summary's n_rows
    n_rows = out_pairs.groupby(["view", "measure"], observed=True)["measure"].transform("size")
    if unit_col is not None and session != "all":
        keep = one_session_per_unit(out_pairs, unit_col, cols, session, "measure")
        out_pairs, n_rows = out_pairs.loc[keep], n_rows.loc[keep]
        out_pairs = out_pairs.reset_index(drop=True)

    summary, small = _summary(
        out_pairs,
        cols,
        agreement,
        confidence,
        loa_ci,
        icc_form,
        unit_col,
        session,
        n_rows.to_numpy(np.int64),
    )
    problems.extend(small)
    if not has_view:  # arch or tooth measures: no view
        summary = summary.drop(columns="view")
        out_pairs = out_pairs.drop(columns="view")
    if kappa_weights not in ("linear", "quadratic"):
        raise InputError(
            f"kappa_weights={kappa_weights!r} is not allowed; use 'linear' or 'quadratic'"
        )
    cls, class_pairs, cls_problems = classification(
        out_pairs, cols, thresholds, schemes, confidence, kappa_weights, unit_col
    )
    problems.extend(cls_problems)
    if unit_col is not None and len(cls):
        # session="all": the intervals are clustered on the patient; the large-sample SEs
        # would count one patient's sessions as independent, so they are left out
        repeated = (cls["n_units"] < cls["n"]).to_numpy()
        cls.loc[repeated, [c for c in cls.columns if c.endswith("_se")]] = np.nan
    prob = problems_frame(problems, "agreement_measures", "measure", cols)
    if not has_view:
        prob["view"] = None
    finish(prob, errors, "measures", where="dentalkit.agreement.measure")
    settings = {
        "agreement": agreement,
        "confidence": confidence,
        "loa_ci": loa_ci,
        "icc_form": icc_form,
        "session": session,
        "unit": unit_col,
    }
    return MeasureAgreement(summary, cls, out_pairs, class_pairs, prob, settings)


def _units(pairs: pd.DataFrame) -> np.ndarray:
    ur = pairs["unit_reference"] if "unit_reference" in pairs.columns else None
    ut = pairs["unit_test"] if "unit_test" in pairs.columns else None
    if ur is None and ut is None:
        return np.full(len(pairs), None, dtype=object)
    if ur is None or ut is None:
        return (ur if ur is not None else ut).to_numpy(dtype=object)
    clash = ur.notna() & ut.notna() & (ur.astype(object) != ut.astype(object))
    if clash.any():
        bad = pairs.loc[clash, ["measure", "unit_reference", "unit_test"]].drop_duplicates(
            "measure"
        )
        listing = ", ".join(
            f"{r['measure']} ({r['unit_reference']} vs {r['unit_test']})"
            for r in bad.head(5).to_dict("records")
        )
        raise InputError(
            f"the two tables give measures in different units: {listing}. Calibrate both "
            "the same way (mm_per_px in dentalkit.ceph.measure) before comparing"
        )
    return ur.where(ur.notna(), ut).to_numpy(dtype=object)


def _summary(pairs, cols, agreement, confidence, loa_ci, icc_form, unit_col, session, n_rows):
    view_codes = pairs["view"].cat.codes.to_numpy(np.int64)
    m_codes = pairs["measure"].cat.codes.to_numpy(np.int64)
    n_m = len(pairs["measure"].cat.categories)
    uniq, code = np.unique(view_codes * n_m + m_codes, return_inverse=True)
    d = pairs["difference"].to_numpy(float)
    ref = pairs["reference"].to_numpy(float)
    tst = pairs["test"].to_numpy(float)
    n = np.bincount(code).astype(float)
    bias = np.bincount(code, weights=d) / n
    with np.errstate(invalid="ignore", divide="ignore"):
        ss = np.bincount(code, weights=(d - bias[code]) ** 2)
        sd = np.where(n > 1, np.sqrt(ss / (n - 1)), np.nan)
    ba = bland_altman_moments(
        n, bias, sd, agreement=agreement, confidence=confidence, loa_ci=loa_ci
    )
    dahl = np.sqrt(np.bincount(code, weights=d**2) / (2.0 * n))
    first = np.unique(code, return_index=True)[1]
    if unit_col is None:
        units = n.astype(np.int64)
    else:
        unit_codes = pd.factorize(pairs[unit_col].astype(object))[0]
        units = (
            pd.DataFrame({"g": code, "u": unit_codes})
            .groupby("g")["u"]
            .nunique()
            .reindex(np.arange(len(uniq)))
            .to_numpy(np.int64)
        )
    repeated = units < n  # only with session="all": a unit with several sessions
    sd_between = np.full(len(uniq), np.nan)
    sd_within = np.full(len(uniq), np.nan)
    if repeated.any():  # Bland & Altman (2007): a unit's sessions are not other units
        unit_codes = pd.factorize(pairs[unit_col].astype(object))[0]
        for g in np.flatnonzero(repeated):
            rows = code == g
            rm = repeated_moments(
                d[rows], unit_codes[rows], agreement=agreement, confidence=confidence
            )
            sd[g], sd_between[g], sd_within[g] = rm["sd_total"], rm["sd_between"], rm["sd_within"]
            for key in ("bias_ci_low", "bias_ci_high", "p_bias", "loa_low", "loa_high"):
                ba[key][g] = rm[key]
            for key in ("loa_se", "loa_low_ci_low", "loa_low_ci_high", "loa_high_ci_low",
                        "loa_high_ci_high"):  # fmt: skip
                ba[key][g] = np.nan  # Bland & Altman (2007) give no interval for the limits
    summary = pd.DataFrame(
        {
            "view": pd.Categorical.from_codes(uniq // n_m, pairs["view"].cat.categories),
            "measure": pd.Categorical.from_codes(uniq % n_m, pairs["measure"].cat.categories),
            "unit": pairs["unit"].to_numpy(dtype=object)[first],
            "n": n.astype(np.int64),
            "n_rows": n_rows[first],
            "unit_of_analysis": unit_col if unit_col is not None else "session",
            "n_units": units,
            "session": session if unit_col is not None else "all",
            "mean_reference": np.bincount(code, weights=ref) / n,
            "mean_test": np.bincount(code, weights=tst) / n,
            "bias": bias,
            "bias_ci_low": ba["bias_ci_low"],
            "bias_ci_high": ba["bias_ci_high"],
            "p_bias": ba["p_bias"],
            "sd_diff": sd,
            "sd_between": sd_between,
            "sd_within": sd_within,
            "loa_low": ba["loa_low"],
            "loa_low_ci_low": ba["loa_low_ci_low"],
            "loa_low_ci_high": ba["loa_low_ci_high"],
            "loa_high": ba["loa_high"],
            "loa_high_ci_low": ba["loa_high_ci_low"],
            "loa_high_ci_high": ba["loa_high_ci_high"],
            "dahlberg": dahl,
        }
    )
    icc_vals = np.full((len(uniq), 3), np.nan)
    problems = []
    order = np.argsort(code, kind="stable")
    bounds = np.r_[0, np.cumsum(np.bincount(code))]
    for g in range(len(uniq)):  # one pingouin call per measure (its API takes one table)
        rows = order[bounds[g] : bounds[g + 1]]
        if len(rows) < 2:
            problems.append(
                pairs.iloc[rows[:1]][[*cols, "view", "measure"]].assign(
                    side="both",
                    path="n",
                    reason=f"only {len(rows)} paired session(s): Bland–Altman, ICC need ≥ 2",
                )
            )
            continue
        label = _measure_label(pairs, rows)
        n_units = _n_units(pairs, rows)
        if repeated[g]:
            continue  # the ICC would take one patient's sessions as different targets
        if len(rows) < ICC_MIN_PAIRS:
            problems.append(
                pairs.iloc[rows[:1]][["view", "measure"]].assign(
                    side="both",
                    path="icc",
                    reason=(
                        f"ICC of {label} not computed: {len(rows)} paired session(s) of "
                        f"{n_units} patient(s), and the ICC needs at least {ICC_MIN_PAIRS} "
                        "sessions measured by both methods (pingouin's two-way ANOVA refuses "
                        f"fewer than {ICC_MIN_RATINGS} ratings; the limit is the software's). "
                        "Bland–Altman and Dahlberg are still given. An ICC from so few "
                        "sessions has a 95 % CI too wide to read: reliability studies plan "
                        "at least 30 patients (Koo & Li 2016, J Chiropr Med 15:155–163)"
                    ),
                )
            )
            continue
        long = pd.DataFrame(
            {
                "target": np.tile(np.arange(len(rows)), 2),
                "rater": np.repeat(["reference", "test"], len(rows)),
                "rating": np.concatenate([ref[rows], tst[rows]]),
            }
        )
        try:
            r = icc(long, "target", "rater", "rating", form=icc_form)
        except (ValueError, AssertionError, ZeroDivisionError) as exc:  # degenerate data
            problems.append(
                pairs.iloc[rows[:1]][["view", "measure"]].assign(
                    side="both",
                    path="icc",
                    reason=f"ICC of {label} not computed from {len(rows)} paired session(s) "
                    f"of {n_units} patient(s): pingouin.intraclass_corr refused the data ({exc})",
                )
            )
            continue
        if not np.isfinite(r["icc"]):
            problems.append(
                pairs.iloc[rows[:1]][["view", "measure"]].assign(
                    side="both",
                    path="icc",
                    reason=_undefined_icc_reason(label, ref[rows], tst[rows], n_units),
                )
            )
            continue
        icc_vals[g] = r["icc"], r["ci95_low"], r["ci95_high"]
    summary["icc"] = icc_vals[:, 0]
    summary["icc_ci95_low"] = icc_vals[:, 1]
    summary["icc_ci95_high"] = icc_vals[:, 2]
    summary["icc_form"] = icc_form
    summary["method"] = (
        f"Bland–Altman bias and limits (bias ± {agreement:g} SD; limit intervals "
        f"{loa_ci}); Dahlberg's method error; {icc_form} (pingouin)"
    )
    summary["why"] = _why(unit_col, session, repeated, n, units, n_rows[first])
    return summary, problems


def _why(unit_col, session, repeated, n, n_units, n_rows) -> list[str]:
    """Per summary row: which pairs were analysed and what the intervals assume."""
    out = []
    for rep, k, u, r in zip(repeated, n, n_units, n_rows, strict=True):
        if unit_col is None:
            out.append(
                f"no unit column: each of the {int(k)} paired sessions counted as an "
                "independent unit; if sessions share a patient, pass unit= and session='first'"
            )
        elif rep:
            out.append(
                f"session='all': {int(k)} paired sessions of {int(u)} {unit_col} units; "
                "repeated-measures limits of Bland & Altman (2007): sd_diff = √(between-unit "
                "+ within-unit variance of the differences), bias interval and p_bias on "
                f"{int(u) - 1} df (units − 1); no interval for the limits (the paper gives "
                "none) and no ICC (it would count one unit's sessions as independent targets); "
                "Dahlberg over all pairs"
            )
        elif session == "all" or r == k:
            out.append(f"one paired session per {unit_col}: {int(u)} units, independent")
        else:
            out.append(
                f"pre-specified: each {unit_col}'s {session} paired session ({int(k)} of "
                f"{int(r)} paired sessions), so every unit counts once"
            )
    return out


def _undefined_icc_reason(label: str, ref: np.ndarray, tst: np.ndarray, n_units: int) -> str:
    """Why pingouin gave no ICC (NaN) for a measure: the variance it divides by is zero."""
    both = np.concatenate([ref, tst])
    if np.ptp(both) == 0:
        what = f"all {both.size} ratings are equal ({both[0]:g})"
    elif np.ptp((ref + tst) / 2.0) == 0:
        what = "every session has the same mean of the two methods"
    else:
        what = "the ANOVA's mean squares leave a zero denominator"
    return (
        f"ICC of {label} undefined: no variance between sessions ({what}; "
        f"{ref.size} paired session(s) of {n_units} unit(s)); the ICC is the share of "
        "between-session variance and needs measurements that differ between patients. "
        "Bland–Altman and Dahlberg are still given"
    )


def _measure_label(pairs: pd.DataFrame, rows: np.ndarray) -> str:
    """``'SNA (lateral)'``: the measure of a summary group, with its view when there is one."""
    first = pairs.iloc[int(rows[0])]
    view = first["view"] if "view" in pairs.columns else None
    view = "" if view is None or pd.isna(view) or view == "" else f" ({view})"
    return f"{first['measure']}{view}"


def _n_units(pairs: pd.DataFrame, rows: np.ndarray) -> int:
    """Patients behind the paired sessions ``rows`` (sessions when there is no patient_id)."""
    if "patient_id" not in pairs.columns:
        return len(rows)
    return int(pairs["patient_id"].iloc[rows].nunique())
