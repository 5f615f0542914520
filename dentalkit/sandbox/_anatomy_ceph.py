"""Forward construction of lateral and frontal cephalometric landmarks (private).

Points are Python complex numbers ``x + iy`` while they are built (fast scalar
2-D arithmetic; a rotation is a multiplication by ``exp(iθ)``), then gathered
into ``(n, 2)`` float arrays in landmark-map order.

Lateral frame: millimetres, S at the origin, x anterior (the face looks to +x),
y up, Frankfort horizontal (Po–Or) parallel to x. Every landmark is placed from
drawn parameters so that the definitions of ``docs/conventions.md`` hold
exactly for the noise-free geometry (the construction chain is in
``docs/sandbox.md``).

Frontal frame: millimetres, Cg at the origin, x towards the *patient's left*
(the image's right on a PA film), y up; the mid-sagittal reference line Cg–ANS
is the y axis.

This module never imports an analysis or converter module.
"""

from __future__ import annotations

import cmath
import math
from collections.abc import Mapping
from functools import lru_cache
from operator import itemgetter

import numpy as np

from dentalkit.landmark_map import load_landmark_map

__all__ = [
    "CONTOUR_NOISE_SD_MM",
    "FOLLOWED_NORMS",
    "FRONTAL_NAMES",
    "FRONTAL_NOISE_SD_MM",
    "LATERAL_NAMES",
    "LATERAL_NOISE_SD_MM",
    "frontal_mm",
    "lateral_mm",
    "mandible_chain",
    "noise_sd",
]


def _load(view: str) -> tuple[tuple[str, ...], tuple[str, ...]]:
    m = load_landmark_map(view)
    return tuple(m["key"]), tuple(m["name"])


LATERAL_KEYS, LATERAL_NAMES = _load("lateral")
FRONTAL_KEYS, FRONTAL_NAMES = _load("frontal")

#: Per-landmark noise SD in mm (isotropic Gaussian) of the lateral view. Named
#: landmarks that are hard to locate (Go, Po, Or, Ba, Co) get the largest SDs,
#: in line with reported inter-observer errors (≈0.3–1.5 mm).
LATERAL_NOISE_SD_MM: dict[str, float] = {
    "S": 0.4, "N": 0.5, "Or": 1.2, "Po": 1.5, "A": 0.8, "B": 0.7, "Pog": 0.6, "Me": 0.6,
    "Gn": 0.6, "Go": 1.5, "ANS": 0.8, "PNS": 1.0, "Ar": 1.0, "Co": 1.4, "Ba": 1.4,
    "Pt": 1.0, "Ptm": 1.0, "Xi": 1.2, "Pm": 0.8, "DC": 1.2,
    "U1_tip": 0.3, "U1_apex": 1.0, "U1_labial": 0.4, "L1_tip": 0.3, "L1_apex": 1.0,
    "L1_labial": 0.4, "U6_cusp": 0.7, "L6_cusp": 0.7, "U4_cusp": 0.7, "L4_cusp": 0.7,
    "G'": 0.8, "N'": 0.6, "Prn": 0.4, "Cm": 0.6, "Sn": 0.5, "A'": 0.7, "Ls": 0.4,
    "Stms": 0.4, "Stmi": 0.4, "Li": 0.4, "B'": 0.7, "Pog'": 0.6, "Gn'": 0.7, "Me'": 0.8,
}  # fmt: skip
#: The published norms the synthetic cohort follows: (measure id of
#: ``dentalkit/data/ceph_measures.csv``, norm group of ``ceph_norms.csv``). Every norm
#: there with an SD whose age band covers the simulated ages (8–17 years) is listed; the
#: adult norms (McNamara's Co–A, Co–Gn, ANS–Me; the nasolabial angle) are not followed.
#: Over the demo's patients the mean z-score of each, per sex, lies within ±0.5
#: (``tests/sandbox/test_sandbox_norms.py``; ``docs/sandbox.md``).
FOLLOWED_NORMS: tuple[tuple[str, str], ...] = (
    ("saddle_angle", "Jarabak"),
    ("articular_angle", "Jarabak"),
    ("gonial_angle", "Jarabak"),
    ("Bjork_sum", "Jarabak"),
    ("facial_axis", "Ricketts"),
    ("convexity_A_NPog", "Ricketts"),
    ("L1_APog_mm", "Ricketts"),
    ("lower_facial_height_angle", "Ricketts"),
    ("E_line_lower_lip", "Ricketts"),
    ("ODI", "Kim"),
    ("APDI", "Kim"),
    ("soft_convexity_angle", "Legan"),
)
#: SD (mm) of every contour point (names ``{group}_{NN}``), both views.
CONTOUR_NOISE_SD_MM = 0.8
#: Per-landmark noise SD in mm of the frontal (PA) view.
FRONTAL_NOISE_SD_MM: dict[str, float] = {
    "Cg": 0.8, "ANS": 0.8, "Me": 0.7, "UDM": 0.4, "LDM": 0.4,
    **{f"{p}_{s}": sd for p, sd in {"Or": 1.0, "Z": 1.0, "ZA": 1.2, "NC": 0.8, "J": 1.0,
                                    "Ag": 1.2, "Co": 1.5, "Ma": 1.5, "U6": 0.6, "L6": 0.6}.items()
       for s in ("R", "L")},
}  # fmt: skip


