"""The endpoint registry: one immutable record per endpoint of interface v2.

This module is the single source of truth for the service's interface
(``shared/spec/dental-image-analysis-api-v2.md``). The client, the sandbox,
the converters and the generated OpenAPI document all read it; none of them
hard-codes a path, a field name or a response shape.

Each :class:`Endpoint` records what the specification shows: method, path,
optional body fields with their types and defaults, the response kind, which
echo fields (``PatientID``, ``TimeStamp``, ``ImageName``) the response carries,
whether it returns ``OutputImageUrl`` and which family of ``Version`` label it
carries. Where the specification says "not shown", the record says nothing
and the modules that need a choice document their own.

Examples
--------
>>> from dentalkit.endpoints import ENDPOINTS, get_endpoint
>>> ep = get_endpoint("ceph-lateral-points")
>>> ep.name, ep.path, ep.kind.value, ep.n_landmarks
('ceph_lateral_points', '/ceph-lateral-points', 'landmarks', 169)
>>> sorted(ep.response_fields)
['NumberOfPredictedPoints', 'OutputImageUrl', 'PatientID', 'Results', 'Version']
>>> len(ENDPOINTS)
13
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from types import MappingProxyType
from typing import Any

__all__ = [
    "API_PREFIX",
    "ECHO_FIELDS",
    "ENDPOINTS",
    "INTERFACE_VERSION",
    "TLE_PARAMETERS",
    "BodyField",
    "Endpoint",
    "Kind",
    "QueryParameter",
    "get_endpoint",
    "image_endpoints",
]

#: Path prefix that carries the interface version (spec, "Versioning" 1).
API_PREFIX = "/api/v2"
#: Label of the interface description (spec, "Versioning" 2).
INTERFACE_VERSION = "2024.1.0"
#: The three request fields a response may echo back.
ECHO_FIELDS = ("PatientID", "TimeStamp", "ImageName")
#: Required string fields of every image request body (spec, "Common request").
REQUIRED_BODY_FIELDS = ECHO_FIELDS


class Kind(StrEnum):
    """Shape of a success response; each kind has one converter."""

    FINDINGS = "findings"
    SEGMENTATION = "segmentation"
    KEYPOINTS = "keypoints"
    LANDMARKS = "landmarks"
    CLASSIFIER = "classifier"
    TMJ = "tmj"
    TLE = "tle"


class VersionFamily(StrEnum):
    """Which ``Version`` label a response carries (spec, "Versioning" 3)."""

    ANALYSIS = "analysis"
    #: Occlusogram keypoint responses carry a newer label (second part higher).
    KEYPOINTS = "keypoints"


@dataclass(frozen=True, slots=True)
class BodyField:
    """An optional field of an image request body.

    Attributes
    ----------
    name : str
        Wire name, as the service spells it (``"DrawContours"``).
    type : type
        ``str`` or ``bool``; JSON booleans must be real booleans.
    default : object or None
        The service's default where the specification shows one
        (``StandardName`` → ``"ICON"``); ``None`` when not shown. dentalkit
        omits a field the caller did not set, so the service applies its own
        default.
    description : str
        Meaning, from the specification.
    """

    name: str
    type: type
    default: Any
    description: str

    @property
    def param(self) -> str:
        """Python keyword for this field (``DrawContours`` → ``draw_contours``)."""
        return _snake(self.name)


@dataclass(frozen=True, slots=True)
class QueryParameter:
    """A query parameter of ``GET /tle`` (all required, all strings)."""

    name: str
    meaning: str


@dataclass(frozen=True, slots=True)
class Endpoint:
    """One endpoint of interface v2, exactly as the specification shapes it.

    Attributes
    ----------
    name : str
        Python identifier, also the client method name (``"pano_segmentation"``).
    method : str
        ``"POST"`` for image endpoints, ``"GET"`` for ``/tle``.
    path : str
        Path relative to the base URL (which ends in ``/api/v2``).
    kind : Kind
        Response shape.
    summary : str
        Purpose, from the specification's endpoint table.
    optional_fields : tuple of BodyField
        Extra optional body fields.
    echo : frozenset of str
        Which of ``PatientID``, ``TimeStamp``, ``ImageName`` the success
        response carries. Tables never take the session key from the echo.
    output_image : bool
        Whether the response carries ``OutputImageUrl`` (valid 72 h).
    version : VersionFamily or None
        Which ``Version`` label family the response carries, ``None`` when the
        response has no ``Version`` field.
    source : str or None
        Where the result comes from, used as the ``source`` column of the
        tables: ``clinical``/``pano`` for findings, ``frontal``/``pano``/
        ``occlusogram_upper``/``occlusogram_lower`` for segmentation.
    arch : str or None
        ``"up"`` or ``"lo"`` for occlusogram endpoints (dental model photos).
    view : str or None
        ``"lateral"`` or ``"frontal"`` for cephalometric landmark endpoints.
    n_landmarks : int or None
        ``NumberOfPredictedPoints`` the specification states (169 / 118).
    image_contents : bool
        Whether the findings response carries ``ImageContents`` counts.
    query : tuple of QueryParameter
        Query parameters (``/tle`` only).
    """

    name: str
    method: str
    path: str
    kind: Kind
    summary: str
    optional_fields: tuple[BodyField, ...] = ()
    echo: frozenset[str] = frozenset()
    output_image: bool = True
    version: VersionFamily | None = VersionFamily.ANALYSIS
    source: str | None = None
    arch: str | None = None
    view: str | None = None
    n_landmarks: int | None = None
    image_contents: bool = False
    query: tuple[QueryParameter, ...] = ()

    @property
    def is_image(self) -> bool:
        """True for the 12 POST image endpoints."""
        return self.method == "POST"

    @property
    def slug(self) -> str:
        """The path without its leading slash (``"ceph-lateral-points"``)."""
        return self.path.lstrip("/")

    @property
    def response_fields(self) -> tuple[str, ...]:
        """Exact top-level field set of a success response, in the spec's order."""
        if self.kind is Kind.TLE:
            return ("app", "estimate_length")
        fields: list[str] = []
        if self.version is not None:
            fields.append("Version")
        fields += [f for f in ECHO_FIELDS if f in self.echo]
        fields += list(_BODY_FIELDS[self.kind])
        if self.image_contents:
            fields.insert(fields.index("Results"), "ImageContents")
        if self.output_image:
            fields.append("OutputImageUrl")
        return tuple(fields)

    def field(self, name: str) -> BodyField:
        """Return the optional body field called ``name`` (wire or Python name)."""
        for f in self.optional_fields:
            if name in (f.name, f.param):
                return f
        allowed = ", ".join(f.name for f in self.optional_fields) or "none"
        raise KeyError(f"{self.path} has no optional field {name!r} (optional fields: {allowed})")


