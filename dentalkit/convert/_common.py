"""Shared plumbing of the converters: request rows, body parsing, strict value checks,
the problems collector and the construction of typed tables.

Nothing here does I/O. The per-kind modules (``_landmarks``, ``_teeth`` …) flatten
bodies into flat arrays and call :func:`build_table`, which adds the session key and
checks the result against :mod:`dentalkit.convert.schemas`.
"""

from __future__ import annotations

import gc
import math
import re
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from numbers import Integral, Real

import numpy as np
import orjson
import pandas as pd

from dentalkit.convert import schemas
from dentalkit.endpoints import Endpoint, Kind, get_endpoint
from dentalkit.errors import EchoMismatchWarning, InputError, ResponseFormatError

#: Largest magnitude accepted for any number in a response body. Pixel coordinates of
#: dental images are below 10^5; a larger value is taken as corruption (a "huge number")
#: rather than silently carried into a table.
MAX_ABS = 1e6
#: Longest string accepted where a response string becomes a table value or key.
MAX_TEXT = 4096

_STR = pd.StringDtype(na_value=np.nan)
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class BodyError(Exception):
    """A response body that is not shaped as the spec says (internal; becomes a
    :class:`~dentalkit.errors.ResponseFormatError` or a problems row)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(path, reason)
        self.path = path
        self.reason = reason


# --------------------------------------------------------------------------- paths and values


def short(value: object, limit: int = 60) -> str:
    """``repr`` of a value, cut to ``limit`` characters (1 MB strings stay out of messages)."""
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def jp(base: str, key: object) -> str:
    """JSON path of ``key`` under ``base``: ``$.Results.Later_12`` or ``$.Results['a b']``."""
    if isinstance(key, int):
        return f"{base}[{key}]"
    if isinstance(key, str) and _IDENT.match(key) and len(key) <= 60:
        return f"{base}.{key}"
    return f"{base}[{short(key)}]"


def type_name(value: object) -> str:
    """JSON name of a Python value's type, for messages."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, Real):
        return "number"
    return type(value).__name__


def number(value: object, path: str) -> float:
    """A finite JSON number of magnitude at most :data:`MAX_ABS`, as float."""
    t = type(value)
    if (t is float and -MAX_ABS <= value <= MAX_ABS) or (t is int and -MAX_ABS <= value <= MAX_ABS):
        return float(value)  # the common case; NaN fails the comparison
    if isinstance(value, bool | np.bool_) or not isinstance(value, Real):
        raise BodyError(path, f"expected a number, got a {type_name(value)} {short(value)}")
    if isinstance(value, Integral):
        if abs(value) > MAX_ABS:
            raise BodyError(path, f"number {short(value)} exceeds ±{MAX_ABS:g}: corrupted value")
        return float(value)
    v = float(value)
    if not math.isfinite(v):
        raise BodyError(path, f"expected a finite number, got {v}")
    if abs(v) > MAX_ABS:
        raise BodyError(path, f"number {v!r} exceeds ±{MAX_ABS:g}: corrupted value")
    return v


def integer(value: object, path: str, *, minimum: int = 0) -> int:
    """A JSON integer in ``[minimum, MAX_ABS]`` (a float with an integral value is refused)."""
    if type(value) is int and minimum <= value <= MAX_ABS:
        return value
    if isinstance(value, bool | np.bool_) or not isinstance(value, Integral):
        raise BodyError(path, f"expected an integer, got a {type_name(value)} {short(value)}")
    if not minimum <= value <= MAX_ABS:
        raise BodyError(path, f"integer {short(value)} outside [{minimum}, {MAX_ABS:g}]")
    return int(value)


def pair(value: object, path: str) -> tuple[float, float]:
    """An ``[x, y]`` pair of finite numbers."""
    if not isinstance(value, list | tuple) or len(value) != 2:
        what = (
            f"an array of {len(value)}"
            if isinstance(value, list | tuple)
            else f"a {type_name(value)}"
        )
        raise BodyError(path, f"expected an [x, y] pair of numbers, got {what} {short(value)}")
    return number(value[0], f"{path}[0]"), number(value[1], f"{path}[1]")


