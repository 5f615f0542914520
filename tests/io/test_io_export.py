"""dentalkit.io.export / read_export / data_dictionary: files an R or SPSS user can trust.

The CSV files are read back with Python's ``csv`` module (not pandas), descriptions are
compared with the schema metadata and the measure reference read directly, and the
round trip is checked value by value.
"""

from __future__ import annotations

import csv
import json
import math
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
import shapely
from hypothesis import given, settings
from hypothesis import strategies as st

from dentalkit import io
from dentalkit.convert import schemas
from dentalkit.errors import DentalkitWarning, InputError
from dentalkit.io._dictionary import ANALYSIS_TABLES, DICTIONARY_COLUMNS

SECRET = "x7Qm2r9LkV0pZs4tB8wNcE1yHa6uJd3F"


def read_csv_plain(path) -> list[dict[str, str]]:
    with open(path, encoding="utf-8", newline="") as fh:
        return list(csv.DictReader(fh))


def assert_round_trip(back: pd.DataFrame, original: pd.DataFrame) -> None:
    geometry = [c for c in original.columns if c == "geometry"]
    for c in geometry:
        assert (back[c].isna() == original[c].isna()).all()
        for g1, g2 in zip(back[c].dropna(), original[c].dropna(), strict=True):
            assert shapely.equals_exact(g1, g2, tolerance=0)
    # list cells (groups, n_units_per_group, missing_fdi, not_identified) come back as
    # lists equal to the originals (written as JSON arrays); missing ones as None
    lists = [
        c
        for c in original.columns
        if original[c].dtype == object and original[c].map(lambda v: isinstance(v, list)).any()
    ]
    for c in lists:
        assert back[c].tolist() == [v if isinstance(v, list) else None for v in original[c]], c
    drop = [*geometry, *lists]
    pd.testing.assert_frame_equal(back.drop(columns=drop), original.drop(columns=drop))


@pytest.fixture(scope="module")
def exported(study, tmp_path_factory):
    contract, analysis = study
    out = tmp_path_factory.mktemp("export")
    with warnings.catch_warnings():
        warnings.simplefilter("error", DentalkitWarning)  # every column is described
        files = io.export({**contract, **analysis}, out, formats=("csv", "parquet"))
    return out, files


def test_every_catalogue_table_is_covered_by_the_study(study):
    _, analysis = study
    assert set(analysis) == set(ANALYSIS_TABLES)


def test_dictionary_covers_every_exported_column_once(study, exported):
    contract, analysis = study
    out, files = exported
    dd = read_csv_plain(out / "data_dictionary.csv")
    assert list(dd[0]) == list(DICTIONARY_COLUMNS)
    listed = [(r["table"], r["column"]) for r in dd]
    expected = [(t, str(c)) for t, df in {**contract, **analysis}.items() for c in df.columns]
    assert listed == expected
    for table, df in {**contract, **analysis}.items():
        with open(out / f"{table}.csv", encoding="utf-8") as fh:
            header = next(csv.reader(fh))
        assert header == [str(c) for c in df.columns]
        assert files[f"{table}.csv"] == out / f"{table}.csv"
    assert all(r["description"] for r in dd), [r for r in dd if not r["description"]]


def test_contract_descriptions_are_the_schema_docs(exported):
    out, _ = exported
    dd = read_csv_plain(out / "data_dictionary.csv")
    for r in dd:
        if r["table"] in schemas.SCHEMAS:
            field = schemas.SCHEMAS[r["table"]].field(r["column"])
            assert r["description"] == field.metadata[b"doc"].decode()


def test_units(exported):
    out, _ = exported
    unit = {
        (r["table"], r["column"]): r["unit"] for r in read_csv_plain(out / "data_dictionary.csv")
    }
    assert unit["landmarks", "x"] == unit["findings", "y1"] == unit["teeth", "geometry"] == "px"
    assert unit["tle", "estimate_length_months"] == "months"
    assert unit["arch_fits", "a"] == "mm" and unit["arch_fits", "c4"] == "mm⁻³"
    assert unit["tooth_measures", "area"] == "mm²"
    assert unit["ceph_measures", "value"] == "per row: column unit (%, deg, mm)"
    assert unit["tle_estimates", "overjet_mm"] == "mm"
    assert unit["tle_estimates", "age_years"] == "years"
    assert unit["missing_by_fdi", "ci_low"] == "1"  # "patient" in its unit column is no unit
    assert unit["landmarks", "patient_id"] == ""


