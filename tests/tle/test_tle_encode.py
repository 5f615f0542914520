"""encode/decode: every parameter's boundaries, nonsense values, aliases and round trips.

Expected strings are written by hand or computed with Python's ``decimal`` module
(an implementation independent of dentalkit's vectorized rounding); every encoded row
is also checked against the sandbox's own /tle validator.
"""

from __future__ import annotations

from decimal import ROUND_FLOOR, ROUND_HALF_UP, Decimal

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dentalkit.endpoints import get_endpoint
from dentalkit.errors import InputError, ManifestError
from dentalkit.sandbox.validate import InvalidRequestError, validate_tle_query
from dentalkit.tle import decode, encode, load_codebook

BOOK = load_codebook()
PARAMS = [f"p{i:02d}" for i in range(1, 12)]
BASE = {
    "age_years": 14.0,
    "sex": "female",
    "malocclusion_class": "II/1",
    "crowding": "mild",
    "spacing": "none",
    "overjet_mm": 4.5,
    "overbite_mm": 3.0,
    "crossbite": False,
    "open_bite": False,
    "extraction": True,
    "difficulty_score": 6.5,
}
BASE_CODES = ["14", "F", "2", "1", "0", "4.5", "3.0", "0", "0", "1", "6.5"]


def batch(column: str, values: list, dtype=object) -> tuple[list, list]:
    """Encode one row per value (other columns as BASE); return codes and reasons per row.

    Rows are independent, so one table checks many cases at once (and that independence).
    """
    frame = pd.DataFrame([BASE] * len(values))
    frame[column] = pd.Series(values, dtype=dtype)
    enc, problems = encode(frame, errors="collect")
    assert set(problems["field"]) <= {column}
    codes = enc[BOOK[column].param].reindex(frame.index)
    reasons = problems.set_index("row")["reason"].reindex(frame.index)
    assert (codes.isna() == reasons.notna()).all(), "a row is either encoded or reported"
    return codes.tolist(), reasons.tolist()


def check_codes(column: str, cases: list[tuple], dtype=object) -> None:
    codes, reasons = batch(column, [v for v, _ in cases], dtype)
    wrong = [
        (v, want, got, why)
        for (v, want), got, why in zip(cases, codes, reasons, strict=True)
        if got != want
    ]
    assert not wrong, wrong


def check_reasons(column: str, cases: list[tuple], dtype=object) -> None:
    codes, reasons = batch(column, [v for v, _ in cases], dtype)
    wrong = [
        (v, needle, why)
        for (v, needle), why in zip(cases, reasons, strict=True)
        if not isinstance(why, str) or needle not in why
    ]
    assert not wrong, wrong
    assert all(pd.isna(c) for c in codes), "a bad row must not be encoded"


def sandbox_accepts(codes: list[str]) -> bool:
    try:
        validate_tle_query(get_endpoint("tle"), list(zip(PARAMS, codes, strict=True)))
    except InvalidRequestError:
        return False
    return True


def test_base_row_and_output_shape():
    enc = encode(pd.DataFrame([BASE], index=["a"]))
    assert enc.columns.tolist() == PARAMS
    assert enc.index.tolist() == ["a"]
    assert enc.iloc[0].tolist() == BASE_CODES
    assert all(dtype == "str" for dtype in enc.dtypes)
    assert sandbox_accepts(BASE_CODES)


# --- numbers: boundaries (hand-computed) ------------------------------------------------
NUMBER_VALID = [
    ("age_years", 6, "6"),
    ("age_years", 80, "80"),
    ("age_years", 80.99, "80"),  # floored: 80 completed years
    ("age_years", 14.999, "14"),
    ("age_years", "  15 ", "15"),
    ("age_years", "1.5e1", "15"),
    ("overjet_mm", -10, "-10.0"),
    ("overjet_mm", 20, "20.0"),
    ("overjet_mm", 20.04, "20.0"),
    ("overjet_mm", -10.04, "-10.0"),
    ("overjet_mm", 4.25, "4.3"),  # half away from zero
    ("overjet_mm", -4.25, "-4.3"),
    ("overjet_mm", 2.675, "2.7"),
    ("overjet_mm", -0.04, "0.0"),  # never "-0.0"
    ("overjet_mm", "+3", "3.0"),
    ("overbite_mm", 15, "15.0"),
    ("overbite_mm", -10, "-10.0"),
    ("overbite_mm", 0.05, "0.1"),
    ("difficulty_score", 0, "0.0"),
    ("difficulty_score", 10, "10.0"),
    ("difficulty_score", 10.04, "10.0"),
    ("difficulty_score", ".5", "0.5"),
]


