"""Declared vocabularies (the ``values`` of columns.csv): what the code emits, and nothing else.

Each vocabulary is compared with the constant the producing code uses (or, where the code
has no constant, with the string literals it writes into the column, read from its source
with :mod:`ast`); the sandbox study's tables must hold no value outside them; and the data
dictionary takes allowed values from these declarations, never from the data.
"""

from __future__ import annotations

import ast
import csv
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from dentalkit import arch, ceph, contract, findings, teeth, tle
from dentalkit.arch import _engine, _frame, _measures
from dentalkit.ceph import summary
from dentalkit.convert import schemas
from dentalkit.errors import SEVERITIES, DentalkitWarning, InputError
from dentalkit.io import data_dictionary
from dentalkit.io._dictionary import _declared_type, _lookup, load_catalogue
from dentalkit.qc import _table as qc_table
from dentalkit.stats import _compare
from dentalkit.study import ANALYSIS_PROBLEM_PRODUCERS, CALIBRATION_LEVELS
from dentalkit.study import _qc as study_qc

ROOT = Path(__file__).resolve().parents[2]


def declared(table: str, column: str) -> tuple[str, ...] | None:
    return _declared_type(table, column)[2]


def literals(module: str, key: str) -> set[str]:
    """String constants the module's source writes under ``key``.

    Looks at ``key=...`` keyword arguments, ``{"key": ...}`` dict entries and
    ``x["key"] = ...`` assignments; every string constant inside the value counts (both
    branches of a conditional, the choices and default of ``np.select``) except column
    names read by subscription.
    """
    tree = ast.parse((ROOT / module).read_text(encoding="utf-8"))
    values: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == key:
            values.append(node.value)
        elif isinstance(node, ast.Dict):
            values += [
                v
                for k, v in zip(node.keys, node.values, strict=True)
                if isinstance(k, ast.Constant) and k.value == key
            ]
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                if (
                    isinstance(target, ast.Subscript)
                    and isinstance(target.slice, ast.Constant)
                    and target.slice.value == key
                ):
                    values.append(node.value)
    # column names read inside the value (out["complete_excl_m3"]) are not written values
    read = {id(n.slice) for v in values for n in ast.walk(v) if isinstance(n, ast.Subscript)}
    return {
        c.value
        for v in values
        for c in ast.walk(v)
        if isinstance(c, ast.Constant) and isinstance(c.value, str) and id(c) not in read
    }


