"""Arch dimensions: intercanine and intermolar width, depth, perimeter, upper/lower compatibility.

The measures are declared once (:data:`MEASURES`: name, kind, teeth, unit,
definition, reference) and evaluated by one vectorized engine over all arches.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from types import MappingProxyType
from typing import NamedTuple

import numpy as np
import pandas as pd

from dentalkit.arch._engine import RESIDUALS, _models_arg
from dentalkit.arch._fit import PROBLEM_COLUMNS, _fit_stacked
from dentalkit.arch._frame import to_canonical
from dentalkit.arch._models import BETA_EXPONENT
from dentalkit.arch._tables import (
    ARCH_KEY,
    CARRIED,
    KEY,
    Errors,
    calibration,
    check_errors_arg,
    first_per_group,
    require_columns,
    stack_points,
    warn_bad,
)
from dentalkit.errors import InputError, problems_error, problems_frame

#: Teeth the measures use: type_side (the arch suffix is added per arch).
TEETH = ("i1_rgt", "i1_lft", "c_rgt", "c_lft", "m1_rgt", "m1_lft")
#: Statuses of measure rows.
MEASURE_STATUSES = ["ok", "missing_tooth", "no_fit", "out_of_domain", "needs_mm", "bad_input"]
#: Gauss–Legendre composite rule of the arc length: panels × nodes per panel.
_PANELS, _NODES = 16, 8


class Evaluated(NamedTuple):
    """One measure over all arches: value (m,), status, reason and method (object arrays)."""

    value: np.ndarray
    status: np.ndarray
    reason: np.ndarray
    method: np.ndarray


@dataclass(frozen=True, slots=True)
class ArchMeasure:
    """One declared arch measure (a row of :data:`MEASURES`), like ``teeth.ToothMeasure``.

    Attributes
    ----------
    name : str
        The ``measure`` value of the output rows.
    kind : str
        ``distance``, ``depth``, ``perimeter`` or ``difference``.
    teeth : tuple of str
        Teeth the measure needs (type_side; the arch suffix is added per arch).
    definition : str
        What is measured, and how.
    reference : str
        Where the definition comes from.
    compute : callable or None
        ``compute(kernels) -> Evaluated`` over every arch at once (values in px;
        :func:`measure` applies the calibration); None for the upper − lower
        ``difference`` measures, which are formed from their ``base`` measure.
    dimension : int
        Power of length of the value (1: px or mm).
    base : str or None
        For ``difference`` measures: the per-arch measure they subtract.
    """

    name: str
    kind: str
    teeth: tuple[str, ...]
    definition: str
    reference: str
    compute: Callable[[_Kernels], Evaluated] | None = None
    dimension: int = 1
    base: str | None = None

    @property
    def unit(self) -> str:
        """Unit of the values: ``px`` or ``mm`` (to the power ``dimension``)."""
        return "px or mm" if self.dimension == 1 else f"(px or mm)^{self.dimension}"


_LIT_WIDTH = (
    "Intercanine and intermolar arch widths as in Bishara SE, Jakobsen JR, Treder J, Nowak A. "
    "Arch width changes from 6 weeks to 45 years of age. Am J Orthod Dentofacial Orthop "
    "1997;111:401-409 (there between cusp tips; here between the service's tooth points)"
)
_RECORDS = (
    ArchMeasure(
        "intercanine_width",
        "distance",
        ("c_rgt", "c_lft"),
        "distance between the right and left canine points (centroids by default)",
        _LIT_WIDTH,
        lambda k: k.width(("c_rgt", "c_lft")),
    ),
    ArchMeasure(
        "intermolar_width",
        "distance",
        ("m1_rgt", "m1_lft"),
        "distance between the right and left first-molar points (centroids by default)",
        _LIT_WIDTH,
        lambda k: k.width(("m1_rgt", "m1_lft")),
    ),
    ArchMeasure(
        "arch_depth",
        "depth",
        ("i1_rgt", "i1_lft", "m1_rgt", "m1_lft"),
        "perpendicular distance from the incisal point to the line through the two "
        "first-molar points; incisal point = midpoint of the central-incisor points "
        "(incisal='incisors') or the fitted curve's vertex (incisal='vertex')",
        "Arch depth as perpendicular from the incisor point to the intermolar line "
        "(e.g. Braun et al., Angle Orthod 1998;68:29-36)",
        lambda k: k.depth(),
    ),
    ArchMeasure(
        "arch_perimeter",
        "perimeter",
        ("m1_rgt", "m1_lft"),
        "arc length of the fitted arch-form curve between the x-coordinates (in the "
        "model's frame) of the two first-molar points, by composite Gauss–Legendre "
        f"quadrature ({_PANELS}×{_NODES} nodes) of √(1 + f'(x)²) (for the beta function "
        "of |C'(θ)| over θ = asin(2x/W), limits clipped to its ends)",
        "Arch perimeter (circumference) along the arch form, first molar to first "
        "molar; curve: the model named in `method`",
        lambda k: k.perimeter(),
    ),
    ArchMeasure(
        "intercanine_width_difference",
        "difference",
        ("c_rgt", "c_lft"),
        "upper minus lower intercanine width of the same session (mm only)",
        "Upper/lower arch compatibility (transverse): maxillary minus mandibular width",
        base="intercanine_width",
    ),
    ArchMeasure(
        "intermolar_width_difference",
        "difference",
        ("m1_rgt", "m1_lft"),
        "upper minus lower intermolar width of the same session (mm only)",
        "Upper/lower arch compatibility (transverse): maxillary minus mandibular width",
        base="intermolar_width",
    ),
)

#: The arch measures by name (read-only).
MEASURES: MappingProxyType[str, ArchMeasure] = MappingProxyType({m.name: m for m in _RECORDS})


def _tooth_points(
    tooth_keypoints: pd.DataFrame, point: str, errors: Errors
) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """Wide view of the teeth the measures use, one row per (session, arch).

    Returns the keys, coordinates (m, 6, 2) in px (NaN where unusable), a status
    code per tooth (m, 6): 0 ok, 1 missing, 2 absent, 3 non-finite, and the raw rows.
    """
    require_columns(tooth_keypoints, [*ARCH_KEY, "tooth", "point", "x", "y"], "tooth_keypoints")
    tk = tooth_keypoints
    for col in ARCH_KEY:
        if tk[col].isna().any():
            rows = tk.index[tk[col].isna().to_numpy()][:10].tolist()
            raise InputError(f"tooth_keypoints has rows with an empty {col!r} (rows {rows})")
    arch = tk["arch"].astype(str)
    if not arch.isin(("up", "lo")).all():
        bad = sorted(set(arch[~arch.isin(("up", "lo"))]))[:5]
        raise InputError(f"tooth_keypoints has arch value(s) {bad}; arch must be 'up' or 'lo'")
    carried = [c for c in CARRIED if c in tk.columns]
    keys_all = tk[[*ARCH_KEY, *carried]].copy()
    keys_all["arch"] = arch
    keys_all = keys_all.sort_values(list(ARCH_KEY), kind="stable")
    gid_all = keys_all.groupby(list(ARCH_KEY), observed=True, sort=False).ngroup().to_numpy()
    m = int(gid_all.max()) + 1 if len(gid_all) else 0
    keys = first_per_group(keys_all, gid_all, m)

    sel = tk["point"].astype(str).eq(point).to_numpy()
    parts = tk["tooth"].astype(str).str.split("_")
    short = (parts.str[0] + "_" + parts.str[1]).to_numpy()
    slot = pd.Index(TEETH).get_indexer(short)
    use = sel & (slot >= 0)
    sub = tk.loc[use]
    # arch of each selected row, by merging its key onto the key table
    k = keys[list(ARCH_KEY)].astype(str).assign(_g=np.arange(m))
    left = sub[list(ARCH_KEY)].astype(str).assign(_row=np.arange(len(sub)))
    g = left.merge(k, on=list(ARCH_KEY), how="left").sort_values("_row")["_g"].to_numpy()
    s = slot[use]
    xy = np.full((m, len(TEETH), 2), np.nan)
    code = np.full((m, len(TEETH)), 2, np.int8)
    x = pd.to_numeric(sub["x"], errors="coerce").to_numpy(dtype=float)
    y = pd.to_numeric(sub["y"], errors="coerce").to_numpy(dtype=float)
    missing = (
        sub["missing"].astype("boolean").fillna(False).to_numpy(dtype=bool)
        if "missing" in sub.columns
        else np.zeros(len(sub), bool)
    )
    dup = pd.DataFrame({"g": g, "s": s}).duplicated().to_numpy()
    if dup.any():
        rows = sub.index[dup][:10].tolist()
        raise InputError(
            f"tooth_keypoints repeats a tooth point within an arch (rows {rows}); "
            "each (patient_id, timestamp, arch, tooth, point) must appear once"
        )
    finite = np.isfinite(x) & np.isfinite(y)
    bad = ~finite & ~missing
    records = _bad_tooth_records(tk, np.flatnonzero(use)[bad], keys, g[bad], x[bad], point)
    if errors == "warn" and bad.any():
        rows = sub.index[bad][:10].tolist()
        warn_bad(
            "tooth_keypoints",
            len(np.unique(g[bad])),
            f"non-finite x/y for present teeth at rows {rows}",
        )
    if errors == "raise" and bad.any():
        raise problems_error(
            problems_frame(
                pd.DataFrame.from_records(records, columns=list(PROBLEM_COLUMNS)),
                severity="error",
            ),
            f"dentalkit.arch.measure: tooth_keypoints has non-finite x/y for {int(bad.sum())} "
            "present tooth point(s)",
            "Fix them, or pass errors='collect' to measure the other arches (the measures "
            "that need these teeth get status bad_input; arch.problems(result) lists these rows)",
        )
    xy[g, s, 0] = np.where(missing | ~finite, np.nan, x)
    xy[g, s, 1] = np.where(missing | ~finite, np.nan, y)
    code[g, s] = np.select([missing, ~finite], [1, 3], 0)
    return keys, xy, code, records


def _bad_tooth_records(
    tk: pd.DataFrame,
    positions: np.ndarray,
    keys: pd.DataFrame,
    arches: np.ndarray,
    x: np.ndarray,
    point: str,
) -> list[dict]:
    """Problems rows (:data:`PROBLEM_COLUMNS`) of the present teeth with non-finite x/y."""
    out = []
    for pos, g, xv in zip(positions.tolist(), arches.tolist(), x.tolist(), strict=True):
        key, row, label = keys.iloc[g], tk.iloc[pos], tk.index[pos]
        col = "y" if np.isfinite(xv) else "x"
        out.append(
            {
                "table": "tooth_keypoints",
                "patient_id": str(key["patient_id"]),
                "timestamp": str(key["timestamp"]),
                "row": int(pos),
                "field": col,
                "value": str(row[col]),
                "reason": f"non-finite x/y of present tooth {row['tooth']} ({point}): the "
                f"arch {key['arch']} measures that use it are NaN (status bad_input)",
                "severity": "error",
                "arch": str(key["arch"]),
                "index_label": label.item() if isinstance(label, np.generic) else label,
            }
        )
    return out


_WHY = {1: "is marked missing", 2: "has no {point} row in tooth_keypoints", 3: "has non-finite x/y"}


def _tooth_reasons(keys, code, teeth: tuple[str, ...], point: str) -> tuple[np.ndarray, np.ndarray]:
    """(usable, reason) per arch for a measure needing ``teeth``."""
    idx = [TEETH.index(t) for t in teeth]
    c = code[:, idx]
    usable = (c == 0).all(axis=1)
    reason = np.full(len(keys), None, dtype=object)
    arch = keys["arch"].astype(str).to_numpy()
    for i in np.flatnonzero(~usable):
        bits = [
            f"{teeth[j]}_{arch[i]} {_WHY[int(c[i, j])].format(point=point)}"
            for j in range(len(idx))
            if c[i, j] != 0
        ]
        reason[i] = "; ".join(bits)
    status = np.where(usable, "ok", np.where((c == 3).any(axis=1), "bad_input", "missing_tooth"))
    return status, reason


def _arc_length(model, P: np.ndarray, xa: np.ndarray, xb: np.ndarray) -> np.ndarray:
    """Arc length of the curve between x = xa and x = xb per row (composite Gauss–Legendre).

    ∫ √(1 + f'(x)²) dx; for the beta function, whose slope is infinite at its
    ends, ∫ |C'(θ)| dθ over θ = asin(2x/W) with C(θ) = (W/2·sin θ, D·(1 − cos^{1.6} θ))
    (a bounded integrand), the limits clipped to the curve's ends.
    """
    t, w = np.polynomial.legendre.leggauss(_NODES)
    edges = np.linspace(0.0, 1.0, _PANELS + 1)
    h = np.diff(edges)
    nodes = (edges[:-1, None] + (t[None, :] + 1.0) * h[:, None] / 2.0).ravel()
    weights = (w[None, :] * h[:, None] / 2.0).ravel()
    if model.name == "beta":
        D, half = P[:, 0], P[:, 1] / 2.0
        ta = np.arcsin(np.clip(xa / half, -1.0, 1.0))
        tb = np.arcsin(np.clip(xb / half, -1.0, 1.0))
        th = ta[:, None] + (tb - ta)[:, None] * nodes[None, :]
        c, s = np.maximum(np.cos(th), 0.0), np.sin(th)
        dy = 2.0 * BETA_EXPONENT * D[:, None] * c ** (2.0 * BETA_EXPONENT - 1.0) * s
        speed = np.sqrt((half[:, None] * c) ** 2 + dy**2)
        return (speed * weights).sum(axis=1) * (tb - ta)
    x = xa[:, None] + (xb - xa)[:, None] * nodes[None, :]
    with np.errstate(over="ignore", invalid="ignore"):
        d1 = model.dfdx(x, P)
    return (np.sqrt(1.0 + d1 * d1) * weights).sum(axis=1) * (xb - xa)


class _Kernels:
    """What the measures share, computed once and only when a measure needs it.

    Tooth points per arch (px), their status codes, and (lazily) the fitted
    ``model`` curve of every arch (perimeter, vertex).
    """

    def __init__(
        self, keys, xy, code, point, incisal, mod, pose, residual, arch_points,
        tooth_keypoints, first_point_side, point_keys, errors,
    ) -> None:  # fmt: skip
        self.keys, self.code, self.point, self.incisal = keys, code, point, incisal
        self.mod, self.pose, self.residual = mod, pose, residual
        self.arch_points, self.tooth_keypoints = arch_points, tooth_keypoints
        self.first_point_side, self.point_keys, self.errors = first_point_side, point_keys, errors
        #: Problems records of the arch_points rows (filled when a curve is fitted).
        self.point_problems: tuple[dict, ...] = ()
        self.m = len(keys)
        self.P = {t: xy[:, TEETH.index(t), :] for t in TEETH}

    def _const(self, text: str) -> np.ndarray:
        return np.full(self.m, text, dtype=object)

    def teeth_ok(self, teeth: tuple[str, ...]) -> tuple[np.ndarray, np.ndarray]:
        return _tooth_reasons(self.keys, self.code, teeth, self.point)

    def width(self, teeth: tuple[str, str]) -> Evaluated:
        a, b = teeth
        status, reason = self.teeth_ok(teeth)
        value = np.hypot(*(self.P[b] - self.P[a]).T)
        return Evaluated(value, status, reason, self._const(self.point))

    @cached_property
    def fitted(self) -> tuple[pd.DataFrame | None, np.ndarray, np.ndarray, np.ndarray]:
        """(fits, fit row per arch or −1, fit ok, why not) of the ``model`` curve."""
        m, mod = self.m, self.mod
        fits = None
        if self.arch_points is not None:
            st = stack_points(self.arch_points, errors=self.errors, point_keys=self.point_keys)
            self.point_problems = st.problems
            fits = _fit_stacked(
                st, [mod], self.pose, self.residual, self.tooth_keypoints,
                self.first_point_side, 200,
            )  # fmt: skip
            k = fits[list(ARCH_KEY)].astype(str)
            fits = fits.assign(**{c: k[c] for c in ARCH_KEY})
        fit_row = np.full(m, -1)
        if fits is not None:
            kk = self.keys[list(ARCH_KEY)].astype(str).assign(_i=np.arange(m))
            fr = fits[list(ARCH_KEY)].assign(_f=np.arange(len(fits)))
            fit_row = kk.merge(fr, on=list(ARCH_KEY), how="left").sort_values("_i")["_f"]
            fit_row = fit_row.fillna(-1).to_numpy(dtype=np.int64)
        fit_ok = np.zeros(m, bool)
        fit_reason = np.full(m, None, dtype=object)
        if fits is None:
            fit_reason[:] = "no arch_points given: needs a fitted arch curve"
        else:
            fit_reason[fit_row < 0] = "no arch_points for this arch"
            has = fit_row >= 0
            st_f = fits["status"].astype(str).to_numpy()
            fit_ok[has] = st_f[fit_row[has]] == "ok"
            bad = has & ~fit_ok
            fit_reason[bad] = [
                f"the {mod.name} fit failed ({st_f[j]}: {fits['reason'].iloc[j]})"
                for j in fit_row[bad]
            ]
        return fits, fit_row, fit_ok, fit_reason

    @property
    def method_fit(self) -> str:
        return f"{self.mod.name} fit (pose={self.pose}, {self.residual})"

    def _needs_fit(self, status, reason):
        _, _, fit_ok, fit_reason = self.fitted
        nf = (status == "ok") & ~fit_ok
        return np.where(nf, "no_fit", status), np.where(nf, fit_reason, reason)

    def depth(self) -> Evaluated:
        P, m, point = self.P, self.m, self.point
        if self.incisal == "incisors":
            status, reason = self.teeth_ok(MEASURES["arch_depth"].teeth)
            inc = (P["i1_rgt"] + P["i1_lft"]) / 2.0
            method = f"{point}; incisal point = midpoint of i1_rgt and i1_lft"
        else:
            fits, fit_row, _, _ = self.fitted
            status, reason = self.teeth_ok(("m1_rgt", "m1_lft"))
            inc = np.full((m, 2), np.nan)
            if fits is not None:
                j = np.where(fit_row >= 0, fit_row, 0)
                xy = fits[["tx", "ty"]].to_numpy(float)[j]
                inc = np.where((fit_row >= 0)[:, None], xy, np.nan)
            status, reason = self._needs_fit(status, reason)
            method = f"{point}; incisal point = vertex of the {self.method_fit}"
        v = P["m1_lft"] - P["m1_rgt"]
        wv = inc - P["m1_rgt"]
        with np.errstate(invalid="ignore", divide="ignore"):
            depth = np.abs(v[:, 0] * wv[:, 1] - v[:, 1] * wv[:, 0]) / np.hypot(v[:, 0], v[:, 1])
        return Evaluated(depth, status, reason, self._const(method))

    def perimeter(self) -> Evaluated:
        P, mod = self.P, self.mod
        status, reason = self.teeth_ok(("m1_rgt", "m1_lft"))
        status, reason = self._needs_fit(status, reason)
        fits, fit_row, fit_ok, _ = self.fitted
        perim = np.full(self.m, np.nan)
        go = np.flatnonzero((status == "ok") & fit_ok)
        if go.size:
            f = fits.iloc[fit_row[go]].reset_index(drop=True)
            molars = pd.concat(
                [
                    f[list(ARCH_KEY)].assign(x=P[t][go, 0], y=P[t][go, 1])
                    for t in ("m1_rgt", "m1_lft")
                ],
                ignore_index=True,
            )
            xm = to_canonical(molars, f)["x_canonical"].to_numpy().reshape(2, -1)
            xa, xb = np.minimum(xm[0], xm[1]), np.maximum(xm[0], xm[1])
            span = (f["x_max"] - f["x_min"]).to_numpy(float)
            beyond = (xa < f["x_min"].to_numpy(float) - 0.05 * span) | (
                xb > f["x_max"].to_numpy(float) + 0.05 * span
            )
            perim[go] = _arc_length(mod, f[list(mod.params)].to_numpy(float), xa, xb)
            status[go[beyond]] = "out_of_domain"
            reason[go[beyond]] = (
                "a first molar lies beyond the span of the arch points (more than 5 % of it): "
                "the curve would be extrapolated"
            )
        return Evaluated(perim, status, reason, self._const(self.method_fit))


def measure(
    tooth_keypoints: pd.DataFrame,
    arch_points: pd.DataFrame | None = None,
    mm_per_px: float | pd.DataFrame | None = None,
    *,
    point: str = "centroid",
    incisal: str = "incisors",
    model: str = "poly4",
    pose: str = "fit",
    residual: str = "orthogonal",
    first_point_side: str = "right",
    point_keys: str = "auto",
    which: Sequence[str] | None = None,
    errors: Errors = "raise",
) -> pd.DataFrame:
    """Standard arch dimensions of every arch, and upper/lower compatibility.

    Parameters
    ----------
    tooth_keypoints : DataFrame
        The ``tooth_keypoints`` table (session key, ``arch``, ``tooth`` such as
        ``c_rgt_up``, ``missing``, ``point``, ``x``, ``y`` in pixels).
    arch_points : DataFrame, optional
        The ``arch_points`` table; needed for ``arch_perimeter`` and for
        ``incisal="vertex"`` (a ``model`` curve is fitted to it).
    mm_per_px : float or DataFrame, optional
        Calibration: one number, or per image (``patient_id``, ``timestamp``,
        optionally ``arch``, ``mm_per_px``). Without it, values are in pixels
        and the upper − lower differences are not computed (the two dental
        models are separate photographs whose pixel scales differ).
    point : str
        Which tooth point to measure between. Default ``"centroid"``, the only
        per-tooth point whose meaning the specification documents; ``"t01"``…
        are accepted but their anatomical meaning is not shown by the spec.
    incisal : {"incisors", "vertex"}
        Incisal point of ``arch_depth``: the midpoint of the two central-incisor
        points, or the vertex of the fitted ``model`` curve.
    model : str
        Arch-form model of the perimeter (and of the vertex). Default
        ``"poly4"`` (AlHarbi et al. 2008: a smooth general description).
    pose, residual : str
        Passed to :func:`dentalkit.arch.fit`.
    first_point_side, point_keys : str
        As in :func:`dentalkit.arch.align`.
    which : sequence of str, optional
        Names of the declared measures to evaluate (default: all of
        :data:`MEASURES`, in its order).
    errors : {"raise", "collect", "warn"}
        dentalkit's one ``errors=`` rule (:func:`dentalkit.errors.check_errors`).
        Non-finite coordinates of present teeth raise (``"raise"``, default), or become
        result rows with a ``status`` other than ``"ok"`` (``"collect"``; ``"warn"``
        also emits one :class:`~dentalkit.errors.DentalkitWarning`).

    Returns
    -------
    DataFrame
        Long table, one row per arch × measure (and per session × difference
        measure when both arches exist): session key (+ carried columns),
        ``arch`` (``up``, ``lo`` or ``up-lo`` for differences), ``measure``,
        ``value``, ``unit`` (px or mm), ``method`` (tooth point, incisal point
        and model used), ``status`` ("ok" or why not), ``reason``. Rows that
        are not "ok" have ``value`` NaN.

    Notes
    -----
    The measures are declared once in :data:`MEASURES` (definition, unit,
    reference and a ``compute`` function over all arches), and this function
    evaluates the declared list. See each record for its definition. ``intercanine_width`` uses the
    ``c_rgt``/``c_lft`` teeth, ``intermolar_width`` the first molars
    (``m1_*``); ``arch_depth`` is measured to the line through the first-molar
    points; ``arch_perimeter`` follows the fitted curve between the first
    molars' positions along the model's x-axis.

    Examples
    --------
    >>> import pandas as pd
    >>> tk = pd.DataFrame(
    ...     {
    ...         "patient_id": "p",
    ...         "timestamp": "t",
    ...         "arch": "up",
    ...         "tooth": ["c_rgt_up", "c_lft_up"],
    ...         "missing": False,
    ...         "point": "centroid",
    ...         "x": [100.0, 160.0],
    ...         "y": [50.0, 130.0],
    ...     }
    ... )
    >>> m = measure(tk, mm_per_px=0.1)
    >>> m.loc[m.measure == "intercanine_width", ["value", "unit", "status"]].values.tolist()
    [[10.0, 'mm', 'ok']]
    """
    errors = check_errors_arg(errors, "dentalkit.arch.measure")
    if incisal not in ("incisors", "vertex"):
        raise InputError(f"incisal must be 'incisors' or 'vertex', got {incisal!r}")
    if residual not in RESIDUALS:
        raise InputError(f"residual must be 'orthogonal' or 'vertical', got {residual!r}")
    mod = _models_arg(model)[0]
    names = list(MEASURES) if which is None else list(which)
    unknown = [n for n in names if n not in MEASURES]
    if unknown:
        raise InputError(f"unknown arch measure(s) {unknown}; choose from {list(MEASURES)}")
    keys, xy, code, tooth_problems = _tooth_points(tooth_keypoints, point, errors)
    scale, unit = calibration(keys, mm_per_px)
    kern = _Kernels(
        keys, xy, code, point, incisal, mod, pose, residual, arch_points, tooth_keypoints,
        first_point_side, point_keys, errors,
    )  # fmt: skip
    # every declared per-arch measure (and the bases of the requested differences)
    wanted = set(names) | {MEASURES[n].base for n in names if MEASURES[n].base}
    out: dict[str, dict[str, np.ndarray]] = {}
    for ms in MEASURES.values():
        if ms.compute is None or ms.name not in wanted:
            continue
        ev = ms.compute(kern)
        value = np.where(ev.status == "ok", ev.value * scale**ms.dimension, np.nan)
        out[ms.name] = {
            "value": value, "status": ev.status, "reason": ev.reason, "method": ev.method
        }  # fmt: skip
    table = _long(keys, {n: d for n, d in out.items() if n in names}, unit)
    diffs = _differences(keys, out, unit, mm_per_px is None, names)
    table = pd.concat([table, diffs], ignore_index=True) if len(diffs) else table
    table = _dtypes(table)
    # plain records (comparable, survive copies), read as a table by arch.problems
    table.attrs["problems"] = (*tooth_problems, *kern.point_problems)
    return table


def _long(keys: pd.DataFrame, out: dict, unit: str) -> pd.DataFrame:
    parts = []
    for name, d in out.items():
        part = keys.copy()
        part["measure"] = name
        part["value"] = d["value"].astype(float)
        part["unit"] = unit
        part["method"] = d["method"]
        part["status"] = d["status"]
        part["reason"] = d["reason"]
        parts.append(part)
    if not parts:
        return pd.DataFrame()
    table = pd.concat(parts, ignore_index=True)
    order = {n: i for i, n in enumerate(MEASURES)}
    table["_a"] = np.tile(np.arange(len(keys)), len(out))
    table["_o"] = table["measure"].map(order)
    return table.sort_values(["_a", "_o"], kind="stable").drop(columns=["_a", "_o"])


def _differences(
    keys: pd.DataFrame, out: dict, unit: str, uncalibrated: bool, names: list[str]
) -> pd.DataFrame:
    """Upper − lower width of every session that has both arches (declared ``difference`` measures)."""
    arch = keys["arch"].astype(str).to_numpy()
    k = keys[list(KEY)].astype(str)
    up = pd.Series(np.flatnonzero(arch == "up"), index=pd.MultiIndex.from_frame(k[arch == "up"]))
    lo = pd.Series(np.flatnonzero(arch == "lo"), index=pd.MultiIndex.from_frame(k[arch == "lo"]))
    both = up.index.intersection(lo.index)
    if len(both) == 0:
        return pd.DataFrame()
    iu, il = up.loc[both].to_numpy(), lo.loc[both].to_numpy()
    parts = []
    for ms in MEASURES.values():
        if ms.base is None or ms.name not in names:
            continue
        name, base = ms.name, ms.base
        d = out[base]
        part = keys.iloc[iu].reset_index(drop=True).copy()
        part["arch"] = "up-lo"
        part["measure"] = name
        ok = (d["status"][iu] == "ok") & (d["status"][il] == "ok")
        reason = np.full(len(iu), None, dtype=object)
        status = np.where(ok, "ok", "missing_tooth")
        for j in np.flatnonzero(~ok):
            bits = [
                f"{a} {base}: {d['reason'][i]}"
                for a, i in (("upper", iu[j]), ("lower", il[j]))
                if d["status"][i] != "ok"
            ]
            reason[j] = "; ".join(bits)
            if any(d["status"][i] == "bad_input" for i in (iu[j], il[j])):
                status[j] = "bad_input"
        if uncalibrated:
            status = np.full(len(iu), "needs_mm", dtype=object)
            reason = np.full(
                len(iu),
                "upper and lower dental models are separate photographs with their own "
                "pixel scale: pass mm_per_px to compare them",
                dtype=object,
            )
        value = np.where(status == "ok", d["value"][iu] - d["value"][il], np.nan)
        part["value"] = value.astype(float)
        part["unit"] = unit
        part["method"] = d["method"][iu]
        part["status"] = status
        part["reason"] = reason
        parts.append(part)
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame()


def _dtypes(table: pd.DataFrame) -> pd.DataFrame:
    table = table.reset_index(drop=True)
    table["arch"] = pd.Categorical(table["arch"].astype(str), categories=["up", "lo", "up-lo"])
    table["measure"] = pd.Categorical(table["measure"], categories=list(MEASURES))
    table["unit"] = pd.Categorical(table["unit"], categories=["px", "mm"])
    table["status"] = pd.Categorical(table["status"], categories=MEASURE_STATUSES)
    table["reason"] = pd.array(table["reason"].tolist(), dtype="string")
    table["method"] = pd.array(table["method"].tolist(), dtype="string")
    return table
