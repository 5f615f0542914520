"""The benchmark script runs end to end on a tiny cohort (the real run is not a test)."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest

from dentalkit.arch import MODELS
from dentalkit.arch._engine import _Problem

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "arch.py"


def _load():
    spec = importlib.util.spec_from_file_location("arch_benchmark", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_benchmark_smoke(capsys):
    bench = _load()
    assert bench.main(["--smoke"]) == 0
    out = capsys.readouterr().out
    assert "speed-up" in out
    assert "where the batched fit is worse" in out
    pts = bench.simulate(30, seed=1)
    counts = pts.groupby("patient_id", observed=True).size()
    assert counts.between(12, 18).all()


def test_the_loop_fits_the_same_residuals_as_the_batched_fit():
    bench = _load()
    rng = np.random.default_rng(3)
    U = np.sort(rng.uniform(-1.5, 1.5, (1, 14)), axis=1)
    V = 0.6 * U**2 + 0.03 * rng.standard_normal((1, 14))
    prob = _Problem(U, V, np.ones((1, 14), bool), np.ones(1))
    beta_kv = [0.8 * 1.4 * 4 / 3.4**2, 4 / 3.4**2]  # the fitted (κ, v) of D = 1.4, W = 3.4
    for name, shape in (("beta", beta_kv), ("catenary", [0.9]), ("poly6", [0.5, 0.02])):
        p = np.array([*shape, 0.01, -0.02, 0.03])
        f, jac = bench._one_arch(MODELS[name], U[0], V[0])
        r, J = prob.residuals(MODELS[name], "fit", "orthogonal")(p[None], np.array([0]))
        np.testing.assert_allclose(f(None, *p), r[0], rtol=1e-12, atol=1e-14)
        np.testing.assert_allclose(jac(None, *p), J[:, 0, :].T, rtol=1e-10, atol=1e-12)


@pytest.mark.slow  # minutes under load: its file is handed out first (tests/conftest.py)
def test_recovery_benchmark_smoke(capsys):
    spec = importlib.util.spec_from_file_location(
        "arch_recovery", BENCH.parent / "arch_recovery.py"
    )
    rec = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(rec)
    assert rec.main(["--smoke"]) == 0  # noise-free recovery ≤ 1e-6, all generating fits converge
    out = capsys.readouterr().out
    assert "ci_coverage" in out and "converged_share" in out
    # the generator draws what it says: noise-free beta points lie on Braun's curve
    pts, truth = rec.generate("beta", 3, seed=1, noise=0.0)
    assert len(pts) == 36 and list(truth.columns) == ["patient_id", "depth", "width"]
