"""Benchmark: drawing the demo's figures — this checkout ÷ another (main), side by side.

Method. One demo output folder (``tables/`` and ``analyses/`` written by ``dentalkit demo``)
is drawn by two copies of dentalkit: this checkout and a reference (default: the ``main``
branch exported with ``git archive`` into a temporary folder; ``--reference SRC`` names a
folder holding a ``dentalkit/`` package). Both packages are called ``dentalkit``, so each
drawing runs in its own Python process, which imports everything first and then times
only ``dentalkit.study.make_figures`` (the standard figure set with the treatment-length
figures, the demo's calibration and sandbox images, PDF and PNG at ``--dpi``). The rounds
alternate (reference first in odd rounds, this checkout first in even ones) so that a
change of machine load falls on both; the medians are compared. Target (issue 31):
this checkout ÷ main ≤ 1.2.

Run::

    dentalkit demo --patients 50 --out /tmp/demo50 --dpi 300
    python benchmarks/figures.py --demo /tmp/demo50            # 3 alternating rounds
    python benchmarks/figures.py --demo /tmp/demo50 --rounds 5
    python benchmarks/figures.py --demo DIR --smoke            # one figure, one round
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

#: Run in a fresh interpreter with the package's folder first on sys.path.
WORKER = r"""
import json, sys, time, warnings
sys.dont_write_bytecode = True  # never write into the reference's folder
sys.path.insert(0, sys.argv[1])
import matplotlib
matplotlib.use("Agg")
from dentalkit import io, study
from dentalkit.study.demo import sandbox_calibration
from dentalkit.sandbox.render import input_image
demo, out, dpi, only = sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]
tables = io.read_tables(f"{demo}/tables")
tables.pop("problems", None)
analyses = study.read_analyses(f"{demo}/analyses")
figures = [f for f in study.FIGURES if only == "all" or f.name in only.split(",")]
cal = sandbox_calibration()
image_for = lambda kind, pid, ts: input_image(f"{kind}/{pid}/{ts[:10]}.png")
written, cpu_by = {}, {}
with warnings.catch_warnings():
    warnings.simplefilter("ignore")
    t0, c0 = time.perf_counter(), time.process_time()
    for f in figures:
        c1 = time.process_time()
        written.update(study.make_figures(
            tables, analyses, out, mm_per_px=cal, image_for=image_for, dpi=dpi, figures=[f]
        ))
        cpu_by[f.name] = time.process_time() - c1
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
print(json.dumps({"seconds": seconds, "cpu": cpu, "cpu_by": cpu_by, "figures": sorted(written)}))
"""


def export_main(into: Path) -> Path:
    """``git archive main`` of this repository, unpacked into ``into``; returns it."""
    data = subprocess.run(
        ["git", "-C", str(ROOT), "archive", "--format=tar", "main", "dentalkit"],
        check=True,
        capture_output=True,
    ).stdout
    tar = into / "main.tar"
    tar.write_bytes(data)
    with tarfile.open(tar) as t:
        t.extractall(into, filter="data")
    tar.unlink()
    return into


def draw(src: Path, demo: Path, dpi: int, only: str) -> dict:
    """Draw the figure set with the dentalkit package under ``src``; its timing."""
    with tempfile.TemporaryDirectory() as out:
        env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1", "MPLBACKEND": "Agg"}
        done = subprocess.run(
            [sys.executable, "-c", WORKER, str(src), str(demo), out, str(dpi), only],
            check=True,
            capture_output=True,
            text=True,
            env=env,
            cwd=out,
        )
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=Path, required=True, help="a dentalkit demo output folder")
    parser.add_argument("--reference", type=Path, help="folder holding the reference dentalkit/")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dpi", type=int, default=300)
    parser.add_argument("--smoke", action="store_true", help="one figure, one round")
    args = parser.parse_args(argv)
    only = "odontogram_missing" if args.smoke else "all"
    rounds = 1 if args.smoke else args.rounds
    with tempfile.TemporaryDirectory() as tmp:
        ref = args.reference or (ROOT if args.smoke else export_main(Path(tmp)))
        times: dict[str, list[float]] = {"reference": [], "this": []}
        cpus: dict[str, list[float]] = {"reference": [], "this": []}
        by: dict[str, dict[str, list[float]]] = {"reference": {}, "this": {}}
        names: dict[str, list[str]] = {}
        for r in range(rounds):
            order = [("reference", ref), ("this", ROOT)]
            for side, src in order if r % 2 == 0 else order[::-1]:
                res = draw(Path(src), args.demo, args.dpi, only)
                times[side].append(res["seconds"])
                cpus[side].append(res["cpu"])
                for name, c in res["cpu_by"].items():
                    by[side].setdefault(name, []).append(c)
                names[side] = res["figures"]
                print(
                    f"round {r + 1}: {side:9s} {res['seconds']:7.1f} s wall, "
                    f"{res['cpu']:7.1f} s CPU, {len(res['figures'])} figures"
                )
    ref_s, this_s = statistics.median(times["reference"]), statistics.median(times["this"])
    ref_c, this_c = statistics.median(cpus["reference"]), statistics.median(cpus["this"])
    ratio = this_s / ref_s
    print(f"figures drawn: reference {len(names['reference'])}, this checkout {len(names['this'])}")
    print("CPU seconds per figure (median over rounds): reference, this checkout, ratio")
    for name in sorted(set(by["reference"]) | set(by["this"])):
        a = statistics.median(by["reference"].get(name, [float("nan")]))
        b = statistics.median(by["this"].get(name, [float("nan")]))
        print(f"  {name:24s} {a:7.2f} {b:7.2f} {b / a if a else float('nan'):6.2f}")
    load = f" (load average {os.getloadavg()[0]:.1f})" if hasattr(os, "getloadavg") else ""
    print(f"median wall: reference {ref_s:.1f} s, this checkout {this_s:.1f} s{load}")
    print(f"median CPU: reference {ref_c:.1f} s, this checkout {this_c:.1f} s")
    print(f"ratio this ÷ reference = {ratio:.2f} wall, {this_c / ref_c:.2f} CPU (target ≤ 1.2)")
    return {"reference": ref_s, "this": this_s, "ratio": ratio, "cpu_ratio": this_c / ref_c}


if __name__ == "__main__":
    main()
