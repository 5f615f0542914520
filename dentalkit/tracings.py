"""Manual tracings → the long landmarks table of ``docs/data-contract.md``.

Three layouts are read (see ``docs/agreement.md`` for examples):

**long CSV** — one row per landmark::

    patient_id,timestamp,view,name,x,y,mm_per_px,annotator
    P001,2024-03-01,lateral,S,812.4,655.0,0.1,AB
    P001,2024-03-01,lateral,N,1490.2,601.7,0.1,AB

Required: ``patient_id``, ``x``, ``y`` (pixels of the analysed image, x right, y down)
and ``name`` (or ``landmark``). Optional: ``timestamp`` (the session's TimeStamp as
sent to the service — needed to pair with service tables on the default key),
``view`` (``lateral``/``frontal``; default ``lateral``), ``mm_per_px``, ``annotator``.

**wide CSV** — one row per traced image, two columns per landmark ``<name>_x``,
``<name>_y``::

    patient_id,timestamp,S_x,S_y,N_x,N_y
    P001,2024-03-01,812.4,655.0,1490.2,601.7

The same optional columns; an empty ``_x``/``_y`` pair means "not traced" (no row).

**ISBI 2015** — the challenge's 19-line ``x,y`` text files, read by
:func:`dentalkit.ceph.read_isbi` (0.1 mm/px, names from the shipped ``isbi2015`` map).

Names are brought to dentalkit's (``S``, ``N``, ``U1_tip``, ``Pog'`` …) with a *name
map* (``source_name`` → ``name``): ``"isbi2015"`` (``L01`` … ``L19``),
``"anatomical_en"`` (``Sella``, ``Point A``, ``Soft tissue pogonion`` …; matched
ignoring case, hyphens and underscores), or your own CSV/DataFrame. A name that is
neither in the map nor one of ours keeps its text in ``landmark``, gets a null
``name`` and a warning; :func:`dentalkit.agreement.landmarks` lists it as unmapped.

Examples
--------
>>> import pandas as pd
>>> wide = pd.DataFrame({"patient_id": ["P1"], "Sella_x": [10.0], "Sella_y": [20.0]})
>>> t = tracings_from_wide(wide, name_map="anatomical_en")
>>> t[["patient_id", "landmark", "name", "x", "y"]].to_dict("records")
[{'patient_id': 'P1', 'landmark': 'Sella', 'name': 'S', 'x': 10.0, 'y': 20.0}]
"""

from __future__ import annotations

import re
import warnings
from importlib import resources
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from dentalkit.ceph.isbi import read_isbi
from dentalkit.ceph.names import load_name_map
from dentalkit.errors import DentalkitWarning, InputError
from dentalkit.landmark_map import load_landmark_map

__all__ = [
    "LAYOUTS",
    "NAME_MAPS",
    "load_tracing_name_map",
    "read_tracings",
    "tracings_from_long",
    "tracings_from_wide",
]

LAYOUTS = ("long", "wide", "isbi")
#: Name maps shipped in ``dentalkit/data/name_maps/`` (``<name>.csv``).
NAME_MAPS = ("isbi2015", "anatomical_en")
_VIEWS = ("lateral", "frontal")
_OPTIONAL = ("timestamp", "view", "mm_per_px", "annotator")
NameMap = str | Path | pd.DataFrame | None


def load_tracing_name_map(source: str | Path | pd.DataFrame) -> pd.DataFrame:
    """A name map (``source_name`` → ``name``): shipped (:data:`NAME_MAPS`), a CSV or a DataFrame."""
    if isinstance(source, str) and source in NAME_MAPS:
        ref = resources.files("dentalkit.data").joinpath("name_maps", f"{source}.csv")
        with ref.open(encoding="utf-8") as fh:
            return load_name_map(pd.read_csv(fh, dtype=str, keep_default_na=False))
    return load_name_map(source)


def _norm(text: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"[-_]", " ", text)).strip().casefold()


