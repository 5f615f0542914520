"""Occlusogram keypoint responses → ``tooth_keypoints`` and ``arch_points``.

``Teeth`` maps a tooth key to ``{missing, centroid, tNN…}``: one ``tooth_keypoints`` row
per point (``centroid`` and each ``tNN``, in the order sent). A missing tooth carries
``missing: true`` and a centroid (spec); its centroid is kept as sent — filter on
``missing`` before using positions. ``CatenaryPoints`` maps ``tNN`` to ``[x, y]``: one
``arch_points`` row each, with ``index`` = NN. ``arch`` comes from the endpoint.

The meaning of the ``tNN`` keys is not shown in the spec; point names other than
``centroid`` and ``t<digits>`` are kept and reported. A catenary key without its
integer cannot be placed on the arch and makes the response malformed.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd

from dentalkit.convert import _toothkeys
from dentalkit.convert._common import (
    BodyError,
    Problems,
    Requests,
    bodies,
    boolean,
    build_table,
    categorical,
    fixed,
    jp,
    key_text,
    obj,
    pair,
    require,
    short,
    top_level,
)

TABLES = ("tooth_keypoints", "arch_points")
_POINT = re.compile(r"t[0-9]+")
_CATENARY = re.compile(r"t([0-9]+)")
_INT16_MAX = 32767


def flatten(body: dict) -> tuple[list, list]:
    """Check and flatten one body.

    Returns
    -------
    teeth : list of (tooth key, missing, list of (point, x, y))
    catenary : list of (point key, index, x, y)

    Raises
    ------
    BodyError
        At the first value that is not as the spec shows it.
    """
    teeth_map = obj(require(body, "Teeth"), "$.Teeth")
    cat_map = obj(require(body, "CatenaryPoints"), "$.CatenaryPoints")
    teeth = []
    for key, rec in teeth_map.items():
        key_text(key, "$.Teeth")
        path = jp("$.Teeth", key)
        obj(rec, path)
        if "missing" not in rec:
            raise BodyError(f"{path}.missing", "required field 'missing' is missing")
        if "centroid" not in rec:
            raise BodyError(f"{path}.centroid", "required field 'centroid' is missing")
        missing = boolean(rec["missing"], f"{path}.missing")
        points = []
        for name, value in rec.items():
            if name == "missing":
                continue
            key_text(name, path)
            x, y = pair(value, jp(path, name))
            points.append((name, x, y))
        teeth.append((key, missing, points))
    catenary = []
    for key, value in cat_map.items():
        key_text(key, "$.CatenaryPoints")
        path = jp("$.CatenaryPoints", key)
        m = _CATENARY.fullmatch(key)
        if m is None or int(m[1]) > _INT16_MAX:
            raise BodyError(path, f"catenary point key {short(key)} is not t<integer index>")
        x, y = pair(value, path)
        catenary.append((key, int(m[1]), x, y))
    return teeth, catenary


def convert(req: Requests, idx: np.ndarray, problems: Problems) -> dict[str, pd.DataFrame]:
    """Build ``tooth_keypoints`` and ``arch_points`` from the keypoint responses ``idx``."""
    tk = _Columns()
    ap = _Columns()
    for i, body in bodies(req, idx, problems, TABLES):
        ep = req.ep[i]
        try:
            version = top_level(body, ep, req, i, problems, TABLES)
            teeth, catenary = flatten(body)
        except BodyError as err:
            problems.fatal(req, i, TABLES, err)
            continue
        n = 0
        for key, missing, points in teeth:
            for name, x, y in points:
                tk.add(key, missing, name, x, y)
                if name != "centroid" and not _POINT.fullmatch(name):
                    problems.note(
                        req,
                        i,
                        "tooth_keypoints",
                        jp(jp("$.Teeth", key), name),
                        f"point {short(name)} is neither 'centroid' nor t<digits>",
                    )
            n += len(points)
        unknown, wrong = _toothkeys.key_problems([t[0] for t in teeth], ep.arch)
        for key in unknown:
            problems.note(
                req,
                i,
                "tooth_keypoints",
                jp("$.Teeth", key),
                f"tooth key {short(key)} is not a known permanent tooth; fdi null",
            )
        for key in wrong:
            problems.note(
                req,
                i,
                "tooth_keypoints",
                jp("$.Teeth", key),
                f"tooth key {short(key)} is not of the {ep.arch!r} arch of this endpoint",
            )
        tk.response(i, n, version, ep.arch)
        for key, index, x, y in catenary:
            ap.add(key, index, None, x, y)
        ap.response(i, len(catenary), version, ep.arch)
    return {
        "tooth_keypoints": tk.keypoints_table(req),
        "arch_points": ap.arch_table(req),
    }


class _Columns:
    """Flat column lists of one table (no per-row dicts)."""

    def __init__(self) -> None:
        self.a: list = []
        self.b: list = []
        self.c: list = []
        self.x: list[float] = []
        self.y: list[float] = []
        self.resp: list[int] = []
        self.counts: list[int] = []
        self.versions: list[str | None] = []
        self.arches: list[str] = []

    def add(self, a, b, c, x: float, y: float) -> None:
        self.a.append(a)
        self.b.append(b)
        self.c.append(c)
        self.x.append(x)
        self.y.append(y)

    def response(self, i: int, n: int, version: str | None, arch: str) -> None:
        self.resp.append(i)
        self.counts.append(n)
        self.versions.append(version)
        self.arches.append(arch)

    def _common(self, table: str) -> tuple[np.ndarray, dict]:
        counts = np.asarray(self.counts, dtype=np.intp)
        return counts, {"arch": fixed(self.arches, counts, table, "arch")}

    def keypoints_table(self, req: Requests) -> pd.DataFrame:
        counts, cols = self._common("tooth_keypoints")
        tooth_codes, tooth_cats = pd.factorize(np.asarray(self.a, dtype=object))
        point_codes, point_cats = pd.factorize(np.asarray(self.c, dtype=object))
        parsed = _toothkeys.parse(list(tooth_cats))
        cols |= {
            "tooth": categorical(tooth_codes, list(tooth_cats)),
            "fdi": parsed.fdi_array(tooth_codes),
            "missing": np.asarray(self.b, dtype=bool),
            "point": categorical(point_codes, list(point_cats)),
            "x": np.asarray(self.x, dtype=np.float64),
            "y": np.asarray(self.y, dtype=np.float64),
        }
        return build_table("tooth_keypoints", req, self.resp, counts, self.versions, cols)

    def arch_table(self, req: Requests) -> pd.DataFrame:
        counts, cols = self._common("arch_points")
        point_codes, point_cats = pd.factorize(np.asarray(self.a, dtype=object))
        cols |= {
            "point": categorical(point_codes, list(point_cats)),
            "index": np.asarray(self.b, dtype=np.int16),
            "x": np.asarray(self.x, dtype=np.float64),
            "y": np.asarray(self.y, dtype=np.float64),
        }
        return build_table("arch_points", req, self.resp, counts, self.versions, cols)
