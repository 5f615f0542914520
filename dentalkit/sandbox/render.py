"""Synthetic input images and annotated output images of the sandbox (Pillow).

:func:`input_image` draws the noise-free anatomy of a session as a plain
synthetic picture (radiographs in grey on black, photographs in colour) for the
sandbox image route ``GET /_sandbox/images/{kind}/{patient_id}/{session}.png``,
so manifests can point at real URLs. :func:`output_image` draws a response on
top of it (landmarks with their keys, tooth contours or masks, boxes with class
names, keypoints and the catenary curve), for the signed ``OutputImageUrl``.
Both are deterministic PNG bytes for a given Pillow version. Image sizes are
those of :data:`IMAGE_SPECS` (see ``docs/sandbox.md``).

Needs the ``sandbox`` extra (Pillow).
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from functools import lru_cache
from typing import Any
from urllib.parse import unquote

import numpy as np

from dentalkit.endpoints import Endpoint, Kind, get_endpoint
from dentalkit.errors import InputError, MissingDependencyError
from dentalkit.sandbox import _anatomy_ceph as ceph
from dentalkit.sandbox._images import (
    IMAGE_KINDS,
    IMAGE_SPECS,
    default_image_kind,
    parse_sandbox_url,
)

try:
    from PIL import Image, ImageDraw, ImageFont
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise MissingDependencyError(
        "dentalkit.sandbox.render needs Pillow: pip install 'dentalkit[sandbox]'"
    ) from exc

__all__ = ["IMAGE_KINDS", "IMAGE_SPECS", "default_image_kind", "input_image", "output_image"]

_PNG_LEVEL = 3  # zlib level: 6 doubles the time of a 1935 × 2400 image for 30 % less size


def _png(img: Image.Image) -> bytes:
    buf = io.BytesIO()
    img.save(buf, format="PNG", compress_level=_PNG_LEVEL)
    return buf.getvalue()


def _parse_path(path: str) -> tuple[str, str, str]:
    parts = path.strip("/").split("/")
    if len(parts) != 3 or not parts[2].endswith(".png"):
        raise InputError(
            f"sandbox image path {path!r} must look like '{{kind}}/{{patient_id}}/{{session}}.png'"
        )
    kind, pid, sess = parts[0], unquote(parts[1]), unquote(parts[2][: -len(".png")])
    if kind not in IMAGE_SPECS:
        raise InputError(f"unknown sandbox image kind {kind!r}; known kinds: {sorted(IMAGE_SPECS)}")
    if not pid or not sess:
        raise InputError(f"sandbox image path {path!r} needs a patient id and a session")
    return kind, pid, sess


def input_image(path: str) -> bytes:
    """PNG bytes of the synthetic input image at a sandbox image path.

    Parameters
    ----------
    path : str
        ``'{kind}/{patient_id}/{session}.png'`` with ``kind`` in
        :data:`IMAGE_KINDS`; ``session`` is used as the session's TimeStamp.

    Returns
    -------
    bytes
        A PNG of the size of the kind (:data:`IMAGE_SPECS`), identical for
        identical paths.

    Raises
    ------
    InputError
        When the path is not of that form or the kind is unknown.
    """
    kind, pid, sess = _parse_path(path)
    return _png(_base(kind, pid, sess))


@lru_cache(maxsize=16)
def _base_cached(kind: str, pid: str, sess: str) -> Image.Image:
    spec = IMAGE_SPECS[kind]
    if spec.radiograph:
        img = Image.new("L", (spec.width, spec.height), 8)
    else:
        img = Image.new("RGB", (spec.width, spec.height), (150, 60, 70))
    draw = ImageDraw.Draw(img)
    _DRAWERS[kind](draw, pid, sess, spec)
    return img


def _base(kind: str, pid: str, sess: str) -> Image.Image:
    return _base_cached(kind, pid, sess).copy()


def _xy(points: np.ndarray) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in points]


def _ellipse(centre: np.ndarray, u: np.ndarray, v: np.ndarray, a: float, b: float) -> np.ndarray:
    """72 points of the ellipse ``centre + a·cos t·u + b·sin t·v`` (px)."""
    t = np.linspace(0.0, 2.0 * np.pi, 72, endpoint=False)
    return centre + np.outer(a * np.cos(t), u) + np.outer(b * np.sin(t), v)


def _draw_lateral(draw: ImageDraw.ImageDraw, pid: str, sess: str, spec: Any) -> None:
    """A schematic lateral ceph drawn through the landmarks and contours of the session.

    Every outline is the polyline of a landmark contour that ``/ceph-lateral-points``
    answers (noise-free): mandible and maxilla filled as bone with a bright cortex, the
    cranial base, sella, orbit, pterygomaxillary fissure and nasal bone as cortical
    lines, the incisors and molars as dense teeth, the soft-tissue profile as the edge
    of the head's silhouette. The cranial vault is an ellipse scaled by S–N (no
    landmark lies on it).
    """
    from dentalkit.sandbox._placement import _lateral

    px = _lateral(pid, sess)[0]
    names = ceph.LATERAL_NAMES
    idx = {n: i for i, n in enumerate(names)}

    def group(g: str) -> np.ndarray:
        return px[[i for i, n in enumerate(names) if n.startswith(g + "_")]]

    s, n = px[idx["S"]], px[idx["N"]]
    length = float(np.hypot(*(n - s)))
    u = (n - s) / length  # anterior
    v = np.array([u[1], -u[0]])
    if v[1] > 0:  # the image is upright: "up" points to smaller y
        v = -v
    mm = 1.0 / spec.mm_per_px
    p = {k: px[idx[k]] for k in ("Ba", "Co", "Go", "PNS", "ANS", "Ptm", "L6_cusp", "Me'")}
    # vault: an ellipse (skull length ≈ 2.6·S–N, height ≈ 1.35·S–N above S–N) whose
    # front passes just ahead of N, cut below by the line Ba–N (the cranial base)
    h, b, a = 0.35 * length, 1.0 * length, 1.3 * length
    vault_c = s + (1.05 * length - a * np.sqrt(1.0 - (h / b) ** 2)) * u + h * v
    base_n = np.array([-(n - p["Ba"])[1], (n - p["Ba"])[0]])
    base_n = base_n if base_n @ v > 0 else -base_n  # normal of Ba–N pointing up

    def above_base(pts: np.ndarray, shift: float) -> np.ndarray:
        keep = (pts - p["Ba"]) @ base_n >= shift * np.hypot(*base_n)
        start = int(np.argmax(keep & ~np.roll(keep, 1)))  # first kept point of the arc
        return np.roll(pts, -start, axis=0)[: int(keep.sum())]

    soft = group("soft_tissue_profile")
    # the head's silhouette: scalp around the vault, the face along the soft-tissue
    # profile, the neck below the mandible
    draw.polygon(_xy(_ellipse(vault_c, u, v, a + 7 * mm, b + 7 * mm)), fill=48)
    neck_front = p["Me'"] - 28 * mm * v - 15 * mm * u
    neck_back = p["Ba"] - 95 * mm * v - 25 * mm * u
    draw.polygon(_xy(np.vstack([soft, [p["Me'"], neck_front, neck_back, p["Ba"] - 30 * mm * u]])),
                 fill=48)  # fmt: skip
    draw.polygon(_xy(above_base(_ellipse(vault_c, u, v, a, b), 0.0)), fill=120)  # bone
    draw.polygon(_xy(above_base(_ellipse(vault_c, u, v, a - 6 * mm, b - 6 * mm), 6 * mm)),
                 fill=62)  # brain  # fmt: skip
    # midface: nasal bone, maxilla, pterygomaxillary region
    nasal = group("nasal_bone")
    draw.polygon(_xy(np.vstack([[n], nasal, [p["ANS"], p["PNS"], p["Ptm"]],
                                [s + 0.35 * length * u]])), fill=82)  # fmt: skip
    bone, cortex = 105, 215
    # mandible: the contour (condyle … gonion … menton … alveolar crest), closed by the
    # alveolar crest back to the molars, the anterior ramus, coronoid and sigmoid notch
    mand = group("mandible_contour")
    co = p["Co"]
    closing = np.vstack([
        p["L6_cusp"] - 4 * mm * v,
        p["L6_cusp"] - 16 * mm * u - 6 * mm * v,
        co + 30 * mm * u - 2 * mm * v,
        co + 15 * mm * u - 12 * mm * v,
    ])  # fmt: skip
    for pts in (np.vstack([mand, closing]), group("maxilla_contour")):
        draw.polygon(_xy(pts), fill=bone)
        draw.line(_xy(np.vstack([pts, pts[:1]])), fill=cortex, width=7, joint="curve")
    for g, width in (("cranial_base", 8), ("nasal_bone", 6), ("sella_contour", 5),
                     ("orbit_contour", 5), ("ptm_fissure", 5)):  # fmt: skip
        draw.line(_xy(group(g)), fill=cortex - 20, width=width, joint="curve")
    for g in ("upper_incisor_outline", "lower_incisor_outline", "upper_molar_outline",
              "lower_molar_outline"):  # fmt: skip
        draw.polygon(_xy(group(g)), fill=238, outline=250)
    draw.line(_xy(soft), fill=85, width=4, joint="curve")


def _draw_frontal(draw: ImageDraw.ImageDraw, pid: str, sess: str, spec: Any) -> None:
    """A schematic PA ceph through the contours of ``/ceph-frontal-points`` (noise-free).

    Face outline filled as soft tissue; the skull outline as the vault's bone (a 6 mm
    cortex around a darker brain); the midface between the vault and the mandible as
    bone; the mandible filled with a bright cortex; orbits and nasal cavity as dark
    openings with bright rims.
    """
    from dentalkit.sandbox._placement import _frontal

    px = _frontal(pid, sess)[0]
    names = ceph.FRONTAL_NAMES
    mm = 1.0 / spec.mm_per_px

    def group(g: str) -> np.ndarray:
        return px[[i for i, n in enumerate(names) if n.startswith(g + "_")]]

    def shrink(pts: np.ndarray, by: float) -> np.ndarray:
        c = pts.mean(axis=0)
        r = np.hypot(*(pts - c).T)[:, None]
        return c + (pts - c) * np.clip(1.0 - by / np.maximum(r, 1e-9), 0.0, None)

    draw.polygon(_xy(group("face_outline")), fill=48)
    skull, mand = group("skull_outline"), group("mandible_contour")
    draw.polygon(_xy(skull), fill=120)
    draw.polygon(_xy(shrink(skull, 6 * mm)), fill=62)
    ends_skull = skull[[0, -1]]
    ends_mand = mand[[0, -1]]
    # midface: from the lower ends of the skull outline to the mandible's upper ends
    mid = np.vstack([ends_skull, ends_mand[::-1]]) if (
        np.hypot(*(ends_skull[-1] - ends_mand[-1])) < np.hypot(*(ends_skull[-1] - ends_mand[0]))
    ) else np.vstack([ends_skull, ends_mand])  # fmt: skip
    draw.polygon(_xy(mid), fill=88)
    draw.polygon(_xy(mand), fill=105)
    draw.line(_xy(mand), fill=215, width=7, joint="curve")
    draw.line(_xy(skull), fill=205, width=8, joint="curve")
    for g in ("orbit_contour_R", "orbit_contour_L", "nasal_cavity"):
        pts = group(g)
        draw.polygon(_xy(pts), fill=35)
        draw.line(_xy(np.vstack([pts, pts[:1]])), fill=195, width=5, joint="curve")


def _draw_teeth(
    draw: ImageDraw.ImageDraw, layout: Mapping[str, dict], tr: Any, fill: Any, outline: Any
) -> None:
    for rec in layout.values():
        if rec["missing"]:
            continue
        draw.polygon(_xy(tr.apply(rec["outline"])), fill=fill, outline=outline)


def _draw_pano(draw: ImageDraw.ImageDraw, pid: str, sess: str, spec: Any) -> None:
    from dentalkit.sandbox._placement import _pano

    layout, tr = _pano(pid, sess)
    w, h = spec.width, spec.height
    draw.ellipse((0.05 * w, 0.12 * h, 0.95 * w, 0.95 * h), fill=55)
    _draw_teeth(draw, layout, tr, 215, 250)


def _draw_model(arch: str):
    def drawer(draw: ImageDraw.ImageDraw, pid: str, sess: str, spec: Any) -> None:
        from dentalkit.sandbox._placement import _arch

        layout, tr = _arch(pid, sess, arch)
        draw.rectangle((0, 0, spec.width, spec.height), fill=(40, 60, 90))  # backdrop
        # the stone model: a horseshoe base under the teeth (14 mm wide), teeth on top
        teeth = layout["teeth"]
        rgt = [k for k in teeth if "_rgt_" in k]  # i1 … m3 of each side: run m3 → m3
        order = rgt[::-1] + [k for k in teeth if "_lft_" in k]
        band = tr.apply(np.vstack([teeth[k]["centre"] for k in order]))
        width = round(14.0 / tr.mm_per_px)
        draw.line(_xy(band), fill=(150, 140, 125), width=width, joint="curve")
        for end in (band[0], band[-1]):
            r = width / 2
            draw.ellipse((end[0] - r, end[1] - r, end[0] + r, end[1] + r), fill=(150, 140, 125))
        _draw_teeth(draw, layout["teeth"], tr, (250, 247, 238), (120, 110, 90))

    return drawer


def _draw_intraoral(draw: ImageDraw.ImageDraw, pid: str, sess: str, spec: Any) -> None:
    """An intra-oral photo: cheeks, the dark mouth, gums behind the teeth, the teeth.

    The teeth are those ``/frontal-segmentation`` (frontal view) or the arch layout
    (occlusal views) place on this photo (``_placement._photo_teeth``); each tooth's gum is
    its outline enlarged by a quarter and moved 1.5 mm towards its gingival point, so
    the gum line is scalloped as in a photograph.
    """
    from dentalkit.sandbox._placement import _photo_teeth

    layout, tr, gingival = _photo_teeth(pid, sess, spec.kind)
    outlines = np.stack([r["outline"] for r in layout.values()])
    centres = outlines.mean(axis=1)
    px = tr.apply(outlines.reshape(-1, 2))
    lo, hi = px.min(axis=0), px.max(axis=0)
    pad = 5.0 / tr.mm_per_px
    draw.rectangle((0, 0, spec.width, spec.height), fill=(150, 60, 70))  # cheeks, lips
    draw.ellipse((lo[0] - 3 * pad, lo[1] - 2 * pad, hi[0] + 3 * pad, hi[1] + 2 * pad),
                 fill=(70, 22, 28))  # the mouth  # fmt: skip
    towards = gingival - centres
    towards /= np.maximum(np.hypot(*towards.T), 1e-9)[:, None]
    gums = centres[:, None, :] + 1.25 * (outlines - centres[:, None, :]) + 1.5 * towards[:, None]
    for g in gums:
        draw.polygon(_xy(tr.apply(g)), fill=(205, 105, 115))
    _draw_teeth(draw, layout, tr, (240, 235, 220), (170, 160, 140))


def _draw_tmj(draw: ImageDraw.ImageDraw, pid: str, sess: str, spec: Any) -> None:
    """Both joints side by side (the patient's right on the image's left), each a condyle
    under its fossa, showing the conditions ``/tmj-xsectional`` reports for the patient:
    flattening (the condyle's top cut flat), erosion (a dark notch in its cortex),
    osteophyte (a bright spur at its anterior edge)."""
    from dentalkit.sandbox._patient import patient

    conditions = patient(pid).tmj
    w, h = spec.width, spec.height
    for side, x0 in (("right", 0.0), ("left", 0.5 * w)):
        cx, half = x0 + 0.25 * w, 0.16 * w
        found = conditions.get(side, ())
        draw.rectangle((cx - 0.06 * w, 0.5 * h, cx + 0.06 * w, 0.95 * h), fill=170)  # neck
        top = 0.27 * h
        draw.ellipse((cx - 0.1 * w, top, cx + 0.1 * w, 0.6 * h), fill=170, outline=225, width=6)
        if "flattening" in found:
            draw.rectangle((cx - 0.1 * w, top - 4, cx + 0.1 * w, top + 0.05 * h), fill=8)
            draw.line((cx - 0.085 * w, top + 0.05 * h, cx + 0.085 * w, top + 0.05 * h),
                      fill=225, width=6)  # fmt: skip
        if "erosion" in found:
            draw.ellipse((cx - 0.03 * w, top + 0.03 * h, cx + 0.02 * w, top + 0.09 * h), fill=8)
        if "osteophyte" in found:
            draw.polygon([(cx + 0.08 * w, 0.33 * h), (cx + 0.16 * w, 0.3 * h),
                          (cx + 0.095 * w, 0.4 * h)], fill=235)  # fmt: skip
        draw.arc((cx - half, 0.12 * h, cx + half, 0.5 * h), 180, 360, fill=230, width=10)


_DRAWERS = {
    "lateral_ceph": _draw_lateral,
    "frontal_ceph": _draw_frontal,
    "pano": _draw_pano,
    "intraoral_frontal": _draw_intraoral,
    "intraoral_right": _draw_intraoral,
    "intraoral_left": _draw_intraoral,
    "intraoral_upper": _draw_intraoral,
    "intraoral_lower": _draw_intraoral,
    "model_upper": _draw_model("up"),
    "model_lower": _draw_model("lo"),
    "tmj": _draw_tmj,
}

# --- output images -------------------------------------------------------------------

_RED, _GREEN, _YELLOW, _CYAN = (230, 40, 40), (40, 200, 80), (250, 210, 40), (40, 200, 230)
_PALETTE = [(230, 40, 40), (40, 120, 230), (40, 200, 80), (250, 160, 30), (180, 60, 200),
            (40, 200, 200), (230, 90, 160), (150, 150, 40)]  # fmt: skip


@lru_cache(maxsize=1)
def _font() -> ImageFont.ImageFont:
    return ImageFont.load_default()


def _output_kind(ep: Endpoint, request: Mapping[str, Any]) -> str:
    """The image kind the answer was placed on (clinical: the photo kind it analysed)."""
    if ep.source == "clinical":
        from dentalkit.sandbox._answers import _clinical_kind

        url = str(request.get("ImageName", ""))
        return _clinical_kind(ep, url, str(request.get("PatientID", "")))
    return default_image_kind(ep)


def output_image(
    endpoint: Endpoint | str, request: Mapping[str, Any], body: Mapping[str, Any]
) -> bytes:
    """PNG bytes of the annotated output image of one response.

    Parameters
    ----------
    endpoint : Endpoint or str
        An image endpoint with an output image (not the classifier or TMJ).
    request : mapping
        The request body (``PatientID``, ``TimeStamp``, ``ImageName`` and the
        optional fields: ``DrawContours`` chooses outlines (True) or filled
        masks (False/absent); ``PlotLabels`` adds tooth keys on the frontal
        segmentation).
    body : mapping
        The success body :func:`~dentalkit.sandbox.simulate.respond` returned.

    Returns
    -------
    bytes
        The input image of the session (see :func:`input_image`) with the
        response drawn on it, as PNG.

    Raises
    ------
    InputError
        For endpoints without an output image.
    """
    ep = get_endpoint(endpoint)
    if not ep.output_image:
        raise InputError(f"{ep.path} has no output image (the spec shows no OutputImageUrl)")
    kind = _output_kind(ep, request)
    parsed = parse_sandbox_url(str(request.get("ImageName", "")))
    if parsed is not None:  # the image the request names (answers are placed on it)
        pid, sess = parsed[1], parsed[2]
    else:
        pid, sess = str(request["PatientID"]), str(request["TimeStamp"])
    base = _base(kind, pid, sess).convert("RGB")
    overlay = Image.new("RGBA", base.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(overlay)
    font = _font()
    if ep.kind is Kind.LANDMARKS:
        r = 6 if ep.view == "lateral" else 5
        for key, p in body["Results"].items():
            x, y = p["x_coordinate"], p["y_coordinate"]
            draw.ellipse((x - r, y - r, x + r, y + r), fill=(*_RED, 255))
            draw.text((x + r + 2, y - r), key.split("_", 1)[1], fill=(*_YELLOW, 255), font=font)
    elif ep.kind is Kind.SEGMENTATION:
        contours = bool(request.get("DrawContours", False))
        labels = bool(request.get("PlotLabels", False)) or ep.source != "frontal"
        for i, (key, rec) in enumerate(body["Results"].items()):
            if rec["missing"]:
                continue
            pts = [tuple(p) for p in rec["points"]]
            color = _PALETTE[i % len(_PALETTE)]
            if contours:
                draw.line([*pts, pts[0]], fill=(*color, 255), width=3)
            else:
                draw.polygon(pts, fill=(*color, 110), outline=(*color, 255))
            if labels:
                c = np.mean(np.asarray(rec["points"], dtype=float), axis=0)
                draw.text((c[0] - 14, c[1] - 5), key, fill=(255, 255, 255, 255), font=font)
    elif ep.kind is Kind.KEYPOINTS:
        cat = list(body["CatenaryPoints"].values())
        draw.line([tuple(p) for p in cat], fill=(*_CYAN, 255), width=3)
        for key, rec in body["Teeth"].items():
            x, y = rec["centroid"]
            color = _RED if rec["missing"] else _GREEN
            draw.ellipse((x - 6, y - 6, x + 6, y + 6), outline=(*color, 255), width=3)
            draw.text((x + 8, y - 6), key, fill=(*_YELLOW, 255), font=font)
            for name, p in rec.items():
                if name.startswith("t"):
                    draw.ellipse((p[0] - 3, p[1] - 3, p[0] + 3, p[1] + 3), fill=(*_YELLOW, 255))
    elif ep.kind is Kind.FINDINGS:
        for i, dets in enumerate(body["Results"].values()):
            color = _PALETTE[i % len(_PALETTE)]
            for d in dets:
                (x0, y0), (x1, y1) = d["TopLeft"], d["BottomRight"]
                draw.rectangle((x0, y0, x1, y1), outline=(*color, 255), width=3)
                draw.text((x0 + 2, max(y0 - 12, 0)), d["ClassName"], fill=(*color, 255), font=font)
    base.paste(overlay, (0, 0), overlay)
    return _png(base)
