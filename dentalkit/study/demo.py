"""``dentalkit demo``: the study command on the sandbox's synthetic cohort, in a minute.

The demo is a thin caller of :func:`dentalkit.study.run` (one code path with
``dentalkit study``); it only makes the inputs a real study brings:

1. the embedded sandbox (a simulator of interface v2; it runs no AI model) on a fixed
   loopback port, so that a second run hits the same store and cached requests;
2. the manifest (:func:`demo_manifest`): every patient has two sessions a year apart,
   each with a lateral and a frontal cephalogram, upper and lower dental-model
   photographs, a panoramic radiograph, an intra-oral photograph and a TMJ image, sent to
   the 12 image endpoints;
3. the patients table (:func:`demo_patients`): the sandbox's record of each patient (sex,
   birth date), the ``/tle`` parameters drawn by :func:`dentalkit.tle.example_patients`
   (the study asks one ``GET /tle`` per patient from them) and simulated observed
   treatment durations;
4. the design (:func:`demo_design`): the calibration of each image kind from the sandbox's
   documented image specifications (a real study takes it from the device or a ruler)
   and the crowding sensitivity curves of treatment length.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from dentalkit.endpoints import ENDPOINTS
from dentalkit.study.design import DEMO_SENSITIVITY, Design

__all__ = [
    "DEMO_PORT",
    "SESSIONS",
    "demo_design",
    "demo_manifest",
    "demo_patients",
    "run_demo",
    "sandbox_calibration",
    "sandbox_patients",
]

log = logging.getLogger("dentalkit")

#: Loopback port of the demo's sandbox: fixed, so the HTTP cache and the store of a
#: previous run are reused (a new port is a new service address).
DEMO_PORT = 8766
#: The demo's two sessions, a year apart.
SESSIONS = ("2024-03-05T10:00:00Z", "2025-03-04T10:00:00Z")
#: SD (months) of the Gaussian error of the simulated observed treatment durations.
OBSERVED_SD = 4.0


def sandbox_calibration() -> dict[str, float]:
    """Millimetres per pixel of the sandbox's images, by endpoint (its documented specs)."""
    from dentalkit.sandbox.render import IMAGE_SPECS, default_image_kind

    return {
        ep.name: IMAGE_SPECS[default_image_kind(ep)].mm_per_px
        for ep in ENDPOINTS.values()
        if ep.is_image
    }


def sandbox_patients(patient_ids: Iterable[str], timestamp: str = SESSIONS[0]) -> pd.DataFrame:
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


def demo_patients(n: int) -> pd.DataFrame:
    """The demo's patients table: record, ``/tle`` parameters, observed durations.

    ``patient_id``, ``sex`` (F / M) and ``birth_date`` are the sandbox's record of each
    patient (:func:`sandbox_patients`: the anatomy was simulated for them, and the
    z-scores and the ``/tle`` query use them, so a patient has one sex and age in every
    output). The clinical ``/tle`` columns (malocclusion class, crowding, overjet …) are
    drawn by :func:`dentalkit.tle.example_patients`. In particular ``malocclusion_class``
    is a label independent of the anatomy the sandbox simulated: its ground truth has a
    skeletal class, an overbite and a molar relation in mm, but no Angle class with
    Class II divisions to take. Analyses of the demo's measures by ``malocclusion_class``
    must therefore show no effect; its treatment-length estimates differ by class only
    through the class term of the sandbox's ``/tle`` rule
    (:data:`dentalkit.sandbox._findings.TLE_RULE`).

    ``observed_months`` is simulated: the sandbox rule's months for the patient's query
    plus a Gaussian error (SD :data:`OBSERVED_SD` months, seed 0), rounded to 0.1, so
    that the calibration of the estimates has something to show.
    """
    from dentalkit import tle
    from dentalkit.sandbox._findings import estimate_months
    from dentalkit.study._tle import tle_inputs

    drawn = tle.example_patients(n)
    record = sandbox_patients(drawn["patient_id"].astype(str), SESSIONS[0])
    queries = tle.encode(tle_inputs(drawn, record, SESSIONS[0]))
    months = np.array([estimate_months(q) for q in queries.to_dict("records")])
    observed = (months + np.random.default_rng(0).normal(0.0, OBSERVED_SD, n)).round(1)
    clinical = drawn.drop(columns=["sex", "age_years"])
    return record.merge(clinical, on="patient_id", how="left").assign(observed_months=observed)


