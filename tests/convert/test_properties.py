"""Property tests: random valid responses convert exactly and survive Parquet; random
structural corruptions become ResponseFormatError (raise) or a dropped response with a
problems row (collect) — never another exception, never a silently wrong row.

The expected rows come from ``_generate.py`` (plain Python from the generated data, not
the converters). Each example is a batch of responses, so the suite converts well over
10,000 generated responses per run; the count is printed at the end of the session.
"""

from __future__ import annotations

import math
import tempfile

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dentalkit import convert, io
from dentalkit.errors import ResponseFormatError
from tests.convert._generate import (
    ALL_TABLES,
    KINDS,
    assert_rows,
    check_session_time,
    observed,
    other_problems,
    response,
    responses_frame,
)
from tests.convert._helpers import COUNTS

pytestmark = pytest.mark.filterwarnings("error::dentalkit.errors.DentalkitWarning")

SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)

# ---------------------------------------------------------------- valid responses


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(SETTINGS, max_examples=25)
@given(data=st.data())
def test_valid_batches_convert_exactly(kind, data):
    size = data.draw(st.sampled_from([1, 3, 30, 100, 150]), label="size")
    batch = data.draw(st.lists(response(kind), min_size=size, max_size=size), label="batch")
    rows = [r for r, _, _ in batch]
    df = responses_frame(rows, [e for _, e, _ in batch])
    out = convert.tables(df, include=KINDS[kind][1])
    assert len(other_problems(out["problems"], df)) == 0
    for table in KINDS[kind][1]:
        want = [r for _, _, exp in batch for r in exp[table]]
        assert_rows(observed(out[table], table), want)
        check_session_time(out[table])
    COUNTS["responses"] += len(batch)


@settings(SETTINGS, max_examples=8)
@given(data=st.data())
def test_mixed_batches_round_trip_through_parquet(data):
    batch = data.draw(
        st.lists(st.sampled_from(sorted(KINDS)).flatmap(response), min_size=20, max_size=60),
        label="batch",
    )
    df = responses_frame([r for r, _, _ in batch], [e for _, e, _ in batch])
    out = convert.tables(df)
    with tempfile.TemporaryDirectory() as tmp:
        io.write_tables(out, tmp)
        back = io.read_tables(tmp)
    assert list(back) == list(out)
    for table in ALL_TABLES:
        want = [r for _, _, exp in batch for r in exp.get(table, [])]
        assert_rows(observed(back[table], table), want)
        a, b = out[table], back[table]
        if table == "teeth":
            a, b = a.drop(columns="geometry"), b.drop(columns="geometry")
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    COUNTS["responses"] += len(batch)


# ---------------------------------------------------------------- corruptions

NUM, INT, BOOL, STR, PAIR = "num", "int", "bool", "str", "pair"
HUGE = "x" * 1_000_001  # a 1 MB string


def rec(fields: dict, extra=None) -> tuple:
    return ("rec", fields, extra)


def map_(value) -> tuple:
    return ("map", value)


def list_(item) -> tuple:
    return ("list", item)


DETECTION = rec({"ClassName": STR, "TopLeft": PAIR, "BottomRight": PAIR})
# the parts of each body the spec defines and the tables read; echo fields and
# OutputImageUrl are not in here (absent echoes are allowed)
SHAPES = {
    "landmarks": rec(
        {"Version": STR, "NumberOfPredictedPoints": INT,
         "Results": map_(rec({"x_coordinate": NUM, "y_coordinate": NUM}))}
    ),
    "teeth": rec({"Version": STR, "Results": map_(rec({"missing": BOOL, "points": list_(PAIR)}))}),
    "keypoints": rec(
        {"Version": STR, "Teeth": map_(rec({"missing": BOOL, "centroid": PAIR}, extra=PAIR)),
         "CatenaryPoints": map_(PAIR)}
    ),
    "findings": rec({"Version": STR, "Results": map_(list_(DETECTION))}),
    "clinical": rec({"Version": STR, "ImageContents": map_(INT), "Results": map_(list_(DETECTION))}),
    "classifier": rec({"ImageName": STR, "Classification": rec({"category": STR, "confidence": NUM})}),
    "tmj": rec({"ImageName": STR, "Results": rec({"Finding": STR})}),
    "tle": rec({"app": STR, "estimate_length": NUM}),
}  # fmt: skip
GARBAGE = {
    NUM: ["12.5", True, False, None, [1, 2], {"a": 1}, 1e300, -1e300, 10**30, math.nan, math.inf, HUGE],
    INT: [2.5, True, "3", None, -1, 10**30, [1], HUGE],
    BOOL: [0, 1, "false", None, [], HUGE],
    STR: [123, None, ["a"], "", HUGE, {"t": "x"}, True],
    PAIR: [[1], [1, 2, 3], [[1, 2], [3, 4]], "1,2", {"x": 1, "y": 2}, [1, "2"], None, [True, 2.0],
           [1e300, 0], [math.nan, 1], [HUGE, 1], []],
    "rec": [[], "rec", None, 5, [1, 2], [1, {"b": None}]],
    "map": [[], "map", None, 7, [{"a": 1}]],
    "list": [{}, "list", None, 3, {"0": [1, 2]}],
}  # fmt: skip
NESTED_GARBAGE = {"junk": [1, {"deeper": [None, "x"]}]}


