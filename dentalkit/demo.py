"""``dentalkit demo``: a whole study on the embedded sandbox, in under a minute.

1. Start the sandbox (a simulator of interface v2; it runs no AI model) on a fixed
   loopback port, so that a second run hits the same cached requests.
2. Build a synthetic cohort manifest: every patient has two sessions a year apart, each
   with a lateral and a frontal cephalogram, upper and lower dental-model photographs,
   a panoramic radiograph, an intra-oral photograph and a TMJ image, sent to the 12 image
   endpoints; plus one ``GET /tle`` per patient from a typed patient table whose sex and
   age are those of the sandbox's patient record (:func:`tle_inputs`).
3. Fetch it through the cache with :func:`dentalkit.fetch_cohort` (progress bar,
   resumable: the second run finds everything stored).
4. Convert the responses into tables (:mod:`dentalkit.convert`), run the analyses
   (:func:`dentalkit.pipeline.analyze`), estimate treatment length from the stored
   ``/tle`` answers (:func:`dentalkit.tle.estimate`; the sensitivity curves' hypothetical
   queries go to their own store, ``tle-sensitivity/``), draw the figures and write
   ``report.md``.

The calibration (millimetres per pixel of each image kind) comes from the sandbox's
documented image specifications; a real study takes it from the device or a ruler.
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from dentalkit.endpoints import ENDPOINTS
from dentalkit.pipeline import FIGURES, FigureInputs, FigureSpec

__all__ = [
    "DEMO_FIGURES",
    "DEMO_PORT",
    "demo_manifest",
    "run_demo",
    "sandbox_calibration",
    "sandbox_patients",
    "tle_inputs",
]

log = logging.getLogger("dentalkit")

#: Loopback port of the demo's sandbox: fixed, so the HTTP cache and the store of a
#: previous run are reused (a new port is a new service address).
DEMO_PORT = 8766
SESSIONS = ("2024-03-05T10:00:00Z", "2025-03-04T10:00:00Z")


def _plan_tle_by_class(inputs: FigureInputs) -> Callable[[object], object]:
    from dentalkit import plot

    estimates = inputs.analyses["tle_estimates"]
    return lambda ax: plot.tle_distribution(estimates, "malocclusion_class", ax=ax)


def _plan_tle_sensitivity(inputs: FigureInputs) -> Callable[[object], object]:
    from dentalkit import plot

    curves = inputs.analyses["tle_sensitivity"]
    return lambda ax: plot.tle_sensitivity(curves, ax=ax)


def _plan_tle_bland_altman(inputs: FigureInputs) -> Callable[[object], object]:
    from dentalkit import plot

    estimates = inputs.analyses["tle_estimates"]
    return lambda ax: plot.tle_bland_altman(estimates, "observed_months", ax=ax)


#: The demo's treatment-length figures, drawn after the standard set
#: (:data:`dentalkit.pipeline.FIGURES`); ``observed_months`` in ``tle_estimates`` is the
#: demo's simulated observed duration.
DEMO_FIGURES: tuple[FigureSpec, ...] = (
    FigureSpec("tle_by_class", _plan_tle_by_class, analyses=("tle_estimates",)),
    FigureSpec("tle_sensitivity_crowding", _plan_tle_sensitivity, analyses=("tle_sensitivity",)),
    FigureSpec("tle_bland_altman", _plan_tle_bland_altman, analyses=("tle_estimates",)),
)


def sandbox_calibration() -> dict[str, float]:
    """Millimetres per pixel of the sandbox's images, by endpoint (its documented specs)."""
    from dentalkit.sandbox.render import IMAGE_SPECS, default_image_kind

    return {
        ep.name: IMAGE_SPECS[default_image_kind(ep)].mm_per_px
        for ep in ENDPOINTS.values()
        if ep.is_image
    }