def demo_manifest(sb, patients: pd.DataFrame) -> pd.DataFrame:
    """The cohort manifest: two sessions × the 12 image endpoints per patient.

    Parameters
    ----------
    sb : dentalkit.sandbox.SandboxServer
        The running sandbox (its ``image_url`` gives the synthetic input images).
    patients : DataFrame
        The patients table (``patient_id``); the study adds its ``/tle`` queries.
    """
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
    return pd.DataFrame(rows)


def demo_design(
    patients: int,
    out: Path,
    dpi: int = 600,
    *,
    width: str | float | None = None,
    formats: tuple[str, ...] = ("pdf", "png"),
) -> Design:
    """The demo's design: the default analyses and figures, the sandbox's calibration, the
    crowding sensitivity curves, and a title and introduction that say it is synthetic
    (``dpi``, ``width`` and ``formats`` of the figures as :class:`Design` takes them)."""
    return Design(
        title="dentalkit demo study (synthetic cohort)",
        intro=(
            f"{patients} synthetic patients, two sessions a year apart, analysed through the "
            "dentalkit sandbox — a simulator of the Dental Image Analysis Service interface v2 "
            "that runs no AI model. Every number below comes from synthetic anatomy; the "
            "tables are in `tables/` (data contract) and `analyses/`."
        ),
        mm_per_px=sandbox_calibration(),
        out=out,
        dpi=dpi,
        width=width,
        formats=formats,
        sensitivity=DEMO_SENSITIVITY,
    )


def run_demo(
    patients: int = 50,
    out: Path = Path("dentalkit-demo"),
    echo: Callable[[str], None] = print,
    *,
    port: int = DEMO_PORT,
    progress: bool = True,
    dpi: int = 600,
    drift: tuple[str, ...] = (),
    width: str | float | None = None,
    formats: tuple[str, ...] = ("pdf", "png"),
    qc: str | None = None,
    ai_errors: str = "off",
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
    width : {"single", "double"}, float, optional
        One width for every figure (default: each figure's declared width).
    formats : tuple of str
        Figure files, of ``pdf``, ``svg``, ``png``, ``tiff`` (default PDF and PNG).
    drift : tuple of str
        Sandbox drift scenarios (:mod:`dentalkit.sandbox.drift`): the sandbox answers as
        a changed service could, and the contract report shows each difference. Use a
        fresh ``out``: a folder's store and cache hold the answers of earlier runs.
    qc : {"flag", "exclude", "ignore"}, optional
        The quality-control policy (default: the design's, ``"exclude"``).
    ai_errors : {"off", "realistic", "gross"}
        The sandbox's AI error mode (docs/qc.md): answers with the errors an AI makes,
        each recorded in the sandbox's truth, for the quality control to find. Use a fresh
        ``out`` (a folder's store holds the answers of earlier runs).

    Returns
    -------
    dict
        Paths of the outputs.
    """
    from dentalkit.sandbox.render import input_image
    from dentalkit.study.run import run, sandbox_service

    out = Path(out)
    table = demo_patients(patients)
    design = demo_design(patients, out, dpi, width=width, formats=formats)
    if qc is not None:
        design = design.with_(qc=qc)
    with sandbox_service(out, port, echo, drift, ai_errors) as (sb, client):
        result = run(
            demo_manifest(sb, table),
            patients=table,
            design=design,
            client=client,
            echo=echo,
            progress=progress,
            image_for=lambda kind, pid, ts: input_image(f"{kind}/{pid}/{ts[:10]}.png"),
        )
    return result.paths