def _is_contour(name: str) -> bool:
    group, _, num = name.rpartition("_")
    return bool(group) and num.isdigit() and len(num) == 2


def _groups(names: tuple[str, ...]) -> dict[str, int]:
    sizes: dict[str, int] = {}
    for n in names:
        if _is_contour(n):
            g = n.rpartition("_")[0]
            sizes[g] = sizes.get(g, 0) + 1
    return sizes


LATERAL_GROUPS = _groups(LATERAL_NAMES)
FRONTAL_GROUPS = _groups(FRONTAL_NAMES)


@lru_cache(maxsize=2)
def noise_sd(view: str) -> np.ndarray:
    """Noise SD (mm) per landmark of ``view``, in landmark-map key order."""
    names = LATERAL_NAMES if view == "lateral" else FRONTAL_NAMES
    table = LATERAL_NOISE_SD_MM if view == "lateral" else FRONTAL_NOISE_SD_MM
    sd = np.array([table.get(n, CONTOUR_NOISE_SD_MM) for n in names])
    sd.flags.writeable = False
    return sd


#: Correlation length (points) of the contour noise: along each contour the noise is white
#: noise smoothed by a Gaussian kernel of this SD over the point index, rescaled so every
#: point keeps its own SD. An AI tracing draws smooth contours; independent noise of
#: 0.8 mm on points ~5 mm apart made them zig-zag.
CONTOUR_NOISE_CORRELATION_POINTS = 2.0


@lru_cache(maxsize=2)
def noise_mixer(view: str) -> np.ndarray:
    """``(n, n)`` matrix that turns independent standard normals into the view's noise.

    Identity for named landmarks (independent); within each contour group a Gaussian
    kernel of :data:`CONTOUR_NOISE_CORRELATION_POINTS` over the index distance along the
    contour (an open chain), each row scaled to unit Euclidean norm, so ``M @ z`` of
    standard normal ``z`` is again standard normal per point (neighbours correlated).
    """
    names = LATERAL_NAMES if view == "lateral" else FRONTAL_NAMES
    n = len(names)
    mixer = np.eye(n)
    chains: dict[str, list[tuple[int, int]]] = {}
    for i, name in enumerate(names):
        if _is_contour(name):
            group, _, num = name.rpartition("_")
            chains.setdefault(group, []).append((int(num), i))
    for members in chains.values():
        idx = np.array([i for _, i in sorted(members)])
        d = np.arange(len(idx))
        w = np.exp(-0.5 * ((d[:, None] - d[None, :]) / CONTOUR_NOISE_CORRELATION_POINTS) ** 2)
        w /= np.sqrt((w**2).sum(axis=1, keepdims=True))
        mixer[np.ix_(idx, idx)] = w
    mixer.flags.writeable = False
    return mixer