def test_allowed_values(exported):
    out, _ = exported
    rows = {(r["table"], r["column"]): r for r in read_csv_plain(out / "data_dictionary.csv")}
    assert rows["landmarks", "view"]["allowed_values"] == "lateral|frontal"
    assert rows["teeth", "tooth_type"]["allowed_values"] == "i1|i2|c|p1|p2|m1|m2|m3"
    assert rows["teeth", "missing"]["allowed_values"] == "true|false"
    assert rows["landmarks", "x"]["allowed_values"] == ""
    assert rows["ceph_classes", "skeletal_class"]["type"] == "ordered categorical"


def test_csv_conventions(study, exported):
    contract, _ = study
    out, _ = exported
    raw = (out / "teeth.csv").read_bytes()
    assert not raw.startswith(b"\xef\xbb\xbf") and b"\r\n" not in raw
    raw.decode("utf-8")
    rows = read_csv_plain(out / "teeth.csv")
    teeth = contract["teeth"]
    assert len(rows) == len(teeth)
    assert {r["missing"] for r in rows} == {"true", "false"}
    assert rows[0]["session_time"] == "2024-03-05T00:00:00Z"
    for r, geom in zip(rows, teeth["geometry"], strict=True):
        if geom is None:
            assert r["geometry"] == ""
        else:
            assert r["geometry"].startswith("POLYGON ((")
            assert shapely.from_wkt(r["geometry"]).equals_exact(geom, tolerance=0)
    lm = read_csv_plain(out / "landmarks.csv")
    for r, x in zip(lm, contract["landmarks"]["x"], strict=True):
        assert float(r["x"]) == x  # shortest repr, exact
    tle = read_csv_plain(out / "tle.csv")
    assert all(r["patient_id"] for r in tle)


def test_round_trip_of_every_table(study, exported):
    contract, analysis = study
    out, _ = exported
    back = io.read_export(out)
    for name, df in {**contract, **analysis}.items():
        assert_round_trip(back[name], df)


def test_parquet_keeps_dtypes_and_writes_wkt(study, exported):
    contract, _ = study
    out, _ = exported
    t = pq.read_table(out / "teeth.parquet").to_pandas()
    assert isinstance(t["tooth_type"].dtype, pd.CategoricalDtype)
    present = contract["teeth"]["geometry"].notna()
    assert t.loc[present.to_numpy(), "geometry"].str.startswith("POLYGON").all()


def test_list_columns_are_json_arrays_in_csv_and_lists_in_parquet(study, exported):
    _, analysis = study
    out, _ = exported
    rows = {(r["table"], r["column"]): r for r in read_csv_plain(out / "data_dictionary.csv")}
    for table, column in [
        ("comparisons", "groups"),
        ("comparisons", "n_units_per_group"),
        ("missing_per_patient", "missing_fdi"),
        ("arch_fits", "not_identified"),
    ]:
        assert rows[table, column]["type"] == "list", (table, column)
    # the CSV cell is the JSON array; the study compares groups "A" and "B"
    cells = [r["groups"] for r in read_csv_plain(out / "comparisons.csv")]
    assert cells and set(cells) == {'["A", "B"]'}
    pp = analysis["missing_per_patient"]
    csv_cells = [r["missing_fdi"] for r in read_csv_plain(out / "missing_per_patient.csv")]
    assert [json.loads(c) for c in csv_cells] == pp["missing_fdi"].tolist()
    # the Parquet copy keeps Arrow lists (its declared item type)
    schema = pq.read_schema(out / "missing_per_patient.parquet")
    assert schema.field("missing_fdi").type == pa.list_(pa.int16())
    assert pq.read_schema(out / "comparisons.parquet").field("groups").type == pa.list_(pa.string())


def test_json_dictionary(study, exported):
    from dentalkit.ceph import reference_table

    out, _ = exported
    doc = json.loads((out / "data_dictionary.json").read_text(encoding="utf-8"))
    assert doc["format"] == "dentalkit-data-dictionary/1"
    assert doc["conventions"]["missing"] == "empty field"
    tables = {t["name"]: t for t in doc["tables"]}
    assert tables["landmarks"]["rows"] == len(study[0]["landmarks"])
    assert tables["landmarks"]["files"] == ["landmarks.csv", "landmarks.parquet"]
    measure = next(c for c in tables["ceph_measures"]["columns"] if c["column"] == "measure")
    ref = reference_table().set_index("id")
    assert measure["value_labels"]["SNA"]["label"] == ref.loc["SNA", "label"]
    # measure ids are an open vocabulary: the labels describe the column's levels, and
    # nothing is declared as allowed (the dictionary does not take vocabularies from data)
    assert set(measure["value_labels"]) == set(measure["levels"])
    assert measure["allowed_values"] == []


