"""Input checks, calibration and stacking of the long tables into padded arrays.

Private plumbing of :mod:`dentalkit.arch`: every public function reads its
tables through here, so the checks and the error messages are the same
everywhere.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dentalkit.errors import DentalkitWarning, Errors, InputError, check_errors

#: Session key of every table (docs/data-contract.md).
KEY: tuple[str, ...] = ("patient_id", "timestamp")
#: One arch of one session.
ARCH_KEY: tuple[str, ...] = (*KEY, "arch")
#: Session-level columns copied through to the results when present.
CARRIED: tuple[str, ...] = ("session_time", "endpoint", "model_version")
#: Arch labels of the data contract.
ARCHES: tuple[str, ...] = ("up", "lo")

#: How point numbers order the points along the arch (see :func:`stack_points`).
POINT_KEYS = ("auto", "fdi", "sequence")


def _fdi_rank(idx: np.ndarray, up: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Position along the arch of FDI tooth numbers, from the patient's right end.

    ``up``: whether each number belongs to an upper arch. Right quadrants (1 upper,
    4 lower) give −tooth (−8 … −1), left quadrants (2 upper, 3 lower) +tooth (1 … 8);
    also whether each number is an FDI permanent tooth of its arch.
    """
    q, t = idx // 10, idx % 10
    quad_ok = np.where(up, (q == 1) | (q == 2), (q == 3) | (q == 4))
    ok = quad_ok & (t >= 1) & (t <= 8)
    right = (q == 1) | (q == 4)
    return np.where(right, -t, t), ok


def check_errors_arg(errors: str, where: str = "dentalkit.arch") -> str:
    """dentalkit's one ``errors=`` rule (:func:`dentalkit.errors.check_errors`).

    In :mod:`dentalkit.arch`, ``"collect"`` and ``"warn"`` turn a bad arch into a result row
    with a ``status`` other than ``"ok"`` and a ``reason``; ``"warn"`` also emits one
    :class:`~dentalkit.errors.DentalkitWarning` saying how many arches that concerns.
    """
    return check_errors(errors, where)


def warn_bad(what: str, n: int, first: str) -> None:
    """The ``errors="warn"`` summary of ``n`` arches left out (first reason ``first``)."""
    warnings.warn(
        f"{what}: {n} arch(es) left out of the results (status other than 'ok'), e.g. "
        f"{first}; their rows say why",
        DentalkitWarning,
        stacklevel=4,
    )


def require_columns(table: pd.DataFrame, columns: tuple[str, ...] | list[str], name: str) -> None:
    """Raise :class:`InputError` naming every required column ``table`` lacks."""
    if not isinstance(table, pd.DataFrame):
        raise InputError(f"{name} must be a pandas DataFrame, got {type(table).__name__}")
    missing = [c for c in columns if c not in table.columns]
    if missing:
        raise InputError(
            f"{name} lacks column(s) {missing}; it needs {list(columns)} "
            "(see docs/data-contract.md; build it with dentalkit.convert)"
        )


def _check_keys_and_arch(table: pd.DataFrame, name: str) -> np.ndarray:
    """Check the key columns and the arch labels; returns whether each row is an upper arch."""
    for col in ARCH_KEY:
        bad = table[col].isna().to_numpy()
        if bad.any():
            rows = table.index[bad][:10].tolist()
            raise InputError(
                f"{name} has {int(bad.sum())} row(s) with an empty {col!r} (rows {rows}); "
                "every row needs patient_id, timestamp and arch"
            )
    # the labels as text, converted once per distinct value (not once per row)
    codes, uniques = pd.factorize(table["arch"])
    labels = pd.Series(uniques).astype(str).to_numpy(dtype=object)
    bad = ~np.isin(labels, ARCHES)[codes]
    if bad.any():
        rows = table.index[bad][:10].tolist()
        values = sorted(set(labels[codes[bad]]))[:5]
        raise InputError(
            f"{name} has arch value(s) {values} at rows {rows}; arch must be 'up' or 'lo'"
        )
    return (labels == "up")[codes]


