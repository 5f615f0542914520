"""Geometry behind the ceph figures (private, pure): names, contours, measure lines, S–N frame."""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

from dentalkit.ceph import load_measures, load_points
from dentalkit.errors import InputError
from dentalkit.landmark_map import key_to_name
from dentalkit.plot._common import require_columns
from dentalkit.plot.house import with_unit

__all__ = [
    "CLOSED_CONTOURS",
    "UNIT_TEXT",
    "Primitive",
    "compact_label",
    "contour_groups",
    "landmark_text",
    "measure_primitives",
    "resolve_names",
    "short_label",
    "sn_frame",
    "view_rows",
]

#: Contour groups of the shipped landmark maps drawn as closed outlines (tooth crowns
#: and roots, orbits, the pterygomaxillary fissure, the nasal cavity); every other
#: group is an open line (profiles, mandible, cranial base, the cup of the sella).
#: Groups of a user map that are not listed are drawn open; pass ``closed=`` to change.
CLOSED_CONTOURS: frozenset[str] = frozenset(
    {
        "upper_incisor_outline",
        "lower_incisor_outline",
        "upper_molar_outline",
        "lower_molar_outline",
        "orbit_contour",
        "orbit_contour_R",
        "orbit_contour_L",
        "ptm_fissure",
        "nasal_cavity",
    }
)

_NUMBERED = re.compile(r"^(?P<group>.+)_(?P<num>\d+)$")


def resolve_names(
    rows: pd.DataFrame, view: str, landmark_map: str | Path | pd.DataFrame | None
) -> np.ndarray:
    """Anatomical name of every row: ``name`` where given, else the map's name of ``landmark``."""
    name = (
        np.array(rows["name"].to_numpy(dtype=object), dtype=object)
        if "name" in rows.columns
        else np.full(len(rows), None, dtype=object)
    )
    absent = pd.isna(name)
    if absent.any():
        if "landmark" not in rows.columns:
            raise InputError(
                "the landmarks table needs a 'name' or a 'landmark' column (service key "
                "such as Later_12) to know which point is which"
            )
        mapping = key_to_name(view, landmark_map)
        keys = rows["landmark"].astype(object).to_numpy()[absent]
        name[absent] = [mapping.get(k) for k in keys]
    return name


def contour_groups(names: Iterable[object], min_points: int = 3) -> dict[str, np.ndarray]:
    """Numbered names (``mandible_contour_07``) grouped by prefix → positions in number order."""
    names = list(names)
    found: dict[str, list[tuple[int, int]]] = {}
    for pos, n in enumerate(names):
        m = _NUMBERED.match(n) if isinstance(n, str) else None
        if m:
            found.setdefault(m["group"], []).append((int(m["num"]), pos))
    return {
        g: np.array([p for _, p in sorted(members)])
        for g, members in found.items()
        if len(members) >= min_points
    }


@dataclass(frozen=True)
class Primitive:
    """A polyline of a measure drawing.

    ``role`` is ``"line"``, ``"construction"`` (dashed helper) or ``"arc"`` (then
    ``center`` is the vertex, so a figure can stagger concentric arcs).
    """

    xy: np.ndarray
    role: str
    center: np.ndarray | None = None


