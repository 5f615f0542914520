"""Fixtures of the converter tests (helpers live in ``_helpers.py``)."""

from __future__ import annotations

import pandas as pd
import pytest

from tests.convert._helpers import all_endpoints_rows, frame


@pytest.fixture
def all_endpoints_frame() -> pd.DataFrame:
    """A responses table with one spec-shaped response per endpoint."""
    return frame(*all_endpoints_rows())
