"""Segmentation responses (frontal, pano, occlusogram upper/lower) → ``teeth``.

One row per tooth key and response. Outlines become shapely Polygons in one vectorized
call (``shapely.linearrings`` with ring indices, then ``shapely.polygons``); rings are
closed by shapely when the service leaves them open.

Rules (the spec shows the tooth record ``{missing, points}`` and nothing more):

- ``missing: true`` → ``geometry`` None. The spec says such a tooth carries the single
  pair ``[0, 0]``; other points on a missing tooth are noted as a problem (rows kept).
- ``missing: false`` with fewer than 3 distinct points → geometry None and a problem.
- An invalid outline (self-intersection, spike) is given to ``shapely.make_valid``. If
  the result has exactly one polygonal part, that polygon is kept and ``repaired`` is
  True (lower-dimensional debris such as a collapsed spike has no area and is dropped).
  If it splits into several polygons (a figure-of-eight outline) or into no polygon
  (collinear points), no single tooth area is defensible: geometry None and a problem.
  Taking the largest part would silently change the area. The points stay in the
  responses table.
- Unknown prefixes are kept with null ``tooth_type``/``fdi`` and reported; a key whose
  arch contradicts the occlusogram endpoint (``_lo`` from the upper model) is reported.
"""

from __future__ import annotations

from array import array
from itertools import chain
from operator import itemgetter

import numpy as np
import pandas as pd
import shapely

from dentalkit.convert import _toothkeys
from dentalkit.convert._common import (
    MAX_ABS,
    BodyError,
    KeyIndex,
    Problems,
    Requests,
    bodies,
    boolean,
    build_table,
    compact,
    exact_keys,
    fixed,
    jp,
    key_text,
    obj,
    owners,
    pair,
    reparse,
    require,
    short,
    top_level,
    vocabulary,
)

TABLES = ("teeth",)
_GETM = itemgetter("missing")
_GETP = itemgetter("points")
_POLYGON = 3  # shapely type id
_COLLECTION_IDS = (4, 5, 6, 7)  # Multi* and GeometryCollection


def exact(body: dict) -> list[tuple[str, bool, list[tuple[float, float]]]]:
    """Reference flattener: check every tooth record, return ``(key, missing, points)``.

    Raises
    ------
    BodyError
        At the first value that is not as the spec shows it.
    """
    results = obj(require(body, "Results"), "$.Results")
    out = []
    for key, rec in results.items():
        key_text(key, "$.Results")
        path = jp("$.Results", key)
        obj(rec, path)
        exact_keys(rec, path, ("missing", "points"))
        missing = boolean(rec["missing"], f"{path}.missing")
        pts = rec["points"]
        if not isinstance(pts, list | tuple):
            raise BodyError(
                f"{path}.points", f"expected an array of [x, y] pairs, got {short(pts)}"
            )
        coords = [pair(p, f"{path}.points[{j}]") for j, p in enumerate(pts)]
        out.append((key, missing, coords))
    return out


def _fast(results: dict, n: int, xs: array, ys: array) -> tuple[list[bool], list[int]] | None:
    """Append the coordinates of one ``Results`` map to ``xs``/``ys`` with C-level
    operations; return the missing flags and the points per tooth.

    Returns None, leaving ``xs``/``ys`` unchanged, when anything looks unusual (the caller then
    runs :func:`exact`, which names the problem). A float buffer refuses strings, null,
    arrays and objects; it accepts booleans as 0/1, which the vectorized recheck catches
    (the missing teeth, whose ``[0, 0]`` is expected, are type-checked here).
    """
    try:
        vals = results.values()
        missing = list(map(_GETM, vals))
        pts = list(map(_GETP, vals))
        if (
            sum(map(len, vals)) != 2 * n
            or not set(map(type, missing)) <= {bool}
            or not set(map(type, pts)) <= {list}
        ):
            return None
        counts = list(map(len, pts))
        pairs = list(chain.from_iterable(pts))
        if pairs:
            # zip(strict=True) refuses pairs of unequal length, the unpacking any length
            # other than 2; the float buffers refuse anything but numbers (and booleans)
            px, py = zip(*pairs, strict=True)
            x, y = array("d", px), array("d", py)
        else:
            x, y = array("d"), array("d")
        if True in missing:
            for m, p in zip(missing, pts, strict=True):
                if m and not all(type(v) in (int, float) for q in p for v in q):
                    return None
    except Exception:  # anything odd: the exact path names it
        return None
    xs += x
    ys += y
    return missing, counts


