"""``qc.landmarks``: is each session's landmark configuration what an anatomy gives?

Two checks, per session and view (the method is in ``docs/qc.md``):

1. **The cohort shape model** (when the view has at least ``min_sessions`` sessions): the
   configurations are put in the anatomical frame (:func:`dentalkit.ceph._frame.orient`),
   superimposed by generalised Procrustes analysis (:mod:`dentalkit.qc._gpa`), and each
   landmark is predicted from all the others by a robust Gaussian shape model
   (:mod:`dentalkit.qc._model`). A landmark whose leave-one-out residual exceeds the
   pre-specified threshold is a suspect; suspects are named one at a time (the largest
   first, then the session is scored again with it replaced by its prediction), so that
   one landmark on the wrong structure does not make its neighbours suspect too.
2. **Single-session rules**: measures outside the plausible human range of
   ``dentalkit/data/plausible_ranges.csv`` (lengths only with a calibration).

The threshold. A session is *flagged* when a landmark that the selected measures use is a
suspect (or a rule fails). Each tested landmark's score is χ²₂ under the model (its scale
estimated from sessions the model did not see), and the threshold is the 1 − α/m
prediction bound for the m tested landmarks (Bonferroni; Hotelling's T² for a new
observation, → the χ²₂ quantile in large cohorts), so that a session with no error is
flagged with probability about α. Landmarks the measures do not use are tested at 1 − α/p
(all p landmarks) and listed as suspects without flagging the session.
"""

from __future__ import annotations

import logging
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from dentalkit.ceph._catalog import compile_default, load_measures
from dentalkit.ceph._engine import evaluate
from dentalkit.ceph._problems import check_column_types
from dentalkit.ceph.measure import _calibration, _name_codes, _session_columns, _views
from dentalkit.errors import InputError, check_errors
from dentalkit.qc._arrays import Configurations, configurations
from dentalkit.qc._cohort import MAX_SUSPECTS, score_cohort
from dentalkit.qc._ranges import load_plausible_ranges
from dentalkit.qc._report import finish, problem_rows
from dentalkit.qc._table import no_lists, qc_frame

__all__ = ["landmarks"]

log = logging.getLogger("dentalkit")

#: A landmark enters the shape model when present in at least this fraction of sessions.
MODEL_COVERAGE = 0.5
#: Contour points (names ``{group}_{NN}``) enter the model every CONTOUR_STEP-th point:
#: neighbours on a smooth contour carry nearly the same information, at the same cost.
CONTOUR_STEP = 4


