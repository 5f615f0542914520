"""``dentalkit demo``: a whole study on the embedded sandbox, in under a minute.

1. Start the sandbox (a simulator of interface v2; it runs no AI model) on a fixed
   loopback port, so that a second run hits the same cached requests.
2. Build a synthetic cohort manifest: every patient has two sessions a year apart, each
   with a lateral and a frontal cephalogram, upper and lower dental-model photographs,
   a panoramic radiograph, an intra-oral photograph and a TMJ image, sent to the 12 image
   endpoints; plus one ``GET /tle`` per patient from a typed patient table.
3. Fetch it through the cache with :func:`dentalkit.fetch_cohort` (progress bar,
   resumable: the second run finds everything stored).
4. Convert the responses into tables (:mod:`dentalkit.convert`), run the analyses
   (:func:`dentalkit.pipeline.analyze`), estimate treatment length
   (:func:`dentalkit.tle.estimate`), draw the figures and write ``report.md``.

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

__all__ = ["DEMO_PORT", "demo_manifest", "run_demo", "sandbox_calibration"]

log = logging.getLogger("dentalkit")

#: Loopback port of the demo's sandbox: fixed, so the HTTP cache and the store of a
#: previous run are reused (a new port is a new service address).
DEMO_PORT = 8766
SESSIONS = ("2024-03-05T10:00:00Z", "2025-03-04T10:00:00Z")


def sandbox_calibration() -> dict[str, float]:
    """Millimetres per pixel of the sandbox's images, by endpoint (its documented specs)."""
    from dentalkit.sandbox.render import IMAGE_SPECS, default_image_kind

    return {
        ep.name: IMAGE_SPECS[default_image_kind(ep)].mm_per_px
        for ep in ENDPOINTS.values()
        if ep.is_image
    }


def demo_manifest(sb, patients: pd.DataFrame) -> pd.DataFrame:
    """The cohort manifest: two sessions × 12 image endpoints per patient, plus /tle rows.

    Parameters
    ----------
    sb : dentalkit.sandbox.SandboxServer
        The running sandbox (its ``image_url`` gives the synthetic input images).
    patients : DataFrame
        Typed patient table with ``patient_id`` (see :func:`dentalkit.tle.example_patients`).
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
        Show the fetch progress bar.
    dpi : int
        Figure resolution (PNG and images inside PDFs), 300–1200.

    Returns
    -------
    dict
        Paths of the outputs.
    """
    from dentalkit import convert, io, pipeline, tle
    from dentalkit.client import Client
    from dentalkit.cohort import fetch_cohort
    from dentalkit.errors import ConfigurationError
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
    typed = tle.example_patients(patients)
    cal = sandbox_calibration()
    with running(port=port) as sb:
        echo(f"sandbox at {sb.base_url} (sandbox key: {sb.api_key})")
        client = Client(sb.base_url, api_key=sb.api_key, cache=out / "http-cache.sqlite")
        try:
            manifest = demo_manifest(sb, typed)
            report = fetch_cohort(manifest, out=out, client=client, progress=progress)
            echo(f"fetch: {report.summary()}")
            estimates = tle.estimate(typed, client, progress=False)
            curves = tle.sensitivity(
                typed.head(12), "crowding", ["none", "mild", "moderate", "severe"], client
            )
        finally:
            client.close()
    responses = report.responses()
    tables = convert.tables(responses, errors="collect")
    io.write_tables(tables, out / "tables")
    echo(
        "tables: "
        + ", ".join(f"{name} {len(t)}" for name, t in tables.items() if name != "problems")
        + f"; problems {len(tables['problems'])}"
    )

    analyses = pipeline.analyze(tables, cal, responses=responses)
    # Treatment length: the typed table, the estimates and simulated observed durations
    # (estimate + a documented Gaussian error, sd 4 months, seed 0) to show calibration.
    rng = np.random.default_rng(0)
    estimates["observed_months"] = (
        estimates["estimate_length_months"] + rng.normal(0.0, 4.0, len(estimates))
    ).round(1)
    analyses["tle_estimates"] = estimates
    analyses["tle_summary"] = tle.summary(estimates, by="malocclusion_class")
    analyses["tle_calibration"] = tle.calibration(estimates, "observed_months")
    analyses["tle_sensitivity"] = curves
    # The sensitivity curves carry their inputs in attrs and stay in memory (figure only).
    stored = {k: v for k, v in analyses.items() if k != "tle_sensitivity"}
    pipeline.write_analyses(stored, out / "analyses")

    from dentalkit import plot

    extra = {
        "tle_by_class": lambda ax: plot.tle_distribution(estimates, "malocclusion_class", ax=ax),
        "tle_sensitivity_crowding": lambda ax: plot.tle_sensitivity(curves, ax=ax),
        "tle_bland_altman": lambda ax: plot.tle_bland_altman(estimates, "observed_months", ax=ax),
    }
    figures = pipeline.make_figures(
        tables,
        analyses,
        out / "figures",
        mm_per_px=cal,
        image_for=lambda kind, pid, ts: input_image(f"{kind}/{pid}/{ts[:10]}.png"),
        extra=extra,
        dpi=dpi,
    )
    report_path = pipeline.write_report(
        out / "report.md",
        title="dentalkit demo study (synthetic cohort)",
        intro=(
            f"{patients} synthetic patients, two sessions a year apart, analysed through the "
            "dentalkit sandbox — a simulator of the Dental Image Analysis Service interface v2 "
            "that runs no AI model. Every number below comes from synthetic anatomy; the "
            "tables are in `tables/` (data contract) and `analyses/`."
        ),
        sections=_sections(tables, analyses),
        figures=figures,
    )
    elapsed = time.perf_counter() - t0
    echo(f"analyses: {len(stored)} tables in {out / 'analyses'}")
    echo(f"figures: {len(figures)} in {out / 'figures'} (PDF and PNG, 85 mm wide, {dpi} dpi)")
    echo(f"report: {report_path}")
    echo(f"done in {elapsed:.0f} s")
    return {
        "store": out,
        "tables": out / "tables",
        "analyses": out / "analyses",
        "figures": out / "figures",
        "report": report_path,
    }


