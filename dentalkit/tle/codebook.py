"""The /tle codebook: which patient-table column feeds each of p01…p11, and how it is encoded.

The specification of ``GET /tle`` shows eleven required string parameters and their
meanings, but not their allowed values ("Allowed values and formats of p01 to p11: not
shown"). The codebook is **our documented convention** (``docs/tle.md``), shipped as
``dentalkit/data/tle_codebook.csv`` and replaceable by the user — or by the provider's own
codebook when it is published. The sandbox validates ``/tle`` queries against the codes
in the shipped file, so its codes stay stable.

One CSV row per parameter:

``param``      ``p01`` … ``p11``, each exactly once
``meaning``    the specification's meaning (free text)
``column``     the typed patient-table column the value comes from
``dtype``      ``number``, ``category`` or ``boolean``
``unit``       unit of a number (``years``, ``mm``, ``score``)
``minimum``,   inclusive range of the *encoded* (rounded) number
``maximum``
``decimals``   decimals of the encoded number
``rounding``   ``floor`` (age in completed years) or ``half_up`` (half away from zero)
``levels``     ``label:code|label:code…`` for categories and booleans (booleans: ``no``
               and ``yes``)
``aliases``    ``alias:label|…`` extra accepted spellings (matching ignores case and
               surrounding/repeated whitespace)
``notes``      free text

Examples
--------
>>> book = load_codebook()
>>> book["p02"].column, book["p02"].codes
('sex', ('F', 'M'))
>>> book["age_years"].param, book["p01"].rounding
('p01', 'floor')
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path
from types import MappingProxyType

import pandas as pd

from dentalkit.endpoints import TLE_PARAMETERS
from dentalkit.errors import InputError

__all__ = ["DTYPES", "ROUNDING", "Codebook", "Parameter", "load_codebook", "normalize_spelling"]

#: Kinds of typed value a codebook row may declare.
DTYPES = ("number", "category", "boolean")
#: Rounding rules of number rows.
ROUNDING = ("floor", "half_up")
#: Spellings every boolean row accepts besides its labels and aliases (after normalisation).
BOOLEAN_SPELLINGS = MappingProxyType({"true": "yes", "false": "no", "1": "yes", "0": "no"})

_PARAMS = tuple(q.name for q in TLE_PARAMETERS)
#: Output columns of the tle functions; a codebook column may not reuse them.
RESERVED_COLUMNS = frozenset({*_PARAMS, "app", "estimate_length_months"})
_REQUIRED = ("param", "column", "dtype", "minimum", "maximum", "decimals", "levels")
_OPTIONAL = ("meaning", "unit", "rounding", "aliases", "notes")
_MAX_DECIMALS = 6
_WS = re.compile(r"\s+")


def normalize_spelling(text: str) -> str:
    """Case-fold, trim and collapse whitespace: the form in which spellings are compared.

    >>> normalize_spelling("  Class  II/1 ")
    'class ii/1'
    """
    return _WS.sub(" ", str(text).strip()).casefold()


@dataclass(frozen=True, slots=True)
class Parameter:
    """One codebook row: how one typed column becomes one ``/tle`` query parameter.

    Attributes
    ----------
    param : str
        ``p01`` … ``p11``.
    meaning : str
        Meaning (the specification's wording).
    column : str
        Patient-table column holding the typed value.
    dtype : {"number", "category", "boolean"}
        Kind of typed value.
    unit : str
        Unit of a number (empty for categories).
    minimum, maximum : float or None
        Inclusive range of the encoded (rounded) number; ``None`` for categories.
    decimals : int or None
        Decimals of the encoded number; ``None`` for categories.
    rounding : {"floor", "half_up"} or None
        How a number is rounded to ``decimals``; ``None`` for categories.
    levels : tuple of (label, code)
        Accepted labels and the code sent for each (categories and booleans).
    aliases : mapping
        Normalised extra spelling → label.
    notes : str
        Free text.
    """

    param: str
    meaning: str
    column: str
    dtype: str
    unit: str = ""
    minimum: float | None = None
    maximum: float | None = None
    decimals: int | None = None
    rounding: str | None = None
    levels: tuple[tuple[str, str], ...] = ()
    aliases: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""

    @property
    def labels(self) -> tuple[str, ...]:
        """Canonical labels, in codebook order."""
        return tuple(label for label, _ in self.levels)

    @property
    def codes(self) -> tuple[str, ...]:
        """Codes sent to the service, in codebook order."""
        return tuple(code for _, code in self.levels)

    @property
    def lookup(self) -> dict[str, str]:
        """Normalised spelling → canonical label (labels, aliases and boolean spellings)."""
        out = {normalize_spelling(label): label for label in self.labels}
        if self.dtype == "boolean":
            by_norm = {normalize_spelling(label): label for label in self.labels}
            out.update({k: by_norm[v] for k, v in BOOLEAN_SPELLINGS.items()})
        out.update(self.aliases)
        return out

    def allowed(self) -> str:
        """Human-readable description of the accepted typed values."""
        if self.dtype == "number":
            rule = "floored to" if self.rounding == "floor" else "rounded to"
            unit = f" {self.unit}" if self.unit else ""
            places = "whole numbers" if self.decimals == 0 else f"{self.decimals} decimal(s)"
            return (
                f"a number from {self.minimum:g} to {self.maximum:g}{unit} ({rule} {places} first)"
            )
        text = ", ".join(self.labels)
        if self.dtype == "boolean":
            text += ", or True/False, 1/0"
        extra = sorted(k for k, v in self.aliases.items() if k != normalize_spelling(v))
        if extra:
            text += f" (also: {', '.join(extra[:8])}{' …' if len(extra) > 8 else ''})"
        return "one of " + text + "; case-insensitive"


@dataclass(frozen=True)
class Codebook:
    """A validated codebook: eleven :class:`Parameter` rows in ``p01`` … ``p11`` order.

    Index it by parameter (``book["p03"]``) or by patient-table column
    (``book["malocclusion_class"]``); iterate over its parameters.
    """

    parameters: tuple[Parameter, ...]
    source: str = "dentalkit/data/tle_codebook.csv"

    def __iter__(self) -> Iterator[Parameter]:
        return iter(self.parameters)

    def __len__(self) -> int:
        return len(self.parameters)

    def __getitem__(self, key: str) -> Parameter:
        for p in self.parameters:
            if key in (p.param, p.column):
                return p
        known = ", ".join(f"{p.param} ({p.column})" for p in self.parameters)
        raise InputError(
            f"{key!r} is neither a /tle parameter nor a codebook column; known: {known}"
        )

    @property
    def params(self) -> tuple[str, ...]:
        """``('p01', …, 'p11')``."""
        return tuple(p.param for p in self.parameters)

    @property
    def columns(self) -> tuple[str, ...]:
        """Patient-table columns, in parameter order."""
        return tuple(p.column for p in self.parameters)

    def table(self) -> pd.DataFrame:
        """The codebook as a DataFrame (one row per parameter, for display and docs)."""
        rows = []
        for p in self.parameters:
            rows.append(
                {
                    "param": p.param,
                    "meaning": p.meaning,
                    "column": p.column,
                    "dtype": p.dtype,
                    "unit": p.unit,
                    "allowed": p.allowed(),
                    "encoding": (
                        ", ".join(f"{lab} → {code}" for lab, code in p.levels)
                        if p.levels
                        else f"decimal string with {p.decimals} decimal(s)"
                    ),
                }
            )
        return pd.DataFrame(rows).astype("str")


def load_codebook(path: str | Path | pd.DataFrame | Codebook | None = None) -> Codebook:
    """Load and validate a /tle codebook.

    Parameters
    ----------
    path : path-like, DataFrame or Codebook, optional
        A codebook CSV (or the same table as a DataFrame); default: dentalkit's shipped
        codebook ``dentalkit/data/tle_codebook.csv`` (see ``docs/tle.md``). A
        :class:`Codebook` is returned unchanged.

    Returns
    -------
    Codebook
        Eleven validated parameters in ``p01`` … ``p11`` order.

    Raises
    ------
    InputError
        Naming the CSV line, parameter and column of the first problem and how to fix it:
        missing columns, a parameter missing or repeated, an unknown ``dtype``, a
        non-numeric or empty range, malformed ``levels``/``aliases``, repeated labels,
        codes or patient-table columns.

    Examples
    --------
    >>> book = load_codebook()
    >>> [p.param for p in book][:3], book["p06"].decimals
    (['p01', 'p02', 'p03'], 1)
    """
    if isinstance(path, Codebook):
        return path
    if path is None:
        return _default_codebook()
    if isinstance(path, pd.DataFrame):
        table, source = path.copy(), "codebook table"
        table = table.astype("object").where(table.notna(), "").astype("str")
    else:
        source = str(path)
        try:
            table = pd.read_csv(path, dtype=str, keep_default_na=False, encoding="utf-8")
        except (OSError, UnicodeDecodeError, pd.errors.ParserError) as exc:
            raise InputError(f"cannot read the codebook {source}: {exc}") from exc
    return _parse(table, source)


@lru_cache(maxsize=1)
def _default_codebook() -> Codebook:
    with (
        resources.files("dentalkit.data").joinpath("tle_codebook.csv").open(encoding="utf-8") as fh
    ):
        table = pd.read_csv(fh, dtype=str, keep_default_na=False)
    return _parse(table, "dentalkit/data/tle_codebook.csv")


def _parse(table: pd.DataFrame, source: str) -> Codebook:
    table = table.rename(columns=lambda c: str(c).strip())
    missing = [c for c in _REQUIRED if c not in table.columns]
    if missing:
        raise InputError(
            f"codebook {source} lacks column(s) {missing}; a codebook needs "
            f"{', '.join(_REQUIRED)} (and optionally {', '.join(_OPTIONAL)}); "
            "see docs/tle.md"
        )
    for c in _OPTIONAL:
        if c not in table.columns:
            table[c] = ""
    table = table.map(lambda v: "" if v is None else str(v).strip())

    def fail(i: int, col: str, msg: str) -> InputError:
        param = table.at[i, "param"] or "?"
        return InputError(f"codebook {source} line {i + 2} ({param}), column {col!r}: {msg}")

    seen: dict[str, int] = {}
    for i, param in enumerate(table["param"]):
        if param not in _PARAMS:
            raise fail(i, "param", f"{param!r} is not a /tle parameter; use p01 … p11")
        if param in seen:
            raise fail(i, "param", f"{param} appears again (first on line {seen[param] + 2})")
        seen[param] = i
    absent = [p for p in _PARAMS if p not in seen]
    if absent:
        raise InputError(
            f"codebook {source} has no row for {', '.join(absent)}; the service requires all "
            "eleven parameters p01 … p11"
        )
    columns: dict[str, int] = {}
    params = []
    for param in _PARAMS:
        i = seen[param]
        params.append(_parse_row(table.iloc[i], lambda col, msg, i=i: fail(i, col, msg)))
        col = params[-1].column
        if col in columns:
            raise fail(i, "column", f"{col!r} is already the column of line {columns[col] + 2}")
        columns[col] = i
    return Codebook(tuple(params), source)


def _parse_row(row: pd.Series, fail) -> Parameter:
    column, dtype = row["column"], row["dtype"].lower()
    if not column:
        raise fail("column", "empty; name the patient-table column this parameter comes from")
    if column in RESERVED_COLUMNS:
        raise fail(
            "column",
            f"{column!r} is reserved for the encoded output (p01 … p11, app, "
            "estimate_length_months); name the typed column differently",
        )
    if dtype not in DTYPES:
        raise fail("dtype", f"{row['dtype']!r} is not one of {', '.join(DTYPES)}")
    common = {
        "param": row["param"],
        "meaning": row["meaning"],
        "column": column,
        "dtype": dtype,
        "unit": row["unit"],
        "notes": row["notes"],
    }
    if dtype == "number":
        for col in ("levels", "aliases"):
            if row[col]:
                raise fail(col, "must be empty for a number (levels are for categories)")
        lo, hi = _number(row["minimum"], "minimum", fail), _number(row["maximum"], "maximum", fail)
        if not lo < hi:
            raise fail("maximum", f"maximum {hi:g} must be greater than minimum {lo:g}")
        try:
            decimals = int(row["decimals"])
        except ValueError:
            raise fail("decimals", f"{row['decimals']!r} is not a whole number") from None
        if not 0 <= decimals <= _MAX_DECIMALS:
            raise fail("decimals", f"{decimals} is outside 0 … {_MAX_DECIMALS}")
        rounding = row["rounding"].lower() or "half_up"
        if rounding not in ROUNDING:
            raise fail("rounding", f"{row['rounding']!r} is not one of {', '.join(ROUNDING)}")
        return Parameter(**common, minimum=lo, maximum=hi, decimals=decimals, rounding=rounding)
    for col in ("minimum", "maximum", "decimals", "rounding"):
        if row[col]:
            raise fail(col, f"must be empty for a {dtype} (ranges and decimals are for numbers)")
    levels = _levels(row["levels"], fail)
    norm = [normalize_spelling(label) for label, _ in levels]
    if dtype == "boolean" and sorted(norm) != ["no", "yes"]:
        raise fail("levels", "a boolean needs exactly the labels no and yes, e.g. no:0|yes:1")
    by_norm = dict(zip(norm, (lab for lab, _ in levels), strict=True))
    aliases = _aliases(row["aliases"], by_norm, fail)
    if dtype == "boolean":
        for key, target in BOOLEAN_SPELLINGS.items():
            if aliases.get(key, by_norm[target]) != by_norm[target]:
                raise fail("aliases", f"{key!r} always means {target!r} for a boolean")
    return Parameter(**common, levels=levels, aliases=MappingProxyType(aliases))


def _number(text: str, col: str, fail) -> float:
    try:
        value = float(text)
    except ValueError:
        raise fail(col, f"{text!r} is not a number") from None
    if not math.isfinite(value):
        raise fail(col, f"{text!r} is not a finite number")
    return value


def _levels(text: str, fail) -> tuple[tuple[str, str], ...]:
    if not text:
        raise fail("levels", "empty; list the accepted values as label:code|label:code")
    out: list[tuple[str, str]] = []
    labels: set[str] = set()
    codes: set[str] = set()
    for item in text.split("|"):
        label, sep, code = (s.strip() for s in item.partition(":"))
        if not sep or not label or not code:
            raise fail("levels", f"{item!r} is not label:code (e.g. female:F)")
        if normalize_spelling(label) in labels:
            raise fail("levels", f"label {label!r} appears twice (labels ignore case)")
        if code in codes:
            raise fail("levels", f"code {code!r} is used for two labels; codes must be unique")
        labels.add(normalize_spelling(label))
        codes.add(code)
        out.append((label, code))
    return tuple(out)


def _aliases(text: str, labels: dict[str, str], fail) -> dict[str, str]:
    out: dict[str, str] = {}
    if not text:
        return out
    for item in text.split("|"):
        alias, sep, target = (s.strip() for s in item.rpartition(":"))
        if not sep or not alias or not target:
            raise fail("aliases", f"{item!r} is not alias:label (e.g. f:female)")
        label = labels.get(normalize_spelling(target))
        if label is None:
            raise fail("aliases", f"{item!r} points to {target!r}, which is not a label in levels")
        key = normalize_spelling(alias)
        clash = labels.get(key, out.get(key))
        if clash is not None and clash != label:
            raise fail(
                "aliases", f"{alias!r} already means {clash!r}; it cannot also mean {label!r}"
            )
        out[key] = label
    return out
