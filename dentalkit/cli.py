"""Command line: ``dentalkit demo | study | sandbox | openapi | manifest | first-contact | fetch | verify | contract | tables | analyze | figures | export``.

The study as shell steps: ``manifest`` (images → manifest) → ``fetch`` (manifest → store) → ``tables`` (store → Parquet
tables) → ``analyze`` (tables → analysis tables) → ``figures`` (tables + analyses →
PDF/PNG) → ``export`` (CSV + data dictionary, optionally pseudonymized). ``study`` runs them
all for a user's cohort (:mod:`dentalkit.study`), ``demo`` the same on the sandbox's synthetic
cohort. The commands parse and print; the study's logic lives in :mod:`dentalkit.study`.
"""

from __future__ import annotations

import inspect
import json
import logging
import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Literal, NamedTuple

import typer

from dentalkit import settings
from dentalkit.endpoints import ENDPOINTS
from dentalkit.sandbox.ai_errors import MODES as AI_ERROR_MODES
from dentalkit.sandbox.drift import SCENARIOS

app = typer.Typer(
    help="dentalkit: tidy tables, measurements and figures from the Dental Image Analysis Service v2.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_show_locals=False,  # never print locals: they could hold a key
)


@contextmanager
def _plain_warnings() -> Iterator[None]:
    """dentalkit's warnings as ``warning: …`` lines on stderr while a command runs.

    Python shows a warning with the file, line and source line that raised it (for
    example ``cli.py:288: DentalkitWarning: … report = fetch_cohort(``): internals a
    terminal user cannot act on. Other warnings keep Python's form.
    """
    from dentalkit.errors import DentalkitWarning

    with warnings.catch_warnings():
        python_form = warnings.showwarning

        def show(message, category, filename, lineno, file=None, line=None):
            if issubclass(category, DentalkitWarning):
                typer.echo(f"warning: {message}", err=True)
            else:
                python_form(message, category, filename, lineno, file, line)

        warnings.showwarning = show
        yield


#: The Python API's advice in a fetch's log lines, as the command line says it. Each phrase
#: is one dentalkit's fetch code writes (a test checks that it still does).
CLI_WORDS = {
    "pass retry_failed=True to retry them": "rerun with --retry-failed to retry them",
}


def _cli_words(text: str) -> str:
    """``text`` with the Python API's advice replaced by the command line's options."""
    for python, cli in CLI_WORDS.items():
        text = text.replace(python, cli)
    return text


class _LogLine(logging.Formatter):
    """A log record as ``LEVEL logger: message``, the message in the command's words."""

    def __init__(self) -> None:
        super().__init__("%(levelname)s %(name)s: %(message)s")

    def formatMessage(self, record: logging.LogRecord) -> str:  # noqa: N802 (logging's name)
        return _cli_words(super().formatMessage(record))


def _not_a_fetch_stop(record: logging.LogRecord) -> bool:
    """False for the fetch's 'stopped sending requests' record (marked ``fetch_stop``)."""
    return getattr(record, "fetch_stop", None) is None


@contextmanager
def _log_lines(*, own_stop_line: bool = False) -> Iterator[None]:
    """Warnings and errors logged while a command runs, as lines on its stderr.

    Unlike ``logging.basicConfig``, the handler writes to the stderr of the running command
    and is removed when the command ends, so a later command in the same process (a test,
    a notebook) does not write to the first one's closed stream. ``own_stop_line``: the
    command prints its own ``error:`` line when a fetch stops (:func:`_stop_line`), so the
    fetch's log record saying the same is not shown too (Python users still get it).
    """
    root = logging.getLogger()
    handler = logging.StreamHandler(typer.get_text_stream("stderr"))
    handler.setLevel(logging.WARNING)
    handler.setFormatter(_LogLine())
    if own_stop_line:
        handler.addFilter(_not_a_fetch_stop)
    root.addHandler(handler)
    try:
        yield
    finally:
        root.removeHandler(handler)


@app.callback()
def _every_command(ctx: typer.Context) -> None:
    # runs before each command; the warning form is restored when the command ends
    ctx.with_resource(_plain_warnings())


#: Exit status of the study commands (``tables``, ``analyze``, ``figures``, ``export``,
#: ``verify``, ``contract``): 0 done; 1 done, but something is missing (problems, damaged
#: files, nothing to analyse or draw); 2 the command could not run (a wrong or empty
#: folder, a bad option: click's usage errors are 2 as well). ``fetch`` adds 3 and 4.
EXIT_OK, EXIT_INCOMPLETE, EXIT_USAGE = 0, 1, 2


class ErrorsMode(StrEnum):
    """What to do with a bad manifest row, a failed request or a malformed response."""

    collect = "collect"
    raise_ = "raise"


#: Choices built from the declarations, so that they cannot drift from them: a new
#: registry endpoint or sandbox drift scenario is a new choice without a CLI edit, and a
#: wrong value gets the framework's "Invalid value … is not one of …" message (exit 2).
EndpointName = StrEnum("EndpointName", {name: name for name in ENDPOINTS})
DriftScenario = StrEnum("DriftScenario", {name: name for name in (*SCENARIOS, "all")})
DRIFT_HELP = f"one of {', '.join(SCENARIOS)}, or all for every one; see docs/real-service.md"
AIErrorsMode = StrEnum("AIErrorsMode", {name: name for name in AI_ERROR_MODES})
#: The study's quality-control policies (``dentalkit.study.design.QC_POLICIES``, spelled
#: here so that the command line starts without importing the study).
QcPolicy = StrEnum("QcPolicy", {name: name for name in ("exclude", "flag", "ignore")})

#: The addresses ``dentalkit sandbox`` may bind: loopback only.
LoopbackHost = Literal["127.0.0.1", "localhost", "::1"]


class Calibration(NamedTuple):
    """One ``--mm-per-px ENDPOINT=MM_PER_PX`` value, parsed by the CLI framework."""

    endpoint: str
    mm_per_px: float


def _parse_mm_per_px(text: str) -> Calibration:
    """``ENDPOINT=MM_PER_PX`` → :class:`Calibration`; a wrong value is a usage error."""
    name, sep, value = text.partition("=")
    if not sep:
        raise typer.BadParameter(
            f"'{text}' is not of the form ENDPOINT=MM_PER_PX; write, for example, "
            "ceph_lateral_points=0.1."
        )
    if name not in ENDPOINTS:
        raise typer.BadParameter(
            f"'{name}' is not an endpoint name; the endpoints are {', '.join(ENDPOINTS)}."
        )
    try:
        number = float(value)
    except ValueError:
        number = math.nan
    if not (math.isfinite(number) and number > 0):
        raise typer.BadParameter(
            f"'{value}' for {name} is not a positive number of millimetres per pixel "
            "(for example 0.1)."
        )
    return Calibration(name, number)


def _one_value_per_endpoint(values: list[Calibration] | None) -> list[Calibration] | None:
    """Refuse two different calibrations of one endpoint (which one would be meant?)."""
    seen: dict[str, float] = {}
    for cal in values or []:
        if seen.setdefault(cal.endpoint, cal.mm_per_px) != cal.mm_per_px:
            raise typer.BadParameter(
                f"{cal.endpoint} is given twice, as {seen[cal.endpoint]:g} and "
                f"{cal.mm_per_px:g} mm per pixel; give each endpoint one value."
            )
    return values


def _fail(message: str, code: int = EXIT_USAGE) -> typer.Exit:
    """Print ``error: message`` on stderr; return the Exit to raise (``raise _fail(...)``)."""
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def _err(line: str) -> None:
    """Progress lines go to stderr, so that stdout holds only the results."""
    typer.echo(line, err=True)