class _Gather:
    """Precomputed gather of named points + contour groups into key order."""

    def __init__(self, names: tuple[str, ...], groups: dict[str, int]) -> None:
        self.named = tuple(n for n in names if not _is_contour(n))
        self.groups = tuple(groups)
        offset = {n: i for i, n in enumerate(self.named)}
        start = len(self.named)
        for g in self.groups:
            offset[g] = start
            start += groups[g]
        idx = []
        for n in names:
            if _is_contour(n):
                g, _, num = n.rpartition("_")
                idx.append(offset[g] + int(num) - 1)
            else:
                idx.append(offset[n])
        self.index = np.array(idx)
        self.identity = bool((self.index == np.arange(len(idx))).all())
        self.sizes = groups
        self.get_named = itemgetter(*self.named)
        self.get_contours = itemgetter(*self.groups)

    def __call__(
        self, named: dict[str, complex], contours: dict[str, np.ndarray | list[complex]]
    ) -> np.ndarray:
        """``(n, 2)`` float array (x, y) in key order (contours: arrays or lists of complex)."""
        # one flat list and one array: cheaper than an array per piece and a concatenate
        pool = list(self.get_named(named))
        for c in self.get_contours(contours):
            pool += c if isinstance(c, list) else c.tolist()
        arr = np.array(pool, dtype=complex)
        if not self.identity:
            arr = arr[self.index]
        return arr.view(np.float64).reshape(-1, 2)  # (real, imag) pairs


_LATERAL = _Gather(LATERAL_NAMES, LATERAL_GROUPS)
_FRONTAL = _Gather(FRONTAL_NAMES, FRONTAL_GROUPS)


def _frozen(a: np.ndarray) -> np.ndarray:
    a.flags.writeable = False
    return a


# Contour templates: the parts of each contour that do not depend on the patient,
# computed once (the per-patient expressions below apply them in the same order).
_g, _t = (
    LATERAL_GROUPS,
    np.arange(1, LATERAL_GROUPS["cranial_base"] + 1) / (LATERAL_GROUPS["cranial_base"] + 1.0),
)
_SELLA_RIM = _frozen(np.exp(1j * np.radians(np.linspace(20.0, -200.0, _g["sella_contour"]))))
_CRANIAL_T = _frozen(_t)
_CRANIAL_BULGE = _frozen(3.0 * np.sin(np.pi * _t) * 1j)
_ang = np.radians(-60.0 + 60.0 * np.arange(_g["orbit_contour"]))
_ORBIT_X, _ORBIT_Y = _frozen(15.0 * np.cos(_ang)), _frozen(17j * np.sin(_ang))
_NASAL_STEPS = _frozen(5.0 * np.arange(1, _g["nasal_bone"] + 1))
_ang = np.radians(np.array([30.0, 75.0, 120.0, 240.0, 300.0])[: _g["ptm_fissure"]])
_PTM_ALONG, _PTM_ACROSS = _frozen(0.5 * np.cos(_ang)), _frozen(3.0 * np.sin(_ang) * 1j)
_rel = np.array([0.02 + 0.9j, 0.3 + 3.5j, 0.48 + 3.1j, 0.75 + 1.9j,
                 0.98 + 0.4j, 0.75 - 1.9j, 0.48 - 2.9j, 0.25 - 3.4j])  # fmt: skip
_INCISOR_ALONG, _INCISOR_ACROSS = _frozen(_rel.real.copy()), _frozen(_rel.imag.copy())
_mol = np.array([1.2 + 0.3j, -8.5 + 0.3j, -9.5 + 3.5j, -8.3 + 7j, 0.8 + 7j, 2.2 + 3.5j])
_UPPER_MOLAR, _LOWER_MOLAR = _frozen(_mol), _frozen(_mol.real + 1.0 - 1j * _mol.imag)
_SOFT = (
    "G'",
    "N'",
    "Prn",
    "Cm",
    "Sn",
    "A'",
    "Ls",
    "Stms",
    "Stmi",
    "Li",
    "B'",
    "Pog'",
    "Gn'",
    "Me'",
)
_g = FRONTAL_GROUPS
_ORBIT_PA = {}
for _side in ("R", "L"):
    _n = _g[f"orbit_contour_{_side}"]
    _ang = np.radians(-72.0 + 360.0 / _n * np.arange(_n))
    _ORBIT_PA[_side] = (_frozen(19.0 * np.cos(_ang)), _frozen(17j * np.sin(_ang)))
