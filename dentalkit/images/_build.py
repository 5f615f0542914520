"""The manifest builder: the user's images → the manifest ``dentalkit fetch`` reads.

:func:`build_manifest` runs these steps, one function each:

1. :func:`_open` — the source and the upload destination; refuse what cannot work
   (local images without an upload, DICOM without a PNG folder) before reading anything;
2. list the files and turn them into image rows by the pattern or the mapping
   (:mod:`dentalkit.images._match`); every other file is a problem row;
3. :func:`_endpoints` — each row's endpoints (its kind, its endpoint or ``endpoints=``);
4. :func:`~dentalkit.images._lifetime.check_lifetime` — the URLs will outlive the fetch;
5. :func:`_read_dicom` — DICOM files: Patient ID, date, calibration, PNG (pending name);
6. :func:`_pseudonymise` — keyed pseudonyms; an ID read from DICOM always needs the key;
7. :func:`_check_rows` — missing patient or date, duplicate sessions;
8. raise (``errors="raise"``) before anything is uploaded;
9. :func:`_publish` — upload (local files, PNGs) and presign;
10. the manifest: ``patient_id``, ``timestamp``, ``endpoint``, ``image_url`` (and
    ``mm_per_px``, ``calibration_source`` when any image has a calibration).
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from dentalkit._atomic import atomic_write
from dentalkit.endpoints import ENDPOINTS
from dentalkit.errors import (
    DentalkitWarning,
    Errors,
    InputError,
    check_errors,
    empty_problems,
    problems_error,
    problems_frame,
)
from dentalkit.images import _dicom
from dentalkit.images._kinds import _endpoint_names, resolve_kinds
from dentalkit.images._lifetime import DEFAULT_LIFETIME, check_lifetime, parse_lifetime
from dentalkit.images._match import Problems, drop_ignored, from_mapping, from_pattern
from dentalkit.images._stores import Location, check_https, open_location

__all__ = ["MANIFEST_COLUMNS", "ImageManifest", "build_manifest"]

#: Columns of a built manifest (the last two only when an image has a calibration).
MANIFEST_COLUMNS = (
    "patient_id",
    "timestamp",
    "endpoint",
    "image_url",
    "mm_per_px",
    "calibration_source",
)
_DICOM_SUFFIXES = (".dcm", ".dicom")
_SAFE = re.compile(r"[^A-Za-z0-9._-]+")
_READ_BATCH = 32
_MIN_LEAK_ID = 4  # shorter identifiers match unrelated URL text


@dataclass(frozen=True)
class ImageManifest:
    """A built manifest, its problems and how long its URLs stay valid.

    Attributes
    ----------
    manifest : pandas.DataFrame
        One row per image and endpoint: ``patient_id``, ``timestamp``, ``endpoint``,
        ``image_url`` (presigned HTTPS), and ``mm_per_px`` (float64), ``calibration_source``
        when any image has a calibration. ``dentalkit fetch`` reads it as it is.
    problems : pandas.DataFrame
        Every file left out (``severity`` error) or kept with a remark (warning), in the
        problems schema (docs/conventions.md); ``path`` is the file relative to the
        source, ``row`` its 1-based mapping row (null without a mapping).
    lifetime : datetime.timedelta
        Validity of the URLs from ``created_at``.
    required : datetime.timedelta
        The validity the fetch of this manifest needs (:func:`required_lifetime`).
    created_at : datetime.datetime
        When the URLs were signed (UTC); they expire at ``created_at + lifetime``.
    uploaded : int
        Files copied to the upload destination by this call (0: none, or all there).
    ignored : int
        Files skipped by ``ignore=`` globs.
    """

    manifest: pd.DataFrame
    problems: pd.DataFrame
    lifetime: timedelta
    required: timedelta
    created_at: datetime
    uploaded: int = 0
    ignored: int = 0
    files: int = field(default=0)

    @property
    def expires_at(self) -> datetime:
        """When the URLs stop working (UTC)."""
        return self.created_at + self.lifetime

    def write(self, path: str | os.PathLike) -> list[Path]:
        """Write the manifest as CSV (atomically) and, when there are problems, the problems
        beside it as ``<name>-problems.csv``; return the files written."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        written = [atomic_write(path, lambda tmp: self.manifest.to_csv(tmp, index=False))]
        side = path.with_name(f"{path.stem}-problems.csv")
        if len(self.problems):
            written.append(atomic_write(side, lambda tmp: self.problems.to_csv(tmp, index=False)))
        elif side.exists():
            side.unlink()  # a rerun without problems leaves no stale list behind
        return written