def _service_url(base_url: str | None) -> str:
    """The service URL from --base-url, the settings or DENTALKIT_BASE_URL, or exit 2."""
    url = settings.service_url(base_url)
    if not url:
        raise _fail(
            f"no service URL: pass --base-url URL (it ends in /api/v2) or set "
            f"{settings.base_url_env}. To try dentalkit without the service, run "
            "`dentalkit demo`, or `dentalkit sandbox` and pass the URL it prints"
        )
    return url


#: Options shared by the commands that talk to a service (one declaration, one help text).
ServiceUrlOption = Annotated[
    str | None,
    typer.Option(help="Service URL ending in /api/v2 (default: DENTALKIT_BASE_URL)."),
]
CacheOption = Annotated[
    str | None,
    typer.Option(
        help="HTTP cache: .sqlite path, folder, redis:// URL or 'memory' (default: settings)."
    ),
]
TimestampFormatOption = Annotated[
    str | None,
    typer.Option(
        metavar="FORMAT",
        help="strptime format of the manifest's timestamps, e.g. '%d/%m/%Y' (default: ISO "
        "8601, or the format the store recorded). Timestamps are sent as written; the format "
        "reads session_time and is recorded in the store (docs/manifest.md).",
    ),
]


@app.command()
def sandbox(
    host: Annotated[
        LoopbackHost,
        typer.Option(help="Loopback address to bind (the sandbox serves loopback only)."),
    ] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=1, max=65535, help="Port to listen on.")] = 8765,
    noise: Annotated[bool, typer.Option(help="Add the simulator's measurement noise.")] = True,
    latency: Annotated[
        float, typer.Option(min=0.0, help="Seconds of simulated latency per request.")
    ] = 0.0,
    drift: Annotated[
        list[DriftScenario] | None,
        typer.Option(
            metavar="SCENARIO",
            help=f"Answer as a changed service could, by a drift scenario (repeatable): "
            f"{DRIFT_HELP}. Off by default.",
        ),
    ] = None,
    ai_errors: Annotated[
        AIErrorsMode,
        typer.Option(
            help="Answer with the errors an AI makes (landmarks off their structures, "
            "swapped tooth numbers, missed and phantom teeth, boxes added or dropped) at the "
            "declared rates of a mode, each recorded in /_sandbox/truth; see docs/qc.md.",
        ),
    ] = AIErrorsMode.off,
) -> None:
    """Serve the local sandbox of interface v2 (a simulator; it runs no AI model)."""
    from dentalkit.sandbox import SANDBOX_API_KEY, serve
    from dentalkit.sandbox.app import BANNER
    from dentalkit.sandbox.drift import check_scenarios

    scenarios = check_scenarios([d.value for d in drift] if drift else None)
    typer.echo(BANNER)
    if scenarios:
        typer.echo(f"drift mode: answering as a changed service ({', '.join(scenarios)})")
    if ai_errors.value != "off":
        typer.echo(f"AI error mode: {ai_errors.value} (every injected error is in the truth)")
    typer.echo(f"base URL: http://{host}:{port}/api/v2   sandbox key: {SANDBOX_API_KEY}")
    serve(
        host=host,
        port=port,
        noise=noise,
        faults={"latency": latency},
        drift=scenarios,
        ai_errors=ai_errors.value,
    )


def _server_url(value: str | None) -> str | None:
    """``--base-url`` of ``openapi``: https, or http to a loopback host, as the client needs.

    The document's servers entry is where a generated client will send the key, so the
    rule is the client's own (:func:`dentalkit.fetch._http.check_service_url`).
    """
    if value is None:
        return None
    from dentalkit.errors import ConfigurationError
    from dentalkit.fetch._http import check_service_url

    try:
        return check_service_url(value, what="server URL")
    except ConfigurationError as exc:
        raise typer.BadParameter(f"{exc}.") from None


@app.command()
def openapi(
    out: Annotated[Path | None, typer.Option(help="Write to this file instead of stdout.")] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            callback=_server_url,
            help="Server URL ending in /api/v2: https, or http to a loopback host (default: a "
            "{base_url} server variable whose default is the local sandbox).",
        ),
    ] = None,
    spec_only: Annotated[
        bool,
        typer.Option(
            help="Only what the spec shows: leave identifiers, ImageName and the /tle values "
            "open instead of constraining them to what dentalkit sends and the sandbox enforces."
        ),
    ] = False,
) -> None:
    """Print the OpenAPI 3.1 document generated from the endpoint registry.

    Usable as it is: its servers entry holds the given URL or a base_url variable, and the
    request constraints (non-empty identifiers, an http(s) ImageName, the /tle codes) are
    those the sandbox enforces, so that e.g. schemathesis run against the sandbox passes its
    positive-data check.
    """
    from dentalkit.openapi import openapi_document

    text = json.dumps(openapi_document(base_url, sandbox=not spec_only), indent=2)
    if out is None:
        typer.echo(text)
    else:
        out.write_text(text + "\n")
        typer.echo(f"wrote {out}")


def _key_value(text: str) -> tuple[str, object]:
    """``KEY=VALUE`` of --storage-option; VALUE read as JSON when it is JSON, else text."""
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise typer.BadParameter(f"'{text}' is not KEY=VALUE (e.g. endpoint_url=https://…)")
    try:
        return key, json.loads(value)
    except ValueError:
        return key, value


@app.command()
def manifest(
    source: Annotated[
        str, typer.Argument(help="Folder, or s3:// gs:// az:// prefix, of the images.")
    ],
    out: Annotated[
        Path, typer.Option(help="Manifest CSV to write; problems go to NAME-problems.csv.")
    ] = Path("manifest.csv"),
    pattern: Annotated[
        str | None,
        typer.Option(help="File names under SOURCE, e.g. '{patient_id}/{date}/{kind}.png'."),
    ] = None,
    mapping: Annotated[
        Path | None,
        typer.Option(dir_okay=False, help="CSV naming each file instead of a pattern."),
    ] = None,
    kind: Annotated[
        list[str] | None,
        typer.Option(metavar="KIND=ENDPOINT[,ENDPOINT]", help="Declare a kind (repeatable)."),
    ] = None,
    endpoint: Annotated[
        list[EndpointName] | None,
        typer.Option(metavar="ENDPOINT", help="Endpoint of every file when none names a kind."),
    ] = None,
    date_format: Annotated[
        str | None, typer.Option(help="strptime form of {date}, e.g. %d.%m.%Y (default ISO).")
    ] = None,
    ignore: Annotated[
        list[str] | None, typer.Option(metavar="GLOB", help="Files to skip (repeatable).")
    ] = None,
    upload: Annotated[
        str | None,
        typer.Option(metavar="URL", help="s3:// (gs://, az://) prefix to copy local images to."),
    ] = None,
    png_dir: Annotated[
        Path | None, typer.Option(help="Folder for the PNGs converted from DICOM files.")
    ] = None,
    lifetime: Annotated[
        str, typer.Option(help="Validity of the URLs, e.g. 7d, 36h (at most 7d on S3/GCS).")
    ] = "7d",
    secret_env: Annotated[
        str | None,
        typer.Option(help="Environment variable holding the pseudonymisation key (DICOM)."),
    ] = None,
    storage_option: Annotated[
        list[str] | None,
        typer.Option(metavar="KEY=VALUE", help="fsspec storage option (repeatable)."),
    ] = None,
    errors: Annotated[
        ErrorsMode,
        typer.Option(help="Collect: build the rest and list what is left out (exit 1)."),
    ] = ErrorsMode.collect,
) -> None:
    """Build a fetch manifest from a folder or an object-store prefix of images.

    Object-store images get presigned HTTPS URLs of the stated lifetime (refused when
    shorter than the fetch will need); local images need --upload. DICOM files are
    converted to PNG (--png-dir), calibrated from their pixel spacing and pseudonymised
    (--secret-env). Every file left out is listed with why. Exit status: 0 done; 1 some
    files left out; 2 nothing built. See docs/images.md.
    """
    import os

    from dentalkit.errors import DentalkitError

    secret = None
    if secret_env is not None:
        secret = os.environ.get(secret_env)
        if not secret:
            raise _fail(f"environment variable {secret_env} is not set or empty")
    kinds = {}
    for item in kind or []:
        name, sep, eps = item.partition("=")
        if not sep:
            raise _fail(f"--kind {item!r} is not KIND=ENDPOINT[,ENDPOINT]")
        kinds[name] = eps
    try:
        options = dict(_key_value(t) for t in storage_option or [])
        from dentalkit.images import build_manifest

        built = build_manifest(
            source,
            pattern=pattern,
            mapping=mapping,
            kinds=kinds or None,
            endpoints=[e.value for e in endpoint] if endpoint else None,
            date_format=date_format,
            ignore=ignore or (),
            upload_to=upload,
            png_dir=png_dir,
            lifetime=lifetime,
            secret=secret,
            storage_options=options,
            errors=errors.value,  # type: ignore[arg-type]
        )
        written = built.write(out)
    except (DentalkitError, typer.BadParameter) as exc:
        raise _fail(str(exc)) from None
    from dentalkit.images._lifetime import words

    m = built.manifest
    typer.echo(
        f"wrote {len(m)} rows ({m['image_url'].nunique()} images, {m['patient_id'].nunique()} "
        f"patients) to {out}; {built.uploaded} files uploaded"
    )
    typer.echo(
        f"URLs valid {words(built.lifetime)}, until {built.expires_at:%Y-%m-%d %H:%M} UTC "
        f"(the fetch needs about {words(built.required)}): fetch before then"
    )
    left = built.problems["severity"] == "error"
    if len(built.problems):
        _err(
            f"{int(left.sum())} file(s) left out, {int((~left).sum())} remark(s): see {written[-1]}"
        )
        for rec in built.problems.head(5).to_dict("records"):
            _err(f"  {rec['severity']}: {rec['path']}: {rec['reason']}")
    if left.any():
        raise typer.Exit(EXIT_INCOMPLETE)


