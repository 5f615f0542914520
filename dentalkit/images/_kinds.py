"""Image kinds → registry endpoints (private; the table is ``dentalkit/data/image_kinds.csv``).

A *kind* names what an image shows (``lateral_ceph``, ``pano``, ``model_upper`` …); each
kind is sent to one or more endpoints of the registry (:mod:`dentalkit.endpoints`). The
shipped table uses the sandbox's image-kind names; every registry name and path slug is a
kind of its own (``ceph_lateral_points`` → that endpoint). A caller's ``kinds=`` adds kinds
or replaces shipped ones.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from functools import cache
from importlib import resources
from types import MappingProxyType

from dentalkit.endpoints import ENDPOINTS, get_endpoint
from dentalkit.errors import InputError

__all__ = ["load_kinds", "resolve_kinds"]


@cache
def _shipped() -> MappingProxyType[str, tuple[str, ...]]:
    with resources.files("dentalkit.data").joinpath("image_kinds.csv").open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    return MappingProxyType({r["kind"]: tuple(r["endpoints"].split()) for r in rows})


def load_kinds() -> dict[str, tuple[str, ...]]:
    """The shipped image kinds and the registry endpoints each is sent to.

    Returns
    -------
    dict of str to tuple of str
        ``kind → endpoint names``, from ``dentalkit/data/image_kinds.csv`` (every registry
        endpoint name and slug is a kind too, not listed here).

    Examples
    --------
    >>> from dentalkit import images
    >>> images.load_kinds()["pano"]
    ('panos_findings', 'pano_segmentation')
    """
    return dict(_shipped())


def _endpoint_names(kind: str, value: str | Sequence[str]) -> tuple[str, ...]:
    """Registry names of a ``kinds=`` value: a name, ``"a,b"`` or a list of names."""
    items = value.replace(",", " ").split() if isinstance(value, str) else list(value)
    if not items:
        raise InputError(f"kinds: kind {kind!r} names no endpoint")
    names = []
    for item in items:
        try:
            ep = get_endpoint(str(item).strip())
        except KeyError:
            raise InputError(
                f"kinds: {item!r} (for kind {kind!r}) is not an endpoint; the image "
                f"endpoints are {', '.join(n for n, e in ENDPOINTS.items() if e.is_image)}"
            ) from None
        if not ep.is_image:
            raise InputError(f"kinds: {ep.name} (for kind {kind!r}) takes no image")
        names.append(ep.name)
    return tuple(dict.fromkeys(names))


def resolve_kinds(kinds: Mapping[str, str | Sequence[str]] | None) -> dict[str, tuple[str, ...]]:
    """Every kind a file name may carry, with its endpoints.

    The shipped table, then each image endpoint under its registry name and its slug, then
    ``kinds`` (which wins). Raises :class:`InputError` for a value that names no image
    endpoint.
    """
    table: dict[str, tuple[str, ...]] = dict(_shipped())
    for name, ep in ENDPOINTS.items():
        if ep.is_image:
            table.setdefault(name, (name,))
            table.setdefault(ep.slug, (name,))
    if kinds is not None:
        if not isinstance(kinds, Mapping):
            raise InputError(
                "kinds must map a kind to endpoint names, e.g. "
                "{'ceph': 'ceph_lateral_points', 'opg': ['panos_findings', 'pano_segmentation']}"
            )
        for kind, value in kinds.items():
            if not isinstance(kind, str) or not kind or "/" in kind:
                raise InputError(f"kinds: {kind!r} is not a kind name (text without '/')")
            table[kind] = _endpoint_names(kind, value)
    return table