def sandbox_patients(patient_ids, timestamp: str = SESSIONS[0]) -> pd.DataFrame:
    """``patient_id``, ``sex`` (F / M) and ``birth_date`` of sandbox patients (their record).

    The sandbox simulates each patient's anatomy for a sex and birth date
    (:func:`dentalkit.sandbox.truth`); norms by sex and age must use those.
    """
    from dentalkit.sandbox import truth

    rows = []
    for pid in patient_ids:
        p = truth(str(pid), timestamp)["patient"]
        rows.append({"patient_id": str(pid), "sex": p["sex"], "birth_date": p["birth_date"]})
    return pd.DataFrame(rows, columns=["patient_id", "sex", "birth_date"])


def tle_inputs(
    typed: pd.DataFrame, record: pd.DataFrame, timestamp: str = SESSIONS[0]
) -> pd.DataFrame:
    """The typed ``/tle`` patient table with sex and age taken from the patient record.

    The demo's clinical columns (malocclusion class, crowding, overjet …) come from
    :func:`dentalkit.tle.example_patients`, which draws sex and age too, independently of
    the sandbox. The sandbox simulated each patient's anatomy for the sex and birth date of
    its record (:func:`sandbox_patients`), and the z-scores use that record; this function
    replaces the drawn sex and age by the record's, so that a patient has one sex and one
    age in every output. A study does the same with its own patient table.

    The other clinical columns stay drawn. In particular ``malocclusion_class`` is a label
    independent of the anatomy the sandbox simulated: its ground truth has a skeletal
    class, an overbite and a molar relation in mm, but no Angle class with Class II
    divisions to take. Analyses of the demo's measures by ``malocclusion_class`` must
    therefore show no effect; its treatment-length estimates differ by class only through
    the class term of the sandbox's ``/tle`` rule (:data:`dentalkit.sandbox._findings.TLE_RULE`).

    Parameters
    ----------
    typed : DataFrame
        Typed patient table in the codebook's columns (``patient_id``, ``sex``,
        ``age_years`` …), one row per patient.
    record : DataFrame
        ``patient_id``, ``sex`` (the record's codes ``F`` / ``M``) and ``birth_date``
        (ISO date), one row per patient of ``typed``.
    timestamp : str
        When the ``/tle`` question is asked: the session the age is computed for
        (default the demo's first session, the one its ``/tle`` rows carry).

    Returns
    -------
    DataFrame
        ``typed`` with the codebook's sex column (p02) as the codebook label of the
        record's code (``F`` → ``female``, ``M`` → ``male``) and its age column (p01) as
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
    from dentalkit.errors import InputError

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
    sex = rec["sex"].astype(str).map(label_of)
    born = pd.to_datetime(rec["birth_date"], errors="coerce", utc=True)
    for what, bad in (("sex", sex.isna()), ("birth_date", born.isna())):
        if bad.any():
            pid = bad.index[bad.to_numpy()][0]
            allowed = ", ".join(label_of)
            raise InputError(
                f"patient {pid}: the record's {what} {rec.loc[pid, what]!r} is not "
                + (f"one of the codebook's p02 codes ({allowed})" if what == "sex" else "a date")
            )
    when = pd.Timestamp(timestamp)
    when = when.tz_localize("UTC") if when.tzinfo is None else when.tz_convert("UTC")
    age = (when - born).dt.total_seconds() / (365.25 * 86400.0)
    return typed.assign(
        **{
            sex_param.column: pd.Categorical(sex.to_numpy(), categories=list(sex_param.labels)),
            age_param.column: age.to_numpy(),
        }
    )


def demo_manifest(sb, patients: pd.DataFrame) -> pd.DataFrame:
    """The cohort manifest: two sessions × 12 image endpoints per patient, plus /tle rows.

    Parameters
    ----------
    sb : dentalkit.sandbox.SandboxServer
        The running sandbox (its ``image_url`` gives the synthetic input images).
    patients : DataFrame
        Typed patient table with ``patient_id`` (see :func:`tle_inputs`).
    """
    from dentalkit import tle
    from dentalkit.sandbox.render import default_image_kind

    rows = []
    for pid in patients["patient_id"].astype(str):
        for ts in SESSIONS:
            for ep in ENDPOINTS.values():
                if ep.is_image:
                    url = sb.image_url(default_image_kind(ep), pid, ts[:10])
                    rows.append(
                        {"patient_id": pid, "timestamp": ts, "endpoint": ep.name, "image_url": url}
                    )
    images = pd.DataFrame(rows)
    queries = tle.encode(patients)
    tle_rows = patients[["patient_id"]].assign(timestamp=SESSIONS[0], endpoint="tle")
    tle_rows = pd.concat([tle_rows.reset_index(drop=True), queries.reset_index(drop=True)], axis=1)
    return pd.concat([images, tle_rows], ignore_index=True)


def _port_free(port: int) -> bool:
    with socket.socket() as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


def run_demo(
    patients: int = 50,
    out: Path = Path("dentalkit-demo"),
    echo: Callable[[str], None] = print,
    *,
    port: int = DEMO_PORT,
    progress: bool = True,
    dpi: int = 600,
    drift: tuple[str, ...] = (),
) -> dict[str, Path]:
    """Run the whole study on the embedded sandbox and print where everything is.

    Parameters
    ----------
    patients : int
        Synthetic patients (two sessions each).
    out : path
        Output folder: ``responses/`` (the store), ``http-cache.sqlite``, ``tables/``,
        ``analyses/``, ``figures/``, ``report.md``.
    echo : callable
        Where to print (the CLI passes ``typer.echo``).
    port : int
        Loopback port of the sandbox (0 picks a free one). Keep it for later runs on the
        same ``out``: a store belongs to one service address, and the HTTP cache is keyed
        by it.
    progress : bool
        Show the progress bars (fetch, tables, figures).
    dpi : int
        Figure resolution (PNG and images inside PDFs), 300–1200.
    drift : tuple of str
        Sandbox drift scenarios (:mod:`dentalkit.sandbox.drift`): the sandbox answers as
        a changed service could, and the contract report shows each difference. Use a
        fresh ``out``: a folder's store and cache hold the answers of earlier runs.

    Returns
    -------
    dict
        Paths of the outputs.
    """
    from dentalkit import convert, io, pipeline, tle
    from dentalkit._progress import Stage
    from dentalkit.errors import ConfigurationError
    from dentalkit.fetch.client import Client
    from dentalkit.fetch.cohort import Fetcher, fetch_cohort
    from dentalkit.sandbox import running
    from dentalkit.sandbox.app import BANNER
    from dentalkit.sandbox.render import input_image

    t0 = time.perf_counter()
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    echo(BANNER)
    if port and not _port_free(port):
        raise ConfigurationError(
            f"port {port} is busy; run the demo with another --port (an out folder belongs to "
            "one sandbox address, so use the same --port for later runs on that folder)"
        )
    # Sex and birth date of each patient: the sandbox's patient record (the anatomy was
    # simulated for them); a real study joins its own patient table here. The /tle inputs
    # take sex and age from it too, so that a patient has one sex and age in every output.
    drawn = tle.example_patients(patients)
    record = sandbox_patients(drawn["patient_id"].astype(str), SESSIONS[0])
    typed = tle_inputs(drawn, record, SESSIONS[0])
    cal = sandbox_calibration()
    with running(port=port, drift=tuple(drift)) as sb:
        echo(f"sandbox at {sb.base_url} (sandbox key: {sb.api_key})")
        if sb.config.drift:
            echo(
                f"drift mode: the sandbox answers as a changed service ({', '.join(sb.config.drift)})"
            )
        client = Client(sb.base_url, api_key=sb.api_key, cache=out / "http-cache.sqlite")
        try:
            manifest = demo_manifest(sb, typed)
            report = fetch_cohort(
                manifest, out=out, client=client, progress=progress, errors="collect"
            )
            echo(f"fetch: {report.summary()}")
            step = Stage("treatment length", echo, "estimates and the crowding sensitivity curves")
            # the /tle rows of the manifest are in the store: nothing is sent again
            estimates = tle.estimate(typed, report.responses(), errors="collect")
            curves = tle.sensitivity(
                typed.head(12),
                "crowding",
                ["none", "mild", "moderate", "severe"],
                Fetcher(out / "tle-sensitivity", client),
                errors="collect",  # a failed or malformed answer is a missing point, listed
            )
            step.done(f"{len(estimates)} patients, {len(curves)} sensitivity points")
        finally:
            client.close()
    responses = report.responses()
    step = Stage("tables", echo, f"converting {len(responses)} responses")
    tables = convert.tables(responses, errors="collect", progress=progress)
    io.write_tables(tables, out / "tables")
    step.done(
        ", ".join(f"{name} {len(t)}" for name, t in tables.items() if name != "problems")
        + f"; problems {len(tables['problems'])} (in {out / 'tables'})"
    )
    from dentalkit.contract import contract_report, write_contract

    contract = contract_report(responses)
    write_contract(contract, out)
    n_drift = int((contract["verdict"] == "drift").sum())
    echo(f"contract: {n_drift} difference(s) from the registry; see {out / 'contract.md'}")

    step = Stage("analyses", echo, "ceph, arch, teeth, findings, treatment length")
    # collect: an analysis runs on the usable rows; the others are in analysis_problems
    analyses = pipeline.analyze(tables, cal, responses=responses, patients=record, errors="collect")
    # Treatment length: the typed table, the estimates and simulated observed durations
    # (estimate + a documented Gaussian error, sd 4 months, seed 0) to show calibration.
    rng = np.random.default_rng(0)
    estimates["observed_months"] = (
        estimates["estimate_length_months"] + rng.normal(0.0, 4.0, len(estimates))
    ).round(1)
    analyses["tle_estimates"] = estimates
    n_estimated = int(estimates["estimate_length_months"].notna().sum())
    if n_estimated >= 3:  # calibration needs three pairs; a summary needs values
        analyses["tle_summary"] = tle.summarize(estimates, by="malocclusion_class")
        analyses["tle_calibration"] = tle.calibration(estimates, "observed_months")
    else:
        echo(
            f"treatment length: {n_estimated} of {len(estimates)} patients have an estimate "
            f"({len(tle.problems(estimates))} problem(s)); no summary"
        )
    analyses["tle_sensitivity"] = curves
    # The sensitivity curves carry their inputs in attrs and stay in memory (figure only).
    stored = {k: v for k, v in analyses.items() if k != "tle_sensitivity"}
    pipeline.write_analyses(stored, out / "analyses")
    step.done(
        f"{len(stored)} tables in {out / 'analyses'}; "
        + pipeline.problems_summary(analyses["analysis_problems"])
        + " (in analysis_problems.parquet)"
    )

    step = Stage("figures", echo, f"drawing PDF and PNG at {dpi} dpi")
    figures = pipeline.make_figures(
        tables,
        analyses,
        out / "figures",
        mm_per_px=cal,
        image_for=lambda kind, pid, ts: input_image(f"{kind}/{pid}/{ts[:10]}.png"),
        dpi=dpi,
        progress=progress,
        figures=(*FIGURES, *DEMO_FIGURES),
    )
    step.done(f"{len(figures)} in {out / 'figures'} (PDF and PNG, 85 mm wide, {dpi} dpi)")
    step = Stage("report", echo, "writing report.md")
    report_path = pipeline.write_report(
        out / "report.md",
        title="dentalkit demo study (synthetic cohort)",
        intro=(
            f"{patients} synthetic patients, two sessions a year apart, analysed through the "
            "dentalkit sandbox — a simulator of the Dental Image Analysis Service interface v2 "
            "that runs no AI model. Every number below comes from synthetic anatomy; the "
            "tables are in `tables/` (data contract) and `analyses/`."
        ),
        sections=_sections(tables, analyses, contract),
        figures=figures,
    )
    step.done(str(report_path))
    echo(f"done in {time.perf_counter() - t0:.0f} s")
    return {
        "store": out,
        "tables": out / "tables",
        "analyses": out / "analyses",
        "figures": out / "figures",
        "report": report_path,
        "contract": out / "contract.md",
    }


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
    """A comparison table with, for every test, its unit, n, test and why (report rows)."""
    rows = cmp.assign(
        n_per_group=[_n(v) for v in cmp["n_units_per_group"]],
        effect=[
            f"{name} {es:.2f} [{lo:.2f}, {hi:.2f}]" if pd.notna(es) else ""
            for name, es, lo, hi in zip(
                cmp["effect_size_name"],
                cmp["effect_size"],
                cmp["effect_ci_low"],
                cmp["effect_ci_high"],
                strict=True,
            )
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


def _sections(
    tables: dict, analyses: dict, contract: pd.DataFrame | None = None
) -> list[tuple[str, str]]:
    sections = []
    versions = analyses.get("model_versions")
    if versions is not None and len(versions):
        sections.append(("Model versions per endpoint", _versions_section(versions)))
    if contract is not None and len(contract):
        sections.append(("Service contract", _contract_section(contract)))
    classes = analyses.get("ceph_classes")
    changes = analyses.get("ceph_class_changes")
    if classes is not None and len(classes):
        n_pat = classes["patient_id"].nunique()
        text = (
            f"The unit of analysis is the **patient** ({n_pat} patients, "
            f"{len(classes)} lateral sessions). Sessions of one patient are not independent "
            "patients, so every group comparison below uses **one session per patient — the "
            "first** — and reports n as patients. A patient's group is the skeletal class "
            "(ANB) of their first session."
        )
        if changes is not None and len(changes):
            k = int(changes["changed"].fillna(False).sum())
            m = int(changes["changed"].notna().sum())
            text += (
                f" **{k} of {m} patients** with a class at both their first and last session "
                "changed class between them; they stay in the class of their first session "
                "(counted here, not silently filed)."
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
                "Cephalometric summary (lateral, first session of each patient)",
                "n = patients; SD between patients.\n\n" + _markdown(rows[cols]),
            )
        )
    if classes is not None and len(classes):
        from dentalkit.stats import one_row_per_unit

        first = one_row_per_unit(classes, "first")
        counts = first["skeletal_class"].value_counts(sort=False).rename_axis("skeletal class")
        sections.append(
            (
                "Skeletal class (ANB, first session)",
                _markdown(counts.reset_index(name="patients")),
            )
        )
    ccmp = analyses.get("ceph_compare")
    if ccmp is not None and len(ccmp):
        body = (
            "One test per measure between skeletal classes, on the first session of each "
            "patient (unit: patient; n = patients per class, in the order "
            f"{_levels_text(ccmp)}). {_why_text(ccmp)} p-values adjusted across the "
            f"{len(ccmp)} tests ({ccmp['correction'].iloc[0]}). Effect size: "
            "η² = SS_between/SS_total with its noncentral-F 95 % CI. ANB, SNA, SNB and Wits "
            "define the class and are not tested against it.\n\n"
            + _tests_markdown(ccmp, ["measure"])
        )
        sections.append(("Cephalometric measures by skeletal class", body))
    am = analyses.get("arch_measures")
    if am is not None and len(am):
        from dentalkit.stats import one_row_per_unit

        ok = one_row_per_unit(am[(am["status"] == "ok") & am["arch"].isin(["up", "lo"])], "first")
        stats = ok.groupby(["arch", "measure", "unit"], observed=True).agg(
            patients=("patient_id", "nunique"), mean=("value", "mean"), sd=("value", "std")
        )
        sections.append(
            ("Arch dimensions (first session of each patient)", _markdown(stats.reset_index()))
        )
    px_note = _px_arches_note(tables, analyses)
    if px_note is not None:
        sections.append(("Arches in pixels", px_note))
    cmp = analyses.get("arch_compare")
    if cmp is not None and len(cmp):
        body = (
            "One test per arch and dimension between skeletal classes, on the first session "
            "of each patient (unit: patient; n = patients per class, in the order "
            f"{_levels_text(cmp)}). {_why_text(cmp)} p-values adjusted across the "
            f"{len(cmp)} tests ({cmp['correction'].iloc[0]}). Effect size: "
            "η² = SS_between/SS_total with its noncentral-F 95 % CI.\n\n"
            + _tests_markdown(cmp, ["arch", "measure"])
        )
        sections.append(("Arch dimensions by skeletal class", body))
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
    growth_section = _growth_section(analyses)
    if growth_section is not None:
        sections.append(growth_section)
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


def _px_arches_note(tables: dict, analyses: dict) -> str | None:
    """One line naming the arches measured in pixels and what leaves them out, or None.

    An arch whose occlusogram endpoint has no ``mm_per_px`` is fitted and measured in px
    (``pipeline.analyze``); pixel lengths of different photographs share no scale, so
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
    left_out = ["the arch comparison by skeletal class", "the growth model"]
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


