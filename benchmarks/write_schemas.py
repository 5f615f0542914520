"""Cost of writing the demo's tables with their declared schemas, side by side with today's.

Run from the repository root::

    python benchmarks/write_schemas.py                  # runs the 50-patient demo first
    python benchmarks/write_schemas.py --demo DIR       # reuse a demo folder (dentalkit demo --out DIR)
    python benchmarks/write_schemas.py --smoke --demo DIR   # 3 repetitions, for CI

The tables are the ones the demo writes, rebuilt in memory exactly as the demo builds them
(``convert.tables`` from the demo's response store, ``study.analyze`` with the sandbox's
calibration and patient record, ``contract_report``), so both sides start from the same
pandas frames the writer receives.

Per repetition, back to back in one process, every table is written to an in-memory buffer
(no disk or fsync noise) twice:

- *plain*: ``pq.write_table(pa.Table.from_pandas(df, preserve_index=False))`` — the writer
  before issue 23 (the teeth table through the GeoParquet writer without a declaration);
- *declared*: ``pq.write_table(dentalkit.io._dictionary.arrow_table(df, name))`` — declared
  Arrow types, nullability checks and field metadata (teeth: GeoParquet writer with its
  declaration).

The same comparison is made for ``write_partitioned`` (every demo table with a
``patient_id`` except the GeoParquet ``teeth``, 8 buckets, written to a temporary folder):
its default writer (the table's declaration, by folder name) against a plain
``from_pandas`` writer, median CPU ratio over 7 repetitions (1 with ``--smoke``).

The ratio reported is the median over repetitions of declared ÷ plain CPU time
(``time.process_time``) summed over all tables (target ≤ 1.1); the order of the two sides
alternates between repetitions. The wall-clock ratio is printed beside it
(``pa.Table.from_pandas`` converts the columns of a long table on a thread pool, whose
CPU time counts in full; the declared writer converts in one thread). The bytes written
by both are printed too (the declared files carry each column's description, unit and
vocabulary in their footer).
"""

from __future__ import annotations

import argparse
import io as _io
import statistics
import sys
import tempfile
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dentalkit import convert, io, study
from dentalkit.contract import contract_report
from dentalkit.fetch.store import read_responses
from dentalkit.io._dictionary import arrow_table
from dentalkit.study.demo import sandbox_calibration, sandbox_patients


def demo_frames(folder: Path) -> dict[str, object]:
    """The demo's tables as the demo holds them before writing (name → DataFrame)."""
    responses = read_responses(folder)
    tables = convert.tables(responses, errors="collect")
    ids = sorted(tables["landmarks"]["patient_id"].astype(str).unique())
    analyses = study.analyze(
        tables,
        sandbox_calibration(),
        responses=responses,
        patients=sandbox_patients(ids),
        errors="collect",  # as the demo: analysis_problems is one of its outputs
    )
    return {**tables, **analyses, "contract": contract_report(responses)}


def _plain(name: str, df) -> pa.Table:
    if name == "teeth":
        return io._geo_table(df, "geometry")
    plain = df.copy(deep=False)
    plain.attrs = {}
    return pa.Table.from_pandas(plain, preserve_index=False)


def _declared(name: str, df) -> pa.Table:
    if name == "teeth":
        return io._geo_table(df, "geometry", "teeth")
    return arrow_table(df, name)


def _write_all(frames, build) -> tuple[float, float, int]:
    """(CPU seconds, wall seconds, bytes) of writing every table."""
    start, wall = time.process_time(), time.perf_counter()
    size = 0
    for name, df in frames.items():
        buf = _io.BytesIO()
        pq.write_table(build(name, df), buf)
        size += buf.tell()
    return time.process_time() - start, time.perf_counter() - wall, size


def _cpu(fn) -> float:
    start = time.process_time()
    fn()
    return max(time.process_time() - start, 1e-9)


def _encode(built) -> None:
    for table in built.values():
        pq.write_table(table, _io.BytesIO())


def _plain_file(frame, path) -> None:
    plain = frame.copy(deep=False)
    plain.attrs = {}
    pq.write_table(pa.Table.from_pandas(plain, preserve_index=False), path)


