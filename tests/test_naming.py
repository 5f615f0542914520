"""The naming rule of docs/conventions.md, checked against the public API.

The rule's verb list, its table of noun-named functions and its table of removed old
names are read from the page itself, so code and documentation cannot drift apart:
a new public function of an analysis package is either led by a listed verb or listed
as a noun with what it returns; no function takes a verb's noun form (``measures``,
``summary`` …), and no old name of the table is public or called.
"""

from __future__ import annotations

import importlib
import inspect
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "conventions.md"
PACKAGES = ("ceph", "arch", "teeth", "agreement", "findings", "tle", "stats", "images", "qc")
#: Noun forms of the rule's verbs: never a public function name (the drift the rule ends).
VERB_NOUNS = {
    "measures",
    "measurement",
    "measurements",
    "summary",
    "summaries",
    "fits",
    "comparison",
    "comparisons",
    "classification",
    "classifications",
    "estimates",
    "description",
}


def _section() -> str:
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("## Naming and table shapes of the public API")
    end = text.index("\n## ", start + 1)
    return text[start:end]


def _table_after(section: str, marker: str) -> list[list[str]]:
    """Rows (cells) of the first Markdown table after ``marker``."""
    rows = []
    for line in section[section.index(marker) :].splitlines()[1:]:
        if line.startswith("|"):
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if not set("".join(cells)) <= set("-: "):
                rows.append(cells)
        elif rows:
            break
    return rows  # the header line is the marker itself