def text(value: object, path: str, *, allow_empty: bool = False) -> str:
    """A string of at most :data:`MAX_TEXT` characters (non-empty unless allowed)."""
    if not isinstance(value, str):
        raise BodyError(path, f"expected a string, got a {type_name(value)} {short(value)}")
    if len(value) > MAX_TEXT:
        raise BodyError(
            path, f"string of {len(value)} characters exceeds {MAX_TEXT}: corrupted value"
        )
    if not value and not allow_empty:
        raise BodyError(path, "expected a non-empty string, got ''")
    return value


def obj(value: object, path: str) -> dict:
    """A JSON object."""
    if not isinstance(value, dict):
        raise BodyError(path, f"expected an object, got a {type_name(value)} {short(value)}")
    return value


def boolean(value: object, path: str) -> bool:
    """A JSON boolean (``0``/``1`` are refused)."""
    if not isinstance(value, bool):
        raise BodyError(path, f"expected a boolean, got a {type_name(value)} {short(value)}")
    return value


def key_text(key: object, base: str) -> str:
    """A map key used as a table value: a string of at most :data:`MAX_TEXT` characters."""
    if not isinstance(key, str):
        raise BodyError(jp(base, key), f"map key {short(key)} is not a string")
    if not key or len(key) > MAX_TEXT:
        raise BodyError(jp(base, key), f"map key of {len(key)} characters: corrupted key")
    return key


def exact_keys(record: dict, path: str, required: Sequence[str]) -> None:
    """``record`` has exactly the keys ``required``."""
    keys = set(record)
    if keys == set(required):
        return
    missing = [k for k in required if k not in keys]
    if missing:
        raise BodyError(jp(path, missing[0]), f"required field {missing[0]!r} is missing")
    extra = sorted(map(short, keys - set(required)))
    raise BodyError(
        path, f"unexpected field(s) {', '.join(extra)}; expected exactly {{{', '.join(required)}}}"
    )


def require(body: dict, name: str) -> object:
    """The top-level field ``name`` of a body, or a :class:`BodyError` naming it."""
    try:
        return body[name]
    except KeyError:
        raise BodyError(f"$.{name}", f"required field {name!r} is missing") from None


