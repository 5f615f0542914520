"""docs/columns.md and the column catalogue: one declaration, no drift."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

from dentalkit._dictionary import ANALYSIS_TABLES, columns_markdown, load_catalogue
from dentalkit.convert import schemas

ROOT = Path(__file__).resolve().parents[2]


def test_columns_md_is_generated_from_the_declarations():
    committed = (ROOT / "docs" / "columns.md").read_text(encoding="utf-8")
    assert committed == columns_markdown(), (
        "docs/columns.md is stale: regenerate it with "
        'python -c "from dentalkit._dictionary import columns_markdown; '
        "open('docs/columns.md', 'w', encoding='utf-8').write(columns_markdown())\""
    )


def test_catalogue_rows_are_well_formed():
    cat = load_catalogue()
    assert list(cat.columns) == ["table", "column", "unit", "description"]
    assert not cat.duplicated(["table", "column"]).any()
    known = set(schemas.SCHEMAS) | set(ANALYSIS_TABLES) | {"*"}
    assert set(cat["table"]) <= known, set(cat["table"]) - known
    contract = cat[cat["table"].isin(list(schemas.SCHEMAS))]
    # contract tables: descriptions come from the schemas only (no second declaration)
    assert (contract["description"] == "").all()
    for t, c in zip(contract["table"], contract["column"], strict=True):
        assert c in schemas.SCHEMAS[t].names, (t, c)
    analysis = cat[cat["table"].isin([*ANALYSIS_TABLES, "*"])]
    assert (analysis["description"] != "").all()
    assert set(ANALYSIS_TABLES) <= set(cat["table"])


def test_every_contract_column_has_a_description():
    for table, schema in schemas.SCHEMAS.items():
        for field in schema:
            assert (field.metadata or {}).get(b"doc"), (table, field.name)


@pytest.mark.parametrize(
    "name", ["dentalkit._pseudonymize", "dentalkit._export", "dentalkit._dictionary"]
)
def test_docstring_examples(name):
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.failed == 0