def _as_float(table: pd.DataFrame, col: str, name: str) -> np.ndarray:
    try:
        return pd.to_numeric(table[col], errors="raise").to_numpy(dtype=float, na_value=np.nan)
    except (TypeError, ValueError) as exc:
        raise InputError(
            f"{name}.{col} must be numeric pixel coordinates ({exc}); "
            "convert the column with pandas.to_numeric"
        ) from None


def point_index(table: pd.DataFrame, name: str) -> np.ndarray:
    """The ``index`` column, or the number at the end of ``point`` (``t25`` → 25)."""
    if "index" in table.columns:
        idx = pd.to_numeric(table["index"], errors="coerce")
    elif "point" in table.columns:
        idx = pd.to_numeric(
            table["point"].astype(str).str.extract(r"(\d+)$", expand=False), errors="coerce"
        )
    else:
        raise InputError(f"{name} needs an 'index' column (or 'point' keys such as 't25')")
    bad = idx.isna().to_numpy()
    if bad.any():
        rows = table.index[bad][:10].tolist()
        raise InputError(
            f"{name} has rows without a point number (rows {rows}); 'index' must be an "
            "integer (the number in the point key, t25 → 25)"
        )
    return idx.to_numpy(dtype=np.int64)


@dataclass
class Stacked:
    """Arches of a points table as padded arrays, one row per arch.

    Attributes
    ----------
    keys : DataFrame
        ``patient_id``, ``timestamp``, ``arch`` (+ carried columns), one row per arch,
        in the order of the arrays.
    xy : ndarray, shape (m, N, 2)
        Coordinates in the order of ``index``, left-aligned; NaN where padded.
    mask : ndarray of bool, shape (m, N)
        True where a point exists.
    n : ndarray of int, shape (m,)
        Points per arch.
    bad : ndarray of object, shape (m,)
        ``None``, or why the arch cannot be used (``errors="collect"``).
    scale : ndarray, shape (m,)
        Unit per pixel applied to ``xy`` (1 for pixels).
    unit : str
        ``"px"`` or ``"mm"``.
    row_arch, row_pos : ndarray of int, shape (len(table),)
        For each input row (in its original order): its arch and its slot.
    fdi : ndarray of bool, shape (m,)
        True where the point numbers were read as FDI tooth numbers (then the
        first point is on the patient's right).
    problems : tuple of dict
        One record per offending input row (``errors="collect"``/``"warn"``) in the
        columns of :data:`dentalkit.errors.PROBLEM_SCHEMA` plus ``arch`` and
        ``index_label`` (see :func:`dentalkit.arch.problems`).
    """

    keys: pd.DataFrame
    xy: np.ndarray
    mask: np.ndarray
    n: np.ndarray
    bad: np.ndarray
    scale: np.ndarray
    unit: str
    row_arch: np.ndarray
    row_pos: np.ndarray
    fdi: np.ndarray
    problems: tuple[dict, ...] = ()


def first_per_group(table: pd.DataFrame, gid: np.ndarray, m: int) -> pd.DataFrame:
    """Rows of ``table`` that are first of their group (``gid`` sorted ascending)."""
    first = np.r_[True, gid[1:] != gid[:-1]] if len(gid) else np.zeros(0, bool)
    out = table.loc[first].reset_index(drop=True)
    assert len(out) == m
    return out


