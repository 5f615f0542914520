"""The study's report: every sentence of ``report.md`` in one place.

:func:`sections` turns the tables and analyses into the report's sections (each says its
unit of analysis, n, method and why); :func:`write_report` writes them with the figures.
The command line prints the same notes from here (:func:`px_arches_note`), so a sentence
is written once.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from dentalkit.study.analyses import NOT_RUN, problems_summary
from dentalkit.study.design import CORRECTION_NAMES, QC_POLICY_WORDS, Design
from dentalkit.study.growth_notes import defining_measure, interval_text, power_text, rtm_text

__all__ = [
    "default_intro",
    "problems_line",
    "px_arches_note",
    "qc_section",
    "sections",
    "tle_note",
    "write_report",
]


def _markdown(table: pd.DataFrame, floatfmt: str = ".2f") -> str:
    """A small DataFrame as a Markdown table (:meth:`pandas.DataFrame.to_markdown`, tabulate).

    Missing values are blank; text columns are printed as they are (a label such as
    ``"07"`` or ``"2.3"`` is not re-read as a number).
    """
    text_cols = [
        i
        for i, dtype in enumerate(table.dtypes)
        if not (pd.api.types.is_numeric_dtype(dtype) and not pd.api.types.is_bool_dtype(dtype))
    ]
    cells = table.astype(object).where(table.notna(), None)
    return cells.to_markdown(
        index=False, floatfmt=floatfmt, missingval="", disable_numparse=text_cols
    )


def _n(values: object) -> str:
    """Per-group counts (a list of int) as '4, 14, 12'."""
    if isinstance(values, (list, tuple, np.ndarray)):
        return ", ".join(str(int(v)) for v in values)
    return "" if values is None else str(values)


def _levels_text(cmp: pd.DataFrame) -> str:
    """The levels of the first comparison (its ``groups`` list) as 'Class I, Class II, …'."""
    return ", ".join(map(str, cmp["groups"].iloc[0]))


def _tests_markdown(cmp: pd.DataFrame, keys: list[str]) -> str:
    """A comparison table with, for every test, its unit, n, test and why (report rows);
    the effect size with its interval's level, and whether that interval agrees with the
    test (``effect_agrees_with_test``)."""
    levels = cmp.get("effect_ci_level", pd.Series(np.nan, index=cmp.index))
    agrees = cmp.get("effect_agrees_with_test", pd.Series(pd.NA, index=cmp.index))
    rows = cmp.assign(
        n_per_group=[_n(v) for v in cmp["n_units_per_group"]],
        effect=[
            f"{name} {es:.2f} [{lo:.2f}, {hi:.2f}]" + (f" ({lv:.0%})" if pd.notna(lv) else "")
            if pd.notna(es)
            else ""
            for name, es, lo, hi, lv in zip(
                cmp["effect_size_name"],
                cmp["effect_size"],
                cmp["effect_ci_low"],
                cmp["effect_ci_high"],
                levels,
                strict=True,
            )
        ],
        agrees_with_test=[
            "" if pd.isna(a) or pd.isna(es) else ("yes" if bool(a) else "no")
            for a, es in zip(agrees, cmp["effect_size"], strict=True)
        ],
    )
    cols = [
        *keys,
        "unit_of_analysis",
        "n_units",
        "n_per_group",
        "test",
        "p_value",
        "p_adjusted",
        "effect",
        "agrees_with_test",
    ]
    return _markdown(rows[cols], ".3f")


def _why_text(cmp: pd.DataFrame) -> str:
    whys = "; ".join(dict.fromkeys(w for w in cmp["why"].dropna()))
    methods = "; ".join(dict.fromkeys(m for m in cmp["method"].dropna()))
    return f"Test: {methods}. Why: {whys}."


def _tmj_section(prev: pd.DataFrame) -> str:
    """TMJ findings per patient (the unit): unknown wordings apart, never counted as found."""
    r = prev.iloc[0]
    table = pd.DataFrame(
        {
            "patients": [int(r["n_units"])],
            "with a finding": [int(r["n_with"])],
            "without": [int(r["n_without"])],
            "unknown wording": [int(r["n_unknown"])],
            "prevalence (known)": [r["prevalence"]],
            "ci_low": [r["ci_low"]],
            "ci_high": [r["ci_high"]],
            "bounds": [f"{r['bound_low']:.2f}–{r['bound_high']:.2f}"],
        }
    )
    return (
        _markdown(table, ".2f")
        + f"\n\n{r['method']}. A sentence that no TMJ phrase recognises is unknown, never "
        "counted as a finding (docs/data-contract.md, TMJ sentences)."
    )


def _versions_section(versions: pd.DataFrame) -> str:
    text = _markdown(versions[["endpoint", "model_version", "n_sessions", "n_patients"]])
    pooled = sorted(set(versions.loc[versions["pooled"], "endpoint"]))
    if pooled:
        return text + (
            "\n\n**Pooled model versions**: the analyses of "
            + ", ".join(pooled)
            + " mix responses of different Version labels."
        )
    return text + "\n\nEach endpoint answered with one Version label (or none, as the spec shows)."


def _contract_section(contract: pd.DataFrame) -> str:
    drift = contract[contract["verdict"] == "drift"]
    if drift.empty:
        head = "Every response is as the endpoint registry expects (no drift)."
    else:
        counts = drift.groupby("aspect", sort=False).size()
        head = (
            f"{len(drift)} difference(s) from the registry: "
            + ", ".join(f"{a} {n}" for a, n in counts.items())
            + "."
        )
    return head + " Per endpoint and aspect in `contract.md` and `contract.parquet`."


class _Words:
    """How the report names the design's groups and session (its words in one place)."""

    def __init__(self, design: Design | None) -> None:
        design = design or Design()
        self.column = design.groups
        self.session = design.session
        self.pct = f"{100 * design.confidence:g} %"
        self.correction = design.correction
        if self.column is None:
            self.noun, self.plural, self.member = "skeletal class", "skeletal classes", "class"
            self.term = "skeletal_class"
        else:
            self.noun = self.plural = f"`{self.column}`"
            self.member, self.term = "group", self.column

    @property
    def classes(self) -> bool:
        """The groups are the skeletal classes (the default)."""
        return self.column is None