_ang = np.radians(15.0 + 360.0 / _g["nasal_cavity"] * np.arange(_g["nasal_cavity"]))
_NASAL_COS, _NASAL_SIN = _frozen(np.cos(_ang)), _frozen(np.sin(_ang))
_NASAL_UP = _frozen(_NASAL_SIN > 0)
_ang = np.radians(np.linspace(200.0, -20.0, _g["skull_outline"]))
_SKULL = _frozen(72.0 * np.cos(_ang) + 1j * (-10.0 + 82.0 * np.sin(_ang)))
del _g, _t, _ang, _rel, _mol, _side, _n
# the same templates as Python numbers, for the contours built point by point
_L_SELLA_RIM = _SELLA_RIM.tolist()
_L_CRANIAL = tuple(zip(_CRANIAL_T.tolist(), _CRANIAL_BULGE.tolist(), strict=True))
_L_ORBIT = tuple(zip(_ORBIT_X.tolist(), _ORBIT_Y.tolist(), strict=True))
_L_NASAL_STEPS = _NASAL_STEPS.tolist()
_L_PTM = tuple(zip(_PTM_ALONG.tolist(), _PTM_ACROSS.tolist(), strict=True))
_L_INCISOR = tuple(zip(_INCISOR_ALONG.tolist(), _INCISOR_ACROSS.tolist(), strict=True))


def _u(deg: float) -> complex:
    """Unit vector at ``deg`` degrees counter-clockwise from +x."""
    return cmath.rect(1.0, math.radians(deg))


@lru_cache(maxsize=64)
def _fractions(n: int) -> np.ndarray:
    """Arc-length fractions (k + 0.5)/n, k = 0 … n − 1 (read-only, cached)."""
    frac = (np.arange(n) + 0.5) / n
    frac.flags.writeable = False
    return frac


def _resample(z: np.ndarray, n: int) -> np.ndarray:
    """``n`` points at arc-length fractions (k + 0.5)/n of an open polyline (complex)."""
    cum = np.empty(len(z))
    cum[0] = 0.0
    np.abs(z[1:] - z[:-1]).cumsum(out=cum[1:])  # the method: np.cumsum adds a Python wrapper
    s = _fractions(n) * cum[-1]
    out = np.empty(n, dtype=complex)
    out.real = np.interp(s, cum, z.real)
    out.imag = np.interp(s, cum, z.imag)
    return out


def _chaikin(z: np.ndarray, iterations: int = 2) -> np.ndarray:
    """Chaikin corner cutting of an open polyline (complex, end points kept).

    Each pass replaces every segment (a, b) by the points 0.75a + 0.25b and
    0.25a + 0.75b, keeping the two end points.
    """
    for _ in range(iterations):
        a75, a25 = 0.75 * z, 0.25 * z
        out = np.empty(2 * len(z), dtype=complex)
        out[0], out[-1] = z[0], z[-1]
        np.add(a75[:-1], a25[1:], out=out[1:-1:2])
        np.add(a25[:-1], a75[1:], out=out[2:-1:2])
        z = out
    return z


def _angle(a: complex, b: complex) -> float:
    """Unsigned angle between two vectors, degrees."""
    return abs(math.degrees(cmath.phase(b / a)))


def _xi(centre: complex, ans: complex, pm: complex, lfh: float) -> complex:
    """Xi: the point nearest ``centre`` (the ramus centre) where ANS–Xi–Pm is ``lfh`` degrees.

    The points that see the chord ANS–Pm under the angle θ lie on a circle arc through
    both (inscribed-angle theorem): centre of the circle on the chord's perpendicular
    bisector, (L/2)/tan θ from its midpoint on the side of the ramus, radius L/(2 sin θ).
    """
    chord = pm - ans
    length = abs(chord)
    theta = math.radians(lfh)
    m = 0.5 * (ans + pm)
    n = 1j * chord / length
    if ((centre - m) * n.conjugate()).real < 0:
        n = -n  # the normal pointing back, towards the ramus
    o = m + n * (0.5 * length / math.tan(theta))
    radius = 0.5 * length / math.sin(theta)
    return o + radius * (centre - o) / abs(centre - o)


