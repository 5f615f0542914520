"""File-name patterns such as ``{patient_id}/{date}/{kind}.png`` (private; pure functions).

A pattern is the path of a file relative to the source folder or prefix, with fields in
braces:

``{patient_id}``, ``{kind}``, ``{endpoint}``
    text without ``/``; ``{kind}`` takes one of the known kinds, ``{endpoint}`` a registry
    endpoint name or slug.
``{date}``
    the session date: ``YYYY-MM-DD`` or ``YYYYMMDD``, or any text that ``date_format``
    (``datetime.strptime`` directives) reads.
``{*}``, ``{**}``
    any text within one folder level, any text across levels (not recorded).

Everything else is literal and must match exactly (case included). A field may appear
twice (``{patient_id}/{patient_id}_{kind}.png``): both places must hold the same text.
Two fields need literal text between them. When a field could take more or less text, it
takes the shortest that lets the rest of the path match.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

from dentalkit.errors import InputError

__all__ = ["FIELDS", "Pattern", "compile_pattern", "parse_date"]

#: The fields a pattern may name (besides the wildcards ``{*}`` and ``{**}``).
FIELDS = ("patient_id", "date", "kind", "endpoint")
_WILD = {"*": r"[^/]*?", "**": r".*?"}
_TEXT = r"[^/]+?"
_ISO_DATE = r"\d{4}-\d{2}-\d{2}|\d{8}"
_TIME_DIRECTIVES = re.compile(r"%[HIMSfpzZ]")


@dataclass(frozen=True)
class Pattern:
    """A compiled file-name pattern.

    ``strict`` takes only known kinds, endpoints and (without ``date_format``) ISO dates, so
    that ``{patient_id}_{kind}.png`` splits ``P_01_lateral_ceph.png`` right; ``loose``
    takes any text in every field and serves to say why a path did not match.
    """

    text: str
    fields: frozenset[str]
    strict: re.Pattern[str]
    loose: re.Pattern[str]
    depth: int


def _tokens(text: str) -> list[tuple[bool, str]]:
    """``(is_field, text)`` pieces of a pattern; raise for a malformed one."""
    if not isinstance(text, str) or not text.strip():
        raise InputError("pattern is empty; write one like '{patient_id}/{date}/{kind}.png'")
    if text.startswith("/") or "\\" in text:
        raise InputError(
            f"pattern {text!r}: write it relative to the source, with '/' between folders "
            "(e.g. '{patient_id}/{date}/{kind}.png')"
        )
    pieces: list[tuple[bool, str]] = []
    for i, piece in enumerate(re.split(r"(\{[^{}]*\})", text)):
        if i % 2:
            name = piece[1:-1].strip()
            if name not in FIELDS and name not in _WILD:
                raise InputError(
                    f"pattern {text!r}: unknown field {{{name}}}; the fields are "
                    + ", ".join(f"{{{f}}}" for f in (*FIELDS, *_WILD))
                )
            if pieces and pieces[-1][0]:
                raise InputError(
                    f"pattern {text!r}: {{{pieces[-1][1]}}} and {{{name}}} need literal text "
                    "between them (e.g. '_' or '/'), or their boundary is a guess"
                )
            pieces.append((True, name))
        elif piece:
            if "{" in piece or "}" in piece:
                raise InputError(f"pattern {text!r}: unbalanced brace in {piece!r}")
            pieces.append((False, piece))
    return pieces


def _alternation(values: Iterable[str]) -> str:
    # longest first, so that 'pano' does not stop a match of 'pano_segmentation' short
    return "|".join(re.escape(v) for v in sorted(set(values), key=lambda v: (-len(v), v)))


def compile_pattern(
    text: str, *, kinds: Iterable[str], endpoints: Iterable[str], date_format: str | None
) -> Pattern:
    """Compile ``text`` (see the module docstring) for the given kinds and endpoint names.

    Raises
    ------
    InputError
        An empty pattern, an unknown field, two fields without text between them.
    """
    pieces = _tokens(text)
    strict_parts = {
        "patient_id": _TEXT,
        "kind": _alternation(kinds),
        "endpoint": _alternation(endpoints),
        "date": _ISO_DATE if date_format is None else _TEXT,
    }
    strict, loose, seen = [], [], set()
    for is_field, piece in pieces:
        if not is_field:
            strict.append(re.escape(piece))
            loose.append(re.escape(piece))
        elif piece in _WILD:
            strict.append(_WILD[piece])
            loose.append(_WILD[piece])
        elif piece in seen:
            strict.append(f"(?P={piece})")
            loose.append(f"(?P={piece})")
        else:
            seen.add(piece)
            strict.append(f"(?P<{piece}>{strict_parts[piece]})")
            loose.append(f"(?P<{piece}>{_TEXT})")
    if "kind" in seen and "endpoint" in seen:
        raise InputError(f"pattern {text!r}: use {{kind}} or {{endpoint}}, not both")
    return Pattern(
        text=text,
        fields=frozenset(seen),
        strict=re.compile("".join(strict)),
        loose=re.compile("".join(loose)),
        depth=text.count("/"),
    )


def parse_date(text: str, date_format: str | None) -> str | None:
    """The ISO 8601 form of a session date, or None when ``text`` is not one.

    Without ``date_format``: ``YYYY-MM-DD``, ``YYYYMMDD`` or an ISO 8601 date and time
    (``2024-03-05T10:00:00Z``). With it: what ``datetime.strptime(text, date_format)``
    reads. A date alone becomes ``YYYY-MM-DD``; a date with a time ``YYYY-MM-DDTHH:MM:SS``
    (with its UTC offset when it has one).

    Examples
    --------
    >>> parse_date("20240305", None), parse_date("05.03.2024", "%d.%m.%Y")
    ('2024-03-05', '2024-03-05')
    >>> parse_date("05/03/2024", None) is None
    True
    """
    text = text.strip()
    try:
        if date_format is None:
            if re.fullmatch(r"\d{8}", text):
                return datetime.strptime(text, "%Y%m%d").date().isoformat()
            if not re.fullmatch(r"\d{4}-\d{2}-\d{2}([T ].+)?", text):
                return None
            value = datetime.fromisoformat(text)
            has_time = len(text) > 10
        else:
            value = datetime.strptime(text, date_format)
            has_time = bool(_TIME_DIRECTIVES.search(date_format))
    except ValueError:
        return None
    return value.isoformat() if has_time else value.date().isoformat()
