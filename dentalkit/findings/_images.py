"""Which images were analysed: the denominators of every findings prevalence (private)."""

from __future__ import annotations

import warnings

import numpy as np
import orjson
import pandas as pd

from dentalkit.endpoints import ENDPOINTS, Kind
from dentalkit.errors import DentalkitWarning
from dentalkit.stats._tables import problem_rows, require_columns

__all__ = ["COUNTED_SOURCES", "analysed_images"]

_FINDINGS_ENDPOINTS = {e.name: e for e in ENDPOINTS.values() if e.kind is Kind.FINDINGS}
#: Sources whose responses carry ``ImageContents`` counts (``clinical``), so
#: counts and detections can be compared.
COUNTED_SOURCES = frozenset(e.source for e in _FINDINGS_ENDPOINTS.values() if e.image_contents)


def analysed_images(responses: pd.DataFrame) -> pd.DataFrame:
    """The images successfully analysed by a findings endpoint, from ``responses``.

    Parameters
    ----------
    responses : DataFrame
        The ``responses`` table (session key, ``endpoint``, ``status_code``,
        ``error``); with ``body`` (or an ``image_name`` column holding each body's
        ``ImageName``, for a table read without its bodies) for ``image_name``.

    Returns
    -------
    DataFrame
        One row per successful findings request: ``patient_id``,
        ``timestamp`` (and ``session_time`` when present), ``endpoint``,
        ``source`` (``clinical`` / ``pano``, from the endpoint registry) and,
        when ``responses`` has the raw ``body``, ``image_name`` (the stored
        ``ImageName`` the response echoes), which tells several photographs
        of one session apart.

    Examples
    --------
    >>> import pandas as pd
    >>> r = pd.DataFrame(
    ...     {
    ...         "patient_id": ["a", "b", "c"],
    ...         "timestamp": ["t0"] * 3,
    ...         "endpoint": ["panos_findings", "panos_findings", "ceph_lateral_points"],
    ...         "status_code": [200, 500, 200],
    ...         "error": [None, "HTTP 500", None],
    ...     }
    ... )
    >>> analysed_images(r)[["patient_id", "source"]].to_dict("records")
    [{'patient_id': 'a', 'source': 'pano'}]
    """
    require_columns(responses, ["patient_id", "timestamp", "endpoint", "status_code"], "responses")
    endpoint = responses["endpoint"].astype("object")
    ok = endpoint.isin(list(_FINDINGS_ENDPOINTS)) & (responses["status_code"] == 200)
    if "error" in responses:
        ok &= responses["error"].isna()
    cols = [c for c in ("patient_id", "timestamp", "session_time") if c in responses]
    out = responses.loc[ok.to_numpy(), cols].copy()
    out["endpoint"] = endpoint[ok].to_numpy()
    out["source"] = out["endpoint"].map({n: e.source for n, e in _FINDINGS_ENDPOINTS.items()})
    key = ["patient_id", "timestamp", "endpoint"]
    if "image_name" in responses:  # the bodies' ImageName, kept when the bodies are not
        out["image_name"] = responses.loc[ok.to_numpy(), "image_name"].astype(object).to_numpy()
        key.append("image_name")
    elif "body" in responses:
        # no array operation parses JSON: one small loads per successful findings response
        out["image_name"] = [_image_name(b) for b in responses.loc[ok.to_numpy(), "body"]]
        key.append("image_name")
    return out.drop_duplicates(key).reset_index(drop=True)


def _image_name(body: object) -> str | None:
    try:
        value = orjson.loads(body).get("ImageName")  # type: ignore[arg-type]
    except (orjson.JSONDecodeError, TypeError, AttributeError):
        return None
    return value if isinstance(value, str) else None


def infer_images(findings: pd.DataFrame, counts: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    warnings.warn(
        "findings.prevalence: no images= table given, so the analysed images are inferred from "
        "the findings and finding_counts rows; images in which nothing was detected leave no "
        "row and are missing from every denominator (prevalences are too high). Pass "
        "images=dentalkit.findings.analysed_images(responses).",
        DentalkitWarning,
        stacklevel=4,
    )
    parts = [findings[key]] + ([counts[key]] if all(k in counts for k in key) else [])
    return pd.concat([p.astype("object") for p in parts], ignore_index=True)


def unique_images(images: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    out = images.astype({k: "object" for k in key if k in images}).drop_duplicates(key)
    return out.reset_index(drop=True)


def known_rows(table: pd.DataFrame, images: pd.DataFrame, key: list[str]) -> np.ndarray:
    """Whether each row of ``table`` belongs to one of the analysed ``images``."""
    if table.empty:
        return np.zeros(0, dtype=bool)
    known = pd.MultiIndex.from_frame(images[key].astype("object"))
    return pd.MultiIndex.from_frame(table[key].astype("object")).isin(known)


def unknown_image_rows(table: pd.DataFrame, mask: np.ndarray, name: str) -> pd.DataFrame:
    return problem_rows(
        table,
        mask,
        name,
        "source",
        "row of an image that is not among the analysed images; add the image to images= "
        "or drop the row",
    )