def _tests_text(cmp: pd.DataFrame, what: str, words: _Words) -> str:
    """What a table of group comparisons holds: unit, n, test and why, correction, effect."""
    return (
        f"One test per {what} between {words.plural}, on the {words.session} session of each "
        f"patient (unit: patient; n = patients per {words.member}, in the order "
        f"{_levels_text(cmp)}). {_why_text(cmp)} p-values adjusted across the {len(cmp)} "
        f"tests ({cmp['correction'].iloc[0]}). {_effect_text(cmp)}"
    )


def _effect_text(cmp: pd.DataFrame) -> str:
    """Which effect size goes with which test, its interval, and whether they agree.

    From the rows' own ``test``, ``effect_size_name``, ``effect_ci_method`` and
    ``effect_agrees_with_test`` (docs/statistics.md, "Effect sizes agree with the test"):
    one item per test and effect size, the rows' df left to the table's tests.
    """
    if "effect_ci_method" not in cmp.columns:
        return ""
    rows = cmp.dropna(subset=["effect_size_name", "effect_ci_method"])
    rows = rows.assign(
        how=rows["effect_ci_method"]
        .astype(str)
        .str.replace(r"\s*with df \([^)]*\)", " on the row's df", regex=True),
        agrees=rows.get("effect_agrees_with_test", pd.Series(False, index=rows.index))
        .fillna(False)
        .astype(bool),
    ).drop_duplicates(["test", "effect_size_name", "how", "agrees"])
    out = []
    for agrees, words in ((True, "agrees with the test"), (False, "is not derived from it")):
        items = [
            f"{r.test} → {r.effect_size_name} ({r.how})"
            for r in rows[rows["agrees"] == agrees].itertuples()
        ]
        if items:
            out.append(f"Effect size whose interval {words}: " + "; ".join(items) + ".")
    return " ".join(out)