def landmarks(
    landmarks: pd.DataFrame,
    *,
    measures: list[str] | str | None = None,
    mm_per_px: float | str | pd.Series | pd.DataFrame | None = None,
    ranges: str | Path | pd.DataFrame | None = None,
    alpha: float = 0.045,
    min_sessions: int = 50,
    landmark_map: str | Path | pd.DataFrame | None = None,
    errors: str = "raise",
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """Quality control of the landmarks: one row per session and view.

    Parameters
    ----------
    landmarks : DataFrame
        The ``landmarks`` table (or any long table of named landmarks, as
        :func:`dentalkit.ceph.measure` takes), pixel coordinates.
    measures : list of str or str, optional
        The measures (ids or analysis names) the study reports: their landmarks decide
        whether a session is flagged. Default: every measure of the catalogue.
    mm_per_px : float, str, Series or DataFrame, optional
        Calibration, as in :func:`dentalkit.ceph.measure`: lengths then enter the
        plausible-range rules, and displacements are in mm (else px).
    ranges : path-like or DataFrame, optional
        Plausible ranges (default: the verified rows of the shipped table; see
        :func:`load_plausible_ranges`).
    alpha : float, default 0.045
        Pre-specified rate at which a session without error is flagged by the cohort model
        (Bonferroni over the landmarks the measures use). 0.045 is the largest value, in
        steps of 0.005, that flagged ≤ 5 % of the sessions without an error > 4 mm on the
        sandbox's ``realistic`` error mode with seed 1 (the calibration seed; the
        benchmark evaluates seed 2; ``docs/qc.md``).
    min_sessions : int, default 50
        Fewest sessions of a view for the cohort model; fewer: single-session rules only
        (below 50 the model flagged about 9 % of error-free sandbox sessions).
    landmark_map : path-like or DataFrame, optional
        Key → name map used where ``name`` is null (default: the shipped map).
    errors : {"raise", "collect", "warn"}, default "raise"
        Sessions that cannot be checked (fewer than 3 landmarks): dentalkit's ``errors=``
        rule; ``"collect"`` returns ``(table, problems)``.

    Returns
    -------
    DataFrame
        The ``qc_landmarks`` table (``docs/columns.md``): the common qc columns, then
        ``view``, ``suspect_landmarks`` (list of names, most suspect first),
        ``displacement`` (distance of the first suspect from where the others put it),
        ``unit`` (mm or px), ``procrustes_distance`` (from the cohort's mean shape, unit
        centroid size; NaN without the cohort model) and ``n_landmarks``.

    Notes
    -----
    The method, its references (Gower 1975; Rohlf & Slice 1990; Rousseeuw & Van Driessen
    1999; Rousseeuw & Van den Bossche 2018) and its measured accuracy on the sandbox's
    ``realistic`` error mode are in ``docs/qc.md``.
    """
    errors = check_errors(errors, "dentalkit.qc.landmarks")
    if not isinstance(landmarks, pd.DataFrame):
        raise InputError(f"landmarks must be a pandas DataFrame, got {type(landmarks).__name__}")
    for col in ("x", "y"):
        if col not in landmarks.columns:
            raise InputError(f"landmarks table lacks column {col!r} (pixel coordinates)")
    if "name" not in landmarks.columns and "landmark" not in landmarks.columns:
        raise InputError("landmarks table needs a 'name' or a 'landmark' column")
    if not 0 < alpha < 1:
        raise InputError(f"alpha must be in (0, 1), got {alpha!r}")
    if int(min_sessions) < 5:
        raise InputError(f"min_sessions must be at least 5, got {min_sessions!r}")
    session_cols = _session_columns(landmarks, None)
    landmarks = check_column_types(landmarks, session_cols)
    table = load_plausible_ranges(ranges)
    catalog = load_measures()
    wanted = _measure_ids(catalog, measures)
    parts, problems = [], []
    for view, rows in _views(landmarks, None):
        part, prob = _check_view(
            rows, view, session_cols, wanted, mm_per_px, table, alpha, int(min_sessions),
            landmark_map,
        )  # fmt: skip
        parts.append(part)
        problems.append(prob)
    out = pd.concat(parts, ignore_index=True) if parts else _empty(landmarks, session_cols)
    prob = pd.concat(problems, ignore_index=True) if problems else pd.DataFrame()
    return finish(out, prob, errors, "dentalkit.qc.landmarks")


def _measure_ids(catalog: pd.DataFrame, measures: list[str] | str | None) -> list[str]:
    if measures is None:
        return list(catalog["id"])
    tokens = [measures] if isinstance(measures, str) else list(measures)
    analyses = {a.lower(): a for a in catalog["analysis"].unique()}
    ids: list[str] = []
    for tok in tokens:
        if tok in set(catalog["id"]):
            ids.append(tok)
        elif str(tok).lower() in analyses:
            ids += list(catalog.loc[catalog["analysis"] == analyses[str(tok).lower()], "id"])
        else:
            raise InputError(f"unknown measure or analysis {tok!r} in measures=")
    return ids


def _check_view(
    rows: pd.DataFrame,
    view: str,
    session_cols: list[str],
    wanted: list[str],
    mm_per_px,
    table: pd.DataFrame,
    alpha: float,
    min_sessions: int,
    landmark_map,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    codes, cats = _name_codes(rows, view, landmark_map, {})
    group_cols = [
        c for c in session_cols if not (c == "session_time" and "timestamp" in session_cols)
    ]
    keep = session_cols + (["endpoint"] if "endpoint" in rows.columns else [])
    conf = configurations(rows, codes, cats, group_cols, keep, view, _thin)
    names = conf.names
    scale = _calibration(mm_per_px, rows, conf.array)
    n = len(conf.z)
    present = ~np.isnan(conf.z)
    counts = present.sum(axis=1)
    view_ids = [m for m in wanted if m in _view_ids(view)]
    needed = set().union(*compile_default(tuple(view_ids)).needs.values()) if view_ids else set()
    tested = np.array([name in needed for name in names], dtype=bool)
    result = _Result(n)
    in_model = present.mean(axis=0) >= MODEL_COVERAGE if n else np.zeros(0, bool)
    checkable = counts >= 3
    rules, rule_why = _rules(conf, view, table, scale, result, needed)
    if checkable.sum() >= min_sessions and in_model.sum() >= 4:
        _cohort(conf, in_model, tested, alpha, scale, result, checkable)
        method, why = (
            "cohort model",
            (
                f"{int(checkable.sum())} sessions of the {view} view ≥ min_sessions = {min_sessions}: "
                f"generalised Procrustes superimposition of {int(in_model.sum())} landmarks and a "
                f"robust shape model ({result.components} components) predicting each from the others"
            ),
        )
    else:
        method, why = (
            "single-session rules",
            (
                f"{int(checkable.sum())} sessions of the {view} view < min_sessions = {min_sessions}: "
                "too few for a cohort shape model"
            ),
        )
    if rules:
        method = "cohort model and single-session rules" if method == "cohort model" else method
        why += f"; plausible ranges of {rules}"
    else:
        why += f"; {rule_why}"
    if checkable.all():
        methods, whys = method, why
    else:
        methods = np.full(n, method, dtype=object)
        methods[~checkable] = "not checked"
        whys = np.full(n, why, dtype=object)
        whys[~checkable] = "fewer than 3 landmarks present: no check"
    keys = conf.sessions.reset_index(drop=True)
    keys["view"] = pd.Categorical.from_codes(
        np.full(n, 0 if view == "lateral" else 1, dtype=np.int8), ["lateral", "frontal"]
    )
    out = qc_frame(
        "landmarks",
        keys,
        item=f"{view} landmarks",
        flagged=result.flagged & checkable,
        score=result.score,
        threshold=result.threshold,
        reason=result.reasons(names, tested),
        failed_checks=result.failed(),
        method=methods,
        method_reason=whys,
        extra={
            "suspect_landmarks": result.suspect_names(names),
            "displacement": result.displacement,
            "unit": pd.Categorical.from_codes(
                np.full(n, 1 if scale is None else 0, dtype=np.int8), ["mm", "px"]
            ),
            "procrustes_distance": result.distance,
            "n_landmarks": counts.astype(np.int64),
        },
    )
    bad = np.flatnonzero(~checkable)
    prob = problem_rows(
        "landmarks",
        keys.iloc[bad],
        f"{view} view: fewer than 3 landmarks present; the session is not checked",
        field="landmarks",
    )
    return out, prob


def _thin(names: list[str]) -> list[str]:
    """Named landmarks, and every :data:`CONTOUR_STEP`-th point of each contour."""
    keep = []
    for name in names:
        group, _, num = name.rpartition("_")
        if not (group and num.isdigit() and len(num) == 2) or (int(num) - 1) % CONTOUR_STEP == 0:
            keep.append(name)
    return keep


@lru_cache(maxsize=2)
def _view_ids(view: str) -> frozenset[str]:
    cat = load_measures()
    return frozenset(cat.loc[cat["view"] == view, "id"])


class _Result:
    """Per-session outcome of the checks of one view, filled in by the steps."""

    def __init__(self, n: int) -> None:
        self.flagged = np.zeros(n, bool)
        self.score = np.full(n, np.nan)
        self.threshold = np.full(n, np.nan)
        self.displacement = np.full(n, np.nan)
        self.distance = np.full(n, np.nan)
        self.suspects = np.full((n, MAX_SUSPECTS), -1, dtype=np.int64)
        self.rule_text: dict[int, list[str]] = {}
        self.model_flag = np.zeros(n, bool)
        self.rule_flag = np.zeros(n, bool)
        self.components = 0

    def failed(self) -> np.ndarray:
        out = no_lists(len(self.flagged))
        for i in np.flatnonzero(self.model_flag | self.rule_flag):
            out[i] = ["shape model"] * bool(self.model_flag[i]) + ["plausible range"] * bool(
                self.rule_flag[i]
            )
        return out

    def suspect_names(self, names: list[str]) -> np.ndarray:
        out = no_lists(len(self.flagged))
        for i in np.flatnonzero(self.suspects[:, 0] >= 0):
            out[i] = [names[j] for j in self.suspects[i] if j >= 0]
        return out

    def reasons(self, names: list[str], tested: np.ndarray) -> np.ndarray:
        out = np.full(len(self.flagged), None, dtype=object)
        for i in np.flatnonzero(self.suspects[:, 0] >= 0):
            js = [j for j in self.suspects[i] if j >= 0]
            hit = [names[j] for j in js if tested[j]]
            other = [names[j] for j in js if not tested[j]]
            text = []
            if hit:
                text.append(
                    f"landmark(s) {', '.join(hit)} far from where the other landmarks put them "
                    f"(cohort shape model; score {self.score[i]:.1f} ≥ {self.threshold[i]:.1f})"
                )
            if other:
                text.append(
                    f"suspect landmark(s) {', '.join(other)} not used by the measures checked"
                )
            out[i] = "; ".join(text)
        for i, rules in self.rule_text.items():
            out[i] = "; ".join([*([out[i]] if out[i] else []), *rules])
        return out


def _cohort(
    conf: Configurations,
    in_model: np.ndarray,
    tested: np.ndarray,
    alpha: float,
    scale: np.ndarray | None,
    result: _Result,
    checkable: np.ndarray,
) -> None:
    """The cohort check on the model's landmarks (fills ``result``)."""
    cols = np.flatnonzero(in_model)
    z = conf.z[:, cols] if len(cols) < conf.z.shape[1] else conf.z.copy()
    scores = score_cohort(z, checkable, tested[cols], alpha)
    result.components = scores.components
    result.score, result.threshold[:] = scores.score, scores.threshold
    result.flagged |= scores.flagged
    result.model_flag = scores.flagged
    result.distance = scores.distance
    result.displacement = scores.displacement * (1.0 if scale is None else scale)
    has = scores.suspects >= 0
    result.suspects[has] = cols[scores.suspects[has]]


def _rules(
    conf: Configurations,
    view: str,
    table: pd.DataFrame,
    scale: np.ndarray | None,
    result: _Result,
    needed: set[str],
) -> tuple[str, str]:
    """Plausible-range rules of the view; returns (measures used, why none when empty).

    A measure outside its range flags the session when it shares a landmark with the
    measures checked (``needed``); otherwise it is noted in the reason only.
    """
    rows = table[table["view"] == view]
    known = _view_ids(view)
    rows = rows[rows["measure"].isin(known)]
    if scale is None:
        rows = rows[rows["unit"] != "mm"]
    if rows.empty:
        return "", (
            "no plausible-range rule applies to this view"
            + (" without a calibration (lengths need mm_per_px)" if scale is None else "")
        )
    ids = list(rows["measure"])
    compiled = compile_default(tuple(ids))
    coords = conf.frame(compiled.landmarks)
    values = evaluate(coords, compiled, scale)[compiled.output]  # (measures, sessions)
    low = rows["low"].to_numpy()[:, None]
    high = rows["high"].to_numpy()[:, None]
    outside = (values < low) | (values > high)
    relevant = np.array([bool(compiled.needs[m] & needed) for m in ids])
    for m, s in zip(*np.nonzero(outside), strict=True):
        r = rows.iloc[m]
        note = "" if relevant[m] else " (its landmarks are not used by the measures checked)"
        result.rule_text.setdefault(int(s), []).append(
            f"{r['measure']} {values[m, s]:.1f} {r['unit']} outside the plausible range "
            f"{r['low']:g}–{r['high']:g} {r['unit']} ({r['population']}; {r['source']}){note}"
        )
    result.rule_flag = (outside & relevant[:, None]).any(axis=0)
    result.flagged |= result.rule_flag
    return ", ".join(ids), ""


def _empty(table: pd.DataFrame, session_cols: list[str]) -> pd.DataFrame:
    keys = table[session_cols].iloc[:0].reset_index(drop=True)
    keys["view"] = pd.Categorical([], categories=["lateral", "frontal"])
    return qc_frame(
        "landmarks",
        keys,
        item=np.array([], dtype=object),
        flagged=np.zeros(0, bool),
        score=np.zeros(0),
        threshold=np.zeros(0),
        reason=np.array([], dtype=object),
        failed_checks=no_lists(0),
        method=np.array([], dtype=object),
        method_reason=np.array([], dtype=object),
        extra={
            "suspect_landmarks": no_lists(0),
            "displacement": np.zeros(0),
            "unit": pd.Categorical([], categories=["mm", "px"]),
            "procrustes_distance": np.zeros(0),
            "n_landmarks": np.zeros(0, np.int64),
        },
    )
