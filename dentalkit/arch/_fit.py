"""Batched arch-form fits of a whole cohort: ``fit`` (frames, model fits, output table)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd
from scipy import stats

from dentalkit.arch._engine import (
    _BETA_EDGE,
    POSE_PARAMS,
    RESIDUALS,
    _compose,
    _fit_model,
    _models_arg,
    _Problem,
    _problem,
)
from dentalkit.arch._frame import (
    SIDE_SOURCES,
    STATUSES,
    _notnone,
    align_stacked,
    matrices_from,
    transform_params,
)
from dentalkit.arch._models import MODELS, PARAM_COLUMNS, ArchModel
from dentalkit.arch._tables import Errors, Stacked, stack_points
from dentalkit.errors import PROBLEM_COLUMNS as _DECLARED_PROBLEMS
from dentalkit.errors import InputError, attached_problems, problems_frame

#: Iterations of the free-pose parabola pre-fit that refines the starting frame (a frame
#: needs no more; the parabola model itself continues from it to convergence).
_PREFIT_ITER = 4
#: Parameters positive by definition: not identified when their CI reaches zero.
_POSITIVE = ("a", "depth", "width", "c2")
#: Columns also given for fits on a boundary (the likelihood there is the limit's).
_SCORES = ("rss", "rmse", "aic", "aicc", "bic", "x_min", "x_max")
#: ln 2π + 1, of the Gaussian log-likelihood.
_LOG2PI1 = np.log(2.0 * np.pi) + 1.0


def fit(
    arch_points: pd.DataFrame,
    model: str | Sequence[str] = "all",
    *,
    pose: str = "fit",
    residual: str = "orthogonal",
    tooth_keypoints: pd.DataFrame | None = None,
    mm_per_px: float | pd.DataFrame | None = None,
    first_point_side: str = "right",
    point_keys: str = "auto",
    max_iter: int = 200,
    level: float = 0.95,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """Fit arch-form models to every arch of a cohort in one batched computation.

    Parameters
    ----------
    arch_points : DataFrame
        The ``arch_points`` table (session key, ``arch``, ``index``/``point``,
        ``x``, ``y`` in pixels; points ordered along the arch by ``index``).
    model : str or list of str
        ``"catenary"``, ``"beta"``, ``"poly4"``, ``"poly6"``, ``"parabola"``, a
        list of them, or ``"all"`` (default). See :data:`MODELS` and ``docs/arch.md``.
    pose : {"fit", "fixed"}
        ``"fit"`` (default): the curve's vertex ``(x0, y0)`` and axis tilt φ in
        the :func:`align` frame are estimated with the shape (3 extra
        parameters), so the result does not depend on how the points are
        spaced. ``"fixed"``: the :func:`align` frame is kept and only a vertical
        offset ``y0`` is estimated (1 extra parameter).
    residual : {"orthogonal", "vertical"}
        ``"orthogonal"`` (default): residuals are distances to the curve,
        ``(y' − f(x')) / √(1 + f'(x')²)`` (first-order orthogonal distance),
        right for points with noise in both coordinates and steep arch ends.
        ``"vertical"``: ``y' − f(x')``, the classical least squares of the
        arch-form literature. With ``pose="fixed"`` and ``"vertical"`` the
        polynomial models are exactly linear and solved by one stacked
        least-squares call for the whole cohort.
    tooth_keypoints : DataFrame, optional
        Used only to tell the patient's left from right (see :func:`align`).
    mm_per_px : float or DataFrame, optional
        Calibration (one number, or per image); parameters are then in mm.
    first_point_side, point_keys : str
        How the patient's sides and the order along the arch are read (see
        :func:`align`).
    max_iter : int
        Iteration limit of the Levenberg–Marquardt solver.
    level : float
        Confidence level of the parameter intervals (default 0.95).
    errors : {"raise", "collect", "warn"}
        dentalkit's one ``errors=`` rule (:func:`dentalkit.errors.check_errors`).
        Bad point rows raise :class:`~dentalkit.errors.InputError` (``"raise"``,
        default), or make their arch a result row with ``status="bad_input"``
        (``"collect"``; ``"warn"`` also emits one
        :class:`~dentalkit.errors.DentalkitWarning`).

    Returns
    -------
    DataFrame
        One row per arch × model (wide): session key (+ ``session_time``,
        ``endpoint``, ``model_version`` when present), ``arch``, ``model``,
        ``status`` ("ok" or the problem), ``reason``, ``pose``, ``residual``, ``n_points``,
        ``n_params`` (all estimated parameters, pose and σ² included),
        ``unit``; the shape parameters ``a`` (catenary), ``depth``, ``width``
        (beta D, W), ``c2``, ``c4``, ``c6`` (polynomials; NaN for parameters the
        model lacks), each with ``<p>_se``, ``<p>_ci_lower``, ``<p>_ci_upper``
        (s²·(JᵀJ)⁻¹ at the optimum, t-interval), ``ci_level``, ``not_identified``
        (list of the parameters the points do not determine; empty when all are determined,
        None when the status is not ``ok`` and there are no SEs); ``rss``, ``rmse`` (√(rss/n)),
        ``aic``, ``aicc``, ``delta_aicc``, ``aicc_weight`` (Akaike weight among the
        arch's models), ``bic``;
        ``x_min``, ``x_max`` (extent of the points along the model's x-axis);
        the model frame ``rotation_deg``, ``reflected``, ``tx``, ``ty``,
        ``scale`` (image → model coordinates as in :func:`to_canonical`);
        ``side_source``; ``iterations``. Rows whose ``status`` is not "ok" carry
        NaN parameters and say why in ``reason``; no exception is raised for
        arches that cannot be fitted. ``status="boundary"`` (beta only): the best
        beta curve is its parabola limit W → ∞; ``depth`` and ``width`` are inf,
        and the fit statistics (rss … bic, weights) are those of the limit.

    Notes
    -----
    ``rss`` is the sum of squared residuals (orthogonal or vertical as chosen),
    in the model's own frame. Information criteria use the Gaussian
    likelihood of the residuals with σ² = rss/n:
    ``AIC = n·ln(rss/n) + n·(ln 2π + 1) + 2k``, ``BIC = … + k·ln n``,
    ``AICc = AIC + 2k(k+1)/(n−k−1)``, with ``k = n_params``. Akaike weights:
    Burnham & Anderson (2002), §2.9. Standard errors: Bates & Watts (1988), §2.3.
    The beta function is fitted as (κ, v) = (4eD/W², 4/W²) so that its parabola
    limit is a boundary, not a runaway (``docs/arch.md``).

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> x = np.linspace(-20, 20, 11)
    >>> pts = pd.DataFrame(
    ...     {
    ...         "patient_id": "p1",
    ...         "timestamp": "t",
    ...         "arch": "up",
    ...         "index": np.arange(11),
    ...         "x": 100 + x,
    ...         "y": 200 - 0.05 * x**2,
    ...     }
    ... )
    >>> f = fit(pts, "parabola")
    >>> float(f["c2"].iloc[0].round(9)), f["status"].iloc[0]
    (0.05, 'ok')
    """
    if pose not in POSE_PARAMS:
        raise InputError(f"pose must be 'fit' or 'fixed', got {pose!r}")
    if residual not in RESIDUALS:
        raise InputError(f"residual must be 'orthogonal' or 'vertical', got {residual!r}")
    models = _models_arg(model)
    st = stack_points(arch_points, mm_per_px=mm_per_px, errors=errors, point_keys=point_keys)
    if not 0.0 < level < 1.0:
        raise InputError(f"level must be between 0 and 1, got {level!r}")
    out = _fit_stacked(
        st, models, pose, residual, tooth_keypoints, first_point_side, max_iter, level=level
    )
    out.attrs["problems"] = st.problems  # plain records: comparable, survive copies
    return out


#: Columns of :func:`problems`: the one problems schema, then ``arch`` and ``index_label``.
PROBLEM_COLUMNS = (*_DECLARED_PROBLEMS, "arch", "index_label")


def problems(fits: pd.DataFrame) -> pd.DataFrame:
    """The problems table of an :func:`fit` or :func:`measure` result: one row per offending
    input row.

    With ``errors="collect"`` or ``"warn"``, an arch with bad point rows (non-finite
    ``x``/``y``, a repeated point number) stays in the fit table as a row with
    ``status="bad_input"`` and NaN parameters (the shape of a results table, where each
    arch says what became of it); likewise a measure that needs a present tooth with
    non-finite ``x``/``y`` is a ``bad_input`` row of the :func:`measure` table. This table
    lists the input rows behind them in dentalkit's one problems schema, so they join the
    problems of every other producer.

    Parameters
    ----------
    fits : pandas.DataFrame
        A result of :func:`fit` or :func:`measure` (or a frame derived from one that kept
        its ``attrs``).

    Returns
    -------
    pandas.DataFrame
        Columns :data:`dentalkit.errors.PROBLEM_COLUMNS` (``table`` ``"arch_points"`` or
        ``"tooth_keypoints"``, ``row`` the 0-based position of the input row, ``field``
        ``x``, ``y`` or the point number column, ``value`` the value found, ``severity``
        ``"error"``), then ``arch`` and ``index_label`` (the row's label in your index).
        Empty when every input row was usable.

    Raises
    ------
    InputError
        ``fits`` carries no problems record (not a result of :func:`fit` or
        :func:`measure`, or pandas dropped its ``attrs``, as it does when concatenating
        results whose problems differ).

    Examples
    --------
    >>> import pandas as pd
    >>> from dentalkit import arch
    >>> x = [-20.0, -15.0, -8.0, 0.0, 8.0, 15.0, float("nan")]
    >>> pts = pd.DataFrame(
    ...     {
    ...         "patient_id": "P1",
    ...         "timestamp": "t",
    ...         "arch": "up",
    ...         "index": range(7),
    ...         "x": x,
    ...         "y": [0.05 * v * v for v in x],
    ...     }
    ... )
    >>> f = arch.fit(pts, "parabola", errors="collect")
    >>> f["status"].tolist()
    ['bad_input']
    >>> arch.problems(f)[["row", "field", "value", "arch"]].values.tolist()
    [[6, 'x', 'nan', 'up']]
    """
    records = attached_problems(fits, "arch", "arch.fit or arch.measure")
    table = pd.DataFrame.from_records(records, columns=list(PROBLEM_COLUMNS))
    return problems_frame(table, table="arch_points", severity="error")


@dataclass
class _Prepared:
    """Frames and normalised coordinates of every arch, ready for the model fits."""

    source: np.ndarray
    frame_reason: np.ndarray
    framed: np.ndarray
    ex: np.ndarray
    ey: np.ndarray
    origin: np.ndarray
    prob: _Problem
    #: The free-pose parabola fit in the refined frame, (c2, 0, 0, 0) (NaN where not
    #: refined): the parabola model starts there, at its optimum.
    parabola_start: np.ndarray | None = None


def _prepare(
    st: Stacked,
    pose: str,
    residual: str,
    tooth_keypoints: pd.DataFrame | None,
    first_point_side: str,
    max_iter: int,
    refine: bool = True,
) -> _Prepared:
    params, source, frame_reason = align_stacked(st, tooth_keypoints, first_point_side)
    m = len(st.n)
    framed = np.array([r is None for r in frame_reason], dtype=bool)
    M0, _, _ = matrices_from(
        params["rotation_deg"], params["reflected"], np.zeros((m, 2)), np.ones(m)
    )
    ex, ey = M0[:, 0, :], M0[:, 1, :]
    origin = np.stack([params["tx"], params["ty"]], 1) * st.scale[:, None]
    prob = _problem(st, ex, ey, origin, framed)
    if pose == "fit" and refine:
        # Second pass of the starting frame: a parabola with free vertex and tilt
        # (robust, few local minima) corrects the geometric frame when the points
        # are not spaced symmetrically; every model then starts from it.
        par = MODELS["parabola"]
        res = _fit_model(prob, par, "fit", framed & (st.n >= 5), _PREFIT_ITER, residual)
        # "not_converged" after _PREFIT_ITER iterations is expected: the frame is still good
        good = np.isin(res["status"], [None, "not_converged"]) & np.isfinite(res["P"]).all(1)
        good &= np.abs(res["P"][:, par.k + 2]) < np.pi / 4
        if good.any():
            s = prob.s
            ex2, ey2, o2 = _compose(
                ex, ey, origin, res["P"][:, 2] * s, res["P"][:, 1] * s, res["P"][:, 3]
            )
            ex = np.where(good[:, None], ex2, ex)
            ey = np.where(good[:, None], ey2, ey)
            origin = np.where(good[:, None], o2, origin)
            prob = _problem(st, ex, ey, origin, framed)
        # s is the RMS radius about the centroid, unchanged by the new frame
        start = np.full((m, par.k + 3), np.nan)
        start[good] = 0.0
        start[good, 0] = res["P"][good, 0]
        return _Prepared(source, frame_reason, framed, ex, ey, origin, prob, start)
    return _Prepared(source, frame_reason, framed, ex, ey, origin, prob)


def _fit_stacked(
    st: Stacked,
    models: list[ArchModel],
    pose: str,
    residual: str,
    tooth_keypoints: pd.DataFrame | None,
    first_point_side: str,
    max_iter: int,
    *,
    level: float = 0.95,
) -> pd.DataFrame:
    # the refinement is a free-pose parabola fit: for the parabola alone it is the fit
    only_parabola = [m.name for m in models] == ["parabola"]
    pre = _prepare(
        st, pose, residual, tooth_keypoints, first_point_side, max_iter, refine=not only_parabola
    )
    source, frame_reason, framed = pre.source, pre.frame_reason, pre.framed
    ex, ey, origin, prob = pre.ex, pre.ey, pre.origin, pre.prob
    m = len(st.n)
    npose = len(POSE_PARAMS[pose])
    frames = []
    distinct = _distinct_points(st)
    for mod in models:
        kk = mod.k + npose
        enough = distinct >= kk + 1
        fittable = framed & enough
        start = pre.parabola_start if mod.name == "parabola" else None
        res = _fit_model(prob, mod, pose, fittable, max_iter, residual, start=start)
        status = res["status"].copy()
        reason = res["reason"].copy()
        few = framed & ~enough
        status[few] = "too_few_points"
        need = f"{mod.name} with pose={pose!r} needs at least {kk + 1} points"
        reason[few] = [
            need if d == n else f"{need}: {n} points but only {d} distinct (repeated coordinates)"
            for d, n in zip(distinct[few], st.n[few], strict=True)
        ]
        nofr = ~framed
        status[nofr] = np.where(_notnone(st.bad[nofr]), "bad_input", "degenerate")
        reason[nofr] = frame_reason[nofr]
        P = res["P"]
        s = prob.s
        shape = P[:, : mod.k] * s[:, None] ** np.array(mod.length_power, dtype=float)
        y0 = P[:, mod.k] * s
        x0 = P[:, mod.k + 1] * s if npose == 3 else np.zeros(m)
        phi = P[:, mod.k + 2] if npose == 3 else np.zeros(m)
        # model frame: origin at the vertex, axes tilted by phi (in calibrated units)
        ex2, ey2, o2 = _compose(ex, ey, origin, x0, y0, phi)
        tp = transform_params(ex2, ey2, o2, st.scale)
        d = st.xy - o2[:, None, :]
        xm = np.einsum("mnj,mj->mn", d, ex2)
        xmin = np.where(st.mask, xm, np.inf).min(1)
        xmax = np.where(st.mask, xm, -np.inf).max(1)
        if mod.name == "beta" and residual == "vertical":
            half = shape[:, 1] / 2.0
            # at (to rounding) or beyond the ends: the fit ended on the domain's edge
            edge = half[:, None] * (1.0 - _BETA_EDGE)
            outside = np.where(st.mask, ~(np.abs(xm) < edge), False).sum(1)
            fitted = np.isin(status, [None, "degenerate", "not_converged"]) & framed & enough
            hit = fitted & (outside > 0) & np.isfinite(half)
            status[hit] = "out_of_domain"
            reason[hit] = [
                f"{k} point(s) lie at or beyond x = ±W/2, the ends of the beta function: "
                "its best fit ends on the data (no interior optimum)"
                for k in outside[hit]
            ]
        if mod.name == "beta":
            negative = (status == None) & ~((shape[:, 0] > 0) & (shape[:, 1] > 0))  # noqa: E711
            status[negative] = "degenerate"
            reason[negative] = "fitted depth D or width W is not positive"
        finite = np.isfinite(shape).all(1) & np.isfinite(res["rss"])
        lost = (status == None) & ~finite  # noqa: E711
        status[lost] = "not_converged"
        reason[lost] = "fit ended on non-finite values"
        ok = status == None  # noqa: E711
        status[ok] = "ok"
        scored = ok | (status == "boundary")  # the boundary's rss and AIC are the limit's
        rss = res["rss"] * s**2
        power = np.array(mod.length_power, dtype=float)
        var = np.einsum("mjj->mj", res["cov"][:, : mod.k, : mod.k])
        se = np.sqrt(np.where(var >= 0, var, np.nan)) * s[:, None] ** power
        n_df = st.n - kk
        dfs, inv = np.unique(np.where(n_df > 0, n_df, 1), return_inverse=True)
        tq = stats.t.ppf(0.5 + level / 2.0, dfs)[inv]  # a few distinct df: one call each
        tq = np.where(n_df > 0, tq, np.nan)
        n = st.n.astype(float)
        k_all = kk + 1
        with np.errstate(divide="ignore", invalid="ignore"):
            loglik_part = n * np.log(rss / n) + n * _LOG2PI1
            aic = loglik_part + 2 * k_all
            bic = loglik_part + k_all * np.log(n)
            aicc = np.where(
                n - k_all - 1 > 0, aic + 2 * k_all * (k_all + 1) / (n - k_all - 1), np.nan
            )
            rmse = np.sqrt(rss / n)
        # the model's columns as arrays; one DataFrame is built at the end (inserting
        # ~50 columns one by one into a frame, per model, cost more than the fit of
        # a simple model)
        nan = np.full(m, np.nan)
        cols: dict[str, np.ndarray] = {
            "status": status,
            "reason": reason,
            "n_points": st.n.astype(np.int64),
            "n_params": np.full(m, k_all, np.int64),
        }
        cols.update(dict.fromkeys(PARAM_COLUMNS, nan))
        boundary = status == "boundary"
        for j, col in enumerate(mod.params):
            cols[col] = np.where(ok, shape[:, j], np.where(boundary, shape[:, j], np.nan))
        for col in PARAM_COLUMNS:
            cols[f"{col}_se"] = cols[f"{col}_ci_lower"] = cols[f"{col}_ci_upper"] = nan
        code = np.zeros(m, np.int64)  # bit j: parameter j not identified
        for j, col in enumerate(mod.params):
            est, sj = shape[:, j], se[:, j]
            cols[f"{col}_se"] = np.where(ok, sj, np.nan)
            cols[f"{col}_ci_lower"] = np.where(ok, est - tq * sj, np.nan)
            cols[f"{col}_ci_upper"] = np.where(ok, est + tq * sj, np.nan)
            with np.errstate(invalid="ignore"):
                vague = ~np.isfinite(sj)
                if col in _POSITIVE:
                    vague |= ~(tq * sj < np.abs(est))
            code |= (ok & vague).astype(np.int64) << j
        names = {c: [p for j, p in enumerate(mod.params) if c >> j & 1] for c in np.unique(code)}
        cols["ci_level"] = np.full(m, float(level))
        # a list per fit (empty: every parameter identified); None where the status is not
        # "ok" (no SEs: identification was not assessed)
        listed = np.empty(m, dtype=object)
        for i, (c, o) in enumerate(zip(code, ok, strict=True)):
            listed[i] = list(names[c]) if o else None
        cols["not_identified"] = listed
        for col, val in (
            ("rss", rss),
            ("rmse", rmse),
            ("aic", aic),
            ("aicc", aicc),
            ("bic", bic),
            ("x_min", xmin),
            ("x_max", xmax),
        ):
            cols[col] = np.where(ok | (scored & (col in _SCORES)), val, np.nan)
        for col in ("rotation_deg", "tx", "ty"):
            cols[col] = np.where(ok, tp[col], np.nan)
        cols["reflected"] = np.where(ok, tp["reflected"], False)
        cols["_ok"] = ok
        cols["scale"] = st.scale
        cols["side_source"] = np.where(ok, source, None)
        cols["iterations"] = res["iterations"]
        frames.append(cols)
    return _table(st, models, frames, pose, residual)


def _table(
    st: Stacked, models: list[ArchModel], frames: list[dict[str, np.ndarray]], pose, residual
) -> pd.DataFrame:
    """The output table from each model's column arrays: one row per arch × model, the
    models of an arch in registry order, with the Akaike weights across them."""
    m, nm = len(st.n), len(models)
    delta, weight = _akaike_weights([f["aicc"] for f in frames])
    reg = np.array([list(MODELS).index(mod.name) for mod in models], dtype=np.int64)
    morder = np.argsort(reg, kind="stable")
    # row of (arch a, k-th model in registry order) in the model-major concatenation
    src = (morder[None, :] * m + np.arange(m)[:, None]).reshape(-1)

    def col(name: str, values: list[np.ndarray] | None = None) -> np.ndarray:
        parts = [f[name] for f in frames] if values is None else values
        return np.concatenate(parts)[src] if nm > 1 else parts[0]

    keys = st.keys.copy()
    keys["arch"] = pd.Categorical(keys["arch"].astype(str), categories=["up", "lo"])
    if nm > 1:
        keys = keys.take(np.repeat(np.arange(m), nm)).reset_index(drop=True)
    ok = col("_ok")
    data: dict[str, object] = {
        "model": pd.Categorical.from_codes(np.tile(reg[morder], m), categories=list(MODELS)),
        "status": pd.Categorical(col("status"), categories=STATUSES),
        "reason": pd.array(col("reason").tolist(), dtype="string"),
        "pose": pd.Categorical.from_codes(
            np.full(m * nm, list(POSE_PARAMS).index(pose)), categories=list(POSE_PARAMS)
        ),
        "residual": pd.Categorical.from_codes(
            np.full(m * nm, list(RESIDUALS).index(residual)), categories=list(RESIDUALS)
        ),
        "n_points": col("n_points"),
        "n_params": col("n_params"),
        "unit": pd.Categorical.from_codes(
            np.full(m * nm, ["px", "mm"].index(st.unit)), categories=["px", "mm"]
        ),
    }
    for name in frames[0] if frames else ():
        if name in data or name in ("_ok", "reflected", "scale", "side_source", "iterations"):
            continue
        data[name] = col(name)
        if name == "aicc":
            data["delta_aicc"] = col("", delta)
            data["aicc_weight"] = col("", weight)
    data["reflected"] = pd.arrays.BooleanArray(col("reflected").astype(bool), ~ok)
    data["scale"] = col("scale")
    data["side_source"] = pd.Categorical(col("side_source"), categories=SIDE_SOURCES)
    data["iterations"] = col("iterations")
    return pd.concat([keys, pd.DataFrame(data)], axis=1)


def _distinct_points(st: Stacked) -> np.ndarray:
    """Points per arch with coordinates not repeated by an earlier point of the arch."""
    xy, mask = st.xy, st.mask
    count = mask.sum(1)
    earlier = np.tril(np.ones((xy.shape[1], xy.shape[1]), bool), -1)  # j < i
    x = np.where(mask, xy[..., 0], np.nan)  # NaN never equals: padding and bad points
    # a repeated x first (rare in measured data), then the full check on those arches only
    rows = np.flatnonzero(((x[:, :, None] == x[:, None, :]) & earlier).any((1, 2)))
    if rows.size:
        sub, msk = xy[rows], mask[rows]
        same = (sub[:, :, None, :] == sub[:, None, :, :]).all(-1)
        same &= msk[:, :, None] & msk[:, None, :] & earlier
        count[rows] = (msk & ~same.any(2)).sum(1)
    return count


def _akaike_weights(aicc: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    """``delta_aicc`` and ``aicc_weight`` per arch across the models fitted (one row per
    model, in the order of ``aicc``).

    Akaike weight of model i: exp(−Δ_i/2) / Σ_j exp(−Δ_j/2) with Δ_i = AICc_i − min AICc
    over the models with a finite AICc (Burnham KP, Anderson DR. Model Selection and
    Multimodel Inference, 2nd ed. Springer 2002, §2.9).
    """
    aicc = np.stack(aicc)
    finite = np.isfinite(aicc)
    with np.errstate(invalid="ignore"):
        best = np.where(finite, aicc, np.inf).min(axis=0)
        delta = np.where(finite, aicc - best, np.nan)
        w = np.where(finite, np.exp(-0.5 * np.nan_to_num(delta, nan=np.inf)), 0.0)
        tot = w.sum(axis=0)
        w = np.where(finite & (tot > 0), w / np.where(tot > 0, tot, 1.0), np.nan)
    return delta, w