@app.command()
def fetch(
    ctx: typer.Context,
    manifest: Annotated[
        Path, typer.Argument(help="CSV or Parquet manifest (patient_id, timestamp, image_url …).")
    ],
    out: Annotated[
        Path,
        typer.Option(
            help="Store folder: the responses go there, and the failures when there are any."
        ),
    ],
    endpoint: Annotated[
        list[EndpointName] | None,
        typer.Option(
            metavar="ENDPOINT",
            help="Endpoint for every row, by its registry name such as ceph_lateral_points "
            "(repeatable; a wrong name lists them all); omit when the manifest has an "
            "endpoint column.",
        ),
    ] = None,
    base_url: ServiceUrlOption = None,
    cache: CacheOption = None,
    workers: Annotated[
        int | None,
        typer.Option(min=1, max=64, help="Concurrent requests, 1 to 64 (default: settings)."),
    ] = None,
    retry_failed: Annotated[
        bool, typer.Option(help="Retry only the requests that failed before.")
    ] = False,
    errors: Annotated[
        ErrorsMode,
        typer.Option(
            help="Collect: skip bad rows and go on past failed requests, naming each (exit "
            "status 1). Raise: stop at the first one. The command collects by default; "
            "fetch_cohort in Python raises."
        ),
    ] = ErrorsMode.collect,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
    timestamp_format: TimestampFormatOption = None,
) -> None:
    """Fetch a cohort into OUT: cached, concurrent, resumable (rerun the same command to resume).

    The key is read from DENTALKIT_API_KEY only (never a command-line option: arguments show
    in process lists and shell history). Exit status: 0 when every request is stored; 1 when
    some rows are bad or some requests failed (see OUT/failures.parquet); 2 on a
    configuration or manifest error; 3 when the service rejected the API key (401: the run
    stops at the first one); 4 when the service could not be reached (the run stops when
    no request got through). Each failure is named in one line on the terminal.
    OUT/failures.parquet appears at the first failed request, OUT/manifest-problems.csv
    only when some manifest rows are bad.
    """
    from dentalkit.errors import (
        AuthError,
        ConfigurationError,
        DamagedFileError,
        DentalkitError,
        InputError,
        ManifestError,
        RedirectRefusedError,
        StoreLockedError,
        TransportError,
    )
    from dentalkit.fetch.client import Client
    from dentalkit.fetch.cohort import fetch_cohort

    ctx.with_resource(_log_lines(own_stop_line=True))
    client = None
    try:
        client = Client(
            _service_url(base_url), heal_cache=True, **({} if cache is None else {"cache": cache})
        )
        report = fetch_cohort(
            manifest,
            [e.value for e in endpoint] if endpoint else None,
            out,
            client=client,
            max_workers=workers,
            progress=progress,
            errors=errors.value,  # type: ignore[arg-type]
            retry_failed=retry_failed,
            timestamp_format=timestamp_format,
        )
    except ManifestError as exc:
        text = _manifest_error(exc, manifest)
        if exc.hint:  # fetch_cohort's advice (errors='collect'), in the command's words
            text += (
                "\nOr pass --errors collect to fetch the valid rows and list these in "
                f"{out / 'manifest-problems.csv'}"
            )
        typer.echo(f"error: {text}", err=True)
        raise typer.Exit(2) from None
    except (ConfigurationError, InputError, StoreLockedError, DamagedFileError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    except (AuthError, TransportError) as exc:  # errors=raise: the first failure stops the run
        if isinstance(exc, RedirectRefusedError):  # an answer, not an unreachable service
            typer.echo(_first_failure_line(exc, _failures_file(out)), err=True)
            raise typer.Exit(1) from None
        why = "auth" if isinstance(exc, AuthError) else "unreachable"
        where = client.base_url if client else base_url
        typer.echo(_stop_line(why, where, str(exc), _failures_file(out)), err=True)
        raise typer.Exit(FETCH_EXIT[why]) from None
    except DentalkitError as exc:  # errors=raise: any other failure, in one line
        typer.echo(_first_failure_line(exc, _failures_file(out)), err=True)
        raise typer.Exit(1) from None
    _echo_fetch_outcome(report, out, client.base_url)
    if report.stopped:
        raise typer.Exit(FETCH_EXIT[report.stopped])
    if len(report.problems) or report.failed or report.skipped_failed:
        raise typer.Exit(1)


def _echo_fetch_outcome(report, out: Path, base_url: str | None, *, summary: bool = True) -> None:
    """After a fetch: its summary, stop line, quarantined files, bad manifest rows (written
    to OUT/manifest-problems.csv) and failures, each in one line."""
    from dentalkit import io

    if summary:
        typer.echo(report.summary())
    if report.stopped:
        line = _stop_line(report.stopped, base_url, report.stop_reason, _failures_file(out))
        typer.echo(line, err=True)
    for rec in report.quarantined.to_dict("records"):
        typer.echo(f"damaged {rec['kind']} {rec['file']} moved to {rec['moved_to']}")
    if len(report.problems):
        path = io.write_problems_csv(
            report.problems, out / "manifest-problems.csv", "manifest-problems"
        )
        typer.echo(
            f"{report.bad_rows} bad manifest row(s) skipped; their {len(report.problems)} "
            f"problem(s) are listed in {path} (its row "
            "counts the manifest's data rows from 1: CSV line = row + 1)"
        )
    if (report.failed or report.skipped_failed) and not report.stopped:  # the stop line says it
        typer.echo(f"failures are listed in {out / 'failures.parquet'}; retry with --retry-failed")
    if report.failed and not report.stopped:
        _echo_failure_reasons(report.failures)


#: Exit status of ``dentalkit fetch`` (and ``first-contact``) when the run stopped early.
FETCH_EXIT = {"auth": 3, "unreachable": 4}


def _origin(base_url: str | None) -> str:
    from urllib.parse import urlsplit

    if not base_url:
        return "the configured service"
    parts = urlsplit(base_url)
    return f"{parts.scheme}://{parts.netloc}" if parts.netloc else base_url


def _failures_file(out: Path) -> Path | None:
    """``OUT/failures.parquet`` when the run left one (it appears at the first failure)."""
    path = out / "failures.parquet"
    return path if path.exists() else None


def _resume(why: str, failures: Path | None, *, retry_option: bool = True) -> str:
    """Where a stopped fetch's failures are listed and how to resume it, in the terminal's
    words: a rerun sends what is not stored yet; a 401 is sent again by it (the key's
    fault, not the request's), any other failure only with ``--retry-failed``."""
    listed = f"the failed requests are listed in {failures}; " if failures else ""
    if why == "auth":
        return (
            f"{listed}rerun the same command to resume once the key is fixed (the rejected "
            "requests are sent again)"
        )
    if not retry_option:
        return f"{listed}rerun the same command to resume"
    return (
        f"{listed}rerun the same command to resume (stored answers are not sent again), "
        "adding --retry-failed to resend the failed requests"
    )


def _stop_line(
    why: str,
    base_url: str | None,
    reason: str | None,
    failures: Path | None = None,
    *,
    retry_option: bool = True,
) -> str:
    """One line that names why a fetch stopped (never the key), where its failures are
    listed and how to resume. ``retry_option``: the command has ``--retry-failed``."""
    where = _origin(base_url)
    if why == "auth":
        return (
            f"error: the service at {where} rejected the API key (HTTP 401 Unauthorized): set "
            "DENTALKIT_API_KEY to a valid key for this service (a sandbox key only works "
            f"against the sandbox); nothing else was sent; {_resume(why, failures)} [exit 3]"
        )
    from dentalkit.fetch._schedule import is_tls_failure, plain_reason

    resume = _resume(why, failures, retry_option=retry_option)
    if is_tls_failure(reason or ""):
        return (
            f"error: the service at {where} could not be trusted "
            f"({_short(plain_reason(reason or ''))}): check the base URL (--base-url or "
            "DENTALKIT_BASE_URL); if the service's certificate is signed by a private CA (an "
            "institution's own, or its proxy's), set REQUESTS_CA_BUNDLE to that CA's bundle "
            f"file (PEM); {resume} [exit 4]"
        )
    return (
        f"error: cannot reach the service at {where} ({_short(plain_reason(reason or ''))}): "
        f"check the base URL (--base-url or DENTALKIT_BASE_URL), the network and the proxy; "
        f"{resume} [exit 4]"
    )


def _failure_words(exc: Exception) -> str:
    """The failed request (endpoint name, method and path, patient) and its error in plain
    words: ``classifier (POST /classifier) for patient 'W00': the service answered HTTP 502
    (Bad Gateway: …)``."""
    from dentalkit.errors import ApiError, RateLimitedError, ResponseFormatError
    from dentalkit.fetch._schedule import plain_reason

    if isinstance(exc, ApiError | ResponseFormatError) and exc.endpoint:
        who = f" for patient {exc.patient_id!r}" if exc.patient_id is not None else ""
        if isinstance(exc, ApiError):
            said = ": ".join(x for x in (exc.error, exc.message) if x) or _short(exc.body, 80)
            what = f"the service answered HTTP {exc.status}" + (f" ({said})" if said else "")
            if isinstance(exc, RateLimitedError):
                what += " after every retry; lower --workers"
        else:
            what = f"the answer could not be read: {exc.reason}"
        from dentalkit.endpoints import ENDPOINTS

        names = [n for n, ep in ENDPOINTS.items() if ep.path == exc.endpoint]
        ep = ENDPOINTS[names[0]] if len(names) == 1 else None
        where = f"{names[0]} ({ep.method} {ep.path})" if ep else exc.endpoint
        return f"{where}{who}: {what}"
    return _short(plain_reason(str(exc)), 300)


def _first_failure_line(exc: Exception, failures: Path | None) -> str:
    """``--errors raise``: the one line for a first failure that is neither a rejected key
    nor an unreachable service: what failed, where it is listed, how to resume."""
    return (
        "error: the run stopped at its first failure (--errors raise): "
        f"{_failure_words(exc)}; {_resume('other', failures)}, or pass --errors collect to "
        "fetch past failures [exit 1]"
    )


def _short(text: str | None, limit: int = 160) -> str:
    text = " ".join((text or "no reason given").split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _manifest_row(row: int, manifest: Path | None) -> str:
    """``manifest row 3 (CSV line 4)``: the manifest's 1-based data row and, for a text
    file, its line (the header is line 1); docs/conventions.md, row numbers."""
    text = f"manifest row {row}"
    if manifest is not None and manifest.suffix.lower() in (".csv", ".txt", ".tsv"):
        text += f" ({manifest.suffix[1:].upper()} line {row + 1})"
    return text


def _manifest_error(exc, manifest: Path | None) -> str:
    """A :class:`~dentalkit.errors.ManifestError` in the terminal's words: each bad row as
    'manifest row 3 (CSV line 4): timestamp='2024-13-01': not a date'."""
    import pandas as pd

    problems = exc.problems
    lines = []
    for rec in problems.head(10).to_dict("records"):
        row, field, value = rec.get("row"), rec.get("field"), rec.get("value")
        parts = [
            "the manifest as a whole"
            if row is None or pd.isna(row)
            else _manifest_row(int(row), manifest)
        ]
        if isinstance(field, str) and field:
            given = value is not None and not pd.isna(value) and str(value) != ""
            parts.append(f"{field}={str(value)!r}" if given else field)
        parts.append(str(rec.get("reason")))
        lines.append("  " + ": ".join(parts))
    more = len(problems) - len(lines)
    return (
        f"the manifest has {len(problems)} problem(s); nothing was sent. Fix these rows:\n"
        + "\n".join(lines)
        + (f"\n  … and {more} more" if more > 0 else "")
    )


def _echo_failure_reasons(failures) -> None:
    """One line per kind of failure of this store: how many, which status, one reason."""
    if failures is None or not len(failures):
        return
    status = failures["status_code"].astype("object").where(failures["status_code"].notna())
    keys = failures["error_type"].astype(str) + status.map(
        lambda s: "" if s is None or s != s else f" (HTTP {int(s)})"
    )
    from dentalkit.fetch._schedule import plain_reason

    for kind, group in failures.groupby(keys.to_numpy(), sort=True):
        reason = plain_reason(str(group["error"].iloc[0]))  # no urllib3 reprs on the terminal
        typer.echo(f"{len(group)} failed: {kind}: {_short(reason)}")


@app.command("first-contact")
def first_contact(
    ctx: typer.Context,
    manifest: Annotated[
        Path,
        typer.Argument(
            help="Small CSV/Parquet manifest of your images with an endpoint column (the "
            "first valid row of each endpoint is sent; /tle rows carry p01 … p11)."
        ),
    ],
    out: Annotated[
        Path, typer.Option(help="Store folder; contract.md and contract.parquet go here.")
    ],
    base_url: ServiceUrlOption = None,
    cache: CacheOption = None,
    yes: Annotated[
        bool, typer.Option("--yes", "-y", help="Send without asking (scripts, CI).")
    ] = False,
    timestamp_format: TimestampFormatOption = None,
) -> None:
    """First contact with a service: one request per endpoint, then the contract report.

    Prints what it will cost (requests not yet in OUT) and asks before sending (--yes skips
    the question). The answers are stored in OUT like any fetch, and OUT/contract.md lists,
    per endpoint, how the service's answers differ from the registry. Exit status as for
    dentalkit fetch (0 sent or nothing to send, 1 some failed, 2 configuration or
    manifest error, 3 key rejected, 4 service unreachable); 0 when you answer no.
    """
    from dentalkit.contract import contract_report, write_contract
    from dentalkit.errors import ConfigurationError, InputError, ManifestError
    from dentalkit.fetch.client import Client
    from dentalkit.fetch.cohort import fetch_cohort, first_contact_plan
    from dentalkit.fetch.store import read_responses

    ctx.with_resource(_log_lines(own_stop_line=True))
    try:
        client = Client(_service_url(base_url), **({} if cache is None else {"cache": cache}))
        plan = first_contact_plan(manifest, timestamp_format=timestamp_format)
        stored: set[str] = set()
        if (out / "_dentalkit.json").exists():
            stored = set(read_responses(out)["request_key"])
    except ManifestError as exc:
        typer.echo(f"error: {_manifest_error(exc, manifest)}", err=True)
        raise typer.Exit(2) from None
    except (ConfigurationError, InputError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    if plan.manifest.empty:
        typer.echo("error: the manifest has no valid row for any endpoint", err=True)
        raise typer.Exit(2)
    cost = sum(k not in stored for k in plan.request_keys)
    endpoints = ", ".join(plan.manifest["endpoint"])
    typer.echo(
        f"first contact with {_origin(client.base_url)}: one request per endpoint ({endpoints})"
    )
    if plan.missing:
        typer.echo(f"not contacted (no valid manifest row): {', '.join(plan.missing)}")
    if len(plan.problems):
        typer.echo(f"{plan.problems['row'].nunique()} bad manifest row(s) were not chosen")
    typer.echo(
        f"cost: {cost} request(s) to send"
        + (
            f" ({len(plan.request_keys) - cost} already stored in {out})"
            if cost < len(plan.request_keys)
            else ""
        )
        + "; the service may bill every request"
    )
    if cost and not yes and not typer.confirm("Send them?", default=False):
        typer.echo("nothing sent")
        return
    try:
        report = fetch_cohort(
            plan.manifest,
            out=out,
            client=client,
            progress=False,
            errors="collect",
            timestamp_format=timestamp_format,
        )
    except (ConfigurationError, InputError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(report.summary())
    contract = contract_report(read_responses(out)) if (out / "_dentalkit.json").exists() else None
    if contract is not None:
        paths = write_contract(contract, out)
        _echo_contract(contract)
        typer.echo(f"contract report: {paths['markdown']} ({paths['parquet'].name})")
    if report.stopped:
        line = _stop_line(
            report.stopped,
            client.base_url,
            report.stop_reason,
            _failures_file(out),
            retry_option=False,  # first-contact has no --retry-failed
        )
        typer.echo(line, err=True)
        raise typer.Exit(FETCH_EXIT[report.stopped])
    if report.failed:
        _echo_failure_reasons(report.failures)
        raise typer.Exit(1)


@app.command()
def contract(
    store: Annotated[Path, typer.Argument(help="Store folder written by `dentalkit fetch`.")],
    out: Annotated[Path, typer.Option(help="Folder for contract.md and contract.parquet.")],
    tmj_phrases: Annotated[
        list[Path] | None,
        typer.Option(
            metavar="CSV",
            exists=True,
            dir_okay=False,
            help="Extra TMJ phrases CSV (repeatable), added to the shipped phrases.",
        ),
    ] = None,
) -> None:
    """Report what the service sent against the endpoint registry, per endpoint.

    Versions, fields missing / extra / of another type, unknown labels, unrecognised TMJ
    sentences, TimeStamp formats, output-link hosts and lifetimes (docs/real-service.md).
    Writes OUT/contract.md and OUT/contract.parquet. Exit status 0 (also when differences
    were found: they are listed), 2 when the store cannot be read.
    """
    from dentalkit.contract import contract_report, write_contract
    from dentalkit.errors import DentalkitError
    from dentalkit.fetch.store import read_responses

    try:
        report = contract_report(read_responses(store), tmj_phrases=tmj_phrases or None)
    except DentalkitError as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    paths = write_contract(report, out)
    _echo_contract(report)
    typer.echo(f"wrote {paths['markdown']} and {paths['parquet']}")


def _echo_contract(report) -> None:
    """One line per endpoint: responses, patients, versions, drift rows."""
    for ep, group in report.groupby("endpoint", sort=False):
        base = group[group["aspect"] == "responses"]
        versions = ", ".join(group.loc[group["aspect"] == "version", "item"]) or "no Version"
        drift = int((group["verdict"] == "drift").sum())
        typer.echo(
            f"{ep:26s} {int(base['n_responses'].sum()):7d} responses "
            f"{int(base['n_patients'].sum()):6d} patients  {versions}; {drift} drift"
        )


@app.command()
def verify(
    store: Annotated[Path, typer.Argument(help="Store folder written by `dentalkit fetch`.")],
    cache: Annotated[
        str | None,
        typer.Option(help="Also check this HTTP cache (.sqlite file or cache folder)."),
    ] = None,
) -> None:
    """Check every file of a store (and an HTTP cache) without fetching or changing anything.

    Reads back the store marker, every responses part (page checksums and each row's body
    and key digests) and the failures table (and with --cache every cached answer and its
    checksum), creating no file. Exit status 0 when all can be read, 1 when some cannot
    (run the same `dentalkit fetch` again, with the same --cache: it moves damaged files
    aside into STORE/_quarantine, deletes damaged cache entries and sends their requests
    again), 2 when STORE is not a store.
    """
    import pandas as pd

    from dentalkit.errors import InputError
    from dentalkit.fetch.store import verify_store

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
        with_cache = f" --cache {cache}" if cache else ""
        typer.echo(
            f"to repair: run the same `dentalkit fetch … --out {store}{with_cache}` again "
            "(damaged files are moved aside, never deleted, and their requests sent again; "
            "damaged cache entries are deleted)"
        )
        raise typer.Exit(1)


@app.command()
def tables(
    store: Annotated[Path, typer.Argument(help="Store folder written by `dentalkit fetch`.")],
    out: Annotated[
        Path, typer.Option(help="Folder for the tables (Parquet; teeth as GeoParquet).")
    ],
    errors: Annotated[
        ErrorsMode,
        typer.Option(
            help="Collect malformed responses into problems.parquet, or stop (raise) at the "
            "first one."
        ),
    ] = ErrorsMode.collect,
    progress: Annotated[
        bool, typer.Option(help="Show a progress bar of the responses converted.")
    ] = True,
    timestamp_format: Annotated[
        str | None,
        typer.Option(
            metavar="FORMAT",
            help="strptime format that session_time is read with, e.g. '%d/%m/%Y' (default: "
            "the one the fetch recorded in STORE, else ISO 8601).",
        ),
    ] = None,
) -> None:
    """Convert stored responses into tidy tables (one Parquet file per table).

    Writes every table of the data contract plus problems.parquet (and calibration.parquet
    when the manifests gave mm_per_px); malformed responses are listed there (--errors
    collect) or stop the run with the JSON path at fault (--errors raise). Exit status 0 when done, 1 when there are problems, 2 when STORE is not a
    store written by dentalkit fetch, holds no responses yet or cannot be read.
    """
    from dentalkit import convert, io
    from dentalkit._progress import Stage
    from dentalkit.errors import DentalkitError, ResponseFormatError
    from dentalkit.fetch import read_calibration
    from dentalkit.fetch.store import read_responses

    try:
        responses = read_responses(store)
        if not len(responses):
            raise _fail(
                f"the store {store} holds no responses yet (nothing was fetched into it): "
                f"run `dentalkit fetch MANIFEST --out {store}` first; nothing was written"
            )
        with Stage("tables", _err, f"converting {len(responses):,} responses from {store}") as st:
            result = convert.tables(
                responses,
                errors=errors.value,
                progress=progress,
                timestamp_format=timestamp_format,
                calibration=read_calibration(store)
                if (store / "calibration.parquet").exists()
                else None,
            )
            st.result = f"{len(result)} tables, {len(result['problems'])} problem(s)"
    except ResponseFormatError as exc:  # --errors raise: in the terminal's words
        raise _fail(
            f"malformed response ({exc.endpoint or 'endpoint unknown'}, patient "
            f"{exc.patient_id or 'unknown'}, session {exc.timestamp or 'unknown'}; responses "
            f"row {exc.row}, 0-based position in the store) at {exc.path}: {exc.reason}. "
            "Run with --errors collect to convert the rest and list it in problems.parquet"
        ) from None
    except DentalkitError as exc:
        raise _fail(str(exc)) from None
    with Stage("tables", _err, f"writing {len(result)} Parquet files to {out}") as st:
        st.result = "written"
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


def _calibration(values: list[Calibration] | None) -> dict[str, float]:
    """The parsed ``--mm-per-px`` values as the study's endpoint fallback, endpoint → mm
    per px (:class:`dentalkit.study.Calibration` adds each image's own value first)."""
    return {cal.endpoint: cal.mm_per_px for cal in values or []}


def _read_tables_or_fail(folder: Path) -> dict:
    """The contract tables of ``folder`` (written by ``dentalkit tables``), or exit 2."""
    from dentalkit import io

    if not folder.is_dir():
        raise _fail(f"{folder} is not a folder; run `dentalkit tables STORE --out {folder}` first")
    tables = io.read_tables(folder)
    if not tables:
        raise _fail(
            f"{folder} holds no tables written by dentalkit tables (no landmarks.parquet, "
            f"teeth.parquet, …): run `dentalkit tables STORE --out {folder}` first"
        )
    return tables


#: ``--mm-per-px`` of ``analyze`` and ``figures``: parsed and checked by the framework.
QcOption = Annotated[
    QcPolicy | None,
    typer.Option(
        help="Pre-specified quality-control policy for the AI's answers: exclude (leave the "
        "rows of flagged items out, list each, and report the main results with and without "
        "them), flag (keep and list the flagged items) or ignore (default: the study "
        "file's, else exclude; docs/qc.md).",
    ),
]
MmPerPxOption = Annotated[
    list[Calibration] | None,
    typer.Option(
        metavar="ENDPOINT=MM_PER_PX",
        parser=_parse_mm_per_px,
        callback=_one_value_per_endpoint,
        help="Calibration of an endpoint's images in millimetres per pixel, for example "
        "ceph_lateral_points=0.1 (repeatable); endpoints without one stay in pixels.",
    ),
]


@app.command()
def analyze(
    tables_dir: Annotated[Path, typer.Argument(help="Folder written by `dentalkit tables`.")],
    out: Annotated[Path, typer.Option(help="Folder for the analysis tables (Parquet).")],
    mm_per_px: MmPerPxOption = None,
    store: Annotated[
        Path | None,
        typer.Option(help="Store folder: lists the analysed images (findings denominators)."),
    ] = None,
    patients: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="Patient table (CSV or Parquet): patient_id, sex and birth_date (or age); "
            "z-scores then use the norm of each patient's sex and age.",
        ),
    ] = None,
    errors: Annotated[
        ErrorsMode,
        typer.Option(
            help="Collect: analyse the usable rows and list the rest in "
            "analysis_problems.parquet (exit status 1). Raise: stop and name every bad row, "
            "writing nothing. The command collects by default; dentalkit.study.analyze in "
            "Python raises."
        ),
    ] = ErrorsMode.collect,
    qc: QcOption = None,
) -> None:
    """Run every cohort analysis the tables allow (ceph, arch, teeth, findings, treatment length).

    Writes one Parquet file per analysis table (docs/columns.md lists them), and
    analysis_problems.parquet: the rows each analysis could not use (0 rows when none).
    The AI's answers are quality-checked first (qc.parquet, qc_summary.parquet; --qc sets
    the policy, docs/qc.md).
    Millimetres only with --mm-per-px or an image's own mm_per_px (TABLES_DIR's calibration
    table); nothing is guessed. Treatment-length estimates need --store (the /tle answers)
    and --patients with the /tle parameters (docs/tle.md). Without --patients, norms given
    by sex or age give no z-score (the norm_note column says why). Exit status 0 when done,
    1 when some rows could not be analysed (see analysis_problems.parquet) or the tables
    allow no analysis (they have no rows), 2 when TABLES_DIR holds no tables written by
    dentalkit tables, an input cannot be read, or --errors raise met a bad row. An analysis
    the cohort is too small for (one group, a group of one patient, one session) does not
    change the exit status: its row in analysis_problems.parquet says why.
    """
    from dentalkit import study
    from dentalkit._progress import Stage
    from dentalkit.errors import DentalkitError
    from dentalkit.fetch.store import read_responses
    from dentalkit.study.report import problems_line, px_arches_note, tle_note

    cal = _calibration(mm_per_px)
    try:
        tables = _read_tables_or_fail(tables_dir)
        responses = read_responses(store) if store is not None else None
        record = study.read_patients(patients)
        with Stage("analyses", _err, "ceph, arch, teeth, findings") as step:
            analyses = study.analyze(
                tables, cal or None, responses=responses, patients=record,
                qc=None if qc is None else qc.value, errors=errors.value,
            )  # fmt: skip
            step.result = f"{len(analyses)} analysis tables"
    except (DentalkitError, FileNotFoundError) as exc:
        text = str(exc)
        if text.endswith(study.ANALYZE_HINT):  # --errors raise: in the terminal's words
            head, _, rows = text[: -len(study.ANALYZE_HINT)].partition("\n")
            head = head.replace("dentalkit.study.analyze met", "the analyses met", 1)
            head = head.replace("nothing was returned", "nothing was written", 1)
            text = (
                f"{head}\n{rows}Fix these rows, or run with --errors collect to analyse the "
                "other rows and list these in analysis_problems.parquet"
            )
        raise _fail(text) from None
    problems = analyses.get("analysis_problems")
    if not any(name != "analysis_problems" for name in analyses):
        raise _fail(
            f"the tables in {tables_dir} have no rows to analyse; nothing was written",
            EXIT_INCOMPLETE,
        )
    study.write_analyses(analyses, out)
    _echo_counts(analyses, f"analysis tables to {out}")
    # the arches left in pixels (endpoint without --mm-per-px), in the report's one line
    px_note = px_arches_note(tables, analyses)
    if problems is not None:
        typer.echo(problems_line(problems, out))
    for note in (tle_note(analyses), px_note):
        if note:
            typer.echo(f"note: {note.replace('`', '')}")  # Markdown code marks off
    if study.left_out(problems):  # analyses that cannot run on this cohort only say why
        raise typer.Exit(EXIT_INCOMPLETE)


#: ``--width`` of the figure commands: a journal width name or millimetres.
WidthOption = Annotated[
    str | None,
    typer.Option(
        metavar="WIDTH",
        help="One width for every figure: single (85 mm), double (180 mm) or millimetres "
        "(default: each figure's declared width, the panoramic tooth map double).",
    ),
]
#: ``--format`` of the figure commands (repeatable).
FormatOption = Annotated[
    list[str] | None,
    typer.Option(
        "--format",
        metavar="FORMAT",
        help="File format of the figures, repeatable: pdf, svg, png, tiff (TIFF at --dpi for "
        "journals that ask for it). Default: pdf and png.",
    ),
]


def _width(value: str | None) -> str | float | None:
    """``--width``: ``single``, ``double`` or a number of millimetres (checked later)."""
    if value is None:
        return None
    try:
        return float(value)
    except ValueError:
        return value


@app.command()
def figures(
    tables_dir: Annotated[Path, typer.Argument(help="Folder written by `dentalkit tables`.")],
    analyses_dir: Annotated[Path, typer.Argument(help="Folder written by `dentalkit analyze`.")],
    out: Annotated[Path, typer.Option(help="Folder for the figures and captions.md.")],
    mm_per_px: MmPerPxOption = None,
    dpi: Annotated[
        int,
        typer.Option(
            min=300,
            max=1200,
            help="Resolution of PNG and TIFF files (and images in PDF and SVG files).",
        ),
    ] = 600,
    width: WidthOption = None,
    fmt: FormatOption = None,
    progress: Annotated[bool, typer.Option(help="Show a progress bar.")] = True,
) -> None:
    """Draw the standard figure set (PDF + PNG unless --format says otherwise) on blank
    canvases, with captions.md beside them (each figure's caption, ready to paste).

    Exit status 0 when done, 1 when no figure could be drawn (the tables and analyses
    have no rows to show), 2 when TABLES_DIR holds no tables written by dentalkit tables
    or ANALYSES_DIR no tables written by dentalkit analyze.
    """
    from dentalkit import study
    from dentalkit._progress import Stage
    from dentalkit.errors import DentalkitError, InputError

    cal = _calibration(mm_per_px)
    try:
        tables = _read_tables_or_fail(tables_dir)
        if not analyses_dir.is_dir():
            raise _fail(f"{analyses_dir} is not a folder; run dentalkit analyze first")
        analyses = study.read_analyses(analyses_dir)
    except (DentalkitError, FileNotFoundError) as exc:
        raise _fail(str(exc)) from None
    if not analyses:
        raise _fail(
            f"{analyses_dir} holds no analysis tables (no .parquet file): run "
            f"`dentalkit analyze {tables_dir} --out {analyses_dir}` first"
        )
    formats = tuple(fmt) if fmt else ("pdf", "png")
    kinds = " and ".join(f.upper().lstrip(".") for f in formats)
    try:
        with Stage("figures", _err, f"drawing {kinds} at {dpi} dpi") as step:
            written = study.make_figures(
                tables, analyses, out, mm_per_px=cal or None, dpi=dpi, progress=progress,
                formats=formats, width=_width(width),
            )  # fmt: skip
            step.result = f"{len(written)} drawn"
    except InputError as exc:  # a wrong --format or --width: nothing was drawn
        raise _fail(str(exc)) from None
    for name, paths in written.items():
        typer.echo(f"{name:28s} " + " ".join(p.name for p in paths))
    if not written:
        raise _fail(
            f"no figure could be drawn from {tables_dir} and {analyses_dir} (no rows to show)",
            EXIT_INCOMPLETE,
        )
    typer.echo(f"wrote {len(written)} figures to {out}")


@app.command()
def export(
    folders: Annotated[
        list[Path],
        typer.Argument(
            exists=True,
            file_okay=False,
            help="Folders of Parquet tables (from `tables` and/or `analyze`).",
        ),
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
        for folder in folders:  # the framework checked that each is a folder
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
        from dentalkit._progress import Stage

        with Stage("export", _err, f"writing {len(tables)} tables as CSV with their dictionary"):
            written = io.export(tables, out)
    except (DentalkitError, FileNotFoundError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None
    typer.echo(f"wrote {len(written)} files to {out}" + (" (pseudonymized)" if secret_env else ""))


#: Loopback port of ``dentalkit study --sandbox`` (the demo's is 8766): fixed, so that a
#: rerun on the same --out finds its store and cache (they belong to one service address).
STUDY_SANDBOX_PORT = 8767


@app.command()
def study(
    ctx: typer.Context,
    manifest: Annotated[
        Path,
        typer.Argument(
            exists=True,
            dir_okay=False,
            help="CSV or Parquet manifest (patient_id, timestamp, endpoint, image_url …).",
        ),
    ],
    patients: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="Patients table (CSV or Parquet): patient_id, sex and birth_date (norms by sex "
            "and age), the design's group column, the /tle parameters (treatment length) and "
            "observed_months.",
        ),
    ] = None,
    design: Annotated[
        Path | None,
        typer.Option(
            exists=True,
            dir_okay=False,
            help="Study file (TOML): groups, session rule, alpha, correction, analyses, "
            "figures, calibration, out (docs/study.md). Default: every default.",
        ),
    ] = None,
    out: Annotated[
        Path | None,
        typer.Option(help="Output folder (default: the study file's out, else dentalkit-study)."),
    ] = None,
    mm_per_px: MmPerPxOption = None,
    sandbox: Annotated[
        bool,
        typer.Option(
            "--sandbox",
            help="Ask the embedded sandbox instead of the service (a simulator that runs no AI "
            "model: its numbers test the pipeline, they are not clinical results).",
        ),
    ] = False,
    port: Annotated[
        int,
        typer.Option(
            min=0,
            max=65535,
            help="Loopback port of the sandbox with --sandbox (0 picks a free one; keep it for "
            "later runs on the same --out).",
        ),
    ] = STUDY_SANDBOX_PORT,
    base_url: ServiceUrlOption = None,
    cache: CacheOption = None,
    dpi: Annotated[
        int | None,
        typer.Option(min=300, max=1200, help="Figure resolution (default: the study file's)."),
    ] = None,
    figure: Annotated[
        list[str] | None,
        typer.Option(
            "--figure",
            metavar="NAME",
            help="Draw this figure (repeatable; default: the study file's, else every one the "
            "data allow). Names: dentalkit.study.FIGURES (docs/figures.md).",
        ),
    ] = None,
    width: WidthOption = None,
    fmt: FormatOption = None,
    qc: QcOption = None,
    progress: Annotated[bool, typer.Option(help="Show the progress bars.")] = True,
) -> None:
    """Run a whole study on your cohort: fetch, tables, analyses, figures, report.md.

    Against the service (DENTALKIT_BASE_URL, and DENTALKIT_API_KEY from the environment
    only, as dentalkit fetch) or, with --sandbox, the embedded sandbox. Resumable: rerun the
    same command and nothing stored is sent again; the later stages are rewritten. The
    report prints the design it ran with. Exit status 0 when done; 1 when done but some
    manifest rows were bad, some requests failed or some rows could not be analysed (each is
    listed); 2 when the study file, manifest or an option is wrong; 3 when the service
    rejected the API key; 4 when it could not be reached. An analysis the cohort is too small
    for (one group, a group of one patient, one session, an endpoint without answers) does
    not change the exit status: analysis_problems.parquet and the report say why.
    """
    from dentalkit import study as _study
    from dentalkit.errors import ConfigurationError, InputError, ManifestError, StoreLockedError
    from dentalkit.study.report import problems_line

    ctx.with_resource(_log_lines(own_stop_line=True))
    try:
        plan = _study.read_design(design) if design is not None else _study.Design()
        changes: dict = {"mm_per_px": {**plan.mm_per_px, **_calibration(mm_per_px)}}
        if out is not None:
            changes["out"] = out
        if dpi is not None:
            changes["dpi"] = dpi
        if figure:
            changes["figures"] = tuple(figure)
        if width is not None:
            changes["width"] = _width(width)
        if fmt:
            changes["formats"] = tuple(fmt)
        if qc is not None:
            changes["qc"] = qc.value
        plan = plan.with_(**changes)
        with _study_client(plan.out, sandbox, port, base_url, cache) as client:
            result = _study.run(
                manifest, patients=patients, design=plan, client=client, echo=typer.echo,
                progress=progress,
            )  # fmt: skip
    except ManifestError as exc:
        raise _fail(_manifest_error(exc, manifest)) from None
    except (ConfigurationError, InputError, StoreLockedError) as exc:
        raise _fail(str(exc)) from None
    fetched = result.fetch
    _echo_fetch_outcome(fetched, plan.out, client.base_url, summary=False)  # run printed it
    if result.stopped:
        raise typer.Exit(FETCH_EXIT[result.stopped])
    typer.echo(problems_line(result.analysis_problems, plan.out / "analyses"))
    for note in result.notes:
        typer.echo(f"note: {note.replace('`', '')}")  # Markdown code marks off
    typer.echo(f"report: {result.paths['report']}")
    if len(fetched.problems) or fetched.failed or fetched.skipped_failed or result.left_out:
        raise typer.Exit(EXIT_INCOMPLETE)


@contextmanager
def _study_client(out: Path, sandbox: bool, port: int, base_url, cache) -> Iterator:
    """The client of ``dentalkit study``: the embedded sandbox's, or the service's."""
    if sandbox:
        from dentalkit.study import sandbox_service

        with sandbox_service(out, port, typer.echo) as (_, client):
            yield client
        return
    from dentalkit.fetch.client import Client

    client = Client(
        _service_url(base_url), heal_cache=True, **({} if cache is None else {"cache": cache})
    )
    try:
        yield client
    finally:
        client.close()


@app.command()
def demo(
    ctx: typer.Context,
    patients: Annotated[
        int, typer.Option(min=1, max=100_000, help="Synthetic patients (two sessions each).")
    ] = 50,
    out: Annotated[Path, typer.Option(help="Output folder.")] = Path("dentalkit-demo"),
    port: Annotated[
        int,
        typer.Option(
            min=0, max=65535, help="Loopback port of the embedded sandbox (0 picks a free one)."
        ),
    ] = 8766,
    progress: Annotated[
        bool, typer.Option(help="Show the progress bars (fetch, tables and figures).")
    ] = True,
    dpi: Annotated[
        int,
        typer.Option(
            min=300, max=1200, help="Figure resolution (PNG and TIFF, images in PDF and SVG)."
        ),
    ] = 600,
    width: WidthOption = None,
    fmt: FormatOption = None,
    drift: Annotated[
        list[DriftScenario] | None,
        typer.Option(
            metavar="SCENARIO",
            help=f"Let the sandbox answer as a changed service could, by a drift scenario "
            f"(repeatable; use a fresh --out): {DRIFT_HELP}.",
        ),
    ] = None,
    qc: QcOption = None,
    ai_errors: Annotated[
        AIErrorsMode,
        typer.Option(
            help="Let the sandbox answer with the errors an AI makes, at the declared rates "
            "of a mode (use a fresh --out); the quality control finds and excludes them "
            "(docs/qc.md).",
        ),
    ] = AIErrorsMode.off,
) -> None:
    """Run a whole study on the embedded sandbox: fetch, tables, analyses, figures, report.

    The sandbox is a simulator of interface v2 (synthetic anatomy, no AI model). A second
    run finds every response already stored and redraws the outputs.
    """
    from dentalkit.errors import ConfigurationError, InputError
    from dentalkit.sandbox.drift import check_scenarios
    from dentalkit.study.demo import run_demo

    ctx.with_resource(_log_lines())
    scenarios = check_scenarios([d.value for d in drift] if drift else None)
    try:
        run_demo(
            patients=patients,
            out=out,
            echo=typer.echo,
            port=port,
            progress=progress,
            dpi=dpi,
            drift=scenarios,
            width=_width(width),
            formats=tuple(fmt) if fmt else ("pdf", "png"),
            qc=None if qc is None else qc.value,
            ai_errors=ai_errors.value,
        )
    except (ConfigurationError, InputError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(2) from None


def _numbers(text: str | None, what: str, kind: type = float) -> list | None:
    """``"0,1,2,3"`` → numbers; a wrong value is a usage error naming the option."""
    if text is None:
        return None
    try:
        values = [kind(v) for v in text.replace(" ", "").split(",") if v]
    except ValueError:
        raise typer.BadParameter(
            f"'{text}' is not a comma-separated list of numbers", param_hint=what
        ) from None
    if not values:
        raise typer.BadParameter(f"'{text}' gives no number", param_hint=what)
    return values


@app.command()
def plan(
    pilot: Annotated[
        Path | None,
        typer.Argument(
            help="Pilot study folder (written by dentalkit study, demo or analyze): its "
            "growth tables give the variance components. Leave out to give them as numbers."
        ),
    ] = None,
    measure: Annotated[
        str | None,
        typer.Option(help="The pilot's measure (e.g. SN_MP); needed when it has several."),
    ] = None,
    effect: Annotated[
        float,
        typer.Option(
            help="Difference in the rate of change to detect, in the measure's unit per year."
        ),
    ] = ...,
    n_per_group: Annotated[
        str | None,
        typer.Option(help="Patients per group (one number, or two as 12,15): prints the power."),
    ] = None,
    power: Annotated[
        float | None,
        typer.Option(
            min=0.0, max=1.0, help="Target power (e.g. 0.8): prints the patients per group."
        ),
    ] = None,
    times: Annotated[
        str, typer.Option(help="Planned session times in years, comma-separated.")
    ] = "0,1,2,3",
    alpha: Annotated[float, typer.Option(min=0.0, max=1.0, help="Two-sided level.")] = 0.05,
    n_sims: Annotated[int, typer.Option(min=1, help="Simulated studies.")] = 2000,
    seed: Annotated[int, typer.Option(help="Random seed (the same seed repeats the result).")] = 0,
    sd_intercept: Annotated[
        float | None, typer.Option(help="Between-patient SD of the level.")
    ] = None,
    sd_slope: Annotated[
        float | None, typer.Option(help="Between-patient SD of the yearly rate.")
    ] = None,
    correlation: Annotated[
        float, typer.Option(min=-1.0, max=1.0, help="Correlation of level and rate.")
    ] = 0.0,
    sd_residual: Annotated[float | None, typer.Option(help="Residual (within-patient) SD.")] = None,
    unit: Annotated[
        str | None, typer.Option(help="Unit of --effect with given SDs, e.g. deg/year.")
    ] = None,
) -> None:
    """Power of a planned two-group growth study, or the patients per group it needs.

    Simulates the study (dentalkit.stats.simulate_power) from a pilot's variance components:
    the growth tables of a pilot study folder, or --sd-intercept, --sd-slope, --correlation
    and --sd-residual. Give --n-per-group for the power, or --power for the patients per
    group; prints the Monte Carlo interval and the closed form of Diggle et al. (2002)
    beside it. See docs/statistics.md, Planning. Exit status 0 when done, 2 when the pilot
    or an option cannot be used.
    """
    from dentalkit.errors import DentalkitError
    from dentalkit.study import plan as plan_study
    from dentalkit.study import power_lines

    given = {"sd_intercept": sd_intercept, "sd_slope": sd_slope, "sd_residual": sd_residual}
    if pilot is None:
        missing = [f"--{k.replace('_', '-')}" for k, v in given.items() if v is None]
        if missing:
            raise _fail(
                f"give a pilot folder, or the variance components ({', '.join(missing)} missing)"
            )
        source: Path | dict = {**given, "correlation": correlation}
    elif any(v is not None for v in given.values()):
        raise _fail("give a pilot folder or the variance components, not both")
    else:
        source = pilot
    sizes = _numbers(n_per_group, "--n-per-group", int)
    if (sizes is None) == (power is None):
        raise _fail(
            "give --n-per-group (prints the power) or --power (prints the patients per group)"
        )
    try:
        result = plan_study(
            source,
            effect=effect,
            measure=measure,
            n_per_group=(sizes[0] if len(sizes) == 1 else sizes) if sizes else None,
            power=power,
            times=_numbers(times, "--times"),
            alpha=alpha,
            n_sims=n_sims,
            seed=seed,
            unit=unit,
        )
    except (DentalkitError, OSError) as exc:
        raise _fail(str(exc)) from None
    for line in power_lines(result):
        typer.echo(line)


def _help_as_sentences(typer_app: typer.Typer) -> None:
    """Command help as the terminal shows it: each paragraph one flowing text.

    The docstrings keep their source line breaks; the terminal re-wraps each paragraph to
    its width instead of breaking sentences where the source did.
    """
    for info in typer_app.registered_commands:
        doc = info.help or inspect.getdoc(info.callback) or ""
        info.help = "\n\n".join(" ".join(p.split()) for p in doc.split("\n\n"))


_help_as_sentences(app)


def main() -> None:
    """Entry point of the ``dentalkit`` console script."""
    app()


if __name__ == "__main__":
    main()
