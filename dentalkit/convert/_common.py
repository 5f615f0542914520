"""Shared plumbing of the converters, gathered from its parts for the per-kind modules.

- :mod:`._values`: strict value checks and JSON paths (``BodyError``);
- :mod:`._problems`: the problems collector;
- :mod:`._requests`: the responses table as input, body parsing, the common fields;
- :mod:`._build`: typed tables from flat columns, checked against the schemas.

Nothing here does I/O.
"""

from __future__ import annotations

from dentalkit.convert._build import (
    KeyIndex,
    build_table,
    categorical,
    compact,
    factorized,
    fixed,
    owners,
    small,
    vocabulary,
)
from dentalkit.convert._problems import Problems
from dentalkit.convert._requests import (
    Requests,
    bodies,
    gc_paused,
    parse_session_times,
    prepare,
    reparse,
    top_level,
)
from dentalkit.convert._values import (
    MAX_ABS,
    MAX_TEXT,
    BodyError,
    boolean,
    exact_keys,
    integer,
    jp,
    key_text,
    number,
    obj,
    pair,
    require,
    short,
    text,
    type_name,
)

__all__ = [
    "MAX_ABS",
    "MAX_TEXT",
    "BodyError",
    "KeyIndex",
    "Problems",
    "Requests",
    "bodies",
    "boolean",
    "build_table",
    "categorical",
    "compact",
    "exact_keys",
    "factorized",
    "fixed",
    "gc_paused",
    "integer",
    "jp",
    "key_text",
    "number",
    "obj",
    "owners",
    "pair",
    "parse_session_times",
    "prepare",
    "reparse",
    "require",
    "short",
    "small",
    "text",
    "top_level",
    "type_name",
    "vocabulary",
]
