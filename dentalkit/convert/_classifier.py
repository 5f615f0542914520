"""Classifier responses (``/classifier``) → ``classifications``.

One row per response: ``image_name`` (the response's ``ImageName``, the stored file
name, not the submitted URL), ``category`` and ``confidence`` from ``Classification``.
The spec shows a confidence between 0 and 1 "in the sample"; a value outside [0, 1] is
kept and reported. The response carries no ``Version`` (``model_version`` null).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dentalkit.convert._common import (
    BodyError,
    Problems,
    Requests,
    bodies,
    build_table,
    categorical,
    exact_keys,
    number,
    obj,
    require,
    text,
    top_level,
)

TABLES = ("classifications",)
_STR = pd.StringDtype(na_value=np.nan)


def flatten(body: dict) -> tuple[str, str, float]:
    """Check one classifier body; return ``(image_name, category, confidence)``."""
    image_name = text(require(body, "ImageName"), "$.ImageName")
    cl = obj(require(body, "Classification"), "$.Classification")
    exact_keys(cl, "$.Classification", ("category", "confidence"))
    category = text(cl["category"], "$.Classification.category")
    confidence = number(cl["confidence"], "$.Classification.confidence")
    return image_name, category, confidence


def convert(req: Requests, idx: np.ndarray, problems: Problems) -> pd.DataFrame:
    """Build ``classifications`` from the classifier responses ``idx``."""
    resp: list[int] = []
    versions: list[str | None] = []
    rows: list[tuple[str, str, float]] = []
    for i, body in bodies(req, idx, problems, TABLES):
        try:
            version = top_level(body, req.ep[i], req, i, problems, TABLES)
            row = flatten(body)
        except BodyError as err:
            problems.fatal(req, i, TABLES, err)
            continue
        if not 0.0 <= row[2] <= 1.0:
            problems.note(
                req,
                i,
                "classifications",
                "$.Classification.confidence",
                f"confidence {row[2]!r} is outside [0, 1]",
            )
        resp.append(i)
        versions.append(version)
        rows.append(row)
    names, cats, conf = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [], [])
    codes, uniques = pd.factorize(np.asarray(cats, dtype=object))
    return build_table(
        "classifications",
        req,
        resp,
        np.ones(len(resp), dtype=np.intp),
        versions,
        {
            "image_name": pd.array(names, dtype=_STR),
            "category": categorical(codes, list(uniques)),
            "confidence": np.asarray(conf, dtype=np.float64),
        },
    )
