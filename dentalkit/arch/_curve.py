"""Evaluate fitted arch forms (``curve``)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dentalkit.arch._frame import TRANSFORM_COLUMNS, matrices
from dentalkit.arch._models import MODELS, ArchModel
from dentalkit.arch._tables import ARCH_KEY, CARRIED, require_columns
from dentalkit.errors import InputError


def _param_matrix(fits: pd.DataFrame, model: ArchModel) -> np.ndarray:
    return fits[list(model.params)].to_numpy(dtype=float)


def evaluate(model: ArchModel, x: np.ndarray, P: np.ndarray) -> np.ndarray:
    """``f(x)`` of ``model`` for parameter rows ``P`` (m, k) and x (m, n)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return model.f(x, P)


def curve(
    fits: pd.DataFrame,
    x: np.ndarray | Sequence[float] | None = None,
    *,
    n: int = 101,
    frame: str = "model",
) -> pd.DataFrame:
    """Evaluate fitted arch forms: a tidy table of curve points for plotting or measuring.

    Parameters
    ----------
    fits : DataFrame
        Output of :func:`fit` (any models; rows whose ``status`` is not "ok"
        are skipped).
    x : array-like, optional
        Abscissae in the model frame (the fit's unit) used for every curve.
        Default: ``n`` points from each fit's ``x_min`` to ``x_max`` (the span of
        its own points; for the beta function at most its ends ±W/2, beyond
        which it is not defined and ``y`` is NaN).
    n : int
        Points per curve when ``x`` is not given.
    frame : {"model", "image"}
        "model": ``x``, ``y`` in each model's canonical frame (vertex at the
        origin, +y posterior, +x patient's left). "image": also ``x_image``,
        ``y_image`` in image pixels (through the fit's transform).

    Returns
    -------
    DataFrame
        Session key, ``arch``, ``model``, ``x``, ``y`` (+ ``x_image``,
        ``y_image``), one row per curve point.

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame(
    ...     {
    ...         "patient_id": ["p"],
    ...         "timestamp": ["t"],
    ...         "arch": ["up"],
    ...         "model": ["parabola"],
    ...         "status": ["ok"],
    ...         "c2": [0.5],
    ...         "x_min": [-2.0],
    ...         "x_max": [2.0],
    ...     }
    ... )
    >>> curve(f, n=3)[["x", "y"]].values.tolist()
    [[-2.0, 2.0], [0.0, 0.0], [2.0, 2.0]]
    """
    if frame not in ("model", "image"):
        raise InputError(f"frame must be 'model' or 'image', got {frame!r}")
    require_columns(fits, [*ARCH_KEY, "model", "status"], "fits")
    ok = fits[fits["status"].astype(str).eq("ok")]
    keep = [c for c in (*ARCH_KEY[:2], *CARRIED) if c in ok.columns and c != "arch"]
    parts = []
    for name, grp in ok.groupby(ok["model"].astype(str), sort=False):
        if name not in MODELS:
            raise InputError(f"fits has unknown model {name!r}; models are {list(MODELS)}")
        mod = MODELS[name]
        require_columns(grp, list(mod.params), "fits")
        P = _param_matrix(grp, mod)
        if x is None:
            require_columns(grp, ["x_min", "x_max"], "fits")
            t = np.linspace(0.0, 1.0, n)
            lo, hi = grp["x_min"].to_numpy(float), grp["x_max"].to_numpy(float)
            if name == "beta":  # the curve ends at x = ±W/2
                lo, hi = np.maximum(lo, -P[:, 1] / 2.0), np.minimum(hi, P[:, 1] / 2.0)
            X = lo[:, None] + (hi - lo)[:, None] * t[None, :]
        else:
            xv = np.asarray(x, dtype=float).ravel()
            X = np.broadcast_to(xv, (len(grp), xv.size))
        Y = evaluate(mod, X, P)
        if name == "beta":
            Y = np.where(np.abs(X) <= P[:, 1:2] / 2.0, Y, np.nan)
        rep = np.repeat(np.arange(len(grp)), X.shape[1])
        part = grp[[*keep, "arch"]].iloc[rep].reset_index(drop=True)
        part["model"] = name
        part["x"] = X.ravel()
        part["y"] = Y.ravel()
        if frame == "image":
            require_columns(grp, list(TRANSFORM_COLUMNS), "fits")
            M, t, sc = matrices(grp)
            q = np.stack([X, Y], axis=-1)
            p = t[:, None, :] + np.einsum("mji,mnj->mni", M, q) / sc[:, None, None]
            part["x_image"] = p[..., 0].ravel()
            part["y_image"] = p[..., 1].ravel()
        parts.append(part)
    if not parts:
        cols = [*keep, "arch", "model", "x", "y"] + (
            ["x_image", "y_image"] if frame == "image" else []
        )
        return pd.DataFrame({c: [] for c in cols})
    out = pd.concat(parts, ignore_index=True)
    out["model"] = pd.Categorical(out["model"], categories=list(MODELS))
    return out