def _names(source: pd.Series, views: np.ndarray, name_map: NameMap) -> np.ndarray:
    """Our name for every row (None where neither the map nor our vocabulary knows it)."""
    table = load_tracing_name_map(name_map) if name_map is not None else None
    exact = dict(zip(table["source_name"], table["name"], strict=True)) if table is not None else {}
    loose = {_norm(k): v for k, v in exact.items()}
    ours = {v: set(load_landmark_map(v)["name"]) for v in _VIEWS}
    pairs = pd.DataFrame({"view": views, "src": source.to_numpy(dtype=object)})
    uniq = pairs.drop_duplicates().reset_index(drop=True)  # a few dozen names: map each once
    mapped = []
    for v, s in zip(uniq["view"], uniq["src"], strict=True):
        if not isinstance(s, str):
            mapped.append(None)
            continue
        hit = exact.get(s) or loose.get(_norm(s))
        mapped.append(hit if hit is not None else (s if s in ours[v] else None))
    uniq["name"] = mapped
    out = pairs.merge(uniq, on=["view", "src"], how="left")["name"].to_numpy(dtype=object)
    unknown = sorted({str(s) for s, m in zip(uniq["src"], mapped, strict=True) if m is None})
    if unknown:
        warnings.warn(
            f"{len(unknown)} landmark name(s) are neither dentalkit names nor in the name map "
            f"(e.g. {unknown[:8]}); they keep their text in 'landmark' with a null 'name'. "
            "Pass name_map= (a shipped map "
            f"{NAME_MAPS}, a CSV or a DataFrame with source_name,name)",
            DentalkitWarning,
            stacklevel=3,
        )
    return out


def _numbers(table: pd.DataFrame, col: str, line_offset: int) -> np.ndarray:
    raw = table[col]
    num = pd.to_numeric(raw, errors="coerce")
    bad = num.isna() & raw.notna() & (raw.astype(object).map(lambda v: str(v).strip()) != "")
    if bad.any():
        rows = np.flatnonzero(bad.to_numpy())[:10]
        listing = ", ".join(f"row {r} (line {r + line_offset}): {raw.iloc[r]!r}" for r in rows)
        raise InputError(f"column {col!r} has values that are not numbers: {listing}")
    return num.to_numpy(dtype=float)


