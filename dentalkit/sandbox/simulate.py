"""The sandbox's deterministic synthetic-anatomy simulator.

:func:`respond` answers the 12 image endpoints of interface v2 from synthetic
patients whose anatomy is built *forward* from drawn parameters;
:func:`estimate_tle` answers ``GET /tle`` by a documented rule; :func:`truth`
returns the drawn parameters (the ground truth) of a session, so analyses can
be checked for recovery. The simulator never imports an analysis or converter
module: a recovery test compares two independent implementations.

It runs no AI model. The whole model (seeds, growth, anatomy, noise, image
placement, findings, the TLE rule) is described in ``docs/sandbox.md``.

Examples
--------
>>> from dentalkit.endpoints import get_endpoint
>>> body = respond(
...     get_endpoint("ceph-lateral-points"),
...     {"PatientID": "P001", "TimeStamp": "2024-03-01", "ImageName": "https://x/a.png"},
... )
>>> body["NumberOfPredictedPoints"], len(body["Results"])
(169, 169)
>>> truth("P001", "2024-03-01")["ceph_lateral"]["SNA"] > 60
True
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np
import orjson

from dentalkit.endpoints import ENDPOINTS, Endpoint, Kind, VersionFamily, get_endpoint
from dentalkit.errors import InputError
from dentalkit.sandbox import _anatomy_ceph as ceph
from dentalkit.sandbox import _anatomy_dental as dental
from dentalkit.sandbox._findings import (
    CATEGORIES,
    TLE_RULE,
    clinical_detections,
    estimate_months,
    tmj_sentence,
)
from dentalkit.sandbox._geometry import ImageTransform, place_points, shoelace_area
from dentalkit.sandbox._images import (
    IMAGE_SPECS,
    default_image_kind,
    image_identity,
    parse_sandbox_url,
)
from dentalkit.sandbox._images import stored_image_name as _stored_image_name
from dentalkit.sandbox._patient import (
    CLINICAL_CLASSES,
    PANO_CLASSES,
    SIDES,
    TOOTH_TYPES,
    patient,
    session,
)
from dentalkit.sandbox._rng import generator

__all__ = [
    "ANALYSIS_VERSION",
    "KEYPOINTS_VERSION",
    "NOISE_MODEL",
    "TLE_APP",
    "estimate_tle",
    "respond",
    "respond_json",
    "stored_image_name",
    "truth",
]

#: ``Version`` of every image endpoint except the occlusogram keypoints.
ANALYSIS_VERSION = "2.1.0-sandbox"
#: ``Version`` of the occlusogram keypoint endpoints: newer (second part higher).
KEYPOINTS_VERSION = "2.3.0-sandbox"
#: The ``app`` value of ``/tle`` answers.
TLE_APP = "dentalkit-sandbox-tle"

#: Noise SDs (mm) of points that are not cephalometric landmarks.
POINT_NOISE_SD_MM = {"centroid": 0.15, "keypoint": 0.2, "catenary": 0.12, "outline": 0.06}
#: Correlation length (vertices) of the outline noise: the noise of a tooth outline is white
#: noise smoothed along the (closed) outline by a Gaussian kernel of this SD, rescaled to the
#: SD of ``POINT_NOISE_SD_MM["outline"]`` per coordinate, so neighbouring vertices move
#: together and rounding to whole pixels leaves the outline simple (see docs/sandbox.md).
OUTLINE_NOISE_CORRELATION_VERTICES = 1.5
#: Box jitter SD (px) of detections.
BOX_NOISE_SD_PX = 1.5

NOISE_MODEL = {
    "kind": "isotropic Gaussian noise per point, in mm, converted to pixels with the image's "
    "mm_per_px, independent between points except along a tooth outline or a ceph contour; "
    "seeded by (PatientID, TimeStamp, ImageName, endpoint), a sandbox image URL counting by "
    "its path only (host and port do not matter)",
    "outline_noise": "tooth outlines: Gaussian noise of SD points_sd_mm['outline'] per "
    "coordinate, correlated along the outline (white noise smoothed by a circular Gaussian "
    "kernel of outline_correlation_vertices), so outlines stay simple after rounding",
    "outline_correlation_vertices": OUTLINE_NOISE_CORRELATION_VERTICES,
    "ceph_lateral_sd_mm": ceph.LATERAL_NOISE_SD_MM,
    "ceph_frontal_sd_mm": ceph.FRONTAL_NOISE_SD_MM,
    "ceph_contour_sd_mm": ceph.CONTOUR_NOISE_SD_MM,
    "ceph_contour_noise": "ceph contour points (names {group}_{NN}): Gaussian noise of SD "
    "ceph_contour_sd_mm per coordinate, correlated along each contour (white noise smoothed "
    "by a Gaussian kernel of ceph_contour_correlation_points over the point index)",
    "ceph_contour_correlation_points": ceph.CONTOUR_NOISE_CORRELATION_POINTS,
    "points_sd_mm": POINT_NOISE_SD_MM,
    "box_sd_px": BOX_NOISE_SD_PX,
    "rounding": "with noise: landmarks, centroids, keypoints and catenary points rounded to "
    "0.01 px, outline vertices and boxes to whole pixels; without noise: full float precision",
    "clipping": "noisy points are clipped to the image",
}

_FLOAT_DECIMALS = 2


def stored_image_name(image_url: str) -> str:
    """The ``ImageName`` a response carries: a stored file name, not the URL (spec quirk).

    ``{first 12 hex digits of SHA-256(url)}_{name}``; ``name`` is ``{kind}.png``
    for a sandbox image URL, else the URL's last path segment, sanitised.
    """
    return _stored_image_name(image_url)


# --- session geometry in pixels (cached) ------------------------------------------


Where = tuple[str, str]
"""Placement key of an image: ``(patient id, session)`` seeding its transform (see ``_where``)."""


@lru_cache(maxsize=4096)
def _image_where(url: str) -> Where | None:
    """``(patient_id, session)`` of a sandbox image URL, else ``None`` (cached)."""
    parsed = parse_sandbox_url(url)
    return None if parsed is None else (parsed[1], parsed[2])


def _where(pid: str, ts: str, url: str | None) -> Where:
    """The placement key of a request: the image's own ``(patient, session)``.

    A sandbox image URL ``…/_sandbox/images/{kind}/{patient}/{session}.png`` names the
    image, and the image is drawn (``render.input_image``) with the placement of that
    ``(patient, session)``; the answer places its geometry the same way, so a response
    lands on the pixels of the image it describes even when the request's ``TimeStamp``
    is a full date-time and the URL carries only the date. Any other URL: the request's
    ``(PatientID, TimeStamp)``.
    """
    return (_image_where(url) if url is not None else None) or (pid, ts)


def _kind_transform_points(
    where: Where, kind: str, points_mm: np.ndarray, *, flip_x: int, flip_y: int,
    rotation_sd: float, margin_px: float,
) -> tuple[ImageTransform, np.ndarray]:  # fmt: skip
    """The placement of ``points_mm`` on an image of ``kind`` and the points in px.

    Seeded by the image's placement key ``where`` (see :func:`_where`). Rotation ~
    N(0, rotation_sd) clipped to ±2.5 SD, rounded to 1e-4 degrees; then a uniform
    translation keeping every point ``margin_px`` inside (see ``place``).
    """
    spec = IMAGE_SPECS[kind]
    rng = generator("transform", *where, kind)
    lim = 2.5 * rotation_sd
    rot = min(max(float(rng.normal(0.0, rotation_sd)), -lim), lim)
    return place_points(
        rng, points_mm, mm_per_px=spec.mm_per_px, rotation_deg=round(rot, 4), flip_x=flip_x,
        flip_y=flip_y, width=spec.width, height=spec.height, margin_px=margin_px,
    )  # fmt: skip


def _kind_transform(
    where: Where, kind: str, points_mm: np.ndarray, *, flip_x: int, flip_y: int,
    rotation_sd: float, margin_px: float,
) -> ImageTransform:  # fmt: skip
    return _kind_transform_points(
        where, kind, points_mm, flip_x=flip_x, flip_y=flip_y, rotation_sd=rotation_sd,
        margin_px=margin_px,
    )[0]  # fmt: skip


@lru_cache(maxsize=8)
def _noise_sd_px(view: str, mm_per_px: float) -> np.ndarray:
    """Per-landmark noise SD of ``view`` in pixels, shape (n, 1) (read-only)."""
    sd = (ceph.noise_sd(view) / mm_per_px)[:, None]
    sd.flags.writeable = False
    return sd


def _lateral(
    pid: str, ts: str, where: Where | None = None
) -> tuple[np.ndarray, ImageTransform, dict, np.ndarray]:
    """Lateral landmarks (px), transform, measures and noise SDs (px) of a session."""
    return _lateral_at(pid, ts, where or (pid, ts))


@lru_cache(maxsize=4096)
def _lateral_at(
    pid: str, ts: str, where: Where
) -> tuple[np.ndarray, ImageTransform, dict, np.ndarray]:
    s = session(pid, ts)
    pts, measures = ceph.lateral_mm(s.ceph, s.chain)
    facing_left = generator("facing", *where).random() < 0.2
    tr, px = _kind_transform_points(
        where, "lateral_ceph", pts, flip_x=-1 if facing_left else 1, flip_y=-1,
        rotation_sd=2.0, margin_px=80.0,
    )  # fmt: skip
    px.flags.writeable = False
    return px, tr, measures, _noise_sd_px("lateral", tr.mm_per_px)


def _frontal(
    pid: str, ts: str, where: Where | None = None
) -> tuple[np.ndarray, ImageTransform, dict, np.ndarray]:
    """Frontal landmarks (px), transform, measures and noise SDs (px) of a session."""
    return _frontal_at(pid, ts, where or (pid, ts))


@lru_cache(maxsize=4096)
def _frontal_at(
    pid: str, ts: str, where: Where
) -> tuple[np.ndarray, ImageTransform, dict, np.ndarray]:
    pts, measures = _frontal_mm(pid, ts)
    tr, px = _kind_transform_points(
        where, "frontal_ceph", pts, flip_x=1, flip_y=-1, rotation_sd=1.2, margin_px=80.0
    )
    px.flags.writeable = False
    return px, tr, measures, _noise_sd_px("frontal", tr.mm_per_px)


@lru_cache(maxsize=4096)
def _frontal_mm(pid: str, ts: str) -> tuple[np.ndarray, dict]:
    """Frontal landmarks (mm) and measures of a session (cached: the photo needs them too)."""
    s = session(pid, ts)
    pts, measures = ceph.frontal_mm(s.frontal, s.ceph)
    pts.flags.writeable = False
    return pts, measures


def _arch(pid: str, ts: str, arch: str, where: Where | None = None) -> tuple[dict, ImageTransform]:
    """Arch layout and the model-photo transform; upper: incisors at the top, lower: bottom."""
    return _arch_at(pid, ts, arch, where or (pid, ts))


@lru_cache(maxsize=4096)
def _arch_at(pid: str, ts: str, arch: str, where: Where) -> tuple[dict, ImageTransform]:
    layout = dental.arch_layout(patient(pid), arch)
    outlines = np.vstack([t["outline"] for t in layout["teeth"].values()])
    kind = "model_upper" if arch == "up" else "model_lower"
    tr = _kind_transform(
        where, kind, outlines, flip_x=1, flip_y=1 if arch == "up" else -1,
        rotation_sd=4.0, margin_px=40.0,
    )  # fmt: skip
    return layout, tr


def _pano(pid: str, ts: str, where: Where | None = None) -> tuple[dict, ImageTransform]:
    """Pano layout (mm) and its transform."""
    return _pano_at(pid, ts, where or (pid, ts))


@lru_cache(maxsize=4096)
def _pano_at(pid: str, ts: str, where: Where) -> tuple[dict, ImageTransform]:
    layout = dental.pano_layout(patient(pid))
    outlines = np.vstack([t["outline"] for t in layout.values()])
    tr = _kind_transform(
        where, "pano", outlines, flip_x=1, flip_y=-1, rotation_sd=0.5, margin_px=60.0
    )
    return layout, tr


def _lower_shift_and_overbite(pid: str, ts: str) -> tuple[float, float]:
    fm = _frontal_mm(pid, ts)[1]
    return fm["midline_deviation_LDM"] - fm["midline_deviation_UDM"], session(pid, ts).ceph[
        "overbite"
    ]


def _frontal_photo(
    pid: str, ts: str, where: Where | None = None, kind: str = "intraoral_frontal"
) -> tuple[dict, ImageTransform]:
    """Frontal-view tooth layout (mm) and its transform on a photo of ``kind``."""
    return _frontal_photo_at(pid, ts, where or (pid, ts), kind)


@lru_cache(maxsize=4096)
def _frontal_photo_at(pid: str, ts: str, where: Where, kind: str) -> tuple[dict, ImageTransform]:
    shift, overbite = _lower_shift_and_overbite(pid, ts)
    layout = dental.frontal_layout(patient(pid), shift, overbite)
    outlines = np.vstack([t["outline"] for t in layout.values()])
    tr = _kind_transform(
        where, kind, outlines, flip_x=1, flip_y=-1, rotation_sd=1.5, margin_px=60.0
    )
    return layout, tr


#: Intra-oral photo kinds that show the frontal tooth layout (the buccal views reuse it).
_FRONTAL_PHOTO_KINDS = ("intraoral_frontal", "intraoral_right", "intraoral_left")


def _photo_teeth(
    pid: str, ts: str, kind: str, where: Where | None = None
) -> tuple[dict[str, dict], ImageTransform, np.ndarray]:
    """Teeth shown on an intra-oral photo of ``kind``: layout (mm), transform, gingival points.

        The renderer draws these teeth and ``/clinical-images`` puts its boxes on them.
        Frontal and buccal views show the frontal layout (``/frontal-segmentation``'s teeth on
        ``intraoral_frontal``); occlusal views the arch layout at their image spec's spacing
    (0.08 mm/px, so the arch fills the photo). The gingival
        point of a tooth (mm, shape (n, 2), in layout order) is the middle of its cervical
        edge (frontal views) or halfway from its centre to its buccal edge (occlusal views).
    """
    return _photo_teeth_at(pid, ts, kind, where or (pid, ts))


@lru_cache(maxsize=4096)
def _photo_teeth_at(
    pid: str, ts: str, kind: str, where: Where
) -> tuple[dict[str, dict], ImageTransform, np.ndarray]:
    if kind in _FRONTAL_PHOTO_KINDS:
        layout, tr = _frontal_photo_at(pid, ts, where, kind)
        outlines = np.stack([r["outline"] for r in layout.values()])
        upper = np.array([k.endswith("_up") for k in layout])
        top, bottom = outlines[:, 7:9].mean(axis=1), outlines[:, 23:25].mean(axis=1)
        gingival = np.where(upper[:, None], top, bottom)
        return layout, tr, gingival
    arch = "up" if kind == "intraoral_upper" else "lo"
    full = dental.arch_layout(patient(pid), arch)
    layout = full["teeth"]
    outlines = np.stack([r["outline"] for r in layout.values()])
    spec = IMAGE_SPECS[kind]
    rng = generator("transform", *where, kind)
    rot = min(max(float(rng.normal(0.0, 3.0)), -7.5), 7.5)
    tr, _ = place_points(
        rng, outlines.reshape(-1, 2), mm_per_px=spec.mm_per_px,
        rotation_deg=round(rot, 4), flip_x=1, flip_y=1 if arch == "up" else -1,
        width=spec.width, height=spec.height, margin_px=60.0,
    )  # fmt: skip
    centres = np.stack([r["centre"] for r in layout.values()])
    return layout, tr, 0.5 * (centres + outlines[:, 7:9].mean(axis=1))


# --- respond -------------------------------------------------------------------------


def _request_fields(endpoint: Endpoint, request: Mapping[str, Any]) -> tuple[str, str, str]:
    try:
        pid, ts, url = request["PatientID"], request["TimeStamp"], request["ImageName"]
    except KeyError as exc:
        raise InputError(
            f"{endpoint.path} request lacks the required field {exc.args[0]!r}; "
            "PatientID, TimeStamp and ImageName are required strings"
        ) from None
    for name, value in (("PatientID", pid), ("TimeStamp", ts), ("ImageName", url)):
        if not isinstance(value, str):
            raise InputError(
                f"{endpoint.path} request field {name} must be a string, got {type(value).__name__}"
            )
    return pid, ts, url


def _image_kind(endpoint: Endpoint, url: str, pid: str) -> tuple[str, bool]:
    """Kind of the submitted image (from a sandbox URL) and whether it was recognised."""
    parsed = parse_sandbox_url(url)
    if parsed is not None:
        return parsed[0], True
    return default_image_kind(endpoint), False


def _noisy(
    px: np.ndarray,
    sd_px: np.ndarray | float,
    rng: np.random.Generator | None,
    size: tuple[int, int],
    mixer: np.ndarray | None = None,
) -> np.ndarray:
    """``px`` plus Gaussian noise (SD ``sd_px`` per point: a scalar or an (n,) or (n, 1)
    array), clipped to the image and rounded to 0.01 px; ``px`` itself without ``rng``.
    ``mixer`` (n, n) correlates the points' standard normals (see ``ceph.noise_mixer``)."""
    if rng is None:
        return px
    if isinstance(sd_px, np.ndarray) and sd_px.ndim == 1:
        sd_px = sd_px[:, None]
    out = rng.standard_normal(px.shape)
    if mixer is not None:
        out = mixer @ out
    out *= sd_px
    out += px
    np.maximum(out, 0.0, out=out)
    np.minimum(out, _upper_px(*size), out=out)
    return out.round(_FLOAT_DECIMALS, out=out)