def stack_points(
    points: pd.DataFrame,
    *,
    name: str = "arch_points",
    mm_per_px: float | pd.DataFrame | None = None,
    errors: Errors = "raise",
    extra: tuple[str, ...] = (),
    point_keys: str = "auto",
) -> Stacked:
    """Check an ``arch_points`` table and stack it into padded arrays.

    Structural faults (missing columns, empty keys, unknown arch labels,
    non-numeric coordinates) always raise :class:`InputError`. Per-point faults
    (non-finite coordinates, repeated point numbers within an arch) raise too,
    or, with ``errors="collect"``, mark the arch as bad with the offending rows
    named in ``Stacked.bad``.

    ``point_keys`` says how the point numbers order the points along the arch:
    ``"fdi"`` (FDI tooth numbers, ``t17`` … ``t11``, ``t21`` … ``t27``: right
    side from the back to the midline, then the left side), ``"sequence"`` (the
    numbers increase from one end of the arch to the other), or ``"auto"``
    (FDI for an arch whose numbers are all FDI teeth of that arch, else sequence).
    """
    errors = check_errors_arg(errors, f"dentalkit.arch ({name})")
    if point_keys not in POINT_KEYS:
        raise InputError(f"point_keys must be one of {POINT_KEYS}, got {point_keys!r}")
    require_columns(points, [*ARCH_KEY, "x", "y"], name)
    up = _check_keys_and_arch(points, name)
    idx = point_index(points, name)
    x = _as_float(points, "x", name)
    y = _as_float(points, "y", name)
    carried = [c for c in (*CARRIED, *extra) if c in points.columns and c not in ARCH_KEY]
    if extra:
        require_columns(points, list(extra), name)
    # arch of each row: the rank of its key in sorted order (patient_id and timestamp as
    # pandas sorts them, categories in their order; the arch label as text, "lo" < "up"),
    # from one integer code per row instead of sorting and grouping the table
    cp, _ = pd.factorize(points["patient_id"], sort=True)
    ct, ut = pd.factorize(points["timestamp"], sort=True)
    key = (cp.astype(np.int64) * len(ut) + ct) * 2 + up
    _, gid = np.unique(key, return_inverse=True)
    gid = gid.reshape(-1).astype(np.int64)
    m = int(gid.max()) + 1 if len(gid) else 0
    # order along the arch: by FDI position (right 8 → 1, then left 1 → 8) when the
    # point numbers are FDI tooth numbers of that arch, else by the number itself
    fdi_rank, fdi_ok = _fdi_rank(idx, up)
    if point_keys == "sequence":
        fdi = np.zeros(m, bool)
    else:
        fdi = np.bincount(gid, weights=~fdi_ok, minlength=m) == 0
    rank = np.where(fdi[gid], fdi_rank, idx)
    # rows by arch, then along it; equal numbers (an error below) in their table order
    order = np.lexsort((rank, gid))
    gid, rank = gid[order], rank[order]
    first = np.r_[True, gid[1:] != gid[:-1]] if len(gid) else np.zeros(0, bool)
    starts = np.flatnonzero(first)
    pos = np.arange(len(gid), dtype=np.int64) - starts[gid]
    keys = points[[*ARCH_KEY, *carried]].iloc[order[starts]].reset_index(drop=True)
    keys["arch"] = keys["arch"].astype(str)
    assert len(keys) == m
    if point_keys == "fdi" and not fdi.all():
        row = keys.iloc[int(np.flatnonzero(~fdi)[0])]
        raise InputError(
            f"{name}: point_keys='fdi' but the point numbers of patient_id="
            f"{row['patient_id']!r}, timestamp={row['timestamp']!r}, arch={row['arch']!r} "
            "are not FDI teeth of that arch (11-18, 21-28 upper; 31-38, 41-48 lower)"
        )
    xs, ys = x[order], y[order]
    nmax = int(pos.max()) + 1 if len(pos) else 1
    xy = np.full((m, nmax, 2), np.nan)
    xy[gid, pos, 0] = xs
    xy[gid, pos, 1] = ys
    mask = np.zeros((m, nmax), bool)
    mask[gid, pos] = True
    n = mask.sum(axis=1)

    bad = np.full(m, None, dtype=object)
    records: list[dict] = []
    nonfinite = ~(np.isfinite(xs) & np.isfinite(ys))
    dup = np.r_[False, (gid[1:] == gid[:-1]) & (rank[1:] == rank[:-1])]
    for flag, what in ((nonfinite, "non-finite x/y"), (dup, "repeated point number")):
        if not flag.any():
            continue
        rows = points.index.to_numpy()[order][flag]
        if errors == "raise":
            who = keys.iloc[gid[flag][0]]
            raise InputError(
                f"{name} has {int(flag.sum())} row(s) with {what} (rows {rows[:10].tolist()}; "
                f"first in patient_id={who['patient_id']!r}, timestamp={who['timestamp']!r}, "
                f"arch={who['arch']!r}); fix or drop them, or pass errors='collect' to "
                "report those arches as problem rows"
            )
        for g in np.unique(gid[flag]):
            r = rows[gid[flag] == g]
            text = f"{what} at {name} row(s) {r[:10].tolist()}"
            bad[g] = text if bad[g] is None else f"{bad[g]}; {text}"
        records += _problem_records(points, name, keys, order[flag], gid[flag], what)
        # keep the arrays finite-or-NaN but exclude the arch from every computation
    if errors == "warn" and any(b is not None for b in bad):
        flagged = [b for b in bad if b is not None]
        warn_bad(name, len(flagged), flagged[0])
    scale, unit = calibration(keys, mm_per_px)
    xy = xy * scale[:, None, None]
    row_arch = np.empty(len(gid), np.int64)
    row_pos = np.empty(len(gid), np.int64)
    row_arch[order], row_pos[order] = gid, pos
    return Stacked(
        keys=keys,
        xy=xy,
        mask=mask,
        n=n,
        bad=bad,
        scale=scale,
        unit=unit,
        row_arch=row_arch,
        row_pos=row_pos,
        fdi=fdi,
        problems=tuple(sorted(records, key=lambda r: r["row"])),
    )


