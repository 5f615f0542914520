"""The /tle codebook: the shipped file, and every way a user codebook can be wrong."""

from __future__ import annotations

import doctest
import re

import pandas as pd
import pytest

from dentalkit.errors import InputError
from dentalkit.tle import codebook as codebook_module
from dentalkit.tle import encoding, load_codebook, stats
from dentalkit.tle.codebook import Codebook

SHIPPED = load_codebook()


def shipped_table() -> pd.DataFrame:
    from importlib import resources

    with (
        resources.files("dentalkit.data").joinpath("tle_codebook.csv").open(encoding="utf-8") as fh
    ):
        return pd.read_csv(fh, dtype=str, keep_default_na=False)


def test_shipped_codes_are_stable():
    # The sandbox validates /tle queries against these codes: pinned by hand here.
    expected = {
        "p02": ("F", "M"),
        "p03": ("1", "2", "3", "4"),
        "p04": ("0", "1", "2", "3"),
        "p05": ("0", "1", "2", "3"),
        "p08": ("0", "1"),
        "p09": ("0", "1"),
        "p10": ("0", "1"),
    }
    assert {p.param: p.codes for p in SHIPPED if p.codes} == expected
    ranges = {
        p.param: (p.minimum, p.maximum, p.decimals, p.rounding) for p in SHIPPED if not p.codes
    }
    assert ranges == {
        "p01": (6.0, 80.0, 0, "floor"),
        "p06": (-10.0, 20.0, 1, "half_up"),
        "p07": (-10.0, 15.0, 1, "half_up"),
        "p11": (0.0, 10.0, 1, "half_up"),
    }
    assert SHIPPED.params == tuple(f"p{i:02d}" for i in range(1, 12))


def test_shipped_codebook_agrees_with_the_sandbox_validator():
    from dentalkit.sandbox.validate import tle_accepted_values

    accepted = tle_accepted_values()
    for p in SHIPPED:
        if p.codes:
            assert accepted[p.param] == list(p.codes)
        else:  # every value from minimum to maximum, written with `decimals` places
            steps = round((p.maximum - p.minimum) * 10**p.decimals)
            assert len(accepted[p.param]) == steps + 1
            assert accepted[p.param][0] == f"{p.minimum:.{p.decimals}f}"
            assert accepted[p.param][-1] == f"{p.maximum:.{p.decimals}f}"


def test_shipped_meanings_follow_the_registry():
    from dentalkit.endpoints import TLE_PARAMETERS

    assert [p.meaning for p in SHIPPED] == [q.meaning for q in TLE_PARAMETERS]


def test_lookup_by_param_or_column_and_unknown_key():
    assert SHIPPED["p04"] is SHIPPED["crowding"]
    with pytest.raises(InputError, match="neither a /tle parameter"):
        SHIPPED["nope"]


def test_table_view_lists_every_parameter():
    t = SHIPPED.table()
    assert t["param"].tolist() == list(SHIPPED.params)
    assert t.loc[t["param"] == "p02", "encoding"].item() == "female → F, male → M"


def test_dataframe_and_csv_path_and_codebook_inputs(tmp_path):
    table = shipped_table()
    path = tmp_path / "book.csv"
    table.to_csv(path, index=False)
    from_path = load_codebook(path)
    from_frame = load_codebook(table)
    assert from_path.parameters == SHIPPED.parameters == from_frame.parameters
    assert load_codebook(SHIPPED) is SHIPPED
    assert isinstance(from_path, Codebook)


def test_rows_in_any_order_are_returned_in_parameter_order():
    table = shipped_table().iloc[::-1]
    assert load_codebook(table).params == SHIPPED.params


def test_optional_columns_may_be_absent():
    table = shipped_table().drop(columns=["meaning", "unit", "aliases", "notes", "rounding"])
    book = load_codebook(table)
    assert book["p01"].rounding == "half_up"  # documented default without the column
    assert book["p02"].aliases == {}


def _bad(param: str, column: str, value: str) -> pd.DataFrame:
    table = shipped_table()
    table.loc[table["param"] == param, column] = value
    return table