def _foot(p: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    d = b - a
    return a + d * np.dot(p - a, d) / np.dot(d, d)


def _covering(a: np.ndarray, b: np.ndarray, extra: list[np.ndarray]) -> list[Primitive]:
    """Segment a–b, plus dashed extensions along its line out to the points ``extra``."""
    out = [Primitive(np.array([a, b]), "line")]
    d = b - a
    L2 = np.dot(d, d)
    ts = [np.dot(e - a, d) / L2 for e in extra]
    lo, hi = min([0.0, *ts]), max([1.0, *ts])
    if lo < 0:
        out.append(Primitive(np.array([a + lo * d, a]), "construction"))
    if hi > 1:
        out.append(Primitive(np.array([b, a + hi * d]), "construction"))
    return out


def _arc(v: np.ndarray, p: np.ndarray, q: np.ndarray, n: int = 32) -> Primitive:
    r = 0.3 * min(np.hypot(*(p - v)), np.hypot(*(q - v)))
    a1 = np.arctan2(*(p - v)[::-1])
    a2 = np.arctan2(*(q - v)[::-1])
    delta = (a2 - a1 + np.pi) % (2 * np.pi) - np.pi
    th = a1 + delta * np.linspace(0.0, 1.0, n)
    return Primitive(v + r * np.column_stack([np.cos(th), np.sin(th)]), "arc", v)


def _intersection(a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray) -> np.ndarray | None:
    u, w = b - a, d - c
    den = u[0] * w[1] - u[1] * w[0]
    if abs(den) < 1e-12 * np.hypot(*u) * np.hypot(*w):
        return None
    s = ((c - a)[0] * w[1] - (c - a)[1] * w[0]) / den
    return a + s * u


def _two_lines(
    a: np.ndarray, b: np.ndarray, c: np.ndarray, d: np.ndarray, box: np.ndarray
) -> list[Primitive]:
    x = _intersection(a, b, c, d)
    near = x is not None and bool(np.all(x >= box[0]) and np.all(x <= box[1]))
    extra = [x] if near else []
    return _covering(a, b, extra) + _covering(c, d, extra)


def _geometric(kind: str, P: list[np.ndarray], box: np.ndarray) -> list[Primitive]:
    if kind == "angle3":
        p, v, q = P
        return [
            Primitive(np.array([v, p]), "line"),
            Primitive(np.array([v, q]), "line"),
            _arc(v, p, q),
        ]
    if kind in ("vector_angle", "line_angle", "signed_angle"):
        return _two_lines(*P, box)
    if kind == "distance":
        return [Primitive(np.array(P), "line")]
    if kind == "point_line_distance":
        p, a, b = P
        f = _foot(p, a, b)
        return [*_covering(a, b, [f]), Primitive(np.array([p, f]), "line")]
    if kind == "along":
        p, q, a, b = P
        fp, fq = _foot(p, a, b), _foot(q, a, b)
        return [
            *_covering(a, b, [fp, fq]),
            Primitive(np.array([p, fp]), "construction"),
            Primitive(np.array([q, fq]), "construction"),
            Primitive(np.array([fp, fq]), "line"),
        ]
    raise InputError(f"cannot draw measure kind {kind!r}")


def measure_primitives(
    measure: str,
    points: Mapping[str, np.ndarray],
    catalog: pd.DataFrame | None = None,
    box: np.ndarray | None = None,
) -> tuple[list[Primitive], list[str]]:
    """Polylines that draw ``measure`` from named points, and the landmark names it uses.

    Derived measures (combination, ratio, asymmetry) draw their operands. Construction
    points (``M6`` …) are the means of their landmarks. Returns no primitives when a
    needed landmark is absent.
    """
    cat = load_measures() if catalog is None else catalog
    by_id = cat.set_index("id")
    construct = load_points().set_index("id")
    if box is None:
        allxy = np.array(list(points.values())) if points else np.zeros((1, 2))
        box = np.array([allxy.min(axis=0), allxy.max(axis=0)])
        pad = 0.2 * (box[1] - box[0])
        box = np.array([box[0] - pad, box[1] + pad])

    def point(name: str) -> np.ndarray | None:
        if name in points:
            return np.asarray(points[name], dtype=float)
        if name in construct.index:
            members = [point(m) for m in str(construct.loc[name, "points"]).split()]
            if any(m is None for m in members):
                return None
            return np.mean(members, axis=0)
        return None

    if measure not in by_id.index:
        raise InputError(f"unknown measure {measure!r}; see dentalkit.ceph.load_measures()")
    rec = by_id.loc[measure]
    kind = str(rec["kind"])
    if kind in ("combination", "ratio", "asymmetry"):
        shared = _shared_vertex_difference(rec, by_id, point) if kind == "combination" else None
        if shared is not None:
            return shared
        prims: list[Primitive] = []
        used: list[str] = []
        for tok in str(rec["operands"]).split():
            sub_p, sub_u = measure_primitives(tok.lstrip("+-"), points, cat, box)
            if not sub_p:
                return [], []
            prims += sub_p
            used += [u for u in sub_u if u not in used]
        return prims, used
    names = str(rec["points"]).split()
    P = [point(n) for n in names]
    if any(p is None or not np.all(np.isfinite(p)) for p in P):
        return [], []
    return _geometric(kind, P, box), list(dict.fromkeys(names))


def _shared_vertex_difference(rec: pd.Series, by_id: pd.DataFrame, point) -> tuple | None:
    """``X − Y`` of two vertex angles sharing vertex and first arm (ANB = SNA − SNB).

    Drawn as the angle between the two other arms, which is what the difference is
    (signed by which side it falls on).
    """
    ops = str(rec["operands"]).split()
    if len(ops) != 2 or not ops[1].startswith("-") or ops[0].startswith("-"):
        return None
    a, b = ops[0].lstrip("+"), ops[1][1:]
    if a not in by_id.index or b not in by_id.index:
        return None
    ra, rb = by_id.loc[a], by_id.loc[b]
    if ra["kind"] != "angle3" or rb["kind"] != "angle3":
        return None
    pa, pb = str(ra["points"]).split(), str(rb["points"]).split()
    if pa[:2] != pb[:2]:
        return None
    v, q1, q2 = point(pa[1]), point(pa[2]), point(pb[2])
    if any(p is None or not np.all(np.isfinite(p)) for p in (v, q1, q2)):
        return [], []
    prims = [
        Primitive(np.array([v, q1]), "line"),
        Primitive(np.array([v, q2]), "line"),
        _arc(v, q1, q2),
    ]
    return prims, [pa[1], pa[2], pb[2]]


#: How values of each unit are written after the number (the house style's spelling,
#: :func:`dentalkit.plot.house.with_unit`, with its leading space).
UNIT_TEXT = {u: with_unit("", u) for u in ("deg", "mm", "px", "%")}


def view_rows(landmarks: pd.DataFrame, view: str) -> pd.DataFrame:
    require_columns(landmarks, ["x", "y"], "landmarks")
    if "view" in landmarks.columns:
        rows = landmarks[landmarks["view"].astype(str) == view]
        if not len(rows):
            raise InputError(f"the landmarks table has no rows of view {view!r}")
        return rows
    return landmarks


def short_label(catalog: pd.DataFrame, measure: str) -> str:
    """``SNA`` for "SNA angle", "FMA (FH to …)"; "U1 to SN" for ``U1_SN``."""
    hit = catalog.loc[catalog["id"] == measure, "label"]
    if not len(hit):
        return measure
    short = str(hit.iloc[0]).split(" (")[0]
    return measure if short.lower().startswith(measure.lower()) else short


def compact_label(catalog: pd.DataFrame, measure: str) -> str:
    """The shortest readable name: ids made of abbreviations joined ("SN–MP", "U1–SN",
    "IMPA"), else :func:`short_label` ("Lower lip to E-line")."""
    parts = measure.split("_")
    if all(p[:1].isupper() or p[:1].isdigit() for p in parts):
        return "–".join(parts)
    return short_label(catalog, measure)


def landmark_text(name: str) -> str:
    """A landmark name as printed: ``U1_tip`` → "U1 tip"."""
    return str(name).replace("_", " ")


# --- S–N registration ---------------------------------------------------------------


def sn_frame(
    xy: np.ndarray, s: np.ndarray, n: np.ndarray, face: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """Registered coordinates of points ``xy`` (image, y down) of each row's session.

    Every argument is per row (``(m, 2)``): the point, the session's S, N and face
    centroid. Returns the points in the S–N frame (origin S, +x along S → N, +y
    superior; mirrored when the face would lie above S–N) and the S–N length per row.
    """
    flip = np.array([1.0, -1.0])
    p, s, n, c = xy * flip, s * flip, n * flip, face * flip
    d = n - s
    length = np.hypot(d[:, 0], d[:, 1])
    cos, sin = d[:, 0] / length, d[:, 1] / length
    rel, crel = p - s, c - s
    x = cos * rel[:, 0] + sin * rel[:, 1]
    y = -sin * rel[:, 0] + cos * rel[:, 1]
    face_y = -sin * crel[:, 0] + cos * crel[:, 1]
    y = np.where(face_y > 0, -y, y) + 0.0  # no negative zeros
    return np.column_stack([x, y]), length
