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
from typing import Any

import numpy as np
import orjson

from dentalkit.endpoints import ENDPOINTS, Endpoint, Kind, VersionFamily, get_endpoint
from dentalkit.errors import InputError
from dentalkit.sandbox import _anatomy_ceph as ceph
from dentalkit.sandbox import _anatomy_dental as dental
from dentalkit.sandbox._answers import (
    BOX_NOISE_SD_PX,
    OUTLINE_NOISE_CORRELATION_VERTICES,
    POINT_NOISE_SD_MM,
    _arch_keys,
    _classifier,
    _clinical,
    _findings,
    _keypoints,
    _landmarks,
    _landmarks_json,
    _pano_boxes,
    _request_fields,
    _segmentation,
)
from dentalkit.sandbox._findings import (
    CATEGORIES,
    TLE_RULE,
    estimate_months,
    tmj_sentence,
)
from dentalkit.sandbox._geometry import shoelace_area
from dentalkit.sandbox._images import (
    IMAGE_SPECS,
    image_identity,
    parse_sandbox_url,
)
from dentalkit.sandbox._images import stored_image_name as _stored_image_name
from dentalkit.sandbox._patient import (
    CLINICAL_CLASSES,
    patient,
    session,
)
from dentalkit.sandbox._placement import (
    _arch,
    _frontal,
    _frontal_photo,
    _image_where,
    _lateral,
    _pano,
    _where,
)
from dentalkit.sandbox._rng import generator
from dentalkit.sandbox.ai_errors import MODELS, check_mode, inject

__all__ = [
    "ANALYSIS_VERSION",
    "KEYPOINTS_VERSION",
    "NOISE_MODEL",
    "TLE_APP",
    "estimate_tle",
    "injected_errors",
    "respond",
    "respond_json",
    "respond_with_errors",
    "stored_image_name",
    "truth",
]
#: ``Version`` of every image endpoint except the occlusogram keypoints.
ANALYSIS_VERSION = "2.1.0-sandbox"
#: ``Version`` of the occlusogram keypoint endpoints: newer (second part higher).
KEYPOINTS_VERSION = "2.3.0-sandbox"
#: The ``app`` value of ``/tle`` answers.
TLE_APP = "dentalkit-sandbox-tle"
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


def stored_image_name(image_url: str) -> str:
    """The ``ImageName`` a response carries: a stored file name, not the URL (spec quirk).

    ``{first 12 hex digits of SHA-256(url)}_{name}``; ``name`` is ``{kind}.png``
    for a sandbox image URL, else the URL's last path segment, sanitised.
    """
    return _stored_image_name(image_url)


