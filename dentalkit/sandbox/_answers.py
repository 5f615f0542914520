"""Bodies of the sandbox's image endpoints, built from the session geometry in pixels.

One builder per response kind (landmarks, keypoints, segmentation, findings, classifier);
``simulate.respond`` picks the builder and adds the echo fields. The noise constants live
here with the code that applies them; ``simulate.NOISE_MODEL`` describes them.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from typing import Any

import numpy as np
import orjson

from dentalkit.endpoints import Endpoint
from dentalkit.errors import InputError
from dentalkit.sandbox import _anatomy_ceph as ceph
from dentalkit.sandbox._findings import (
    CATEGORIES,
    clinical_detections,
)
from dentalkit.sandbox._geometry import ImageTransform
from dentalkit.sandbox._images import (
    IMAGE_SPECS,
    default_image_kind,
    image_identity,
    parse_sandbox_url,
)
from dentalkit.sandbox._patient import (
    CLINICAL_CLASSES,
    PANO_CLASSES,
    SIDES,
    TOOTH_TYPES,
    patient,
)
from dentalkit.sandbox._placement import (
    Where,
    _arch_at,
    _frontal_at,
    _frontal_photo_at,
    _lateral_at,
    _pano,
    _pano_at,
    _photo_teeth_at,
)
from dentalkit.sandbox._rng import SESSION_CACHE, generator

#: Noise SDs (mm) of points that are not cephalometric landmarks.
POINT_NOISE_SD_MM = {"centroid": 0.15, "keypoint": 0.2, "catenary": 0.12, "outline": 0.06}
#: Correlation length (vertices) of the outline noise: the noise of a tooth outline is white
#: noise smoothed along the (closed) outline by a Gaussian kernel of this SD, rescaled to the
#: SD of ``POINT_NOISE_SD_MM["outline"]`` per coordinate, so neighbouring vertices move
#: together and rounding to whole pixels leaves the outline simple (see docs/sandbox.md).
OUTLINE_NOISE_CORRELATION_VERTICES = 1.5
#: Box jitter SD (px) of detections.
BOX_NOISE_SD_PX = 1.5
_FLOAT_DECIMALS = 2


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


@lru_cache(maxsize=SESSION_CACHE)
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
