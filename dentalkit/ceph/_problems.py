"""The problems table of :func:`dentalkit.ceph.measure` (absent or repeated landmarks,
missing calibration, undetermined profile direction, degenerate geometry)."""

from __future__ import annotations

import reprlib

import numpy as np
import pandas as pd

from dentalkit.errors import PROBLEM_COLUMNS as _DECLARED

__all__ = ["PROBLEM_COLUMNS", "problems_table"]

#: Columns of the problems table: dentalkit's one problems schema
#: (:data:`dentalkit.errors.PROBLEM_SCHEMA`), then view, landmark, measures (context: the
#: measure ids left NaN, a list of str per row).
PROBLEM_COLUMNS = [*_DECLARED, "view", "landmark", "measures"]


def _lists(values) -> np.ndarray:
    """An object array with one fresh list per cell (numpy would stack equal-length lists)."""
    out = np.empty(len(values), dtype=object)
    for i, v in enumerate(values):
        out[i] = list(v)
    return out


def problems_table(
    rows: pd.DataFrame,
    arr,
    compiled,
    values: np.ndarray,
    determined: np.ndarray,
    unknown: np.ndarray,
    scale: np.ndarray | None,
    session_cols: list[str],
    view: str,
) -> pd.DataFrame:
    """One row per (session, landmark) absence/repetition, calibration gap, degeneracy."""
    names = compiled.landmarks
    out_ids = [compiled.ids[i] for i in compiled.output]
    uses = {n: [m for m in out_ids if n in compiled.needs[m]] for n in names}
    absent = np.isnan(arr.coords[0]).T  # (sessions, landmarks)
    s_idx, p_idx = np.nonzero(absent)
    dup = arr.duplicated.T[s_idx, p_idx]
    used = np.array([bool(uses[n]) for n in names], dtype=bool)
    keep = used[p_idx] if len(names) else np.zeros(0, bool)
    s_idx, p_idx, dup = s_idx[keep], p_idx[keep], dup[keep]
    absent_txt = np.array(
        [f"landmark {n!r} absent (or non-finite x/y): NaN for {', '.join(uses[n])}" for n in names],
        dtype=object,
    )
    dup_txt = np.array(
        [
            f"landmark {n!r} given more than once; treated as absent: NaN for {', '.join(uses[n])}"
            for n in names
        ],
        dtype=object,
    )
    name_arr = np.array(names, dtype=object)
    frames = [
        pd.DataFrame(
            {
                "s": s_idx,
                "landmark": name_arr[p_idx] if len(p_idx) else np.zeros(0, object),
                "measures": _lists([uses[names[p]] for p in p_idx]),
                "reason": np.where(dup, dup_txt[p_idx], absent_txt[p_idx])
                if len(p_idx)
                else np.zeros(0, object),
            }
        )
    ]
    recs: list[dict] = []
    if scale is not None:
        for s in np.flatnonzero(~np.isfinite(scale)).tolist():
            lengths = [m for m in out_ids if compiled.is_length[compiled.ids.index(m)]]
            recs.append(
                {
                    "s": s,
                    "landmark": None,
                    "measures": list(lengths),
                    "reason": "no valid mm_per_px for this session: length measures are NaN",
                }
            )
    chiral = [m for m in out_ids if compiled.chiral.get(m, False)]
    for s in np.flatnonzero(~determined).tolist() if chiral else []:
        if unknown[s]:
            reason = (
                "profile direction unknown (none of S-N, Po-Or, PNS-ANS present): signed "
                "measures are NaN"
            )
        else:
            reason = (
                "profile direction not determined from the landmarks; image convention "
                "assumed (lateral: the S-N, Po-Or or PNS-ANS pair points anterior in the "
                "image; frontal: patient's right on the image left)"
            )
        recs.append({"s": s, "landmark": None, "measures": list(chiral), "reason": reason})
    # degenerate geometry: NaN although every needed landmark is present
    out_vals = values[:, compiled.output]
    rows_nan = np.flatnonzero(np.isnan(out_vals).any(axis=1))
    need = np.array([[n in compiled.needs[m] for n in names] for m in out_ids], dtype=bool)
    if need.size and len(rows_nan):
        sub_absent = absent[rows_nan].astype(np.int32)
        missing_any = (sub_absent @ need.T.astype(np.int32)) > 0  # (s', m)
        bad = np.isnan(out_vals[rows_nan]) & ~missing_any
        if scale is not None:
            bad &= np.isfinite(scale[rows_nan])[:, None]
        for s, m in zip(*np.nonzero(bad), strict=True):
            recs.append(
                {
                    "s": int(rows_nan[s]),
                    "landmark": None,
                    "measures": [out_ids[m]],
                    "reason": f"degenerate geometry (coincident landmarks) for {out_ids[m]}: NaN",
                }
            )
    if recs:
        frames.append(
            pd.DataFrame.from_records(recs, columns=["s", "landmark", "measures", "reason"])
        )
    prob = (
        pd.concat([f for f in frames if len(f)], ignore_index=True)
        if any(len(f) for f in frames)
        else None
    )
    if prob is None:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in PROBLEM_COLUMNS})
    prob = prob.sort_values("s", kind="stable").reset_index(drop=True)
    ses = arr.sessions.iloc[prob["s"].to_numpy()].reset_index(drop=True)
    endpoint = None
    if "endpoint" in rows.columns:
        ep = rows["endpoint"].astype(object).to_numpy()[arr.first_rows]
        endpoint = ep[prob["s"].to_numpy()]
    table = pd.DataFrame(
        {
            "table": "ceph_measures",
            "endpoint": endpoint,
            "patient_id": ses["patient_id"].astype(object).to_numpy()
            if "patient_id" in ses
            else None,
            "timestamp": ses["timestamp"].astype(object).to_numpy() if "timestamp" in ses else None,
            "row": None,
            "path": [f"{view}/{lm}" if lm else view for lm in prob["landmark"]],
            "reason": prob["reason"].to_numpy(),
            "severity": "error",
            "view": view,
            "landmark": prob["landmark"].to_numpy(),
            "measures": _lists(prob["measures"]),
        }
    )
    for c in session_cols:
        if c not in ("patient_id", "timestamp"):
            table[c] = ses[c].to_numpy()
    return table