def build_manifest(
    source: str | os.PathLike,
    *,
    pattern: str | None = None,
    mapping: str | os.PathLike | pd.DataFrame | None = None,
    kinds: Mapping[str, str | Sequence[str]] | None = None,
    endpoints: str | Sequence[str] | None = None,
    date_format: str | None = None,
    ignore: Sequence[str] = (),
    upload_to: str | None = None,
    png_dir: str | os.PathLike | None = None,
    lifetime: float | timedelta | str = DEFAULT_LIFETIME,
    secret: str | bytes | None = None,
    storage_options: Mapping[str, Any] | None = None,
    errors: Errors = "raise",
) -> ImageManifest:
    """Build a fetch manifest from a folder or an object-store prefix of images.

    Each file is matched by ``pattern`` (``"{patient_id}/{date}/{kind}.png"``) or named
    by a ``mapping`` CSV; its kind says which endpoints it goes to. Images in an object
    store get presigned HTTPS URLs; local images are first copied to ``upload_to``. DICOM
    files (``.dcm``) are converted to PNG in ``png_dir``, calibrated from their pixel
    spacing, and their Patient ID replaced by its keyed pseudonym. The syntax, the kinds,
    the lifetime estimate and the DICOM tags are in docs/images.md.

    Parameters
    ----------
    source : str or os.PathLike
        A folder, or ``s3://bucket/prefix``, ``gs://…``, ``az://…``.
    pattern : str, optional
        File names relative to ``source``, with ``{patient_id}``, ``{date}``, ``{kind}``
        or ``{endpoint}``, ``{*}``, ``{**}``. Give this or ``mapping``.
    mapping : path or pandas.DataFrame, optional
        CSV with ``file`` and any of ``patient_id``, ``date`` (or ``timestamp``), ``kind``,
        ``endpoint``, ``mm_per_px``, ``calibration_source``.
    kinds : mapping, optional
        Extra or replaced kinds: ``{"ceph": "ceph_lateral_points"}`` (names or lists).
    endpoints : str or list of str, optional
        Endpoints for every file, when the pattern or mapping names no kind.
    date_format : str, optional
        ``strptime`` form of ``{date}`` (default: ISO ``YYYY-MM-DD`` or ``YYYYMMDD``).
    ignore : list of str
        Globs of files to skip (counted in ``ignored``), e.g. ``["*.txt", ".DS_Store"]``.
    upload_to : str, optional
        ``s3://bucket/prefix`` (or ``gs://``, ``az://``) to copy local images and PNGs to.
    png_dir : path, optional
        Folder for the PNGs converted from DICOM files (needed when there are any).
    lifetime : seconds, timedelta or str
        Validity of the URLs (default 7 days, the S3/GCS maximum); refused when shorter
        than :func:`required_lifetime` of the manifest.
    secret : str or bytes, optional
        Pseudonymisation key (≥ 32 bytes; read it from the environment). With it every
        ``patient_id`` is replaced by its pseudonym; DICOM files need it.
    storage_options : mapping, optional
        Passed to the fsspec filesystem (e.g. ``{"endpoint_url": "https://…"}``).
    errors : {"raise", "collect", "warn"}
        ``"raise"``: any file left out raises :class:`~dentalkit.errors.InputError` listing
        every problem, before anything is uploaded. ``"collect"``: the rest is built and
        ``problems`` lists them; ``"warn"`` also warns once. Remarks on kept files
        (severity warning) warn in ``"raise"`` and ``"warn"`` modes.

    Returns
    -------
    ImageManifest

    Raises
    ------
    InputError
        Bad arguments, an empty source, local images without ``upload_to``, a lifetime
        shorter than the fetch needs, and (``errors="raise"``) any file left out.
    ConfigurationError
        Missing store credentials, or a store whose URLs would be plain HTTP.
    MissingDependencyError
        The extra for the store or for DICOM is not installed.
    """
    errors = check_errors(errors, "dentalkit.images.build_manifest")
    life = parse_lifetime(lifetime)
    src, dest = _open(source, upload_to, storage_options)
    if (pattern is None) == (mapping is None):
        raise InputError(
            "give pattern= (e.g. '{patient_id}/{date}/{kind}.png') or mapping=, not both or neither"
        )
    table = resolve_kinds(kinds)
    fixed = _fixed_endpoints(endpoints)
    listed = src.list_files()
    if not listed:
        raise InputError(f"no files under {src.url}")
    files, ignored = drop_ignored(listed, ignore)
    problems = Problems()
    match = from_pattern if pattern is not None else from_mapping
    rows = match(
        files,
        pattern if pattern is not None else mapping,
        kinds=table,
        date_format=date_format,
        problems=problems,
    )
    rows = _endpoints(rows, table, fixed, pattern, problems)
    rows["dicom"] = rows["file"].str.lower().str.endswith(_DICOM_SUFFIXES)
    _refuse_unsendable(src, dest, rows, png_dir)
    need = check_lifetime(
        life, protocol=(dest or src).protocol, n_requests=int(rows["endpoints"].map(len).sum())
    )
    rows = _read_dicom(src, rows, png_dir, problems)
    rows = _pseudonymise(rows, secret, problems)
    rows = _check_rows(rows, problems)
    report = _problem_table(problems)
    _raise_or_warn(report, errors)
    created = datetime.now(UTC)
    images, uploaded = _publish(src, dest, rows, secret, png_dir, life, problems)
    report = _problem_table(problems)  # publishing may add problems (identifier in a URL)
    if errors == "raise" and (report["severity"] == "error").any():
        raise problems_error(report, "dentalkit.images.build_manifest left files out", _HINT)
    return ImageManifest(
        _manifest(images),
        report,
        life,
        need,
        created,
        uploaded=uploaded,
        ignored=ignored,
        files=len(listed),
    )