@lru_cache(maxsize=16)
def _upper_px(width: int, height: int) -> np.ndarray:
    """Largest pixel coordinates (x, y) of an image, for clipping."""
    hi = np.array([width - 1.0, height - 1.0])
    hi.flags.writeable = False
    return hi


def _landmark_px(
    endpoint: Endpoint, pid: str, ts: str, where: Where, rng: np.random.Generator | None
) -> tuple[tuple[str, ...], np.ndarray]:
    """Keys and (noisy) pixel coordinates, shape (n, 2), of a landmark endpoint's answer."""
    lateral = endpoint.view == "lateral"
    px, tr, _, sd = (_lateral_at if lateral else _frontal_at)(pid, ts, where)
    keys = ceph.LATERAL_KEYS if lateral else ceph.FRONTAL_KEYS
    mixer = ceph.noise_mixer(endpoint.view)
    return keys, _noisy(px, sd, rng, (tr.width, tr.height), mixer)


def _landmarks(
    endpoint: Endpoint, pid: str, ts: str, where: Where, rng: np.random.Generator | None
) -> dict:
    keys, xy = _landmark_px(endpoint, pid, ts, where, rng)
    it = iter(xy.ravel().tolist())  # x0, y0, x1, …
    return {
        "NumberOfPredictedPoints": len(keys),
        "Results": {
            k: {"x_coordinate": x, "y_coordinate": y} for k, x, y in zip(keys, it, it, strict=True)
        },
    }


