"""dentalkit.io.pseudonymize: keyed, consistent, irreversible without the secret.

Expected pseudonyms come from OpenSSL (``printf '%s' ID | openssl dgst -sha256 -hmac
SECRET``), an implementation independent of Python's ``hmac``, and from RFC 4231.
"""

from __future__ import annotations

import hashlib
import pickle
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from dentalkit import io
from dentalkit.errors import DentalkitWarning, InputError
from dentalkit.io._pseudonymize import _digest

SECRET = "x7Qm2r9LkV0pZs4tB8wNcE1yHa6uJd3F"  # 32 bytes; a test value, never a real one
# printf '%s' P001 | openssl dgst -sha256 -hmac x7Qm2r9LkV0pZs4tB8wNcE1yHa6uJd3F
OPENSSL = {
    "P001": "fa12bf496cc14b99c9c6b5c2fb37cd8f3c4ee32c7a182ca70f69da3fddcc21bd",
    "P002": "db207a4c050384eb90c36b67311bb41008ace2caf123133f7d159f3b69cbd158",
    "Müller-7": "dad5f06103a3e6604be74a60f33197923dc8c8f90dc1afd0f8026b040c215b2f",
    "12345": "bf3de1cc4df22647f2c5047a6daf09627d6dee37df31daaba76880dac0c2de6e",
}


def cohort() -> dict[str, pd.DataFrame]:
    ids = ["P001", "P002", "Müller-7"]
    return {
        "ceph": pd.DataFrame(
            {
                "patient_id": pd.Categorical(["P002", "P001", "P002", "Müller-7"]),
                "measure": ["SNA", "SNA", "ANB", "SNA"],
                "value": [81.0, 83.5, 2.0, 79.0],
            }
        ),
        "teeth": pd.DataFrame({"patient_id": pd.Series(ids, dtype="str"), "fdi": [16, 26, 36]}),
        "groups": pd.DataFrame({"patient_id": ids[::-1], "sex": ["F", "M", "F"]}),
        "summary": pd.DataFrame({"measure": ["SNA"], "mean": [81.2]}),  # no identifier
    }


def test_pseudonyms_equal_openssl_hmac_sha256():
    df = pd.DataFrame({"patient_id": list(OPENSSL)})
    out = io.pseudonymize(df, SECRET)
    assert out["patient_id"].tolist() == ["P" + h[:12].upper() for h in OPENSSL.values()]
    wide = io.pseudonymize(df, SECRET, prefix="", length=64)
    assert wide["patient_id"].tolist() == [h.upper() for h in OPENSSL.values()]


def test_digest_matches_rfc4231_test_case_2():
    # RFC 4231 §4.3: key "Jefe", data "what do ya want for nothing?"
    got = _digest(b"Jefe", np.array(["what do ya want for nothing?"], dtype=object))
    assert got[0] == "5BDCC146BF60754E6A042426089575C75A003F089D2739839DEC58B964EC3843"


def test_integer_ids_get_the_pseudonym_of_their_text():
    out = io.pseudonymize(pd.DataFrame({"patient_id": [12345]}), SECRET)
    assert out["patient_id"].item() == "P" + OPENSSL["12345"][:12].upper()


def test_consistent_across_tables_and_joins_unchanged():
    tables = cohort()
    out = io.pseudonymize(tables, SECRET)
    assert list(out) == list(tables)
    for name in ("ceph", "teeth", "groups"):
        original = tables[name]["patient_id"].astype(str).tolist()
        expected = ["P" + OPENSSL[i][:12].upper() for i in original]
        assert out[name]["patient_id"].astype(str).tolist() == expected
    before = tables["ceph"].astype({"patient_id": str}).merge(tables["groups"], on="patient_id")
    after = out["ceph"].astype({"patient_id": str}).merge(out["groups"], on="patient_id")
    pd.testing.assert_series_equal(before["sex"], after["sex"])
    pd.testing.assert_frame_equal(out["summary"], tables["summary"])


def test_inputs_are_not_modified():
    tables = cohort()
    copies = {k: v.copy() for k, v in tables.items()}
    io.pseudonymize(tables, SECRET)
    for name, df in tables.items():
        pd.testing.assert_frame_equal(df, copies[name])