def _markdown(table: pd.DataFrame, floatfmt: str = ".2f") -> str:
    """A small DataFrame as a Markdown table (no extra dependency)."""
    cols = list(table.columns)

    def fmt(v: object) -> str:
        if isinstance(v, float):
            return "" if np.isnan(v) else format(v, floatfmt)
        return str(v)

    lines = ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
    lines += [
        "| " + " | ".join(fmt(v) for v in row) + " |" for row in table.itertuples(index=False)
    ]
    return "\n".join(lines)


def _sections(tables: dict, analyses: dict) -> list[tuple[str, str]]:
    sections = []
    summary = analyses.get("ceph_summary")
    if summary is not None and len(summary):
        keep = ["SNA", "SNB", "ANB", "SN_MP", "FMA", "IMPA", "U1_SN", "N_Me", "ANS_Me", "S_Go"]
        rows = summary[summary["measure"].astype(str).isin(keep)]
        cols = [
            c for c in ("measure", "unit", "n", "mean", "sd", "min", "max") if c in rows.columns
        ]
        sections.append(("Cephalometric summary (lateral, all sessions)", _markdown(rows[cols])))
    classes = analyses.get("ceph_classes")
    if classes is not None and len(classes):
        counts = classes["skeletal_class"].value_counts(sort=False).rename_axis("skeletal class")
        sections.append(("Skeletal class (ANB)", _markdown(counts.reset_index(name="sessions"))))
    am = analyses.get("arch_measures")
    if am is not None and len(am):
        ok = am[(am["status"] == "ok") & am["arch"].isin(["up", "lo"])]
        stats = ok.groupby(["arch", "measure", "unit"], observed=True)["value"].agg(
            ["count", "mean", "std"]
        )
        sections.append(("Arch dimensions", _markdown(stats.reset_index())))
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
        sections.append(("Arch-form model comparison", _markdown(wins)))
    miss = analyses.get("missing_by_fdi")
    if miss is not None and len(miss):
        top = miss.sort_values("prevalence", ascending=False).head(6)
        cols = [
            c
            for c in ("fdi", "n_missing", "n_assessed", "prevalence", "ci_low", "ci_high")
            if c in top.columns
        ]
        sections.append(("Most often missing teeth (FDI)", _markdown(top[cols], ".3f")))
    prev = analyses.get("findings_prevalence")
    if prev is not None and len(prev):
        cols = [
            c
            for c in (
                "source",
                "class_name",
                "n_units_with",
                "n_units",
                "prevalence",
                "ci_low",
                "ci_high",
            )
            if c in prev.columns
        ]
        sections.append(
            ("Findings prevalence (patients with ≥ 1 detection)", _markdown(prev[cols], ".3f"))
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
            ("Predicted treatment length (months)", _markdown(tle_summary[cols], ".1f"))
        )
    problems = tables.get("problems")
    if problems is not None:
        sections.append(
            (
                "Problems",
                f"{len(problems)} problem row(s) while converting (see `tables/problems.parquet`).",
            )
        )
    return sections


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