@lru_cache(maxsize=2)
def _results_template(keys: tuple[str, ...]) -> bytes:
    """The JSON of a landmark ``Results`` object with ``%s`` where its 2·n numbers go.

    ``template % (x0, y0, x1, …)`` (numbers as JSON bytes) is ``orjson.dumps`` of
    ``{k: {"x_coordinate": x, "y_coordinate": y}, …}``.
    """
    names = [
        orjson.dumps(k).replace(b"%", b"%%") for k in keys
    ]  # JSON strings as orjson writes them
    objects = [name + b':{"x_coordinate":%s,"y_coordinate":%s}' for name in names]
    return b"{" + b",".join(objects) + b"}"


def _landmarks_json(
    endpoint: Endpoint, pid: str, ts: str, where: Where, rng: np.random.Generator | None
) -> dict:
    """:func:`_landmarks` with ``Results`` as ready JSON (an ``orjson.Fragment``).

    The same bytes as ``orjson.dumps`` of :func:`_landmarks`'s ``Results``, without
    building 2·n Python floats and n small dicts: orjson writes the numbers from the
    array (the same shortest round-trip float text), and they are put into the
    precomputed text of the object around them. The HTTP app's hot path (a ceph answer
    is ~170 landmark objects).
    """
    keys, xy = _landmark_px(endpoint, pid, ts, where, rng)
    numbers = orjson.dumps(xy.ravel(), option=orjson.OPT_SERIALIZE_NUMPY)[1:-1].split(b",")
    results = _results_template(keys) % tuple(numbers)
    return {"NumberOfPredictedPoints": len(keys), "Results": orjson.Fragment(results)}