def _design_section(design: Design, analyses: Mapping[str, pd.DataFrame]) -> str:
    """The design the run used, one item each, and which scale each image got."""
    lines = [f"- {line}" for line in design.lines()]
    applied = analyses.get("calibration_applied")
    if applied is not None and len(applied):
        counts = applied["calibration"].astype(str).value_counts()
        lines.append(
            f"- Calibration applied to {len(applied)} images: "
            f"{int(counts.get('image', 0))} with their own mm per pixel, "
            f"{int(counts.get('endpoint', 0))} with their endpoint's fallback, "
            f"{int(counts.get('none', 0))} in pixels (`analyses/calibration_applied.parquet`)."
        )
    return "\n".join(lines)


#: Most excluded or flagged items the report lists one by one (the Parquet tables list all).
QC_LISTED = 50


def _qc_items(items: pd.DataFrame, what: str, table: str) -> str:
    """The first :data:`QC_LISTED` items (patient, session, item, reason) as a table."""
    cols = [
        c for c in ("check", "patient_id", "timestamp", "item", "reason", "n_rows") if c in items
    ]
    shown = _markdown(items[cols].head(QC_LISTED).astype(object))
    more = len(items) - QC_LISTED
    tail = f"\n\n… and {more} more {what} in `analyses/{table}.parquet`." if more > 0 else ""
    return shown + tail


def qc_section(analyses: Mapping[str, pd.DataFrame], design: Design | None) -> str | None:
    """The report's "Quality control of the AI's answers" section, or None without ``qc``.

    Counts per check, the method each used and why, the pre-specified policy, the patients
    affected; under ``qc="exclude"`` every excluded item (up to :data:`QC_LISTED`, the rest
    in ``qc_excluded``) and the main results with and without them (``qc_sensitivity``,
    ``qc_sensitivity_results``).
    """
    checks, summary = analyses.get("qc"), analyses.get("qc_summary")
    if checks is None or summary is None or not len(checks):
        return None
    policy = (design or Design()).qc
    flagged = checks[checks["flagged"].astype(bool)]
    n_pat = checks["patient_id"].astype(str).nunique()
    n_hit = flagged["patient_id"].astype(str).nunique()
    counts = summary.assign(methods=summary["methods"].map(lambda m: "; ".join(m)))
    counts = counts[
        ["check", "n_items", "n_not_checked", "n_flagged", "n_patients", "n_patients_flagged",
         "methods"]
    ]  # fmt: skip
    why = checks.drop_duplicates(["check", "method", "method_reason"])
    methods = "\n".join(
        f"- `{c}`: {m} — {r}"
        for c, m, r in zip(why["check"], why["method"], why["method_reason"], strict=True)
    )
    text = (
        "Every answer of the AI was checked before the analyses (`dentalkit.qc`, "
        "docs/qc.md): landmarks by a cohort shape model (generalised Procrustes "
        "superimposition and a robust model that predicts each landmark from the others) "
        "where a view has enough sessions, and by plausible human ranges of the measures; "
        "teeth, arch points, findings boxes and treatment-length inputs by rules. "
        f"**Policy (pre-specified): qc = `{policy}`** — {QC_POLICY_WORDS[policy]}. "
        f"**{n_hit} of {n_pat} patients** have at least one flagged item "
        f"({len(flagged)} of {len(checks)} items; unit: patient).\n\n"
        + _markdown(counts)
        + "\n\nMethod of each check, and why:\n\n"
        + methods
    )
    excluded = analyses.get("qc_excluded")
    if policy == "exclude" and excluded is not None:
        text += (
            f"\n\n**Excluded items** ({len(excluded)}; every row of each left out of the "
            "analyses, with its reason):\n\n"
            + (_qc_items(excluded, "items", "qc_excluded") if len(excluded) else "none.")
        )
        sens = analyses.get("qc_sensitivity")
        if sens is not None and len(sens):
            cols = ["measure", "unit", "n_without_qc", "mean_without_qc", "n_with_qc",
                    "mean_with_qc", "difference"]  # fmt: skip
            text += (
                "\n\n**Sensitivity analysis: main results with and without the excluded "
                f"items.** Cohort means, one session per patient ({sens['method'].iloc[0]}; "
                "unit: patient):\n\n" + _markdown(sens[cols])
            )
        results = analyses.get("qc_sensitivity_results")
        if results is not None and len(results):
            cols = ["table", "item", "statistic", "n_without_qc", "estimate_without_qc",
                    "p_without_qc", "n_with_qc", "estimate_with_qc", "p_with_qc"]  # fmt: skip
            text += (
                "\n\n**Sensitivity analysis: comparisons, growth rates, arch and tooth statistics "
                f"with and without the excluded items** ({results['method'].iloc[0]}; n: patients; "
                "p adjusted as in the main tables):\n\n" + _markdown(results[cols], floatfmt=".3g")
            )
        elif sens is None or not len(sens):  # the arms are the same
            text += "\n\nSensitivity analysis: no excluded item touched the main results' rows."
    elif len(flagged):
        text += (
            f"\n\n**Flagged items** ({len(flagged)}; kept in the analyses under "
            f"qc = `{policy}`):\n\n" + _qc_items(flagged, "flagged items", "qc")
        )
    return text