@pytest.mark.parametrize("column", ["age_years", "overjet_mm", "overbite_mm", "difficulty_score"])
def test_number_boundaries_valid(column):
    cases = [(v, code) for c, v, code in NUMBER_VALID if c == column]
    check_codes(column, cases)  # mixed object column: the text path
    numeric = [(v, code) for v, code in cases if not isinstance(v, str)]
    check_codes(column, numeric, dtype="float64")  # the numeric-dtype path


NUMBER_INVALID = [
    ("age_years", 5.999, "5.999 (floored to 5) is outside 6 … 80 years"),
    ("age_years", 81, "is outside 6 … 80 years"),
    ("age_years", -1, "is outside 6 … 80 years"),
    ("age_years", 1e300, "is outside 6 … 80 years"),
    ("overjet_mm", 20.05, "20.05 (rounded to 20.1) is outside -10 … 20 mm"),
    ("overjet_mm", -10.05, "(rounded to -10.1) is outside -10 … 20 mm"),
    ("overbite_mm", 15.1, "is outside -10 … 15 mm"),
    ("overbite_mm", -10.5, "is outside -10 … 15 mm"),
    ("difficulty_score", -0.05, "(rounded to -0.1) is outside 0 … 10"),
    ("difficulty_score", 10.05, "(rounded to 10.1) is outside 0 … 10"),
]


@pytest.mark.parametrize("dtype", [object, "float64"])
def test_number_boundaries_invalid(dtype):
    for column in ("age_years", "overjet_mm", "overbite_mm", "difficulty_score"):
        check_reasons(column, [(v, n) for c, v, n in NUMBER_INVALID if c == column], dtype)


NUMBER_NONSENSE = [
    (None, "missing value"),
    (np.nan, "missing value"),
    (pd.NA, "missing value"),
    ("", "missing value"),
    ("   ", "missing value"),
    ("maybe", "not a number"),
    ("14 years", "not a number"),
    ("١٤", "not a number"),  # Arabic-Indic digits: refused, ASCII digits only
    ("１４", "not a number"),  # full-width digits
    ("4,5", "decimal comma"),
    (1e309, "not a finite number"),
    ("1e309", "not a finite number"),
    (float("inf"), "not a finite number"),
    ("-inf", "not a finite number"),
    ("NaN", "not a finite number"),
    (True, "not a number"),
    ("0x10", "not a number"),
]


@pytest.mark.parametrize("column", ["age_years", "overjet_mm", "overbite_mm", "difficulty_score"])
def test_number_nonsense(column):
    check_reasons(column, NUMBER_NONSENSE)
    numeric = [(v, n) for v, n in NUMBER_NONSENSE if isinstance(v, float)]
    check_reasons(column, numeric, dtype="float64")


def test_boolean_column_is_not_a_number():
    frame = pd.DataFrame([BASE])
    frame["difficulty_score"] = pd.Series([True], dtype=bool)
    _, problems = encode(frame, errors="collect")
    assert "True/False is not a number" in problems["reason"].item()


@pytest.mark.parametrize("dtype", ["int64", "float64", "Int64", "Float64", "float32"])
def test_numeric_dtypes(dtype):
    check_codes("age_years", [(12, "12"), (80, "80")], dtype)
    check_codes("overjet_mm", [(3, "3.0"), (-2, "-2.0")], dtype)


def test_nullable_ints_with_missing():
    frame = pd.DataFrame([BASE, BASE])
    frame["age_years"] = pd.array([12, None], dtype="Int64")
    enc, problems = encode(frame, errors="collect")
    assert enc["p01"].tolist() == ["12"]
    assert problems["row"].tolist() == [1] and "missing value" in problems["reason"].item()


# --- categories and booleans ----------------------------------------------------------
LEVEL_VALID = [
    ("sex", "F", "F"),
    ("sex", "f", "F"),
    ("sex", "female", "F"),
    ("sex", "Female", "F"),
    ("sex", "  FEMALE ", "F"),
    ("sex", "woman", "F"),
    ("sex", "M", "M"),
    ("sex", "Male", "M"),
    ("malocclusion_class", "I", "1"),
    ("malocclusion_class", "class i", "1"),
    ("malocclusion_class", "Class II division 1", "2"),
    ("malocclusion_class", "ii/1", "2"),
    ("malocclusion_class", "II  div 2", "3"),
    ("malocclusion_class", "II/2", "3"),
    ("malocclusion_class", "III", "4"),
    ("crowding", "none", "0"),
    ("crowding", "Moderate", "2"),
    ("crowding", "SEVERE", "3"),
    ("spacing", "mild", "1"),
    ("spacing", "absent", "0"),
    ("crossbite", True, "1"),
    ("crossbite", False, "0"),
    ("crossbite", 1, "1"),
    ("crossbite", 0, "0"),
    ("crossbite", 1.0, "1"),
    ("crossbite", "1.00", "1"),
    ("open_bite", "yes", "1"),
    ("open_bite", "No", "0"),
    ("open_bite", "Y", "1"),
    ("extraction", "TRUE", "1"),
    ("extraction", "false", "0"),
    ("extraction", np.True_, "1"),
]


