"""Keyed pseudonyms of patient identifiers (implementation of :func:`dentalkit.io.pseudonymize`).

A pseudonym is ``prefix`` + the first ``length`` upper-case hex digits of
HMAC-SHA256(secret, patient_id as UTF-8) (RFC 2104 with SHA-256, FIPS 180-4). The
same secret gives the same pseudonym in every table, every run and every language:
R's ``toupper(substr(digest::hmac(secret, id, "sha256"), 1, 12))`` gives the same
digits. Without the secret the mapping cannot be recomputed, so a list of candidate
identifiers (a clinic's numbering, a birth-date scheme) cannot be hashed and matched.
"""

from __future__ import annotations

import hashlib
import hmac
import re
from collections.abc import Mapping
from typing import Any, Literal, overload

import numpy as np
import pandas as pd

from dentalkit.errors import DentalkitWarning, InputError

__all__ = ["MIN_SECRET_BYTES", "PSEUDONYM_ATTR", "pseudonymize"]

#: Shortest accepted secret, in bytes once UTF-8 encoded: the SHA-256 output length,
#: below which RFC 2104 (section 3) says an HMAC key weakens the construction.
MIN_SECRET_BYTES = 32

#: Key of ``DataFrame.attrs`` that records how a column was pseudonymized (never the secret).
PSEUDONYM_ATTR = "dentalkit_pseudonymized"

_MIN_DISTINCT_BYTES = 8  # "aaaa…" or "0000…" is a placeholder, not a secret
_MIN_SCANNED_ID = 4  # shorter identifiers match too much unrelated text to be searched for
_TOKEN = re.compile(r"[0-9A-Za-z]+")
_GENERATE = 'python -c "import secrets; print(secrets.token_urlsafe(32))"'
# columns of the responses store that carry the identifier in a form a name cannot fix
_RAW_COLUMNS = ("request_key", "body")


def _key(secret: str | bytes) -> bytes:
    if isinstance(secret, str):
        key = secret.encode("utf-8")
    elif isinstance(secret, bytes | bytearray):
        key = bytes(secret)
    else:
        raise InputError(
            f"secret must be a str or bytes, got {type(secret).__name__}; read it from an "
            "environment variable or a file outside the project, e.g. "
            "os.environ['STUDY_PSEUDONYM_SECRET']"
        )
    if len(key) < MIN_SECRET_BYTES:
        raise InputError(
            f"the pseudonymization secret is {'empty' if not key else f'{len(key)} bytes long'}; "
            f"it must be at least {MIN_SECRET_BYTES} bytes (RFC 2104: an HMAC-SHA256 key "
            f"shorter than the 32-byte hash weakens it). Generate one with {_GENERATE} and "
            "keep it outside the project (a password manager or the study's key store)"
        )
    if len(set(key)) < _MIN_DISTINCT_BYTES:
        raise InputError(
            f"the pseudonymization secret uses only {len(set(key))} distinct characters; it "
            f"looks like a placeholder. Generate a random one with {_GENERATE}"
        )
    return key


def _digest(key: bytes, ids: np.ndarray) -> np.ndarray:
    """Upper-case hex HMAC-SHA256 of each identifier (one call per distinct identifier)."""
    return np.array(
        [hmac.new(key, s.encode("utf-8"), hashlib.sha256).hexdigest().upper() for s in ids],
        dtype=object,
    )