def convert(req: Requests, idx: np.ndarray, problems: Problems) -> pd.DataFrame:
    """Build the ``teeth`` table from the segmentation responses ``idx`` of ``req``."""
    keys = KeyIndex("$.Results")
    xs = array("d")  # x of every point
    ys = array("d")
    npts: list[int] = []  # points per tooth
    miss: list[bool] = []
    code_parts: list[np.ndarray] = []
    resp: list[int] = []
    nteeth: list[int] = []
    versions: list[str | None] = []
    sources: list[str] = []
    notes: list[tuple[int, str, str]] = []
    key_note_cache: dict[tuple[int, str | None], list[tuple[str, str]]] = {}

    for i, body in bodies(req, idx, problems, TABLES):
        ep = req.ep[i]
        try:
            version = top_level(body, ep, req, i, problems, TABLES)
            results = obj(require(body, "Results"), "$.Results")
            klist = list(results)
            codes = keys.codes(klist)
            got = _fast(results, len(klist), xs, ys)
            if got is None:
                recs = exact(body)
                xs.extend([xy[0] for _, _, c in recs for xy in c])
                ys.extend([xy[1] for _, _, c in recs for xy in c])
                got = ([m for _, m, _ in recs], [len(c) for _, _, c in recs])
        except BodyError as err:
            problems.fatal(req, i, TABLES, err)
            continue
        m, c = got
        del body, results  # free the tree before the next parse, so its memory is reused warm
        pos = len(resp)
        resp.append(i)
        nteeth.append(len(klist))
        versions.append(version)
        sources.append(ep.source)
        miss.extend(m)
        npts.extend(c)
        code_parts.append(codes)
        cached = key_note_cache.get((id(codes), ep.arch))
        if cached is None:
            cached = _key_notes(klist, ep.arch)
            key_note_cache[(id(codes), ep.arch)] = cached
        notes.extend((pos, path, reason) for path, reason in cached)

    coords = (
        np.column_stack([np.frombuffer(xs, dtype=np.float64), np.frombuffer(ys, dtype=np.float64)])
        if xs
        else np.zeros((0, 2))
    )
    counts = np.asarray(npts, dtype=np.intp)
    missing = np.array(miss, dtype=bool)
    tooth_rep = owners(nteeth)  # response position of each tooth
    point_tooth = owners(counts)  # tooth of each point

    keep = _recheck(req, problems, resp, tooth_rep, point_tooth, coords, missing)
    for pos, path, reason in notes:
        if keep[pos]:
            problems.note(req, resp[pos], "teeth", path, reason)
    tooth_codes = np.concatenate(code_parts) if code_parts else np.zeros(0, dtype=np.int32)
    if not keep.all():
        keep_teeth = keep[tooth_rep]
        coords = coords[keep_teeth[point_tooth]]
        counts, missing, tooth_codes = (
            counts[keep_teeth],
            missing[keep_teeth],
            tooth_codes[keep_teeth],
        )
        resp = [r for r, k in zip(resp, keep, strict=True) if k]
        versions = [v for v, k in zip(versions, keep, strict=True) if k]
        sources = [s for s, k in zip(sources, keep, strict=True) if k]
        nteeth = np.asarray(nteeth)[keep]
        tooth_rep = owners(nteeth)
        point_tooth = owners(counts)

    cats = keys.categories
    geometry, repaired, tooth_notes = _geometries(coords, counts, missing, point_tooth)
    for t, path_tail, reason in tooth_notes:
        key = cats[tooth_codes[t]]
        problems.note(
            req, resp[tooth_rep[t]], "teeth", f"{jp('$.Results', key)}{path_tail}", reason
        )

    parsed = _toothkeys.parse(cats)
    c = tooth_codes
    return build_table(
        "teeth",
        req,
        resp,
        nteeth,
        versions,
        {
            "source": fixed(sources, np.asarray(nteeth), "teeth", "source"),
            "tooth": compact(c, cats),
            "tooth_type": vocabulary(parsed.type_code[c], "teeth", "tooth_type"),
            "side": vocabulary(parsed.side_code[c], "teeth", "side"),
            "arch": vocabulary(parsed.arch_code[c], "teeth", "arch"),
            "fdi": parsed.fdi_array(c),
            "missing": missing,
            "geometry": geometry,
            "repaired": repaired,
        },
    )