@pytest.mark.parametrize(
    "column",
    ["sex", "malocclusion_class", "crowding", "spacing", "crossbite", "open_bite", "extraction"],
)
def test_category_and_boolean_spellings(column):
    check_codes(column, [(v, code) for c, v, code in LEVEL_VALID if c == column])


LEVEL_NONSENSE = [
    ("sex", "x", "give one of female, male"),
    ("sex", "other", "give one of female, male"),
    ("sex", "女", "give one of female, male"),
    ("sex", 1, "a number is not accepted for a category"),
    ("malocclusion_class", "II", "give one of I, II/1, II/2, III"),
    ("malocclusion_class", 2, "a number is not accepted for a category (ambiguous)"),
    ("malocclusion_class", "IV", "give one of I, II/1, II/2, III"),
    ("crowding", 2.5, "a number is not accepted"),
    ("crowding", "very severe", "give one of none, mild, moderate, severe"),
    ("spacing", None, "missing value"),
    ("crossbite", 2, "give one of no, yes, or True/False, 1/0"),
    ("crossbite", 0.5, "give one of no, yes"),
    ("crossbite", -1, "give one of no, yes"),
    ("open_bite", "maybe", "give one of no, yes"),
    ("extraction", np.nan, "missing value"),
    ("extraction", "", "missing value"),
]


def test_category_and_boolean_nonsense():
    for column in dict.fromkeys(c for c, _, _ in LEVEL_NONSENSE):
        check_reasons(column, [(v, n) for c, v, n in LEVEL_NONSENSE if c == column])


def test_categorical_and_bool_dtypes():
    frame = pd.DataFrame([BASE, {**BASE, "sex": "male", "crossbite": True}])
    frame["sex"] = frame["sex"].astype("category")
    frame["crossbite"] = frame["crossbite"].astype(bool)
    frame["malocclusion_class"] = pd.Categorical(["II/1", "III"])
    enc = encode(frame)
    assert enc["p02"].tolist() == ["F", "M"]
    assert enc["p03"].tolist() == ["2", "4"]
    assert enc["p08"].tolist() == ["0", "1"]


# --- the whole table -----------------------------------------------------------------
def test_every_problem_reported_at_once_and_nothing_encoded_for_bad_rows():
    rows = [
        BASE,
        {**BASE, "age_years": "maybe", "sex": "x"},
        BASE,
        {**BASE, "overjet_mm": None},
        {**BASE, "crossbite": 7},
    ]
    frame = pd.DataFrame(rows, index=[10, 11, 12, 13, 14])
    frame["patient_id"] = ["P0", "P1", "P2", "P3", "P4"]
    with pytest.raises(ManifestError) as info:
        encode(frame)
    problems = info.value.problems
    assert len(problems) == 4
    # row: position in the patients table; index_label: the caller's label of that row
    assert sorted(problems["row"]) == [1, 1, 3, 4]
    assert sorted(zip(problems["index_label"], problems["field"], strict=True)) == [
        (11, "age_years"),
        (11, "sex"),
        (13, "overjet_mm"),
        (14, "crossbite"),
    ]
    assert set(problems["patient_id"]) == {"P1", "P3", "P4"}
    assert set(problems["param"]) == {"p01", "p02", "p06", "p08"}
    message = str(info.value)
    assert "4 problem(s); nothing was sent" in message
    assert "row 1 (0-based position, index 11): age_years='maybe'" in message
    assert "row 4 (0-based position, index 14): crossbite='7'" in message

    enc, collected = encode(frame, errors="collect")
    assert enc.index.tolist() == [10, 12]
    assert collected.equals(problems)
    assert collected.columns.tolist() == list(encoding_problem_columns())


def encoding_problem_columns():
    from dentalkit.tle.encoding import PROBLEM_COLUMNS

    return PROBLEM_COLUMNS


def test_clean_table_collect_mode_returns_empty_problems():
    enc, problems = encode(pd.DataFrame([BASE]), errors="collect")
    assert len(enc) == 1 and len(problems) == 0
    assert problems.columns.tolist() == list(encoding_problem_columns())


def test_missing_columns_and_wrong_input_type():
    frame = pd.DataFrame([BASE]).drop(columns=["sex", "extraction"])
    with pytest.raises(InputError, match=r"lacks column\(s\) sex \(p02, Gender\), extraction"):
        encode(frame, errors="collect")
    with pytest.raises(InputError, match="must be a pandas DataFrame"):
        encode(BASE)
    with pytest.raises(InputError, match="'raise', 'collect', 'warn'"):
        encode(pd.DataFrame([BASE]), errors="skip")


