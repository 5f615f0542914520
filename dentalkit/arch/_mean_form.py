"""Mean arch form of groups of arches, with a pointwise confidence band."""

from __future__ import annotations

import warnings
from collections.abc import Sequence

import numpy as np
import pandas as pd
from scipy import stats

from dentalkit.arch._curve import evaluate
from dentalkit.arch._engine import _models_arg
from dentalkit.arch._fit import _fit_stacked
from dentalkit.arch._models import MODELS
from dentalkit.arch._tables import (
    ARCH_KEY,
    Errors,
    check_errors_arg,
    require_columns,
    stack_points,
)
from dentalkit.errors import PROBLEM_COLUMNS, DentalkitWarning, InputError, problems_error

#: How to go on after :func:`mean_form` raised on groups it cannot average.
MEAN_FORM_HINT = (
    "The status and reason columns of arch.fit say why each arch was not fitted: fix or "
    "leave out those arches, or pass errors='collect' to average the other groups and get "
    "these as problem rows (arch.problems(result); errors='warn': the same, plus one warning)"
)


def _by_list(by: str | Sequence[str] | None) -> list[str]:
    if by is None:
        return []
    return [by] if isinstance(by, str) else list(by)


def mean_form(
    fits_or_points: pd.DataFrame,
    by: str | Sequence[str] | None = None,
    *,
    model: str = "catenary",
    n: int = 101,
    level: float = 0.95,
    pose: str = "fit",
    residual: str = "orthogonal",
    tooth_keypoints: pd.DataFrame | None = None,
    mm_per_px: float | pd.DataFrame | None = None,
    first_point_side: str = "right",
    point_keys: str = "auto",
    errors: Errors = "raise",
    unit: str | None = "patient_id",
) -> pd.DataFrame:
    """Mean arch form of each group, after alignment, with a pointwise confidence band.

    Each arch's fitted ``model`` curve is evaluated, in its own canonical frame
    (vertex at the origin, +y posterior, +x patient's left), on a common grid
    of x; the mean form is the pointwise mean of those curves and the band the
    pointwise Student-t interval of the mean,
    ``ȳ(x) ± t_{(1+level)/2, k−1} · s(x)/√k`` over the k *patients* of the group:
    the arches of one patient (several sessions) are first averaged into one curve
    per patient, so sessions are never counted as patients.
    Curves are averaged rather than parameters because the models are
    nonlinear in their parameters (the curve of the mean parameters is not the
    mean curve); group means of the parameters are a ``groupby`` of the fits.

    Parameters
    ----------
    fits_or_points : DataFrame
        Output of :func:`dentalkit.arch.fit` (rows of ``model`` with status "ok"
        are used), or an ``arch_points`` table (``model`` is then fitted first
        with ``pose``, ``residual``, ``tooth_keypoints``, ``mm_per_px``,
        ``first_point_side`` and ``point_keys``, as in :func:`dentalkit.arch.fit`).
    by : str or list of str, optional
        Grouping columns (in the fits, or per-arch columns of the points, e.g. a
        study group merged in). Upper and lower arches are always separate
        groups (``arch`` is added).
    model : str
        Which model's curves to average. Default ``"catenary"``.
    n : int
        Grid points. The grid spans the x-range that every arch of the group
        covers with its own points (the intersection of ``[x_min, x_max]``), so
        no curve is extrapolated.
    level : float
        Confidence level of the band.
    unit : str or None
        Column identifying the unit of analysis (default ``"patient_id"``): each
        unit contributes one curve (the mean of its arches) to the mean form and
        the band. ``None`` (or a table without the column) takes every arch as a
        unit. A unit whose arches fall in two groups is refused.
    errors : {"raise", "collect", "warn"}
        dentalkit's one ``errors=`` rule (:func:`dentalkit.errors.check_errors`).
        ``"raise"`` (default): a group that cannot be averaged raises one
        :class:`~dentalkit.errors.InputError` listing every such group (its ``problems``
        attribute holds the table), as a bad point row does. ``"collect"``: those
        groups are left out of the result and listed (see Returns); ``"warn"``: the
        same, plus one :class:`~dentalkit.errors.DentalkitWarning`.

    Returns
    -------
    DataFrame
        One row per group × grid point: the ``by`` columns, ``arch``,
        ``model``, ``x``, ``y_mean``, ``y_sd``, ``y_lower``, ``y_upper``,
        ``n_units`` (patients: the curves behind the band), ``n_arches`` (arches
        averaged into them), ``unit`` (px / mm), ``level``. Bands are NaN for
        groups of one patient.

        With ``errors="collect"`` or ``"warn"``, a group that cannot be averaged
        (no ``model`` fit with status ``"ok"``, or arches sharing no common x-range)
        is absent, and :func:`dentalkit.arch.problems` of the result lists it: one row
        per absent group (``table`` ``"arch_mean_forms"``, ``row`` null, ``path`` the
        group, e.g. ``"skeletal_class=II, arch=lo"``, ``reason`` why), after the rows of
        bad points when ``fits_or_points`` is an ``arch_points`` table. If no group can
        be averaged the table has no rows.

    Raises
    ------
    InputError
        Unknown columns, mixed units within a group, no ``model`` fit at all, and
        with ``errors="raise"`` a group without a fit with status ``"ok"`` or whose
        arches share no common x-range.
    """
    errors = check_errors_arg(errors, "dentalkit.arch.mean_form")
    table = fits_or_points
    if not isinstance(table, pd.DataFrame):
        raise InputError("mean_form needs a fits table or an arch_points table (a DataFrame)")
    if not 0 < level < 1:
        raise InputError(f"level must be between 0 and 1, got {level!r}")
    if n < 2:
        raise InputError(f"n must be at least 2, got {n!r}")
    mod = _models_arg(model)[0]
    groups = _by_list(by)
    point_problems: tuple[dict, ...] = ()
    if "model" in table.columns and "status" in table.columns:
        fits = table
    else:
        require_columns(table, [*ARCH_KEY, "x", "y"], "arch_points")
        require_columns(table, groups, "arch_points")
        st = stack_points(
            table, mm_per_px=mm_per_px, errors=errors, extra=tuple(groups), point_keys=point_keys
        )
        varying = [
            g
            for g in groups
            if (
                table[g].astype(str).to_numpy() != st.keys[g].astype(str).to_numpy()[st.row_arch]
            ).any()
        ]
        if varying:
            raise InputError(
                f"group column(s) {varying} vary within an arch; they must be per arch"
            )
        fits = _fit_stacked(st, [mod], pose, residual, tooth_keypoints, first_point_side, 200)
        point_problems = st.problems
    require_columns(fits, [*groups, "arch", "model", "status", "unit", "x_min", "x_max"], "fits")
    require_columns(fits, list(mod.params), "fits")
    of_model = fits[fits["model"].astype(str) == mod.name]
    if of_model.empty:
        raise InputError(
            f"mean_form: the fits hold no {mod.name} fit to average (models: "
            f"{sorted(fits['model'].astype(str).unique())}); pass model= one of them, or "
            f"fit {mod.name!r} with arch.fit"
        )
    of_model = of_model.assign(
        arch=pd.Categorical(of_model["arch"].astype(str), categories=["up", "lo"])
    ).reset_index(drop=True)
    keys = [*groups, "arch"]
    absent = []  # problem records of the groups left out
    ok = of_model["status"].astype(str) == "ok"
    for gkey, grp in of_model.groupby(keys, observed=True, sort=True):
        if not ok[grp.index].any():
            gkey = gkey if isinstance(gkey, tuple) else (gkey,)
            statuses = grp["status"].astype(str).value_counts()
            absent.append(
                _absent_group(
                    keys,
                    gkey,
                    f"no {mod.name} fit with status 'ok' to average ({len(grp)} arch(es), "
                    "status "
                    + ", ".join(f"{s} {k}" for s, k in statuses.items())
                    + "): its mean form is left out; the fits' reason column says why",
                )
            )
    use = of_model[ok.to_numpy()]
    unit_col = unit if unit is not None and unit in use.columns else None
    if unit is not None and unit_col is None and unit != "patient_id":
        raise InputError(f"unit column {unit!r} is not in the fits (columns: {list(use.columns)})")
    if unit_col is not None and groups:
        spread = use.groupby([unit_col, "arch"], observed=True)[groups].nunique().max(axis=1)
        moving = spread[spread > 1]
        if len(moving):
            raise InputError(
                f"mean_form: {moving.index.get_level_values(0).nunique()} {unit_col}(s) have "
                f"arches in more than one group of {groups} (e.g. {moving.index[0][0]!r}); "
                "give each patient one group, or pass the arches of one session per patient"
            )
    parts = []
    for gkey, grp in use.groupby(keys, observed=True, sort=True):
        gkey = gkey if isinstance(gkey, tuple) else (gkey,)
        units = grp["unit"].astype(str).unique()
        if len(units) > 1:
            raise InputError(
                f"group {dict(zip(keys, gkey, strict=True))} mixes units {list(units)}"
            )
        lo_i, hi_i = grp["x_min"].to_numpy(float), grp["x_max"].to_numpy(float)
        if mod.name == "beta":  # the curve ends at ±W/2
            half = grp["width"].to_numpy(float) / 2.0
            lo_i, hi_i = np.maximum(lo_i, -half), np.minimum(hi_i, half)
        lo, hi = lo_i.max(), hi_i.min()
        if not lo < hi:
            absent.append(
                _absent_group(
                    keys,
                    gkey,
                    "the arches of this group share no common x-range (each curve is only "
                    "evaluated over its own points): its mean form is left out",
                )
            )
            continue
        x = np.linspace(lo, hi, n)
        Y = evaluate(mod, np.broadcast_to(x, (len(grp), n)), grp[list(mod.params)].to_numpy(float))
        n_arches = len(grp)
        if unit_col is not None:  # one curve per patient: the mean of its arches
            codes, uniques = pd.factorize(grp[unit_col].astype("object"))
            sums = np.zeros((len(uniques), n))
            np.add.at(sums, codes, Y)
            Y = sums / np.bincount(codes, minlength=len(uniques))[:, None]
        k = len(Y)
        mean = Y.mean(axis=0)
        if k > 1:
            sd = Y.std(axis=0, ddof=1)
            half = stats.t.ppf((1.0 + level) / 2.0, k - 1) * sd / np.sqrt(k)
        else:
            sd = half = np.full(n, np.nan)
        part = pd.DataFrame({c: [v] * n for c, v in zip(keys, gkey, strict=True)})
        part["model"] = mod.name
        part["x"] = x
        part["y_mean"] = mean
        part["y_sd"] = sd
        part["y_lower"] = mean - half
        part["y_upper"] = mean + half
        part["n_units"] = np.int64(k)
        part["n_arches"] = np.int64(n_arches)
        part["unit"] = units[0]
        part["level"] = level
        parts.append(part)
    if absent and errors == "raise":
        found = pd.DataFrame.from_records(absent, columns=[*PROBLEM_COLUMNS, "arch"])
        raise problems_error(
            found,
            f"dentalkit.arch.mean_form: {len(absent)} group(s) of {keys} cannot be averaged",
            MEAN_FORM_HINT,
        )
    if absent and errors == "warn":
        warnings.warn(
            f"dentalkit.arch.mean_form: {len(absent)} group(s) left out (no mean form), e.g. "
            f"{absent[0]['path']}: {absent[0]['reason']}; arch.problems(result) lists them",
            DentalkitWarning,
            stacklevel=2,
        )
    if parts:
        out = pd.concat(parts, ignore_index=True)
    else:  # no group could be averaged (collect/warn): the columns, no rows
        out = pd.DataFrame({c: pd.Series(dtype=of_model[c].dtype) for c in keys})
        for c in ("model", "x", "y_mean", "y_sd", "y_lower", "y_upper"):
            out[c] = pd.Series(dtype="object" if c == "model" else "float64")
        out["n_units"] = pd.Series(dtype="int64")
        out["n_arches"] = pd.Series(dtype="int64")
        out["unit"] = pd.Series(dtype="object")
        out["level"] = pd.Series(dtype="float64")
    out["arch"] = pd.Categorical(out["arch"].astype(str), categories=["up", "lo"])
    out["model"] = pd.Categorical(out["model"], categories=list(MODELS))
    out["unit"] = pd.Categorical(out["unit"], categories=["px", "mm"])
    out.attrs["problems"] = (*point_problems, *absent)  # plain records, as arch.fit keeps
    return out


def _absent_group(keys: list[str], gkey: tuple, reason: str) -> dict:
    """The problem record of a group :func:`mean_form` leaves out (the group is ``path``)."""
    path = ", ".join(f"{k}={v}" for k, v in zip(keys, gkey, strict=True))
    return {
        "table": "arch_mean_forms",
        "patient_id": None,
        "timestamp": None,
        "row": None,
        "field": None,
        "path": path,
        "value": None,
        "reason": reason,
        "severity": "error",
        "arch": str(gkey[-1]),
        "index_label": None,
    }