def _as_text(values: pd.Series, table: str, column: str) -> pd.Series:
    """The identifiers as strings; refuse types whose text form is ambiguous."""
    dtype = values.dtype
    if isinstance(dtype, pd.CategoricalDtype):
        dtype = dtype.categories.dtype
    if pd.api.types.is_float_dtype(dtype) or pd.api.types.is_bool_dtype(dtype):
        raise InputError(
            f"table {table!r}: column {column!r} has dtype {values.dtype}; identifiers must be "
            "strings or integers (1.0 and 1 would get different pseudonyms). Convert it, e.g. "
            f"df[{column!r}] = df[{column!r}].astype('Int64').astype(str)"
        )
    if isinstance(values.dtype, pd.CategoricalDtype):  # unused levels are identifiers too
        present = values.cat.categories.to_numpy(dtype=object)
    else:
        present = values.dropna().unique()
    bad = [v for v in present if not isinstance(v, str | int | np.integer)]
    if bad:
        raise InputError(
            f"table {table!r}: column {column!r} holds a {type(bad[0]).__name__} ({bad[0]!r}); "
            "identifiers must be strings or integers"
        )
    return pd.Series([str(v) for v in present], dtype=object)


def _check_raw(df: pd.DataFrame, table: str) -> None:
    raw = [c for c in _RAW_COLUMNS if c in df.columns]
    if raw:
        raise InputError(
            f"table {table!r} has column(s) {raw}: the responses store keeps the request "
            "(request_key is a hash of the PatientID, body echoes it), which no pseudonym can "
            "replace. Publish the converted analysis tables (dentalkit.convert.tables), not "
            "the responses table, or drop these columns first"
        )


def _scan(
    df: pd.DataFrame, table: str, column: str, tokens: set[str], compound: list[str]
) -> list[str]:
    """Other text columns in which an original identifier appears as a whole token."""
    found = []
    for name, col in df.items():
        if name == column:
            continue
        if isinstance(col.dtype, pd.CategoricalDtype):
            values = pd.Series(col.cat.categories.astype(object))
        elif pd.api.types.is_string_dtype(col.dtype) or col.dtype == object:
            try:
                present = col.dropna().unique()
            except TypeError:  # list cells (groups, not_identified …): scan their items
                present = col.dropna().explode().dropna().unique()
            values = pd.Series(present)
            values = values[values.map(lambda v: isinstance(v, str))]
        else:
            continue
        if not len(values):
            continue
        values = values.astype(str)
        hit = values.str.findall(_TOKEN).explode().isin(tokens).groupby(level=0).any()
        if compound:
            hit |= values.map(lambda v: any(c in v for c in compound))
        if hit.any():
            example = values[hit.to_numpy()].iloc[0]
            found.append(f"{table}.{name} (e.g. {example[:80]!r})")
    return found


