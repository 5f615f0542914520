"""The measure catalogue: measures and construction points as data, validated and compiled.

``dentalkit/data/ceph_measures.csv`` declares one row per measure and
``dentalkit/data/ceph_points.csv`` one row per derived construction point (e.g. the
molar occlusal contact ``M6``). :func:`compile_catalog` turns a selection of rows into
index arrays for the one vectorized evaluator in :mod:`dentalkit.ceph._engine`; there is
no per-measure code anywhere.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from dentalkit.errors import InputError

__all__ = [
    "DERIVED_KINDS",
    "GEOMETRIC_KINDS",
    "KINDS",
    "CompiledView",
    "compile_default",
    "compile_view",
    "load_measures",
    "load_points",
]

#: Geometric kinds → number of points they take (see docs/measures.md for the formulas).
GEOMETRIC_KINDS: dict[str, int] = {
    "angle3": 3,
    "vector_angle": 4,
    "line_angle": 4,
    "signed_angle": 4,
    "distance": 2,
    "point_line_distance": 3,
    "along": 4,
}
#: Kinds computed from other measures' values → (min, max) number of operands.
DERIVED_KINDS: dict[str, tuple[int, int]] = {
    "combination": (1, 8),
    "ratio": (2, 2),
    "asymmetry": (2, 2),
}
KINDS = {**{k: "geometric" for k in GEOMETRIC_KINDS}, **{k: "derived" for k in DERIVED_KINDS}}
#: Kinds whose sign column matters (others must carry sign 1).
SIGNED_KINDS = {"signed_angle", "point_line_distance", "along"}
QUANTITIES = {"angle": "deg", "length": None, "percent": "%"}
VIEWS = ("lateral", "frontal")

MEASURE_COLUMNS = [
    "id",
    "label",
    "view",
    "analysis",
    "kind",
    "points",
    "operands",
    "sign",
    "quantity",
    "sign_convention",
    "description",
    "source",
]
POINT_COLUMNS = ["id", "view", "kind", "points", "description", "source"]


def _read(name: str) -> pd.DataFrame:
    with resources.files("dentalkit.data").joinpath(name).open(encoding="utf-8") as fh:
        return pd.read_csv(fh, dtype=str, keep_default_na=False)


@lru_cache(maxsize=2)
def _default_measures() -> pd.DataFrame:
    return _read("ceph_measures.csv")


@lru_cache(maxsize=2)
def _default_points() -> pd.DataFrame:
    return _read("ceph_points.csv")


def load_measures(path: str | Path | pd.DataFrame | None = None) -> pd.DataFrame:
    """Return the measure catalogue (one row per measure), validated.

    Parameters
    ----------
    path : path-like or DataFrame, optional
        A user catalogue with the columns of ``dentalkit/data/ceph_measures.csv``
        (``id, label, view, analysis, kind, points, operands, sign, quantity,
        sign_convention, description, source``). Default: the shipped catalogue.
        To add a measure, append a row to ``load_measures()`` and pass the result as
        ``measure(..., measures=table)``.

    Returns
    -------
    pandas.DataFrame
        ``sign`` as int8, everything else as strings.

    Raises
    ------
    InputError
        Naming the row and column of any invalid entry (unknown kind, wrong number of
        points, an operand that is not a measure id, a missing source, …).

    Examples
    --------
    >>> m = load_measures()
    >>> m.set_index("id").loc["SNA", ["kind", "points"]].tolist()
    ['angle3', 'S N A']
    """
    if path is None:
        return _validated_default().copy()
    return _validate_measures(_as_table(path).copy())


@lru_cache(maxsize=1)
def _validated_default() -> pd.DataFrame:
    return _validate_measures(_default_measures().copy())


def load_points(path: str | Path | pd.DataFrame | None = None) -> pd.DataFrame:
    """Return the derived construction points (``M6``, ``P4``, ``Inc`` …), validated.

    Each row's ``kind`` is ``mean``: the point is the mean of the listed landmarks
    (NaN when any of them is missing).
    """
    if path is None:
        return _validated_default_points().copy()
    return _validate_points(_as_table(path).copy())


@lru_cache(maxsize=1)
def _validated_default_points() -> pd.DataFrame:
    return _validate_points(_default_points().copy())


def _validate_points(table: pd.DataFrame) -> pd.DataFrame:
    missing = set(POINT_COLUMNS) - set(table.columns)
    if missing:
        raise InputError(f"construction-point table lacks column(s) {sorted(missing)}")
    for i, rec in enumerate(table.to_dict("records")):
        if rec["kind"] != "mean":
            raise InputError(
                f"construction point row {i} ({rec['id']!r}): kind {rec['kind']!r} is not "
                "supported; use 'mean'"
            )
        if len(str(rec["points"]).split()) < 2:
            raise InputError(
                f"construction point row {i} ({rec['id']!r}): needs at least two points"
            )
    return table


def _as_table(path: str | Path | pd.DataFrame) -> pd.DataFrame:
    if isinstance(path, pd.DataFrame):
        return path.astype({c: str for c in path.columns if c != "sign"})
    return pd.read_csv(path, dtype=str, keep_default_na=False)


def _validate_measures(table: pd.DataFrame) -> pd.DataFrame:
    missing = set(MEASURE_COLUMNS) - set(table.columns)
    if missing:
        raise InputError(
            f"measure catalogue lacks column(s) {sorted(missing)}; expected {MEASURE_COLUMNS}"
        )
    table = table[MEASURE_COLUMNS].copy()
    for col in MEASURE_COLUMNS:
        if col != "sign":
            table[col] = table[col].fillna("").astype(str).str.strip()
    dup = table["id"].duplicated(keep=False)
    if dup.any():
        raise InputError(f"measure catalogue repeats ids {sorted(set(table.loc[dup, 'id']))}")
    try:
        table["sign"] = pd.to_numeric(table["sign"], errors="raise").astype("int8")
    except (ValueError, TypeError) as exc:
        raise InputError(f"measure catalogue: column 'sign' must be 1 or -1 ({exc})") from exc
    ids = set(table["id"])
    for i, rec in enumerate(table.to_dict("records")):
        where = f"measure catalogue row {i} ({rec['id']!r})"
        if not rec["id"]:
            raise InputError(f"measure catalogue row {i}: empty id")
        if rec["kind"] not in KINDS:
            raise InputError(
                f"{where}: unknown kind {rec['kind']!r}; expected one of {sorted(KINDS)}"
            )
        if rec["view"] not in VIEWS:
            raise InputError(f"{where}: view {rec['view']!r} is not one of {VIEWS}")
        if rec["quantity"] not in QUANTITIES:
            raise InputError(
                f"{where}: quantity {rec['quantity']!r} is not one of {sorted(QUANTITIES)}"
            )
        if rec["sign"] not in (1, -1):
            raise InputError(f"{where}: sign must be 1 or -1, got {rec['sign']}")
        if rec["sign"] == -1 and rec["kind"] not in SIGNED_KINDS:
            raise InputError(f"{where}: kind {rec['kind']!r} is unsigned; sign must be 1")
        for col in ("label", "analysis", "source", "description", "sign_convention"):
            if not rec[col]:
                raise InputError(f"{where}: column {col!r} is empty; every measure needs it")
        if rec["kind"] in GEOMETRIC_KINDS:
            n = GEOMETRIC_KINDS[rec["kind"]]
            pts = rec["points"].split()
            if len(pts) != n:
                raise InputError(
                    f"{where}: kind {rec['kind']!r} takes {n} points, got {len(pts)} "
                    f"({rec['points']!r})"
                )
            if rec["operands"]:
                raise InputError(f"{where}: geometric kinds take points, not operands")
        else:
            lo, hi = DERIVED_KINDS[rec["kind"]]
            ops = [o.lstrip("+-") for o in rec["operands"].split()]
            if not lo <= len(ops) <= hi:
                raise InputError(
                    f"{where}: kind {rec['kind']!r} takes {lo}..{hi} operands, got {len(ops)}"
                )
            unknown = [o for o in ops if o not in ids]
            if unknown:
                raise InputError(f"{where}: operands {unknown} are not measure ids")
            if rec["points"]:
                raise InputError(f"{where}: derived kinds take operands, not points")
            if rec["kind"] != "combination" and any(
                o.startswith("-") for o in rec["operands"].split()
            ):
                raise InputError(f"{where}: only 'combination' operands may carry a sign")
    _check_acyclic(table)
    return table.reset_index(drop=True)


def _operands(rec_operands: str) -> list[tuple[str, float]]:
    out = []
    for tok in rec_operands.split():
        coef = -1.0 if tok.startswith("-") else 1.0
        out.append((tok.lstrip("+-"), coef))
    return out


def _check_acyclic(table: pd.DataFrame) -> None:
    deps = {
        r["id"]: [o for o, _ in _operands(r["operands"])]
        for r in table.to_dict("records")
        if r["kind"] in DERIVED_KINDS
    }
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        if state.get(node) == 2:
            return
        if state.get(node) == 1:
            raise InputError(f"measure catalogue: circular operands {' -> '.join([*path, node])}")
        state[node] = 1
        for d in deps.get(node, []):
            visit(d, [*path, node])
        state[node] = 2

    for node in deps:
        visit(node, [])


@dataclass
class CompiledView:
    """Index arrays of one view's selected measures, ready for the engine.

    Attributes
    ----------
    view : str
    ids : list of str
        All evaluated measures (requested ones and their hidden dependencies), in
        evaluation-column order.
    output : numpy.ndarray
        Column indices (into ``ids``) of the requested measures, in request order.
    landmarks : list of str
        Landmark names the engine reads (array axis 1 of the input).
    points : list of str
        ``landmarks`` followed by the derived construction points.
    derived_points : numpy.ndarray
        (n_derived, k) indices into ``landmarks``; ``-1`` pads.
    geometric : dict
        kind → (columns, point index matrix, signs).
    derived : list
        Dependency levels; each a list of (kind, columns, operand index matrix,
        coefficient matrix).
    is_length : numpy.ndarray
        Boolean per column: geometric measures whose value is a length (scaled by
        ``mm_per_px``).
    needs : dict
        measure id → set of landmark names it needs (through construction points and
        operands).
    """

    view: str
    ids: list[str]
    output: np.ndarray
    landmarks: list[str]
    points: list[str]
    derived_points: np.ndarray
    geometric: dict = field(default_factory=dict)
    derived: list = field(default_factory=list)
    is_length: np.ndarray = field(default_factory=lambda: np.zeros(0, bool))
    needs: dict = field(default_factory=dict)
    chiral: dict = field(default_factory=dict)


@lru_cache(maxsize=64)
def compile_default(requested: tuple[str, ...]) -> CompiledView:
    """:func:`compile_view` of the shipped catalogues (cached; treat the result as read-only)."""
    return compile_view(_validated_default(), _validated_default_points(), list(requested))


def compile_view(
    measures: pd.DataFrame, points: pd.DataFrame, requested: list[str]
) -> CompiledView:
    """Compile the requested measure ids of one view into index arrays.

    ``measures`` is a validated catalogue, ``requested`` a list of ids of one view.
    Dependencies of derived measures are added (evaluated, not output).
    """
    by_id = {r["id"]: r for r in measures.to_dict("records")}
    view = str(by_id[requested[0]]["view"])
    order: list[str] = []
    seen: set[str] = set()

    def add(mid: str) -> None:
        if mid in seen:
            return
        rec = by_id[mid]
        if rec["kind"] in DERIVED_KINDS:
            for op, _ in _operands(rec["operands"]):
                add(op)
        seen.add(mid)
        order.append(mid)

    for mid in requested:
        add(mid)
    views = {by_id[m]["view"] for m in order}
    if len(views) != 1:
        raise InputError(
            f"measures {order} mix views {sorted(views)}; operands must share their view"
        )
    col = {mid: i for i, mid in enumerate(order)}

    point_members = {
        r["id"]: str(r["points"]).split() for r in points.to_dict("records") if r["view"] == view
    }

    # landmark names needed by each measure (construction points expanded)
    needs: dict[str, set[str]] = {}
    landmark_set: list[str] = []
    used_derived: list[str] = []
    for mid in order:
        rec = by_id[mid]
        if rec["kind"] in GEOMETRIC_KINDS:
            names: set[str] = set()
            for p in rec["points"].split():
                if p in point_members:
                    names.update(point_members[p])
                    if p not in used_derived:
                        used_derived.append(p)
                else:
                    names.add(p)
            needs[mid] = names
        else:
            needs[mid] = set().union(*(needs[op] for op, _ in _operands(rec["operands"])))
    for mid in order:
        rec = by_id[mid]
        if rec["kind"] in GEOMETRIC_KINDS:
            for p in rec["points"].split():
                for name in point_members.get(p, [p]):
                    if name not in landmark_set:
                        landmark_set.append(name)
    for p in used_derived:
        for name in point_members[p]:
            if name not in landmark_set:
                landmark_set.append(name)
    lm_index = {n: i for i, n in enumerate(landmark_set)}
    all_points = landmark_set + used_derived
    pt_index = {n: i for i, n in enumerate(all_points)}
    kmax = max((len(point_members[p]) for p in used_derived), default=1)
    derived_points = np.full((len(used_derived), kmax), -1, dtype=np.intp)
    for i, p in enumerate(used_derived):
        members = point_members[p]
        derived_points[i, : len(members)] = [lm_index[m] for m in members]

    geometric: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]] = {}
    for kind, n in GEOMETRIC_KINDS.items():
        mids = [m for m in order if by_id[m]["kind"] == kind]
        if not mids:
            continue
        cols = np.array([col[m] for m in mids], dtype=np.intp)
        idx = np.array(
            [[pt_index[p] for p in by_id[m]["points"].split()] for m in mids], dtype=np.intp
        ).reshape(len(mids), n)
        signs = np.array([float(by_id[m]["sign"]) for m in mids])
        geometric[kind] = (cols, idx, signs)

    # derived measures in dependency levels
    level: dict[str, int] = {}
    for mid in order:
        rec = by_id[mid]
        if rec["kind"] in GEOMETRIC_KINDS:
            level[mid] = 0
        else:
            level[mid] = 1 + max(level[op] for op, _ in _operands(rec["operands"]))
    derived: list[list[tuple]] = []
    zero_col = len(order)  # engine appends a column of zeros for padding
    for lev in range(1, max(level.values(), default=0) + 1):
        groups = []
        for kind in DERIVED_KINDS:
            mids = [m for m in order if level[m] == lev and by_id[m]["kind"] == kind]
            if not mids:
                continue
            ops = [_operands(by_id[m]["operands"]) for m in mids]
            k = max(len(o) for o in ops)
            op_idx = np.full((len(mids), k), zero_col, dtype=np.intp)
            coef = np.zeros((len(mids), k))
            for i, o in enumerate(ops):
                op_idx[i, : len(o)] = [col[name] for name, _ in o]
                coef[i, : len(o)] = [c for _, c in o]
            groups.append((kind, np.array([col[m] for m in mids], dtype=np.intp), op_idx, coef))
        derived.append(groups)

    is_length = np.array(
        [by_id[m]["quantity"] == "length" and by_id[m]["kind"] in GEOMETRIC_KINDS for m in order],
        dtype=bool,
    )
    chiral: dict[str, bool] = {}
    for mid in order:
        rec = by_id[mid]
        if rec["kind"] in GEOMETRIC_KINDS:
            chiral[mid] = rec["kind"] in SIGNED_KINDS
        else:
            chiral[mid] = any(chiral[op] for op, _ in _operands(rec["operands"]))
    return CompiledView(
        chiral=chiral,
        view=view,
        ids=order,
        output=np.array([col[m] for m in requested], dtype=np.intp),
        landmarks=landmark_set,
        points=all_points,
        derived_points=derived_points,
        geometric=geometric,
        derived=derived,
        is_length=is_length,
        needs=needs,
    )
