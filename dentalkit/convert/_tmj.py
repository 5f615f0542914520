"""TMJ responses (``/tmj-xsectional``) → ``tmj``.

One row per response: ``image_name``, ``finding`` (``Results.Finding``, the sentence
as sent) and ``has_finding``, which is three-valued: True, False or missing (NA,
"unknown").

The specification says only that ``Results.Finding`` is "a sentence stating that no
findings were detected when none are found"; its wording is not shown, and a real
service may word the same statement in many ways. So the rule reads phrases from a
data file instead of guessing (:data:`PHRASES_FILE`, ``dentalkit/data/tmj_phrases.csv``),
which users can extend with their own file (the ``tmj_phrases`` argument of the
converters, or :data:`dentalkit.settings.tmj_phrases`). Each row of a phrases file has

``meaning``
    ``no_finding`` (a statement that nothing was found), ``finding`` (a term that
    reports a finding: ``flattening``, ``erosion``, ``osteophyte`` …) or ``uncertain``
    (a hedge: "possible", "cannot be excluded", "suspected" …);
``pattern``
    a regular expression over the normalised text (lower case, single spaces); a
    ``no_finding`` pattern must match a *whole* clause, a ``finding`` pattern anywhere in
    a clause (on word boundaries). Placeholders: ``{np}`` a short noun phrase of one to
    five words that never contains a word that turns the denial around (``but``,
    ``except``, ``other``, ``than``, ``progression`` …; and a clause starting "no change",
    "no interval progression" … is never a denial); ``{verb}`` was/were/is/
    are/has been/have been; ``{seen}`` detected/seen/identified/found/observed/noted/
    present/evident/demonstrated/visualised; ``{where}`` a place such as "in this image",
    "on the left condyle", "in either joint", "bilaterally"; ``{subject}`` "the joint",
    "both condyles", "right TMJ", "study" …;
``example``
    a sentence the pattern is meant for (checked by the tests).

The rule (:func:`classify`): the sentence is normalised and cut into clauses at ``.``
``;`` ``!`` ``?`` (not a decimal point), commas and the words "but", "however",
"whereas", "while", "although", "and"; a leading label ending in a colon ("Right TMJ:",
"Impression:", "Findings:") is dropped, and a clause naming only a place ("left",
"bilaterally") is ignored. A clause is *negative* when a ``no_finding`` pattern matches
it whole, *unknown* when it is not negative and hedges ("Possible erosion", "Flattening
cannot be excluded"), *positive* when it is neither and a ``finding`` term occurs in it,
and *unknown* otherwise. A positive clause that directly follows a negative clause through
"and" ("no effusion and condylar flattening": is the flattening denied too?) is unknown.
Then ``has_finding`` is True when any clause is positive, False when every clause is
negative, and NA otherwise — an unseen wording never counts as a finding, nor as the
absence of one. The converters add one problems row per distinct unrecognised
sentence, so a new wording of the real service is visible and can be added to a phrases
file.
"""

from __future__ import annotations

import csv
import io
import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

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
from dentalkit.errors import InputError

__all__ = [
    "PHRASES_FILE",
    "TmjPhrases",
    "classify",
    "has_finding",
    "load_phrases",
]

TABLES = ("tmj",)
_STR = pd.StringDtype(na_value=np.nan)

#: The shipped phrases file (package data).
PHRASES_FILE = "tmj_phrases.csv"

_TURNING = (
    "but|with|without|except|excepting|other|than|apart|besides|beyond|save|"
    "progression|progressive|progressed|improvement|improved|resolution|"
    "resolved|increase|increased|decrease|decreased|difference|longer|however|although|"
    "though|while|whereas|yet|still|persistent|persisting|remains|unchanged|stable"
)
_WORD = rf"(?:(?!(?:{_TURNING})\b)[a-z][a-z'-]*)"
_PLACE_NOUN = (
    r"(?:image|images|joint|joints|tmj|tmjs|temporomandibular joints?|condyle|condyles|"
    r"condylar heads?|side|sides|scan|scans|study|view|views|section|sections|slice|slices)"
)
_SIDE = r"(?:right|left|both|bilateral|either|each|this|these|the|all)"
PLACEHOLDERS: dict[str, str] = {
    "np": rf"{_WORD}(?: {_WORD}){{0,4}}",
    "verb": r"(?:was|were|is|are|has been|have been|being)",
    "seen": (
        r"(?:detected|seen|identified|found|observed|noted|present|evident|demonstrated|"
        r"visuali[sz]ed|appreciated|shown|recognised|recognized)"
    ),
    "where": (
        rf"(?:bilaterally|(?:in|on|of|at|within|for) (?:{_SIDE} )?(?:{_SIDE} )?{_PLACE_NOUN})"
    ),
    "subject": rf"(?:(?:the )?(?:{_SIDE} )?(?:{_SIDE} )?{_PLACE_NOUN}|(?:right|left|bilateral))",
}
_PLACE_ONLY = re.compile(
    rf"(?:(?:on|in|of|at) )?(?:the )?(?:{_SIDE} )?(?:{_SIDE} )?(?:{_PLACE_NOUN}|right|left|"
    rf"bilateral|bilaterally|both sides)|{PLACEHOLDERS['where']}"
)
_SPLIT = re.compile(
    r"(?<!\d)\.(?!\d)|[;!?\n]|,|\bbut\b|\bhowever\b|\bwhereas\b|\bwhile\b|\balthough\b|(\band\b)"
)
#: "No change in …", "no interval progression of …": a follow-up remark, not a denial.
_NOT_A_DENIAL = re.compile(
    r"(?:there (?:is|was|has been) )?no (?:(?:significant|interval|further|appreciable|"
    r"definite|obvious|radiographic|major) )*(?:change|progression|improvement|difference|"
    r"resolution|increase|decrease)s?\b"
)
_LABEL = re.compile(r"^[a-z0-9 ()/'-]{1,40}:\s*")