def respond(
    endpoint: Endpoint | str,
    request: Mapping[str, Any],
    *,
    noise: bool = True,
    ai_errors: str = "off",
    ai_errors_seed: int = 0,
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
    ai_errors : {"off", "realistic", "gross"}, default "off"
        Answer with the AI errors of this mode (:mod:`dentalkit.sandbox.ai_errors`);
        ``"off"`` leaves the answer unchanged.
    ai_errors_seed : int, default 0
        Seed of the error draws.

    Returns
    -------
    dict
        Every field of ``endpoint.response_fields`` in that order except
        ``OutputImageUrl`` (the app appends the signed link). Deterministic: the
        same (endpoint, PatientID, TimeStamp, ImageName, noise, ai_errors,
        ai_errors_seed) gives an equal dict.

    Raises
    ------
    InputError
        For ``/tle`` (use :func:`estimate_tle`) or a request without the three
        required string fields.
    """
    ep = get_endpoint(endpoint)
    body = _respond(ep, request, noise, json_results=False)
    if check_mode(ai_errors) != "off":
        body = _with_errors(ep, body, request, ai_errors, ai_errors_seed)[0]
    return body


def respond_json(
    endpoint: Endpoint | str,
    request: Mapping[str, Any],
    *,
    noise: bool = True,
    extra: Mapping[str, Any] | None = None,
    ai_errors: str = "off",
    ai_errors_seed: int = 0,
) -> bytes:
    """``orjson.dumps`` of :func:`respond`'s body with ``extra`` fields appended.

    The same bytes, built faster for the landmark endpoints (their ``Results`` are
    written straight from the coordinate array, see ``_landmarks_json``). The HTTP app
    answers with this; ``extra`` carries the ``OutputImageUrl`` it signs.
    """
    ep = get_endpoint(endpoint)
    if check_mode(ai_errors) == "off":
        body = _respond(ep, request, noise, json_results=True)
    else:
        body = respond(ep, request, noise=noise, ai_errors=ai_errors, ai_errors_seed=ai_errors_seed)
    if extra:
        body.update(extra)
    return orjson.dumps(body)


def respond_with_errors(
    endpoint: Endpoint | str,
    request: Mapping[str, Any],
    *,
    ai_errors: str,
    ai_errors_seed: int = 0,
    noise: bool = True,
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """:func:`respond`'s body with the errors of ``ai_errors``, and a record of each error.

    The records are what the truth reports (see :func:`dentalkit.sandbox.ai_errors.inject`):
    one per injected error, and for the landmark endpoints one per named landmark with its
    displacement from the exact position. ``"off"`` gives the plain answer and ``[]``.
    """
    ep = get_endpoint(endpoint)
    body = _respond(ep, request, noise, json_results=False)
    if check_mode(ai_errors) == "off":
        return body, []
    return _with_errors(ep, body, request, ai_errors, ai_errors_seed)


def injected_errors(
    endpoint: Endpoint | str, request: Mapping[str, Any], **options: Any
) -> list[dict[str, Any]]:
    """Every error the error mode injects into the answer to ``request`` (the truth): the
    records of :func:`respond_with_errors` (same options); ``[]`` when the mode is ``"off"``
    or the endpoint takes no errors."""
    if not get_endpoint(endpoint).is_image:
        return []
    return respond_with_errors(endpoint, request, **options)[1]


def _with_errors(
    ep: Endpoint, body: dict[str, Any], request: Mapping[str, Any], mode: str, seed: int
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    pid, ts, url = _request_fields(ep, request)
    return inject(ep, body, (pid, ts, url), _image_where(url) or (pid, ts), mode=mode, seed=seed)


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


def truth(
    patient_id: str,
    timestamp: str,
    image_name: str | None = None,
    *,
    ai_errors: str = "off",
    ai_errors_seed: int = 0,
    noise: bool = True,
) -> dict[str, Any]:
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
    ai_errors : {"off", "realistic", "gross"}, default "off"
        The sandbox's error mode; any other than ``"off"`` adds an ``ai_errors``
        section: the declared model and, when ``image_name`` is given, every error
        injected into the answer of each image endpoint to a request naming that image
        (errors are drawn per image; see :func:`injected_errors`).
    ai_errors_seed : int, default 0
        Seed of the error draws (as configured in the sandbox).
    noise : bool, default True
        The sandbox's noise setting (the injected errors are reported relative to the
        exact geometry, whatever it is).

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
    if check_mode(ai_errors) != "off":
        out["ai_errors"] = _errors_truth(
            patient_id, timestamp, image_name, ai_errors, ai_errors_seed, noise
        )
    if image_name is not None:
        parsed = parse_sandbox_url(image_name)
        out["image"] = {
            "image_name": image_name,
            "stored_name": stored_image_name(image_name),
            "sandbox_kind": parsed[0] if parsed else None,
            "category": CATEGORIES[parsed[0]] if parsed else None,
        }
    return _jsonable(out)


def _errors_truth(
    pid: str, ts: str, image_name: str | None, mode: str, seed: int, noise: bool
) -> dict[str, Any]:
    """The ``ai_errors`` section of the truth (see :func:`truth`)."""
    section: dict[str, Any] = {"mode": mode, "seed": seed, "model": MODELS[mode].describe()}
    if image_name is None:
        section["injected"] = None
        section["note"] = "errors are drawn per image: give ImageName to list them"
        return section
    request = {"PatientID": pid, "TimeStamp": ts, "ImageName": image_name}
    section["injected"] = {
        ep.name: injected_errors(ep, request, ai_errors=mode, ai_errors_seed=seed, noise=noise)
        for ep in ENDPOINTS.values()
        if ep.kind in (Kind.LANDMARKS, Kind.SEGMENTATION, Kind.KEYPOINTS, Kind.FINDINGS)
    }
    return section


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
