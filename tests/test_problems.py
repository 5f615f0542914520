"""One problems table and one ``errors=`` rule for the whole package (issue 23, item 2).

Every producer of a problems table is made to report at least one problem from a small
hand-built input, and each table is checked against the single declaration
(:data:`dentalkit.errors.PROBLEM_SCHEMA`): the declared columns first, in declared order,
with the declared dtypes and nullability. Every public ``errors=`` is checked to refuse an
unknown value with a message naming the allowed ones.
"""

from __future__ import annotations

import json
import re
import warnings

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
import shapely

from dentalkit import agreement, arch, ceph, convert, fetch_cohort, findings, teeth, tle
from dentalkit.arch import align
from dentalkit.convert import schemas
from dentalkit.errors import (
    ERRORS_DEFAULT,
    ERRORS_VALUES,
    PROBLEM_COLUMNS,
    PROBLEM_SCHEMA,
    SEVERITIES,
    DentalkitWarning,
    InputError,
    ManifestError,
    check_errors,
    problems_frame,
)
from dentalkit.fetch._manifest import plan_requests, read_manifest

STR = pd.StringDtype(na_value=np.nan)
TLE_BASE = {
    "age_years": 14.9,
    "sex": "Female",
    "malocclusion_class": "II/1",
    "crowding": "mild",
    "spacing": "none",
    "overjet_mm": 4.25,
    "overbite_mm": 3,
    "crossbite": False,
    "open_bite": "no",
    "extraction": 1,
    "difficulty_score": 6.5,
}


def _landmarks(rows):
    return pd.DataFrame(rows, columns=["patient_id", "timestamp", "name", "x", "y"])


def _convert():
    return convert.tables(_responses(), errors="collect")["problems"]


def _responses():
    body = {"PatientID": "P1", "TimeStamp": "2024", "Classification": {"confidence": 0.5}}
    responses = pd.DataFrame(
        {
            "endpoint": ["classifier"],
            "patient_id": ["P1"],
            "timestamp": ["2024"],
            "body": [json.dumps(body)],
        }
    )
    return responses


def _manifest():
    m = pd.DataFrame({"patient_id": ["P1", None], "timestamp": ["2024", "2024"]})
    m["image_url"] = ["https://img.example.org/1.png", "https://img.example.org/2.png"]
    return plan_requests(read_manifest(m), "classifier").problems


def _manifest_duplicate(other_problem: bool):
    """Row 2 repeats row 1's request (found after the row checks); row 3 may lack a patient."""
    ids = ["P1", "P1", None] if other_problem else ["P1", "P1"]
    m = pd.DataFrame({"patient_id": ids, "timestamp": "2024"})
    m["image_url"] = "https://img.example.org/1.png"
    return plan_requests(read_manifest(m), "classifier").problems


def _teeth():
    return teeth.measure(_bad_teeth(), errors="collect")[1]


def _bad_teeth():
    bowtie = shapely.Polygon([(0, 0), (10, 20), (10, 0), (0, 20)])  # self-intersecting
    t = pd.DataFrame(
        {
            "patient_id": ["P1", "P1"],
            "timestamp": ["2024", "2024"],
            "source": ["frontal", "frontal"],
            "tooth": ["i1_rgt_up", "i1_lft_up"],
            "tooth_type": ["i1", "i1"],
            "side": ["rgt", "lft"],
            "arch": ["up", "up"],
            "fdi": [11, 21],
            "missing": [False, False],
            "geometry": [shapely.box(0, 0, 8, 10), bowtie],
            "repaired": [False, False],
        }
    )
    return t


def _findings():
    det, images = _bad_findings()
    return findings.prevalence(det, images=images, errors="collect").problems


def _bad_findings():
    det = pd.DataFrame(
        {
            "patient_id": ["a", "zz"],
            "timestamp": "2024",
            "source": "clinical",
            "class_name": "decay",
            "x0": [0.0, 0.0],
            "y0": [0.0, 0.0],
            "x1": [4.0, 1.0],
            "y1": [4.0, 1.0],
        }
    )
    images = pd.DataFrame({"patient_id": ["a"], "timestamp": ["2024"], "source": ["clinical"]})
    return det, images


