"""The study, stage by stage: manifest → fetch → tables → analyses → figures → report.

:func:`run` is ``dentalkit study`` (and ``dentalkit demo``, on the sandbox's synthetic
cohort): each stage reads the output of the one before it and writes its own folder, so
a rerun sends nothing already stored (the fetch resumes from its store) and rewrites the
later stages. Each stage prints a line when it starts and when it ends (what it made and
how long it took).
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pandas as pd

from dentalkit._progress import Stage
from dentalkit.study import report as _report
from dentalkit.study._tle import TLE_ENDPOINT, first_sessions, tle_patients, tle_queries
from dentalkit.study.analyses import analyze, problems_summary, selected_analyses, write_analyses
from dentalkit.study.calibration import Calibration, calibration_policy
from dentalkit.study.design import Design, read_design
from dentalkit.study.figures import FIGURES, make_figures

__all__ = ["StudyResult", "read_patients", "run", "sandbox_service"]

log = logging.getLogger("dentalkit")

#: The analysis tables a run keeps in memory only (figures), never in ``analyses/``.
NOT_WRITTEN = ("tle_sensitivity",)


@dataclass(frozen=True, eq=False)
class StudyResult:
    """What a study run made, and where.

    Attributes
    ----------
    paths : dict of str to Path
        ``store``, ``tables``, ``analyses``, ``figures``, ``report``, ``contract``
        (only those written: a run stopped by the fetch has the store alone).
    fetch : FetchReport
        The fetch's report (:class:`dentalkit.fetch.FetchReport`).
    figures : dict of str to list of Path
        The figures drawn, by name.
    analysis_problems : DataFrame, optional
        The rows the analyses could not use (``analysis_problems``; None when the fetch
        stopped the run).
    notes : list of str
        The report's notes the command line prints too (arches left in pixels …).
    seconds : dict of str to float
        Wall time of each stage (``fetch``, ``treatment length``, ``tables``,
        ``contract``, ``analyses``, ``figures``, ``report``).
    """

    paths: dict[str, Path]
    fetch: Any
    figures: dict[str, list[Path]] = field(default_factory=dict)
    analysis_problems: pd.DataFrame | None = None
    notes: list[str] = field(default_factory=list)
    seconds: dict[str, float] = field(default_factory=dict)

    @property
    def problems(self) -> int:
        """How many rows the analyses could not use (0 when they all could)."""
        return 0 if self.analysis_problems is None else len(self.analysis_problems)

    @property
    def left_out(self) -> int:
        """How many of those rows left data out (not counting the analyses that could not
        run on this cohort, which say why: :func:`dentalkit.study.left_out`)."""
        from dentalkit.study.analyses import left_out

        return left_out(self.analysis_problems)

    @property
    def stopped(self) -> str | None:
        """Why the fetch stopped the run (``"auth"``, ``"unreachable"``), or None."""
        return getattr(self.fetch, "stopped", None)


def read_patients(patients: pd.DataFrame | str | Path | None) -> pd.DataFrame | None:
    """The patients table from a DataFrame or a CSV / Parquet file (``patient_id`` as text).

    Raises
    ------
    InputError
        The file does not exist, is of another kind, or has no ``patient_id`` column.
    """
    from dentalkit.errors import InputError

    if patients is None or isinstance(patients, pd.DataFrame):
        table = patients
    else:
        path = Path(patients)
        if not path.is_file():
            raise InputError(f"the patients table {path} does not exist")
        if path.suffix.lower() in (".parquet", ".pq"):
            table = pd.read_parquet(path)
        elif path.suffix.lower() in (".csv", ".txt"):
            table = pd.read_csv(path, dtype={"patient_id": str})
        else:
            raise InputError(f"the patients table {path}: give a .csv or .parquet file")
    if table is not None and "patient_id" not in table.columns:
        raise InputError(
            "the patients table has no patient_id column; columns found: "
            + ", ".join(map(str, table.columns))
        )
    return table


def _port_free(port: int) -> bool:
    """Whether nothing listens on the loopback ``port``. A port a previous run closed a
    moment ago (its connections in TIME_WAIT) is free: the server binds it with
    SO_REUSEADDR, and so does this probe."""
    with socket.socket() as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return False
    return True


@contextmanager
def sandbox_service(
    out: Path,
    port: int,
    echo: Callable[[str], None],
    drift: tuple[str, ...] = (),
    ai_errors: str = "off",
) -> Iterator[tuple[Any, Any]]:
    """The embedded sandbox on a loopback ``port`` and a client of it (cache in ``out``),
    answering with the AI error mode ``ai_errors`` (docs/qc.md; ``"off"``: none).

    Yields ``(sandbox, client)``. The port is fixed by default so that a later run on the
    same ``out`` reuses its store and HTTP cache (both belong to one service address).

    Raises
    ------
    ConfigurationError
        The port is busy.
    """
    from dentalkit.errors import ConfigurationError
    from dentalkit.fetch.client import Client
    from dentalkit.sandbox import running
    from dentalkit.sandbox.app import BANNER

    echo(BANNER)
    if port and not _port_free(port):
        raise ConfigurationError(
            f"port {port} is busy; run again with another --port (an out folder belongs to "
            "one sandbox address, so use the same --port for later runs on that folder)"
        )
    out.mkdir(parents=True, exist_ok=True)
    with running(port=port, drift=tuple(drift), ai_errors=ai_errors) as sb:
        echo(f"sandbox at {sb.base_url} (sandbox key: {sb.api_key})")
        if ai_errors != "off":
            echo(f"AI error mode: {ai_errors} (every injected error is in the sandbox's truth)")
        if sb.config.drift:
            echo(
                f"drift mode: the sandbox answers as a changed service ({', '.join(sb.config.drift)})"
            )
        client = Client(sb.base_url, api_key=sb.api_key, cache=out / "http-cache.sqlite")
        try:
            yield sb, client
        finally:
            client.close()


def _design(design: Design | str | Path | None) -> Design:
    if isinstance(design, Design):
        return design
    return Design() if design is None else read_design(design)


def _with_tle_queries(
    manifest: pd.DataFrame, patients: pd.DataFrame | None
) -> tuple[pd.DataFrame, pd.DataFrame | None, str]:
    """The manifest plus one ``/tle`` query per patient (at the first session) when the
    patients table has the codebook's parameters and the manifest asks none itself; the
    typed ``/tle`` table; and why no query was added ("" when they were)."""
    if not {"patient_id", "timestamp", "endpoint"} <= set(manifest.columns):
        return manifest, None, "the manifest has no session key"  # the fetch names it
    if (manifest["endpoint"] == TLE_ENDPOINT).any():
        return manifest, None, "the manifest asks its own /tle queries"
    sessions = first_sessions(manifest)
    typed, why = tle_patients(patients, sessions)
    if typed is None:
        return manifest, None, why
    typed = typed[typed["patient_id"].isin(list(sessions))]
    return pd.concat([manifest, tle_queries(typed, sessions)], ignore_index=True), typed, ""


def _sensitivity(
    typed: pd.DataFrame | None, design: Design, out: Path, client: Any, echo: Callable
) -> pd.DataFrame | None:
    """The treatment-length sensitivity curves of the design (its own store), or None."""
    if typed is None or design.sensitivity is None:
        return None
    from dentalkit import tle
    from dentalkit.fetch.cohort import Fetcher

    factor, levels, n = design.sensitivity
    n = min(n, len(typed))
    step = Stage("treatment length", echo, f"the {factor} sensitivity curves of {n} patients")
    curves = tle.sensitivity(
        typed.head(n),
        factor,
        list(levels),
        Fetcher(out / "tle-sensitivity", client),
        errors="collect",  # a failed or malformed answer is a missing point, listed
    )
    step.done(f"{len(curves)} sensitivity points ({n} patients × {len(levels)} levels, and means)")
    return curves


def _parts(out: Path) -> Iterator[pd.DataFrame]:
    """The responses of the store ``out`` in pieces of whole patients, never all the bodies
    at once (:func:`dentalkit.fetch.read_responses_in_parts`)."""
    from dentalkit.fetch.parts import read_responses_in_parts

    return read_responses_in_parts(out)


def _tables(out: Path, echo: Callable, progress: bool) -> dict[str, int]:
    """The tables stage: the responses converted a piece at a time and written to
    ``out/tables``. Returns the rows of each table written, read from the files' footers:
    the tables are not read back here (at 10,000 patients the tooth outlines alone are
    1.5 GB as shapely objects); the analyses stage reads them."""
    import pyarrow.parquet as pq

    from dentalkit import convert, io
    from dentalkit._progress import bar
    from dentalkit.fetch import read_calibration

    step = Stage("tables", echo, "converting the responses, a few hundred patients at a time")
    # the images' own scales (the manifest's mm_per_px, DICOM spacing) the fetch stored
    own = read_calibration(out) if (out / "calibration.parquet").exists() else None
    counted = 0
    counter = bar(None, "tables", "response", enabled=progress)

    def pieces() -> Iterator[pd.DataFrame]:
        nonlocal counted
        for piece in _parts(out):
            counted += len(piece)
            yield piece
            counter.update(len(piece))

    converted = convert.tables_in_parts(pieces(), errors="collect", calibration=own)
    try:
        written = io.write_tables_in_parts(converted, out / "tables")
    finally:
        counter.close()
    rows = {name: pq.read_metadata(path).num_rows for name, path in written.items()}
    step.done(
        f"{counted} responses: "
        + ", ".join(f"{name} {n}" for name, n in rows.items() if name != "problems")
        + f"; problems {rows.get('problems', 0)} (in {out / 'tables'})"
    )
    return rows


def _contract(out: Path, echo: Callable) -> pd.DataFrame:
    from dentalkit.contract import contract_report_in_parts, write_contract

    step = Stage("contract", echo, "comparing the answers with the endpoint registry")
    contract = contract_report_in_parts(_parts(out))
    write_contract(contract, out)
    n_drift = int((contract["verdict"] == "drift").sum())
    step.done(f"{n_drift} difference(s) from the registry; see {out / 'contract.md'}")
    return contract


def _analysis_tables(folder: Path) -> dict[str, pd.DataFrame]:
    """The tables the analyses read (every table of ``folder``, in the declared order)."""
    from dentalkit import io

    return io.read_tables(folder)


def _analysis_responses(out: Path) -> pd.DataFrame:
    """The rows of the store's responses that the analyses read, without the other bodies.

    The ``/tle`` answers, whole (treatment length reads their bodies), and the findings
    answers with each body replaced by its ``ImageName`` in an ``image_name`` column
    (prevalence needs to know which images were analysed, not what the bodies hold):
    :func:`dentalkit.study.analyze` gives the same results from this table as from the
    whole responses table, and it holds a few bytes per image instead of every body.
    """
    from dentalkit.endpoints import ENDPOINTS, Kind
    from dentalkit.findings._images import _image_name

    findings = {e.name for e in ENDPOINTS.values() if e.kind is Kind.FINDINGS}
    kept = []
    for piece in _parts(out):
        endpoint = piece["endpoint"].astype(object)
        keep = endpoint.isin([*findings, TLE_ENDPOINT]).to_numpy()
        piece = piece[keep]
        is_finding = endpoint[keep].isin(findings).to_numpy()
        bodies = piece["body"].to_numpy(object)
        names = [_image_name(b) if f else None for b, f in zip(bodies, is_finding, strict=True)]
        piece = piece.assign(image_name=pd.array(names, dtype=object))
        piece.loc[is_finding, "body"] = None
        kept.append(piece.reset_index(drop=True))
    return pd.concat(kept, ignore_index=True)


def _analyses(
    tables: dict,
    responses: pd.DataFrame,
    patients: pd.DataFrame | None,
    calibration: Calibration,
    design: Design,
    out: Path,
    echo: Callable,
) -> dict[str, pd.DataFrame]:
    step = Stage("analyses", echo, "ceph, arch, teeth, findings, treatment length")
    # collect: an analysis runs on the usable rows; the others are in analysis_problems
    analyses = analyze(
        tables, calibration, responses=responses, patients=patients, design=design,
        errors="collect",
    )  # fmt: skip
    note = _report.tle_note(analyses)
    if note:
        echo(note)
    write_analyses({k: v for k, v in analyses.items() if k not in NOT_WRITTEN}, out / "analyses")
    step.done(
        f"{len(analyses)} tables in {out / 'analyses'}; "
        + problems_summary(analyses["analysis_problems"])
        + " (in analysis_problems.parquet)"
    )
    return analyses


def run(
    manifest: pd.DataFrame | str | Path,
    *,
    patients: pd.DataFrame | str | Path | None = None,
    design: Design | str | Path | None = None,
    client: Any = None,
    echo: Callable[[str], None] | None = None,
    progress: bool = False,
    image_for: Callable[[str, str, str], Any] | None = None,
) -> StudyResult:
    """Run a whole study: fetch, tables, analyses, figures and ``report.md``.

    Parameters
    ----------
    manifest : DataFrame or path
        The cohort's manifest (``patient_id``, ``timestamp``, ``endpoint``,
        ``image_url`` …; docs/fetching.md); a CSV or Parquet file or a DataFrame.
    patients : DataFrame or path, optional
        The patients table: ``patient_id`` plus ``sex`` and ``birth_date`` (norms by sex
        and age), the design's group column, the ``/tle`` parameters (treatment length is
        estimated when it has them: docs/tle.md) and ``observed_months``.
    design : Design or path, optional
        The study design or its TOML file (:func:`dentalkit.study.read_design`);
        default :class:`Design` ().
    client : Client, optional
        The service's client; default ``dentalkit.Client()`` (``DENTALKIT_BASE_URL`` and
        ``DENTALKIT_API_KEY`` from the environment, as ``dentalkit fetch``).
    echo : callable, optional
        Where the stage lines go (the command line passes ``typer.echo``); default the
        ``dentalkit`` logger at INFO.
    progress : bool
        Show the progress bars (fetch, tables, figures).
    image_for : callable, optional
        ``image_for(kind, patient_id, timestamp)`` → an image to draw under tracings
        (default: blank canvases).

    Returns
    -------
    StudyResult
        Where everything is; ``stopped`` says when the fetch stopped the run (a rejected
        key or an unreachable service: nothing after the fetch was written).
    """
    t0 = time.perf_counter()
    design = _design(design)
    chosen = FIGURES if design.figures is None else _figures(design.figures)
    selected_analyses(design.analyses)  # a wrong name stops the run before anything is sent
    say = echo or log.info
    out = design.out
    out.mkdir(parents=True, exist_ok=True)
    records = read_patients(patients)
    seconds: dict[str, float] = {}
    clock = _Clock(seconds)
    from dentalkit.fetch._manifest import read_manifest

    table, typed, why = _with_tle_queries(read_manifest(manifest), records)
    if records is not None and typed is None:
        say(f"treatment length: not asked ({why})")
    own = client is None
    if own:
        from dentalkit.fetch.client import Client

        client = Client(heal_cache=True)
    from dentalkit.fetch.cohort import fetch_cohort

    try:
        with clock("fetch"):
            fetched = fetch_cohort(
                table, out=out, client=client, progress=progress, errors="collect"
            )
        say(f"fetch: {fetched.summary()}")
        if fetched.stopped:
            return StudyResult({"store": out}, fetched, seconds=seconds)
        with clock("treatment length"):
            curves = _sensitivity(typed, design, out, client, say)
    finally:
        if own:
            client.close()
    # the responses are read in pieces of whole patients at each stage, never every body
    # at once (a 10,000-patient study is 250,000 bodies)
    with clock("tables"):
        _tables(out, say, progress)
    with clock("contract"):
        contract = _contract(out, say)
    with clock("analyses"):
        tables = _analysis_tables(out / "tables")
        calibration = calibration_policy(design.mm_per_px, tables)
        responses = _analysis_responses(out)
        analyses = _analyses(tables, responses, records, calibration, design, out, say)
        del responses
    if curves is not None:
        analyses["tle_sensitivity"] = curves
    with clock("figures"):
        kinds = " and ".join(f.upper() for f in design.formats)
        step = Stage("figures", say, f"drawing {kinds} at {design.dpi} dpi")
        figures = make_figures(
            tables, analyses, out / "figures", mm_per_px=calibration, image_for=image_for,
            dpi=design.dpi, progress=progress, figures=chosen, formats=design.formats,
            width=design.width,
        )  # fmt: skip
        step.done(
            f"{len(figures)} in {out / 'figures'} ({kinds}, {design.width_text()}, "
            f"{design.dpi} dpi; captions in captions.md)"
        )
    with clock("report"):
        step = Stage("report", say, "writing report.md")
        path = _report.write_report(
            out / "report.md",
            title=design.title,
            intro=design.intro or _report.default_intro(tables, fetched),
            sections=_report.sections(tables, analyses, contract, design=design),
            figures=figures,
        )
        step.done(str(path))
    say(f"done in {time.perf_counter() - t0:.0f} s")
    notes = [n for n in (_report.px_arches_note(tables, analyses, design=design),) if n]
    return StudyResult(
        {
            "store": out,
            "tables": out / "tables",
            "analyses": out / "analyses",
            "figures": out / "figures",
            "report": path,
            "contract": out / "contract.md",
        },
        fetched,
        figures,
        analyses["analysis_problems"],
        notes,
        seconds,
    )


class _Clock:
    """``with clock("tables"):`` adds the block's wall time to ``seconds["tables"]``."""

    def __init__(self, seconds: dict[str, float]) -> None:
        self.seconds = seconds

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - t0


def _figures(names: tuple[str, ...]) -> tuple:
    """The figure specs the design names, in :data:`FIGURES` order."""
    from dentalkit.errors import InputError

    known = {f.name for f in FIGURES}
    unknown = [n for n in names if n not in known]
    if unknown:
        raise InputError(
            f"study design: unknown figure {', '.join(map(repr, unknown))}; the figures are "
            + ", ".join(f.name for f in FIGURES)
        )
    return tuple(f for f in FIGURES if f.name in names)