def _ticked(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def documented_verbs() -> tuple[set[str], set[str]]:
    """(verbs, prefixes) of the verb table: ``load_…`` is a prefix, ``measure`` a verb."""
    verbs, prefixes = set(), set()
    for row in _table_after(_section(), "| verb | act | functions |"):
        for name in _ticked(row[0]):
            (prefixes.add(name[:-1]) if name.endswith("…") else verbs.add(name))
    return verbs, prefixes


def documented_nouns() -> set[str]:
    rows = _table_after(_section(), "| function | returns |")
    return {_ticked(row[0])[0] for row in rows}


def documented_aliases() -> dict[str, str]:
    rows = _table_after(_section(), "| old name (removed) | new name |")
    return {_ticked(row[0])[0]: _ticked(row[1])[0] for row in rows}


def public_functions() -> dict[str, object]:
    """``"pkg.name"`` → function, for every function in an analysis package's ``__all__``."""
    out = {}
    for pkg in PACKAGES:
        module = importlib.import_module(f"dentalkit.{pkg}")
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                out[f"{pkg}.{name}"] = obj
    return out


def breaks_rule(qualified: str, verbs: set[str], prefixes: set[str], nouns: set[str]) -> str:
    """Why ``pkg.name`` breaks the rule ('' when it follows it)."""
    name = qualified.split(".", 1)[1]
    if name.split("_")[0] in verbs or any(name.startswith(p) for p in prefixes):
        return ""  # led by a verb: load_measures loads the measures catalogue
    if set(name.split("_")) & VERB_NOUNS:
        return f"{qualified}: a verb's noun form; name it by the verb (docs/conventions.md)"
    if qualified in nouns:
        return ""
    return (
        f"{qualified}: neither led by a verb of the rule nor listed as a noun-named function "
        "in docs/conventions.md ('Naming and table shapes of the public API')"
    )


def test_the_rule_check_can_fail():
    verbs, prefixes = documented_verbs()
    nouns = documented_nouns()
    assert {"measure", "fit", "compare", "summarize"} <= verbs
    assert "load_" in prefixes
    assert breaks_rule("arch.measures", verbs, prefixes, nouns)
    assert breaks_rule("tle.summary", verbs, prefixes, nouns)
    assert breaks_rule("teeth.tooth_measurements", verbs, prefixes, nouns)
    assert breaks_rule("ceph.angles", verbs, prefixes, nouns)  # an unlisted noun
    assert not breaks_rule("ceph.load_norms", verbs, prefixes, nouns)
    assert not breaks_rule("teeth.symmetry", verbs, prefixes, nouns)


def test_every_public_function_follows_the_naming_rule():
    verbs, prefixes = documented_verbs()
    nouns = documented_nouns()
    broken = []
    for qualified in public_functions():
        reason = breaks_rule(qualified, verbs, prefixes, nouns)
        if reason:
            broken.append(reason)
    assert not broken, "\n".join(broken)


def test_documented_names_exist_and_are_not_verb_led():
    verbs, _ = documented_verbs()
    functions = public_functions()
    for qualified in documented_nouns():
        assert qualified in functions, f"{qualified} is listed as a noun but is not public"
        name = qualified.split(".", 1)[1]
        assert name.split("_")[0] not in verbs, f"{qualified} is verb-led: drop it from the list"
    for row in _table_after(_section(), "| verb | act | functions |"):
        for qualified in _ticked(row[2]):
            if "…" not in qualified:
                assert qualified in functions, f"verb table names {qualified}, not public"


@pytest.mark.parametrize("old", sorted(documented_aliases()))
def test_removed_names_are_gone_and_their_new_names_public(old):
    new = documented_aliases()[old]
    functions = public_functions()
    assert new in functions
    package, name = old.split(".", 1)
    assert not hasattr(importlib.import_module(f"dentalkit.{package}"), name), old


def test_no_caller_uses_a_removed_name():
    """Package, benchmarks, notebooks, docs and README call the new names only."""
    # no word character before: ``_tle.summary(`` (a module imported as _tle) is a hit too
    patterns = [re.compile(rf"(?<![A-Za-z0-9]){re.escape(old)}\(") for old in documented_aliases()]
    patterns.append(re.compile(r"(?<![A-Za-z0-9_])stats\.summary\("))
    places = [ROOT / "README.md", *ROOT.glob("dentalkit/**/*.py")]
    for folder, ext in (("benchmarks", "py"), ("notebooks", "ipynb"), ("docs", "md")):
        places += ROOT.glob(f"{folder}/**/*.{ext}")
    hits = []
    for path in places:
        text = path.read_text(encoding="utf-8")
        for pattern in patterns:
            hits += [f"{path.relative_to(ROOT)}: {m.group(0)}" for m in pattern.finditer(text)]
    assert not hits, "\n".join(hits)


def test_measure_tables_are_long_and_teeth_measure_is_the_wide_case():
    """The shapes the page documents: long = one row per unit × measure; teeth wide."""
    from dentalkit import ceph, teeth
    from tests.plot import plot_tables

    long = ceph.measure(plot_tables.landmarks(), mm_per_px=0.1)
    assert {"measure", "value", "unit"} <= set(long.columns)
    assert not long.duplicated(["patient_id", "timestamp", "view", "measure"]).any()
    assert long["unit"].nunique() > 1  # degrees and mm side by side: why it is long

    outlines = plot_tables.teeth()
    wide = teeth.measure(outlines)
    assert len(wide) == len(outlines)  # one row per tooth, in input order
    assert (wide["tooth"].to_numpy() == outlines["tooth"].to_numpy()).all()
    assert "measure" not in wide.columns
    assert {"area", "perimeter", "md_width", "bl_width"} <= set(wide.columns)


# ---- `unit` is the unit of measurement; `unit_of_analysis` the unit of analysis ----------
COLUMNS_CSV = ROOT / "dentalkit" / "data" / "columns.csv"
#: What a description says when its column is the unit of analysis.
ANALYSIS_MEANING = re.compile(r"unit of analysis|analysis unit", re.IGNORECASE)


def unit_rule_breaches(rows: list[dict[str, str]]) -> list[str]:
    """Declarations (rows of columns.csv) that break the `unit` rule of docs/conventions.md."""
    out = []
    for r in rows:
        where, desc = f"{r['table']}.{r['column']}", r["description"]
        if r["column"] == "unit" and ANALYSIS_MEANING.search(desc):
            out.append(f"{where} means the unit of analysis ({desc!r}): name it unit_of_analysis")
        elif r["column"] == "value_unit":
            out.append(f"{where}: the unit of measurement is the column unit")
        elif r["column"] == "unit_of_analysis" and not ANALYSIS_MEANING.search(desc):
            out.append(f"{where} does not say it is the unit of analysis ({desc!r})")
        elif r["column"] != "unit_of_analysis" and desc.lower().startswith(
            ("unit of analysis", "column identifying the unit of analysis")
        ):
            out.append(f"{where} is the unit of analysis: name it unit_of_analysis")
    return out


def _declarations() -> list[dict[str, str]]:
    import csv

    with COLUMNS_CSV.open(encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f))