def _key_notes(klist: list[str], arch: str | None) -> list[tuple[str, str]]:
    unknown, wrong = _toothkeys.key_problems(klist, arch)
    notes = [
        (
            jp("$.Results", k),
            f"tooth key {short(k)} is not {{type}}_{{side}}_{{arch}} with a known permanent "
            f"tooth type ({', '.join(_toothkeys.TYPES)}); kept with tooth_type and fdi null",
        )
        for k in unknown
    ]
    notes += [
        (jp("$.Results", k), f"tooth key {short(k)} is not of the {arch!r} arch of this endpoint")
        for k in wrong
    ]
    return notes


def _recheck(
    req: Requests,
    problems: Problems,
    resp: list[int],
    tooth_rep: np.ndarray,
    point_tooth: np.ndarray,
    coords: np.ndarray,
    missing: np.ndarray,
) -> np.ndarray:
    """Vectorized value checks; responses with a suspect value go through :func:`exact`."""
    keep = np.ones(len(resp), dtype=bool)
    if not len(coords):
        return keep
    flat = coords.reshape(-1)
    suspect = np.zeros(0, dtype=np.intp)
    if not np.abs(flat).max() <= MAX_ABS:  # NaN propagates through max
        suspect = np.flatnonzero(~(np.abs(coords) <= MAX_ABS).all(axis=1))
    # a boolean passes the float buffer as 0/1: recheck such values (the missing teeth,
    # whose [0, 0] is expected, were type-checked in the fast path)
    zero_one = ((flat == 0.0) | (flat == 1.0)).reshape(-1, 2).any(axis=1)
    cand = np.flatnonzero(zero_one)
    cand = cand[~missing[point_tooth[cand]]]
    suspect = np.union1d(suspect, cand)
    if not len(suspect):
        return keep
    for pos in np.unique(tooth_rep[point_tooth[suspect]]):
        i = resp[pos]
        try:
            exact(reparse(req, i))
        except BodyError as err:
            problems.fatal(req, i, TABLES, err)
            keep[pos] = False
    return keep