def slots(value, shape, parent, key, top=False):
    """Every place of a body a corruption can hit, with the operations that break it."""
    kind = shape if isinstance(shape, str) else shape[0]
    if not top:
        yield ("replace", parent, key, kind)
    if kind == "rec" and isinstance(value, dict):
        fields, extra = shape[1], shape[2]
        for name, sub in fields.items():
            if name in value:
                yield ("drop", value, name, None)
                yield from slots(value[name], sub, value, name)
        if extra is not None:
            for name in value:
                if name not in fields:
                    yield from slots(value[name], extra, value, name)
        if not top:
            yield ("extra", value, "junk", None)
    elif kind == "map" and isinstance(value, dict):
        for name in value:
            yield from slots(value[name], shape[1], value, name)
        if value:
            yield ("bad_key", value, None, None)
    elif kind == "list" and isinstance(value, list):
        for i, item in enumerate(value):
            yield from slots(item, shape[1], value, i)


def corrupt(body: dict, shape_name: str, data) -> str:
    options = list(slots(body, SHAPES[shape_name], None, None, top=True))
    op, parent, key, kind = data.draw(st.sampled_from(options), label="slot")
    if op == "drop":
        del parent[key]
    elif op == "extra":
        parent["junk"] = NESTED_GARBAGE
    elif op == "bad_key":
        bad = data.draw(
            st.sampled_from([HUGE, "zz", ""]) if shape_name == "keypoints" else st.just(HUGE)
        )
        if shape_name == "keypoints" and bad != HUGE:
            parent_is_catenary = "CatenaryPoints" in body and parent is body["CatenaryPoints"]
            bad = bad if parent_is_catenary else HUGE
        parent[bad] = next(iter(parent.values()))
    else:
        parent[key] = data.draw(st.sampled_from(GARBAGE[kind]), label="garbage")
    return op


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(SETTINGS, max_examples=40)
@given(data=st.data())
def test_corruptions_raise_or_become_problems(kind, data):
    size = data.draw(st.sampled_from([1, 2, 6, 15]), label="size")
    batch = data.draw(st.lists(response(kind), min_size=size, max_size=size), label="batch")
    j = data.draw(st.integers(0, len(batch) - 1), label="victim")
    row = batch[j][0]
    shape = "clinical" if row["endpoint"] == "clinical_images" else kind
    corrupt(row["body"], shape, data)
    df = responses_frame([r for r, _, _ in batch], [e for _, e, _ in batch])
    tables = KINDS[kind][1]

    with pytest.raises(ResponseFormatError) as info:
        convert.tables(df, include=tables)
    assert info.value.row == j
    assert len(str(info.value)) < 1000  # a 1 MB value never ends up in a message

    out = convert.tables(df, errors="collect", include=tables)
    probs = other_problems(out["problems"], df, dropped={j})
    assert set(probs["row"]) == {j}
    assert probs["reason"].str.endswith("(response dropped)").all()
    assert sorted(probs["table"]) == sorted(tables)
    for table in tables:  # the others convert exactly; nothing of the victim remains
        want = [r for i, (_, _, exp) in enumerate(batch) if i != j for r in exp[table]]
        assert_rows(observed(out[table], table), want)
    COUNTS["responses"] += len(batch)
    COUNTS["corruptions"] += 1
