"""Landmark responses (``/ceph-lateral-points``, ``/ceph-frontal-points``) → ``landmarks``.

Speed matters here (a cohort is 10^5 sessions × 169 landmarks), so each body is
flattened with C-level operations (``map`` of item getters into ``array.array``
float buffers) while it is checked, and the result is validated with vectorized numpy
tests. Whenever the fast path meets anything unusual it hands the response to
:func:`exact`, the plain reference flattener that checks every value and names the
JSON path of the first bad one. A float buffer accepts booleans as 0.0/1.0, so a
coordinate equal to exactly 0 or 1 sends its response to :func:`exact` too.
"""

from __future__ import annotations

import re
from array import array
from collections.abc import Mapping
from operator import itemgetter

import numpy as np
import pandas as pd

from dentalkit.convert._common import (
    MAX_ABS,
    BodyError,
    KeyIndex,
    Problems,
    Requests,
    bodies,
    build_table,
    categorical,
    compact,
    exact_keys,
    integer,
    jp,
    key_text,
    number,
    obj,
    reparse,
    require,
    short,
    small,
    top_level,
    vocabulary,
)

TABLES = ("landmarks",)
_FIELDS = ("x_coordinate", "y_coordinate")
_GETX = itemgetter("x_coordinate")
_GETY = itemgetter("y_coordinate")
_VIEWS = ("lateral", "frontal")
#: Key forms the spec shows per view ("Landmark response").
_KEY_FORMS = {
    "lateral": (re.compile(r"Later_[0-9]+"), "Later_<n>"),
    "frontal": (re.compile(r"(?:Front|SasFront)_[0-9]+"), "Front_<n> or SasFront_<n>"),
}


def exact(body: dict) -> tuple[list[str], list[float], list[float]]:
    """Reference flattener: check every landmark, return keys, x and y.

    Raises
    ------
    BodyError
        At the first value that is not as the spec shows it.
    """
    results = obj(require(body, "Results"), "$.Results")
    keys: list[str] = []
    xs: list[float] = []
    ys: list[float] = []
    for key, rec in results.items():
        key_text(key, "$.Results")
        path = jp("$.Results", key)
        obj(rec, path)
        exact_keys(rec, path, _FIELDS)
        xs.append(number(rec["x_coordinate"], f"{path}.x_coordinate"))
        ys.append(number(rec["y_coordinate"], f"{path}.y_coordinate"))
        keys.append(key)
    return keys, xs, ys


def _fast(results: dict, n: int, xs: array, ys: array) -> bool:
    """Append the x and y of one ``Results`` map to ``xs``/``ys`` with C-level operations.

    Returns False, leaving ``xs``/``ys`` unchanged, when anything is unusual (the caller
    then runs :func:`exact`, which names the problem): a record that is not an object
    with exactly the two coordinate keys, or a value a float buffer refuses (a string,
    null, an array, an object, an integer beyond float range). Booleans pass a float
    buffer as 0/1 and are caught by the vectorized recheck.
    """
    try:
        vals = results.values()
        x = array("d", list(map(_GETX, vals)))
        y = array("d", list(map(_GETY, vals)))
        if sum(map(len, vals)) != 2 * n:
            return False
    except Exception:  # anything odd: the exact path names it
        return False
    xs += x
    ys += y
    return True


