"""Error mode of the sandbox: answers as an imperfect AI would give them (off by default).

The simulator's answers are its anatomy plus small documented noise; a real service's
models are not that good. With ``ai_errors="realistic"`` (``running(ai_errors=…)``,
``dentalkit sandbox --ai-errors realistic``) the sandbox answers the landmark,
segmentation, keypoint and findings endpoints with the errors an AI makes, at declared
rates, deterministically per (PatientID, TimeStamp, image, endpoint) and ``ai_errors_seed``,
and records every injected error in its ground truth (``truth(...)["ai_errors"]``), so
that quality control can be scored. ``"off"`` (the default) answers exactly as before.

The models (:data:`MODELS`; the sources and the fit are in ``docs/sandbox.md``, "AI error
mode"):

Landmarks (both cephalometric views, named landmarks; contour points keep the simulator's
correlated noise)
    Every named landmark is moved from its true position by an isotropic Gaussian error of
    SD ``radial_scale × d`` per coordinate (a Rayleigh radial error), ``d`` being the
    landmark's relative difficulty (the per-landmark SD of ``_anatomy_ceph``: 0.3 mm for an
    incisor tip … 1.5 mm for gonion or porion); with probability ``gross_rate`` it is
    instead placed on another structure 5–30 mm away (a gross failure). In an answer, one
    pair of confusable landmarks is traded with probability ``trade_rate``.
Teeth (segmentation and occlusogram keypoints)
    Neighbouring teeth swap labels (``fdi_swap_rate``: the expected fraction of present
    teeth mislabelled), present teeth are reported missing (``missed_rate`` per tooth) and
    absent teeth reported present as a second outline of a present neighbour
    (``phantom_rate`` per tooth of the answer).
Arch points
    Two consecutive catenary points are given in each other's place (``order_rate`` per
    answer).
Findings
    Boxes are dropped (``box_drop_rate`` per box) and added (``box_add_rate`` per image:
    a near-copy of a box, a box crossing the image border or a box anywhere).

Examples
--------
>>> MODELS["realistic"].radial_scale > 1
True
>>> check_mode("gross")
'gross'
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from dentalkit.endpoints import Endpoint, Kind
from dentalkit.sandbox import _anatomy_ceph as ceph
from dentalkit.sandbox._answers import _clinical_kind, _landmark_px
from dentalkit.sandbox._images import IMAGE_SPECS, image_identity
from dentalkit.sandbox._placement import (
    Where,
    _arch_at,
    _frontal_at,
    _frontal_photo_at,
    _lateral_at,
    _pano_at,
)
from dentalkit.sandbox._rng import generator

__all__ = ["MODELS", "MODES", "ErrorModel", "check_mode", "inject"]

#: Error modes, in order of severity.
MODES = ("off", "realistic", "gross")

#: Landmark pairs an AI can trade (confusable structures), per view.
TRADE_PAIRS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "lateral": (
        ("Pog", "Me"),
        ("ANS", "A"),
        ("Co", "Ar"),
        ("Pt", "Ptm"),
        ("U1_apex", "L1_apex"),
        ("U6_cusp", "U4_cusp"),
        ("Ls", "Li"),
    ),
    "frontal": (("Co_R", "Co_L"), ("Ag_R", "Ag_L"), ("J_R", "J_L"), ("U6_R", "U6_L")),
}
#: Distance (mm) of a gross failure from the true position.
GROSS_MM = (5.0, 30.0)


@dataclass(frozen=True)
class ErrorModel:
    """Declared rates of one error mode (see the module docstring and ``docs/sandbox.md``).

    Attributes
    ----------
    name : str
    radial_scale : float
        Factor on each landmark's relative difficulty (mm): the SD per coordinate of its
        placement error.
    gross_rate : float
        Probability that a named landmark is placed on another structure 5–30 mm away.
    trade_rate : float
        Probability that a landmark answer trades one confusable pair.
    fdi_swap_rate, missed_rate, phantom_rate : float
        Teeth: expected fraction of present teeth mislabelled by neighbour swaps; probability
        that a present tooth is reported missing; expected phantom teeth per tooth of an
        answer.
    order_rate : float
        Probability that an arch-points answer gives two consecutive points in each other's
        place.
    box_drop_rate, box_add_rate : float
        Probability that a detection box is dropped; expected boxes added per image.
    source : str
        Where the rates come from.
    """

    name: str
    radial_scale: float
    gross_rate: float
    trade_rate: float
    fdi_swap_rate: float
    missed_rate: float
    phantom_rate: float
    order_rate: float
    box_drop_rate: float
    box_add_rate: float
    source: str

    def describe(self) -> dict[str, Any]:
        """The model as JSON-serialisable data (what the truth reports)."""
        return {**asdict(self), "gross_mm": list(GROSS_MM)}


#: The declared error modes. ``realistic``: the landmark rates solve MRE = 1.518 mm and
#: SDR@2 mm = 75.719 % (MICCAI 2023 CL-Detection best method) exactly for the 44 named
#: lateral landmarks (``docs/sandbox.md`` shows the equations); the teeth rates are the
#: tooth-numbering sensitivity (0.98) and detection sensitivity/precision (0.9941 / 0.9945)
#: of Tuzoff et al. 2019. ``gross``: 15 % of landmarks beyond 4 mm (the middle of the
#: ISBI 2014/2015 methods' 10–20 %) with 2 % gross failures, and ten times the other rates.
MODELS: Mapping[str, ErrorModel] = {
    "realistic": ErrorModel(
        name="realistic",
        radial_scale=1.556757,
        gross_rate=0.0023056,
        trade_rate=0.01,
        fdi_swap_rate=0.02,
        missed_rate=0.0059,
        phantom_rate=0.0055,
        order_rate=0.02,
        box_drop_rate=0.05,
        box_add_rate=0.05,
        source="landmarks: Zhang et al. 2024 (CL-Detection 2023, arXiv 2409.15834); teeth: "
        "Tuzoff et al., Dentomaxillofac Radiol 2019;48:20180051; traded landmarks, arch points "
        "and boxes: dentalkit's assumptions (no published rate)",
    ),
    "gross": ErrorModel(
        name="gross",
        radial_scale=2.393271,
        gross_rate=0.02,
        trade_rate=0.1,
        fdi_swap_rate=0.2,
        missed_rate=0.059,
        phantom_rate=0.055,
        order_rate=0.2,
        box_drop_rate=0.5,
        box_add_rate=0.5,
        source="landmarks: 15 % beyond 4 mm (ISBI 2014/2015 challenge methods: 10-20 %; "
        "Wang et al., Med Image Anal 2016;31:63-76) with 2 % gross failures; other rates "
        "ten times the realistic ones: a mode for testing quality control",
    ),
}


def check_mode(mode: str | None) -> str:
    """Validate an error mode name (``None`` means ``"off"``)."""
    mode = "off" if mode is None else str(mode)
    if mode not in MODES:
        raise ValueError(f"unknown ai_errors mode {mode!r}; modes: {', '.join(MODES)}")
    return mode


Record = dict[str, Any]


def inject(
    endpoint: Endpoint,
    body: dict[str, Any],
    request: tuple[str, str, str],
    where: Where,
    *,
    mode: str,
    seed: int = 0,
) -> tuple[dict[str, Any], list[Record]]:
    """The answer ``body`` with the errors of ``mode`` injected, and a record of each.

    Parameters
    ----------
    endpoint : Endpoint
    body : dict
        The simulator's answer (``simulate.respond``), not modified.
    request : (str, str, str)
        PatientID, TimeStamp and ImageName of the request.
    where : (str, str)
        The image's placement key (``_placement._where``).
    mode : {"off", "realistic", "gross"}
    seed : int
        Seed of the error draws (with the request and the endpoint).

    Returns
    -------
    body, records
        A new body (the input when nothing applies) and one JSON-serialisable record per
        injected error (landmarks: one per named landmark, with its displacement).
    """
    mode = check_mode(mode)
    if mode == "off" or endpoint.kind not in _INJECTORS:
        return body, []
    pid, ts, url = request
    rng = generator("ai-errors", mode, seed, pid, ts, image_identity(url), endpoint.name)
    return _INJECTORS[endpoint.kind](endpoint, body, (pid, ts, url), where, MODELS[mode], rng)


# ---- landmarks ----------------------------------------------------------------------


def _landmark_errors(
    ep: Endpoint, body: dict, req: tuple[str, str, str], where: Where, m: ErrorModel, rng
) -> tuple[dict, list[Record]]:
    pid, ts, _ = req
    view = ep.view
    keys, exact = _landmark_px(ep, pid, ts, where, None)
    tr = (_lateral_at if view == "lateral" else _frontal_at)(pid, ts, where)[1]
    s = tr.mm_per_px
    names = ceph.LATERAL_NAMES if view == "lateral" else ceph.FRONTAL_NAMES
    table = ceph.LATERAL_NOISE_SD_MM if view == "lateral" else ceph.FRONTAL_NOISE_SD_MM
    named = np.array([i for i, n in enumerate(names) if n in table])
    sd_px = np.array([table[names[i]] for i in named]) * m.radial_scale / s
    new = exact[named] + rng.standard_normal((len(named), 2)) * sd_px[:, None]
    component = np.array(["radial"] * len(named), dtype=object)
    onto: list[str | None] = [None] * len(named)
    gross = rng.random(len(named)) < m.gross_rate
    for j in np.flatnonzero(gross):
        d_mm = np.hypot(*(exact - exact[named[j]]).T) * s
        cand = np.flatnonzero((d_mm >= GROSS_MM[0]) & (d_mm <= GROSS_MM[1]))
        if len(cand):
            target = int(rng.choice(cand))
            new[j] = exact[target] + rng.standard_normal(2) * sd_px[j]
            onto[j] = names[target]
        else:  # nothing in reach: a random direction and distance
            r, a = rng.uniform(*GROSS_MM) / s, rng.uniform(0, 2 * math.pi)
            new[j] = exact[named[j]] + r * np.array([math.cos(a), math.sin(a)])
        component[j] = "gross"
    partner: list[str | None] = [None] * len(named)
    if rng.random() < m.trade_rate:
        a, b = TRADE_PAIRS[view][int(rng.integers(len(TRADE_PAIRS[view])))]
        pos = {names[i]: j for j, i in enumerate(named)}
        ia, ib = pos[a], pos[b]
        new[[ia, ib]] = new[[ib, ia]]
        component[[ia, ib]] = "traded"
        partner[ia], partner[ib] = b, a
    new[:, 0] = np.clip(new[:, 0], 0.0, tr.width - 1.0)
    new[:, 1] = np.clip(new[:, 1], 0.0, tr.height - 1.0)
    new = new.round(2)
    results = dict(body["Results"])
    records = []
    for j, i in enumerate(named):
        x, y = float(new[j, 0]), float(new[j, 1])
        results[keys[i]] = {"x_coordinate": x, "y_coordinate": y}
        dx, dy = x - float(exact[i, 0]), y - float(exact[i, 1])
        records.append({
            "kind": "landmark", "landmark": names[i], "key": keys[i],
            "component": str(component[j]), "dx_px": dx, "dy_px": dy,
            "error_mm": math.hypot(dx, dy) * s, "onto": onto[j], "traded_with": partner[j],
        })  # fmt: skip
    return {**body, "Results": results}, records


# ---- teeth ----------------------------------------------------------------------------

_TYPES = ("i1", "i2", "c", "p1", "p2", "m1", "m2", "m3")


def _neighbours(key: str) -> list[str]:
    """Keys next to a tooth along the arch: the adjacent types, and across the midline."""
    t, side, arch = key.split("_")
    i = _TYPES.index(t)
    out = [f"{_TYPES[j]}_{side}_{arch}" for j in (i - 1, i + 1) if 0 <= j < len(_TYPES)]
    if t == "i1":
        out.append(f"i1_{'lft' if side == 'rgt' else 'rgt'}_{arch}")
    return out


def _fdi(key: str) -> int:
    t, side, arch = key.split("_")
    quadrant = {("rgt", "up"): 1, ("lft", "up"): 2, ("lft", "lo"): 3, ("rgt", "lo"): 4}
    return 10 * quadrant[(side, arch)] + _TYPES.index(t) + 1


def _swap_labels(teeth: dict, present: list[str], m: ErrorModel, rng) -> list[Record]:
    """Swap the entries of neighbouring present teeth (in place); one record per swap."""
    n = int(rng.poisson(m.fdi_swap_rate * len(present) / 2.0))
    pairs = sorted({tuple(sorted((k, o))) for k in present for o in _neighbours(k) if o in present})
    records, used = [], set()
    for i in rng.permutation(len(pairs))[: 4 * n]:
        if len(records) == n:
            break
        a, b = pairs[int(i)]
        if a in used or b in used:
            continue
        used |= {a, b}
        teeth[a], teeth[b] = teeth[b], teeth[a]
        records.append({"kind": "fdi_swap", "teeth": [a, b], "fdi": [_fdi(a), _fdi(b)]})
    return records


def _teeth_errors(
    ep: Endpoint, body: dict, req: tuple[str, str, str], where: Where, m: ErrorModel, rng
) -> tuple[dict, list[Record]]:
    keypoints = ep.kind is Kind.KEYPOINTS
    teeth = dict(body["Teeth"] if keypoints else body["Results"])
    present = [k for k, v in teeth.items() if not v["missing"]]
    absent = {k for k, v in teeth.items() if v["missing"]}  # where a phantom can appear
    records = _swap_labels(teeth, present, m, rng)
    swapped = {k for r in records for k in r["teeth"]}  # one error per tooth: no overlaps
    for k in present:
        if rng.random() < m.missed_rate and k not in swapped:
            rec = teeth[k]
            teeth[k] = (
                {"missing": True, "centroid": rec["centroid"]}
                if keypoints
                else {"missing": True, "points": [[0, 0]]}
            )
            records.append({"kind": "missed_tooth", "tooth": k, "fdi": _fdi(k)})
    shift_px = 1.0 / _mm_per_px(ep, req, where)  # a second outline up to 1 mm away
    for _ in range(int(rng.poisson(m.phantom_rate * len(teeth)))):
        slots = [
            (k, o)
            for k in sorted(absent)
            if teeth[k]["missing"]
            for o in _neighbours(k)
            if o in teeth and not teeth[o]["missing"] and o not in swapped
        ]
        if not slots:
            break
        k, copy = slots[int(rng.integers(len(slots)))]
        d = rng.uniform(-shift_px, shift_px, 2).tolist()
        src = teeth[copy]
        if keypoints:
            moved = {p: [src[p][0] + d[0], src[p][1] + d[1]] for p in src if p != "missing"}
            teeth[k] = {
                "missing": False,
                **{p: [round(v, 2) for v in xy] for p, xy in moved.items()},
            }
        else:
            teeth[k] = {
                "missing": False,
                "points": [[round(x + d[0]), round(y + d[1])] for x, y in src["points"]],
            }
        records.append({"kind": "phantom_tooth", "tooth": k, "fdi": _fdi(k), "copy_of": copy})
    out = {**body, ("Teeth" if keypoints else "Results"): teeth}
    if keypoints and rng.random() < m.order_rate:
        cat = dict(out["CatenaryPoints"])
        names = list(cat)
        i = int(rng.integers(len(names) - 1))
        a, b = names[i], names[i + 1]
        cat[a], cat[b] = cat[b], cat[a]
        out["CatenaryPoints"] = cat
        records.append({"kind": "arch_points_out_of_order", "points": [a, b]})
    return out, records


def _mm_per_px(ep: Endpoint, req: tuple[str, str, str], where: Where) -> float:
    pid, ts, _ = req
    if ep.source == "pano":
        return _pano_at(pid, ts, where)[1].mm_per_px
    if ep.source == "frontal":
        return _frontal_photo_at(pid, ts, where, "intraoral_frontal")[1].mm_per_px
    return _arch_at(pid, ts, ep.arch, where)[1].mm_per_px


# ---- findings -------------------------------------------------------------------------


def _findings_errors(
    ep: Endpoint, body: dict, req: tuple[str, str, str], where: Where, m: ErrorModel, rng
) -> tuple[dict, list[Record]]:
    pid, ts, url = req
    if ep.source == "clinical":
        spec = IMAGE_SPECS[_clinical_kind(ep, url, pid)]
        width, height = spec.width, spec.height
    else:
        tr = _pano_at(pid, ts, where)[1]
        width, height = tr.width, tr.height
    results: dict[str, list] = {}
    records: list[Record] = []
    kept: list[tuple[str, list[int]]] = []
    for name, boxes in body["Results"].items():
        results[name] = []
        for det in boxes:
            box = [*det["TopLeft"], *det["BottomRight"]]
            if rng.random() < m.box_drop_rate:
                records.append({"kind": "box_dropped", "class_name": name, "box": box})
            else:
                results[name].append(det)
                kept.append((name, box))
    for _ in range(int(rng.poisson(m.box_add_rate))):
        how = ("duplicate", "outside", "random")[int(rng.integers(3))]
        if kept:
            name, ref = kept[int(rng.integers(len(kept)))]
        else:
            name, ref = _any_class(ep, body), [0, 0, 80, 60]
        if how == "duplicate" and kept:
            box = [int(v + rng.integers(-2, 3)) for v in ref]
        else:
            w, h = max(ref[2] - ref[0], 10), max(ref[3] - ref[1], 10)
            x0 = int(rng.integers(0, max(width - w, 1)))
            y0 = int(rng.integers(0, max(height - h, 1)))
            if how == "outside":  # over the right or bottom border
                if rng.random() < 0.5:
                    x0 = width - w // 2
                else:
                    y0 = height - h // 2
            else:
                how = "random"  # also a "duplicate" drawn when there was no box to copy
            box = [x0, y0, x0 + w, y0 + h]
        det = {"ClassName": name, "TopLeft": box[:2], "BottomRight": box[2:]}
        results.setdefault(name, []).append(det)
        records.append({"kind": "box_added", "how": how, "class_name": name, "box": box})
    out = {**body, "Results": {k: v for k, v in results.items() if v}}
    if "ImageContents" in body:
        counts = dict(body["ImageContents"])
        for name in set(counts) | set(results):
            counts[name] = len(results.get(name, ()))
        out["ImageContents"] = counts
    return out, records


def _any_class(ep: Endpoint, body: dict) -> str:
    from dentalkit.sandbox._patient import CLINICAL_CLASSES, PANO_CLASSES

    return next(iter(CLINICAL_CLASSES if ep.source == "clinical" else PANO_CLASSES))


_INJECTORS = {
    Kind.LANDMARKS: _landmark_errors,
    Kind.SEGMENTATION: _teeth_errors,
    Kind.KEYPOINTS: _teeth_errors,
    Kind.FINDINGS: _findings_errors,
}