_HINT = (
    "Fix the files or the pattern/mapping (each file is named in path), --ignore files that "
    "are not images, or pass errors='collect' (the CLI's default) to build the rest"
)


def _open(source: Any, upload_to: Any, storage_options: Any) -> tuple[Location, Location | None]:
    src = open_location(source, storage_options)
    dest = open_location(upload_to, storage_options) if upload_to is not None else None
    if dest is not None and dest.is_local:
        raise InputError(
            f"upload_to={upload_to!r} is a local folder; the service downloads images from a "
            "URL, so upload to an object store: s3://bucket/prefix (or gs://, az://)"
        )
    return src, dest


def _fixed_endpoints(endpoints: Any) -> tuple[str, ...] | None:
    if endpoints is None:
        return None
    return _endpoint_names("endpoints=", endpoints)


def _endpoints(
    rows: pd.DataFrame,
    table: dict[str, tuple[str, ...]],
    fixed: tuple[str, ...] | None,
    pattern: str | None,
    problems: Problems,
) -> pd.DataFrame:
    """Each row's endpoints: its endpoint, else its kind's, else ``endpoints=``."""
    named = rows["endpoint"].notna() | rows["kind"].notna()
    if fixed is not None and named.any():
        raise InputError(
            "the pattern or mapping names a kind or endpoint and endpoints= is given too; use one"
        )
    out = []
    for rel, mrow, kind, endpoint in rows[["file", "mapping_row", "kind", "endpoint"]].itertuples(
        index=False
    ):
        eps = (endpoint,) if endpoint else table[kind] if kind else fixed
        if not eps:
            where = "mapping row" if pattern is None else "pattern"
            problems.file(
                rel,
                f"no endpoint: the {where} names no kind; add {{kind}} to the pattern, a kind "
                "column to the mapping, or give endpoints= (--endpoint)",
                mapping_row=mrow,
                field="kind",
            )
        out.append(eps or ())
    rows = rows.copy()
    rows["endpoints"] = out
    return rows[rows["endpoints"].map(len) > 0].reset_index(drop=True)