@dataclass(frozen=True)
class TmjPhrases:
    """Compiled phrases: whole-clause ``no_finding`` patterns and ``finding`` terms.

    Attributes
    ----------
    no_finding : tuple of re.Pattern
        Matched against a whole clause.
    finding : tuple of re.Pattern
        Searched for in a clause, on word boundaries.
    uncertain : tuple of re.Pattern
        Hedges, searched for in a clause: such a clause is unknown.
    sources : tuple of str
        The files the phrases came from (shipped file first).
    """

    no_finding: tuple[re.Pattern[str], ...]
    finding: tuple[re.Pattern[str], ...]
    sources: tuple[str, ...]
    uncertain: tuple[re.Pattern[str], ...] = ()


def _expand(pattern: str) -> str:
    out = pattern
    for name, regex in PLACEHOLDERS.items():
        out = out.replace("{" + name + "}", regex)
    return out


def _read(text_: str, source: str) -> list[tuple[str, re.Pattern[str]]]:
    reader = csv.DictReader(io.StringIO(text_))
    missing = {"meaning", "pattern"} - set(reader.fieldnames or ())
    if missing:
        raise InputError(
            f"TMJ phrases file {source}: needs the columns meaning, pattern (and optionally "
            f"example); missing {sorted(missing)}"
        )
    rows = []
    for line, rec in enumerate(reader, start=2):
        meaning = (rec.get("meaning") or "").strip()
        pattern = (rec.get("pattern") or "").strip().lower()
        if not meaning and not pattern:
            continue
        if meaning not in ("no_finding", "finding", "uncertain"):
            raise InputError(
                f"TMJ phrases file {source}, line {line}: meaning must be 'no_finding', "
                f"'finding' or 'uncertain', got {meaning!r}"
            )
        if not pattern:
            raise InputError(f"TMJ phrases file {source}, line {line}: the pattern is empty")
        regex = _expand(pattern)
        try:
            compiled = re.compile(regex if meaning == "no_finding" else rf"\b(?:{regex})\b")
        except re.error as exc:
            raise InputError(
                f"TMJ phrases file {source}, line {line}: pattern {pattern!r} is not a valid "
                f"regular expression ({exc}); see the placeholders in docs/data-contract.md"
            ) from None
        rows.append((meaning, compiled))
    return rows


def _load(extra: tuple[str, ...]) -> TmjPhrases:
    """The compiled phrases; a user file is read again when it changed (size or mtime)."""
    stamps = []
    for path in extra:
        try:
            st = os.stat(path)
            stamps.append((st.st_mtime_ns, st.st_size))
        except OSError:
            stamps.append(None)  # _compile names the file that cannot be read
    return _compile(extra, tuple(stamps))


@lru_cache(maxsize=16)
def _compile(extra: tuple[str, ...], stamps: tuple) -> TmjPhrases:
    shipped = resources.files("dentalkit.data").joinpath(PHRASES_FILE).read_text("utf-8")
    rows = _read(shipped, PHRASES_FILE)
    for path in extra:
        p = Path(path)
        try:
            content = p.read_text("utf-8")
        except OSError as exc:
            raise InputError(f"cannot read the TMJ phrases file {p}: {exc.strerror}") from None
        rows += _read(content, str(p))
    return TmjPhrases(
        no_finding=tuple(r for m, r in rows if m == "no_finding"),
        finding=tuple(r for m, r in rows if m == "finding"),
        sources=(PHRASES_FILE, *extra),
        uncertain=tuple(r for m, r in rows if m == "uncertain"),
    )


PhrasesArg = TmjPhrases | str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None


def load_phrases(extra: PhrasesArg = None) -> TmjPhrases:
    """The shipped TMJ phrases, extended by the rows of ``extra`` files.

    Parameters
    ----------
    extra : path, list of paths, TmjPhrases or None
        CSV file(s) with the columns ``meaning``, ``pattern`` (and ``example``), whose rows
        are *added* to the shipped ones (see the module docstring). ``None`` reads
        :data:`dentalkit.settings.tmj_phrases` (default: none).

    Raises
    ------
    InputError
        A file cannot be read, lacks a column, has an unknown meaning or an invalid
        regular expression (the file and line are named).
    """
    if isinstance(extra, TmjPhrases):
        return extra
    if extra is None:
        from dentalkit import settings

        extra = settings.tmj_phrases
    if extra is None:
        paths: tuple[str, ...] = ()
    elif isinstance(extra, str | os.PathLike):
        paths = (os.fspath(extra),)
    else:
        paths = tuple(os.fspath(p) for p in extra)
    return _load(paths)


