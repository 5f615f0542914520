"""``dentalkit study`` against the same stages called directly (issue 32, "Measure").

A sandbox cohort (the demo's patients, manifest and calibration) is run through the
command line, ``dentalkit study --sandbox``, in a fresh process; then the stages after the
fetch (tables, contract, analyses, figures, report) are called directly, function by
function, in another fresh process on the store the first one wrote. Both print the wall
time of each stage; the ratio "stages after fetch ÷ same stages called directly" is what
the study command costs over its own functions (target ≤ 1.1). Peak resident memory of
each process is stated (``ru_maxrss`` of the child).

    python benchmarks/study.py                 # 200 patients
    python benchmarks/study.py --patients 1000
    python benchmarks/study.py --smoke         # 3 patients, a few figures: what CI runs
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The stages after the fetch, as the study command names them in its stage lines.
AFTER_FETCH = ("tables", "contract", "analyses", "figures", "report")
#: The figures of the smoke run (drawing is most of the time; the full set at full size).
SMOKE_FIGURES = ("arch_forms", "mean_arch_forms")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _inputs(folder: Path, n: int, port: int, smoke: bool, dpi: int) -> None:
    """manifest.csv, patients.csv and study.toml of an ``n``-patient sandbox cohort."""
    from dentalkit.sandbox import running
    from dentalkit.study.demo import demo_manifest, demo_patients, sandbox_calibration

    patients = demo_patients(n)
    with running(port=port) as sb:
        demo_manifest(sb, patients).to_csv(folder / "manifest.csv", index=False)
    patients.to_csv(folder / "patients.csv", index=False)
    lines = ['out = "study"', "[figures]", f"dpi = {dpi}"]
    if smoke:
        lines.append("draw = [" + ", ".join(f'"{f}"' for f in SMOKE_FIGURES) + "]")
    lines += ["[calibration]", *(f"{k} = {v}" for k, v in sandbox_calibration().items())]
    (folder / "study.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")


#: Runs a module (``python -m`` would) or a script and prints the process's peak RSS on stderr at exit.
_WRAP = (
    "import atexit, resource, runpy, sys; "
    "atexit.register(lambda: print('peak_rss_kb=%d' % "
    "resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr)); "
    "sys.argv = sys.argv[1:]; "
    "(runpy.run_path(sys.argv[0], run_name='__main__') if sys.argv[0].endswith('.py') "
    "else runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True))"
)


def _child(args: list[str]) -> tuple[str, float, float]:
    """Run a module or script in a fresh process: its stdout, wall seconds, peak RSS (MB)."""
    t0 = time.perf_counter()
    run = subprocess.run(
        [sys.executable, "-c", _WRAP, *args], capture_output=True, text=True, check=False
    )
    wall = time.perf_counter() - t0
    if run.returncode != 0:
        raise SystemExit(f"{args[:3]} failed ({run.returncode}):\n{run.stdout}\n{run.stderr}")
    peak = re.findall(r"peak_rss_kb=(\d+)", run.stderr)
    return run.stdout, wall, int(peak[-1]) / 1024 if peak else float("nan")


def _stage_seconds(output: str) -> dict[str, float]:
    """``{stage: seconds}`` from the study's stage lines (``tables: … [1.2 s]``)."""
    found = {}
    for line in output.splitlines():
        m = re.match(r"([a-z ]+): .*\[(\d+(?:\.\d+)?) s\]$", line)
        if m and m.group(1) in (*AFTER_FETCH, "treatment length"):
            found[m.group(1)] = float(m.group(2))
    return found


def direct(store: Path, out: Path, folder: Path) -> None:
    """The stages after the fetch, called directly on ``store``; prints JSON seconds."""
    from dentalkit import convert, io
    from dentalkit.contract import contract_report, write_contract
    from dentalkit.fetch.store import read_responses
    from dentalkit.study import FIGURES, analyze, make_figures, read_design, write_analyses
    from dentalkit.study.report import sections, write_report

    design = read_design(folder / "study.toml")
    patients = __import__("pandas").read_csv(folder / "patients.csv", dtype={"patient_id": str})
    seconds = {}
    t0 = time.perf_counter()
    responses = read_responses(store)
    tables = convert.tables(responses, errors="collect")
    io.write_tables(tables, out / "tables")
    seconds["tables"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    contract = contract_report(responses)
    write_contract(contract, out)
    seconds["contract"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    analyses = analyze(
        tables, design.mm_per_px, responses=responses, patients=patients, design=design,
        errors="collect",
    )  # fmt: skip
    write_analyses(analyses, out / "analyses")
    seconds["analyses"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    chosen = FIGURES if design.figures is None else [f for f in FIGURES if f.name in design.figures]
    figures = make_figures(
        tables, analyses, out / "figures", mm_per_px=design.mm_per_px, dpi=design.dpi,
        figures=chosen,
    )  # fmt: skip
    seconds["figures"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    write_report(
        out / "report.md",
        title=design.title,
        intro="",
        sections=sections(tables, analyses, contract, design=design),
        figures=figures,
    )
    seconds["report"] = time.perf_counter() - t0
    print(json.dumps(seconds))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patients", type=int, default=200)
    parser.add_argument("--dpi", type=int, default=300)
    parser.add_argument("--smoke", action="store_true", help="3 patients, two figures")
    parser.add_argument(
        "--direct", nargs=3, metavar=("STORE", "OUT", "FOLDER"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.direct:
        direct(*(Path(p) for p in args.direct))
        return
    n = 3 if args.smoke else args.patients
    with tempfile.TemporaryDirectory() as tmp:
        folder, port = Path(tmp), _free_port()
        _inputs(folder, n, port, args.smoke, args.dpi)
        study_out, wall_study, rss_study = _child(
            [
                "dentalkit", "study", str(folder / "manifest.csv"),
                "--patients", str(folder / "patients.csv"), "--design", str(folder / "study.toml"),
                "--sandbox", "--port", str(port), "--no-progress",
            ]
        )  # fmt: skip
        via_study = _stage_seconds(study_out)
        out, _, rss_direct = _child(
            [__file__, "--direct", str(folder / "study"), str(folder / "direct"),
             str(folder)]
        )  # fmt: skip
        called = json.loads(out.strip().splitlines()[-1])
    after = sum(via_study[s] for s in AFTER_FETCH)
    base = sum(called[s] for s in AFTER_FETCH)
    fetch = re.search(r"^fetch: (\d+) requests.*\[(\d+(?:\.\d+)?) s\]$", study_out, re.M)
    print(f"patients {n}, {fetch.group(1) if fetch else '?'} requests; dpi {args.dpi}")
    print(f"{'stage':10s} {'study (s)':>10s} {'direct (s)':>11s}")
    for s in AFTER_FETCH:
        print(f"{s:10s} {via_study[s]:10.1f} {called[s]:11.1f}")
    print(f"fetch: {fetch.group(2) if fetch else '?'} s; whole study process {wall_study:.0f} s")
    print(f"peak RSS: study process {rss_study:.0f} MB, direct process {rss_direct:.0f} MB")
    print(f"stages after fetch ÷ same stages called directly: {after / base:.2f} (target ≤ 1.1)")


if __name__ == "__main__":
    main()
