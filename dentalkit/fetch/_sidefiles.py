"""What a fetch keeps of its manifest beside the responses: calibration and timestamp format.

* ``STORE/calibration.parquet`` — the per-image scales (``mm_per_px``,
  ``calibration_source``) of the manifests fetched into the store, one row per image request
  (``patient_id``, ``timestamp``, ``endpoint``, ``image_url``). Every fetch rewrites it
  atomically from its manifest: the rows of the image requests that manifest plans are
  replaced by its scales (a request it plans without ``mm_per_px`` loses its row), the rows
  of requests it does not plan are kept — so a later ``/tle`` fetch, a retry with part of
  the manifest or a first contact into the same store keep the calibration; the latest
  manifest wins for every image it names.
* ``timestamp_format`` in ``STORE/_dentalkit.json`` — the strptime format the manifest's
  timestamps were read with (absent or null: ISO 8601), so that ``session_time`` in the
  responses and in ``dentalkit tables`` is parsed as the fetch checked it. A store holds one
  format: a fetch that gives another one into a store holding responses is refused.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from dentalkit._atomic import atomic_write
from dentalkit.convert import schemas
from dentalkit.errors import ConfigurationError, DamagedFileError
from dentalkit.fetch._manifest import CALIBRATION_TABLE_COLUMNS

__all__ = [
    "CALIBRATION_FILE",
    "CALIBRATION_SCHEMA",
    "keep_manifest_records",
    "read_calibration",
    "store_timestamp_format",
]

#: File of the per-image calibration inside a store.
CALIBRATION_FILE = "calibration.parquet"
#: Arrow schema of ``calibration.parquet``: the declared ``calibration`` table's types.
CALIBRATION_SCHEMA = pa.schema(
    [
        pa.field(f.name, f.type, nullable=f.nullable)
        for f in schemas.SCHEMAS["calibration"]
        if f.name in CALIBRATION_TABLE_COLUMNS
    ]
)
_META = "_dentalkit.json"
_KEY = ["patient_id", "timestamp", "endpoint", "image_url"]


def _meta(out: Path) -> dict[str, Any] | None:
    """The store marker as a dict; None when there is none or it cannot be read (the fetch
    heals a damaged marker when it opens the store)."""
    try:
        meta = json.loads((out / _META).read_bytes())
    except (OSError, ValueError):
        return None
    return meta if isinstance(meta, dict) else None


def store_timestamp_format(out: str | os.PathLike[str], given: str | None) -> str | None:
    """The timestamp format a fetch into ``out`` reads the manifest with.

    ``given`` (already checked) when the caller gives one, else the one the store recorded
    (None: ISO 8601, also for a new store).

    Raises
    ------
    ConfigurationError
        When ``given`` differs from the store's format and the store holds responses (their
        ``session_time`` was parsed with its format).
    """
    out = Path(out)
    meta = _meta(out)
    recorded = meta.get("timestamp_format") if meta else None
    if given is None or given == recorded:
        return recorded if given is None else given
    if any((out / "responses").glob("part-*.parquet")):
        was = repr(recorded) if recorded else "ISO 8601 (no --timestamp-format)"
        raise ConfigurationError(
            f"the store {out} holds answers whose timestamps were read as {was}; this fetch "
            f"gives the timestamp format {given!r}. One store holds one format: give the "
            "store's format (or leave --timestamp-format / timestamp_format out to use it), "
            "or fetch into a new out folder"
        )
    return given


def keep_manifest_records(store: Any, plan: Any) -> None:
    """Record the manifest's timestamp format and calibration in the store (under its lock).

    Sets ``store.timestamp_format`` (``session_time`` of the rows stored from now on),
    writes it to ``_dentalkit.json`` when it changes, and rewrites ``calibration.parquet``
    (see the module notes).
    """
    out = Path(store.out)
    store.timestamp_format = plan.timestamp_format
    meta = _meta(out)
    if meta is not None and meta.get("timestamp_format") != plan.timestamp_format:
        meta["timestamp_format"] = plan.timestamp_format
        text = json.dumps(meta, indent=2)
        atomic_write(out / _META, lambda tmp: Path(tmp).write_text(text))
    path = out / CALIBRATION_FILE
    kept = None
    if path.exists():
        try:
            kept = read_calibration(out)
        except DamagedFileError as exc:  # moved aside and reported; this manifest's is written
            store._quarantine(path, exc, rows=None)
    _write_calibration(path, plan, kept)


def _write_calibration(path: Path, plan: Any, kept: pd.DataFrame | None) -> None:
    """Rewrite ``calibration.parquet``: ``kept`` rows of requests ``plan`` does not plan,
    then the plan's scales (nothing is written for a store that never had a scale)."""
    reqs = plan.requests
    planned = reqs.loc[reqs["image_url"].notna(), _KEY]
    if kept is None and not len(plan.calibration):
        return
    columns = list(CALIBRATION_TABLE_COLUMNS)
    frames = [plan.calibration[columns].astype(object)]
    if kept is not None and len(kept):
        covered = set(planned.itertuples(index=False, name=None))
        other = [k not in covered for k in kept[_KEY].itertuples(index=False, name=None)]
        frames.insert(0, kept.loc[other, columns].astype(object))
    table = pd.concat(frames, ignore_index=True).sort_values(_KEY, kind="stable")
    table["mm_per_px"] = table["mm_per_px"].astype("float64")
    arrow = pa.Table.from_pandas(table, schema=CALIBRATION_SCHEMA, preserve_index=False)
    atomic_write(path, lambda tmp: pq.write_table(arrow, tmp))


def read_calibration(out: str | os.PathLike[str]) -> pd.DataFrame:
    """Read the per-image calibration of a store (``out/calibration.parquet``).

    Parameters
    ----------
    out : path
        The store folder (``dentalkit fetch --out``).

    Returns
    -------
    pandas.DataFrame
        ``patient_id``, ``timestamp``, ``endpoint``, ``image_url``, ``mm_per_px`` (float,
        millimetres per pixel) and ``calibration_source``: one row per image request whose
        manifest row gave ``mm_per_px``; no rows when the store has no calibration. Give it
        to :func:`dentalkit.convert.tables` (``calibration=``) for the typed
        ``calibration`` table.

    Raises
    ------
    DamagedFileError
        When the file exists but cannot be read as the calibration table.
    """
    path = Path(out) / CALIBRATION_FILE
    if not path.exists():
        return CALIBRATION_SCHEMA.empty_table().to_pandas()
    try:
        return pq.read_table(path, schema=CALIBRATION_SCHEMA).to_pandas()
    except (OSError, ValueError, KeyError, pa.ArrowException) as exc:
        raise DamagedFileError(
            path,
            "calibration table",
            f"{type(exc).__name__}: {exc}",
            f"run the same fetch again: it rewrites {CALIBRATION_FILE} from its manifest",
        ) from None