def _arch_keys(arch: str) -> list[str]:
    return [f"{t}_{side}_{arch}" for side in SIDES for t in TOOTH_TYPES]


def _keypoints(
    endpoint: Endpoint, pid: str, ts: str, where: Where, rng: np.random.Generator | None
) -> dict:
    layout, tr = _arch_at(pid, ts, endpoint.arch, where)
    keys = _arch_keys(endpoint.arch)
    recs = [layout["teeth"][k] for k in keys]
    size = (tr.width, tr.height)
    s = tr.mm_per_px
    # all points of the arch in one transform: centre, mesial, distal, cusp per tooth (the
    # layout's arrays have one row per tooth in the order of its teeth, which is ``keys``)
    arr = layout["arrays"]
    pts = tr.apply(
        np.stack([arr["centre"], arr["mesial"], arr["distal"], arr["cusp"]], axis=1).reshape(-1, 2)
    )
    sd = np.tile(
        [POINT_NOISE_SD_MM["centroid"] / s] + [POINT_NOISE_SD_MM["keypoint"] / s] * 3, len(recs)
    )
    pts = _noisy(pts, sd, rng, size).reshape(len(recs), 4, 2).tolist()
    teeth: dict[str, dict] = {}
    for key, rec, (c, m, d, cusp) in zip(keys, recs, pts, strict=True):
        if rec["missing"]:
            teeth[key] = {"missing": True, "centroid": c}
        else:
            teeth[key] = {"missing": False, "centroid": c, "t01": m, "t02": d, "t03": cusp}
    names = list(layout["catenary"])
    cat = tr.apply(np.array([layout["catenary"][n] for n in names]))
    cat = _noisy(cat, POINT_NOISE_SD_MM["catenary"] / s, rng, size).tolist()
    return {"Teeth": teeth, "CatenaryPoints": dict(zip(names, cat, strict=True))}