def sections(
    tables: Mapping[str, pd.DataFrame],
    analyses: Mapping[str, pd.DataFrame],
    contract: pd.DataFrame | None = None,
    *,
    design: Design | None = None,
) -> list[tuple[str, str]]:
    """The report's sections, ``(heading, Markdown body)``, from what the study made.

    Parameters
    ----------
    tables, analyses : mappings of DataFrames
        The study's tables (:func:`dentalkit.convert.tables`) and analyses
        (:func:`dentalkit.study.analyze`, plus the treatment-length tables).
    contract : DataFrame, optional
        The contract report (:func:`dentalkit.contract.contract_report`).
    design : Design, optional
        The design the study ran with: printed first, and the words of the group and
        session sentences (default: :class:`~dentalkit.study.Design` ()).
    """
    from dentalkit.stats import one_row_per_unit

    words = _Words(design)
    sections = []
    if design is not None:
        sections.append(("Design", _design_section(design, analyses)))
    versions = analyses.get("model_versions")
    if versions is not None and len(versions):
        sections.append(("Model versions per endpoint", _versions_section(versions)))
    if contract is not None and len(contract):
        sections.append(("Service contract", _contract_section(contract)))
    qc_text = qc_section(analyses, design)
    if qc_text:
        sections.append(("Quality control of the AI's answers", qc_text))
    classes = analyses.get("ceph_classes")
    changes = analyses.get("ceph_class_changes")
    if classes is not None and len(classes):
        n_pat = classes["patient_id"].nunique()
        text = (
            f"The unit of analysis is the **patient** ({n_pat} patients, "
            f"{len(classes)} lateral sessions). Sessions of one patient are not independent "
            "patients, so every group comparison below uses **one session per patient — the "
            f"{words.session}** — and reports n as patients. "
            + (
                f"A patient's group is the skeletal class (ANB) of their {words.session} session."
                if words.classes
                else f"A patient's group is their value of {words.noun} in the patients table."
            )
        )
        if words.classes and changes is not None and len(changes):
            k = int(changes["changed"].fillna(False).sum())
            m = int(changes["changed"].notna().sum())
            text += (
                f" **{k} of {m} patients** with a class at both their first and last session "
                f"changed class between them; they stay in the class of their {words.session} "
                "session (counted here, not silently filed)."
            )
            moved = changes[changes["changed"].fillna(False).astype(bool)]
            if len(moved):
                cross = (
                    moved.groupby(["first", "last"], observed=True)
                    .size()
                    .reset_index(name="patients")
                )
                cross = cross[cross["patients"] > 0].astype({"first": str, "last": str})
                text += "\n\n" + _markdown(cross)
        sections.append(("Unit of analysis and groups", text))
    summary = analyses.get("ceph_summary")
    if summary is not None and len(summary):
        keep = ["SNA", "SNB", "ANB", "SN_MP", "FMA", "IMPA", "U1_SN", "N_Me", "ANS_Me", "S_Go"]
        rows = summary[summary["measure"].astype(str).isin(keep)]
        cols = [
            c
            for c in ("measure", "unit", "n_units", "mean", "sd", "min", "max")
            if c in rows.columns
        ]
        sections.append(
            (
                f"Cephalometric summary (lateral, {words.session} session of each patient)",
                "n = patients; SD between patients.\n\n" + _markdown(rows[cols]),
            )
        )
    if classes is not None and len(classes):
        first = one_row_per_unit(classes, words.session)
        counts = first["skeletal_class"].value_counts(sort=False).rename_axis("skeletal class")
        sections.append(
            (
                f"Skeletal class (ANB, {words.session} session)",
                _markdown(counts.reset_index(name="patients")),
            )
        )
    ccmp = analyses.get("ceph_compare")
    if ccmp is not None and len(ccmp):
        body = (
            _tests_text(ccmp, "measure", words)
            + " "
            + (
                "ANB, SNA, SNB and Wits define the class and are not tested against it."
                if words.classes
                else "SNA, SNB, ANB and Wits are tested too: they do not define these groups."
            )
            + "\n\n"
            + _tests_markdown(ccmp, ["measure"])
        )
        sections.append((f"Cephalometric measures by {words.noun}", body))
    am = analyses.get("arch_measures")
    if am is not None and len(am):
        ok = am[(am["status"] == "ok") & am["arch"].isin(["up", "lo"])]
        ok = one_row_per_unit(ok, words.session)
        stats = ok.groupby(["arch", "measure", "unit"], observed=True).agg(
            patients=("patient_id", "nunique"), mean=("value", "mean"), sd=("value", "std")
        )
        sections.append(
            (
                f"Arch dimensions ({words.session} session of each patient)",
                _markdown(stats.reset_index()),
            )
        )
    px_note = px_arches_note(tables, analyses, design=design)
    if px_note is not None:
        sections.append(("Arches in pixels", px_note))
    cmp = analyses.get("arch_compare")
    if cmp is not None and len(cmp):
        body = _tests_text(cmp, "arch and dimension", words) + "\n\n"
        body += _tests_markdown(cmp, ["arch", "measure"])
        sections.append((f"Arch dimensions by {words.noun}", body))
    fits = analyses.get("arch_fits")
    if fits is not None and len(fits):
        ok = fits[fits["status"] == "ok"]
        best = ok.loc[
            ok.groupby(["patient_id", "timestamp", "arch"], observed=True)["aic"].idxmin()
        ]
        wins = (
            best["model"]
            .value_counts()
            .rename_axis("model")
            .reset_index(name="arches with lowest AIC")
        )
        sections.append(("Arch-form model comparison (every arch, descriptive)", _markdown(wins)))
    miss = analyses.get("missing_by_fdi")
    if miss is not None and len(miss):
        top = miss.sort_values("prevalence", ascending=False).head(6)
        cols = [
            c
            for c in (
                "fdi",
                "unit_of_analysis",
                "n_affected",
                "n_assessed",
                "prevalence",
                "ci_low",
                "ci_high",
            )
            if c in top.columns
        ]
        sections.append(
            (
                "Most often missing teeth (FDI)",
                "Unit: patient (first session); n_assessed = patients; 95 % Wilson interval "
                "(Wilson 1927) of a proportion of independent patients.\n\n"
                + _markdown(top[cols], ".3f"),
            )
        )
    prev = analyses.get("findings_prevalence")
    if prev is not None and len(prev):
        cols = [
            c
            for c in (
                "source",
                "class_name",
                "unit_of_analysis",
                "n_units_with",
                "n_units",
                "prevalence",
                "ci_low",
                "ci_high",
            )
            if c in prev.columns
        ]
        sections.append(
            (
                "Findings prevalence (patients with ≥ 1 detection)",
                "Unit: patient (any session); n_units = patients; 95 % Wilson interval of a "
                "proportion of independent patients.\n\n" + _markdown(prev[cols], ".3f"),
            )
        )
    growth_section = _growth_section(analyses, words)
    if growth_section is not None:
        sections.append(growth_section)
        power = power_text(analyses, words.member)
        if power is not None:
            heading, text, table = power
            table = table.assign(patients=[_n(v) for v in table["patients"]])
            sections.append((heading, text + "\n\n" + _markdown(table, ".2f")))
    tle_summary = analyses.get("tle_summary")
    if tle_summary is not None:
        cols = [
            c
            for c in ("malocclusion_class", "n", "mean", "ci_low", "ci_high", "median")
            if c in tle_summary.columns
        ]
        sections.append(
            (
                "Predicted treatment length (months)",
                "Unit: patient (one estimate each); n = patients; 95 % bootstrap BCa interval "
                "of the mean (resampling patients).\n\n"
                + _markdown(tle_summary[cols].astype({"n": "int64"}), ".1f"),
            )
        )
    tmj_prev = analyses.get("tmj_prevalence")
    if tmj_prev is not None and len(tmj_prev):
        sections.append(("TMJ findings (patients)", _tmj_section(tmj_prev)))
    problems = tables.get("problems")
    if problems is not None:
        sections.append(
            (
                "Problems",
                _problems_section(problems, analyses.get("analysis_problems")),
            )
        )
    return sections


