"""The research notebooks: stored clean, and every one runs end to end on the sandbox.

Each notebook is executed by nbmake (``pytest --nbmake``) in a subprocess, so a kernel
crash or a hanging cell cannot take the main test session with it, and the notebooks run
exactly as a user runs them (working directory ``notebooks/``, a fresh kernel). The
notebooks start their own embedded sandbox; ``06_real_service`` uses the real service only
when both ``DENTALKIT_API_KEY`` and ``DENTALKIT_BASE_URL`` are set, so those variables are
removed from the subprocess environment here.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
EXPECTED = ["01", "07"]
#: Per-notebook budget (the brief: each < 60 s; all together < 3 min on 2 cores).
CELL_TIMEOUT_S = 120
NOTEBOOK_BUDGET_S = 60


def test_all_seven_notebooks_exist():
    assert [p.name[:2] for p in NOTEBOOKS] == EXPECTED, [p.name for p in NOTEBOOKS]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_clean(path: Path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert nb["cells"][0]["cell_type"] == "markdown", "a notebook opens with its purpose"
    for i, cell in enumerate(nb["cells"]):
        if cell["cell_type"] != "code":
            continue
        # outputs stripped: numbers in the repository come from running, never from editing
        assert cell.get("outputs", []) == [], f"cell {i} of {path.name} has stored outputs"
        assert cell.get("execution_count") is None, f"cell {i} of {path.name} was executed"
    text = path.read_text(encoding="utf-8")
    # no key is ever written into a notebook: the key is read from the environment only
    assert not re.search(r"DENTALKIT_API_KEY\"?\]?\s*=\s*[\"']", text), path.name
    assert not re.search(r"api_key\s*=\s*[\"'][^\"']+[\"']", text), path.name
    assert len(text) < 100_000, f"{path.name} is {len(text)} bytes; keep notebooks small"


@pytest.mark.slow
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path: Path, tmp_path: Path):
    pytest.importorskip("nbmake")
    pytest.importorskip("ipykernel")
    env = {
        k: v for k, v in os.environ.items() if k not in ("DENTALKIT_API_KEY", "DENTALKIT_BASE_URL")
    }
    env["MPLBACKEND"] = "Agg"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        "--nbmake",
        f"--nbmake-timeout={CELL_TIMEOUT_S}",
        "-p",
        "no:cacheprovider",
        "-q",
        "--no-header",
        f"--rootdir={tmp_path}",
        "-c",
        os.devnull,
        str(path),
    ]
    t0 = time.perf_counter()
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=4 * CELL_TIMEOUT_S
    )
    elapsed = time.perf_counter() - t0
    assert proc.returncode == 0, (
        f"{path.name} failed:\n{proc.stdout[-6000:]}\n{proc.stderr[-2000:]}"
    )
    assert elapsed < NOTEBOOK_BUDGET_S, (
        f"{path.name} took {elapsed:.0f} s (budget {NOTEBOOK_BUDGET_S} s)"
    )
