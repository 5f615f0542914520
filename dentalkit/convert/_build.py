"""Typed tables from flat columns: categoricals from codes, the session key, the check."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from dentalkit.convert import schemas
from dentalkit.convert._requests import Requests
from dentalkit.convert._values import key_text

_STR = pd.StringDtype(na_value=np.nan)


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

    def codes(self, keys: list) -> np.ndarray:
        """Codes of ``keys`` (validated as map keys on first sight)."""
        if keys == self._last:
            return self._last_codes
        t = tuple(keys)
        c = self._seqs.get(t)
        if c is None:
            index = self.index
            for k in keys:
                if k not in index:
                    key_text(k, self.base)
            for k in keys:
                if k not in index:
                    index[k] = len(index)
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