def px_arches_note(
    tables: Mapping[str, pd.DataFrame],
    analyses: Mapping[str, pd.DataFrame],
    *,
    design: Design | None = None,
) -> str | None:
    """One line naming the arches measured in pixels and what leaves them out, or None.

    An arch whose occlusogram endpoint has no ``mm_per_px`` is fitted and measured in px
    (:func:`dentalkit.study.analyze`); pixel lengths of different photographs share no scale, so
    the arch comparison and the growth model take mm rows only, and the mean-forms
    figure draws the mm forms when both units are present (docs/arch.md, "Partial
    calibration in the study pipeline").
    """
    fits = analyses.get("arch_fits")
    if fits is None or not len(fits) or "unit" not in fits.columns:
        return None
    units = fits.groupby(fits["arch"].astype(str), observed=True)["unit"].agg(
        lambda u: set(u.astype(str))
    )
    px = [a for a in ("up", "lo") if a in units.index and "px" in units[a]]
    if not px:
        return None
    points = tables.get("arch_points")
    names = {"up": "upper", "lo": "lower"}
    endpoints = []
    for a in px:
        eps: list[str] = []
        if points is not None and {"arch", "endpoint"} <= set(points.columns):
            chosen = points.loc[points["arch"].astype(str) == a, "endpoint"].dropna()
            eps = sorted(set(chosen.astype(str)))
        endpoints.append((names[a], eps))
    which = " and ".join(
        f"the {name} arch ({', '.join(f'`{e}`' for e in eps)})" if eps else f"the {name} arch"
        for name, eps in endpoints
    )
    left_out = [f"the arch comparison by {_Words(design).noun}", "the growth model"]
    if (fits["unit"].astype(str) == "mm").any():
        left_out.insert(0, "the mean arch forms figure")
    flags = " ".join(f"--mm-per-px {e}=VALUE" for _, eps in endpoints for e in eps)
    one = len(endpoints) == 1
    return (
        f"{which[0].upper()}{which[1:]} {'is' if one else 'are'} in pixels because "
        f"{'its endpoint is' if one else 'their endpoints are'} not calibrated (no mm per "
        f"pixel), so {'it is' if one else 'they are'} left out of "
        f"{', '.join(left_out[:-1])} and {left_out[-1]} (pixel lengths of different "
        f"photographs share no scale); pass `{flags or '--mm-per-px ENDPOINT=VALUE'}` "
        f"(VALUE in mm per pixel) to measure {'it' if one else 'them'} in mm."
    )