@lru_cache(maxsize=8)
def _outline_smoother(n: int) -> np.ndarray:
    """Circulant (n, n) matrix smoothing white noise along a closed outline of n vertices.

    Row i is a Gaussian kernel of SD :data:`OUTLINE_NOISE_CORRELATION_VERTICES` over the
    circular vertex distance to i, scaled to unit Euclidean norm, so that ``K @ z`` of
    standard normal ``z`` is again standard normal per vertex (correlation between
    vertices d apart: ``exp(-d² / (4 SD²))`` for an outline much longer than the kernel).
    """
    d = np.arange(n)
    d = np.minimum(d, n - d)  # circular distance from vertex 0
    w = np.exp(-0.5 * (d / OUTLINE_NOISE_CORRELATION_VERTICES) ** 2)
    w /= np.sqrt(np.sum(w**2))
    k = np.stack([np.roll(w, i) for i in range(n)])
    k.flags.writeable = False
    return k


def _outlines(
    items: list[tuple[str, dict]], tr: ImageTransform, rng: np.random.Generator | None
) -> dict:
    """Segmentation ``Results`` of teeth with mm outlines (missing → the [[0, 0]] quirk)."""
    present = [(k, r) for k, r in items if not r["missing"]]
    results: dict[str, dict] = {}
    if present:
        n = len(present[0][1]["outline"])
        px = tr.apply(np.vstack([r["outline"] for _, r in present]))
        if rng is not None:
            t = len(present)
            # one (n, n) @ (n, 2t) product: column 2k + c is coordinate c of tooth k
            smooth = _outline_smoother(n) @ rng.standard_normal((n, 2 * t))
            smooth = smooth.reshape(n, t, 2).transpose(1, 0, 2).reshape(-1, 2)
            px = px + smooth * (POINT_NOISE_SD_MM["outline"] / tr.mm_per_px)
            px[:, 0] = np.clip(px[:, 0], 0, tr.width - 1)
            px[:, 1] = np.clip(px[:, 1], 0, tr.height - 1)
            px = px.round().astype(int)
        polys = px.reshape(len(present), n, 2).tolist()
        by_key = dict(zip([k for k, _ in present], polys, strict=True))
    else:
        by_key = {}
    for key, rec in items:
        if rec["missing"]:
            results[key] = {"missing": True, "points": [[0, 0]]}
        else:
            results[key] = {"missing": False, "points": by_key[key]}
    return results


def _segmentation(
    endpoint: Endpoint, pid: str, ts: str, where: Where, rng: np.random.Generator | None
) -> dict:
    if endpoint.source == "pano":
        layout, tr = _pano_at(pid, ts, where)
        keys = [
            f"{t}_{side}_{arch}" for arch in ("up", "lo") for side in SIDES for t in TOOTH_TYPES
        ]
    elif endpoint.source == "frontal":
        layout, tr = _frontal_photo_at(pid, ts, where, "intraoral_frontal")
        keys = list(layout)
    else:
        arch_layout, tr = _arch_at(pid, ts, endpoint.arch, where)
        layout = arch_layout["teeth"]
        keys = _arch_keys(endpoint.arch)
    return {"Results": _outlines([(k, layout[k]) for k in keys], tr, rng)}


def _clinical(
    pid: str, ts: str, kind: str, where: Where | None, rng: np.random.Generator | None
) -> dict[str, list]:
    """Boxes of ``/clinical-images`` on a photo of ``kind``: on the teeth the photo shows."""
    spec = IMAGE_SPECS[kind]
    boxes = _clinical_exact(pid, ts, kind, where or (pid, ts))
    return _jitter(boxes, rng, spec.width, spec.height)


@lru_cache(maxsize=4096)
def _clinical_exact(
    pid: str, ts: str, kind: str, where: Where
) -> dict[str, list[tuple[int, int, int, int]]]:
    """Noise-free clinical boxes (cached; callers never modify them)."""
    spec = IMAGE_SPECS[kind]
    layout, tr, gingival = _photo_teeth_at(pid, ts, kind, where)
    present = np.array([not r["missing"] for r in layout.values()])
    outlines = np.stack([r["outline"] for r in layout.values()])[present]
    teeth_px = tr.apply(outlines.reshape(-1, 2)).reshape(outlines.shape)
    boxes = clinical_detections(
        patient(pid), generator("clinical", pid, ts, kind), teeth_px,
        tr.apply(gingival[present]), spec.width, spec.height,
    )  # fmt: skip
    return boxes


