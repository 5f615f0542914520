"""Treatment-length responses (``GET /tle``) → ``tle``.

One row per response: ``p01`` … ``p11`` as sent (read from the responses table's
``options`` column, the JSON of the query parameters, because the response does not
echo them), ``app`` and ``estimate_length_months`` (``estimate_length``, months).
``patient_id`` and ``timestamp`` may be null (a /tle call need not belong to a session).
A parameter given as a JSON number is kept as the text the query carried (``12`` →
``"12"``). A negative estimate is kept and reported.
"""

from __future__ import annotations

import math

import numpy as np
import orjson
import pandas as pd

from dentalkit.convert._common import (
    BodyError,
    Problems,
    Requests,
    bodies,
    build_table,
    categorical,
    number,
    require,
    short,
    text,
    top_level,
    type_name,
)
from dentalkit.endpoints import TLE_PARAMETERS

TABLES = ("tle",)
PARAMS = tuple(q.name for q in TLE_PARAMETERS)


def parameters(options: object) -> list[str]:
    """The eleven query parameters of a /tle row, as strings, from its ``options``."""
    if isinstance(options, str | bytes):
        try:
            options = orjson.loads(options)
        except orjson.JSONDecodeError as exc:
            raise BodyError("options", f"options is not valid JSON ({exc})") from None
    if not isinstance(options, dict):
        raise BodyError(
            "options",
            f"a /tle row needs its query parameters p01…p11 in options, got {short(options)}",
        )
    out = []
    for p in PARAMS:
        if p not in options:
            raise BodyError(f"options.{p}", f"query parameter {p} is missing from options")
        v = options[p]
        if isinstance(v, bool) or not isinstance(v, str | int | float):
            raise BodyError(f"options.{p}", f"expected a string, got a {type_name(v)} {short(v)}")
        if isinstance(v, float) and not math.isfinite(v):
            raise BodyError(f"options.{p}", f"expected a string, got {v}")
        out.append(text(str(v), f"options.{p}", allow_empty=True))
    return out


def flatten(body: dict) -> tuple[str, float]:
    """Check one /tle body; return ``(app, estimate_length)``."""
    app = text(require(body, "app"), "$.app")
    return app, number(require(body, "estimate_length"), "$.estimate_length")


def convert(req: Requests, idx: np.ndarray, problems: Problems) -> pd.DataFrame:
    """Build ``tle`` from the /tle responses ``idx``."""
    resp: list[int] = []
    versions: list[str | None] = []
    params: list[list[str]] = []
    apps: list[str] = []
    months: list[float] = []
    for i, body in bodies(req, idx, problems, TABLES):
        try:
            version = top_level(body, req.ep[i], req, i, problems, TABLES)
            app, est = flatten(body)
            ps = parameters(req.options[i] if req.options is not None else None)
        except BodyError as err:
            problems.fatal(req, i, TABLES, err)
            continue
        if est < 0:
            problems.note(
                req, i, "tle", "$.estimate_length", f"estimate_length {est!r} is negative"
            )
        resp.append(i)
        versions.append(version)
        params.append(ps)
        apps.append(app)
        months.append(est)
    cols: dict[str, object] = {}
    by_param = list(zip(*params, strict=True)) if params else [()] * len(PARAMS)
    for p, values in zip(PARAMS, by_param, strict=True):
        codes, uniques = pd.factorize(np.asarray(values, dtype=object))
        cols[p] = categorical(codes, list(uniques))
    codes, uniques = pd.factorize(np.asarray(apps, dtype=object))
    cols["app"] = categorical(codes, list(uniques))
    cols["estimate_length_months"] = np.asarray(months, dtype=np.float64)
    return build_table("tle", req, resp, np.ones(len(resp), dtype=np.intp), versions, cols)