def test_unit_rule_check_can_fail():
    bad = [
        {"table": "t", "column": "unit", "description": "unit of analysis: patient"},
        {"table": "t", "column": "value_unit", "description": "unit of the values"},
        {"table": "t", "column": "analysis", "description": "unit of analysis: patient"},
        {"table": "t", "column": "unit_of_analysis", "description": "deg or mm"},
    ]
    assert len(unit_rule_breaches(bad)) == 4
    fine = [
        {"table": "t", "column": "unit", "description": "unit of this row's values (deg …)"},
        {"table": "t", "column": "unit_of_analysis", "description": "unit of analysis: patient"},
        {"table": "t", "column": "n_units", "description": "units of analysis tested"},
    ]
    assert unit_rule_breaches(fine) == []


def test_no_table_declares_unit_for_the_unit_of_analysis():
    rows = _declarations()
    assert not unit_rule_breaches(rows), "\n".join(unit_rule_breaches(rows))
    # the page's table of renamed columns names exactly the tables that declare the new one
    text = PAGE.read_text(encoding="utf-8")
    start = text.index("## `unit` and `unit_of_analysis` in column names")
    section = text[start : text.index("\n## ", start + 1)]
    documented = {
        name
        for row in _table_after(section, "| table (as written by the pipeline) |")
        if _ticked(row[2]) == ["unit_of_analysis"]
        for name in _ticked(row[0].split("(")[0])
    }
    declared = {r["table"] for r in rows if r["column"] == "unit_of_analysis"}
    assert documented == declared


def test_analyses_write_unit_of_analysis_and_keep_unit_for_measurement():
    """The tables as the functions return them, on small inputs (sandbox-free)."""
    import numpy as np
    import pandas as pd

    from dentalkit import stats, teeth
    from tests.plot import plot_tables

    rng = np.random.default_rng(3)
    ids = [f"P{i:02d}" for i in range(12)]
    table = pd.DataFrame(
        {
            "patient_id": np.repeat(ids, 3),
            "session_time": np.tile([0.0, 1.0, 2.0], 12),
            "measure": "N_Me",
            "value": 110 + np.tile([0.0, 1.0, 2.0], 12) + rng.normal(0, 0.3, 36),
            "unit": "mm",
            "group": np.repeat(["a", "b"], 18),
        }
    )
    first = table[table["session_time"] == 0]
    cmp = stats.compare(first, "value", by="group")
    assert "unit" not in cmp.columns and cmp["unit_of_analysis"].tolist() == ["patient_id"]
    assert stats.compare(first, "value", by="group", unit=None)["unit_of_analysis"][0] == "row"

    fit = stats.growth(table, time="session_time")
    for frame in (fit.fixed, fit.models):
        assert "value_unit" not in frame.columns
        assert set(frame["unit"]) == {"mm"}  # the measurement unit of the values
        assert set(frame["unit_of_analysis"]) == {"patient_id"}
    sd_units = set(fit.variance["unit"].dropna())
    assert "mm" in sd_units and sd_units <= {"mm", "mm/session_time"}  # SDs: mm, slope mm/time

    missing = teeth.missing(plot_tables.teeth())
    for frame in (missing.by_fdi, missing.by_type, missing.by_arch, missing.patterns):
        assert "unit" not in frame.columns and set(frame["unit_of_analysis"]) == {"patient"}


def test_a_unit_column_is_read_as_the_unit_of_measurement_whatever_it_holds():
    """No guess from the values: ``unit`` = "session" is a unit, not the unit of analysis.

    The writer once took a ``unit`` column holding only patient/session/image for the
    unit of analysis and dropped it from ``{unit}`` units; since the rename no dentalkit
    table writes such a column, so the declared meaning holds for every value.
    """
    import pandas as pd

    from dentalkit.io import arrow_table, data_dictionary

    generic = next(r for r in _declarations() if r["table"] == "*" and r["column"] == "unit")
    for held in (["session"], ["patient", "image"], ["mm"]):
        df = pd.DataFrame({"group": ["a"] * len(held), "mean": 1.0, "unit": held})
        meta = arrow_table(df, "descriptives").schema
        unit_meta = {k.decode(): v.decode() for k, v in meta.field("unit").metadata.items()}
        assert unit_meta["description"] == generic["description"], held
        mean_unit = meta.field("mean").metadata[b"unit"].decode()
        dd = data_dictionary({"descriptives": df}).set_index("column")
        assert dd.loc["unit", "description"] == generic["description"], held
        assert dd.loc["mean", "unit"] == mean_unit, held
        if len(held) == 1:
            assert mean_unit == held[0]  # {unit} resolved to the one unit named
        else:
            assert mean_unit == f"per row: column unit ({', '.join(sorted(held))})"
