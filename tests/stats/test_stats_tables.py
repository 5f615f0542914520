"""``duplicated_rows`` answers exactly as ``DataFrame.duplicated`` (its oracle)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dentalkit.stats._tables import duplicated_rows

_VALUES = st.one_of(st.none(), st.sampled_from(["a", "b", "c"]))


@st.composite
def _tables(draw: st.DrawFn) -> pd.DataFrame:
    n = draw(st.integers(0, 40))
    columns = {
        "cat": pd.Categorical(draw(st.lists(_VALUES, min_size=n, max_size=n))),
        "text": pd.Series(draw(st.lists(_VALUES, min_size=n, max_size=n)), dtype="str"),
        "number": draw(st.lists(st.sampled_from([1.0, 2.0, np.nan]), min_size=n, max_size=n)),
    }
    return pd.DataFrame(columns)


@settings(max_examples=200, deadline=None)
@given(_tables(), st.sampled_from(["first", "last", False]))
def test_duplicated_rows_agrees_with_pandas(table: pd.DataFrame, keep) -> None:
    for columns in (["cat"], ["cat", "text"], ["text", "number"], ["cat", "text", "number"]):
        expected = table.duplicated(columns, keep=keep).to_numpy()
        np.testing.assert_array_equal(duplicated_rows(table, columns, keep=keep), expected)


@pytest.mark.parametrize("space", ["bincount", "hash"])
def test_duplicated_rows_large_key_spaces(space: str) -> None:
    # many distinct keys: the bincount path; a key space far above the row count: hashing
    rng = np.random.default_rng(1)
    n = 5_000
    high = 50 if space == "bincount" else 10**6
    a, b = rng.integers(0, high, n), rng.integers(0, high, n)
    again = rng.integers(0, n, 300)  # some rows for sure twice
    table = pd.DataFrame(
        {
            "a": pd.Categorical(np.r_[a, a[again]]),
            "b": pd.Categorical(np.r_[b, b[again]]),
        }
    )
    expected = table.duplicated(["a", "b"]).to_numpy()
    assert expected.any()
    np.testing.assert_array_equal(duplicated_rows(table, ["a", "b"]), expected)