def mandible_chain(c: Mapping[str, float]) -> dict[str, float | complex]:
    """Skeletal chain of the lateral view (mm frame, S at the origin, FH along x).

    ``N = S_N·e^{iφ}`` (φ = FH_SN); ``Ar = S_Ar·e^{i(φ − saddle)}``; the
    mandibular plane has direction ``u = e^{i(φ − SN_MP)}`` (Go → Me); the
    ramus leaves Go at the gonial angle γ to it: ``Go = Ar − Ar_Go·u·e^{iγ}``;
    ``Me = Go + Go_Me·u``. N–Me follows, and SNB = ∠S-N-Me + ``Me_angle`` (the
    chin lies ahead of the N–Me line), SNA = SNB + ANB (ANB drawn by skeletal
    class). The articular angle follows (Björk: saddle + articular + gonial =
    360° + SN_MP).
    """
    phi = c["FH_SN"]
    n = c["S_N"] * _u(phi)
    ar = c["S_Ar"] * _u(phi - c["saddle_angle"])
    u = _u(phi - c["SN_MP"])  # Go → Me along the mandibular plane
    go = ar - c["Ar_Go"] * u * _u(c["gonial_angle"])
    me = go + c["Go_Me"] * u
    snb = _angle(-n, me - n) + c["Me_angle"]
    return {
        "phi": phi, "N": n, "back": 180.0 + phi, "Me": me, "Ar": ar, "u": u, "Go": go,
        "SNB": snb, "SNA": snb + c["ANB"], "N_Me": abs(me - n),
        "articular": _angle(-ar, go - ar),
    }  # fmt: skip