def _geometries(
    coords: np.ndarray, counts: np.ndarray, missing: np.ndarray, point_tooth: np.ndarray
) -> tuple[np.ndarray, np.ndarray, list[tuple[int, str, str]]]:
    """Polygons of all teeth at once; returns geometry (object), repaired (bool), notes."""
    n = len(counts)
    geometry = np.full(n, None, dtype=object)
    repaired = np.zeros(n, dtype=bool)
    notes: list[tuple[int, str, str]] = []
    if n == 0:
        return geometry, repaired, notes
    starts = np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.intp)

    # missing teeth: the spec's [[0, 0]]
    zero_pair = (counts == 1) & missing
    if zero_pair.any():
        zero_pair[zero_pair] = (coords[starts[zero_pair]] == 0.0).all(axis=1)
    for t in np.flatnonzero(missing & ~zero_pair):
        notes.append(
            (int(t), ".points", "missing tooth carries points other than the spec's [[0, 0]]")
        )

    distinct3 = _has_three_distinct(coords, counts, starts, point_tooth)
    for t in np.flatnonzero(~missing & ~distinct3):
        notes.append(
            (
                int(t),
                ".points",
                f"outline has fewer than 3 distinct points ({int(counts[t])} given); geometry None",
            )
        )
    build = ~missing & distinct3
    if not build.any():
        return geometry, repaired, notes
    sel = build[point_tooth]
    ring_ids = owners(counts[build])
    polys = shapely.polygons(shapely.linearrings(coords[sel], indices=ring_ids))
    valid = shapely.is_valid(polys)
    targets = np.flatnonzero(build)
    if not valid.all():
        bad = np.flatnonzero(~valid)
        fixed_geoms, n_parts = _single_polygon(shapely.make_valid(polys[bad]))
        ok = n_parts == 1
        polys[bad[ok]] = fixed_geoms[ok]
        repaired[targets[bad[ok]]] = True
        polys[bad[~ok]] = None
        for b, k in zip(bad[~ok], n_parts[~ok], strict=True):
            what = (
                f"splits into {int(k)} polygons"
                if k > 1
                else "has no area (collinear or collapsed)"
            )
            notes.append(
                (int(targets[b]), ".points", f"outline is invalid and {what}; geometry None")
            )
    geometry[targets] = polys
    return geometry, repaired, notes


def _has_three_distinct(
    coords: np.ndarray, counts: np.ndarray, starts: np.ndarray, point_tooth: np.ndarray
) -> np.ndarray:
    """Whether each tooth has at least 3 distinct points (vectorized, O(points)).

    Nearly every outline has three distinct leading points, which settles it; only the
    others are examined point by point.
    """
    out = np.zeros(len(counts), dtype=bool)
    lead = np.flatnonzero(counts >= 3)
    p0, p1, p2 = (coords[starts[lead] + k] for k in range(3))
    out[lead] = (p0 != p1).any(1) & (p0 != p2).any(1) & (p1 != p2).any(1)
    rest = np.flatnonzero(~out & (counts >= 3))
    if len(rest):
        out[rest] = _distinct_full(coords, counts, starts, rest)
    return out


def _distinct_full(
    coords: np.ndarray, counts: np.ndarray, starts: np.ndarray, teeth: np.ndarray
) -> np.ndarray:
    """At least 3 distinct points, for the outlines ``teeth`` (all with 3 or more points)."""
    n = counts[teeth]
    rows = np.repeat(starts[teeth] - np.concatenate([[0], np.cumsum(n)[:-1]]), n) + np.arange(
        n.sum()
    )
    pts = coords[rows]
    own = owners(n)
    seg = np.concatenate([[0], np.cumsum(n)[:-1]])
    d0 = (pts != pts[seg[own]]).any(axis=1)  # differs from the outline's first point
    npts = len(pts)
    first_other = np.minimum.reduceat(np.where(d0, np.arange(npts), npts), seg)
    has2 = first_other < npts
    p1 = pts[np.minimum(first_other, npts - 1)[own]]
    d1 = d0 & (pts != p1).any(axis=1) & has2[own]
    return np.add.reduceat(d1.astype(np.intp), seg) > 0


def _single_polygon(geoms: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The only polygonal part of each geometry, and how many polygonal parts it has."""
    parts, owner = shapely.get_parts(geoms, return_index=True)
    ids = shapely.get_type_id(parts)
    while np.isin(ids, _COLLECTION_IDS).any():
        nested = np.isin(ids, _COLLECTION_IDS)
        sub, sub_owner = shapely.get_parts(parts[nested], return_index=True)
        parts = np.concatenate([parts[~nested], sub])
        owner = np.concatenate([owner[~nested], owner[nested][sub_owner]])
        ids = shapely.get_type_id(parts)
    is_poly = (ids == _POLYGON) & (shapely.area(parts) > 0)
    n_parts = np.bincount(owner[is_poly], minlength=len(geoms))
    out = np.full(len(geoms), None, dtype=object)
    single = n_parts[owner] == 1
    out[owner[is_poly & single]] = parts[is_poly & single]
    return out, n_parts