def _ceph():
    lm = _landmarks([("p1", "t", "S", 0.0, 0.0), ("p1", "t", "N", 70.0, 0.0)])
    return ceph.measure(lm, ["SNA"], mm_per_px=0.1, errors="collect")[1]


def _agreement_landmarks():
    ref = _landmarks([("p1", "t", "S", 1.0, 1.0), ("p1", "t", "N", 80.0, 1.0)])
    return agreement.landmarks(ref, ref.iloc[:1], errors="collect", frame="image").problems


def _measures(patients):
    return pd.DataFrame(
        {
            "patient_id": patients,
            "timestamp": "t",
            "measure": "SNA",
            "value": [80.0 + i for i in range(len(patients))],
            "unit": "deg",
        }
    )


def _agreement_measures():
    ref = _measures(["p1", "p2", "p3"])
    return agreement.measure(ref, ref.iloc[:2], errors="collect").problems


def _tle_encode():
    bad = pd.DataFrame([TLE_BASE, {**TLE_BASE, "sex": "x"}], index=["a", "b"])
    return tle.encode(bad, errors="collect")[1]


NO_ANSWERS = pd.DataFrame(
    {c: pd.Series(dtype=object) for c in ("endpoint", "status_code", "body", "options")}
)


def _tle_estimate():
    patients = pd.DataFrame([TLE_BASE, {**TLE_BASE, "sex": "x"}])
    return tle.problems(tle.estimate(patients, NO_ANSWERS, errors="collect"))


def _arch_points(x_last: float) -> pd.DataFrame:
    x = [-20.0, -15.0, -8.0, 0.0, 8.0, 15.0, x_last]
    return pd.DataFrame(
        {
            "patient_id": "P1",
            "timestamp": "2024",
            "arch": "up",
            "index": range(7),
            "x": x,
            "y": [0.05 * v * v for v in x],
        }
    )


def _arch():
    return arch.problems(arch.fit(_arch_points(np.nan), "parabola", errors="collect"))


def _arch_measure():
    tk = pd.DataFrame(
        {
            "patient_id": "P1",
            "timestamp": "2024",
            "arch": "up",
            "tooth": ["c_rgt_up", "c_lft_up"],
            "missing": False,
            "point": "centroid",
            "x": [100.0, np.nan],
            "y": [50.0, 130.0],
        }
    )
    return arch.problems(arch.measure(tk, mm_per_px=0.1, errors="collect"))


PRODUCERS = {
    "convert.tables": _convert,
    "manifest (fetch_cohort)": _manifest,
    "manifest duplicate (fetch_cohort)": lambda: _manifest_duplicate(False),
    "manifest duplicate and a bad row": lambda: _manifest_duplicate(True),
    "teeth.measure": _teeth,
    "findings.prevalence": _findings,
    "ceph.measure": _ceph,
    "agreement.landmarks": _agreement_landmarks,
    "agreement.measure": _agreement_measures,
    "tle.encode": _tle_encode,
    "tle.estimate": _tle_estimate,
    "arch.fit": _arch,
    "arch.measure": _arch_measure,
}


def _declared_dtype(column):
    if column.dtype == "str":
        return STR
    if column.dtype == "category":
        return pd.CategoricalDtype(pd.Index(list(SEVERITIES), dtype=STR))
    return pd.Int64Dtype()


@pytest.mark.parametrize("producer", list(PRODUCERS))
def test_every_producer_fills_the_one_declared_schema(producer):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DentalkitWarning)
        table = PRODUCERS[producer]()
    assert len(table), f"{producer}: the input was built to have a problem"
    n = len(PROBLEM_COLUMNS)
    assert tuple(table.columns[:n]) == PROBLEM_COLUMNS, producer
    for column in PROBLEM_SCHEMA:
        values = table[column.name]
        assert values.dtype == _declared_dtype(column), (producer, column.name, values.dtype)
        if not column.nullable:
            assert values.notna().all(), (producer, column.name)
    assert set(table["severity"]) <= set(SEVERITIES)
    assert table["reason"].str.len().gt(0).all()
    # per-row problems name the patient of the offending row (tle inputs here have no
    # patient_id; agreement aggregates a landmark missing from whole sessions in one row)
    if producer in (
        "convert.tables",
        "teeth.measure",
        "findings.prevalence",
        "ceph.measure",
        "arch.fit",
        "arch.measure",
    ):
        assert table["patient_id"].notna().all(), producer


