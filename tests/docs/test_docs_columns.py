"""docs/columns.md and the column catalogue: one declaration, no drift."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

from dentalkit.convert import schemas
from dentalkit.io._dictionary import (
    ANALYSIS_TABLES,
    ARROW_TYPES,
    columns_markdown,
    declared_field,
    load_catalogue,
)

ROOT = Path(__file__).resolve().parents[2]


def test_columns_md_is_generated_from_the_declarations():
    committed = (ROOT / "docs" / "columns.md").read_text(encoding="utf-8")
    assert committed == columns_markdown(), (
        "docs/columns.md is stale: regenerate it with "
        'python -c "from dentalkit.io._dictionary import columns_markdown; '
        "open('docs/columns.md', 'w', encoding='utf-8').write(columns_markdown())\""
    )


def test_catalogue_rows_are_well_formed():
    cat = load_catalogue()
    assert list(cat.columns) == [
        "table",
        "column",
        "unit",
        "description",
        "type",
        "nullable",
        "values",
    ]
    assert set(cat["type"]) <= {*ARROW_TYPES, ""}
    assert set(cat["nullable"]) <= {"yes", "no", ""}
    # nullability and values only beside a type; values only for categories
    assert (cat.loc[cat["type"] == "", ["nullable", "values"]] == "").all().all()
    assert cat.loc[cat["values"] != "", "type"].str.contains("category").all()
    assert not cat.duplicated(["table", "column"]).any()
    known = set(schemas.SCHEMAS) | set(ANALYSIS_TABLES) | {"*"}
    assert set(cat["table"]) <= known, set(cat["table"]) - known
    contract = cat[cat["table"].isin(list(schemas.SCHEMAS))]
    # contract tables: descriptions, types and vocabularies come from the schemas only
    assert (contract[["description", "type", "nullable", "values"]] == "").all().all()
    for t, c in zip(contract["table"], contract["column"], strict=True):
        assert c in schemas.SCHEMAS[t].names, (t, c)
    generic = cat[cat["table"] == "*"]
    assert (generic["description"] != "").all() and (generic["type"] != "").all()
    analysis = cat[cat["table"].isin(list(ANALYSIS_TABLES))]
    # a row may leave the description to a generic declaration (codebook, tle schema …)
    for t, c in zip(analysis["table"], analysis["column"], strict=True):
        field = declared_field(t, c)
        assert field is None or field.metadata[b"description"], (t, c)
    assert set(ANALYSIS_TABLES) <= set(cat["table"])


def test_every_contract_column_has_a_description():
    for table, schema in schemas.SCHEMAS.items():
        for field in schema:
            assert (field.metadata or {}).get(b"doc"), (table, field.name)


@pytest.mark.parametrize(
    "name", ["dentalkit.io._pseudonymize", "dentalkit.io._export", "dentalkit.io._dictionary"]
)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