@overload
def pseudonymize(
    tables: pd.DataFrame,
    secret: str | bytes,
    *,
    column: str = ...,
    prefix: str = ...,
    length: int = ...,
    mapping: Literal[False] = ...,
    on_leak: Literal["raise", "warn", "ignore"] = ...,
) -> pd.DataFrame: ...
@overload
def pseudonymize(
    tables: Mapping[str, pd.DataFrame],
    secret: str | bytes,
    *,
    column: str = ...,
    prefix: str = ...,
    length: int = ...,
    mapping: Literal[False] = ...,
    on_leak: Literal["raise", "warn", "ignore"] = ...,
) -> dict[str, pd.DataFrame]: ...
@overload
def pseudonymize(
    tables: pd.DataFrame | Mapping[str, pd.DataFrame],
    secret: str | bytes,
    *,
    column: str = ...,
    prefix: str = ...,
    length: int = ...,
    mapping: Literal[True],
    on_leak: Literal["raise", "warn", "ignore"] = ...,
) -> tuple[Any, pd.DataFrame]: ...
def pseudonymize(
    tables,
    secret,
    *,
    column="patient_id",
    prefix="P",
    length=12,
    mapping=False,
    on_leak="raise",
):
    """Replace patient identifiers by keyed pseudonyms, consistently across tables.

    Each identifier becomes ``prefix`` followed by the first ``length`` upper-case hex
    digits of HMAC-SHA256(``secret``, identifier as UTF-8) — RFC 2104 HMAC with SHA-256.
    The same secret gives the same pseudonym in every table and every run, so tables
    pseudonymized separately still join; without the secret nobody can recompute the
    mapping, so hashing a list of candidate identifiers and matching is not possible.
    The secret is used only in memory: it is never stored in the returned tables, their
    ``attrs`` or anything :func:`dentalkit.io.export` writes.

    Parameters
    ----------
    tables : pandas.DataFrame or mapping of str to pandas.DataFrame
        One table or several by name (e.g. the dict of :func:`dentalkit.convert.tables`
        or analysis results). Tables without ``column`` pass through unchanged (but are
        still searched for identifiers, see ``on_leak``). Inputs are not modified.
    secret : str or bytes
        At least 32 bytes (UTF-8), random, kept **outside** the project: a password
        manager or the study's key store, read e.g. from an environment variable.
        Generate one with ``python -c "import secrets; print(secrets.token_urlsafe(32))"``.
        Losing it means new data can no longer be given the same pseudonyms.
    column : str
        The identifier column (strings or integers; nulls stay null).
    prefix : str
        Text before the hex digits (``"P"`` → ``P3F9A0C21D7B4``).
    length : int
        Hex digits kept, 8–64. Twelve digits are 48 bits: for 10,000 patients the chance
        of any two sharing a pseudonym is about n²/2⁴⁹ ≈ 2·10⁻⁷, and a collision is
        detected and raised rather than merging two patients.
    mapping : bool
        Also return the mapping table (``patient_id``, ``pseudonym``). **It is as
        sensitive as the original data** — it re-identifies every row: keep it with the
        identifiable data, never with the published tables.
    on_leak : {"raise", "warn", "ignore"}
        What to do when an original identifier (of 4 or more characters) appears as a
        whole token (delimited by anything but a letter or digit) in another text
        column — e.g. an ``image_url`` like ``https://pacs/P001/ceph.png`` or an
        ``image_name``. Such a column would undo the pseudonymization.

    Returns
    -------
    pandas.DataFrame or dict of str to pandas.DataFrame
        Same shape, index and column order as the input. A categorical ``column``
        stays categorical, with its categories sorted by pseudonym (so their order
        does not reveal the order of the original identifiers); any other column
        becomes ``str``. ``attrs["dentalkit_pseudonymized"]`` records column, method,
        prefix and length (never the secret). Row order is kept: sort by the
        pseudonym before publishing if row order follows recruitment.
    pandas.DataFrame, optional
        The mapping table, only with ``mapping=True``.

    Raises
    ------
    InputError
        Short, empty or placeholder secret; bad ``length``/``prefix``; no table has
        ``column``; float or boolean identifiers; two identifiers sharing a pseudonym
        (use a larger ``length``); the ``responses`` table (``request_key`` and ``body``
        carry the PatientID in hashed and echoed form: publish the converted tables);
        with ``on_leak="raise"``, an identifier found in another column.

    Notes
    -----
    Pseudonymized data are still personal data (GDPR Recital 26): dates of sessions
    (``timestamp``, ``session_time``), ages, sex and rare findings are quasi-identifiers
    that this function does not touch.

    Examples
    --------
    >>> import pandas as pd
    >>> from dentalkit import io
    >>> secret = "x7Qm2r9LkV0pZs4tB8wNcE1yHa6uJd3F"  # in practice: read it, never write it
    >>> ceph = pd.DataFrame({"patient_id": ["P001", "P002"], "SNA": [81.5, 83.0]})
    >>> teeth = pd.DataFrame({"patient_id": ["P002"], "fdi": [16]})
    >>> out = io.pseudonymize({"ceph": ceph, "teeth": teeth}, secret)
    >>> out["ceph"]["patient_id"].tolist()
    ['PFA12BF496CC1', 'PDB207A4C0503']
    >>> out["teeth"]["patient_id"].tolist()  # the same patient, the same pseudonym
    ['PDB207A4C0503']
    """
    key = _key(secret)
    if (
        not isinstance(length, int | np.integer)
        or isinstance(length, bool)
        or not 8 <= length <= 64
    ):
        raise InputError(f"length={length!r}: use a whole number of hex digits from 8 to 64")
    if not isinstance(prefix, str):
        raise InputError(f"prefix must be a str, got {type(prefix).__name__}")
    if on_leak not in ("raise", "warn", "ignore"):
        raise InputError(f"on_leak={on_leak!r}: use 'raise', 'warn' or 'ignore'")
    single = isinstance(tables, pd.DataFrame)
    named: dict[str, pd.DataFrame] = {"table": tables} if single else dict(tables)
    for name, df in named.items():
        if not isinstance(df, pd.DataFrame):
            raise InputError(f"table {name!r} is a {type(df).__name__}, not a pandas DataFrame")
        _check_raw(df, name)
    with_column = [n for n, df in named.items() if column in df.columns]
    if not with_column:
        raise InputError(
            f"no table has a column {column!r} (tables: {', '.join(named) or 'none'}); "
            "name the identifier column with column=..."
        )

    ids = pd.concat(
        [_as_text(named[n][column], n, column) for n in with_column], ignore_index=True
    ).unique()
    digests = _digest(key, ids)
    pseudonyms = np.array([prefix + d[:length] for d in digests], dtype=object)
    lookup = dict(zip(ids, pseudonyms, strict=True))
    if len(set(pseudonyms)) < len(ids):
        raise InputError(
            f"{len(ids)} identifiers share fewer than {len(ids)} pseudonyms at length={length}; "
            "two patients would be merged. Use a larger length (e.g. 16)"
        )

    if on_leak != "ignore":
        scanned = [i for i in ids if len(i) >= _MIN_SCANNED_ID]
        tokens = {i for i in scanned if _TOKEN.fullmatch(i)}
        compound = [i for i in scanned if i not in tokens]
        leaks = [hit for n, df in named.items() for hit in _scan(df, n, column, tokens, compound)]
        if leaks:
            text = (
                f"original identifiers of {column!r} also appear in: {'; '.join(leaks)}. "
                "Drop or rewrite these columns before publishing (or on_leak='ignore' if "
                "the matches are not identifiers)"
            )
            if on_leak == "raise":
                raise InputError(text)
            import warnings

            warnings.warn(text, DentalkitWarning, stacklevel=2)

    record = {"column": column, "method": "HMAC-SHA256", "prefix": prefix, "length": int(length)}
    out: dict[str, pd.DataFrame] = {}
    for name, df in named.items():
        if column not in df.columns:
            out[name] = df.copy()
            continue
        col = df[column]
        if isinstance(col.dtype, pd.CategoricalDtype):
            old = col.cat.categories.astype(object)
            new = np.array([lookup[str(v)] for v in old], dtype=object)
            order = np.argsort(new, kind="stable")
            codes = col.cat.codes.to_numpy()
            remap = np.empty(len(order), dtype=codes.dtype)
            remap[order] = np.arange(len(order), dtype=codes.dtype)
            new_codes = np.where(codes < 0, codes, remap[np.maximum(codes, 0)])
            values = pd.Categorical.from_codes(
                new_codes,
                categories=pd.Index(new[order], dtype="str"),
                ordered=col.cat.ordered,
            )
            replaced = pd.Series(values, index=df.index, name=column)
        else:
            codes, uniques = pd.factorize(col, use_na_sentinel=True)
            new = np.array([lookup[str(u)] for u in uniques] + [None], dtype=object)
            replaced = pd.Series(new[codes], index=df.index, name=column, dtype="str")
        result = df.copy()
        result[column] = replaced
        result.attrs = {**df.attrs, PSEUDONYM_ATTR: dict(record)}
        out[name] = result

    result_tables: Any = out["table"] if single else out
    if not mapping:
        return result_tables
    table = pd.DataFrame(
        {column: pd.Series(ids, dtype="str"), "pseudonym": pd.Series(pseudonyms, dtype="str")}
    ).sort_values(column, ignore_index=True)
    table.attrs["sensitive"] = (
        "re-identifies every pseudonymized row: store it with the identifiable data, never "
        "with the published tables"
    )
    return result_tables, table