@contextmanager
def gc_paused() -> Iterator[None]:
    """Pause the cyclic garbage collector while bodies are flattened.

    A parsed body is a tree of thousands of lists and dicts that reference counting
    frees as soon as the body is flattened; it holds no reference cycles. Left running,
    the cyclic collector repeatedly walks these short-lived trees (and, once they reach
    the old generation, every object of the interpreter) and finds nothing: measured at
    up to half of the conversion time. The previous state is restored on exit, also on
    error.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


# --------------------------------------------------------------------------- requests


@dataclass
class Requests:
    """The successful rows of a responses table, resolved (arrays aligned)."""

    row: np.ndarray  # positional row in the responses table
    ep: list[Endpoint]
    patient_id: np.ndarray  # object: str or None
    timestamp: np.ndarray  # object: str or None
    session_time: pd.DatetimeIndex  # ns, UTC
    body: np.ndarray  # object: str / bytes / dict
    options: np.ndarray | None  # object, or None when the column is absent

    def of_kind(self, kind: Kind) -> np.ndarray:
        """Indices (into these arrays) of the requests whose endpoint has ``kind``."""
        return np.fromiter((i for i, e in enumerate(self.ep) if e.kind is kind), dtype=np.intp)


class Problems:
    """Collects problems; in raise mode, raises on the first fatal one.

    Fatal problems (a malformed body) drop the whole response; notes (data the service
    sent that contradicts itself, an unknown tooth prefix …) keep the rows.
    """

    def __init__(self, errors: str) -> None:
        if errors not in ("raise", "collect"):
            raise InputError(f"errors must be 'raise' or 'collect', got {errors!r}")
        self.collect = errors == "collect"
        self.records: list[tuple | None] = []
        self._echo: dict[int, str] = {}  # row → first echo mismatch message
        self._notes: dict[int, list[int]] = {}  # row → positions of its notes in records

    def _who(self, req: Requests, i: int) -> tuple:
        return req.ep[i].name, req.patient_id[i], req.timestamp[i], int(req.row[i])

    def fatal(self, req: Requests, i: int, tables: Sequence[str], err: BodyError) -> None:
        """A malformed body: raise, or record it against ``tables`` and drop the response."""
        ep, pid, ts, row = self._who(req, i)
        if not self.collect:
            raise ResponseFormatError(
                err.reason, endpoint=ep, patient_id=pid, timestamp=ts, path=err.path, row=row
            )
        for k in self._notes.pop(row, ()):  # notes of a dropped response no longer apply
            self.records[k] = None
        self._echo.pop(row, None)
        for t in tables:
            self.records.append((t, ep, pid, ts, row, err.path, f"{err.reason} (response dropped)"))

    def note(self, req: Requests, i: int, table: str, path: str, reason: str) -> None:
        """Data that contradicts the spec or itself; the rows are kept."""
        ep, pid, ts, row = self._who(req, i)
        self._notes.setdefault(row, []).append(len(self.records))
        self.records.append((table, ep, pid, ts, row, path, f"{reason} (rows kept)"))

    def echo(self, req: Requests, i: int, tables: Sequence[str], path: str, reason: str) -> None:
        """An echo that differs from the request: noted, and warned about once per call."""
        for t in tables:
            self.note(req, i, t, path, reason)
        self._echo.setdefault(int(req.row[i]), f"row {int(req.row[i])}: {reason}")

    def bad_row(self, row: int, endpoint, pid, ts, field: str, reason: str) -> None:
        """A responses-table row that cannot be converted (not the body's fault)."""
        if not self.collect:
            raise InputError(f"responses row {row}: {field}: {reason}")
        ep = endpoint if isinstance(endpoint, str) else None
        pid = pid if isinstance(pid, str) else None
        ts = ts if isinstance(ts, str) else None
        self.records.append(("responses", ep, pid, ts, row, field, f"{reason} (row skipped)"))

    def frame(self, tables: Sequence[str] | None = None) -> pd.DataFrame:
        """The problems table (schema ``problems``), in the order of the responses rows."""
        recs = [r for r in self.records if r is not None]
        if tables is not None:
            keep = {*tables, "responses"}
            recs = [r for r in recs if r[0] in keep]
        if not recs:
            return schemas.empty("problems")
        recs.sort(key=lambda r: r[4])  # by responses row; stable: order of discovery kept
        cols = list(zip(*recs, strict=True))
        df = pd.DataFrame(
            {
                name: pd.array(list(col), dtype="Int64" if name == "row" else _STR)
                for name, col in zip(schemas.SCHEMAS["problems"].names, cols, strict=True)
            }
        )
        schemas.check(df, "problems")
        return df

    def warn(self, stacklevel: int = 3) -> None:
        """Emit one :class:`EchoMismatchWarning` summarising the echo mismatches."""
        if self._echo:
            n = len(self._echo)
            first = self._echo[min(self._echo)]
            warnings.warn(
                f"{n} response(s) echo a PatientID/TimeStamp that differs from the request; "
                f"the tables keep the request values (see the problems table). First: {first}",
                EchoMismatchWarning,
                stacklevel=stacklevel,
            )


_REQUIRED_COLUMNS = ("endpoint", "patient_id", "timestamp", "body")


def prepare(responses: pd.DataFrame, problems: Problems) -> Requests:
    """Select the successful rows of a responses table and resolve their endpoints.

    Rows whose ``status_code`` is present and not 200, or whose ``error`` is set, are
    failures of fetching (the fetcher lists them) and are skipped without a problem.
    """
    if not isinstance(responses, pd.DataFrame):
        raise InputError(
            f"responses must be a pandas DataFrame (the responses table), got {type(responses).__name__}"
        )
    missing = [c for c in _REQUIRED_COLUMNS if c not in responses.columns]
    if missing:
        raise InputError(
            f"the responses table lacks column(s) {missing}; it needs at least "
            f"{list(_REQUIRED_COLUMNS)} (see docs/data-contract.md)"
        )
    n = len(responses)
    ok = np.ones(n, dtype=bool)
    if "status_code" in responses.columns:
        sc = pd.to_numeric(responses["status_code"], errors="coerce")
        ok &= (responses["status_code"].isna() | (sc == 200)).to_numpy(bool)
    if "error" in responses.columns:
        err = responses["error"]
        ok &= (err.isna() | (err.astype(object) == "")).to_numpy(bool)

    endpoint = responses["endpoint"].to_numpy(object)
    pid = responses["patient_id"].to_numpy(object)
    ts = responses["timestamp"].to_numpy(object)
    pid_null = responses["patient_id"].isna().to_numpy(bool)
    ts_null = responses["timestamp"].isna().to_numpy(bool)

    # resolve each distinct endpoint value once; check the keys with array operations
    cand = np.flatnonzero(ok)
    cache: dict[str, Endpoint | str] = {}
    try:
        codes, uniques = pd.factorize(endpoint[cand])
        found = [_resolve(u, cache) for u in uniques]
    except TypeError:  # unhashable values in the endpoint column
        found = [_resolve(v, {}) for v in endpoint[cand]]
        codes = np.arange(len(cand))
    found.append("endpoint is null; expected a registry name, path or slug")  # code -1
    is_ep = np.array([isinstance(e, Endpoint) for e in found])[codes]
    is_image = np.array([isinstance(e, Endpoint) and e.is_image for e in found])[codes]
    bad = ~is_ep
    for values, nulls, column in ((pid, pid_null, "patient_id"), (ts, ts_null, "timestamp")):
        nul = nulls[cand]
        bad |= nul & is_image
        if not isinstance(responses[column].dtype, pd.StringDtype):
            bad |= ~nul & ~np.fromiter(
                (isinstance(v, str) for v in values[cand]), dtype=bool, count=len(cand)
            )
    for k in np.flatnonzero(bad):  # rare: say exactly what is wrong with each row
        r = int(cand[k])
        ep = found[codes[k]]
        if isinstance(ep, str):
            problems.bad_row(r, None, pid[r], ts[r], "endpoint", ep)
            continue
        why = _bad_key(pid[r], pid_null[r], ep, "patient_id") or _bad_key(
            ts[r], ts_null[r], ep, "timestamp"
        )
        problems.bad_row(r, ep.name, pid[r], ts[r], *why)
    keep = ~bad
    rows = cand[keep]
    eps = [found[c] for c in codes[keep].tolist()]

    idx = rows.astype(np.intp)
    pid_k = np.where(pid_null[idx], None, pid[idx]).astype(object)
    ts_k = np.where(ts_null[idx], None, ts[idx]).astype(object)
    options = responses["options"].to_numpy(object)[idx] if "options" in responses.columns else None
    return Requests(
        row=idx,
        ep=eps,
        patient_id=pid_k,
        timestamp=ts_k,
        session_time=parse_session_times(ts_k),
        body=responses["body"].to_numpy(object)[idx],
        options=options,
    )


def _resolve(name: object, cache: dict[str, Endpoint | str]) -> Endpoint | str:
    """The endpoint called ``name``, or the reason it is not one."""
    if not isinstance(name, str):
        return f"endpoint must be a registry name, path or slug, got {short(name)}"
    found = cache.get(name)
    if found is None:
        try:
            found = get_endpoint(name)
        except KeyError as exc:
            found = str(exc.args[0])
        cache[name] = found
    return found


def _bad_key(value: object, is_null: bool, ep: Endpoint, field: str) -> tuple[str, str] | None:
    if is_null:
        if ep.is_image:
            return field, f"{field} is null; every image request has one (the session key)"
        return None
    if not isinstance(value, str):
        return field, f"{field} must be a string, got {type(value).__name__} {short(value)}"
    return None


def parse_session_times(timestamps: np.ndarray) -> pd.DatetimeIndex:
    """Parse ISO 8601 timestamps (naive = UTC) to ``datetime64[ns, UTC]``; NaT otherwise.

    Only the unique strings are parsed (``pandas.to_datetime`` with
    ``format="ISO8601"``, vectorized). Values outside the ``datetime64[ns]`` range
    (before 1677 or after 2262) are NaT too.
    """
    codes, uniques = pd.factorize(timestamps)
    parsed = pd.to_datetime(
        pd.Index(uniques, dtype=object), format="ISO8601", utc=True, errors="coerce"
    )
    ok = (parsed >= _NS_MIN) & (parsed <= _NS_MAX)
    ns = np.full(len(uniques) + 1, np.datetime64("NaT", "ns"))  # last slot: code -1
    ns[:-1][ok] = parsed[ok].as_unit("ns").tz_localize(None).to_numpy()
    return pd.DatetimeIndex(ns[codes]).tz_localize("UTC")


_NS_MIN = pd.Timestamp("1677-09-22", tz="UTC")
_NS_MAX = pd.Timestamp("2262-04-11", tz="UTC")


# --------------------------------------------------------------------------- bodies


def bodies(
    req: Requests, idx: np.ndarray, problems: Problems, tables: Sequence[str]
) -> Iterator[tuple[int, dict]]:
    """Yield ``(i, parsed body)`` for the requests ``idx``; malformed JSON is fatal."""
    loads = orjson.loads
    body_of = req.body
    for i in idx.tolist():
        raw = body_of[i]
        try:
            t = type(raw)
            if t is dict:
                body = raw
            elif t is str or t is bytes or isinstance(raw, str | bytes | bytearray | memoryview):
                body = loads(raw)
                if not isinstance(body, dict):
                    raise BodyError(
                        "$", f"the body is a JSON {type_name(body)}, expected an object"
                    )
            elif raw is None or (isinstance(raw, float) and math.isnan(raw)):
                raise BodyError("$", "the body is empty (null) on a successful row")
            else:
                raise BodyError(
                    "$", f"the body must be JSON text, bytes or a dict, got {type(raw).__name__}"
                )
        except orjson.JSONDecodeError as exc:
            problems.fatal(req, i, tables, BodyError("$", f"the body is not valid JSON ({exc})"))
            continue
        except BodyError as exc:
            problems.fatal(req, i, tables, exc)
            continue
        yield i, body
        del body  # free the tree before the next parse, so its memory is reused warm


def reparse(req: Requests, i: int) -> dict:
    """Parse the body of request ``i`` again (it parsed once, so it parses now)."""
    raw = req.body[i]
    return raw if isinstance(raw, dict) else orjson.loads(raw)


def top_level(
    body: dict, ep: Endpoint, req: Requests, i: int, problems: Problems, tables: Sequence[str]
) -> str | None:
    """Check the fields every response may carry; return the ``Version`` (model_version).

    ``Version`` is required where the registry says the endpoint has one. The echo fields
    are optional (some responses omit them); when present they must be strings, and a
    ``PatientID``/``TimeStamp`` that differs from the request is noted and warned about.
    """
    version = body.get("Version")
    if version is None and "Version" not in body:
        if ep.version is not None:
            raise BodyError("$.Version", "required field 'Version' is missing")
    else:
        version = text(version, "$.Version")
    for field, sent, column in (
        ("PatientID", req.patient_id[i], "patient_id"),
        ("TimeStamp", req.timestamp[i], "timestamp"),
    ):
        if field in body:
            echo = body[field]
            if not isinstance(echo, str):
                raise BodyError(f"$.{field}", f"expected a string echo, got a {type_name(echo)}")
            if echo != sent:
                msg = (
                    f"{field} echo {short(echo)} differs from the request {column} "
                    f"{short(sent)}; the table keeps the request value"
                )
                problems.echo(req, i, tables, f"$.{field}", msg)
    for field in ("ImageName", "OutputImageUrl"):
        if field in body and not isinstance(body[field], str):
            raise BodyError(f"$.{field}", f"expected a string, got a {type_name(body[field])}")
    return version


# --------------------------------------------------------------------------- tables


class KeyIndex:
    """Category codes for the keys of a map, caching whole key sequences.

    Responses of one endpoint nearly always list the same keys in the same order, so a
    response's codes are found by one list comparison (or one dict look-up of the key
    tuple) instead of one look-up per key.
    """

    def __init__(self, base: str) -> None:
        self.base = base
        self.index: dict[str, int] = {}
        self._seqs: dict[tuple, np.ndarray] = {}
        self._last: list | None = None
        self._last_codes = np.zeros(0, dtype=np.int32)
        self.new: list[str] = []  # keys seen for the first time by the last codes() call

    def codes(self, keys: list) -> np.ndarray:
        """Codes of ``keys`` (validated as map keys on first sight)."""
        if keys == self._last:
            self.new = []
            return self._last_codes
        t = tuple(keys)
        c = self._seqs.get(t)
        self.new = []
        if c is None:
            index = self.index
            for k in keys:
                if k not in index:
                    key_text(k, self.base)
            for k in keys:
                if k not in index:
                    index[k] = len(index)
                    self.new.append(k)
            c = np.fromiter((index[k] for k in keys), dtype=np.int32, count=len(keys))
            self._seqs[t] = c
        self._last = keys
        self._last_codes = c
        return c

    @property
    def categories(self) -> list[str]:
        return list(self.index)


def categorical(codes: np.ndarray, cats: Sequence[str]) -> pd.Categorical:
    """A categorical from integer codes (-1 = null) and string categories."""
    return pd.Categorical.from_codes(
        np.asarray(codes), categories=pd.Index(list(cats), dtype=_STR), validate=False
    )


def compact(codes: np.ndarray, cats: Sequence[str]) -> pd.Categorical:
    """Like :func:`categorical`, dropping unused categories (order of first code kept)."""
    codes = np.asarray(codes)
    if len(codes) == 0:
        return categorical(codes.astype(np.int8), [])
    used = np.zeros(len(cats) + 1, dtype=bool)
    used[codes] = True  # -1 marks the extra last slot
    used = used[:-1]
    if used.all():
        return categorical(codes, cats)
    new = np.cumsum(used) - 1
    remap = np.append(np.where(used, new, -1), -1)
    return categorical(remap[codes], [c for c, u in zip(cats, used, strict=True) if u])


def small(codes: np.ndarray, n_categories: int) -> np.ndarray:
    """``codes`` in the smallest signed integer dtype that holds them (and -1)."""
    for dtype in (np.int8, np.int16, np.int32):
        if n_categories < np.iinfo(dtype).max:
            return codes.astype(dtype, copy=False)
    return codes.astype(np.int64, copy=False)


def fixed(
    values: Sequence[str | None], counts: np.ndarray, table: str, column: str
) -> pd.Categorical:
    """Categorical of a fixed-vocabulary column: per-response ``values``, ``counts`` rows each."""
    vocab = schemas.categories(table, column)
    codes, uniques = pd.factorize(np.asarray(values, dtype=object))
    lookup = np.array([vocab.index(u) if u in vocab else -1 for u in uniques] + [-1], dtype=np.int8)
    return vocabulary(np.repeat(lookup[codes], np.asarray(counts, dtype=np.intp)), table, column)


def vocabulary(codes: np.ndarray, table: str, column: str) -> pd.Categorical:
    """Categorical of a fixed-vocabulary column from codes into its vocabulary."""
    return pd.Categorical.from_codes(
        np.asarray(codes), dtype=schemas.category_dtype(table, column), validate=False
    )


def factorized(values: np.ndarray, counts: np.ndarray) -> pd.Categorical:
    """Categorical of per-response string ``values``, ``counts`` rows each; categories are
    the values of the responses that have rows, in order of first appearance."""
    has_rows = counts > 0
    codes = np.full(len(values), -1, dtype=np.intp)
    codes[has_rows], uniques = pd.factorize(values[has_rows])
    return categorical(np.repeat(small(codes, len(uniques)), counts), list(uniques))


def owners(counts: Sequence[int] | np.ndarray) -> np.ndarray:
    """Position of the owning response for every row (``counts`` rows per response)."""
    counts = np.asarray(counts, dtype=np.intp)
    return np.repeat(np.arange(len(counts), dtype=np.intp), counts)


def build_table(
    name: str,
    req: Requests,
    resp: Sequence[int] | np.ndarray,
    counts: Sequence[int] | np.ndarray,
    versions: Sequence[str | None],
    columns: dict[str, object],
) -> pd.DataFrame:
    """Assemble table ``name``: the session key of each response repeated over its rows,
    then ``columns``; checked against the declared schema.

    Parameters
    ----------
    resp : array of int
        Request indices (into ``req``) of the responses, in row order.
    counts : array of int
        Rows of each response (0 allowed).
    versions : sequence
        ``Version`` of each response in ``resp`` (None where absent).
    """
    resp = np.asarray(resp, dtype=np.intp)
    counts = np.asarray(counts, dtype=np.intp)
    names = [req.ep[i].name for i in resp.tolist()]
    data = {
        "patient_id": factorized(req.patient_id[resp], counts),
        "timestamp": factorized(req.timestamp[resp], counts),
        "session_time": req.session_time[resp].repeat(counts).array,
        "endpoint": fixed(names, counts, name, "endpoint"),
        "model_version": factorized(np.asarray(versions, dtype=object), counts),
    }
    data.update(columns)
    df = pd.DataFrame(data, copy=False)
    schemas.check(df, name)
    return df