def test_categorical_kept_with_sorted_categories_nulls_and_unused_levels():
    col = pd.Categorical(
        ["P002", None, "P001", "P002"], categories=["P001", "P002", "P003"], ordered=True
    )
    df = pd.DataFrame({"patient_id": col, "v": [1, 2, 3, 4]}, index=[10, 11, 12, 13])
    out = io.pseudonymize(df, SECRET)
    got = out["patient_id"]
    assert isinstance(got.dtype, pd.CategoricalDtype) and got.cat.ordered
    assert list(got.cat.categories) == sorted(got.cat.categories)  # no trace of P001 < P002
    assert len(got.cat.categories) == 3
    assert got.isna().tolist() == [False, True, False, False]
    assert got[10] == got[13] == "P" + OPENSSL["P002"][:12].upper()
    assert got[12] == "P" + OPENSSL["P001"][:12].upper()
    assert list(out.index) == [10, 11, 12, 13]


def test_string_column_with_nulls():
    df = pd.DataFrame({"patient_id": pd.Series(["P001", None], dtype="str")})
    out = io.pseudonymize(df, SECRET)
    assert out["patient_id"].dtype == "str"
    assert out["patient_id"].isna().tolist() == [False, True]


def test_mapping_only_when_asked_and_marked_sensitive():
    out = io.pseudonymize(cohort(), SECRET)
    assert isinstance(out, dict)
    out, mapping = io.pseudonymize(cohort(), SECRET, mapping=True)
    assert sorted(mapping["patient_id"]) == sorted(["P001", "P002", "Müller-7"])
    for pid, pseudonym in zip(mapping["patient_id"], mapping["pseudonym"], strict=True):
        assert pseudonym == "P" + OPENSSL[pid][:12].upper()
    assert "sensitive" in mapping.attrs


def test_different_secrets_give_unrelated_pseudonyms():
    ids = [f"P{i:04d}" for i in range(200)]
    a = io.pseudonymize(pd.DataFrame({"patient_id": ids}), SECRET)["patient_id"]
    b = io.pseudonymize(pd.DataFrame({"patient_id": ids}), SECRET[::-1])["patient_id"]
    assert not set(a) & set(b)


def test_no_lookup_without_the_secret():
    """An attacker who knows the ID scheme (P0000–P9999) and every unkeyed hash cannot
    match a single pseudonym; with the secret, all match."""
    ids = [f"P{i:04d}" for i in range(0, 10000, 37)]
    published = set(io.pseudonymize(pd.DataFrame({"patient_id": ids}), SECRET)["patient_id"])
    candidates = [f"P{i:04d}" for i in range(10000)]
    for algo in ("md5", "sha1", "sha256", "sha512", "blake2b", "sha3_256"):
        unkeyed = {"P" + hashlib.new(algo, c.encode()).hexdigest()[:12].upper() for c in candidates}
        assert not unkeyed & published, algo
    wrong_key = set(
        io.pseudonymize(
            pd.DataFrame({"patient_id": candidates}), "another-secret-of-32-bytes-len!!"
        )["patient_id"]
    )
    assert not wrong_key & published
    right_key = set(io.pseudonymize(pd.DataFrame({"patient_id": candidates}), SECRET)["patient_id"])
    assert published <= right_key


def test_neither_secret_nor_identifiers_in_the_outputs():
    out, _ = io.pseudonymize(cohort(), SECRET, mapping=True)
    for df in out.values():
        blob = pickle.dumps(df) + repr(df).encode() + repr(df.attrs).encode()
        assert SECRET.encode() not in blob
        assert b"P001" not in pickle.dumps(df.get("patient_id"))
        if "patient_id" in df:
            assert not set(df["patient_id"].astype(str)) & {"P001", "P002", "Müller-7"}
            assert df.attrs["dentalkit_pseudonymized"] == {
                "column": "patient_id",
                "method": "HMAC-SHA256",
                "prefix": "P",
                "length": 12,
            }


@pytest.mark.parametrize(
    ("secret", "needle"),
    [
        ("", "empty"),
        ("a-31-byte-secret-that-is-short!", "31 bytes"),
        ("a" * 40, "placeholder"),
        ("abababababababababababababababab", "placeholder"),
        (12345678901234567890123456789012, "str or bytes"),
    ],
)
def test_bad_secrets_are_refused_with_advice(secret, needle):
    with pytest.raises(InputError, match=needle) as info:
        io.pseudonymize(pd.DataFrame({"patient_id": ["P001"]}), secret)
    if needle != "str or bytes":
        assert "secrets.token_urlsafe" in str(info.value)


def test_secret_length_boundary_and_bytes():
    ok = "0123456789abcdefghijklmnopqrstuv"  # exactly 32 bytes
    assert len(ok.encode()) == 32
    a = io.pseudonymize(pd.DataFrame({"patient_id": ["P1"]}), ok)
    b = io.pseudonymize(pd.DataFrame({"patient_id": ["P1"]}), ok.encode())
    pd.testing.assert_frame_equal(a, b)
    with pytest.raises(InputError, match="31 bytes"):
        io.pseudonymize(pd.DataFrame({"patient_id": ["P1"]}), ok[:-1])