def _refuse_unsendable(
    src: Location, dest: Location | None, rows: pd.DataFrame, png_dir: Any
) -> None:
    """Local images need an upload; DICOM files a PNG folder and an upload."""
    has_dicom = bool(rows["dicom"].any())
    if src.is_local and dest is None:
        raise InputError(
            f"{src.url} is a local folder, and the service downloads each image from a full "
            "URL (ImageName), so local files cannot be sent as they are. Copy them to an "
            "object store and presign them: --upload s3://BUCKET/PREFIX (Python: "
            "upload_to=...; gs:// and az:// work too; needs pip install 'dentalkit[images]' "
            "and the store's credentials). Or host them over HTTPS yourself and write a "
            "manifest with their URLs (docs/images.md)"
        )
    if has_dicom and png_dir is None:
        example = rows.loc[rows["dicom"], "file"].iloc[0]
        raise InputError(
            f"{int(rows['dicom'].sum())} DICOM file(s) (e.g. {example}): the service reads PNG "
            "and a DICOM file carries identifying tags, so DICOM files are converted to PNG "
            "before they are sent: give png_dir= (--png-dir DIR), the folder for the PNGs"
        )
    if not src.is_local and dest is not None and not has_dicom:
        raise InputError(
            f"upload_to is for local images (and PNGs converted from DICOM); the images "
            f"under {src.url} are in a store already and are presigned where they are"
        )
    if not src.is_local and has_dicom and dest is None:
        raise InputError(
            "DICOM files are converted to PNG locally: give upload_to= (--upload) for the PNGs"
        )


def _read_dicom(
    src: Location, rows: pd.DataFrame, png_dir: Any, problems: Problems
) -> pd.DataFrame:
    """Fill patient, date and calibration of DICOM rows from their tags and convert them.

    The pattern or mapping wins over the tags; a DICOM Patient ID is kept only in the
    private column ``_dicom_id`` (replaced by its pseudonym before anything is written).
    Each PNG is written to ``png_dir`` under a pending, content-hash name.
    """
    rows = rows.copy()
    rows["_dicom_id"] = None
    rows["_png"] = None
    rows["_sha"] = None
    index = np.flatnonzero(rows["dicom"].to_numpy())
    if not len(index):
        return rows
    folder = Path(png_dir)
    folder.mkdir(parents=True, exist_ok=True)
    bad: list[int] = []
    for start in range(0, len(index), _READ_BATCH):
        part = index[start : start + _READ_BATCH]
        data = src.read(rows["file"].iloc[part].tolist())
        for i in part:
            rel = rows.at[i, "file"]
            try:
                raw = data[rel]
                if isinstance(raw, Exception):
                    raise _dicom.DicomFileError(f"cannot be read: {type(raw).__name__}")
                key, head = _dicom.read_header(raw)
                png = _dicom._png(raw)
            except _dicom.DicomFileError as exc:
                problems.file(rel, str(exc), mapping_row=rows.at[i, "mapping_row"], field="dicom")
                bad.append(i)
                continue
            digest = hashlib.sha256(png).hexdigest()
            pending = folder / f".pending-{digest[:16]}.png"
            atomic_write(pending, lambda tmp, png=png: Path(tmp).write_bytes(png))
            rows.at[i, "_png"] = str(pending)
            rows.at[i, "_sha"] = digest
            _fill_from_header(rows, i, key, head, problems)
    return rows.drop(index=bad).reset_index(drop=True)


def _fill_from_header(
    rows: pd.DataFrame, i: int, key: str | None, head: _dicom.DicomImage, problems: Problems
) -> None:
    rel, mrow = rows.at[i, "file"], rows.at[i, "mapping_row"]
    if rows.at[i, "patient_id"] is None:
        rows.at[i, "_dicom_id"] = key
    if rows.at[i, "date"] is None:
        rows.at[i, "date"] = head.date
    if rows.at[i, "mm_per_px"] is None and head.mm_per_px is not None:
        rows.at[i, "mm_per_px"] = head.mm_per_px
        rows.at[i, "calibration_source"] = head.calibration_source
    if head.calibration_note and rows.at[i, "calibration_source"] in (
        None,
        head.calibration_source,
    ):
        problems.file(
            rel, head.calibration_note, mapping_row=mrow, field="mm_per_px", severity="warning"
        )