@pytest.mark.parametrize(
    ("param", "column", "value", "message"),
    [
        ("p01", "param", "p12", r"line 2 \(p12\), column 'param': 'p12' is not a /tle parameter"),
        ("p03", "dtype", "text", r"line 4 \(p03\), column 'dtype': 'text' is not one of"),
        ("p01", "minimum", "six", r"line 2 \(p01\), column 'minimum': 'six' is not a number"),
        ("p01", "maximum", "inf", r"column 'maximum': 'inf' is not a finite number"),
        (
            "p06",
            "maximum",
            "-10",
            r"column 'maximum': maximum -10 must be greater than minimum -10",
        ),
        ("p06", "decimals", "one", r"column 'decimals': 'one' is not a whole number"),
        ("p06", "decimals", "9", r"column 'decimals': 9 is outside 0 … 6"),
        ("p06", "rounding", "ceil", r"column 'rounding': 'ceil' is not one of floor, half_up"),
        ("p06", "levels", "a:1", r"column 'levels': must be empty for a number"),
        ("p02", "minimum", "0", r"column 'minimum': must be empty for a category"),
        ("p02", "levels", "", r"column 'levels': empty"),
        ("p02", "levels", "female-F|male:M", r"'female-F' is not label:code"),
        ("p02", "levels", "female:F|Female:W", r"label 'Female' appears twice"),
        ("p02", "levels", "female:F|male:F", r"code 'F' is used for two labels"),
        ("p08", "levels", "absent:0|present:1", r"a boolean needs exactly the labels no and yes"),
        ("p02", "aliases", "x:other", r"'x:other' points to 'other', which is not a label"),
        ("p02", "aliases", "f:female|F:male", r"'F' already means 'female'"),
        ("p02", "aliases", "male:female", r"'male' already means 'male'"),
        ("p02", "aliases", "nocolon", r"'nocolon' is not alias:label"),
        ("p08", "aliases", "1:no", r"'1' always means 'yes' for a boolean"),
        ("p02", "column", "", r"column 'column': empty"),
        ("p02", "column", "p05", r"'p05' is reserved for the encoded output"),
        ("p02", "column", "estimate_length_months", r"is reserved"),
        ("p02", "column", "age_years", r"line 3 \(p02\), column 'column': 'age_years' is already"),
    ],
)
def test_bad_user_codebook_names_line_param_and_column(param, column, value, message):
    with pytest.raises(InputError, match=message):
        load_codebook(_bad(param, column, value))


def test_missing_required_column():
    with pytest.raises(InputError, match=r"lacks column\(s\) \['levels'\]"):
        load_codebook(shipped_table().drop(columns=["levels"]))


def test_missing_and_repeated_parameters():
    table = shipped_table()
    with pytest.raises(InputError, match="has no row for p11"):
        load_codebook(table[table["param"] != "p11"])
    repeated = pd.concat([table, table.iloc[[3]]], ignore_index=True)
    with pytest.raises(InputError, match=r"line 13 \(p04\).*p04 appears again \(first on line 5\)"):
        load_codebook(repeated)


def test_unreadable_file(tmp_path):
    with pytest.raises(InputError, match="cannot read the codebook"):
        load_codebook(tmp_path / "absent.csv")
    latin = tmp_path / "latin.csv"
    latin.write_bytes("param,column\n\xe9".encode("latin-1"))
    with pytest.raises(InputError, match="cannot read the codebook"):
        load_codebook(latin)


def test_shipped_file_is_ascii():
    # The sandbox opens it with the locale's encoding.
    from importlib import resources

    raw = resources.files("dentalkit.data").joinpath("tle_codebook.csv").read_bytes()
    assert raw.isascii()


@pytest.mark.parametrize("module", [codebook_module, encoding, stats])
def test_docstring_examples(module):
    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0 and result.failed == 0


def test_docs_table_matches_the_shipped_codebook():
    from pathlib import Path

    docs = (Path(__file__).parents[2] / "docs" / "tle.md").read_text(encoding="utf-8")
    rows = {
        line.split("|")[1].strip(): line
        for line in docs.splitlines()
        if re.match(r"\| p\d\d \|", line)
    }
    assert sorted(rows) == list(SHIPPED.params)
    for p in SHIPPED:
        line = rows[p.param]
        assert f"`{p.column}`" in line and f"| {p.dtype} |" in line, p.param
        for label, code in p.levels:
            assert f"{label} → {code}" in line, (p.param, label)
        if p.dtype == "number":
            assert f"{p.maximum:g}" in line, p.param
    assert "our convention, not the provider's" in docs