def tracings_from_long(
    table: pd.DataFrame,
    *,
    name_map: NameMap = None,
    view: str | None = None,
    timestamp: str | None = None,
    annotator: str | None = None,
    mm_per_px: float | None = None,
    _line_offset: int = 0,
) -> pd.DataFrame:
    """A long table of traced landmarks (layout in the module docstring) → landmarks table.

    Parameters
    ----------
    table : DataFrame
        ``patient_id``, ``name`` (or ``landmark``), ``x``, ``y`` and optional
        ``timestamp``, ``view``, ``mm_per_px``, ``annotator``.
    name_map : str, path-like or DataFrame, optional
        Translates the tracing's names to ours (see :func:`load_tracing_name_map`).
    view : {"lateral", "frontal"}, optional
        View of rows without one (default ``"lateral"``).
    timestamp, annotator : str, optional
        Values for a table without that column (giving both column and value is an error).
    mm_per_px : float, optional
        Calibration for a table without a ``mm_per_px`` column.

    Returns
    -------
    DataFrame
        ``patient_id``, ``timestamp``, ``session_time`` (ISO 8601 parsed, UTC; NaT
        otherwise), [``annotator``], ``view``, ``landmark`` (the tracing's own name),
        ``name`` (ours; null when unknown), ``x``, ``y`` (float64 px), [``mm_per_px``].
        Repeated strings are categoricals.
    """
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"expected a DataFrame, got {type(table).__name__}")
    if view is not None and view not in _VIEWS:
        raise InputError(f"view must be 'lateral' or 'frontal', got {view!r}")
    label = "name" if "name" in table.columns else "landmark"
    missing = [c for c in ("patient_id", "x", "y") if c not in table.columns]
    if label not in table.columns:
        missing.append("name (or landmark)")
    if missing:
        raise InputError(
            f"tracing table lacks column(s) {missing}; the long layout needs patient_id, "
            "name, x, y (see dentalkit.tracings)"
        )
    given = {"timestamp": timestamp, "annotator": annotator, "mm_per_px": mm_per_px}
    both = [k for k, v in given.items() if v is not None and k in table.columns]
    if both:
        raise InputError(f"the table has column(s) {both}; do not pass them as arguments too")
    n = len(table)
    pid = table["patient_id"]
    empty = (pid.isna() | (pid.astype(object).map(str).str.strip() == "")).to_numpy()
    if empty.any():
        r = int(np.flatnonzero(empty)[0])
        raise InputError(f"patient_id is empty at row {r} (line {r + _line_offset})")
    views = (
        table["view"].astype(object).where(table["view"].notna(), view or "lateral").to_numpy()
        if "view" in table.columns
        else np.full(n, view or "lateral", dtype=object)
    )
    bad_view = ~np.isin(views, _VIEWS)
    if bad_view.any():
        r = int(np.flatnonzero(bad_view)[0])
        raise InputError(f"view {views[r]!r} at row {r}: views are 'lateral' or 'frontal'")
    ts = (
        table["timestamp"].astype(object).where(table["timestamp"].notna(), "").map(str)
        if "timestamp" in table.columns
        else pd.Series(timestamp or "", index=table.index, dtype=object)
    )
    source = table[label].astype(object).where(table[label].notna(), None)
    source = source.map(lambda v: v.strip() if isinstance(v, str) else v)
    out = pd.DataFrame(
        {
            "patient_id": pd.Categorical(pid.astype(object).map(str).to_numpy()),
            "timestamp": pd.Categorical(ts.to_numpy()),
        }
    )
    parsed = pd.to_datetime(ts.replace("", None), format="ISO8601", utc=True, errors="coerce")
    out["session_time"] = pd.DatetimeIndex(parsed).astype("datetime64[ns, UTC]")
    if "annotator" in table.columns or annotator is not None:
        ann = table["annotator"].astype(object) if "annotator" in table.columns else annotator
        out["annotator"] = pd.Categorical(np.broadcast_to(np.asarray(ann, dtype=object), n))
    out["view"] = pd.Categorical(views, categories=list(_VIEWS))
    out["landmark"] = pd.Categorical(source.to_numpy())
    out["name"] = pd.Categorical(_names(source, views, name_map))
    out["x"] = _numbers(table, "x", _line_offset)
    out["y"] = _numbers(table, "y", _line_offset)
    if "mm_per_px" in table.columns:
        out["mm_per_px"] = _numbers(table, "mm_per_px", _line_offset)
    elif mm_per_px is not None:
        if not np.isfinite(float(mm_per_px)) or float(mm_per_px) <= 0:
            raise InputError(f"mm_per_px must be a positive number, got {mm_per_px!r}")
        out["mm_per_px"] = float(mm_per_px)
    return out