def default_intro(tables: Mapping[str, pd.DataFrame], fetched: object = None) -> str:
    """The report's first paragraph when the design gives none: the cohort in numbers."""
    keys = [
        t[["patient_id", "timestamp"]].astype(str)
        for t in tables.values()
        if t is not None and len(t) and {"patient_id", "timestamp"} <= set(t.columns)
    ]
    sessions = pd.concat(keys).drop_duplicates() if keys else pd.DataFrame(columns=["patient_id"])
    n_patients, n_sessions = sessions["patient_id"].nunique(), len(sessions)
    url = getattr(getattr(fetched, "client", None), "base_url", None)
    service = f" from the service at {url}" if url else ""
    return (
        f"{n_patients} patients ({n_sessions} sessions), analysed by dentalkit{service}. "
        "The tables are in `tables/` (data contract) and `analyses/`; every statistic below "
        "states its unit of analysis, n, method and why."
    )


def problems_line(problems: pd.DataFrame, folder: Path) -> str:
    """The command line's line about ``analysis_problems``: how many per analysis, and
    where (``folder`` holds ``analysis_problems.parquet``)."""
    summary = problems_summary(problems)
    if len(problems):
        return f"{summary}; see {Path(folder) / 'analysis_problems.parquet'}"
    return f"{summary} (analysis_problems.parquet has 0 rows)"