def _problem_records(
    points: pd.DataFrame,
    name: str,
    keys: pd.DataFrame,
    positions: np.ndarray,
    arches: np.ndarray,
    what: str,
) -> list[dict]:
    """Problems rows (one per offending point row) of :func:`stack_points`."""
    field = "index" if "index" in points.columns else "point"
    out = []
    for pos, g in zip(positions.tolist(), arches.tolist(), strict=True):
        key = keys.iloc[g]
        row = points.iloc[pos]
        if what == "non-finite x/y":
            x_bad = not np.isfinite(pd.to_numeric(row["x"], errors="coerce"))
            col = "x" if x_bad else "y"
        else:
            col = field
        label = points.index[pos]
        out.append(
            {
                "table": name,
                "patient_id": str(key["patient_id"]),
                "timestamp": str(key["timestamp"]),
                "row": int(pos),
                "field": col,
                "value": str(row[col]),
                "reason": f"{what}: arch {key['arch']} left out (status bad_input, NaN fits)",
                "severity": "error",
                "arch": str(key["arch"]),
                "index_label": label.item() if isinstance(label, np.generic) else label,
            }
        )
    return out


def calibration(
    keys: pd.DataFrame, mm_per_px: float | pd.DataFrame | None
) -> tuple[np.ndarray, str]:
    """Unit per pixel for each row of ``keys`` and the unit name.

    ``mm_per_px`` is ``None`` (stay in pixels), one positive number for every
    image, or a DataFrame with ``patient_id``, ``timestamp``, optionally
    ``arch``, and ``mm_per_px`` (one value per image: the upper and lower model
    photographs of a session are separate images with their own scale).
    """
    m = len(keys)
    if mm_per_px is None:
        return np.ones(m), "px"
    if isinstance(mm_per_px, pd.DataFrame):
        require_columns(mm_per_px, [*KEY, "mm_per_px"], "mm_per_px")
        on = [c for c in ARCH_KEY if c in mm_per_px.columns]
        cal = mm_per_px[[*on, "mm_per_px"]].copy()
        left = keys[on].copy()
        for c in on:
            left[c] = left[c].astype(str)
            cal[c] = cal[c].astype(str)
        if cal.duplicated(on).any():
            raise InputError(f"mm_per_px has more than one value per {on}; give one per image")
        merged = left.merge(cal, on=on, how="left")
        scale = pd.to_numeric(merged["mm_per_px"], errors="coerce").to_numpy(dtype=float)
        lost = ~np.isfinite(scale)
        if lost.any():
            first = keys.iloc[int(np.flatnonzero(lost)[0])]
            raise InputError(
                f"mm_per_px has no value for {int(lost.sum())} arch(es), e.g. "
                f"patient_id={first['patient_id']!r}, timestamp={first['timestamp']!r}, "
                f"arch={first['arch']!r}; give every image a calibration, or measure the "
                "arches without one in a separate call with mm_per_px=None (pixels), as "
                "dentalkit.study.analyze does"
            )
    else:
        try:
            value = float(mm_per_px)
        except (TypeError, ValueError):
            raise InputError(
                f"mm_per_px must be None, a number or a DataFrame, got {type(mm_per_px).__name__}"
            ) from None
        scale = np.full(m, value)
    if not (np.isfinite(scale) & (scale > 0)).all():
        raise InputError("mm_per_px must be positive and finite")
    return scale, "mm"
