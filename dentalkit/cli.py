"""Command line: ``dentalkit demo | sandbox | openapi | fetch | verify | tables | analyze | figures | export``.

The study as shell steps: ``fetch`` (manifest → store) → ``tables`` (store → Parquet
tables) → ``analyze`` (tables → analysis tables) → ``figures`` (tables + analyses →
PDF/PNG) → ``export`` (CSV + data dictionary, optionally pseudonymized). ``demo`` runs the
study on the embedded sandbox.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Annotated

import typer

app = typer.Typer(
    help="dentalkit: tidy tables, measurements and figures from the Dental Image Analysis Service v2.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # never print locals: they could hold a key
)


@app.command()
def sandbox(
    host: Annotated[str, typer.Option(help="Loopback address to bind.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port to listen on.")] = 8765,
    noise: Annotated[bool, typer.Option(help="Add the simulator's measurement noise.")] = True,
    latency: Annotated[float, typer.Option(help="Seconds of simulated latency per request.")] = 0.0,
) -> None:
    """Serve the local sandbox of interface v2 (a simulator; it runs no AI model)."""
    from dentalkit.sandbox import SANDBOX_API_KEY, serve
    from dentalkit.sandbox.app import BANNER

    if host not in ("127.0.0.1", "localhost", "::1"):
        typer.echo("the sandbox serves loopback only; use 127.0.0.1, localhost or ::1", err=True)
        raise typer.Exit(2)
    typer.echo(BANNER)
    typer.echo(f"base URL: http://{host}:{port}/api/v2   sandbox key: {SANDBOX_API_KEY}")
    serve(host=host, port=port, noise=noise, faults={"latency": latency})


@app.command()
def openapi(
    out: Annotated[Path | None, typer.Option(help="Write to this file instead of stdout.")] = None,
    base_url: Annotated[str, typer.Option(help="Server URL ending in /api/v2.")] = "{base_url}",
) -> None:
    """Print the OpenAPI 3.1 document generated from the endpoint registry."""
    from dentalkit.openapi import openapi_document

    text = json.dumps(openapi_document(base_url), indent=2)
    if out is None:
        typer.echo(text)
    else:
        out.write_text(text + "\n")
        typer.echo(f"wrote {out}")


@app.command()
def fetch(
    manifest: Annotated[
        Path, typer.Argument(help="CSV or Parquet manifest (patient_id, timestamp, image_url …).")
    ],
    out: Annotated[
        Path, typer.Option(help="Store folder (responses/*.parquet, failures.parquet).")
    ],
    endpoint: Annotated[
        list[str] | None,
        typer.Option(
            help="Endpoint for every row (repeatable); omit when the manifest has an endpoint column."
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(help="Service URL ending in /api/v2 (default: DENTALKIT_BASE_URL)."),
    ] = None,
    cache: Annotated[
        str | None,
        typer.Option(
            help="HTTP cache: .sqlite path, folder, redis:// URL or 'memory' (default: settings)."
        ),
    ] = None,
    workers: Annotated[
        int | None, typer.Option(help="Concurrent requests (default: settings).")
    ] = None,
    retry_failed: Annotated[
        bool, typer.Option(help="Retry only the requests that failed before.")
    ] = False,
    errors: Annotated[
        str, typer.Option(help="'collect' bad rows and failures, or 'raise' at the first.")
    ] = "collect",
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Fetch a cohort into OUT: cached, concurrent, resumable (rerun the same command to resume).

    The key is read from DENTALKIT_API_KEY only (never a command-line option: arguments show
    in process lists and shell history). Exit status 0 when every request is stored, 1 when
    some rows are bad or some requests failed (see OUT/failures.parquet), 2 on a
    configuration or manifest error.
    """
    from dentalkit.client import Client
    from dentalkit.cohort import fetch_cohort
    from dentalkit.errors import (
        ConfigurationError,
        DamagedFileError,
        InputError,
        StoreLockedError,
    )

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        client = Client(base_url, heal_cache=True, **({} if cache is None else {"cache": cache}))
        report = fetch_cohort(
            manifest,
            endpoint or None,
            out,
            client=client,
            max_workers=workers,
            progress=progress,
            errors=errors,  # type: ignore[arg-type]
            retry_failed=retry_failed,
        )
    except (ConfigurationError, InputError, StoreLockedError, DamagedFileError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(report.summary())
    for rec in report.quarantined.to_dict("records"):
        typer.echo(f"damaged {rec['kind']} {rec['file']} moved to {rec['moved_to']}")
    if len(report.problems):
        from dentalkit._export import csv_text, safe_csv_frame

        path = out / "manifest-problems.csv"
        cells = report.problems.astype(object).where(report.problems.notna(), None)
        text = [c for c in cells.columns if c != "row"]  # manifest text: no bare formulas
        try:
            safe = safe_csv_frame(cells, "manifest-problems", text)
        except InputError:  # control characters in a manifest value: write them escaped
            escaped = cells[text].map(lambda v: v.encode("unicode_escape").decode("ascii") if isinstance(v, str) else v)  # fmt: skip
            safe = safe_csv_frame(cells.assign(**escaped), "manifest-problems", text)
        path.write_text(csv_text(safe, text), encoding="utf-8")
        typer.echo(f"{len(report.problems)} bad manifest row(s) skipped; listed in {path}")
    if report.failed or report.skipped_failed:
        typer.echo(f"failures are listed in {out / 'failures.parquet'}; retry with --retry-failed")
    if len(report.problems) or report.failed or report.skipped_failed:
        raise typer.Exit(1)


@app.command()
def verify(
    store: Annotated[Path, typer.Argument(help="Store folder written by `dentalkit fetch`.")],
    cache: Annotated[
        str | None,
        typer.Option(help="Also check this HTTP cache (.sqlite file or cache folder)."),
    ] = None,
) -> None:
    """Check every file of a store (and an HTTP cache) without fetching or changing anything.

    Reads back the store marker, every responses part and the failures table (and with
    --cache every cached answer). Exit status 0 when all can be read, 1 when some cannot
    (run the same `dentalkit fetch` again: it moves them aside into STORE/_quarantine and
    sends their requests again), 2 when STORE is not a store.
    """
    import pandas as pd

    from dentalkit.errors import InputError
    from dentalkit.store import verify_store

    try:
        report = verify_store(store, cache=cache)
    except InputError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    for rec in report.to_dict("records"):
        state = "ok" if rec["ok"] else "DAMAGED"
        rows = "" if pd.isna(rec["rows"]) else f" {int(rec['rows']):,} rows"
        why = f": {rec['reason']}" if rec["reason"] else ""
        typer.echo(f"{state:8s} {rec['kind']:16s} {rec['file']}{rows}{why}")
    bad = int((~report["ok"]).sum())
    stored = int(report.loc[report["kind"] == "responses part", "rows"].fillna(0).sum())
    typer.echo(f"{len(report)} file(s) checked, {bad} damaged; {stored:,} stored rows readable")
    if bad:
        typer.echo(
            f"to repair: run the same `dentalkit fetch … --out {store}` again (damaged files "
            "are moved aside, never deleted, and their requests sent again)"
        )
        raise typer.Exit(1)


@app.command()
def tables(
    store: Annotated[Path, typer.Argument(help="Store folder written by `dentalkit fetch`.")],
    out: Annotated[
        Path, typer.Option(help="Folder for the tables (Parquet; teeth as GeoParquet).")
    ],
    errors: Annotated[
        str, typer.Option(help="'collect' malformed responses into problems, or 'raise'.")
    ] = "collect",
) -> None:
    """Convert stored responses into tidy tables (one Parquet file per table).

    Writes every table of the data contract plus problems.parquet; malformed responses are
    listed there (errors=collect) or stop the run with the JSON path at fault (errors=raise).
    Exit status 1 when there are problems, 2 when the store cannot be read.
    """
    from dentalkit import convert, io
    from dentalkit.errors import DentalkitError
    from dentalkit.store import read_responses

    if errors not in ("collect", "raise"):
        typer.echo("error: --errors must be 'collect' or 'raise'", err=True)
        raise typer.Exit(2)
    try:
        responses = read_responses(store)
        result = convert.tables(responses, errors=errors)
    except DentalkitError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    io.write_tables(result, out)
    _echo_counts(result, f"tables to {out}")
    if len(result["problems"]):
        typer.echo(f"{len(result['problems'])} problem(s): see {out / 'problems.parquet'}")
        raise typer.Exit(1)


def _echo_counts(tables: dict, what: str) -> None:
    """Print one line per table with its row count, then a total line."""
    for name, table in tables.items():
        typer.echo(f"{name:20s} {len(table):9d} rows")
    typer.echo(f"wrote {len(tables)} {what}")


def _calibration(pairs: list[str] | None) -> dict[str, float]:
    """Parse ``ENDPOINT=MM_PER_PX`` options into a calibration mapping (or exit 2)."""
    from dentalkit.endpoints import ENDPOINTS

    cal: dict[str, float] = {}
    for pair in pairs or []:
        name, sep, value = pair.partition("=")
        try:
            number = float(value)
        except ValueError:
            number = float("nan")
        if not sep or name not in ENDPOINTS or not number > 0:
            typer.echo(
                f"error: --mm-per-px {pair!r}: expected ENDPOINT=VALUE with a registry endpoint "
                f"name (e.g. ceph_lateral_points=0.1) and a positive number of millimetres "
                "per pixel",
                err=True,
            )
            raise typer.Exit(2)
        cal[name] = number
    return cal


MM_PER_PX_HELP = (
    "Calibration ENDPOINT=MM_PER_PX (repeatable, e.g. ceph_lateral_points=0.1); "
    "endpoints without one stay in pixels."
)


@app.command()
def analyze(
    tables_dir: Annotated[Path, typer.Argument(help="Folder written by `dentalkit tables`.")],
    out: Annotated[Path, typer.Option(help="Folder for the analysis tables (Parquet).")],
    mm_per_px: Annotated[list[str] | None, typer.Option(help=MM_PER_PX_HELP)] = None,
    store: Annotated[
        Path | None,
        typer.Option(help="Store folder: lists the analysed images (findings denominators)."),
    ] = None,
) -> None:
    """Run every cohort analysis the tables allow (ceph, arch, teeth, findings).

    Writes one Parquet file per analysis table (see ``dentalkit.pipeline.analyze``).
    Millimetres only with --mm-per-px; nothing is guessed.
    """
    from dentalkit import io, pipeline
    from dentalkit.errors import DentalkitError
    from dentalkit.store import read_responses

    cal = _calibration(mm_per_px)
    try:
        tables = io.read_tables(tables_dir)
        responses = read_responses(store) if store is not None else None
        analyses = pipeline.analyze(tables, cal or None, responses=responses)
    except (DentalkitError, FileNotFoundError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    pipeline.write_analyses(analyses, out)
    _echo_counts(analyses, f"analysis tables to {out}")


@app.command()
def figures(
    tables_dir: Annotated[Path, typer.Argument(help="Folder written by `dentalkit tables`.")],
    analyses_dir: Annotated[Path, typer.Argument(help="Folder written by `dentalkit analyze`.")],
    out: Annotated[Path, typer.Option(help="Folder for the figures (PDF and PNG).")],
    mm_per_px: Annotated[list[str] | None, typer.Option(help=MM_PER_PX_HELP)] = None,
    dpi: Annotated[
        int, typer.Option(min=300, max=1200, help="Resolution of the PNGs (and PDF images).")
    ] = 600,
) -> None:
    """Draw the standard figure set (85 mm single column, PDF + PNG) on blank canvases."""
    from dentalkit import io, pipeline
    from dentalkit.errors import DentalkitError

    cal = _calibration(mm_per_px)
    try:
        tables = io.read_tables(tables_dir)
        analyses = pipeline.read_analyses(analyses_dir)
    except (DentalkitError, FileNotFoundError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    written = pipeline.make_figures(tables, analyses, out, mm_per_px=cal or None, dpi=dpi)
    for name, paths in written.items():
        typer.echo(f"{name:28s} " + " ".join(p.name for p in paths))
    typer.echo(f"wrote {len(written)} figures to {out}")


@app.command()
def export(
    folders: Annotated[
        list[Path],
        typer.Argument(help="Folders of Parquet tables (from `tables` and/or `analyze`)."),
    ],
    out: Annotated[Path, typer.Option(help="Folder for CSV files and the data dictionary.")],
    secret_env: Annotated[
        str | None,
        typer.Option(
            help="Pseudonymize patient_id with the secret in this environment variable "
            "(HMAC-SHA256; the secret is never an argument and never written)."
        ),
    ] = None,
) -> None:
    """Export tables as CSV with a data dictionary (CSV + JSON) for R, SPSS or Stata.

    Geometries become WKT. With --secret-env, patient identifiers are replaced by keyed
    pseudonyms first (see docs/publishing.md); the export refuses to run if an
    identifier would remain in another column.
    """
    import os

    import pandas as pd

    from dentalkit import io
    from dentalkit.errors import DentalkitError

    try:
        tables: dict[str, pd.DataFrame] = {}
        for folder in folders:
            if not folder.is_dir():
                raise FileNotFoundError(f"{folder} is not a folder")
            contract = io.read_tables(folder)  # contract tables with their exact dtypes
            for path in sorted(folder.glob("*.parquet")):
                name = path.stem
                tables[name] = contract[name] if name in contract else pd.read_parquet(path)
        if not tables:
            raise FileNotFoundError(f"no Parquet tables in {', '.join(map(str, folders))}")
        if secret_env is not None:
            secret = os.environ.get(secret_env)
            if not secret:
                typer.echo(
                    f"error: environment variable {secret_env} is not set or empty", err=True
                )
                raise typer.Exit(2)
            tables = io.pseudonymize(tables, secret)
        written = io.export(tables, out)
    except (DentalkitError, FileNotFoundError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"wrote {len(written)} files to {out}" + (" (pseudonymized)" if secret_env else ""))


@app.command()
def demo(
    patients: Annotated[int, typer.Option(help="Synthetic patients (two sessions each).")] = 50,
    out: Annotated[Path, typer.Option(help="Output folder.")] = Path("dentalkit-demo"),
    port: Annotated[int, typer.Option(help="Loopback port of the embedded sandbox.")] = 8766,
    progress: Annotated[bool, typer.Option(help="Show the fetch progress bar.")] = True,
    dpi: Annotated[
        int, typer.Option(min=300, max=1200, help="Figure resolution (PNG, images in PDFs).")
    ] = 600,
) -> None:
    """Run a whole study on the embedded sandbox: fetch, tables, analyses, figures, report.

    The sandbox is a simulator of interface v2 (synthetic anatomy, no AI model). A second
    run finds every response already stored and redraws the outputs.
    """
    from dentalkit.demo import run_demo
    from dentalkit.errors import ConfigurationError

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        run_demo(patients=patients, out=out, echo=typer.echo, port=port, progress=progress, dpi=dpi)
    except ConfigurationError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def main() -> None:
    """Entry point of the ``dentalkit`` console script."""
    app()


if __name__ == "__main__":
    main()