def tle_note(analyses: Mapping[str, pd.DataFrame]) -> str | None:
    """One line when too few patients have a treatment-length estimate for a summary."""
    from dentalkit import tle

    estimates = analyses.get("tle_estimates")
    if estimates is None:
        return None
    n_estimated = int(estimates["estimate_length_months"].notna().sum())
    if n_estimated >= 3:  # calibration needs three pairs; a summary needs values
        return None
    return (
        f"treatment length: {n_estimated} of {len(estimates)} patients have an estimate "
        f"({len(tle.problems(estimates))} problem(s)); no summary"
    )


def _problems_section(problems: pd.DataFrame, analysis_problems: pd.DataFrame | None) -> str:
    """One line each: the conversion's problems, and the analyses' problems per analysis."""
    lines = [
        f"- Converting the responses: {len(problems)} problem row(s) (`tables/problems.parquet`)."
        if len(problems)
        else "- Converting the responses: no problems (`tables/problems.parquet` has 0 rows)."
    ]
    if analysis_problems is not None:
        summary = problems_summary(analysis_problems)
        where = "`analyses/analysis_problems.parquet`"
        lines.append(
            f"- Analyses: {summary}; the rows each analysis could not use are in {where}."
            if len(analysis_problems)
            else f"- Analyses: no problems ({where} has 0 rows)."
        )
        lines += _not_run_lines(analysis_problems)
    return "\n".join(lines)


def _not_run_lines(analysis_problems: pd.DataFrame) -> list[str]:
    """One line per reason an analysis, table or comparison was not made on this cohort
    (the ``study.analyze`` rows), naming the tables (and comparisons) it concerns."""
    rows = analysis_problems[analysis_problems["producer"].astype(str) == NOT_RUN]
    if not len(rows):
        return []
    lines = ["- Not made on this cohort, and why:"]
    for reason, group in rows.groupby(rows["reason"].astype(str), sort=False):
        tables = ", ".join(f"`{t}`" for t in dict.fromkeys(group["table"].astype(str)))
        parts = [str(p) for p in group["path"].dropna() if "=" in str(p)]  # comparisons
        which = f" ({len(parts)} comparison(s): {'; '.join(parts)})" if parts else ""
        lines.append(f"  - {tables}{which}: {reason}")
    return lines