def convert(
    req: Requests,
    idx: np.ndarray,
    problems: Problems,
    names: Mapping[str, Mapping[str, str]],
) -> pd.DataFrame:
    """Build the ``landmarks`` table from the landmark responses ``idx`` of ``req``.

    Parameters
    ----------
    names : mapping
        ``view → {key → anatomical name}`` (the landmark map).
    """
    keys = KeyIndex("$.Results")
    xs = array("d")
    ys = array("d")
    resp: list[int] = []
    counts: list[int] = []
    versions: list[str | None] = []
    views: list[int] = []
    code_parts: list[np.ndarray] = []
    name_parts: list[np.ndarray] = []
    name_cats: dict[str, int] = {}
    notes: list[tuple[int, str, str]] = []  # (position in resp, path, reason)
    per_template: dict[tuple[int, str], tuple[np.ndarray, list[str]]] = {}
    lost = False  # a response was dropped: some categories may be unused

    for i, body in bodies(req, idx, problems, TABLES):
        ep = req.ep[i]
        try:
            version = top_level(body, ep, req, i, problems, TABLES)
            npp = integer(require(body, "NumberOfPredictedPoints"), "$.NumberOfPredictedPoints")
            results = obj(require(body, "Results"), "$.Results")
            klist = list(results)
            codes = keys.codes(klist)
            n = len(klist)
            if not _fast(results, n, xs, ys):
                _, x2, y2 = exact(body)
                xs.extend(x2)
                ys.extend(y2)
        except BodyError as err:
            problems.fatal(req, i, TABLES, err)
            lost = True
            continue
        known = per_template.get((id(codes), ep.view))
        if known is None:  # once per distinct key sequence and view
            known = _template(klist, ep.view, names.get(ep.view, {}), name_cats)
            per_template[(id(codes), ep.view)] = known
        name_codes, odd = known
        del body, results  # free the tree before the next parse, so its memory is reused warm
        pos = len(resp)
        resp.append(i)
        counts.append(n)
        versions.append(version)
        views.append(_VIEWS.index(ep.view))
        code_parts.append(codes)
        name_parts.append(name_codes)
        if npp != n:
            notes.append(
                (
                    pos,
                    "$.NumberOfPredictedPoints",
                    f"NumberOfPredictedPoints is {npp} but {n} landmarks are present",
                )
            )
        if odd:
            notes.append(
                (
                    pos,
                    "$.Results",
                    f"landmark key(s) {', '.join(map(short, odd[:5]))}"
                    f"{' …' if len(odd) > 5 else ''} are not of the form "
                    f"{_KEY_FORMS[ep.view][1]} of a {ep.view} response; name left null",
                )
            )

    x = np.frombuffer(xs, dtype=np.float64) if xs else np.zeros(0)
    y = np.frombuffer(ys, dtype=np.float64) if ys else np.zeros(0)
    n_rows = np.asarray(counts, dtype=np.intp)
    keep = _recheck(req, problems, resp, n_rows, x, y)
    for pos, path, reason in notes:
        if keep[pos]:
            problems.note(req, resp[pos], "landmarks", path, reason)

    lm_codes = np.concatenate(code_parts) if code_parts else np.zeros(0, dtype=np.int32)
    nm_codes = np.concatenate(name_parts) if name_parts else np.zeros(0, dtype=np.int32)
    view_of_resp = np.asarray(views, dtype=np.int8)
    if not keep.all():
        lost = True
        rows = np.repeat(keep, n_rows)
        x, y, lm_codes, nm_codes = x[rows], y[rows], lm_codes[rows], nm_codes[rows]
        resp = [r for r, k in zip(resp, keep, strict=True) if k]
        versions = [v for v, k in zip(versions, keep, strict=True) if k]
        view_of_resp = view_of_resp[keep]
        n_rows = n_rows[keep]
    cats = keys.categories
    names_list = list(name_cats)
    if lost:
        landmark, name = compact(lm_codes, cats), compact(nm_codes, names_list)
    else:
        landmark = categorical(small(lm_codes, len(cats)), cats)
        name = categorical(small(nm_codes, len(names_list)), names_list)
    return build_table(
        "landmarks",
        req,
        resp,
        n_rows,
        versions,
        {
            "view": vocabulary(np.repeat(view_of_resp, n_rows), "landmarks", "view"),
            "landmark": landmark,
            "name": name,
            "x": x,
            "y": y,
        },
    )


def _template(
    klist: list[str], view: str, mapping: Mapping[str, str], name_cats: dict[str, int]
) -> tuple[np.ndarray, list[str]]:
    """Name codes of a key sequence for a view, and its keys of an unexpected form."""
    codes = np.empty(len(klist), dtype=np.int32)
    for j, key in enumerate(klist):
        nm = mapping.get(key)
        codes[j] = name_cats.setdefault(nm, len(name_cats)) if isinstance(nm, str) and nm else -1
    form = _KEY_FORMS[view][0]
    return codes, [k for k in klist if not form.fullmatch(k)]


def _recheck(
    req: Requests,
    problems: Problems,
    resp: list[int],
    counts: np.ndarray,
    x: np.ndarray,
    y: np.ndarray,
) -> np.ndarray:
    """Vectorized value checks; responses with a suspect value go through :func:`exact`.

    Returns the mask of responses to keep.
    """
    keep = np.ones(len(resp), dtype=bool)
    if not len(x):
        return keep
    suspect = ~(np.abs(x) <= MAX_ABS) | ~(np.abs(y) <= MAX_ABS)
    suspect |= (x == 0.0) | (x == 1.0) | (y == 0.0) | (y == 1.0)
    if not suspect.any():
        return keep
    ends = np.cumsum(counts)
    for pos in np.unique(np.searchsorted(ends, np.flatnonzero(suspect), side="right")):
        i = resp[pos]
        try:
            exact(reparse(req, i))
        except BodyError as err:
            problems.fatal(req, i, TABLES, err)
            keep[pos] = False
    return keep
