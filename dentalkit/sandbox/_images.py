"""Synthetic image kinds of the sandbox: sizes, pixel spacing, URL parsing (private).

Pillow-free, so the simulator works without the ``sandbox`` extra; the renderer
(:mod:`dentalkit.sandbox.render`) re-exports the public names.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache, wraps
from types import MappingProxyType
from typing import TypeVar
from urllib.parse import unquote, urlsplit

from dentalkit.endpoints import Endpoint, get_endpoint

__all__ = [
    "IMAGE_KINDS",
    "IMAGE_SPECS",
    "SANDBOX_IMAGE_PREFIX",
    "ImageSpec",
    "default_image_kind",
    "image_identity",
    "parse_sandbox_url",
    "stored_image_name",
    "url_cache",
]

T = TypeVar("T")

#: Path under which the sandbox serves synthetic input images.
SANDBOX_IMAGE_PREFIX = "/_sandbox/images/"


@dataclass(frozen=True)
class ImageSpec:
    """Size (px), pixel spacing (mm/px) and description of one synthetic image kind."""

    kind: str
    description: str
    width: int
    height: int
    mm_per_px: float
    radiograph: bool


_SPECS = (
    ImageSpec("lateral_ceph", "lateral cephalometric radiograph (ISBI 2015 size, 0.1 mm/px)", 1935, 2400, 0.1, True),
    ImageSpec("frontal_ceph", "frontal (postero-anterior) cephalometric radiograph", 2000, 2500, 0.1, True),
    ImageSpec("pano", "panoramic radiograph (distortion-free unrolled arches)", 2800, 1400, 0.1, True),
    ImageSpec("intraoral_frontal", "intra-oral photograph, frontal view in occlusion", 1600, 1200, 0.04, False),
    ImageSpec("intraoral_right", "intra-oral photograph, right buccal view", 1600, 1200, 0.04, False),
    ImageSpec("intraoral_left", "intra-oral photograph, left buccal view", 1600, 1200, 0.04, False),
    ImageSpec("intraoral_upper", "intra-oral occlusal photograph, upper arch", 1600, 1200, 0.08, False),
    ImageSpec("intraoral_lower", "intra-oral occlusal photograph, lower arch", 1600, 1200, 0.08, False),
    ImageSpec("model_upper", "photograph of the upper dental model, occlusal view", 1000, 1000, 0.08, False),
    ImageSpec("model_lower", "photograph of the lower dental model, occlusal view", 1000, 1000, 0.08, False),
    ImageSpec("tmj", "cross-sectional image of the temporomandibular joint", 800, 800, 0.1, True),
)  # fmt: skip

#: Every synthetic image kind and its specification.
IMAGE_SPECS: MappingProxyType[str, ImageSpec] = MappingProxyType({s.kind: s for s in _SPECS})
#: Image kind → description (the kinds the sandbox image route serves).
IMAGE_KINDS: MappingProxyType[str, str] = MappingProxyType({s.kind: s.description for s in _SPECS})

_DEFAULT_KIND = {
    "clinical_images": "intraoral_frontal",
    "frontal_segmentation": "intraoral_frontal",
    "panos_findings": "pano",
    "pano_segmentation": "pano",
    "occlusogram_upper_points": "model_upper",
    "occlusogram_upper_seg": "model_upper",
    "occlusogram_lower_points": "model_lower",
    "occlusogram_lower_seg": "model_lower",
    "ceph_lateral_points": "lateral_ceph",
    "ceph_frontal_points": "frontal_ceph",
    "classifier": "lateral_ceph",
    "tmj_xsectional": "tmj",
}


def default_image_kind(endpoint: Endpoint | str) -> str:
    """The image kind a manifest should use for ``endpoint`` (e.g. ``pano`` for /pano-segmentation).

    Raises
    ------
    KeyError
        For ``/tle`` (no image) or an unknown endpoint.
    """
    ep = get_endpoint(endpoint)
    try:
        return _DEFAULT_KIND[ep.name]
    except KeyError:
        raise KeyError(f"{ep.path} takes no image; no image kind applies") from None


def parse_sandbox_url(url: str) -> tuple[str, str, str] | None:
    """``(kind, patient_id, session)`` of a sandbox image URL, else ``None``.

    A sandbox image URL has a path ending in
    ``/_sandbox/images/{kind}/{patient_id}/{session}.png`` with a known kind
    (any host: the URL is never fetched).
    """
    if SANDBOX_IMAGE_PREFIX not in url:  # the path is a substring of the URL: skip urlsplit
        return None
    try:
        path = urlsplit(url).path
    except ValueError:
        return None
    return _sandbox_path_parts(path)


def _sandbox_path_parts(path: str) -> tuple[str, str, str] | None:
    """``(kind, patient_id, session)`` of a URL path, else ``None`` (see parse_sandbox_url)."""
    i = path.find(SANDBOX_IMAGE_PREFIX)
    if i < 0:
        return None
    parts = path[i + len(SANDBOX_IMAGE_PREFIX) :].split("/")
    if len(parts) != 3 or not parts[2].endswith(".png") or parts[0] not in IMAGE_SPECS:
        return None
    kind, pid, session = parts[0], unquote(parts[1]), unquote(parts[2][: -len(".png")])
    if not pid or not session:
        return None
    return kind, pid, session


_SAFE = re.compile(r"[^A-Za-z0-9._-]+")


#: Longest URL the sandbox's URL-keyed caches keep; a longer one is worked out again each
#: time (the work is a scan of the URL), so those caches hold at most
#: ``maxsize × URL_CACHE_CHARS`` characters however long the URLs a client sends.
URL_CACHE_CHARS = 1024


def url_cache(maxsize: int) -> Callable[[Callable[[str], T]], Callable[[str], T]]:
    """``functools.lru_cache(maxsize)`` for a function of one URL, skipping long URLs.

    A URL longer than :data:`URL_CACHE_CHARS` is passed straight to the function, never
    kept: an ``lru_cache`` keyed on whole 60 KB URLs held hundreds of megabytes.
    ``cache_info`` and ``cache_clear`` are the inner cache's.
    """

    def decorate(fn: Callable[[str], T]) -> Callable[[str], T]:
        cached = lru_cache(maxsize=maxsize)(fn)

        @wraps(fn)
        def lookup(url: str) -> T:
            return cached(url) if len(url) <= URL_CACHE_CHARS else fn(url)

        lookup.cache_info = cached.cache_info  # type: ignore[attr-defined]
        lookup.cache_clear = cached.cache_clear  # type: ignore[attr-defined]
        return lookup

    return decorate


@url_cache(maxsize=4096)
def image_identity(url: str) -> str:
    """What identifies an image for seeding and stored names.

    A sandbox image URL is identified by its path from ``/_sandbox/images/`` on, so the
    answers do not depend on which host and port the sandbox happened to run on (a demo
    or notebook rerun on a new port gets the same numbers); any other URL by itself.
    """
    i = url.find(SANDBOX_IMAGE_PREFIX)
    if i >= 0 and parse_sandbox_url(url) is not None:
        return url[i:]
    return url


def stored_image_name(image_url: str) -> str:
    """The ``ImageName`` a response carries: a stored file name derived from the URL.

    ``{first 12 hex digits of SHA-256(url)}_{name}``, where ``name`` is
    ``{kind}.png`` for a sandbox image URL and otherwise the last path segment
    of the URL (characters outside ``[A-Za-z0-9._-]`` replaced by ``_``, at
    most 80 characters, ``image.png`` when empty; ``.png`` appended when it has
    no extension).

    Examples
    --------
    >>> stored_image_name("https://x.org/a/b/ceph%201.jpg")
    'efe70f6869c2_ceph_1.jpg'
    """
    digest = hashlib.sha256(image_identity(image_url).encode("utf-8")).hexdigest()[:12]
    try:
        path = urlsplit(image_url).path
    except ValueError:
        path = ""
    parsed = _sandbox_path_parts(path) if path else None
    if parsed is not None:
        return f"{digest}_{parsed[0]}.png"
    name = _SAFE.sub("_", unquote(path.rsplit("/", 1)[-1])).strip("_.")[:80]
    if not name:
        name = "image.png"
    elif "." not in name:
        name += ".png"
    return f"{digest}_{name}"