def test_empty_problem_tables_have_the_schema_too():
    empties = {
        "convert": convert.tables(
            pd.DataFrame(columns=["endpoint", "patient_id", "timestamp", "body"])
        )["problems"],
        "teeth": teeth.measure(_teeth_ok(), errors="collect")[1],
        "tle": tle.encode(pd.DataFrame([TLE_BASE]), errors="collect")[1],
        "arch": arch.problems(arch.fit(_arch_points(20.0), "parabola", errors="collect")),
        "ceph": ceph.measure(_landmarks([("p1", "t", "S", 0.0, 0.0)]), ["S_N"], errors="collect")[
            1
        ].iloc[:0],
    }
    for name, table in empties.items():
        assert tuple(table.columns[: len(PROBLEM_COLUMNS)]) == PROBLEM_COLUMNS, name
        for column in PROBLEM_SCHEMA:
            assert table[column.name].dtype == _declared_dtype(column), (name, column.name)


def _teeth_ok():
    t = pd.DataFrame(
        {
            "patient_id": ["P1"],
            "timestamp": ["2024"],
            "source": ["frontal"],
            "tooth": ["i1_rgt_up"],
            "tooth_type": ["i1"],
            "side": ["rgt"],
            "arch": ["up"],
            "fdi": [11],
            "missing": [False],
            "geometry": [shapely.box(0, 0, 8, 10)],
            "repaired": [False],
        }
    )
    return t


def test_the_contract_schema_is_the_declaration():
    """convert.schemas (Parquet, docs/columns.md) derives its problems schema from errors."""
    arrow = schemas.SCHEMAS["problems"]
    assert arrow.names == list(PROBLEM_COLUMNS)
    for field, column in zip(arrow, PROBLEM_SCHEMA, strict=True):
        assert field.nullable == column.nullable
        assert field.metadata[b"doc"].decode() == column.description
    assert pa.types.is_dictionary(arrow.field("severity").type)
    assert schemas.categories("problems", "severity") == SEVERITIES
    schemas.check(_convert(), "problems")  # passes


def test_problems_frame_refuses_a_producer_bug():
    with pytest.raises(InputError, match="'reason' must not be null"):
        problems_frame(pd.DataFrame({"table": ["t"], "reason": [None], "severity": ["error"]}))
    with pytest.raises(InputError, match="severity must be one of"):
        problems_frame(pd.DataFrame({"table": ["t"], "reason": ["r"], "severity": ["fatal"]}))


def test_one_validator_values_and_default():
    assert ERRORS_VALUES == ("raise", "collect", "warn") and ERRORS_DEFAULT == "raise"
    for value in ERRORS_VALUES:
        assert check_errors(value, "f") == value
    with pytest.raises(InputError) as info:
        check_errors("sometimes", "dentalkit.x")
    text = str(info.value)
    assert "dentalkit.x: errors='sometimes' is not allowed" in text
    assert "'raise', 'collect', 'warn'" in text and "default 'raise'" in text
    with pytest.raises(InputError, match="not allowed"):
        check_errors(None, "f")
    with pytest.raises(InputError, match="errors='ignore' is not allowed"):  # removed spelling
        check_errors("ignore", "f")