def check_column_types(landmarks: pd.DataFrame, key_cols: list[str]) -> pd.DataFrame:
    """``landmarks`` with ``x``/``y`` as float64, or an InputError naming the first bad cell.

    Coordinates must be numbers (numeric strings are not guessed); session, ``name`` and
    ``landmark`` values must be scalars (text or numbers), not lists or dicts.
    """
    from dentalkit.errors import InputError

    def first_bad(mask: pd.Series) -> int:
        return int(np.flatnonzero(mask.to_numpy(bool))[0])

    out = landmarks
    for col in ("x", "y"):
        values = landmarks[col]
        if pd.api.types.is_numeric_dtype(values) and not pd.api.types.is_bool_dtype(values):
            continue
        bad = values.map(
            lambda v: (
                not (isinstance(v, int | float | np.integer | np.floating))
                or isinstance(v, bool | np.bool_)
            ),
            na_action="ignore",
        )
        bad = bad.fillna(False).astype(bool)
        if bad.any():
            row = first_bad(bad)
            raise InputError(
                f"landmarks column {col!r} must hold numbers (pixels); row {row} (0-based position) holds "
                f"{type(values.iloc[row]).__name__} {reprlib.repr(values.iloc[row])}"
            )
        if out is landmarks:
            out = landmarks.copy()
        out[col] = pd.to_numeric(values.astype(object), errors="coerce").astype("float64")
    for col in [*key_cols, "name", "landmark"]:
        if col not in landmarks.columns or landmarks[col].dtype != object:
            continue
        values = landmarks[col]
        bad = values.map(lambda v: isinstance(v, list | dict | set | tuple | bytearray))
        if bad.any():
            row = first_bad(bad)
            raise InputError(
                f"landmarks column {col!r} must hold text or numbers; row {row} (0-based position) holds a "
                f"{type(values.iloc[row]).__name__} {reprlib.repr(values.iloc[row])}"
            )
    return out