def tracings_from_wide(
    table: pd.DataFrame,
    *,
    name_map: NameMap = None,
    view: str | None = None,
    timestamp: str | None = None,
    annotator: str | None = None,
    mm_per_px: float | None = None,
    _line_offset: int = 0,
) -> pd.DataFrame:
    """A wide table (one row per image, ``<name>_x``/``<name>_y`` columns) → landmarks table.

    Parameters and returns as :func:`tracings_from_long`. Columns other than the
    optional key columns and ``_x``/``_y`` pairs are an error (so a typo is not lost);
    a pair with both cells empty means "not traced".
    """
    keys = [c for c in ("patient_id", *_OPTIONAL) if c in table.columns]
    if "patient_id" not in keys:
        raise InputError("the wide layout needs a patient_id column (see dentalkit.tracings)")
    coord = [c for c in table.columns if c not in keys]
    xs = [c[:-2] for c in coord if str(c).endswith("_x")]
    ys = {c[:-2] for c in coord if str(c).endswith("_y")}
    names = [s for s in xs if s in ys]
    stray = sorted(set(coord) - {f"{s}_x" for s in names} - {f"{s}_y" for s in names})
    if stray:
        raise InputError(
            f"wide tracing columns {stray[:10]} are neither key columns {list(keys)} nor "
            "<name>_x/<name>_y pairs"
        )
    if not names:
        raise InputError("no <name>_x/<name>_y column pairs in the wide tracing table")
    n, k = len(table), len(names)
    X = np.column_stack([_numbers(table, f"{s}_x", _line_offset) for s in names])
    Y = np.column_stack([_numbers(table, f"{s}_y", _line_offset) for s in names])
    half = np.isnan(X) ^ np.isnan(Y)
    if half.any():
        r, c = (int(v[0]) for v in np.nonzero(half))
        raise InputError(
            f"row {r} (line {r + _line_offset}) gives only one of {names[c]}_x/{names[c]}_y"
        )
    traced = ~np.isnan(X).reshape(-1)
    rep = np.repeat(np.arange(n), k)[traced]
    long = table[keys].iloc[rep].reset_index(drop=True)
    long["name"] = np.tile(np.asarray(names, dtype=object), n)[traced]
    long["x"] = X.reshape(-1)[traced]
    long["y"] = Y.reshape(-1)[traced]
    return tracings_from_long(
        long,
        name_map=name_map,
        view=view,
        timestamp=timestamp,
        annotator=annotator,
        mm_per_px=mm_per_px,
    )


def read_tracings(
    path: str | Path,
    layout: Literal["auto", "long", "wide", "isbi"] = "auto",
    *,
    name_map: NameMap = None,
    view: str | None = None,
    timestamp: str | None = None,
    annotator: str | None = None,
    mm_per_px: float | None = None,
) -> pd.DataFrame:
    """Read manual tracings (long CSV, wide CSV or ISBI 2015 text files) into a landmarks table.

    Parameters
    ----------
    path : path-like
        A CSV file, an ISBI ``.txt`` file, or a directory of ISBI files.
    layout : {"auto", "long", "wide", "isbi"}
        ``"auto"``: ISBI for ``.txt`` files and directories; for CSV, long when it
        has any of the columns ``x``, ``y``, ``name``, ``landmark``, else wide.
    name_map, view, timestamp, annotator, mm_per_px
        See :func:`tracings_from_long`. For ISBI files the names come from the
        ``isbi2015`` map and the calibration is the challenge's 0.1 mm/px.

    Returns
    -------
    DataFrame
        See :func:`tracings_from_long`.
    """
    p = Path(path)
    if layout not in ("auto", *LAYOUTS):
        raise InputError(f"layout must be 'auto' or one of {LAYOUTS}, got {layout!r}")
    if not p.exists():
        raise InputError(f"tracing file {p} does not exist")
    kind: str = layout
    if kind == "auto":
        kind = "isbi" if p.is_dir() or p.suffix.lower() == ".txt" else "csv"
    if kind == "isbi":
        if name_map is not None or mm_per_px is not None:
            raise InputError(
                "ISBI 2015 files use the shipped isbi2015 names and 0.1 mm/px; "
                "name_map and mm_per_px do not apply"
            )
        out = read_isbi(p, annotator=annotator)
        if timestamp is not None:
            out["timestamp"] = pd.Categorical(np.full(len(out), timestamp, dtype=object))
            parsed = pd.to_datetime(
                pd.Series([timestamp]), format="ISO8601", utc=True, errors="coerce"
            )
            out["session_time"] = pd.Series(
                np.repeat(parsed.to_numpy(), len(out)), dtype="datetime64[ns, UTC]"
            )
        if view is not None and view != "lateral":
            raise InputError("ISBI 2015 films are lateral cephalograms")
        return out
    table = pd.read_csv(p, dtype=object, keep_default_na=True, skipinitialspace=True)
    if kind == "csv":
        kind = "long" if {"x", "y", "name", "landmark"} & set(table.columns) else "wide"
    reader = tracings_from_long if kind == "long" else tracings_from_wide
    return reader(
        table,
        name_map=name_map,
        view=view,
        timestamp=timestamp,
        annotator=annotator,
        mm_per_px=mm_per_px,
        _line_offset=2,  # header line + 1-based lines
    )