def test_collision_is_refused_not_merged():
    # S39305 and S80531 share the first 8 hex digits (bd82b0c1) under SECRET (openssl)
    df = pd.DataFrame({"patient_id": ["S39305", "S80531"]})
    with pytest.raises(InputError, match="larger length"):
        io.pseudonymize(df, SECRET, length=8)
    out = io.pseudonymize(df, SECRET, length=9)
    assert out["patient_id"].tolist() == ["PBD82B0C1B", "PBD82B0C1D"]


@pytest.mark.parametrize("length", [7, 65, 12.0, True])
def test_bad_length(length):
    with pytest.raises(InputError, match="length"):
        io.pseudonymize(pd.DataFrame({"patient_id": ["P1"]}), SECRET, length=length)


def test_float_and_bool_identifiers_are_refused():
    with pytest.raises(InputError, match=r"'patient_id'.*float64"):
        io.pseudonymize(pd.DataFrame({"patient_id": [1.0, 2.0]}), SECRET)
    with pytest.raises(InputError, match="bool"):
        io.pseudonymize(pd.DataFrame({"patient_id": [True]}), SECRET)


def test_no_identifier_column_anywhere():
    with pytest.raises(InputError, match="no table has a column 'subject'"):
        io.pseudonymize(cohort(), SECRET, column="subject")


def test_other_column_name():
    df = pd.DataFrame({"subject": ["P001"], "patient_id": ["unrelated"]})
    out = io.pseudonymize(df, SECRET, column="subject", on_leak="ignore")
    assert out["subject"].item() == "P" + OPENSSL["P001"][:12].upper()
    assert out["patient_id"].item() == "unrelated"


def test_the_responses_store_is_refused():
    responses = pd.DataFrame(
        {"patient_id": ["P001"], "request_key": ["ab" * 32], "body": ['{"PatientID": "P001"}']}
    )
    with pytest.raises(InputError, match=r"request_key.*body"):
        io.pseudonymize({"responses": responses}, SECRET)


def test_identifiers_left_in_other_columns_are_found():
    df = pd.DataFrame(
        {
            "patient_id": ["P001", "P002"],
            "image_url": ["https://pacs.example.org/P001/ceph.png", "https://x/other.png"],
            "image_name": pd.Categorical(["a.png", "b.png"]),
        }
    )
    with pytest.raises(InputError, match=r"table\.image_url"):
        io.pseudonymize(df, SECRET)
    with pytest.warns(DentalkitWarning, match="image_url"):
        io.pseudonymize(df, SECRET, on_leak="warn")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        io.pseudonymize(df, SECRET, on_leak="ignore")


def test_leak_search_in_categoricals_and_compound_ids():
    df = pd.DataFrame(
        {
            "patient_id": ["ST-17/003"],
            "note": pd.Categorical(["seen at ST-17/003 clinic"]),
        }
    )
    with pytest.raises(InputError, match=r"table\.note"):
        io.pseudonymize(df, SECRET)


def test_leak_search_in_list_cells():
    # list columns (issue 23) as read back from Parquet: numpy arrays in object cells
    df = pd.DataFrame(
        {
            "patient_id": ["P001", "P002"],
            "missing_fdi": [np.array([12, 18], dtype=np.int16), np.array([], dtype=np.int16)],
            "groups": [np.array(["P002", "P009"], dtype=object), None],
        }
    )
    with pytest.raises(InputError, match=r"table\.groups"):
        io.pseudonymize(df, SECRET)
    clean = df.assign(groups=[["Class I", "Class II"], None])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        out = io.pseudonymize(clean, SECRET)
    assert out["missing_fdi"].iloc[0].tolist() == [12, 18]


def test_no_false_leak_for_longer_tokens_or_short_ids():
    df = pd.DataFrame(
        {
            "patient_id": ["P001", "7"],
            "landmark": ["Later_7", "P0011"],  # neither is an identifier
        }
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        io.pseudonymize(df, SECRET)


@settings(max_examples=40, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=12), min_size=1, max_size=30))
def test_property_injective_deterministic_and_consistent(ids):
    a = pd.DataFrame({"patient_id": ids})
    b = pd.DataFrame({"patient_id": pd.Categorical(ids[::-1])})
    out = io.pseudonymize({"a": a, "b": b}, SECRET, on_leak="ignore")
    pa_, pb = out["a"]["patient_id"].tolist(), out["b"]["patient_id"].astype(str).tolist()
    assert pb == pa_[::-1]
    assert len(set(pa_)) == len(set(ids))
    again = io.pseudonymize(a, SECRET, on_leak="ignore")["patient_id"].tolist()
    assert again == pa_
