"""Strict checks of the values in a response body, and the JSON paths that name them.

Each check returns the value in the form the tables use, or raises :class:`BodyError`
(internal; the caller turns it into a :class:`~dentalkit.errors.ResponseFormatError`
or a problems row) with the JSON path of the value and what is wrong with it.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from numbers import Integral, Real

import numpy as np

#: Largest magnitude accepted for any number in a response body. Pixel coordinates of
#: dental images are below 10^5; a larger value is taken as corruption (a "huge number")
#: rather than silently carried into a table.
MAX_ABS = 1e6
#: Longest string accepted where a response string becomes a table value or key.
MAX_TEXT = 4096

_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
#: Control characters (Unicode category Cc: U+0000–U+001F, U+007F–U+009F) and the line and
#: paragraph separators U+2028, U+2029: never part of an identifier, a timestamp or a label.
CONTROL_CHARACTERS = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")


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


def printable(value: str, limit: int = 120) -> str:
    """``value`` with its control characters escaped (``\\x1b``), cut to ``limit``."""
    text = CONTROL_CHARACTERS.sub(lambda m: ascii(m.group())[1:-1], value)
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
