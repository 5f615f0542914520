"""Forward construction of dental arches, tooth keypoints and tooth outlines (private).

Arch frame (occlusograms): millimetres, incisal point (contact of the central
incisors) at the origin, x towards the *patient's left*, y = depth, positive
posteriorly. The arch form is the catenary ``y = a·(cosh(x/a) − 1)``; tooth
centres lie on it at arc length ``s`` from the midline, with
``x = ±a·asinh(s/a)`` and ``y = a·(√(1 + (s/a)²) − 1)``.

Pano frame: millimetres, x towards the patient's left, y up, the occlusal line
at y = 0 (upper teeth above, lower below), teeth unrolled side by side.
Frontal-photo frame: the same axes; each tooth is the orthographic projection
of its arch segment (its apparent width shrinks towards the back).

Never imports an analysis or converter module.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from functools import lru_cache

import numpy as np

from dentalkit.sandbox._patient import ARCHES, SIDES, TOOTH_TYPES, Patient
from dentalkit.sandbox._rng import PATIENT_CACHE

__all__ = [
    "CATENARY_TEETH",
    "FRONTAL_TYPES",
    "arch_layout",
    "catenary_a",
    "frontal_layout",
    "outline",
    "pano_layout",
]

#: Lingual taper of the occlusal outline (fraction of MD lost at the lingual end),
#: superellipse exponent of the occlusal outline, by tooth type.
TAPER = {
    "i1": 0.35,
    "i2": 0.35,
    "c": 0.25,
    "p1": 0.15,
    "p2": 0.15,
    "m1": 0.08,
    "m2": 0.08,
    "m3": 0.08,
}
EXPONENT = {"i1": 3.0, "i2": 3.0, "c": 3.0, "p1": 3.2, "p2": 3.2, "m1": 3.5, "m2": 3.5, "m3": 3.5}
#: Vertices of every outline (a multiple of 4, so the four extremes are vertices).
N_VERTICES = 32
#: Teeth whose centres are reported as ``CatenaryPoints`` (second molar to second molar).
CATENARY_TEETH = ("i1", "i2", "c", "p1", "p2", "m1", "m2")
#: Teeth of the frontal intra-oral photograph (both arches, both sides).
FRONTAL_TYPES = ("i1", "i2", "c", "p1")
#: FDI quadrant of (side, arch) and tooth digit of a type (ISO 3950).
QUADRANT = {("rgt", "up"): 1, ("lft", "up"): 2, ("lft", "lo"): 3, ("rgt", "lo"): 4}
DIGIT = {t: i + 1 for i, t in enumerate(TOOTH_TYPES)}


def fdi(key: str) -> int:
    """FDI number of a tooth key (``m1_rgt_up`` → 16)."""
    t, side, arch = key.split("_")
    return 10 * QUADRANT[(side, arch)] + DIGIT[t]


def catenary_a(arc_r: float, arc_l: float, width: float) -> float:
    """Catenary parameter ``a`` (mm) whose points at arc lengths ``arc_r``/``arc_l``
    (right/left) are ``width`` apart in x: ``a·asinh(s_r/a) + a·asinh(s_l/a) = width``.

    The left side increases monotonically with ``a`` (from 0 to ``s_r + s_l``),
    so bisection converges; 60 halvings give machine precision.
    """
    lo, hi = 1e-3, 1e4
    if width >= arc_r + arc_l:
        raise ValueError("the intermolar width must be shorter than the arc between the molars")
    for _ in range(80):
        a = 0.5 * (lo + hi)
        if a in (lo, hi):  # lo and hi are adjacent floats: no halving changes them
            break
        if a * (math.asinh(arc_r / a) + math.asinh(arc_l / a)) < width:
            lo = a
        else:
            hi = a
    return 0.5 * (lo + hi)


def _superellipse(n: float) -> tuple[np.ndarray, np.ndarray]:
    """Superellipse sampled at half steps and scaled to [−1, 1]²: every side is a flat edge.

    The two vertices next to each extreme share the extreme coordinate, so the
    outline's extents are exact and the axis-aligned box is its minimum-area
    bounding rectangle.
    """
    t = 2.0 * np.pi * (np.arange(N_VERTICES) + 0.5) / N_VERTICES
    c, s = np.cos(t), np.sin(t)
    u = np.sign(c) * np.abs(c) ** (2.0 / n)
    v = np.sign(s) * np.abs(s) ** (2.0 / n)
    return u / np.abs(u).max(), v / np.abs(v).max()


@lru_cache(maxsize=32)
def _unit_outline(kind: str, taper: float, exponent: float) -> np.ndarray:
    """Unit outline in (u, v) ∈ [−1, 1]²: u mesiodistal, v buccal (+) / lingual (−).

    Occlusal outlines narrow lingually: below the mesial/distal flat edge
    (|v| ≤ v_flat) the half-width shrinks linearly to ``1 − taper`` at v = −1.
    """
    u, v = _superellipse(exponent)
    if kind == "occlusal":
        v_flat = float(np.abs(v[np.abs(u) == 1.0]).max())
        u = u * (1.0 - taper * np.clip((-v - v_flat) / (1.0 - v_flat), 0.0, None))
    out = np.column_stack([u, v])
    out.flags.writeable = False
    return out


@lru_cache(maxsize=16)
def _v_flat(tooth_type: str) -> float:
    """Half-length (in units of BL/2) of the flat mesial/distal edge of an occlusal outline."""
    uv = outline(tooth_type, "occlusal")
    return float(np.abs(uv[np.abs(uv[:, 0]) == 1.0, 1]).max())


def outline(tooth_type: str, view: str) -> np.ndarray:
    """Unit outline of a tooth type for a view (``occlusal`` or ``labial``), (u, v) in [−1, 1]."""
    if view == "occlusal":
        return _unit_outline("occlusal", TAPER[tooth_type], EXPONENT[tooth_type])
    return _unit_outline("labial", 0.0, 3.0)


@lru_cache(maxsize=32)
def _pano_unit() -> np.ndarray:
    """Unit pano outline: u ∈ [−1, 1] across, v ∈ [0, 1] from the incisal edge to the apex."""
    v_crown = np.linspace(0.0, 0.12, 4)
    h_crown = 0.75 + 0.25 * np.sqrt(np.clip(1.0 - ((0.12 - v_crown) / 0.12) ** 2, 0.0, None))
    v_body = np.array([0.2, 0.3, 0.38])
    v_root = np.linspace(0.38, 1.0, 9)[1:]
    h_root = np.sqrt(np.clip(1.0 - ((v_root - 0.38) / 0.62) ** 1.6, 0.0, None)) * 0.8 + 0.2 * (
        1.0 - (v_root - 0.38) / 0.62
    )
    v = np.concatenate([v_crown, v_body, v_root])
    h = np.concatenate([h_crown, np.ones(3), h_root])
    h[-1] = 0.0  # the apex is a single point
    right = np.column_stack([h, v])
    left = np.column_stack([-h[-2::-1], v[-2::-1]])
    out = np.vstack([right, left])
    out.flags.writeable = False
    return out


#: Unit occlusal outline of each tooth row of an arch layout, rows in (side, type) order.
_OCCLUSAL_UV = np.stack([outline(t, "occlusal") for _ in SIDES for t in TOOTH_TYPES])
_OCCLUSAL_UV.flags.writeable = False
_MOLAR_ROWS = np.array([t in ("m1", "m2", "m3") for _ in SIDES for t in TOOTH_TYPES])


def _present(p: Patient, key: str) -> bool:
    return key not in p.missing


def arch_layout(p: Patient, arch: str) -> dict:
    """Tooth centres, contact points, keypoints and occlusal outlines of one arch (mm).

    Returns a dict with ``a`` (catenary parameter, mm), ``teeth`` (key → record
    with ``centre``, ``mesial``, ``distal``, ``cusp``, ``tangent``, ``md``, ``bl``,
    ``outline`` (32×2), ``missing``), ``catenary`` (``tNN`` → point, FDI order
    from the patient's right second molar to the left one), the arch widths and
    ``arrays`` (``centre``, ``mesial``, ``distal``, ``cusp`` as read-only (16, 2)
    arrays, rows in the order of ``teeth``).
    """
    return _arch_layout(p.patient_id, arch)


@lru_cache(maxsize=2 * PATIENT_CACHE)  # two arches per patient
def _arch_layout(patient_id: str, arch: str) -> dict:
    from dentalkit.sandbox._patient import patient

    p = patient(patient_id)
    # (MD, BL, flat-edge half length) of each tooth, per side in type order
    sizes = {
        side: [(*p.teeth[f"{t}_{side}_{arch}"][:2], _v_flat(t)) for t in TOOTH_TYPES]
        for side in SIDES
    }

    def layout_starts(a: float) -> dict[str, dict[str, float]]:
        """Arc length of each tooth's mesial end, with interproximal gaps that keep the
        flat mesial/distal edges of neighbours apart on the lingual (concave) side."""
        out: dict[str, dict[str, float]] = {}
        for side in SIDES:
            out[side] = side_starts = {}
            s = 0.0
            prev_centre = prev_half_bl = prev_flat = None
            for t, (md, bl, flat) in zip(TOOTH_TYPES, sizes[side], strict=True):
                if prev_centre is None:  # across the midline, half the gap on each side
                    turn = 2.0 * math.atan(0.5 * md / a)
                    s += 0.5 * (1.3 * flat * 0.5 * bl * turn + 0.02)
                else:
                    turn = math.atan((s + 0.5 * md) / a) - math.atan(prev_centre / a)
                    s += 1.3 * max(flat, prev_flat) * max(0.5 * bl, prev_half_bl) * turn + 0.02
                side_starts[t] = s
                prev_centre, prev_half_bl, prev_flat = s + 0.5 * md, 0.5 * bl, flat
                s += md
        return out

    a = 13.0
    for _ in range(3):  # fixed point: the gaps depend (weakly) on a
        starts = layout_starts(a)
        m1 = {side: starts[side]["m1"] + 0.5 * p.teeth[f"m1_{side}_{arch}"][0] for side in SIDES}
        a = catenary_a(m1["rgt"], m1["lft"], p.arch[f"intermolar_{arch}"])
    starts = layout_starts(a)

    # Every tooth of the arch at once (rows in (side, type) order); scalars per tooth with
    # math, then the outlines and keypoints as (16, …) arrays, element by element as the
    # per-tooth expressions compute them.
    keys, rows = [], []
    for side in SIDES:
        sign = 1.0 if side == "lft" else -1.0
        for t in TOOTH_TYPES:
            key = f"{t}_{side}_{arch}"
            md, bl = p.teeth[key][:2]
            s0 = starts[side][t]
            sc = s0 + 0.5 * md
            q = sc / a
            r = math.sqrt(1.0 + q * q)
            tx, ty = sign / r, q / r  # unit tangent, pointing distally
            qm, qd = s0 / a, (s0 + md) / a
            keys.append(key)
            rows.append((
                sign * a * math.asinh(q), a * (math.sqrt(1.0 + q * q) - 1.0),  # centre
                tx, ty, sign * ty, -sign * tx,  # tangent, buccal (away from the palate)
                sign * a * math.asinh(qm), a * (math.sqrt(1.0 + qm * qm) - 1.0),  # mesial
                sign * a * math.asinh(qd), a * (math.sqrt(1.0 + qd * qd) - 1.0),  # distal
                md, bl, sc,
            ))  # fmt: skip
    v = np.array(rows)
    centre, tan, buccal = v[:, 0:2], v[:, 2:4], v[:, 4:6]
    md_v, bl_v = v[:, 10], v[:, 11]
    uv = _OCCLUSAL_UV  # (16, 32, 2): the unit outline of each row's tooth type
    outlines = (
        centre[:, None, :]
        + (uv[:, :, 0] * 0.5 * md_v[:, None])[:, :, None] * tan[:, None, :]
        + (uv[:, :, 1] * 0.5 * bl_v[:, None])[:, :, None] * buccal[:, None, :]
    )
    cusps = centre + (0.3 * bl_v)[:, None] * buccal
    cusps[_MOLAR_ROWS] = cusps[_MOLAR_ROWS] - (0.22 * md_v[_MOLAR_ROWS])[:, None] * tan[_MOLAR_ROWS]
    mesial, distal = v[:, 6:8].copy(), v[:, 8:10].copy()
    centre, tan = centre.copy(), tan.copy()
    for arr in (centre, tan, mesial, distal, cusps, outlines):
        arr.flags.writeable = False
    teeth = {}
    # the per-tooth arrays below are rows of these (read-only) arrays
    arrays = {"centre": centre, "mesial": mesial, "distal": distal, "cusp": cusps}
    for i, key in enumerate(keys):
        teeth[key] = {
            "centre": centre[i],
            "mesial": mesial[i],
            "distal": distal[i],
            "cusp": cusps[i],
            "tangent": tan[i],
            "md": rows[i][10],
            "bl": rows[i][11],
            "outline": outlines[i],
            "missing": key in p.missing,
            "arc_mm": rows[i][12],
        }
    order = [f"{t}_rgt_{arch}" for t in reversed(CATENARY_TEETH)] + [
        f"{t}_lft_{arch}" for t in CATENARY_TEETH
    ]
    catenary = {f"t{fdi(k)}": teeth[k]["centre"] for k in order}
    c_r, c_l = teeth[f"c_rgt_{arch}"]["centre"], teeth[f"c_lft_{arch}"]["centre"]
    m_r, m_l = teeth[f"m1_rgt_{arch}"]["centre"], teeth[f"m1_lft_{arch}"]["centre"]
    # depth: distance from the incisal point (origin) to the line through the m1 centres
    dm = m_l - m_r
    depth = abs(dm[0] * (0.0 - m_r[1]) - dm[1] * (0.0 - m_r[0])) / float(np.hypot(*dm))
    return {
        "a": a,
        "teeth": teeth,
        "catenary": catenary,
        "intercanine_width_mm": float(np.hypot(*(c_l - c_r))),
        "intermolar_width_mm": float(np.hypot(*dm)),
        "depth_mm": depth,
        "arrays": arrays,
    }


def pano_layout(p: Patient) -> dict[str, dict]:
    """All 32 teeth unrolled side by side as on a panoramic radiograph (mm, y up)."""
    return _pano_layout(p.patient_id)


@lru_cache(maxsize=PATIENT_CACHE)
def _pano_layout(patient_id: str) -> dict[str, dict]:
    from dentalkit.sandbox._patient import patient

    p = patient(patient_id)
    gap, mid_gap, occ_gap = 0.6, 0.3, 0.8
    unit = _pano_unit()
    keys, rows = [], []
    for arch in ARCHES:
        vdir = 1.0 if arch == "up" else -1.0
        for side in SIDES:
            sign = 1.0 if side == "lft" else -1.0
            x = mid_gap
            for t in TOOTH_TYPES:
                key = f"{t}_{side}_{arch}"
                md, _, length, _ = p.teeth[key]
                keys.append(key)
                rows.append((sign * (x + 0.5 * md), md, length, vdir))  # centre x, …
                x += md + gap
    v = np.array(rows)
    xc, md_v, length_v, vdir_v = v[:, 0:1], v[:, 1:2], v[:, 2:3], v[:, 3:4]
    outlines = np.stack(
        [xc + 0.5 * md_v * unit[:, 0], vdir_v * (occ_gap + length_v * unit[:, 1])], axis=-1
    )
    centres = np.concatenate([xc, vdir_v * (occ_gap + 0.5 * length_v)], axis=1)
    outlines.flags.writeable = centres.flags.writeable = False
    return {
        key: {
            "outline": outlines[i],
            "md": rows[i][1],
            "length": rows[i][2],
            "centre": centres[i],
            "missing": key in p.missing,
        }
        for i, key in enumerate(keys)
    }


def frontal_layout(p: Patient, lower_shift: float, overbite: float) -> dict[str, dict]:
    """Labial outlines of the teeth of ``FRONTAL_TYPES`` (both arches) on a frontal photo.

    Each tooth spans the orthographic projection (x) of its arch segment
    between its mesial and distal contact; the upper crown hangs above the
    occlusal line, the lower crown below it shows its crown height less the
    overbite (at least 2.5 mm). ``lower_shift`` moves the lower arch sideways
    (lower minus upper dental midline, mm).
    """
    return _frontal_layout(p.patient_id, round(lower_shift, 9), round(overbite, 9))


@lru_cache(maxsize=PATIENT_CACHE)
def _frontal_layout(patient_id: str, lower_shift: float, overbite: float) -> dict[str, dict]:
    from dentalkit.sandbox._patient import patient

    p = patient(patient_id)
    unit = outline("i1", "labial")
    keys, rows, mds = [], [], []
    for arch in ARCHES:
        layout = _arch_layout(patient_id, arch)
        shift = lower_shift if arch == "lo" else 0.0
        for side in SIDES:
            for t in FRONTAL_TYPES:
                key = f"{t}_{side}_{arch}"
                rec = layout["teeth"][key]
                x0, x1 = sorted((float(rec["mesial"][0]), float(rec["distal"][0])))
                crown = p.teeth[key][3]
                if arch == "up":
                    height = crown
                    yc = 0.1 + 0.5 * height
                else:
                    height = max(crown - max(overbite, 0.0), 2.5)
                    yc = -0.1 - 0.5 * height
                keys.append(key)
                mds.append(rec["md"])
                rows.append((0.5 * (x0 + x1) + shift, yc, x1 - x0, height))  # centre, size
    v = np.array(rows)
    xc, yc_v, width_v, height_v = v[:, 0:1], v[:, 1:2], v[:, 2:3], v[:, 3:4]
    outlines = np.stack(
        [xc + 0.5 * width_v * unit[:, 0], yc_v + 0.5 * height_v * unit[:, 1]], axis=-1
    )
    centres = v[:, 0:2].copy()
    outlines.flags.writeable = centres.flags.writeable = False
    return {
        key: {
            "outline": outlines[i],
            "width": rows[i][2],
            "height": rows[i][3],
            "md": mds[i],
            "centre": centres[i],
            "missing": key in p.missing,
        }
        for i, key in enumerate(keys)
    }


def arch_summary(layout: Mapping) -> dict[str, float]:
    """Widths and depth of an arch layout (mm)."""
    return {
        "catenary_a_mm": layout["a"],
        "intercanine_width_mm": layout["intercanine_width_mm"],
        "intermolar_width_mm": layout["intermolar_width_mm"],
        "depth_mm": layout["depth_mm"],
    }