def _jitter(boxes: dict[str, list], rng: np.random.Generator | None, w: int, h: int) -> dict:
    if rng is None:
        return {k: [list(b) for b in v] for k, v in boxes.items()}
    out = {}
    for name, bs in boxes.items():
        arr = np.array(bs, dtype=float) + rng.normal(0.0, BOX_NOISE_SD_PX, (len(bs), 4))
        arr[:, [0, 2]] = np.clip(arr[:, [0, 2]], 0, w - 1)
        arr[:, [1, 3]] = np.clip(arr[:, [1, 3]], 0, h - 1)
        arr = arr.round().astype(int)
        arr[:, 2] = np.maximum(arr[:, 2], arr[:, 0] + 1)
        arr[:, 3] = np.maximum(arr[:, 3], arr[:, 1] + 1)
        out[name] = arr.tolist()
    return out


def _pano_boxes(
    pid: str, ts: str, where: Where | None = None
) -> dict[str, list[tuple[int, int, int, int]]]:
    """Pano detections around drawn teeth; ``{}`` for a clean image (as in the spec example)."""
    p = patient(pid)
    rng = generator("pano-findings", pid, ts)
    if rng.random() < p.pano_empty:
        return {}
    layout, tr = _pano(pid, ts, where)
    present = [k for k, r in layout.items() if not r["missing"]]
    out: dict[str, list[tuple[int, int, int, int]]] = {}
    for name in PANO_CLASSES:
        rate = p.pano_rates[name]
        count = int(rng.poisson(rate)) if rate > 0 else 0
        if count == 0:
            continue
        picks = rng.choice(len(present), size=min(count, len(present)), replace=False)
        boxes = []
        for i in sorted(picks.tolist()):
            rec = layout[present[i]]
            xc, yc = rec["centre"]
            half, length = 0.5 * rec["md"], rec["length"]
            up = 1.0 if yc > 0 else -1.0
            edge = yc - up * 0.5 * length  # incisal / occlusal end
            apex = yc + up * 0.5 * length
            if name == "periapical_lesion":
                lo_mm, hi_mm = (xc - 3.0, apex - 3.0), (xc + 3.0, apex + 3.0)
            elif name == "impacted_tooth":
                lo_mm, hi_mm = (xc - half, edge), (xc + half, apex)
            else:  # crown findings
                lo_mm, hi_mm = (xc - half, edge), (xc + half, edge + up * 0.38 * length)
            corners = np.array([[lo_mm[0], lo_mm[1]], [hi_mm[0], lo_mm[1]],
                                [lo_mm[0], hi_mm[1]], [hi_mm[0], hi_mm[1]]])  # fmt: skip
            q = tr.apply(corners)
            lo = np.clip(q.min(axis=0) - 4.0, 0, [tr.width - 2, tr.height - 2])
            hi = np.clip(q.max(axis=0) + 4.0, lo + 1, [tr.width - 1, tr.height - 1])
            box = np.rint(np.concatenate([lo, hi])).astype(int).tolist()
            boxes.append(tuple(box))
        out[name] = boxes
    return out


def _clinical_kind(endpoint: Endpoint, url: str, pid: str) -> str:
    """The intra-oral photo kind ``/clinical-images`` analyses for ``url``.

    A sandbox URL's intra-oral kind; for any other URL (or a non-intra-oral sandbox
    kind) one of the intra-oral kinds chosen by a hash of the URL.
    """
    kind, known = _image_kind(endpoint, url, pid)
    if not known or not kind.startswith("intraoral"):
        kinds = [k for k in IMAGE_SPECS if k.startswith("intraoral")]
        kind = kinds[
            int.from_bytes(generator("kind", image_identity(url)).bytes(2), "little") % len(kinds)
        ]
    return kind


def _findings(
    endpoint: Endpoint, pid: str, ts: str, url: str, where: Where, rng: np.random.Generator | None
) -> dict:
    if endpoint.source == "clinical":
        kind = _clinical_kind(endpoint, url, pid)
        boxes = _clinical(pid, ts, kind, where, rng)
        contents = {name: len(boxes.get(name, ())) for name in CLINICAL_CLASSES}
        results = {
            name: [
                {"ClassName": name, "TopLeft": [b[0], b[1]], "BottomRight": [b[2], b[3]]}
                for b in bs
            ]
            for name, bs in boxes.items()
        }
        return {"ImageContents": contents, "Results": results}
    tr = _pano_at(pid, ts, where)[1]
    boxes = _jitter(_pano_boxes(pid, ts, where), rng, tr.width, tr.height)
    return {
        "Results": {
            name: [
                {"ClassName": name, "TopLeft": [b[0], b[1]], "BottomRight": [b[2], b[3]]}
                for b in bs
            ]
            for name, bs in boxes.items()
        }
    }


def _classifier(endpoint: Endpoint, pid: str, ts: str, url: str) -> dict:
    parsed = parse_sandbox_url(url)
    rng = generator("classifier", pid, ts, image_identity(url))
    if parsed is not None:
        category = CATEGORIES[parsed[0]]
        confidence = rng.uniform(0.86, 0.995)
    else:
        cats = sorted(CATEGORIES.values())
        category = cats[
            int.from_bytes(generator("category", image_identity(url)).bytes(2), "little")
            % len(cats)
        ]
        confidence = rng.uniform(0.5, 0.9)
    return {"Classification": {"category": category, "confidence": round(float(confidence), 3)}}