def _pseudonymise(rows: pd.DataFrame, secret: Any, problems: Problems) -> pd.DataFrame:
    """Replace every patient ID by its keyed pseudonym (with ``secret``).

    An ID read from a DICOM file is never used as it is: without a secret its row is left
    out, with a problem saying how to give one.
    """
    rows = rows.copy()
    from_dicom = rows["_dicom_id"].notna()
    if secret is None:
        for rel, mrow in rows.loc[from_dicom, ["file", "mapping_row"]].itertuples(index=False):
            problems.file(
                rel,
                "the patient ID comes from the DICOM file and is replaced by its keyed "
                'pseudonym, which needs a secret: export DK_SECRET=$(python -c "import '
                'secrets; print(secrets.token_urlsafe(32))") (keep it outside the project) and '
                "pass --secret-env DK_SECRET (Python: secret=os.environ['DK_SECRET'])",
                mapping_row=mrow,
                field="patient_id",
            )
        return rows[~from_dicom].reset_index(drop=True)
    rows["_original"] = rows["patient_id"]  # from the file's path or the mapping: the user's own
    ids = rows["patient_id"].where(rows["patient_id"].notna(), rows["_dicom_id"])
    present = [v for v in ids.tolist() if v is not None]
    lookup = _dicom.pseudonyms(present, secret) if present else {}
    rows["patient_id"] = [lookup.get(v) if v is not None else None for v in ids.tolist()]
    rows["_dicom_id"] = None  # the original ID leaves the table here
    return rows


def _check_rows(rows: pd.DataFrame, problems: Problems) -> pd.DataFrame:
    """Leave out rows without a patient or a date; remark on two images of one session."""
    missing = rows["patient_id"].isna() | rows["date"].isna()
    for rel, mrow, pid, dicom in rows.loc[
        missing, ["file", "mapping_row", "patient_id", "dicom"]
    ].itertuples(index=False):
        what = "patient_id" if pid is None else "date"
        src = " and the DICOM file has none" if dicom else ""
        problems.file(
            rel,
            f"no {what}: the pattern or mapping gives none{src}",
            mapping_row=mrow,
            field=what,
        )
    rows = rows[~missing].reset_index(drop=True)
    long = rows.explode("endpoints")
    dup = long.duplicated(["patient_id", "date", "endpoints"], keep=False)
    for rel, mrow, pid, date, ep in long.loc[
        dup, ["file", "mapping_row", "patient_id", "date", "endpoints"]
    ].itertuples(index=False):
        problems.file(
            rel,
            f"another image of patient {pid}, session {date} also goes to {ep}: both are "
            "kept, but tables key a session by patient, timestamp and endpoint; give them "
            "different dates (times) or leave one out",
            mapping_row=mrow,
            field="file",
            severity="warning",
            patient_id=pid,
            timestamp=date,
            endpoint=ep,
        )
    return rows


def _problem_table(problems: Problems) -> pd.DataFrame:
    if not problems.records:
        return empty_problems()
    frame = pd.DataFrame.from_records(problems.records)
    frame = problems_frame(frame, table="images", severity="error")
    return frame.sort_values(["severity", "path"], kind="stable").reset_index(drop=True)


def _raise_or_warn(report: pd.DataFrame, errors: str) -> None:
    errs = int((report["severity"] == "error").sum())
    if errors == "raise" and errs:
        raise problems_error(report, "dentalkit.images.build_manifest left files out", _HINT)
    if errors == "collect" or not len(report):
        return
    warns = len(report) - errs
    counts = [
        f"{errs} file(s) left out" if errs else "",
        f"{warns} remark(s) on kept files" if warns else "",
    ]
    warnings.warn(
        f"dentalkit.images.build_manifest: {' and '.join(c for c in counts if c)}; see the "
        "problems table (e.g. " + str(report["reason"].iloc[0])[:160] + ")",
        DentalkitWarning,
        stacklevel=3,
    )


def _key(pid: str, date: str, label: str, digest: str, suffix: str) -> str:
    """``{patient}/{date}/{kind}-{hash12}{suffix}``: where an image is uploaded."""
    safe = [_SAFE.sub("_", s).strip("._") or "_" for s in (pid, date[:10], label)]
    return f"{safe[0]}/{safe[1]}/{safe[2]}-{digest[:12]}{suffix.lower()}"


