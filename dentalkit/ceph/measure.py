"""``measure``: the landmarks table → a long table of cephalometric measures."""

from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from dentalkit._calibration import resolve_mm_per_px
from dentalkit.ceph._catalog import (
    QUANTITIES,
    compile_default,
    compile_view,
    load_measures,
    load_points,
)
from dentalkit.ceph._engine import evaluate
from dentalkit.ceph._frame import ORIENTATION_LANDMARKS, orient, to_array
from dentalkit.ceph._problems import PROBLEM_COLUMNS, check_column_types, problems_table
from dentalkit.ceph.names import name_translation
from dentalkit.errors import (
    DentalkitWarning,
    InputError,
    check_errors,
    problems_error,
    problems_frame,
)
from dentalkit.landmark_map import key_to_name

__all__ = ["PROBLEM_COLUMNS", "SESSION_COLUMNS", "measure"]

log = logging.getLogger("dentalkit")

#: Default session key columns (those present in the table are used).
SESSION_COLUMNS = ("patient_id", "timestamp", "session_time")
#: Accepted ``errors=`` values: dentalkit's one rule.
Errors = Literal["raise", "collect", "warn"]


def measure(
    landmarks: pd.DataFrame,
    measures: list[str] | str | pd.DataFrame | None = None,
    mm_per_px: float | str | pd.Series | None = None,
    landmark_map: str | Path | pd.DataFrame | None = None,
    *,
    name_map: str | Path | pd.DataFrame | None = None,
    session_cols: list[str] | None = None,
    view: str | None = None,
    errors: Errors = "raise",
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """Compute cephalometric measures for every session of a long landmarks table.

    Parameters
    ----------
    landmarks : DataFrame
        The ``landmarks`` table of docs/data-contract.md, or any long table of named
        landmarks: session key columns, ``view`` (optional), ``name`` and/or
        ``landmark`` (service key such as ``Later_12``), ``x``, ``y`` in pixels,
        image coordinates (y down). Profiles may face left or right.
    measures : list of str, str or DataFrame, optional
        Measure ids and/or analysis names (``"Steiner"``, ``"McNamara"``, ``"frontal"``
        …) to compute; default all. A DataFrame is used as the whole catalogue
        (see :func:`dentalkit.ceph.load_measures`; add a row to add a measure).
    mm_per_px : float, str, Series or DataFrame, optional
        Calibration. A scalar for all sessions; the name of a column of
        ``landmarks`` (constant within a session); a Series indexed by session
        key columns (index names must be session columns, e.g. ``patient_id`` or
        (``patient_id``, ``timestamp``)); or a table with those key columns and a
        ``mm_per_px`` column (the same forms as :func:`dentalkit.teeth.measure`).
        Without it lengths are in ``px``. Millimetres are never guessed; a session
        left uncovered gets NaN lengths and a problem row.
    landmark_map : path-like or DataFrame, optional
        Key → name map used where ``name`` is null (default: the shipped map, see
        :func:`dentalkit.landmark_map.load_landmark_map`).
    name_map : str, path-like or DataFrame, optional
        Translates foreign landmark names to ours (``"isbi2015"`` or a CSV/DataFrame
        with ``source_name``, ``name``); see :mod:`dentalkit.ceph.names`.
    session_cols : list of str, optional
        Columns identifying a session (default: those of ``patient_id``,
        ``timestamp``, ``session_time`` present). Add e.g. ``annotator`` when one
        image was traced twice.
    view : {"lateral", "frontal"}, optional
        Only this view. When the table has no ``view`` column, all rows are taken to
        be of this view (default ``"lateral"``).
    errors : {"raise", "collect", "warn"}, default "raise"
        What to do with problems (absent or repeated landmarks, missing calibration,
        degenerate geometry, undetermined profile direction), by dentalkit's one
        ``errors=`` rule (:func:`dentalkit.errors.check_errors`). ``"raise"`` raises
        :class:`~dentalkit.errors.InputError` listing them (patient, session, view/landmark
        and reason; the whole table on its ``problems`` attribute) and returns nothing;
        ``"collect"`` returns ``(table, problems)`` with the affected measures NaN, never
        guessed; ``"warn"`` returns the table alone and emits one
        :class:`~dentalkit.errors.DentalkitWarning` summarising them.

    Returns
    -------
    DataFrame or (DataFrame, DataFrame)
        Long table, one row per session × measure: the session columns, ``view``,
        ``measure``, ``value`` (float64), ``unit`` (``deg``, ``mm``, ``px``, ``%``),
        ``analysis`` (categoricals except ``value``), sorted by session then
        catalogue order. With ``errors="collect"`` also the problems table (columns
        :data:`dentalkit.errors.PROBLEM_COLUMNS`, then ``view``, ``landmark``,
        ``measures`` and any session columns besides the key).

    Notes
    -----
    Definitions, signs and sources of every measure: ``docs/measures.md``
    (generated by :func:`dentalkit.ceph.reference_table`). The profile direction is
    normalised per session (see :mod:`dentalkit.ceph._frame`), so signed measures keep
    their clinical sign on mirrored films, and all measures are invariant to
    rotation, translation and uniform scaling of the image.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame(
    ...     {
    ...         "patient_id": "p1",
    ...         "timestamp": "t1",
    ...         "name": ["S", "N", "A"],
    ...         "x": [0.0, 70.0, 70.0],
    ...         "y": [0.0, 0.0, 50.0],
    ...     }
    ... )
    >>> out = measure(t, ["SNA", "S_N"], mm_per_px=0.1)
    >>> out[["measure", "value", "unit"]].to_dict("list")
    {'measure': ['SNA', 'S_N'], 'value': [90.0, 7.0], 'unit': ['deg', 'mm']}
    """
    errors = check_errors(errors, "dentalkit.ceph.measure")
    if not isinstance(landmarks, pd.DataFrame):
        raise InputError(f"landmarks must be a pandas DataFrame, got {type(landmarks).__name__}")
    user_catalog = isinstance(measures, pd.DataFrame)
    catalog = load_measures(measures if user_catalog else None)
    requested = _select(catalog, None if isinstance(measures, pd.DataFrame) else measures)
    session_cols = _session_columns(landmarks, session_cols)
    for col in ("x", "y"):
        if col not in landmarks.columns:
            raise InputError(f"landmarks table lacks column {col!r} (pixel coordinates)")
    if "name" not in landmarks.columns and "landmark" not in landmarks.columns:
        raise InputError("landmarks table needs a 'name' or a 'landmark' column")
    landmarks = check_column_types(landmarks, session_cols)
    points = load_points()
    translate = name_translation(name_map)
    length_unit = "px" if mm_per_px is None else "mm"

    views_present = _views(landmarks, view)
    tables, problems = [], []
    measure_cats = list(dict.fromkeys(requested))
    view_of = dict(zip(catalog["id"], catalog["view"], strict=True))
    for v, rows in views_present:
        ids = [m for m in requested if view_of[m] == v]
        if not ids or not len(rows):
            continue
        compiled = (
            compile_view(catalog, points, ids) if user_catalog else compile_default(tuple(ids))
        )
        codes, cats = _name_codes(rows, v, landmark_map, translate)
        extra = [n for n in ORIENTATION_LANDMARKS[v] if n not in compiled.landmarks]
        # session_time is parsed from timestamp (data contract): group without it
        group_cols = [
            c for c in session_cols if not (c == "session_time" and "timestamp" in session_cols)
        ]
        arr = to_array(rows, compiled.landmarks + extra, codes, cats, group_cols, session_cols)
        frame, _mirrored, determined = orient(arr.coords, arr.names, v)
        n_used = len(compiled.landmarks)
        arr.coords, arr.names = arr.coords[:, :n_used, :], arr.names[:n_used]
        arr.duplicated = arr.duplicated[:n_used]
        scale = _calibration(mm_per_px, rows, arr)
        values = evaluate(frame[:, :n_used, :], compiled, scale).T  # (sessions, measures)
        unknown = _orientation_unknown(frame, arr.names + extra, v, determined)
        if unknown.any():  # no axis at all: signed measures would be a guess
            chiral_cols = [i for i, m in enumerate(compiled.ids) if compiled.chiral[m]]
            values[np.ix_(unknown, chiral_cols)] = np.nan
        out = values[:, compiled.output]
        tables.append(_long_table(arr.sessions, v, ids, out, catalog, length_unit, measure_cats))
        problems.append(
            problems_table(rows, arr, compiled, values, determined, unknown, scale, session_cols, v)
        )
    table = (
        pd.concat(tables, ignore_index=True)
        if tables
        else _empty_table(landmarks, session_cols, measure_cats)
    )
    prob = (
        pd.concat([p for p in problems if len(p)], ignore_index=True)
        if any(len(p) for p in problems)
        else pd.DataFrame(columns=PROBLEM_COLUMNS)
    )
    prob = problems_frame(prob, severity="error")
    if errors == "collect":
        return table, prob
    if len(prob) and errors == "raise":
        n_ses = prob[["patient_id", "timestamp"]].drop_duplicates().shape[0]
        raise problems_error(
            prob,
            f"dentalkit.ceph.measure met {len(prob)} problem(s) in {n_ses} session(s)",
            "Pass errors='collect' to get the measures (NaN where a problem leaves them "
            "undetermined) and these rows in a problems table, or errors='warn' for the "
            "table and one warning",
        )
    if len(prob) and errors == "warn":
        n_ses = prob[["patient_id", "timestamp"]].drop_duplicates().shape[0]
        warnings.warn(
            f"{len(prob)} problem(s) in {n_ses} session(s) (e.g. {prob['reason'].iloc[0]}); "
            "the affected measures are NaN. Call measure(..., errors='collect') for the "
            "problems table",
            DentalkitWarning,
            stacklevel=2,
        )
    return table


# ---------------------------------------------------------------------------- helpers


def _select(catalog: pd.DataFrame, measures: list[str] | str | None) -> list[str]:
    if measures is None:
        return list(catalog["id"])
    tokens = [measures] if isinstance(measures, str) else list(measures)
    ids: list[str] = []
    analyses = {a.lower(): a for a in catalog["analysis"].unique()}
    known = set(catalog["id"])
    for tok in tokens:
        if tok in known:
            ids.append(tok)
        elif str(tok).lower() in analyses:
            ids.extend(catalog.loc[catalog["analysis"] == analyses[str(tok).lower()], "id"])
        else:
            import difflib

            close = difflib.get_close_matches(str(tok), list(catalog["id"]), n=3)
            raise InputError(
                f"unknown measure or analysis {tok!r}"
                + (f"; did you mean {close}?" if close else "")
                + f". Analyses: {sorted(catalog['analysis'].unique())}"
            )
    return list(dict.fromkeys(ids))


def _session_columns(table: pd.DataFrame, cols: list[str] | None) -> list[str]:
    if cols is None:
        cols = [c for c in SESSION_COLUMNS if c in table.columns]
        if not cols:
            raise InputError(
                "landmarks table has none of the session columns "
                f"{list(SESSION_COLUMNS)}; pass session_cols=[...] naming the columns that "
                "identify one image/session"
            )
        return cols
    missing = [c for c in cols if c not in table.columns]
    if missing:
        raise InputError(f"session_cols {missing} are not columns of the landmarks table")
    return list(cols)


def _views(table: pd.DataFrame, view: str | None) -> list[tuple[str, pd.DataFrame]]:
    if view is not None and view not in ("lateral", "frontal"):
        raise InputError(f"view must be 'lateral' or 'frontal', got {view!r}")
    if "view" not in table.columns:
        return [(view or "lateral", table)]
    col = table["view"]
    out = []
    for v in ("lateral", "frontal"):
        if view is not None and v != view:
            continue
        mask = (col == v).to_numpy(dtype=bool, na_value=False)
        if mask.any():
            out.append((v, table.loc[mask] if not mask.all() else table))
    return out


def _name_codes(
    rows: pd.DataFrame, view: str, landmark_map, translate: dict[str, str]
) -> tuple[np.ndarray, list]:
    """Per-row index into a category list of anatomical names (−1 = unnamed)."""
    n = len(rows)
    if "name" in rows.columns:
        col = rows["name"]
        if isinstance(col.dtype, pd.CategoricalDtype):
            name_codes = col.cat.codes.to_numpy(np.int64)
            name_cats = list(col.cat.categories)
        else:
            name_codes, uniq = pd.factorize(col, use_na_sentinel=True)
            name_cats = list(uniq)
    else:
        name_codes, name_cats = np.full(n, -1, dtype=np.int64), []
    name_cats = [translate.get(c, c) if isinstance(c, str) else c for c in name_cats]
    codes = np.asarray(name_codes, dtype=np.int64)
    cats: list = list(name_cats)
    unnamed = codes < 0
    if "landmark" in rows.columns and unnamed.any():
        keys = rows["landmark"]
        if isinstance(keys.dtype, pd.CategoricalDtype):
            key_codes = keys.cat.codes.to_numpy(np.int64)
            key_cats = list(keys.cat.categories)
        else:
            key_codes, kuniq = pd.factorize(keys, use_na_sentinel=True)
            key_cats = list(kuniq)
        mapping = key_to_name(view, landmark_map)
        key_names = [mapping.get(str(k)) for k in key_cats]
        key_names = [translate.get(k, k) if isinstance(k, str) else k for k in key_names]
        offset = len(cats)
        cats.extend(key_names)
        kc = np.asarray(key_codes, dtype=np.int64)
        codes = np.where(unnamed & (kc >= 0), offset + kc, codes)
    return codes, cats


def _orientation_unknown(frame: np.ndarray, names: list[str], view: str, determined) -> np.ndarray:
    """Sessions whose handedness was neither determined nor given by an axis pair."""
    pairs = (("S", "N"), ("Po", "Or"), ("PNS", "ANS")) if view == "lateral" else ()
    if view != "lateral":
        return np.zeros(frame.shape[2], bool)  # frontal: image convention (no mirror)
    pos = {n: i for i, n in enumerate(names)}
    has_pair = np.zeros(frame.shape[2], bool)
    for a, b in pairs:
        if a in pos and b in pos:
            has_pair |= ~np.isnan(frame[0, pos[a]]) & ~np.isnan(frame[0, pos[b]])
    return ~determined & ~has_pair


def _calibration(mm_per_px, rows: pd.DataFrame, arr) -> np.ndarray | None:
    """One scale per session (NaN where uncovered or not > 0; problems_table reports those).

    Every form is parsed by the shared resolver (``dentalkit._calibration``) against the
    sessions table; a column of the landmarks table is read per row and must hold one
    value per image.
    """
    if mm_per_px is None:
        return None
    if isinstance(mm_per_px, str):
        vals, _ = resolve_mm_per_px(rows, mm_per_px, np.zeros(len(rows), bool), "landmarks")
        first = vals[arr.first_rows]  # the session's value, checked against every row
        codes = arr.session_codes
        differs = ~np.isclose(vals, first[codes], rtol=1e-9, atol=0.0, equal_nan=True)
        if differs.any():
            who = arr.sessions.iloc[codes[np.flatnonzero(differs)[0]]].to_dict()
            raise InputError(
                f"column {mm_per_px!r} varies within session {who}; calibration must be "
                "one value per image"
            )
        return first
    scale, _ = resolve_mm_per_px(
        arr.sessions, mm_per_px, np.zeros(len(arr.sessions), bool), "the landmarks' sessions"
    )
    return scale


def _long_table(
    sessions: pd.DataFrame,
    view: str,
    ids: list[str],
    values: np.ndarray,
    catalog: pd.DataFrame,
    length_unit: str,
    measure_cats: list[str],
) -> pd.DataFrame:
    n_s, n_m = values.shape
    rep = np.repeat(np.arange(n_s), n_m)
    out = sessions.iloc[rep].reset_index(drop=True)
    quantity = dict(zip(catalog["id"], catalog["quantity"], strict=True))
    analysis = dict(zip(catalog["id"], catalog["analysis"], strict=True))
    units = [QUANTITIES[quantity[m]] or length_unit for m in ids]
    analyses = [analysis[m] for m in ids]
    all_analyses = list(dict.fromkeys(catalog["analysis"]))
    m_codes = np.tile(np.array([measure_cats.index(m) for m in ids]), n_s)
    out["view"] = (
        pd.Categorical.from_codes(np.zeros(len(rep), dtype=np.int8), ["lateral", "frontal"])
        if view == "lateral"
        else pd.Categorical.from_codes(np.ones(len(rep), dtype=np.int8), ["lateral", "frontal"])
    )
    out["measure"] = pd.Categorical.from_codes(m_codes, measure_cats)
    out["value"] = values.reshape(-1).astype(np.float64)
    unit_cats = ["deg", "mm", "px", "%"]
    out["unit"] = pd.Categorical.from_codes(
        np.tile([unit_cats.index(u) for u in units], n_s), unit_cats
    )
    out["analysis"] = pd.Categorical.from_codes(
        np.tile([all_analyses.index(a) for a in analyses], n_s), all_analyses
    )
    return out


def _empty_table(
    landmarks: pd.DataFrame, session_cols: list[str], measure_cats: list[str]
) -> pd.DataFrame:
    out = landmarks[session_cols].iloc[:0].reset_index(drop=True)
    out["view"] = pd.Categorical([], ["lateral", "frontal"])
    out["measure"] = pd.Categorical([], measure_cats)
    out["value"] = pd.Series(dtype=np.float64)
    out["unit"] = pd.Categorical([], ["deg", "mm", "px", "%"])
    out["analysis"] = pd.Categorical([])
    return out