def _clauses(sentence: str) -> list[tuple[str, bool]]:
    """Normalised clauses, each with whether it was joined to the previous one by "and"."""
    norm = " ".join(sentence.lower().replace("’", "'").split())
    out: list[tuple[str, bool]] = []
    pos, joined = 0, False
    for m in _SPLIT.finditer(norm + "."):
        piece = norm[pos : m.start()].strip(" -–:\"'()")
        piece = _LABEL.sub("", piece).strip(" -–:\"'()")
        if piece and not _PLACE_ONLY.fullmatch(piece):
            out.append((piece, joined))
            joined = m.group(1) is not None
        elif m.group(1) is None:
            joined = False
        pos = m.end()
    return out


def classify(sentence: str, phrases: PhrasesArg = None) -> bool | None:
    """Whether a TMJ ``Finding`` sentence reports a finding: True, False or None (unknown).

    See the module docstring for the rule and the phrases file.

    Parameters
    ----------
    sentence : str
        ``Results.Finding`` as sent.
    phrases : path, list of paths, TmjPhrases or None
        Extra phrases files (see :func:`load_phrases`).

    Returns
    -------
    bool or None
        None when the sentence is neither recognised as "no finding" nor as a finding.

    Examples
    --------
    >>> classify("No findings were detected."), classify("Condylar flattening, left")
    (False, True)
    >>> classify("Within normal limits bilaterally."), classify("Clinical correlation advised.")
    (False, None)
    """
    book = load_phrases(phrases)
    states: list[str] = []
    for clause, after_and in _clauses(sentence):
        if not _NOT_A_DENIAL.match(clause) and any(p.fullmatch(clause) for p in book.no_finding):
            state = "neg"
        elif any(p.search(clause) for p in book.uncertain):
            state = "unknown"
        elif any(p.search(clause) for p in book.finding):
            state = "unknown" if after_and and states and states[-1] == "neg" else "pos"
        else:
            state = "unknown"
        states.append(state)
    if "pos" in states:
        return True
    if states and all(s == "neg" for s in states):
        return False
    return None


def has_finding(sentence: str, phrases: PhrasesArg = None) -> bool | None:
    """Alias of :func:`classify` (True / False / None for unknown).

    >>> has_finding("No findings were detected."), has_finding("Condylar flattening, left")
    (False, True)
    """
    return classify(sentence, phrases)


def flatten(body: dict) -> tuple[str, str]:
    """Check one TMJ body; return ``(image_name, finding)``."""
    image_name = text(require(body, "ImageName"), "$.ImageName")
    results = obj(require(body, "Results"), "$.Results")
    exact_keys(results, "$.Results", ("Finding",))
    return image_name, text(results["Finding"], "$.Results.Finding")


def unrecognised_reason(n: int) -> str:
    """Problems-row text for a sentence no phrase recognises (``n`` responses carry it)."""
    return (
        f"TMJ sentence recognised neither as 'no finding' nor as a finding: has_finding is "
        f"NA (unknown) in {n} response(s) with this sentence; add its wording to a TMJ "
        "phrases file (settings.tmj_phrases or the tmj_phrases argument)"
    )


def convert(
    req: Requests, idx: np.ndarray, problems: Problems, phrases: PhrasesArg = None
) -> pd.DataFrame:
    """Build ``tmj`` from the TMJ responses ``idx``."""
    book = load_phrases(phrases)
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
    flags = [classify(u, book) for u in uniques]
    counts = np.bincount(codes, minlength=len(uniques)) if len(codes) else np.zeros(0, int)
    for u, flag in enumerate(flags):
        if flag is None:  # one problems row per distinct sentence, on its first response
            first = int(np.flatnonzero(codes == u)[0])
            problems.note_once(
                req,
                resp[first],
                "tmj",
                "$.Results.Finding",
                str(uniques[u]),
                int(counts[u]),
                unrecognised_reason,
            )
    values = pd.array([flags[c] for c in codes], dtype="boolean")
    return build_table(
        "tmj",
        req,
        resp,
        np.ones(len(resp), dtype=np.intp),
        versions,
        {
            "image_name": pd.array(names, dtype=_STR),
            "finding": categorical(codes, list(uniques)),
            "has_finding": values,
        },
    )


def unrecognised(sentences: Iterable[str], phrases: PhrasesArg = None) -> list[str]:
    """The distinct sentences of ``sentences`` that :func:`classify` leaves unknown."""
    book = load_phrases(phrases)
    return [s for s in dict.fromkeys(sentences) if classify(s, book) is None]