def _classes_csv() -> dict[str, list[str]]:
    path = ROOT / "dentalkit" / "data" / "ceph_classes.csv"
    with path.open(encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    out: dict[str, list[str]] = {}
    for r in rows:
        out.setdefault(r["scheme"], []).append(r["category"])
    return out


TEETH_SOURCES = schemas.categories("teeth", "source")
FINDINGS_SOURCES = schemas.categories("findings", "source")

#: The qc tables with a ``method`` column (one per check, and their concatenation), and
#: all the qc tables with a ``check`` column.
QC_CHECK_TABLES = (
    "qc_landmarks", "qc_teeth", "qc_arch_points", "qc_findings", "qc_tle_inputs", "qc",
)  # fmt: skip
QC_TABLES = (*QC_CHECK_TABLES, "qc_excluded", "qc_summary")

# (table, column, the vocabulary the producing code uses, in its order)
FROM_CONSTANTS = [
    ("*", "arch", schemas.categories("teeth", "arch")),
    ("*", "tooth_type", schemas.categories("teeth", "tooth_type")),
    ("*", "side", schemas.categories("teeth", "side")),
    ("*", "view", schemas.categories("landmarks", "view")),
    ("*", "analysis", tuple(dict.fromkeys(ceph.reference_table()["analysis"]))),
    ("arch_fits", "model", tuple(arch.MODELS)),
    ("arch_mean_forms", "model", tuple(arch.MODELS)),
    ("arch_fits", "residual", tuple(_engine.RESIDUALS)),
    ("arch_fits", "status", tuple(_frame.STATUSES)),
    ("arch_fits", "side_source", tuple(_frame.SIDE_SOURCES)),
    ("arch_measures", "status", tuple(_measures.MEASURE_STATUSES)),
    ("ceph_summary", "session", summary._SESSIONS),
    ("comparisons", "test", tuple(_compare.TESTS)),
    ("contract", "aspect", contract.ASPECTS),
    ("tooth_measures", "source", TEETH_SOURCES),
    ("tooth_symmetry", "source", TEETH_SOURCES),
    ("tooth_symmetry_patients", "source", TEETH_SOURCES),
    ("tooth_symmetry_cohort", "source", TEETH_SOURCES),
    ("findings_prevalence", "source", FINDINGS_SOURCES),
    ("finding_boxes", "source", FINDINGS_SOURCES),
    ("finding_box_sizes", "source", FINDINGS_SOURCES),
    ("findings_prevalence", "unit_of_analysis", findings.UNITS),
    ("analysis_problems", "severity", SEVERITIES),
    ("analysis_problems", "producer", ANALYSIS_PROBLEM_PRODUCERS),
    ("calibration_applied", "calibration", CALIBRATION_LEVELS),
    *((t, "check", qc_table.CHECKS) for t in QC_TABLES),
    *((t, "method", qc_table.METHODS) for t in QC_CHECK_TABLES),
    ("qc_teeth", "source", TEETH_SOURCES),
    ("qc_findings", "source", FINDINGS_SOURCES),
    ("qc", "source", tuple(dict.fromkeys(TEETH_SOURCES + FINDINGS_SOURCES))),
    ("qc_sensitivity_results", "table", tuple(r[0] for r in study_qc.RESULTS)),
    ("qc", "view", schemas.categories("landmarks", "view")),
]


@pytest.mark.parametrize(("table", "column", "code"), FROM_CONSTANTS)
def test_vocabulary_is_the_codes_constant(table, column, code):
    assert declared(table, column) == tuple(code)


def test_class_vocabularies_are_the_shipped_class_bands():
    bands = _classes_csv()
    for column in ("skeletal_class", "skeletal_class_wits", "vertical_sn_gogn", "vertical_fma"):
        assert set(declared("ceph_classes", column)) == set(bands[column]), column


@pytest.mark.parametrize(
    ("table", "column", "module", "key"),
    [
        ("growth_models", "status", "dentalkit/stats/_growth_fit.py", "status"),
        ("growth_variance", "kind", "dentalkit/stats/_growth_fit.py", "kind"),
        ("missing_per_patient", "category", "dentalkit/teeth/_missing.py", "category"),
        ("comparisons", "statistic_name", "dentalkit/stats/_tests.py", "statistic_name"),
        ("comparisons", "effect_size_name", "dentalkit/stats/_tests.py", "effect_size_name"),
        ("comparisons", "difference_name", "dentalkit/stats/_tests.py", "difference_name"),
        ("growth_fixed", "statistic_name", "dentalkit/stats/_growth_fit.py", "statistic_name"),
        ("tmj_prevalence", "unit_of_analysis", "dentalkit/findings/_tmj.py", "unit_of_analysis"),
        ("qc_sensitivity", "unit_of_analysis", "dentalkit/study/_qc.py", "unit_of_analysis"),
        (
            "qc_sensitivity_results",
            "unit_of_analysis",
            "dentalkit/study/_qc.py",
            "unit_of_analysis",
        ),
        ("qc_landmarks", "unit", "dentalkit/qc/_landmarks.py", "unit"),
        ("qc", "unit", "dentalkit/qc/_landmarks.py", "unit"),
    ],
)
def test_vocabulary_holds_every_literal_the_code_writes(table, column, module, key):
    found = literals(module, key)
    assert found, f"no literal written under {key!r} in {module}: the scan is stale"
    assert found == set(declared(table, column))


MISSING_TABLES = ("missing_by_fdi", "missing_by_type", "missing_by_arch", "missing_patterns")


def test_missing_teeth_unit_of_analysis_is_the_level_each_session_choice_gives():
    """teeth.missing names its level in a variable, so its tables are run, per choice."""
    from tests.plot import plot_tables

    two_sessions = pd.concat(
        [plot_tables.teeth(ts="2024-03-01"), plot_tables.teeth(ts="2025-03-01")],
        ignore_index=True,
    )
    seen: dict[str, set[str]] = {t: set() for t in MISSING_TABLES}
    for session, level in (("first", "patient"), ("last", "patient"), ("all", "session")):
        result = teeth.missing(two_sessions, session=session)
        for table, frame in zip(
            MISSING_TABLES,
            (result.by_fdi, result.by_type, result.by_arch, result.patterns),
            strict=True,
        ):
            assert set(frame["unit_of_analysis"].astype(str)) == {level}, (table, session)
            seen[table] |= {level}
    for table in MISSING_TABLES:
        assert seen[table] == set(declared(table, "unit_of_analysis")), table


@pytest.mark.parametrize("table", ["comparisons", "growth_fixed", "growth_models"])
def test_unit_of_analysis_naming_a_column_is_open(table):
    # there it names the caller's unit column (patient_id, or "row"): no fixed vocabulary
    assert declared(table, "unit_of_analysis") is None


def test_calibration_statistics_are_the_ones_calibration_reports():
    est = pd.DataFrame(
        {"patient_id": [f"P{i}" for i in range(8)], "estimate_length_months": 20.0 + np.arange(8)}
    )
    cal = tle.calibration(est, est["estimate_length_months"] + np.arange(8) % 3)
    assert tuple(cal["statistic"]) == declared("tle_calibration", "statistic")


def test_every_vocabulary_is_checked_here_or_open_by_design():
    cat = load_catalogue()
    with_values = {(t, c) for t, c in zip(cat["table"], cat["column"], strict=True)} & {
        (t, c) for t, c, v in zip(cat["table"], cat["column"], cat["values"], strict=True) if v
    }
    checked = {(t, c) for t, c, _ in FROM_CONSTANTS} | {
        ("ceph_classes", c)
        for c in ("skeletal_class", "skeletal_class_wits", "vertical_sn_gogn", "vertical_fma")
    }
    checked |= {
        ("growth_models", "status"),
        ("growth_variance", "kind"),
        ("missing_per_patient", "category"),
        ("comparisons", "statistic_name"),
        ("comparisons", "effect_size_name"),
        ("comparisons", "difference_name"),
        ("growth_fixed", "statistic_name"),
        ("tle_calibration", "statistic"),
        ("tmj_prevalence", "unit_of_analysis"),
        ("qc_sensitivity", "unit_of_analysis"),
        ("qc_sensitivity_results", "unit_of_analysis"),
        ("qc_landmarks", "unit"),
        ("qc", "unit"),
        *((t, "unit_of_analysis") for t in MISSING_TABLES),
        # values the study below shows (computed names: "up-lo", "box_" prefix removed)
        ("arch_measures", "arch"),
        ("comparisons", "arch"),
        ("descriptives", "arch"),
        ("finding_box_sizes", "measure"),
        # the generic class column is the ANB class of ceph_classes
        ("*", "skeletal_class"),
        # fixed in their tables' declarations and checked by tests/test_output_schemas
        ("tle_sensitivity", "curve"),
        ("contract", "verdict"),
        ("arch_fits", "pose"),
        ("tooth_measures", "md_axis"),
    }
    assert with_values <= checked, sorted(with_values - checked)


def test_study_tables_hold_only_declared_values(study):
    _, analysis = study
    seen = set()
    for table, df in analysis.items():
        for column, col in df.items():
            try:
                values = declared(table, str(column))
            except KeyError:
                continue
            if values is None:
                continue
            present = {str(v) for v in col.dropna().unique()}
            assert present <= set(values), (table, column, present - set(values))
            seen.add((table, str(column)))
    assert {("arch_measures", "arch"), ("comparisons", "arch")} <= seen
    assert "up-lo" in set(analysis["arch_measures"]["arch"].astype(str))
    assert set(analysis["finding_box_sizes"]["measure"].astype(str)) == {"width", "height", "area"}
    assert declared("ceph_classes", "skeletal_class") == declared("*", "skeletal_class")
    # the generic outputs carry the grouping columns they were given: arch dimensions
    # described or compared by arch hold "up-lo", and are written with their declaration
    from dentalkit import stats
    from dentalkit.io import arrow_table

    described = stats.describe(analysis["arch_measures"], "value", ["measure", "arch"])
    assert "up-lo" in set(described["arch"].astype(str))
    assert arrow_table(described, "descriptives").num_rows == len(described)


def test_dictionary_takes_allowed_values_from_the_declarations_not_the_data():
    fits = pd.DataFrame(
        {
            "model": pd.Categorical(["catenary"]),  # one category present
            "status": ["ok"],
            "measure_note": ["x"],
        }
    )
    summ = pd.DataFrame({"measure": pd.Categorical(["SNA", "ANB"]), "session": ["first"] * 2})
    dd = data_dictionary({"arch_fits": fits, "ceph_summary": summ}).set_index(["table", "column"])
    assert dd.loc[("arch_fits", "model"), "allowed_values"] == list(arch.MODELS)
    assert dd.loc[("arch_fits", "model"), "levels"] == ["catenary"]
    assert dd.loc[("arch_fits", "status"), "allowed_values"] == list(_frame.STATUSES)
    assert dd.loc[("arch_fits", "status"), "levels"] == []  # text, not a categorical
    assert dd.loc[("ceph_summary", "session"), "allowed_values"] == ["first", "last", "all"]
    # an open vocabulary: nothing allowed is declared, the levels are the data's
    assert dd.loc[("ceph_summary", "measure"), "allowed_values"] == []
    assert dd.loc[("ceph_summary", "measure"), "levels"] == ["ANB", "SNA"]
    assert dd.loc[("arch_fits", "measure_note"), "allowed_values"] == []


def test_a_value_outside_the_declared_vocabulary_is_refused_by_the_dictionary():
    fits = pd.DataFrame({"model": ["catenary"], "status": ["exploded"]})
    with pytest.raises(InputError, match=r"'arch_fits'.*'status'.*exploded"):
        data_dictionary({"arch_fits": fits})


def test_a_users_own_table_keeps_its_own_values():
    # 'arch' is declared up/lo for dentalkit's tables; a user's table may mean otherwise
    mine = pd.DataFrame({"arch": ["upper", "lower"], "x": [1.0, 2.0]})
    ours = pd.DataFrame({"arch": ["up", "lo"], "x": [1.0, 2.0]})
    dd = data_dictionary({"mine": mine, "also_mine": ours}).set_index(["table", "column"])
    assert dd.loc[("mine", "arch"), "allowed_values"] == []
    assert dd.loc[("also_mine", "arch"), "allowed_values"] == ["up", "lo"]


def test_sex_is_open_and_described_as_each_producer_spells_it():
    """``sex`` is the patient table's own spelling, passed through: no fixed vocabulary.

    The sandbox's patient record says F/M, the treatment-length codebook labels
    female/male (and accepts aliases), and ceph.zscores matches norms on several
    spellings; the tables carry what they were given, so a declared vocabulary would refuse
    one producer or the other. The descriptions name each producer's spelling.
    """
    import re

    from dentalkit.ceph import norms
    from dentalkit.io import arrow_table
    from dentalkit.study.demo import sandbox_patients

    def words(table: str) -> set[str]:
        return set(re.findall(r"[\w/]+", _lookup(table, "sex")[1].lower()))

    record = sandbox_patients([f"P{i:03d}" for i in range(40)])
    typed = tle.example_patients(40)
    p02 = tle.load_codebook()["p02"]
    assert p02.column == "sex"
    assert set(record["sex"]) == {"F", "M"}
    assert set(typed["sex"].astype(str)) == set(p02.labels) == {"female", "male"}

    for table in ("*", "ceph_zscores", "tle_estimates"):
        assert declared(table, "sex") is None, table
    assert {"f", "m", "female", "male"} <= words("*")
    assert {*norms._SEX_CODES} <= words("ceph_zscores")
    assert {*p02.labels, *p02.aliases, *(c.lower() for c in p02.codes)} <= words("tle_estimates")

    # passed through unchanged: ceph.zscores keeps the record's spelling …
    m = pd.DataFrame(
        {"patient_id": ["a", "b"], "timestamp": "2024-03-05", "measure": "Co_Gn"}
    ).assign(value=[134.3, 120.2], unit="mm")
    spelled = pd.DataFrame({"patient_id": ["a", "b"], "sex": ["Male", "F"], "age": [30, 30]})
    with pytest.warns(DentalkitWarning, match="include_unverified"):
        z = ceph.zscores(m, patients=spelled, include_unverified=True)
    assert z["sex"].astype(str).tolist() == ["Male", "F"]
    assert z["z"].notna().all()  # both spellings matched their sex's norm
    # … tle.estimate returns its input rows, whose spellings encode to the codes sent
    aliased = typed.head(4).assign(sex=["F", "woman", "Male", "boy"])
    assert tle.encode(aliased)["p02"].tolist() == ["F", "F", "M", "M"]
    # … and every spelling is written under the declarations
    assert arrow_table(z, "ceph_zscores").column("sex").to_pylist() == ["Male", "F"]
    written = arrow_table(aliased, "tle_estimates").column("sex").to_pylist()
    assert written == ["F", "woman", "Male", "boy"]
