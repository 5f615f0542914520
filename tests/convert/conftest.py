"""Fixtures of the converter tests (helpers live in ``_helpers.py``)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.convert._helpers import COUNTS, all_endpoints_rows, frame


@pytest.fixture
def all_endpoints_frame() -> pd.DataFrame:
    """A responses table with one spec-shaped response per endpoint."""
    return frame(*all_endpoints_rows())


def pytest_terminal_summary(terminalreporter) -> None:
    """How many responses the property tests generated (the suite's "cases")."""
    counts = COUNTS
    if counts["responses"]:
        terminalreporter.write_line(
            f"convert property tests: {counts['responses']:,} generated responses "
            f"({counts['corruptions']:,} of them corrupted) converted"
        )