def _partitioned(frames, repeat: int) -> float:
    """Median CPU ratio of ``write_partitioned`` declared (its default) ÷ plain writer."""
    from dentalkit.io import write_partitioned

    # tables of patients' rows only: rows about the cohort (analysis_problems' "not made on
    # this cohort" rows) have no patient and are refused by write_partitioned, by design
    tables = {
        n: df
        for n, df in frames.items()
        if "patient_id" in df.columns and n != "teeth" and df["patient_id"].notna().all()
    }
    ratios, declared_t, plain_t = [], [], []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)

        def run(writer) -> float:
            start = time.process_time()
            for name, df in tables.items():
                write_partitioned(df, root / name, buckets=8, overwrite=True, writer=writer)
            return time.process_time() - start

        if repeat > 1:
            run(None), run(_plain_file)  # warm-up (the smoke run only checks it runs)
        for k in range(repeat):
            if k % 2 == 0:
                p, d = run(_plain_file), run(None)
            else:
                d, p = run(None), run(_plain_file)
            ratios.append(d / p if p > 0 else float("nan"))
            declared_t.append(d)
            plain_t.append(p)
    ratio = statistics.median(ratios)
    print(
        f"write_partitioned, {len(tables)} tables x 8 buckets: plain writer "
        f"{statistics.median(plain_t) * 1e3:.1f} ms, declared (default) "
        f"{statistics.median(declared_t) * 1e3:.1f} ms (CPU, median of {repeat}); "
        f"ratio declared / plain = {ratio:.2f} (target <= 1.1)"
    )
    return ratio


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--demo", type=Path, help="a demo output folder to reuse")
    parser.add_argument("--patients", type=int, default=50, help="demo size when run here")
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--smoke", action="store_true", help="3 repetitions (CI)")
    args = parser.parse_args(argv)
    repeat = 3 if args.smoke else args.repeat

    with tempfile.TemporaryDirectory() as tmp:
        folder = args.demo
        if folder is None:
            from dentalkit.study.demo import run_demo

            folder = Path(tmp) / "demo"
            run_demo(args.patients, folder, echo=lambda _: None, progress=False, dpi=300)
        frames = demo_frames(folder)
    rows = sum(len(df) for df in frames.values())
    print(f"{len(frames)} tables, {rows:,} rows (demo in {args.demo or 'a temporary folder'})")

    _write_all(frames, _plain)  # warm-up: imports, caches of the declarations
    _write_all(frames, _declared)
    ratios, wall_ratios, plain_t, declared_t = [], [], [], []
    for k in range(repeat):
        if k % 2 == 0:
            p, p_wall, p_size = _write_all(frames, _plain)
            d, d_wall, d_size = _write_all(frames, _declared)
        else:
            d, d_wall, d_size = _write_all(frames, _declared)
            p, p_wall, p_size = _write_all(frames, _plain)
        plain_t.append(p)
        declared_t.append(d)
        ratios.append(d / p if p > 0 else float("nan"))
        wall_ratios.append(d_wall / p_wall if p_wall > 0 else float("nan"))
    ratio = statistics.median(ratios)
    print(
        f"write, all tables: plain from_pandas {statistics.median(plain_t) * 1e3:.1f} ms, "
        f"declared schemas {statistics.median(declared_t) * 1e3:.1f} ms (CPU, median of "
        f"{repeat}); ratio declared / plain = {ratio:.2f} (target <= 1.1)"
    )
    # from_pandas converts the columns of a long table on a thread pool (CPU time counts
    # every thread); the declared writer converts column by column in one thread
    print(f"  wall-clock ratio declared / plain = {statistics.median(wall_ratios):.2f}")
    print(f"bytes written: plain {p_size:,}, declared {d_size:,}")
    # where the difference is: building the Arrow table, or Parquet encoding
    built_p = {n: _plain(n, df) for n, df in frames.items()}
    built_d = {n: _declared(n, df) for n, df in frames.items()}
    build, encode = [], []
    for _ in range(repeat):
        build.append(
            _cpu(lambda: [_declared(n, df) for n, df in frames.items()])
            / _cpu(lambda: [_plain(n, df) for n, df in frames.items()])
        )
        encode.append(_cpu(lambda: _encode(built_d)) / _cpu(lambda: _encode(built_p)))
    print(
        f"  of which: Arrow table built from pandas {statistics.median(build):.2f}x, "
        f"Parquet encoding {statistics.median(encode):.2f}x"
    )
    part_ratio = _partitioned(frames, 1 if args.smoke else 7)
    return {
        "partitioned_ratio": part_ratio,
        "ratio": ratio,
        "plain_s": statistics.median(plain_t),
        "declared_s": statistics.median(declared_t),
        "wall_ratio": statistics.median(wall_ratios),
        "tables": float(len(frames)),
    }


if __name__ == "__main__":
    main()
