"""Shared set-up of the statistics tests: lme4's sleepstudy, the balanced two-session cohort
of the paired-t identities, and the loader of the benchmark scripts' smoke modes."""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pandas as pd
import pytest

TESTS = Path(__file__).resolve().parents[1]
BENCHMARKS = TESTS.parent / "benchmarks"


@pytest.fixture(scope="session")
def sleepstudy() -> pd.DataFrame:
    """lme4's ``sleepstudy`` (18 subjects × 10 days; Belenky et al. 2003), as shipped in
    tests/data: ``Reaction`` (ms), ``Days``, ``Subject``."""
    return pd.read_csv(TESTS / "data" / "sleepstudy.csv", comment="#")


@pytest.fixture(scope="session")
def two_sessions() -> Callable[[int], tuple[pd.DataFrame, np.ndarray, np.ndarray]]:
    """Make ``n`` patients seen twice, a year apart (seed 3): SNB 80 ± 3, changing by
    0.4 ± 0.5 per year. Returns the long table (``patient_id``, ``years``, ``measure``,
    ``value``) and the two sessions' values, for the paired t test as the reference."""

    def make(n: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
        rng = np.random.default_rng(3)
        base = 80 + rng.normal(0, 3, n)
        later = base + 0.4 + rng.normal(0, 0.5, n)
        table = pd.DataFrame(
            {
                "patient_id": np.tile([f"p{i}" for i in range(n)], 2),
                "years": np.repeat([0.0, 1.0], n),
                "measure": "SNB",
                "value": np.r_[base, later],
            }
        )
        return table, base, later

    return make


@pytest.fixture
def no_patient_variance() -> tuple[pd.DataFrame, np.ndarray, np.ndarray]:
    """20 patients × 2 sessions, two groups, and no between-patient variation (seed 3):
    ``value = 10 + 2·group + 0.5·years + N(0, 1)``. Returns the table (``patient_id``,
    ``years``, ``group`` a/b, ``value``), the response and the least-squares design
    (intercept, years, group b, years × group b) for statsmodels' OLS as the reference."""
    rng = np.random.default_rng(3)
    n = 20
    g = np.repeat(np.arange(n), 2)
    t = np.tile([0.0, 1.0], n)
    grp = g % 2
    y = 10 + 2 * grp + 0.5 * t + rng.normal(0, 1, 2 * n)
    table = pd.DataFrame(
        {"patient_id": g, "years": t, "group": np.where(grp == 1, "b", "a"), "value": y}
    )
    return table, y, np.column_stack([np.ones(2 * n), t, grp, t * grp])


@pytest.fixture(scope="session")
def load_benchmark() -> Callable[[str], ModuleType]:
    """Import ``benchmarks/<name>.py`` as a module (the scripts are not a package)."""

    def load(name: str) -> ModuleType:
        spec = importlib.util.spec_from_file_location(
            f"{name}_benchmark", BENCHMARKS / f"{name}.py"
        )
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return module

    return load
