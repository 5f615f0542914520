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

_PNG_LEVEL = 6


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


def _draw_lateral(draw: ImageDraw.ImageDraw, pid: str, sess: str, spec: Any) -> None:
    from dentalkit.sandbox.simulate import _lateral

    px = _lateral(pid, sess)[0]
    names = ceph.LATERAL_NAMES

    def group(g: str) -> np.ndarray:
        return px[[i for i, n in enumerate(names) if n.startswith(g + "_")]]

    idx = {n: i for i, n in enumerate(names)}
    soft = group("soft_tissue_profile")
    back = px[idx["Ba"]] + (px[idx["Ba"]] - px[idx["N"]]) * 0.6
    head = np.vstack(
        [
            soft,
            [px[idx["Me'"]]],
            [back + np.array([0.0, 400.0])],
            [back - np.array([0.0, 900.0])],
            [soft[0]],
        ]
    )
    draw.polygon(_xy(head), fill=45)
    for g in ("mandible_contour", "maxilla_contour", "cranial_base", "nasal_bone"):
        draw.line(_xy(group(g)), fill=200, width=6)
    for g in ("sella_contour", "orbit_contour", "ptm_fissure"):
        draw.line(_xy(group(g)), fill=170, width=4)
    for g in ("upper_incisor_outline", "lower_incisor_outline", "upper_molar_outline",
              "lower_molar_outline"):  # fmt: skip
        draw.polygon(_xy(group(g)), fill=230)
    draw.line(_xy(soft), fill=110, width=3)


def _draw_frontal(draw: ImageDraw.ImageDraw, pid: str, sess: str, spec: Any) -> None:
    from dentalkit.sandbox.simulate import _frontal

    px = _frontal(pid, sess)[0]
    names = ceph.FRONTAL_NAMES

    def group(g: str) -> np.ndarray:
        return px[[i for i, n in enumerate(names) if n.startswith(g + "_")]]

    draw.polygon(_xy(group("face_outline")), fill=40)
    draw.line(_xy(group("skull_outline")), fill=200, width=8)
    for g in ("orbit_contour_R", "orbit_contour_L", "nasal_cavity"):
        pts = group(g)
        draw.polygon(_xy(pts), outline=190, width=5)
    draw.line(_xy(group("mandible_contour")), fill=210, width=7)


def _draw_teeth(
    draw: ImageDraw.ImageDraw, layout: Mapping[str, dict], tr: Any, fill: Any, outline: Any
) -> None:
    for rec in layout.values():
        if rec["missing"]:
            continue
        draw.polygon(_xy(tr.apply(rec["outline"])), fill=fill, outline=outline)


def _draw_pano(draw: ImageDraw.ImageDraw, pid: str, sess: str, spec: Any) -> None:
    from dentalkit.sandbox.simulate import _pano

    layout, tr = _pano(pid, sess)
    w, h = spec.width, spec.height
    draw.ellipse((0.05 * w, 0.12 * h, 0.95 * w, 0.95 * h), fill=55)
    _draw_teeth(draw, layout, tr, 215, 250)


def _draw_model(arch: str):
    def drawer(draw: ImageDraw.ImageDraw, pid: str, sess: str, spec: Any) -> None:
        from dentalkit.sandbox.simulate import _arch

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
    from dentalkit.sandbox.simulate import _photo_teeth

    layout, tr, _ = _photo_teeth(pid, sess, spec.kind)
    w, h = spec.width, spec.height
    draw.rectangle((0, 0.25 * h, w, 0.75 * h), fill=(200, 90, 100))
    _draw_teeth(draw, layout, tr, (240, 235, 220), (170, 160, 140))


def _draw_tmj(draw: ImageDraw.ImageDraw, pid: str, sess: str, spec: Any) -> None:
    w, h = spec.width, spec.height
    draw.ellipse((0.3 * w, 0.25 * h, 0.7 * w, 0.6 * h), fill=190)
    draw.rectangle((0.4 * w, 0.5 * h, 0.6 * w, 0.95 * h), fill=190)
    draw.arc((0.2 * w, 0.1 * h, 0.8 * w, 0.6 * h), 180, 360, fill=230, width=10)


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
    parsed = parse_sandbox_url(str(request.get("ImageName", "")))
    default = default_image_kind(ep)
    if ep.source == "clinical" and parsed is not None and parsed[0].startswith("intraoral"):
        return parsed[0]
    return default


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
