"""Session geometry in image pixels for the sandbox simulator (cached per session).

Each image kind's answer places the session's anatomy (mm, from ``_anatomy_ceph`` and
``_anatomy_dental``) on an image of that kind: rotation, flips and a translation drawn from
the image's placement key (see :func:`_where`), then noise SDs in pixels. Everything is
cached with ``functools.lru_cache``, so a repeated session costs nothing here. Split out
of ``simulate`` (which builds the answers and the ground truth from it).
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from dentalkit.sandbox import _anatomy_ceph as ceph
from dentalkit.sandbox import _anatomy_dental as dental
from dentalkit.sandbox._geometry import ImageTransform, place_points
from dentalkit.sandbox._images import (
    IMAGE_SPECS,
    parse_sandbox_url,
    url_cache,
)
from dentalkit.sandbox._patient import (
    patient,
    session,
)
from dentalkit.sandbox._rng import SESSION_CACHE, generator

Where = tuple[str, str]
"""Placement key of an image: ``(patient id, session)`` seeding its transform (see ``_where``)."""


@url_cache(maxsize=4096)
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


@lru_cache(maxsize=SESSION_CACHE)
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


@lru_cache(maxsize=SESSION_CACHE)
def _frontal_at(
    pid: str, ts: str, where: Where
) -> tuple[np.ndarray, ImageTransform, dict, np.ndarray]:
    pts, measures = _frontal_mm(pid, ts)
    tr, px = _kind_transform_points(
        where, "frontal_ceph", pts, flip_x=1, flip_y=-1, rotation_sd=1.2, margin_px=80.0
    )
    px.flags.writeable = False
    return px, tr, measures, _noise_sd_px("frontal", tr.mm_per_px)


@lru_cache(maxsize=SESSION_CACHE)
def _frontal_mm(pid: str, ts: str) -> tuple[np.ndarray, dict]:
    """Frontal landmarks (mm) and measures of a session (cached: the photo needs them too)."""
    s = session(pid, ts)
    pts, measures = ceph.frontal_mm(s.frontal, s.ceph)
    pts.flags.writeable = False
    return pts, measures


def _arch(pid: str, ts: str, arch: str, where: Where | None = None) -> tuple[dict, ImageTransform]:
    """Arch layout and the model-photo transform; upper: incisors at the top, lower: bottom."""
    return _arch_at(pid, ts, arch, where or (pid, ts))


@lru_cache(maxsize=SESSION_CACHE)
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


@lru_cache(maxsize=SESSION_CACHE)
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


@lru_cache(maxsize=SESSION_CACHE)
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


@lru_cache(maxsize=SESSION_CACHE)
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