def test_extra_columns_are_ignored_and_input_is_not_modified():
    frame = pd.DataFrame([{**BASE, "note": "x"}])
    before = frame.copy()
    encode(frame)
    pd.testing.assert_frame_equal(frame, before)


def test_user_codebook_with_own_column_names_and_range():
    from importlib import resources

    with (
        resources.files("dentalkit.data").joinpath("tle_codebook.csv").open(encoding="utf-8") as fh
    ):
        table = pd.read_csv(fh, dtype=str, keep_default_na=False)
    table.loc[table["param"] == "p01", ["column", "maximum"]] = ["age", "18"]
    book = load_codebook(table)
    frame = pd.DataFrame([BASE]).rename(columns={"age_years": "age"})
    assert encode(frame, book)["p01"].item() == "14"
    frame["age"] = 19
    with pytest.raises(ManifestError, match="19 is outside 6 … 18 years"):
        encode(frame, book)


# --- decode and round trips ----------------------------------------------------------
def test_decode_hand_example_and_bad_codes():
    enc = pd.DataFrame([BASE_CODES], columns=PARAMS)
    typed = decode(enc)
    assert typed.iloc[0].to_dict() == {**BASE, "sex": "female"}
    assert typed["malocclusion_class"].dtype == "category"
    assert typed["malocclusion_class"].cat.categories.tolist() == ["I", "II/1", "II/2", "III"]
    bad = enc.assign(p02="X", p06="99.0")
    with pytest.raises(ManifestError) as info:
        decode(bad)
    assert sorted(info.value.problems["field"]) == ["p02", "p06"]
    with pytest.raises(InputError, match="lacks column"):
        decode(enc.drop(columns="p11"))


def _expected_number(p, value: float) -> str:
    quantum = Decimal(1).scaleb(-p.decimals)
    mode = ROUND_FLOOR if p.rounding == "floor" else ROUND_HALF_UP
    rounded = Decimal(repr(value)).quantize(quantum, rounding=mode)
    text = f"{rounded:f}"
    return text[1:] if text.startswith("-") and rounded == 0 else text


def _number_strategy(p):
    # values with at most 4 decimals (measurement precision), inside the range after rounding
    lo, hi = int(p.minimum * 10_000), int(p.maximum * 10_000)
    if p.rounding == "floor":
        hi = int((p.maximum + 1) * 10_000) - 1
    else:
        hi = int((p.maximum + 0.5 * 10**-p.decimals) * 10_000) - 1
        lo = -int((-p.minimum + 0.5 * 10**-p.decimals) * 10_000) + 1
    return st.integers(lo, hi).map(lambda k: k / 10_000)


def _spelling_strategy(p):
    spellings = [*p.labels, *p.aliases]
    if p.dtype == "boolean":
        spellings += ["true", "false", "1", "0"]
    return st.tuples(st.sampled_from(spellings), st.booleans()).map(
        lambda t: t[0].upper() if t[1] else t[0]
    )


ROW = st.fixed_dictionaries(
    {
        p.column: (_number_strategy(p) if p.dtype == "number" else _spelling_strategy(p))
        for p in BOOK
    }
)


@settings(max_examples=12, deadline=None)
@given(st.lists(ROW, min_size=1, max_size=50))
def test_round_trip_matches_decimal_rounding_and_the_sandbox(rows):
    frame = pd.DataFrame(rows)
    enc = encode(frame)
    for p in BOOK:
        if p.dtype == "number":
            expected = [_expected_number(p, v) for v in frame[p.column]]
        else:
            label = [p.lookup[" ".join(str(v).split()).casefold()] for v in frame[p.column]]
            expected = [dict(p.levels)[lab] for lab in label]
        assert enc[p.param].tolist() == expected, p.param
    for codes in enc.itertuples(index=False):
        assert sandbox_accepts(list(codes))
    typed = decode(enc)
    assert encode(typed).equals(enc)  # canonical typed values encode to the same strings
    for p in BOOK:
        if p.dtype == "number":
            assert typed[p.column].tolist() == [float(s) for s in enc[p.param]]


def test_example_patients_are_valid_and_reproducible():
    from dentalkit.tle import example_patients

    table = example_patients(300, seed=11)
    enc, problems = encode(table, errors="collect")
    assert len(problems) == 0 and len(enc) == 300
    assert table["patient_id"].is_unique
    pd.testing.assert_frame_equal(table, example_patients(300, seed=11))
    assert not table.equals(example_patients(300, seed=12))
    assert (table.loc[table["open_bite"], "overbite_mm"] < 0).all()
