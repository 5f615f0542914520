"""``dentalkit study`` against the same stages called directly (issue 32, "Measure").

A sandbox cohort (the demo's patients, manifest and calibration) is run through the
command line, ``dentalkit study --sandbox``, in a fresh process; then the stages after the
fetch (tables, contract, analyses, figures, report) are called directly, function by
function, in another fresh process on the store the first one wrote. Both print the wall
time of each stage; the ratio "stages after fetch ÷ same stages called directly" is what
the study command costs over its own functions (target ≤ 1.1). Peak resident memory of
each process is stated (``ru_maxrss`` of the child). With several ``--patients`` sizes, the
time of the stages after the fetch is compared between consecutive sizes (target for
1,000 → 2,000: ≤ 2.1×).

``--stages`` runs each stage after the fetch once more in a process of its own
(``benchmarks/_stages.py``), so that each stage's peak memory is its own; ``--whole`` adds
the same stages as the study ran them before it read the store in pieces (the whole
responses table in memory), for the before/after figures.

``--in-process`` builds the store without HTTP (``benchmarks/_cohort_store.py``: the real
fetch, answered by the sandbox in the same process, in two shards): a 10,000-patient fetch
over the loopback takes hours on a loaded 2-core machine, and the stages measured here only
read the store. The study command then finds every request stored and sends nothing.

    python benchmarks/study.py                 # 200 patients
    python benchmarks/study.py --patients 1000 2000 --in-process --stages
    python benchmarks/study.py --smoke         # 3 patients, a few figures: what CI runs
"""

from __future__ import annotations

import argparse
import itertools
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
    """The stages after the fetch, called directly on ``store``; prints JSON seconds.

    The public functions the study calls, in the same order, reading the store in pieces
    of whole patients (``read_responses_in_parts``) as the study does."""
    import pandas as pd

    from dentalkit import convert, io
    from dentalkit.contract import contract_report_in_parts, write_contract
    from dentalkit.fetch import read_calibration, read_responses_in_parts
    from dentalkit.study import FIGURES, analyze, make_figures, read_design, write_analyses
    from dentalkit.study.report import sections, write_report
    from dentalkit.study.run import NOT_WRITTEN, _analysis_responses

    design = read_design(folder / "study.toml")
    patients = pd.read_csv(folder / "patients.csv", dtype={"patient_id": str})
    seconds = {}
    t0 = time.perf_counter()
    own = read_calibration(store) if (store / "calibration.parquet").exists() else None
    parts = convert.tables_in_parts(
        read_responses_in_parts(store), errors="collect", calibration=own
    )
    io.write_tables_in_parts(parts, out / "tables")
    tables = io.read_tables(out / "tables")
    seconds["tables"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    contract = contract_report_in_parts(read_responses_in_parts(store))
    write_contract(contract, out)
    seconds["contract"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    analyses = analyze(
        tables, design.mm_per_px, responses=_analysis_responses(store), patients=patients,
        design=design, errors="collect",
    )  # fmt: skip
    write_analyses({k: v for k, v in analyses.items() if k not in NOT_WRITTEN}, out / "analyses")
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


def _load() -> str:
    """The load average (1, 5, 15 min) and the CPUs, for the figures' context."""
    import os

    return (
        "load average "
        + " ".join(f"{v:.1f}" for v in os.getloadavg())
        + f" on {os.cpu_count()} CPUs"
    )


def _one_size(n: int, args: argparse.Namespace) -> float:
    """Measure one cohort size; returns the seconds of the study's stages after the fetch."""
    with tempfile.TemporaryDirectory(dir=args.tmp) as tmp:
        folder, port = Path(tmp), _free_port()
        built = ""
        if args.in_process:
            sys.path.insert(0, str(Path(__file__).parent))
            from _cohort_store import build_store, study_inputs

            t0 = time.perf_counter()
            root = f"http://127.0.0.1:{port}"
            table = study_inputs(folder, n, root, dpi=args.dpi, figures=_smoke_figures(args))
            stored = build_store(table, folder / "study", root_url=root)
            built = (
                f"; store built in process: {stored} responses in {time.perf_counter() - t0:.0f} s"
            )
        else:
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
        stages = []
        if args.stages:
            script = str(Path(__file__).with_name("_stages.py"))
            for whole in (False, True) if args.whole else (False,):
                for s in AFTER_FETCH:
                    line, _, _ = _child([script, s, str(folder)] + (["--whole"] if whole else []))
                    stages.append((whole, json.loads(line.strip().splitlines()[-1])))
    after = sum(via_study[s] for s in AFTER_FETCH)
    base = sum(called[s] for s in AFTER_FETCH)
    fetch = re.search(r"^fetch: (\d+) requests.*\[(\d+(?:\.\d+)?) s\]$", study_out, re.M)
    print(f"patients {n}, {fetch.group(1) if fetch else '?'} requests; dpi {args.dpi}{built}")
    print(f"{'stage':10s} {'study (s)':>10s} {'direct (s)':>11s}")
    for s in AFTER_FETCH:
        print(f"{s:10s} {via_study[s]:10.1f} {called[s]:11.1f}")
    print(f"fetch: {fetch.group(2) if fetch else '?'} s; whole study process {wall_study:.0f} s")
    print(f"peak RSS: study process {rss_study:.0f} MB, direct process {rss_direct:.0f} MB")
    print(f"stages after fetch ÷ same stages called directly: {after / base:.2f} (target ≤ 1.1)")
    if stages:
        print("each stage in its own process (seconds, peak RSS):")
        for whole, r in stages:
            how = "whole table (before)" if whole else "in pieces"
            print(f"  {r['stage']:10s} {how:22s} {r['seconds']:8.1f} s {r['peak_rss_mb']:8.0f} MB")
    print(_load())
    sys.stdout.flush()
    return after


def _smoke_figures(args: argparse.Namespace) -> tuple[str, ...] | None:
    return SMOKE_FIGURES if args.smoke else None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--patients", type=int, nargs="+", default=[200])
    parser.add_argument("--dpi", type=int, default=300)
    parser.add_argument("--smoke", action="store_true", help="3 patients, two figures")
    parser.add_argument("--in-process", action="store_true", help="build the store without HTTP")
    parser.add_argument("--stages", action="store_true", help="each stage in its own process")
    parser.add_argument("--whole", action="store_true", help="with --stages: also as before")
    parser.add_argument("--tmp", default=None, help="folder for the temporary study folders")
    parser.add_argument(
        "--direct", nargs=3, metavar=("STORE", "OUT", "FOLDER"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.direct:
        direct(*(Path(p) for p in args.direct))
        return
    sizes = [3] if args.smoke else args.patients
    print(_load())
    times = [(n, _one_size(n, args)) for n in sizes]
    for (n0, t0), (n1, t1) in itertools.pairwise(times):
        print(
            f"stages after fetch, {n0} → {n1} patients: {t1 / t0:.2f}× the time "
            f"({n1 / n0:.1f}× the patients; target for 1,000 → 2,000 ≤ 2.1)"
        )


if __name__ == "__main__":
    main()