def _publish(
    src: Location,
    dest: Location | None,
    rows: pd.DataFrame,
    secret: Any,
    png_dir: Any,
    life: timedelta,
    problems: Problems,
) -> tuple[pd.DataFrame, int]:
    """Upload what is local, presign every image; one row per image with its URL."""
    if not len(rows):
        return rows.assign(image_url=pd.Series(dtype=object)), 0
    labels = [
        k if k else ("image" if len(e) > 1 else e[0])
        for k, e in zip(rows["kind"], rows["endpoints"], strict=True)
    ]
    if dest is None:
        store, keys, pairs = src, rows["file"].tolist(), []
    else:
        pairs, keys = _staged(src, rows, labels, png_dir)
        store = dest
    urls = store.presign(keys, life)  # signing needs no request: refuse plain HTTP first
    check_https(urls, store.url)
    uploaded = dest.upload(pairs) if dest is not None else 0
    rows = rows.assign(image_url=urls)
    if secret is not None and dest is None:
        rows = _drop_identifying_urls(rows, problems)
    return rows, uploaded


def _staged(
    src: Location, rows: pd.DataFrame, labels: list[str], png_dir: Any
) -> tuple[list[tuple[str, str]], list[str]]:
    """``(local file, key)`` pairs to upload: PNGs moved from their pending name, local files."""
    pairs, keys = [], []
    for i, (rel, pid, date, png) in enumerate(
        rows[["file", "patient_id", "date", "_png"]].itertuples(index=False)
    ):
        if png is not None:
            key = _key(pid, date, labels[i], rows.at[i, "_sha"], ".png")
            final = Path(png_dir, *key.split("/"))
            final.parent.mkdir(parents=True, exist_ok=True)
            if not final.exists():  # two files with the same pixels share one pending PNG
                atomic_write(final, lambda tmp, png=png: shutil.copyfile(png, tmp))
            local = str(final)
        else:
            local = src.path(rel)
            digest = hashlib.sha256(Path(local).read_bytes()).hexdigest()
            key = _key(pid, date, labels[i], digest, Path(rel).suffix)
        pairs.append((local, key))
        keys.append(key)
    for png in set(rows["_png"].dropna()):
        Path(png).unlink(missing_ok=True)
    return pairs, keys


def _drop_identifying_urls(rows: pd.DataFrame, problems: Problems) -> pd.DataFrame:
    """Leave out images whose URL names the patient's original ID (pseudonyms would be void)."""
    keep = []
    columns = ["file", "mapping_row", "image_url", "_original"]
    for rel, mrow, url, original in rows[columns].itertuples(index=False):
        leaks = (
            isinstance(original, str)
            and len(original) >= _MIN_LEAK_ID
            and original in url.split("?", 1)[0]
        )
        if leaks:
            problems.file(
                rel,
                "the image's URL names the patient's original identifier, which would reach "
                "the service beside its pseudonym; copy the images under pseudonymous names "
                "(download them and build from the local folder with --upload)",
                mapping_row=mrow,
                field="image_url",
            )
        keep.append(not leaks)
    return rows[keep].reset_index(drop=True)


def _manifest(images: pd.DataFrame) -> pd.DataFrame:
    """One row per image and endpoint, sorted by patient, timestamp, endpoint order, file."""
    order = {name: i for i, name in enumerate(ENDPOINTS)}
    long = (
        images.drop(columns=["endpoint"])
        .explode("endpoints")
        .rename(columns={"endpoints": "endpoint", "date": "timestamp"})
    )
    if not len(long):
        return pd.DataFrame({c: pd.Series(dtype=object) for c in MANIFEST_COLUMNS[:4]})
    long = long.assign(_order=long["endpoint"].map(order))
    long = long.sort_values(["patient_id", "timestamp", "_order", "file"], kind="stable")
    columns = list(MANIFEST_COLUMNS[:4])
    if long["mm_per_px"].notna().any():
        columns += ["mm_per_px", "calibration_source"]
    out = long[columns].reset_index(drop=True)
    for c in ("patient_id", "timestamp", "endpoint", "image_url", "calibration_source"):
        if c in out:
            out[c] = out[c].astype(object)
    if "mm_per_px" in out:
        out["mm_per_px"] = pd.to_numeric(out["mm_per_px"]).astype("float64")
    return out
