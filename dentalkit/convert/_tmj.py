"""TMJ responses (``/tmj-xsectional``) → ``tmj``.

One row per response: ``image_name``, ``finding`` (``Results.Finding``, the sentence
as sent) and ``has_finding``.

``has_finding`` rule (the spec: "a sentence stating that no findings were detected when
none are found"; its exact wording is not shown). The sentence is lower-cased, its
whitespace collapsed and trailing ``.``/``!`` removed; ``has_finding`` is False when
the *whole* sentence is a statement that nothing was found, matching
:data:`NO_FINDING`: an optional "there are/were", then "no", up to two qualifying words
("significant", "tmj", "abnormal"), "finding(s)", "abnormality/abnormalities",
"pathology" or "lesion(s)", an optional "were/was/are/is/have been/has been", an
optional "detected/found/identified/observed/seen/present", and an optional "in/on the
image/joint/tmj/scan" — or the sentence is "none", "none detected", "nothing detected",
"no abnormality detected" and the like. Every other sentence, including one that
denies a finding and reports another ("no effusion; condyle flattened"), gives True.
The rule errs towards True: a finding is never hidden by an unusual wording.
"""

from __future__ import annotations

import re

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
    obj,
    require,
    text,
    top_level,
)

TABLES = ("tmj",)
_STR = pd.StringDtype(na_value=np.nan)

#: Full-sentence pattern of a "nothing was found" statement (see the module docstring).
NO_FINDING = re.compile(
    r"(?:(?:there (?:are|were|is|was) )?no (?:[a-z-]+ ){0,2}"
    r"(?:findings?|abnormalit(?:y|ies)|patholog(?:y|ies)|lesions?)"
    r"|(?:findings?: )?(?:none|nothing))"
    r"(?: (?:were|was|are|is|have been|has been))?"
    r"(?: (?:detected|found|identified|observed|seen|present))?"
    r"(?: (?:in|on) (?:the )?(?:image|joint|joints|tmj|scan))?"
)


def has_finding(sentence: str) -> bool:
    """Whether a TMJ ``Finding`` sentence reports a finding (see module docstring).

    >>> has_finding("No findings were detected."), has_finding("Condylar flattening, left")
    (False, True)
    """
    norm = " ".join(sentence.lower().split()).rstrip(".! ")
    return NO_FINDING.fullmatch(norm) is None


def flatten(body: dict) -> tuple[str, str]:
    """Check one TMJ body; return ``(image_name, finding)``."""
    image_name = text(require(body, "ImageName"), "$.ImageName")
    results = obj(require(body, "Results"), "$.Results")
    exact_keys(results, "$.Results", ("Finding",))
    return image_name, text(results["Finding"], "$.Results.Finding")


def convert(req: Requests, idx: np.ndarray, problems: Problems) -> pd.DataFrame:
    """Build ``tmj`` from the TMJ responses ``idx``."""
    resp: list[int] = []
    versions: list[str | None] = []
    rows: list[tuple[str, str]] = []
    for i, body in bodies(req, idx, problems, TABLES):
        try:
            version = top_level(body, req.ep[i], req, i, problems, TABLES)
            rows.append(flatten(body))
        except BodyError as err:
            problems.fatal(req, i, TABLES, err)
            continue
        resp.append(i)
        versions.append(version)
    names, findings = (list(c) for c in zip(*rows, strict=True)) if rows else ([], [])
    codes, uniques = pd.factorize(np.asarray(findings, dtype=object))
    flags = np.fromiter((has_finding(u) for u in uniques), dtype=bool, count=len(uniques))
    return build_table(
        "tmj",
        req,
        resp,
        np.ones(len(resp), dtype=np.intp),
        versions,
        {
            "image_name": pd.array(names, dtype=_STR),
            "finding": categorical(codes, list(uniques)),
            "has_finding": flags[codes] if len(codes) else np.zeros(0, dtype=bool),
        },
    )
