"""Findings responses (``/clinical-images``, ``/panos-findings``) → ``findings`` and
``finding_counts``.

``Results`` maps a class name to an array of detections ``{ClassName, TopLeft,
BottomRight}``: one ``findings`` row per detection with ``class_name`` = the map key,
``x0, y0`` = TopLeft and ``x1, y1`` = BottomRight as sent. ``Results`` ``{}`` (nothing
detected) gives zero rows. ``ImageContents`` (clinical findings) maps a class name to
a count: one ``finding_counts`` row per entry, cross-checked against the detections
(a count that differs from the number of detections of its class, a detection class
missing from ``ImageContents``, a ``ClassName`` that differs from its map key, or a
TopLeft that is not above-left of its BottomRight is reported; rows kept). Panoramic
findings carry no ``ImageContents`` and so add no ``finding_counts`` rows: count the
``findings`` rows instead.
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
    fixed,
    integer,
    jp,
    key_text,
    obj,
    pair,
    require,
    short,
    text,
    top_level,
)

TABLES = ("findings", "finding_counts")
_DETECTION = ("ClassName", "TopLeft", "BottomRight")


def flatten(body: dict, image_contents: bool) -> tuple[list, list | None, list]:
    """Check and flatten one findings body.

    Returns
    -------
    detections : list of (class, x0, y0, x1, y1)
    counts : list of (class, count), or None without ImageContents
    notes : list of (path, reason)

    Raises
    ------
    BodyError
        At the first value that is not as the spec shows it.
    """
    results = obj(require(body, "Results"), "$.Results")
    detections = []
    notes = []
    for cls, items in results.items():
        key_text(cls, "$.Results")
        path = jp("$.Results", cls)
        if not isinstance(items, list):
            raise BodyError(path, f"expected an array of detections, got {short(items)}")
        for j, det in enumerate(items):
            dp = f"{path}[{j}]"
            obj(det, dp)
            exact_keys(det, dp, _DETECTION)
            name = text(det["ClassName"], f"{dp}.ClassName")
            x0, y0 = pair(det["TopLeft"], f"{dp}.TopLeft")
            x1, y1 = pair(det["BottomRight"], f"{dp}.BottomRight")
            if name != cls:
                notes.append(
                    (
                        f"{dp}.ClassName",
                        f"ClassName {short(name)} differs from its key; class_name is the key",
                    )
                )
            if x0 > x1 or y0 > y1:
                notes.append((dp, "TopLeft is not above-left of BottomRight; box kept as sent"))
            detections.append((cls, x0, y0, x1, y1))
    counts = None
    if image_contents or "ImageContents" in body:
        contents = obj(require(body, "ImageContents"), "$.ImageContents")
        counts = []
        for cls, n in contents.items():
            key_text(cls, "$.ImageContents")
            counts.append((cls, integer(n, jp("$.ImageContents", cls))))
        found: dict[str, int] = {}
        for d in detections:
            found[d[0]] = found.get(d[0], 0) + 1
        declared = dict(counts)
        for cls in dict.fromkeys([*declared, *found]):
            if declared.get(cls, 0) != found.get(cls, 0):
                notes.append(
                    (
                        jp("$.ImageContents", cls),
                        f"ImageContents counts {declared.get(cls, 0)} {short(cls)} but Results "
                        f"holds {found.get(cls, 0)} detection(s)",
                    )
                )
    return detections, counts, notes


def convert(req: Requests, idx: np.ndarray, problems: Problems) -> dict[str, pd.DataFrame]:
    """Build ``findings`` and ``finding_counts`` from the findings responses ``idx``."""
    det_cols: list[list] = [[], [], [], [], []]
    cnt_cols: list[list] = [[], []]
    det_resp: list[int] = []
    det_n: list[int] = []
    det_v: list[str | None] = []
    det_src: list[str] = []
    cnt_resp: list[int] = []
    cnt_n: list[int] = []
    cnt_v: list[str | None] = []
    cnt_src: list[str] = []
    for i, body in bodies(req, idx, problems, TABLES):
        ep = req.ep[i]
        try:
            version = top_level(body, ep, req, i, problems, TABLES)
            detections, counts, notes = flatten(body, ep.image_contents)
        except BodyError as err:
            problems.fatal(req, i, TABLES, err)
            continue
        for path, reason in notes:
            table = "finding_counts" if path.startswith("$.ImageContents") else "findings"
            problems.note(req, i, table, path, reason)
        for col, values in zip(det_cols, zip(*detections, strict=True), strict=False):
            col.extend(values)
        det_resp.append(i)
        det_n.append(len(detections))
        det_v.append(version)
        det_src.append(ep.source)
        if counts is not None:
            for col, values in zip(cnt_cols, zip(*counts, strict=True), strict=False):
                col.extend(values)
            cnt_resp.append(i)
            cnt_n.append(len(counts))
            cnt_v.append(version)
            cnt_src.append(ep.source)

    cls_codes, cls_cats = pd.factorize(np.asarray(det_cols[0], dtype=object))
    findings = build_table(
        "findings",
        req,
        det_resp,
        det_n,
        det_v,
        {
            "source": fixed(det_src, np.asarray(det_n), "findings", "source"),
            "class_name": categorical(cls_codes, list(cls_cats)),
            **{
                name: np.asarray(col, dtype=np.float64)
                for name, col in zip(("x0", "y0", "x1", "y1"), det_cols[1:], strict=True)
            },
        },
    )
    cls_codes, cls_cats = pd.factorize(np.asarray(cnt_cols[0], dtype=object))
    finding_counts = build_table(
        "finding_counts",
        req,
        cnt_resp,
        cnt_n,
        cnt_v,
        {
            "source": fixed(cnt_src, np.asarray(cnt_n), "finding_counts", "source"),
            "class_name": categorical(cls_codes, list(cls_cats)),
            "count": np.asarray(cnt_cols[1], dtype=np.int32),
        },
    )
    return {"findings": findings, "finding_counts": finding_counts}
