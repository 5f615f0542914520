"""Where the analyses stage's memory and time go: one line per step, in one process.

``python benchmarks/_analysis_memory.py FOLDER`` reads the study folder's tables (as the
analyses stage does), then runs :func:`dentalkit.study.analyze` with every analysis of
:data:`dentalkit.study.analyses.ANALYSES` wrapped so that it prints, as one JSON line, its
wall time, the resident memory after it (``rss_mb``), the peak while it ran
(``peak_mb``: Linux's ``VmHWM``, reset before each step through ``/proc/self/clear_refs``)
and what it added (``kept_mb``: resident after − before); a step holding others (``analyze
(all)``) shows the peak since the last inner one ended. ``FOLDER`` holds
``patients.csv``, ``study.toml`` and the study's out folder with ``tables/`` (a folder
``benchmarks/_stages.py`` has run the tables stage on). Linux only; not part of the
package.
"""

from __future__ import annotations

import dataclasses
import json
import sys
import time
from pathlib import Path


def _status(field: str) -> float:
    """A ``/proc/self/status`` memory field (``VmRSS``, ``VmHWM``) in MB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    raise KeyError(field)


_PEAK = [0.0]  # the process's peak over every reset


def _reset_peak() -> None:
    _PEAK[0] = max(_PEAK[0], _status("VmHWM"))
    Path("/proc/self/clear_refs").write_text("5")  # VmHWM := VmRSS


class Step:
    """``with Step("name"):`` prints the step's JSON line when it ends."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> Step:
        _reset_peak()
        self.before, self.t0 = _status("VmRSS"), time.perf_counter()
        return self

    def __exit__(self, *exc: object) -> None:
        rss = _status("VmRSS")
        line = {
            "step": self.name,
            "seconds": round(time.perf_counter() - self.t0, 2),
            "rss_mb": round(rss),
            "peak_mb": round(_status("VmHWM")),
            "kept_mb": round(rss - self.before),
        }
        print(json.dumps(line), flush=True)


def main(folder: Path) -> None:
    import pandas as pd

    from dentalkit.study import analyses as module
    from dentalkit.study import read_design
    from dentalkit.study.calibration import calibration_policy

    study_run = sys.modules.get("dentalkit.study.run") or __import__(
        "dentalkit.study.run", fromlist=["run"]
    )

    def wrapped(spec):
        def run(inputs):
            with Step(f"analysis {spec.name}"):
                return spec.run(inputs)

        return dataclasses.replace(spec, run=run)

    module.ANALYSES = tuple(wrapped(s) for s in module.ANALYSES)
    design = read_design(folder / "study.toml")
    out = Path(design.out)
    out = out if out.is_absolute() else folder / out
    with Step("imports and design"):
        patients = pd.read_csv(folder / "patients.csv", dtype={"patient_id": str})
    with Step("read tables"):
        tables = study_run._analysis_tables(out / "tables")
    with Step("responses"):
        responses = study_run._analysis_responses(out)
    calibration = calibration_policy(design.mm_per_px, tables)
    with Step("analyze (all)"):
        module.analyze(
            tables, calibration, responses=responses, patients=patients, design=design,
            errors="collect",
        )  # fmt: skip
    _reset_peak()
    print(json.dumps({"step": "process", "peak_mb": round(_PEAK[0])}))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