def _growth_section(analyses: Mapping, words: _Words) -> tuple[str, str] | None:
    """Report text of the growth analysis: unit, n, model and why, then the rates.

    The interval's method and df come from the fitted table (``statistic_name``, ``df``);
    with groups defined by a baseline measure (a ``baseline X`` term), the regression to
    the mean paragraph (:func:`_rtm_text`).
    """
    fixed, models = analyses.get("growth_fixed"), analyses.get("growth_models")
    if fixed is None or models is None or not len(fixed):
        return None
    rates = fixed[fixed["term"].astype(str).str.startswith("years")]
    cols = [
        "measure",
        "term",
        "estimate",
        "ci_low",
        "ci_high",
        "df",
        "p_adjusted",
        "n_units",
        "n_rows",
    ]
    ok = models[models["status"] == "ok"]
    n_units = int(ok["n_units"].max()) if len(ok) else 0
    n_rows = int(ok["n_rows"].max()) if len(ok) else 0
    random = "; ".join(sorted(set(ok["random_effects"].astype(str))))
    bands = analyses.get("growth_bands")
    reference = str(bands["group"].iloc[0]) if bands is not None and len(bands) else "?"
    changed = ""
    classes = analyses.get("ceph_classes")
    if words.classes and classes is not None and len(classes) and "skeletal_class" in classes:
        pairs = classes[["patient_id", "skeletal_class"]].dropna().astype("object")
        ids = pairs.drop_duplicates()["patient_id"].value_counts()
        n_changed = int((ids > 1).sum())
        changed = (
            f" {n_changed} of {len(ids)} patients had another class at a later session; "
            f"they stay in their {words.session}-session class (a patient belongs to one group)."
        )
    not_fitted = models[models["status"] != "ok"]
    skipped = (
        " Not fitted: "
        + "; ".join(f"{r.measure} ({r.note})" for r in not_fitted.itertuples())
        + "."
        if len(not_fitted)
        else ""
    )
    member = words.member
    adjusted = (
        "not adjusted for multiplicity"
        if words.correction == "none"
        else f"{CORRECTION_NAMES[words.correction]}-adjusted across the measures, per term"
    )
    defining = defining_measure(fixed)
    if words.classes:
        who = f"The class is the patient's class at the {words.session} session.{changed}"
        if defining is None:
            who += (
                " ANB defines the class, so class differences in the change of ANB (and of "
                "the measures sharing its landmarks) partly reflect regression to the mean; "
                "these models are not baseline-adjusted."
            )
    else:
        who = f"The group is the patient's value of {words.noun} in the patients table."
    text = (
        "**Unit: patient.** One linear mixed-effects model per measure (statsmodels MixedLM, "
        "REML; `dentalkit.stats.growth`): value ~ years since the first session × "
        f"{words.noun}"
        + (f" + baseline {defining}" if defining else "")
        + f", random effects: {random}. Up to {n_units} patients and {n_rows} "
        "sessions per model. **Why:** the two sessions of a patient are correlated, so they "
        "are not two patients; the mixed model uses every session, counts each patient once, "
        f"and estimates the change per year of each {member} with its {words.pct} CI "
        f"({interval_text(rates)})."
        + (
            " With two sessions per patient a random slope is not identifiable, so all "
            f"patients of a {member} are assumed to change at the same rate."
            if "slope" not in random
            else ""
        )
        + " "
        f"`years` is the rate in the reference {member} ({reference}); "
        f"`years:{words.term}[T.x]` is how much faster {member} x changes. p-values are "
        f"{adjusted}. {who}" + skipped
    )
    if defining is not None:
        text += "\n\n" + rtm_text(analyses, defining, models)
    return (
        f"Growth by {words.noun} (mixed models)",
        text + "\n\n" + _markdown(rates[[c for c in cols if c in rates.columns]], ".3f"),
    )


def write_report(
    path: str | Path,
    *,
    title: str,
    intro: str,
    sections: list[tuple[str, str]],
    figures: Mapping[str, list[Path]],
) -> Path:
    """Write a Markdown report: an introduction, text sections and the figures (PNG links)."""
    path = Path(path)
    lines = [f"# {title}", "", intro, ""]
    for heading, body in sections:
        lines += [f"## {heading}", "", body, ""]
    if figures:
        lines += ["## Figures", ""]
        captions = next(iter(figures.values()))[0].parent / "captions.md"
        if captions.exists():
            rel = (
                captions.relative_to(path.parent)
                if captions.is_relative_to(path.parent)
                else captions
            )
            lines += [f"Captions, ready to paste: [{rel.as_posix()}]({rel.as_posix()}).", ""]
        for name, files in figures.items():
            png = next((f for f in files if f.suffix == ".png"), files[0])
            pdf = next((f for f in files if f.suffix == ".pdf"), None)
            rel = png.relative_to(path.parent) if png.is_relative_to(path.parent) else png
            pdf_link = ""
            if pdf is not None:
                rel_pdf = pdf.relative_to(path.parent) if pdf.is_relative_to(path.parent) else pdf
                pdf_link = f" ([PDF]({rel_pdf.as_posix()}))"
            lines += [
                f"### {name.replace('_', ' ')}{pdf_link}",
                "",
                f"![{name}]({rel.as_posix()})",
                "",
            ]
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
