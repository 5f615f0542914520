"""Typed patient table ⇄ the eleven ``/tle`` query strings, validated per the codebook.

:func:`encode` checks **every** row before anything is sent and reports every bad value
at once (row, column, value, what is allowed). It works column by column with vectorized
pandas/numpy operations: no Python loop over rows.

Encoding rules (``docs/tle.md``):

* numbers: ASCII decimal text or numeric dtypes; booleans, units (``"14 y"``), decimal
  commas, NaN and infinities are refused. The value is rounded to the codebook's
  ``decimals`` — ``floor`` (age in completed years) or ``half_up`` (half away from zero;
  binary noise below 1e-6 of the last digit is ignored, so 2.675 → 2.7 even though the
  double is 2.67499…) — and the *rounded* value must lie in ``[minimum, maximum]``. It is
  sent as a plain decimal string with exactly ``decimals`` places, never ``-0``.
* categories: the codebook's labels or aliases, compared case-insensitively after trimming
  and collapsing whitespace; sent as the label's code.
* booleans: ``True``/``False``, ``1``/``0`` (also ``1.0``), ``yes``/``no`` and the
  codebook's aliases.
* missing values (None, NaN, NA, empty text) are errors: the codebook defines no defaults
  and the service requires all eleven parameters.
"""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
from pandas.api import types as ptypes

from dentalkit.errors import PROBLEM_COLUMNS as _DECLARED
from dentalkit.errors import (
    DentalkitWarning,
    Errors,
    InputError,
    ManifestError,
    check_errors,
    problems_frame,
)
from dentalkit.tle.codebook import Codebook, Parameter, load_codebook

__all__ = ["PROBLEM_COLUMNS", "decode", "encode"]

#: Columns of the problems table of :func:`encode`: dentalkit's one problems schema
#: (:data:`dentalkit.errors.PROBLEM_SCHEMA`; ``row`` is the 0-based position in the
#: patients table), then ``param`` (``p04``) and ``index_label`` (the row's label in the
#: caller's index).
PROBLEM_COLUMNS = (*_DECLARED, "param", "index_label")
_NUMBER = r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
_NONFINITE = r"[+-]?(?:inf|infinity|nan)"
_DECIMAL_COMMA = r"[+-]?[0-9]+,[0-9]+"
_NOISE_DECIMALS = 6  # rounding ignores binary noise below 1e-6 of the last kept digit
_HUGE = 1e15  # beyond this no codebook range applies and int64 scaling would overflow