def lateral_mm(
    c: Mapping[str, float], chain: Mapping[str, float | complex] | None = None
) -> tuple[np.ndarray, dict[str, float]]:
    """All 169 lateral landmarks (mm frame, key order) and the resulting measures.

    Parameters
    ----------
    c : mapping
        Session cephalometric parameters (``_patient.session(...).ceph``).
    chain : mapping, optional
        ``mandible_chain(c)`` when already computed (``_patient.session(...).chain``).

    Returns
    -------
    points : ndarray, shape (169, 2)
        Landmarks in the lateral mm frame (x anterior, y up), landmark-map order.
    measures : dict
        Every measure of ``docs/conventions.md`` (deg, mm) of this construction,
        plus derived extras (overjet, overbite, ramus and body lengths, ratios).
    """
    k = mandible_chain(c) if chain is None else chain
    phi, snb, back = k["phi"], k["SNB"], k["back"]
    N, Me, Ar, u, Go = k["N"], k["Me"], k["Ar"], k["u"], k["Go"]
    S = 0j
    sna = k["SNA"]
    n_me = k["N_Me"]
    n_ans = c["N_ANS_ratio"] * n_me
    ANS = N + n_ans * _u(back + sna + c["ANS_angle"])
    A = N + (n_ans + c["A_below_ANS"]) * _u(back + sna)
    B = N + c["B_ratio"] * n_me * _u(back + snb)
    Pog = N + c["Pog_ratio"] * n_me * _u(back + snb + c["Pog_angle"])
    chin = (Me - Pog) / abs(Me - Pog)
    out = -1j * chin  # outward (anterior-inferior) normal of the chin
    Gn = 0.5 * (Pog + Me) + 2.0 * out
    Pm = B + 0.6 * (Pog - B)
    d = (Go - Ar) / abs(Go - Ar)  # Ar → Go along the ramus
    ant = 1j * d  # anterior perpendicular to the ramus
    Co = Ar - 9.5 * d - 2.0 * ant
    y_fh = -c["FH_depth"]
    Po = complex(Co.real - c["Po_back"], y_fh)
    Or = complex(N.real - c["Or_back"], y_fh)
    Ba = c["S_Ba"] * _u(phi - c["NSBa"])
    PNS = ANS + c["ANS_PNS"] * _u(180.0 + phi - c["SN_PP"])
    Ptm = PNS + complex(0.4, 2.5)
    Pt = PNS + complex(-3.0, 19.5)
    ramus = c["Ar_Go"]
    Xi = _xi(0.5 * (Ar + Go) + 15.0 * ant, ANS, Pm, c["lower_facial_height"])
    cc = Co + 5.0 * d + 3.0 * ant  # condyle centre
    bn = (N - Ba) / abs(N - Ba)
    DC = Ba + ((cc - Ba) / bn).real * bn  # foot of the perpendicular on Ba–N
    # incisors
    ut = A + complex(c["U1_dx"], -c["U1_dy_ratio"] * (n_me - n_ans))
    au = _u(phi + c["U1_SN"])  # U1 tip → apex
    lu = -1j * au  # labial (anterior) perpendicular
    ua = ut + c["U1_length"] * au
    lt = complex(B.real + c["L1_dx"], ut.imag + c["overbite"])
    al = _u(phi - c["SN_MP"] + 180.0 - c["IMPA"])  # L1 apex → tip
    ll = -1j * al
    la = lt - c["L1_length"] * al
    mid = 0.5 * (ut + lt)
    o = _u(phi - c["SN_OP"])  # occlusal plane, anterior
    u6 = mid - c["U6_distance"] * o
    l6 = u6 + c["molar_relation"] * o
    u4 = mid - c["U4_distance"] * o
    P: dict[str, complex] = {
        "S": S, "N": N, "Or": Or, "Po": Po, "A": A, "B": B, "Pog": Pog, "Me": Me, "Gn": Gn,
        "Go": Go, "ANS": ANS, "PNS": PNS, "Ar": Ar, "Co": Co, "Ba": Ba, "Pt": Pt, "Ptm": Ptm,
        "Xi": Xi, "Pm": Pm, "DC": DC, "U1_tip": ut, "U1_apex": ua,
        "U1_labial": ut + 0.3 * c["U1_length"] * au + 3.3 * lu,
        "L1_tip": lt, "L1_apex": la, "L1_labial": lt - 0.3 * c["L1_length"] * al + 2.8 * ll,
        "U6_cusp": u6, "L6_cusp": l6, "U4_cusp": u4, "L4_cusp": u4 + 3.5 * o,
    }  # fmt: skip
    # soft tissue
    Ns = N + c["soft_N"]
    Sn = complex(A.real + c["soft_A"] + 1.5, ANS.imag - 3.0)
    Prn = ANS + complex(c["nose"], 11.0)
    gap = c["lip_gap"]
    stm_x = ut.real + 0.6 * c["soft_Ls"]
    P.update({
        "N'": Ns, "G'": Ns + complex(3.5, 14.0), "Prn": Prn, "Sn": Sn,
        "Cm": Sn + complex(0.5 * (Prn - Sn).real, 0.3 * (Prn - Sn).imag),
        "A'": A + c["soft_A"], "Ls": P["U1_labial"] + c["soft_Ls"],
        "Stms": complex(stm_x, ut.imag + 2.5 + gap / 2),
        "Stmi": complex(stm_x - 0.3, ut.imag + 2.5 - gap / 2),
        "Li": P["L1_labial"] + complex(c["soft_Li"], -1.5), "B'": B + c["soft_B"],
        "Pog'": Pog + c["soft_Pog"], "Gn'": Gn + 0.5 * (c["soft_Pog"] + c["soft_Me"]) * out,
        "Me'": Me - 1j * c["soft_Me"],
    })  # fmt: skip

    # contours
    g = LATERAL_GROUPS
    C: dict[str, np.ndarray] = {}
    # Small contours are built point by point with Python complex numbers: one scalar
    # multiplication of a template value per point, no numpy call per contour.
    r_s = 0.08 * c["S_N"]
    o_s = S + 0.3j * r_s
    C["sella_contour"] = [o_s + r_s * e for e in _L_SELLA_RIM]
    u_phi = _u(phi)
    C["cranial_base"] = [t * N - b * u_phi for t, b in _L_CRANIAL]
    o_or = Or + 17j
    C["orbit_contour"] = [o_or + x + y for x, y in _L_ORBIT]
    u_nb = _u(phi - 58.0)
    C["nasal_bone"] = [N + k * u_nb for k in _L_NASAL_STEPS]
    pr = A + 0.45 * (ut - A) + 1.0  # prosthion
    palate = np.array([ANS, A, pr, pr + complex(-6, 3), ANS + complex(-8, 4),
                       0.5 * (ANS + PNS) + 6j, PNS])  # fmt: skip
    C["maxilla_contour"] = _resample(_chaikin(palate, 1), g["maxilla_contour"])
    axis = Pt - Ptm
    o_pt, axis_unit = 0.5 * (Pt + Ptm), axis / abs(axis)
    C["ptm_fissure"] = [o_pt + a * axis + b * axis_unit for a, b in _L_PTM]
    infradentale = la + 0.62 * (lt - la) + 1.2 * ll
    up = 1j * u
    jaw = np.array([
        Co + 1.5 * ant - 1.0 * d, Co, Ar, Ar + 0.6 * ramus * d - 0.5 * ant,
        Go - 4.0 * d + 0.3 * ant, Go, Go + 4.0 * u + 0.4 * up, Go + 0.3 * (Me - Go) + 1.5 * up,
        Go + 0.7 * (Me - Go) + 0.5 * up, Me, Gn, Pog, Pm, B, infradentale,
    ])  # fmt: skip
    C["mandible_contour"] = _resample(_chaikin(jaw, 2), g["mandible_contour"])
    u1, l1 = c["U1_length"], c["L1_length"]
    C["upper_incisor_outline"] = [ut + a * u1 * au + b * lu for a, b in _L_INCISOR]
    C["lower_incisor_outline"] = [lt - a * l1 * al + b * ll for a, b in _L_INCISOR]
    C["upper_molar_outline"] = u6 + _UPPER_MOLAR * o
    C["lower_molar_outline"] = l6 + _LOWER_MOLAR * o
    soft = np.array([P[x] for x in _SOFT])
    C["soft_tissue_profile"] = _resample(soft, g["soft_tissue_profile"])

    points = _LATERAL(P, C)
    s_go = abs(Go)
    fma = c["SN_MP"] - phi
    measures = {
        "SNA": sna,
        "SNB": snb,
        "ANB": sna - snb,
        "SN_MP": c["SN_MP"],
        "FH_SN": phi,
        "FMA": fma,
        "IMPA": c["IMPA"],
        "FMIA": 180.0 - fma - c["IMPA"],
        "U1_SN": c["U1_SN"],
        "gonial_angle": c["gonial_angle"],
        "saddle_angle": c["saddle_angle"],
        "articular_angle": k["articular"],
        "bjork_sum": c["saddle_angle"] + k["articular"] + c["gonial_angle"],
        "S_N": c["S_N"],
        "N_Me": n_me,
        "N_ANS": n_ans,
        "ANS_Me": abs(Me - ANS),
        "S_Go": s_go,
        "Ar_Go": ramus,
        "Go_Me": c["Go_Me"],
        "jarabak_ratio": s_go / n_me,
        "overjet_mm": ut.real - lt.real,
        "overbite_mm": lt.imag - ut.imag,
        "molar_relation_mm": c["molar_relation"],
        "SN_OP": c["SN_OP"],
        "SN_PP": c["SN_PP"],
        "lower_facial_height_angle": _angle(ANS - Xi, Pm - Xi),
    }
    return points, measures