_BODY_FIELDS: dict[Kind, tuple[str, ...]] = {
    Kind.FINDINGS: ("Results",),
    Kind.SEGMENTATION: ("Results",),
    Kind.KEYPOINTS: ("Teeth", "CatenaryPoints"),
    Kind.LANDMARKS: ("NumberOfPredictedPoints", "Results"),
    Kind.CLASSIFIER: ("Classification",),
    Kind.TMJ: ("Results",),
}


def _snake(name: str) -> str:
    out = []
    for i, ch in enumerate(name):
        if ch.isupper() and i:
            out.append("_")
        out.append(ch.lower())
    return "".join(out)


_ALL_ECHO = frozenset(ECHO_FIELDS)
_DRAW_CONTOURS = BodyField("DrawContours", bool, None, "Draw contour outlines on the output image")

#: The eleven query parameters of ``GET /tle`` (spec, "GET /tle").
TLE_PARAMETERS: tuple[QueryParameter, ...] = (
    QueryParameter("p01", "Age"),
    QueryParameter("p02", "Gender"),
    QueryParameter("p03", "Malocclusion class"),
    QueryParameter("p04", "Crowding severity"),
    QueryParameter("p05", "Spacing"),
    QueryParameter("p06", "Overjet (mm)"),
    QueryParameter("p07", "Overbite"),
    QueryParameter("p08", "Crossbite"),
    QueryParameter("p09", "Open bite"),
    QueryParameter("p10", "Extraction required"),
    QueryParameter("p11", "AI difficulty score"),
)