def encode(
    patients: pd.DataFrame,
    codebook: Codebook | str | None = None,
    *,
    errors: Errors = "raise",
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """Validate a typed patient table and encode it as the eleven ``/tle`` strings.

    Parameters
    ----------
    patients : pandas.DataFrame
        One row per patient with the codebook's typed columns (default codebook:
        ``age_years``, ``sex``, ``malocclusion_class``, ``crowding``, ``spacing``,
        ``overjet_mm``, ``overbite_mm``, ``crossbite``, ``open_bite``, ``extraction``,
        ``difficulty_score``). Other columns are ignored; rename yours to match, or pass a
        codebook whose ``column`` entries name them. A ``patient_id`` column, when present,
        is copied into the problems table.
    codebook : Codebook or path, optional
        Default: the shipped codebook (:func:`~dentalkit.tle.load_codebook`).
    errors : {"raise", "collect", "warn"}
        dentalkit's one ``errors=`` rule (:func:`dentalkit.errors.check_errors`).
        ``"raise"`` (default): raise :class:`~dentalkit.errors.ManifestError` listing every
        bad value when any row is invalid. ``"collect"``: return the valid rows and a
        problems table instead. ``"warn"``: return the valid rows and emit one
        :class:`~dentalkit.errors.DentalkitWarning` naming the bad ones.

    Returns
    -------
    encoded : pandas.DataFrame
        Columns ``p01`` … ``p11`` (dtype ``str``), the patients' index; in collect mode only
        the valid rows.
    problems : pandas.DataFrame
        Only with ``errors="collect"``: one row per bad value, columns
        :data:`PROBLEM_COLUMNS` (``row`` is the 0-based position of the patient row,
        ``index_label`` its label, ``field`` the column, ``value`` the offending value as
        text, ``reason`` what is allowed).

    Raises
    ------
    ManifestError
        ``errors="raise"`` and some value is invalid (``.problems`` holds the table).
    InputError
        ``patients`` is not a DataFrame or lacks a codebook column (raised in both modes:
        no row could be encoded).

    Examples
    --------
    >>> import pandas as pd
    >>> row = dict(
    ...     age_years=14.9,
    ...     sex="Female",
    ...     malocclusion_class="II/1",
    ...     crowding="mild",
    ...     spacing="none",
    ...     overjet_mm=4.25,
    ...     overbite_mm=3,
    ...     crossbite=False,
    ...     open_bite="no",
    ...     extraction=1,
    ...     difficulty_score=6.5,
    ... )
    >>> encode(pd.DataFrame([row])).iloc[0].tolist()
    ['14', 'F', '2', '1', '0', '4.3', '3.0', '0', '0', '1', '6.5']
    """
    errors = check_errors(errors, "dentalkit.tle.encode")
    book = load_codebook(codebook)
    _check_table(patients, book)
    encoded: dict[str, pd.Series] = {}
    problems: list[pd.DataFrame] = []
    masks: list[np.ndarray] = []
    bad_rows = np.zeros(len(patients), dtype=bool)
    for p in book:
        codes, reasons = encode_column(p, patients[p.column])
        encoded[p.param] = pd.Series(codes, index=patients.index, dtype="str")
        bad = reasons != None  # noqa: E711
        if bad.any():
            bad_rows |= bad
            masks.append(bad)
            problems.append(_problem_rows(patients, p, bad, reasons[bad]))
    table = pd.DataFrame(encoded, index=patients.index)
    if problems:  # in row order, then parameter order
        problem_table = pd.concat(problems, ignore_index=True)
        order = np.argsort(np.concatenate([np.flatnonzero(m) for m in masks]), kind="stable")
        problem_table = problem_table.take(order).reset_index(drop=True)
    else:
        problem_table = _empty_problems(patients.index)
    if errors == "raise":
        if len(problem_table):
            raise ManifestError(problem_table, what="patients table")
        return table
    if errors == "warn":
        if len(problem_table):
            first = problem_table.iloc[0]
            warnings.warn(
                f"{int(bad_rows.sum())} of {len(table)} patient row(s) left out: "
                f"{len(problem_table)} invalid value(s), e.g. row {first['row']} (0-based position) "
                f"{first['field']}={first['value']!r}: {first['reason']}. Pass "
                "errors='collect' to get the problems table",
                DentalkitWarning,
                stacklevel=2,
            )
        return table.loc[~bad_rows]
    return table.loc[~bad_rows], problem_table


def encode_column(p: Parameter, values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Encode one typed column; return ``(codes, reasons)`` as object arrays.

    ``codes[i]`` is the query string (``None`` where invalid) and ``reasons[i]`` what is
    wrong (``None`` where valid), in the order of ``values``. Text and categorical columns
    are validated once per distinct value (``pandas.factorize``), then spread back.
    """
    if p.dtype == "number" and (
        ptypes.is_numeric_dtype(values.dtype) or ptypes.is_bool_dtype(values.dtype)
    ):
        missing = values.isna().to_numpy(dtype=bool, copy=True)
        codes, reasons = _encode_number(p, values)
    else:
        which, uniques = pd.factorize(values.astype("str"), use_na_sentinel=True)
        text = pd.Series(uniques, dtype="str").str.strip()
        encoder = _encode_number if p.dtype == "number" else _encode_level
        unique_codes, unique_reasons = encoder(p, text)
        blank = np.append(text.eq("").to_numpy(dtype=bool, na_value=False), True)
        missing = blank[which]  # which == -1 (NA) picks the appended True
        codes = np.append(unique_codes, None)[which]
        reasons = np.append(unique_reasons, None)[which]
    reasons[missing] = (
        "missing value: the service needs all eleven parameters and the codebook defines "
        f"no default; give {p.allowed()}"
    )
    codes[reasons != None] = None  # noqa: E711 (element-wise comparison)
    return codes, reasons


def _encode_number(p: Parameter, values: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Numbers from a numeric/bool column or from (distinct, stripped) text."""
    n = len(values)
    reasons = np.full(n, None, dtype=object)
    if ptypes.is_bool_dtype(values.dtype):
        numbers = np.full(n, np.nan)
        reasons[:] = f"True/False is not a number; give {p.allowed()}"
    elif ptypes.is_numeric_dtype(values.dtype):
        numbers = values.astype("Float64").to_numpy(dtype=float, na_value=np.nan)
    else:
        syntax = values.str.fullmatch(_NUMBER).to_numpy(dtype=bool, na_value=False)
        nonfinite = values.str.fullmatch(_NONFINITE, case=False).to_numpy(
            dtype=bool, na_value=False
        )
        comma = values.str.fullmatch(_DECIMAL_COMMA).to_numpy(dtype=bool, na_value=False)
        numbers = pd.to_numeric(values.where(syntax), errors="coerce").to_numpy(float, copy=True)
        numbers[nonfinite] = np.inf  # reported below as not finite
        reasons[~syntax & ~nonfinite] = f"not a number; give {p.allowed()} as digits (no units)"
        reasons[comma] = "decimal comma; write the number with a dot (4.5, not 4,5)"
    finite = np.isfinite(numbers)
    unexplained = reasons == None  # noqa: E711
    reasons[unexplained & ~finite] = f"not a finite number; give {p.allowed()}"
    ok = finite & (np.abs(np.where(finite, numbers, 0.0)) < _HUGE)
    scale = 10 ** int(p.decimals)
    scaled = np.zeros(n, dtype=np.int64)
    x = numbers[ok] * scale
    if p.rounding == "floor":
        scaled[ok] = np.floor(np.round(x, _NOISE_DECIMALS))
    else:
        scaled[ok] = np.sign(x) * np.floor(np.round(np.abs(x), _NOISE_DECIMALS) + 0.5)
    lo = int(np.ceil(round(p.minimum * scale, _NOISE_DECIMALS)))
    hi = int(np.floor(round(p.maximum * scale, _NOISE_DECIMALS)))
    which, distinct = pd.factorize(scaled)  # format each distinct integer once
    codes = _format_scaled(np.asarray(distinct, dtype=np.int64), p.decimals).astype(object)[which]
    outside = unexplained & finite & (~ok | (scaled < lo) | (scaled > hi))
    if outside.any():  # messages only for the offending rows
        shown = values.astype("str").to_numpy(dtype=object)[outside].astype(str)
        changed = ok[outside] & (scaled[outside] != numbers[outside] * scale)
        rule = "floored" if p.rounding == "floor" else "rounded"
        suffix = np.where(
            changed, np.char.add(np.char.add(f" ({rule} to ", codes[outside].astype(str)), ")"), ""
        )
        unit = f" {p.unit}" if p.unit else ""
        reasons[outside] = np.char.add(
            np.char.add(shown, suffix), f" is outside {p.minimum:g} … {p.maximum:g}{unit}"
        )
    return codes, reasons


def _format_scaled(scaled: np.ndarray, decimals: int) -> np.ndarray:
    """Integers scaled by 10**decimals → exact decimal strings (``-43`` → ``"-4.3"``)."""
    if scaled.size == 0:
        return np.array([], dtype=str)
    magnitude = np.abs(scaled)
    scale = 10**decimals
    whole = (magnitude // scale).astype(str)
    if decimals:
        frac = np.char.zfill((magnitude % scale).astype(str), decimals)
        whole = np.char.add(np.char.add(whole, "."), frac)
    return np.where(scaled < 0, np.char.add("-", whole), whole)


def _encode_level(p: Parameter, text: pd.Series) -> tuple[np.ndarray, np.ndarray]:
    """Category/boolean codes of (distinct, stripped) text."""
    norm = text.str.replace(r"\s+", " ", regex=True).str.casefold()
    is_number = norm.str.fullmatch(_NUMBER).to_numpy(dtype=bool, na_value=False)
    if p.dtype == "boolean" and is_number.any():  # 1.0 / 0.0 / "1.00" → "1" / "0"
        number = pd.to_numeric(norm.where(is_number), errors="coerce").to_numpy(float)
        norm = norm.mask(number == 1, "1").mask(number == 0, "0")
    codes = norm.map({k: dict(p.levels)[v] for k, v in p.lookup.items()}).to_numpy(
        dtype=object, na_value=None
    )
    bad = (codes == None) & text.ne("").to_numpy(dtype=bool, na_value=False)  # noqa: E711
    reasons = np.full(len(text), None, dtype=object)
    reasons[bad] = f"not accepted; give {p.allowed()}"
    if p.dtype == "category":
        reasons[bad & is_number] = (
            f"a number is not accepted for a category (ambiguous); give {p.allowed()}"
        )
    return codes, reasons


def _check_table(patients: pd.DataFrame, book: Codebook) -> None:
    if not isinstance(patients, pd.DataFrame):
        raise InputError(
            f"patients must be a pandas DataFrame with one row per patient, got "
            f"{type(patients).__name__}; for one patient use pd.DataFrame([record])"
        )
    absent = [p for p in book if p.column not in patients.columns]
    if absent:
        listing = ", ".join(f"{p.column} ({p.param}, {p.meaning})" for p in absent)
        raise InputError(
            f"patients table lacks column(s) {listing}; rename your columns "
            f"(patients.rename(columns={{...}})) or pass a codebook naming them "
            f"(codebook {book.source})"
        )


def _problem_rows(
    patients: pd.DataFrame, p: Parameter, bad: np.ndarray, reasons: np.ndarray
) -> pd.DataFrame:
    n = int(bad.sum())
    ids = (
        patients["patient_id"].astype("str").to_numpy()[bad]
        if "patient_id" in patients.columns
        else [pd.NA] * n
    )
    table = pd.DataFrame(
        {
            "table": "patients",
            "endpoint": "tle",
            "patient_id": pd.Series(ids, dtype="str"),
            "row": np.flatnonzero(bad),
            "field": p.column,
            "path": p.column,
            "value": patients[p.column].astype("str").to_numpy()[bad],
            "reason": reasons,
            "severity": "error",
            "param": pd.Series([p.param] * n, dtype="str"),
            "index_label": pd.Series(patients.index[bad], dtype=object),
        }
    )
    return problems_frame(table)


def _empty_problems(index: pd.Index) -> pd.DataFrame:
    table = problems_frame(pd.DataFrame(columns=list(PROBLEM_COLUMNS)), severity="error")
    return table.astype({"param": "str"})


def decode(encoded: pd.DataFrame, codebook: Codebook | str | None = None) -> pd.DataFrame:
    """Turn ``p01`` … ``p11`` strings back into typed, canonical patient columns.

    Parameters
    ----------
    encoded : pandas.DataFrame
        A table with columns ``p01`` … ``p11`` as sent (e.g. the output of :func:`encode`
        or of :func:`~dentalkit.tle.estimate`).
    codebook : Codebook or path, optional
        Default: the shipped codebook.

    Returns
    -------
    pandas.DataFrame
        The codebook's typed columns (numbers ``float64``, categories ``category`` with the
        codebook's labels in order, booleans ``bool``), same index.

    Raises
    ------
    ManifestError
        A string the codebook does not produce (every one listed).

    Examples
    --------
    >>> import pandas as pd
    >>> enc = pd.DataFrame(
    ...     [["14", "F", "2", "1", "0", "4.3", "3.0", "0", "0", "1", "6.5"]],
    ...     columns=[f"p{i:02d}" for i in range(1, 12)],
    ... )
    >>> decode(enc)[["age_years", "malocclusion_class", "extraction"]]
       age_years malocclusion_class  extraction
    0       14.0               II/1        True
    """
    book = load_codebook(codebook)
    absent = [p.param for p in book if p.param not in encoded.columns]
    if absent:
        raise InputError(f"encoded table lacks column(s) {absent}; expected p01 … p11")
    out: dict[str, pd.Series] = {}
    problems = []
    for p in book:
        text = encoded[p.param].astype("str")
        if p.dtype == "number":
            values = pd.to_numeric(text.where(text.str.fullmatch(_NUMBER)), errors="coerce")
            bad = values.isna() | ~values.between(p.minimum, p.maximum)
            out[p.column] = values.astype("float64")
            allowed = f"a decimal number from {p.minimum:g} to {p.maximum:g}"
        else:
            labels = text.map({code: label for label, code in p.levels})
            bad = labels.isna()
            allowed = "one of the codes " + ", ".join(p.codes)
            if p.dtype == "boolean":
                yes = next(lab for lab in p.labels if lab.casefold() == "yes")
                out[p.column] = labels.eq(yes).astype(bool)
            else:
                out[p.column] = pd.Series(
                    pd.Categorical(labels, categories=list(p.labels)), index=encoded.index
                )
        mask = bad.to_numpy()
        if mask.any():
            problems.append(
                pd.DataFrame(
                    {
                        "table": "encoded",
                        "endpoint": "tle",
                        "row": np.flatnonzero(mask),
                        "field": p.param,
                        "path": p.param,
                        "value": text[mask].to_numpy(),
                        "reason": f"not a code of {p.param} ({p.meaning}); expected {allowed}",
                        "severity": "error",
                        "param": p.param,
                        "index_label": pd.Series(encoded.index[mask], dtype=object),
                    }
                )
            )
    if problems:
        raise ManifestError(
            problems_frame(pd.concat(problems, ignore_index=True)), what="encoded table"
        )
    return pd.DataFrame(out, index=encoded.index)