def respond(
    endpoint: Endpoint | str, request: Mapping[str, Any], *, noise: bool = True
) -> dict[str, Any]:
    """Success body of one of the 12 POST image endpoints.

    Parameters
    ----------
    endpoint : Endpoint or str
        The endpoint (registry record, name, path or slug).
    request : mapping
        The already-validated JSON body: ``PatientID``, ``TimeStamp``,
        ``ImageName`` (strings) and the endpoint's optional fields (which do
        not change the analysis, only the output image).
    noise : bool, default True
        Add the documented measurement noise (see :data:`NOISE_MODEL`).
        ``False`` returns the exact geometry of :func:`truth`.

    Returns
    -------
    dict
        Every field of ``endpoint.response_fields`` in that order except
        ``OutputImageUrl`` (the app appends the signed link). Deterministic: the
        same (endpoint, PatientID, TimeStamp, ImageName, noise) gives an equal
        dict.

    Raises
    ------
    InputError
        For ``/tle`` (use :func:`estimate_tle`) or a request without the three
        required string fields.
    """
    return _respond(get_endpoint(endpoint), request, noise, json_results=False)


def respond_json(
    endpoint: Endpoint | str,
    request: Mapping[str, Any],
    *,
    noise: bool = True,
    extra: Mapping[str, Any] | None = None,
) -> bytes:
    """``orjson.dumps`` of :func:`respond`'s body with ``extra`` fields appended.

    The same bytes, built faster for the landmark endpoints (their ``Results`` are
    written straight from the coordinate array, see ``_landmarks_json``). The HTTP app
    answers with this; ``extra`` carries the ``OutputImageUrl`` it signs.
    """
    body = _respond(get_endpoint(endpoint), request, noise, json_results=True)
    if extra:
        body.update(extra)
    return orjson.dumps(body)


#: ``response_fields`` of each endpoint without ``OutputImageUrl`` (the app adds it).
_FIELDS = {
    e.name: tuple(f for f in e.response_fields if f != "OutputImageUrl") for e in ENDPOINTS.values()
}


def _respond(
    ep: Endpoint, request: Mapping[str, Any], noise: bool, *, json_results: bool
) -> dict[str, Any]:
    if not ep.is_image:
        raise InputError(f"{ep.path} is not an image endpoint; use estimate_tle() for /tle")
    pid, ts, url = _request_fields(ep, request)
    rng = generator("image", pid, ts, image_identity(url), ep.name) if noise else None
    where = _image_where(url) or (pid, ts)
    if ep.kind is Kind.LANDMARKS:
        body = (_landmarks_json if json_results else _landmarks)(ep, pid, ts, where, rng)
    elif ep.kind is Kind.KEYPOINTS:
        body = _keypoints(ep, pid, ts, where, rng)
    elif ep.kind is Kind.SEGMENTATION:
        body = _segmentation(ep, pid, ts, where, rng)
    elif ep.kind is Kind.FINDINGS:
        body = _findings(ep, pid, ts, url, where, rng)
    elif ep.kind is Kind.CLASSIFIER:
        body = _classifier(ep, pid, ts, url)
    else:  # TMJ
        body = {"Results": {"Finding": tmj_sentence(patient(pid).tmj)}}
    common = {
        "Version": KEYPOINTS_VERSION if ep.version is VersionFamily.KEYPOINTS else ANALYSIS_VERSION,
        "PatientID": pid,
        "TimeStamp": ts,
        "ImageName": stored_image_name(url),
    }
    common.update(body)
    return {f: common[f] for f in _FIELDS[ep.name]}


def estimate_tle(params: Mapping[str, str]) -> dict[str, Any]:
    """Answer of ``GET /tle``: ``{"app": TLE_APP, "estimate_length": months}``.

    Parameters
    ----------
    params : mapping
        The eleven query strings ``p01`` … ``p11``, encoded as in
        ``dentalkit/data/tle_codebook.csv``.

    Returns
    -------
    dict
        ``estimate_length`` in months (float, one decimal) by the documented
        rule (:data:`dentalkit.sandbox._findings.TLE_RULE`): longer with more
        crowding or spacing, Class II/III, larger |overjet|, deep or open bite,
        crossbite, open bite, extraction, a higher difficulty score and adult
        age.

    Raises
    ------
    InputError
        Naming the parameter when one is missing or not decodable.
    """
    return {"app": TLE_APP, "estimate_length": estimate_months(params)}


# --- ground truth --------------------------------------------------------------------


def _teeth_truth(items: list[tuple[str, dict]], mm_per_px: float, dims: tuple[str, str]) -> dict:
    out = {}
    for key, rec in items:
        entry: dict[str, Any] = {"missing": bool(rec["missing"]), "fdi": dental.fdi(key)}
        entry["md_mm"] = rec["md"]
        for name in dims:
            entry[f"{name}_mm"] = rec[name]
        area = shoelace_area(rec["outline"])
        entry["area_mm2"] = area
        entry["area_px2"] = area / mm_per_px**2
        out[key] = entry
    return out