_RECORDS: tuple[Endpoint, ...] = (
    Endpoint(
        "clinical_images",
        "POST",
        "/clinical-images",
        Kind.FINDINGS,
        "Clinical findings on intra-oral photographs (right, front, left, upper, lower)",
        echo=_ALL_ECHO,
        source="clinical",
        image_contents=True,
    ),
    Endpoint(
        "frontal_segmentation",
        "POST",
        "/frontal-segmentation",
        Kind.SEGMENTATION,
        "Tooth segmentation on frontal intra-oral photographs with occlusal evaluation",
        optional_fields=(
            BodyField("StandardName", str, "ICON", "Evaluation standard; default ICON"),
            BodyField("PlotLabels", bool, None, "Plot classification labels on the output image"),
        ),
        echo=_ALL_ECHO,
        source="frontal",
    ),
    Endpoint(
        "panos_findings",
        "POST",
        "/panos-findings",
        Kind.FINDINGS,
        "Findings on panoramic radiographs",
        echo=_ALL_ECHO,
        source="pano",
    ),
    Endpoint(
        "pano_segmentation",
        "POST",
        "/pano-segmentation",
        Kind.SEGMENTATION,
        "Segmentation on panoramic radiographs, contour and mask output",
        optional_fields=(_DRAW_CONTOURS,),
        echo=frozenset({"PatientID"}),
        source="pano",
    ),
    Endpoint(
        "occlusogram_upper_points",
        "POST",
        "/occlusogram-upper-points",
        Kind.KEYPOINTS,
        "Keypoints on upper dental model photographs",
        echo=frozenset({"PatientID"}),
        version=VersionFamily.KEYPOINTS,
        source="occlusogram_upper",
        arch="up",
    ),
    Endpoint(
        "occlusogram_upper_seg",
        "POST",
        "/occlusogram-upper-seg",
        Kind.SEGMENTATION,
        "Tooth segmentation on upper dental model photographs",
        optional_fields=(_DRAW_CONTOURS,),
        echo=frozenset(),
        source="occlusogram_upper",
        arch="up",
    ),
    Endpoint(
        "occlusogram_lower_points",
        "POST",
        "/occlusogram-lower-points",
        Kind.KEYPOINTS,
        "Keypoints on lower dental model photographs",
        echo=frozenset(),
        version=VersionFamily.KEYPOINTS,
        source="occlusogram_lower",
        arch="lo",
    ),
    Endpoint(
        "occlusogram_lower_seg",
        "POST",
        "/occlusogram-lower-seg",
        Kind.SEGMENTATION,
        "Tooth segmentation on lower dental model photographs",
        optional_fields=(_DRAW_CONTOURS,),
        echo=frozenset(),
        source="occlusogram_lower",
        arch="lo",
    ),
    Endpoint(
        "ceph_lateral_points",
        "POST",
        "/ceph-lateral-points",
        Kind.LANDMARKS,
        "Landmarks on lateral cephalometric radiographs",
        echo=frozenset({"PatientID"}),
        view="lateral",
        n_landmarks=169,
    ),
    Endpoint(
        "ceph_frontal_points",
        "POST",
        "/ceph-frontal-points",
        Kind.LANDMARKS,
        "Landmarks on frontal (PA) cephalometric radiographs",
        echo=frozenset(),
        view="frontal",
        n_landmarks=118,
    ),
    Endpoint(
        "classifier",
        "POST",
        "/classifier",
        Kind.CLASSIFIER,
        "Classifies any dental image; no output image",
        echo=_ALL_ECHO,
        output_image=False,
        version=None,
    ),
    Endpoint(
        "tmj_xsectional",
        "POST",
        "/tmj-xsectional",
        Kind.TMJ,
        "Findings on TMJ cross-sectional images",
        echo=_ALL_ECHO,
        output_image=False,
        version=None,
    ),
    Endpoint(
        "tle",
        "GET",
        "/tle",
        Kind.TLE,
        "Treatment length estimator: predicted orthodontic treatment duration in months",
        output_image=False,
        version=None,
        query=TLE_PARAMETERS,
    ),
)

#: All endpoints by ``name`` (read-only mapping, in the specification's order).
ENDPOINTS: MappingProxyType[str, Endpoint] = MappingProxyType({e.name: e for e in _RECORDS})
_LOOKUP: dict[str, Endpoint] = {}
for _e in _RECORDS:
    _LOOKUP.update({_e.name: _e, _e.path: _e, _e.slug: _e})


def get_endpoint(name: str | Endpoint) -> Endpoint:
    """Look an endpoint up by name (``ceph_lateral_points``), path or slug.

    Raises
    ------
    KeyError
        With the list of valid names when ``name`` is not an endpoint.
    """
    if isinstance(name, Endpoint):
        return name
    try:
        return _LOOKUP[name]
    except (KeyError, TypeError):
        valid = ", ".join(ENDPOINTS)
        raise KeyError(f"unknown endpoint {name!r}; valid endpoints: {valid}") from None


def image_endpoints() -> tuple[Endpoint, ...]:
    """The 12 POST image endpoints, in the specification's order."""
    return tuple(e for e in _RECORDS if e.is_image)