def _problems_section(problems: pd.DataFrame, analysis_problems: pd.DataFrame | None) -> str:
    """One line each: the conversion's problems, and the analyses' problems per analysis."""
    from dentalkit.pipeline import problems_summary

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
    return "\n".join(lines)


def _growth_section(analyses: dict) -> tuple[str, str] | None:
    """Report text of the growth analysis: unit, n, model and why, then the rates."""
    fixed, models = analyses.get("growth_fixed"), analyses.get("growth_models")
    if fixed is None or models is None or not len(fixed):
        return None
    rates = fixed[fixed["term"].astype(str).str.startswith("years")]
    cols = ["measure", "term", "estimate", "ci_low", "ci_high", "p_adjusted", "n_units", "n_rows"]
    ok = models[models["status"] == "ok"]
    n_units = int(ok["n_units"].max()) if len(ok) else 0
    n_rows = int(ok["n_rows"].max()) if len(ok) else 0
    random = "; ".join(sorted(set(ok["random_effects"].astype(str))))
    bands = analyses.get("growth_bands")
    reference = str(bands["group"].iloc[0]) if bands is not None and len(bands) else "?"
    changed = ""
    classes = analyses.get("ceph_classes")
    if classes is not None and len(classes) and "skeletal_class" in classes.columns:
        pairs = classes[["patient_id", "skeletal_class"]].dropna().astype("object")
        ids = pairs.drop_duplicates()["patient_id"].value_counts()
        n_changed = int((ids > 1).sum())
        changed = (
            f" {n_changed} of {len(ids)} patients had another class at a later session; "
            "they stay in their first-session class (a patient belongs to one group)."
        )
    not_fitted = models[models["status"] != "ok"]
    skipped = (
        " Not fitted: "
        + "; ".join(f"{r.measure} ({r.note})" for r in not_fitted.itertuples())
        + "."
        if len(not_fitted)
        else ""
    )
    text = (
        "**Unit: patient.** One linear mixed-effects model per measure (statsmodels MixedLM, "
        "REML; `dentalkit.stats.growth`): value ~ years since the first session × skeletal "
        f"class, random effects: {random}. Up to {n_units} patients and {n_rows} sessions per "
        "model. **Why:** the two sessions of a patient are correlated, so they are not two "
        "patients; the mixed model uses every session, counts each patient once, and estimates "
        "the change per year of each class with its 95 % CI (Wald)."
        + (
            " With two sessions per patient a random slope is not identifiable, so all "
            "patients of a class are assumed to change at the same rate."
            if "slope" not in random
            else ""
        )
        + " "
        f"`years` is the rate in the reference class ({reference}); "
        "`years:skeletal_class[T.x]` is how much faster class x changes. p-values are "
        "Holm-adjusted across the measures, per term. The class is the patient's class at the "
        f"first session.{changed} ANB defines the class, so class differences in the change "
        "of ANB partly reflect regression to the mean." + skipped
    )
    return (
        "Growth by skeletal class (mixed models)",
        text + "\n\n" + _markdown(rates[cols], ".3f"),
    )
