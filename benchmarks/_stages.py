"""The study's stages after the fetch, one per process: time and peak resident memory.

``python benchmarks/_stages.py STAGE FOLDER [--whole]`` runs one stage on the outputs of
the stage before it, with the calls ``dentalkit study`` makes, and prints one JSON line:
``{"stage", "seconds", "peak_rss_mb"}``. ``FOLDER`` holds ``patients.csv``,
``study.toml`` and the study's ``out`` folder (the store). Each stage runs in its own
process, so one stage's memory never hides another's (``ru_maxrss`` of a process that ran
that stage alone). ``--whole`` runs a stage as the study did before streaming (the
whole responses table read at once), for the before/after figures.
"""

from __future__ import annotations

import importlib
import json
import resource
import sys
import time
from pathlib import Path

STAGES = ("tables", "contract", "analyses", "figures", "report")


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def _streamed(stage: str, out: Path, folder: Path, design) -> None:
    import pandas as pd

    study_run = importlib.import_module("dentalkit.study.run")  # the module, not run()
    from dentalkit.study.calibration import calibration_policy

    quiet = lambda line: None  # noqa: E731
    if stage == "tables":
        study_run._tables(out, quiet, False)
    elif stage == "contract":
        study_run._contract(out, quiet)
    elif stage == "analyses":
        patients = pd.read_csv(folder / "patients.csv", dtype={"patient_id": str})
        tables = study_run._analysis_tables(out / "tables")
        calibration = calibration_policy(design.mm_per_px, tables)
        responses = study_run._analysis_responses(out)
        study_run._analyses(tables, responses, patients, calibration, design, out, quiet)


def _whole(stage: str, out: Path, folder: Path, design) -> None:
    import pandas as pd

    from dentalkit import convert, io
    from dentalkit.contract import contract_report, write_contract
    from dentalkit.fetch import read_calibration
    from dentalkit.fetch.store import read_responses
    from dentalkit.study import analyze, write_analyses
    from dentalkit.study.calibration import calibration_policy

    responses = read_responses(out)
    if stage == "tables":
        own = read_calibration(out) if (out / "calibration.parquet").exists() else None
        tables = convert.tables(responses, errors="collect", calibration=own)
        io.write_tables(tables, out / "tables")
    elif stage == "contract":
        write_contract(contract_report(responses), out)
    elif stage == "analyses":
        patients = pd.read_csv(folder / "patients.csv", dtype={"patient_id": str})
        tables = io.read_tables(out / "tables")
        calibration = calibration_policy(design.mm_per_px, tables)
        analyses = analyze(
            tables, calibration, responses=responses, patients=patients, design=design,
            errors="collect",
        )  # fmt: skip
        write_analyses(
            {k: v for k, v in analyses.items() if k != "tle_sensitivity"}, out / "analyses"
        )


def run_stage(stage: str, folder: Path, whole: bool = False) -> dict:
    import pandas as pd

    from dentalkit import io
    from dentalkit.study import FIGURES, make_figures, read_design
    from dentalkit.study.analyses import read_analyses
    from dentalkit.study.calibration import calibration_policy

    design = read_design(folder / "study.toml")
    out = Path(design.out)
    out = out if out.is_absolute() else folder / out
    t0 = time.perf_counter()
    if stage in ("tables", "contract", "analyses"):
        (_whole if whole else _streamed)(stage, out, folder, design)
    elif stage == "figures":
        tables = io.read_tables(out / "tables")
        analyses = read_analyses(out / "analyses")
        names = design.figures
        chosen = FIGURES if names is None else [f for f in FIGURES if f.name in names]
        make_figures(
            tables, analyses, out / "figures", dpi=design.dpi, figures=chosen,
            mm_per_px=calibration_policy(design.mm_per_px, tables),
        )  # fmt: skip
    elif stage == "report":
        from dentalkit.study.report import sections, write_report

        tables = io.read_tables(out / "tables", geometry=False)  # counts, keys, flags
        analyses = read_analyses(out / "analyses")
        contract = pd.read_parquet(out / "contract.parquet")
        figures = {p.stem: [p] for p in sorted((out / "figures").glob("*.pdf"))}
        write_report(
            out / "report.md", title=design.title, intro="",
            sections=sections(tables, analyses, contract, design=design), figures=figures,
        )  # fmt: skip
    else:
        raise SystemExit(f"unknown stage {stage!r}; stages: {', '.join(STAGES)}")
    return {"stage": stage, "seconds": time.perf_counter() - t0, "peak_rss_mb": _peak_mb()}


if __name__ == "__main__":
    print(json.dumps(run_stage(sys.argv[1], Path(sys.argv[2]), "--whole" in sys.argv[3:])))