def frontal_mm(
    f: Mapping[str, float], c: Mapping[str, float]
) -> tuple[np.ndarray, dict[str, float]]:
    """All 118 frontal landmarks (Cg frame, key order) and the resulting widths/deviations.

    Bilateral pairs are placed symmetric about a group midpoint and turned by the
    group's cant, so their Euclidean distance equals the drawn width exactly.
    Midline deviations are signed distances from the Cg–ANS line, positive
    towards the patient's left.
    """
    h = f["Cg_ANS"]
    lower = c["N_Me"] * (1.0 - c["N_ANS_ratio"])
    y_ans = -h
    y_me = -(h + lower)
    y_occ = -(h + 0.45 * lower)
    y_ag = -(h + 0.62 * lower)
    P: dict[str, complex] = {"Cg": 0j, "ANS": complex(0.0, y_ans)}
    widths: dict[str, float] = {}

    def pair(name: str, y: float, width: float, shift: float = 0.0, cant: float = 0.0) -> None:
        mid = complex(shift, y)
        half = 0.5 * width * _u(cant)
        P[f"{name}_R"] = mid - half
        P[f"{name}_L"] = mid + half
        widths[name] = width

    ms, xs = f["mand_shift"], f["max_shift"]
    pair("Z", -5.0, f["Z"])
    pair("Or", -27.0, f["O"])
    pair("ZA", -0.75 * h, f["ZA"])
    pair("NC", -0.8 * h, f["NC"])
    pair("Co", -0.6 * h, f["Co"], 0.3 * ms)
    pair("Ma", -0.75 * h - 8.0, f["Ma"])
    pair("J", y_ans - 10.0, f["J"], xs, f["max_cant"])
    pair("U6", y_occ + 1.5, f["U6"], xs, f["max_cant"])
    pair("L6", y_occ - 1.5, f["U6"] - f["L6_diff"], 0.6 * ms, f["mand_cant"])
    pair("Ag", y_ag, f["Ag"], 0.7 * ms, f["mand_cant"])
    udm = xs + f["udm_dev"]
    ldm = 0.6 * ms + f["udm_dev"] + f["ldm_extra"]
    P["UDM"] = complex(udm, y_occ + 1.0)
    P["LDM"] = complex(ldm, y_occ - 1.0)
    P["Me"] = Me = complex(ms, y_me)

    g = FRONTAL_GROUPS
    C: dict[str, np.ndarray] = {}
    for side in ("R", "L"):
        ox, oy = _ORBIT_PA[side]
        C[f"orbit_contour_{side}"] = P[f"Or_{side}"] + 17j + ox + oy
    C["nasal_cavity"] = 0.5 * f["NC"] * _NASAL_COS + 1j * (
        -0.8 * h + np.where(_NASAL_UP, 0.35 * h, 0.2 * h - 1.0) * _NASAL_SIN
    )
    co_r, co_l, ag_r, ag_l = P["Co_R"], P["Co_L"], P["Ag_R"], P["Ag_L"]
    jaw = np.array([
        co_r, co_r + complex(-1, -15), ag_r + complex(-3, 8), ag_r, Me + complex(-16, 3), Me,
        Me + complex(16, 3), ag_l, ag_l + complex(3, 8), co_l + complex(1, -15), co_l,
    ])  # fmt: skip
    C["mandible_contour"] = _resample(_chaikin(jaw, 2), g["mandible_contour"])
    C["skull_outline"] = _SKULL.copy()
    za = 0.5 * f["ZA"]
    face = np.array([
        complex(-za - 4, -5), complex(-za - 7, -0.75 * h), complex(-0.5 * f["Ag"] - 9, y_ag),
        Me + complex(-14, -4), Me - 9j, Me + complex(14, -4),
        complex(0.5 * f["Ag"] + 9, y_ag), complex(za + 7, -0.75 * h), complex(za + 4, -5),
    ])  # fmt: skip
    C["face_outline"] = _resample(_chaikin(face, 2), g["face_outline"])

    points = _FRONTAL(P, C)
    measures = {
        "nasal_width_NC": widths["NC"],
        "maxillary_width_J": widths["J"],
        "mandibular_width_Ag": widths["Ag"],
        "bizygomatic_width_ZA": widths["ZA"],
        "upper_intermolar_width_U6": widths["U6"],
        "lower_intermolar_width_L6": widths["L6"],
        "condylar_width_Co": widths["Co"],
        "mastoid_width_Ma": widths["Ma"],
        "orbital_width_Or": widths["Or"],
        "frontozygomatic_width_Z": widths["Z"],
        "midline_deviation_UDM": udm,
        "midline_deviation_LDM": ldm,
        "midline_deviation_Me": ms,
        "mandibular_cant_deg": f["mand_cant"],
        "maxillary_cant_deg": f["max_cant"],
        "Cg_ANS": h,
    }
    return points, measures
