"""The column-by-column build of a declared table equals pyarrow's own ``from_pandas``.

``arrow_table`` converts each column itself (categoricals straight from their codes) and
falls back to ``pa.Table.from_pandas(frame, schema=declared)`` only for what it does not
handle. The reference here is that ``from_pandas`` path, forced: both must give the same
Arrow table (values, types, field and ``pandas`` metadata) and the same Parquet bytes.
"""

from __future__ import annotations

import io as _io

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from dentalkit.errors import InputError
from dentalkit.io import _dictionary
from dentalkit.io._dictionary import arrow_table


def _reference(monkeypatch, df: pd.DataFrame, name: str) -> pa.Table:
    with monkeypatch.context() as m:
        m.setattr(_dictionary, "_from_columns", lambda *a, **k: None)
        return arrow_table(df, name)


def _built(monkeypatch, df: pd.DataFrame, name: str) -> tuple[pa.Table, bool]:
    """(arrow_table's table, whether the column-by-column build made it)."""
    seen = []
    real = _dictionary._from_columns

    def spy(*args, **kwargs):
        out = real(*args, **kwargs)
        seen.append(out is not None)
        return out

    with monkeypatch.context() as m:
        m.setattr(_dictionary, "_from_columns", spy)
        return arrow_table(df, name), seen == [True]


def _parquet(table: pa.Table) -> bytes:
    buf = _io.BytesIO()
    pq.write_table(table, buf)
    return buf.getvalue()


def _same(monkeypatch, df: pd.DataFrame, name: str) -> bool:
    built, direct = _built(monkeypatch, df, name)
    want = _reference(monkeypatch, df, name)
    assert built.schema.equals(want.schema, check_metadata=True), (built.schema, want.schema)
    assert built.equals(want, check_metadata=True)
    assert _parquet(built) == _parquet(want)
    return direct


def test_every_study_table_is_built_as_from_pandas_builds_it(study, monkeypatch):
    contract, analysis = study
    direct = {}
    for name, df in {**contract, **analysis}.items():
        frame = df.drop(columns=["geometry"]) if name == "teeth" else df
        direct[name] = _same(monkeypatch, frame, name)
    # every table was built column by column (the comparison is not the fallback twice)
    assert [n for n, d in direct.items() if not d] == []
    assert len(direct) >= 40


def test_categoricals_nulls_and_undeclared_columns(monkeypatch):
    classes = pd.CategoricalDtype(["Class III", "Class I", "Class II"], ordered=True)
    frame = pd.DataFrame(
        {
            "patient_id": pd.Categorical(["P1", "P2", "P3", "P1"]),
            "timestamp": pd.Categorical(["2024-01-01"] * 4),
            # a key with nulls (nullable) and an unused category
            "model_version": pd.Categorical(["v1", None, "v1", None], categories=["v1", "v2"]),
            # ordered vocabulary as declared; another in the wrong order (recoded)
            "skeletal_class": pd.Series(["Class I", None, "Class II", "Class III"], dtype=classes),
            "vertical_fma": pd.Categorical(
                ["normodivergent", "hypodivergent", None, "normodivergent"], ordered=True
            ),
            # text for a categorical column with a vocabulary: dictionary-encoded by pyarrow
            "tooth_type": ["i1", "c", None, "m1"],
            "ANB": [1.5, np.nan, 3.0, -1.0],
            "not_declared_float": [0.5, np.nan, 1.0, 2.0],
            "not_declared_text": ["a", None, "b", "c"],
            "not_declared_cat": pd.Categorical(["x", "y", None, "x"]),
        }
    )
    frame.attrs = {"problems": pd.DataFrame({"a": [1]})}
    assert _same(monkeypatch, frame, "ceph_classes")
    built = arrow_table(frame, "ceph_classes")
    assert built.schema.field("model_version").type == pa.dictionary(pa.int32(), pa.string())
    assert built.column("model_version").to_pylist() == ["v1", None, "v1", None]
    assert built.column("vertical_fma").type.ordered
    assert built.column("vertical_fma").chunk(0).dictionary.to_pylist() == [
        "hypodivergent",
        "normodivergent",
        "hyperdivergent",
    ]
    assert built.column("vertical_fma").to_pylist() == [
        "normodivergent",
        "hypodivergent",
        None,
        "normodivergent",
    ]
    assert built.column("skeletal_class").to_pylist() == ["Class I", None, "Class II", "Class III"]
    # zero rows: same layout, same metadata
    assert _same(monkeypatch, frame.iloc[:0], "ceph_classes")


def test_extension_typed_columns(monkeypatch):
    frame = pd.DataFrame(
        {
            "patient_id": pd.Series(["P1", "P2", "P3"], dtype="str"),
            "fdi": pd.array([11, None, 48], dtype="Int16"),
            "session_time": pd.to_datetime(["2024-01-01", None, "2024-02-01"], utc=True),
            "n_things": pd.array([3, None, 1], dtype="Int64"),
            "label": pd.Series(["a", None, "b"], dtype="str"),
            "flag": pd.array([True, None, False], dtype="boolean"),
        }
    )
    assert _same(monkeypatch, frame, "tooth_measures")


def test_a_misfit_is_left_to_from_pandas_which_names_it(monkeypatch):
    seen = []
    real = _dictionary._from_columns

    def spy(*args, **kwargs):
        seen.append(real(*args, **kwargs))
        return seen[-1]

    monkeypatch.setattr(_dictionary, "_from_columns", spy)
    with pytest.raises(InputError, match="'n'"):
        arrow_table(pd.DataFrame({"n": [1.5]}), "tle_summary")
    frame = pd.DataFrame({"patient_id": pd.Categorical(["P1", None]), "value": [1.0, 2.0]})
    with pytest.raises(InputError, match=r"patient_id.*may not be null"):
        arrow_table(frame, "ceph_measures")
    assert seen == [None, None]


def test_an_undeclared_column_pyarrow_cannot_type_is_an_input_error_naming_it(tmp_path):
    """A column outside the declaration keeps the type pyarrow infers; when pyarrow can infer
    none (numbers and text mixed, a dict with non-text keys), the writer names the table,
    the column and the rows instead of passing pyarrow's error up."""
    from dentalkit.io import write_parquet

    mixed = pd.DataFrame(
        {"patient_id": ["P1", "P2", "P3", "P4"], "my_note": [1, "a", 2, "b"]}, index=list("wxyz")
    )
    with pytest.raises(InputError) as info:
        write_parquet(mixed, tmp_path / "m.parquet", name="ceph_measures")
    text = str(info.value)
    assert "table 'ceph_measures': column 'my_note' is not declared" in text
    assert "rows 1, 3 (0-based positions; index labels 'x', 'z'); the first value is int64" in text
    assert "astype(str)" in text and not (tmp_path / "m.parquet").exists()
    odd = pd.DataFrame({"patient_id": ["P1", "P2"], "extra": [{1: 2}, "a"]})
    with pytest.raises(InputError, match=r"column 'extra' is not declared .*\(row 0 \(0-based"):
        arrow_table(odd, "ceph_measures")
    # a column pyarrow can type is still written with its inferred type
    fine = arrow_table(mixed.assign(my_note=mixed["my_note"].astype(str)), "ceph_measures")
    assert pa.types.is_large_string(fine.schema.field("my_note").type)  # pandas str dtype