CALLS = {
    "convert.tables": lambda e: convert.tables(pd.DataFrame(), errors=e),
    "convert.landmarks": lambda e: convert.landmarks(pd.DataFrame(), errors=e),
    "teeth.measure": lambda e: teeth.measure(_teeth_ok(), errors=e),
    "findings.prevalence": lambda e: findings.prevalence(pd.DataFrame(), errors=e),
    "ceph.measure": lambda e: ceph.measure(_landmarks([]), errors=e),
    "agreement.landmarks": lambda e: agreement.landmarks(_landmarks([]), _landmarks([]), errors=e),
    "agreement.measure": lambda e: agreement.measure(pd.DataFrame(), pd.DataFrame(), errors=e),
    "tle.encode": lambda e: tle.encode(pd.DataFrame([TLE_BASE]), errors=e),
    "tle.estimate": lambda e: tle.estimate(pd.DataFrame([TLE_BASE]), pd.DataFrame(), errors=e),
    "tle.sensitivity": lambda e: tle.sensitivity(
        TLE_BASE, "crowding", ["none"], pd.DataFrame(), errors=e
    ),
    "arch.align": lambda e: align(pd.DataFrame(), errors=e),
    "fetch_cohort": lambda e: fetch_cohort(pd.DataFrame(), errors=e),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_every_errors_argument_refuses_unknown_values_naming_the_allowed_ones(name):
    with pytest.raises(
        InputError, match=r"errors='often' is not allowed; use one of 'raise', 'collect', 'warn'"
    ):
        CALLS[name]("often")


def test_warn_collects_and_says_so_once():
    ref = _landmarks([("p1", "t", "S", 1.0, 1.0), ("p1", "t", "N", 80.0, 1.0)])
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        res = agreement.landmarks(ref, ref.iloc[:1], errors="warn", frame="image")
    assert len(res.problems) == 1
    assert [w.category for w in seen] == [DentalkitWarning]
    # the same input: silent in collect, one exception listing the problem in raise
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agreement.landmarks(ref, ref.iloc[:1], errors="collect", frame="image")
    with pytest.raises(InputError, match="1 problem"):
        agreement.landmarks(ref, ref.iloc[:1], errors="raise", frame="image")


def test_tle_problem_rows_are_positions_with_the_callers_labels_beside():
    bad = pd.DataFrame([TLE_BASE, {**TLE_BASE, "sex": "x"}], index=["a", "b"])
    problems = _tle_encode()
    assert problems["row"].tolist() == [1] and problems["index_label"].tolist() == ["b"]
    with pytest.raises(ManifestError, match=r"row 1 \(0-based position, index 'b'\): sex='x'"):
        tle.encode(bad)


def _bad_fetch_manifest():
    m = pd.DataFrame({"patient_id": ["P1", None], "timestamp": "2024", "endpoint": "classifier"})
    m["image_url"] = ["https://img.example.org/1.png", "https://img.example.org/2.png"]
    return m


#: The five functions whose default was not "raise" before issue 23, called without
#: errors= on an input with one known problem; the pattern is where the message names it.
DEFAULT_CALLS = {
    "ceph.measure": (
        lambda tmp: ceph.measure(
            _landmarks([("p1", "t", "S", 0.0, 0.0), ("p1", "t", "N", 70.0, 0.0)]), ["SNA"]
        ),
        InputError,
        r"patient 'p1', session 't', lateral/A: landmark 'A' absent",
    ),
    "agreement.landmarks": (
        lambda tmp: agreement.landmarks(
            _landmarks([("p1", "t", "S", 1.0, 1.0), ("p1", "t", "N", 80.0, 1.0)]),
            _landmarks([("p1", "t", "S", 1.0, 1.0)]),
            frame="image",
        ),
        InputError,
        r"reference/N: name N is in the reference table .* but never in the test table",
    ),
    "agreement.measure": (
        lambda tmp: agreement.measure(_measures(["p1", "p2", "p3"]), _measures(["p1", "p2"])),
        InputError,
        r"patient 'p3', session 't', reference: session only in the reference table",
    ),
    "tle.estimate": (
        lambda tmp: tle.estimate(pd.DataFrame([{"patient_id": "P7", **TLE_BASE}]), NO_ANSWERS),
        InputError,
        r"endpoint tle, patient 'P7', row 0 \(0-based position\): no stored answer for this query",
    ),
    "fetch_cohort": (
        lambda tmp: fetch_cohort(_bad_fetch_manifest(), out=tmp / "out", progress=False),
        ManifestError,
        r"row 2: patient_id",
    ),
}


@pytest.mark.parametrize("name", list(DEFAULT_CALLS))
def test_the_default_raises_naming_the_problem_and_how_to_go_on(name, tmp_path):
    call, error, where = DEFAULT_CALLS[name]
    with warnings.catch_warnings():  # no transitional FutureWarning, no other warning
        warnings.simplefilter("error")
        with pytest.raises(error) as info:
            call(tmp_path)
    text = str(info.value)
    assert re.search(where, text), text
    assert "errors='collect'" in text, text
    # the error carries every problem, as the table errors="collect" would list them
    problems = info.value.problems
    assert len(problems) >= 1
    assert tuple(problems.columns[: len(PROBLEM_COLUMNS)]) == PROBLEM_COLUMNS
    if name == "fetch_cohort":  # a bad manifest: nothing was sent, no store was made
        assert not (tmp_path / "out").exists()


def test_tle_estimate_default_error_lists_the_table_collect_returns():
    patients = pd.DataFrame([{"patient_id": "P7", **TLE_BASE}, {"patient_id": "P8", **TLE_BASE}])
    with pytest.raises(InputError, match="2 patient row") as info:
        tle.estimate(patients, NO_ANSWERS)
    collected = tle.problems(tle.estimate(patients, NO_ANSWERS, errors="collect"))
    pd.testing.assert_frame_equal(info.value.problems, collected)
    assert info.value.problems["patient_id"].tolist() == ["P7", "P8"]


def test_every_public_errors_argument_defaults_to_raise():
    """One default: every public function or callable class of dentalkit that takes
    ``errors=`` defaults to "raise" (the package's ERRORS_DEFAULT)."""
    import importlib
    import inspect
    import pkgutil

    import dentalkit

    skip = ("dentalkit.sandbox",)
    seen = {}
    modules = list(pkgutil.walk_packages(dentalkit.__path__, "dentalkit."))
    for info in modules:
        if info.name.startswith(skip) or "._" in info.name:
            continue
        try:
            module = importlib.import_module(info.name)
        except ImportError:  # an optional extra that is not installed
            continue
        for name in getattr(module, "__all__", ()):
            obj = getattr(module, name, None)
            targets = [obj.__init__, obj.__call__] if inspect.isclass(obj) else [obj]
            for target in targets:
                try:
                    params = inspect.signature(target).parameters
                except (TypeError, ValueError):
                    continue
                if "errors" in params and target is not check_errors:
                    seen[f"{target.__module__}.{target.__qualname__}"] = params["errors"].default
    expected = (
        "dentalkit.ceph.measure.measure",
        "dentalkit.agreement._landmarks.landmarks",
        "dentalkit.agreement._measures.measure",
        "dentalkit.tle.estimation.estimate",
        "dentalkit.fetch.cohort.fetch_cohort",
        "dentalkit.fetch.cohort.Fetcher.__call__",
    )
    assert set(expected) <= set(seen), sorted(seen)
    assert len(seen) >= 20, sorted(seen)
    assert {k: v for k, v in seen.items() if v != ERRORS_DEFAULT} == {}


WARN_CALLS = {
    "convert.tables": lambda: convert.tables(_responses(), errors="warn"),
    "teeth.measure": lambda: teeth.measure(_bad_teeth(), errors="warn"),
    "findings.prevalence": lambda: findings.prevalence(
        _bad_findings()[0], images=_bad_findings()[1], errors="warn"
    ),
    "ceph.measure": lambda: ceph.measure(
        _landmarks([("p1", "t", "S", 0.0, 0.0), ("p1", "t", "N", 70.0, 0.0)]),
        ["SNA"],
        errors="warn",
    ),
    "tle.encode": lambda: tle.encode(
        pd.DataFrame([TLE_BASE, {**TLE_BASE, "sex": "x"}]), errors="warn"
    ),
    "tle.estimate": lambda: tle.estimate(pd.DataFrame([TLE_BASE]), NO_ANSWERS, errors="warn"),
}


@pytest.mark.parametrize("name", list(WARN_CALLS))
def test_warn_returns_the_results_and_warns_exactly_once(name):
    with warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        result = WARN_CALLS[name]()
    assert result is not None
    assert [w.category for w in seen] == [DentalkitWarning], [str(w.message) for w in seen]
    assert "problem" in str(seen[0].message) or "left out" in str(seen[0].message)