def test_pseudonymized_tables_export_without_the_secret(study, tmp_path):
    contract, analysis = study
    tables = {"landmarks": contract["landmarks"], "ceph_measures": analysis["ceph_measures"]}
    pseudo = io.pseudonymize(tables, SECRET)
    io.export(pseudo, tmp_path)
    for f in tmp_path.iterdir():
        data = f.read_bytes()
        assert SECRET.encode() not in data
        assert b"IO01" not in data, f.name
    doc = json.loads((tmp_path / "data_dictionary.json").read_text(encoding="utf-8"))
    assert doc["tables"][0]["pseudonymized"]["method"] == "HMAC-SHA256"
    pid = doc["tables"][0]["columns"][0]
    assert pid["description"].startswith("pseudonym: P + first 12 hex digits of HMAC-SHA256")
    back = io.read_export(tmp_path)
    assert_round_trip(back["ceph_measures"], pseudo["ceph_measures"])
    assert back["ceph_measures"].attrs["dentalkit_pseudonymized"]["length"] == 12


def test_undocumented_columns_warn_and_descriptions_fill_them(tmp_path):
    df = pd.DataFrame({"patient_id": ["a"], "sex": ["F"], "bmi": [21.5]})
    with pytest.warns(DentalkitWarning, match=r"mine\.bmi") as rec:
        io.export({"mine": df}, tmp_path)
    assert "mine.patient_id" not in str(rec[0].message)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        io.export(
            {"mine": df},
            tmp_path,
            descriptions={"bmi": "body-mass index", "mine.sex": "sex at birth"},
            units={"bmi": "kg/m²"},
        )
    rows = {r["column"]: r for r in read_csv_plain(tmp_path / "data_dictionary.csv")}
    assert rows["bmi"]["description"] == "body-mass index" and rows["bmi"]["unit"] == "kg/m²"
    assert rows["sex"]["description"] == "sex at birth"


def test_wide_table_of_measures_described_by_the_reference(tmp_path):
    from dentalkit.ceph import reference_table

    wide = pd.DataFrame({"patient_id": ["a"], "ANB": [2.5], "S_N": [70.1]})
    io.export({"ceph_wide": wide}, tmp_path, units={"S_N": "mm"})
    rows = {r["column"]: r for r in read_csv_plain(tmp_path / "data_dictionary.csv")}
    ref = reference_table().set_index("id")
    assert rows["ANB"]["unit"] == "deg"
    assert rows["ANB"]["description"].startswith(ref.loc["ANB", "label"])
    assert rows["S_N"]["unit"] == "mm"


def test_datetimes_text_and_nullable_values(tmp_path):
    df = pd.DataFrame(
        {
            "when": pd.to_datetime(["2024-03-05 10:00:00.25", None], utc=True).as_unit("ns"),
            "naive": pd.to_datetime(["2024-03-05", "2024-03-06"]).as_unit("ns"),
            "flag": pd.array([True, None], dtype="boolean"),
            "count": pd.array([3, None], dtype="Int16"),
            "note": pd.Series(["", "x"], dtype="str"),
            "extra": [None, {"a": 1}],
            "levels": [["=x", "b,c"], []],
        }
    )
    with pytest.warns(DentalkitWarning):
        io.export({"misc": df}, tmp_path)
    rows = read_csv_plain(tmp_path / "misc.csv")
    assert rows[0]["when"] == "2024-03-05T10:00:00.250000Z" and rows[1]["when"] == ""
    assert rows[0]["naive"] == "2024-03-05T00:00:00"
    assert [r["flag"] for r in rows] == ["true", ""]
    assert rows[1]["extra"] == '{"a": 1}'
    # a list cell is a JSON array: a formula-like item stays inside it, [] is an empty list
    assert [r["levels"] for r in rows] == ['["=x", "b,c"]', "[]"]
    back = io.read_export(tmp_path)["misc"]
    pd.testing.assert_frame_equal(
        back.drop(columns=["extra", "levels"]), df.drop(columns=["extra", "levels"])
    )
    assert back["levels"].tolist() == [["=x", "b,c"], []]
    assert back["extra"].tolist() == [None, '{"a": 1}']  # text stays text


