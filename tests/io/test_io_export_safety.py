"""Safe CSV exports: formula cells neutralized by OWASP's rule (only text cells — numbers stay
numbers), control characters refused, every value restored exactly by read_export."""

from __future__ import annotations

import csv
import string
import warnings

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dentalkit import io
from dentalkit.errors import DentalkitWarning, InputError

PAYLOADS = [
    "=cmd|' /C calc'!A0",
    "@SUM(A1)",
    "+1+1",
    "-1-1",
    "=1+1",
    "\t=1+1",
    "\r=1+1",
    "-",
    "'=already quoted",
    "''@x",
    "'t Hooft",
    "-4.5",  # a number written as text: harmless, left alone
    "+12",
    "plain",
]
TRIGGERS = tuple("=+-@\t\r")


def is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return text.strip() == text and text.lower() not in ("nan", "inf", "-inf", "+inf")


def cells(path) -> list[list[str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.reader(fh))


def export(tables, out, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DentalkitWarning)  # undocumented test columns
        return io.export(tables, out, **kw)


def test_no_text_cell_can_start_a_formula_and_numbers_stay_numbers(tmp_path):
    n = len(PAYLOADS)
    df = pd.DataFrame(
        {
            "patient_id": pd.Series([f"P{i}" for i in range(n)], dtype="string"),
            "note": pd.Series(PAYLOADS, dtype="string"),
            "raw": pd.Series(PAYLOADS, dtype=object),
            "label": pd.Categorical(PAYLOADS),
            "value": [-1.5 - i for i in range(n)],
            "count": pd.array([-i for i in range(n)], dtype="Int64"),
        }
    )
    files = export({"t": df}, tmp_path)
    rows = cells(files["t.csv"])
    header, body = rows[0], rows[1:]
    for row in body:
        for name, cell in zip(header, row, strict=True):
            if name in ("value", "count"):
                assert is_number(cell), (name, cell)  # -1.5 is written as -1.5
                continue
            # OWASP: a cell a spreadsheet would evaluate starts with one of these
            assert not cell.startswith(TRIGGERS) or is_number(cell), (name, cell)
    by_note = {r[header.index("raw")] for r in body}
    assert {"'=cmd|' /C calc'!A0", "'@SUM(A1)", "'+1+1", "'\t=1+1", "-4.5", "''=already quoted"} <= by_note  # fmt: skip
    back = io.read_export(tmp_path)["t"]
    pd.testing.assert_frame_equal(back, df)


def test_column_names_and_dictionary_cells_are_neutralized_too(tmp_path):
    df = pd.DataFrame({'=HYPERLINK("http://x")': ["a"], "ok": ["b"]})
    files = export({"t": df}, tmp_path, descriptions={"ok": "=2+3 danger"})
    assert cells(files["t.csv"])[0] == ['\'=HYPERLINK("http://x")', "ok"]
    dictionary = cells(files["data_dictionary.csv"])
    assert not any(c.startswith(TRIGGERS) for row in dictionary for c in row)
    assert "'=2+3 danger" in {c for row in dictionary for c in row}
    back = io.read_export(tmp_path)["t"]
    assert list(back.columns) == list(df.columns)


@pytest.mark.parametrize("char", ["\x00", "\x07", "\x1b", "\x7f"])
def test_control_characters_are_refused_naming_table_column_and_row(tmp_path, char):
    df = pd.DataFrame({"note": ["fine", "also fine", f"bad{char}cell"]})
    with pytest.raises(InputError, match=rf"table 't', column 'note'.*U\+{ord(char):04X} in row 2 \(0-based position\); "):  # fmt: skip
        export({"t": df}, tmp_path)
    assert not (tmp_path / "t.csv").exists()


def test_control_character_rows_follow_the_row_number_rule(tmp_path):
    # docs/conventions.md: a non-manifest table's row is its 0-based position (index label
    # beside it when it differs), and its CSV line is row + 2
    df = pd.DataFrame({"note": ["a", "b", "c", "bad\x07", "e"]}, index=[10, 11, 12, 13, 14])
    with pytest.raises(InputError) as info:
        export({"t": df}, tmp_path, descriptions={"note": "a note"})
    msg = str(info.value)
    assert "in row 3 (0-based position; index label 13); in the CSV it would have written, line = row + 2" in msg  # fmt: skip
    assert "1-based" not in msg
    # the same table without the character: line 3 + 2 of the CSV holds that cell
    files = export({"t": df.replace("bad\x07", "bad")}, tmp_path, descriptions={"note": "a note"})
    assert files["t.csv"].read_text().splitlines()[3 + 2 - 1] == "bad"
    with pytest.raises(InputError, match=r"in the name of column at position 1 \(0-based\)\. A CSV header cannot hold it: rename the column"):  # fmt: skip
        export({"u": pd.DataFrame({"ok": [1], "n\x1bame": [2]})}, tmp_path / "u")


def test_tab_newline_and_carriage_return_inside_a_cell_are_kept(tmp_path):
    df = pd.DataFrame({"note": ["a\tb", "line\nbreak", "cr\rinside"]})
    export({"t": df}, tmp_path)
    pd.testing.assert_frame_equal(io.read_export(tmp_path)["t"], df)


def test_a_pseudonymised_table_carries_no_bare_formula(tmp_path):
    df = pd.DataFrame(
        {"patient_id": ["P001", "P002"], "timestamp": ["=1+1", "2024-03-05"], "x": [-1.0, 2.0]}
    )
    files = export(io.pseudonymize({"t": df}, "x7Qm2r9LkV0pZs4tB8wNcE1yHa6uJd3F"), tmp_path)
    rows = cells(files["t.csv"])
    assert rows[1][rows[0].index("timestamp")] == "'=1+1"
    assert rows[1][rows[0].index("x")] == "-1.0"


text = st.text(st.characters(codec="utf-8", exclude_categories=["Cs", "Cc"]) | st.sampled_from(list("=+-@'\t\r\n" + string.digits)), max_size=12)  # fmt: skip


@settings(max_examples=150, deadline=None, derandomize=True, database=None)
@given(st.lists(text, min_size=1, max_size=8))
def test_property_every_text_value_round_trips_and_no_cell_is_a_formula(tmp_path_factory, values):
    out = tmp_path_factory.mktemp("prop")
    df = pd.DataFrame({"s": pd.Series(values, dtype="string")})
    files = export({"t": df}, out)
    for (cell,) in cells(files["t.csv"])[1:]:
        assert not cell.startswith(TRIGGERS) or is_number(cell)
    back = io.read_export(out)["t"]
    # CSV cannot tell "" from missing (documented): compare the rest exactly
    assert back["s"].fillna("").tolist() == df["s"].tolist()


def test_docstring_examples_of_the_export_module():
    import doctest

    from dentalkit.io import _export

    result = doctest.testmod(_export, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0