def truth(patient_id: str, timestamp: str, image_name: str | None = None) -> dict[str, Any]:
    """JSON-serialisable ground truth of one session: everything the simulator drew.

    Parameters
    ----------
    patient_id, timestamp : str
        The session key (as in the requests).
    image_name : str, optional
        An image URL; adds an ``image`` section (recognised kind, stored name,
        classifier category). For a sandbox image URL the reported transforms are
        those of the image's placement key (its patient and session, see
        ``docs/sandbox.md``), i.e. of the answers to requests naming it.

    Returns
    -------
    dict
        Sections ``patient``, ``session``, ``ceph_lateral``, ``ceph_frontal``,
        ``arch``, ``teeth``, ``findings``, ``tmj``, ``tle_rule``, ``noise``
        (and ``image``); units in the key names or in ``docs/sandbox.md``.
        Measures use the ids of ``docs/conventions.md``.
    """
    p = patient(patient_id)
    s = session(patient_id, timestamp)
    where = _where(patient_id, timestamp, image_name)
    _, ltr, lmeas, _ = _lateral(patient_id, timestamp, where)
    _, ftr, fmeas, _ = _frontal(patient_id, timestamp, where)
    anb = lmeas["ANB"]
    lateral = dict(lmeas)
    lateral.update({
        "skeletal_class_by_ANB": "II" if anb > 4.0 else ("III" if anb < 0.0 else "I"),
        "mm_per_px": ltr.mm_per_px,
        "facing": "left" if ltr.flip_x < 0 else "right",
        "tilt_deg": ltr.rotation_deg,
        "transform": ltr.to_dict(),
        "noise_sd_mm": dict(zip(ceph.LATERAL_NAMES, ceph.noise_sd("lateral").tolist(), strict=True)),
        "units": "angles in degrees, distances in mm",
    })  # fmt: skip
    frontal = dict(fmeas)
    frontal.update({
        "mm_per_px": ftr.mm_per_px,
        "tilt_deg": ftr.rotation_deg,
        "transform": ftr.to_dict(),
        "noise_sd_mm": dict(zip(ceph.FRONTAL_NAMES, ceph.noise_sd("frontal").tolist(), strict=True)),
        "sign_convention": "midline deviations: signed distance (mm) from the Cg–ANS line, "
        "positive towards the patient's left; widths: Euclidean distance between the pair",
    })  # fmt: skip
    arch: dict[str, Any] = {}
    teeth: dict[str, Any] = {}
    for a in ("up", "lo"):
        layout, tr = _arch(patient_id, timestamp, a, where)
        arch[a] = {
            **dental.arch_summary(layout),
            "catenary_a_px": layout["a"] / tr.mm_per_px,
            "equation": "y = a·(cosh(x/a) − 1) in the arch frame: mm, incisal point at the "
            "origin, x towards the patient's left, y posterior (depth)",
            "mm_per_px": tr.mm_per_px,
            "transform": tr.to_dict(),
            "catenary_points_mm": {k: v.tolist() for k, v in layout["catenary"].items()},
        }
        src = "occlusogram_upper" if a == "up" else "occlusogram_lower"
        teeth[src] = {
            "mm_per_px": tr.mm_per_px,
            "teeth": _teeth_truth(
                [(k, layout["teeth"][k]) for k in _arch_keys(a)], tr.mm_per_px, ("bl",)
            ),
        }
    pano_layout, ptr = _pano(patient_id, timestamp, where)
    teeth["pano"] = {
        "mm_per_px": ptr.mm_per_px,
        "transform": ptr.to_dict(),
        "teeth": _teeth_truth(list(pano_layout.items()), ptr.mm_per_px, ("length",)),
    }
    photo, phtr = _frontal_photo(patient_id, timestamp, where)
    teeth["frontal"] = {
        "mm_per_px": phtr.mm_per_px,
        "transform": phtr.to_dict(),
        "teeth": _teeth_truth(list(photo.items()), phtr.mm_per_px, ("width", "height")),
    }
    clinical = {}
    for kind in IMAGE_SPECS:
        if kind.startswith("intraoral"):
            boxes = _clinical(patient_id, timestamp, kind, where, None)
            clinical[kind] = {name: len(boxes.get(name, ())) for name in CLINICAL_CLASSES}
    pano_boxes = _pano_boxes(patient_id, timestamp, where)
    out: dict[str, Any] = {
        "simulator": "dentalkit sandbox simulator: synthetic anatomy, no AI model",
        "versions": {"analysis": ANALYSIS_VERSION, "keypoints": KEYPOINTS_VERSION},
        "patient": p.summary(),
        "session": s.summary(),
        "ceph_lateral": lateral,
        "ceph_frontal": frontal,
        "arch": arch,
        "teeth": teeth,
        "findings": {
            "clinical_counts": clinical,
            "clinical_rates_per_photo": dict(p.clinical_rates),
            "pano_counts": {name: len(b) for name, b in pano_boxes.items()},
            "pano_empty": not pano_boxes,
        },
        "tmj": {
            "conditions": {k: list(v) for k, v in p.tmj.items()},
            "finding": tmj_sentence(p.tmj),
        },
        "tle_rule": TLE_RULE,
        "noise": NOISE_MODEL,
    }
    if image_name is not None:
        parsed = parse_sandbox_url(image_name)
        out["image"] = {
            "image_name": image_name,
            "stored_name": stored_image_name(image_name),
            "sandbox_kind": parsed[0] if parsed else None,
            "category": CATEGORIES[parsed[0]] if parsed else None,
        }
    return _jsonable(out)


def _jsonable(obj: Any) -> Any:
    if isinstance(obj, Mapping):
        return {str(k): _jsonable(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, float | int | str | bool) or obj is None:
        return obj
    return str(obj)