@settings(max_examples=30, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=False, width=64), min_size=1, max_size=20))
def test_property_floats_round_trip_exactly(tmp_path_factory, values):
    out = tmp_path_factory.mktemp("floats")
    df = pd.DataFrame({"patient_id": "p", "value": values, "unit": "mm"})
    io.export({"ceph_measures": df.assign(measure="S_N")}, out)
    back = io.read_export(out)["ceph_measures"]["value"].to_numpy()
    for a, b in zip(back, values, strict=True):
        assert (math.isnan(a) and math.isnan(b)) or (
            a == b and math.copysign(1, a) == math.copysign(1, b)
        )


@pytest.mark.parametrize(
    ("tables", "kwargs", "needle"),
    [
        ({}, {}, "non-empty mapping"),
        ({"a b": pd.DataFrame({"x": [1]})}, {}, "file name"),
        ({"data_dictionary": pd.DataFrame({"x": [1]})}, {}, "dictionary's own"),
        ({"t": [1, 2]}, {}, "not a pandas DataFrame"),
        ({"t": pd.DataFrame([[1, 2]], columns=["x", "x"])}, {}, "repeated column"),
        ({"t": pd.DataFrame({"x": [1]})}, {"formats": ("xlsx",)}, "formats"),
    ],
)
def test_bad_arguments(tmp_path, tables, kwargs, needle):
    with pytest.raises(InputError, match=needle):
        io.export(tables, tmp_path, **kwargs)


def test_read_export_errors(tmp_path):
    with pytest.raises(InputError, match=r"data_dictionary\.json"):
        io.read_export(tmp_path)
    io.export({"t": pd.DataFrame({"n": [1]})}, tmp_path, descriptions={"n": "a count"})
    with pytest.raises(InputError, match="no table 'u'"):
        io.read_export(tmp_path, ["u"])
    assert np.array_equal(io.read_export(tmp_path)["t"]["n"], [1])


def test_parquet_copy_is_written_with_the_declarations(study, exported):
    # read back with pyarrow and compared with the declaration of each table, like the
    # files of dentalkit's own writers (tests/test_output_schemas.py); the one deliberate
    # difference: geometry is WKT text in an export (any Parquet reader loads it)
    from tests.schema_check import check_file

    duckdb = pytest.importorskip("duckdb")
    contract, analysis = study
    out, _ = exported
    errors = []
    for name in {**contract, **analysis}:
        path = out / f"{name}.parquet"
        errors += [
            e
            for e in check_file(path, name)
            if not (name == "teeth" and "'geometry'" in e)
            # declared without a type: numbers or labels, as the varied column holds
            and not (name == "tle_sensitivity" and "'value' is not declared" in e)
        ]
    assert not errors, "\n".join(errors)
    geometry = pq.read_schema(out / "teeth.parquet").field("geometry")
    assert geometry.type == pa.string()
    assert (
        geometry.metadata[b"description"]
        == schemas.SCHEMAS["teeth"].field("geometry").metadata[b"doc"]
    )
    # non-null where declared, and DuckDB sees the declared types
    fits = pq.read_schema(out / "arch_fits.parquet")
    assert fits.field("status").nullable is False and fits.field("n_points").type == pa.int64()
    con = duckdb.connect()
    described = dict(
        (r[0], r[1])
        for r in con.execute(
            f"DESCRIBE SELECT * FROM read_parquet('{out / 'comparisons.parquet'}')"
        ).fetchall()
    )
    assert described["groups"] == "VARCHAR[]" and described["n_units"] == "BIGINT"


def test_parquet_copy_carries_your_descriptions_and_units(tmp_path):
    df = pd.DataFrame({"patient_id": ["a"], "bmi": [21.5]})
    io.export(
        {"mine": df},
        tmp_path,
        formats=("parquet",),
        descriptions={"bmi": "body-mass index"},
        units={"bmi": "kg/m²"},
    )
    field = pq.read_schema(tmp_path / "mine.parquet").field("bmi")
    assert field.metadata == {b"description": b"body-mass index", b"unit": "kg/m²".encode()}


def test_parquet_copy_refuses_a_value_outside_the_vocabulary(tmp_path):
    fits = pd.DataFrame({"model": ["catenary"], "status": ["exploded"]})
    with pytest.raises(InputError, match="exploded"):
        io.export({"arch_fits": fits}, tmp_path, formats=("parquet",))
    assert not list(tmp_path.iterdir())
