"""The research notebooks: stored clean, and every one runs end to end on the sandbox.

The notebooks are executed by nbmake (``pytest --nbmake notebooks/``) in a subprocess, so
a kernel crash or a hanging cell cannot take the main test session with it, and each
notebook runs as a user runs it (working directory ``notebooks/``, a fresh kernel). The
notebooks start their own embedded sandbox; ``06_real_service`` uses the real service only
when both ``DENTALKIT_API_KEY`` and ``DENTALKIT_BASE_URL`` are set, so those variables are
removed from the subprocess environment here.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = sorted((ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
EXPECTED = [f"{i:02d}" for i in range(1, 8)]
#: Hang guards, not speed tests (speed is measured in benchmarks/): a cell stuck for 120 s,
#: or all notebooks (each ~10–15 s on a quiet machine) still running after 10 min, fail.
CELL_TIMEOUT_S = 120
HANG_GUARD_S = 600


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


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_uses_public_api_and_existing_docs(path: Path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    private = re.findall(r"dentalkit(?:\.\w+)*\._(?!_)\w+", code)
    assert private == [], f"{path.name} imports private modules {private}"
    prose = "\n".join("".join(c["source"]) for c in nb["cells"])
    for page in set(re.findall(r"docs/([\w/-]+\.md)", prose)):
        assert (ROOT / "docs" / page).is_file(), f"{path.name} cites docs/{page}, which is missing"


#: What a notebook's outputs must not show a reader: dentalkit's FutureWarning and
#: DeprecationWarning (a notebook passes errors= and uses current names), matplotlib's
#: "Ignoring fixed … limits" log line, and tqdm's ipywidgets warning for a bar never drawn.
UNWANTED_OUTPUT = re.compile(
    r"^(?=.*(?:FutureWarning|DeprecationWarning): )(?=.*(?:\bdentalkit\b|\berrors=))"
    r"|Ignoring fixed [xy] limits|TqdmWarning"
)


def unwanted_outputs(path: Path) -> list[str]:
    """Cells of an executed notebook whose outputs show an :data:`UNWANTED_OUTPUT` line."""
    nb = json.loads(path.read_text(encoding="utf-8"))
    found = []
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            text = out.get("text") or "".join(
                out.get("data", {}).get("text/plain", "") or out.get("traceback", [])
            )
            text = "".join(text) if isinstance(text, list) else text
            lines = [line for line in text.splitlines() if UNWANTED_OUTPUT.search(line)]
            found += [f"{path.name} cell {i}: {line}" for line in lines]
    return found


def test_unwanted_outputs_are_recognised(tmp_path: Path):
    shown = [
        "/tmp/ipykernel_1/2.py:3: FutureWarning: dentalkit.ceph.measure met 2 problem(s) and "
        "handled them with errors='warn', its default so far",
        "/x/dentalkit/io/__init__.py:9: DeprecationWarning: dentalkit.client is deprecated",
        "/x/dentalkit/stats/_units.py:9: FutureWarning: the default of observed=False",
        "Ignoring fixed y limits to fulfill fixed data aspect with adjustable data limits.",
        "/v/tqdm/auto.py:21: TqdmWarning: IProgress not found. Please update jupyter",
    ]
    fine = [
        "/tmp/ipykernel_1/2.py:11: DentalkitWarning: include_unverified=True: z-scores use "
        "norms not confirmed in a retrieved source",
        "/v/pandas/core.py:1: FutureWarning: the default of observed=False is deprecated",
    ]
    stream = [{"output_type": "stream", "name": "stderr", "text": x + "\n"} for x in shown + fine]
    cells = [{"cell_type": "code", "outputs": [out]} for out in stream]
    path = tmp_path / "x.ipynb"
    path.write_text(json.dumps({"cells": cells}), encoding="utf-8")
    assert [f.split(": ", 1)[1] for f in unwanted_outputs(path)] == shown


@pytest.mark.slow
def test_notebooks_run(tmp_path: Path):
    """All notebooks, executed by nbmake in one subprocess (two workers when xdist is there).

    They run as copies (``--overwrite`` keeps each copy's outputs) so that the outputs a
    reader would see can be checked: no :data:`UNWANTED_OUTPUT` line.
    """
    pytest.importorskip("nbmake")
    pytest.importorskip("ipykernel")
    env = {
        k: v for k, v in os.environ.items() if k not in ("DENTALKIT_API_KEY", "DENTALKIT_BASE_URL")
    }
    env["MPLBACKEND"] = "Agg"
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    # Entry-point plugins of the dev environment (schemathesis, hypothesis …) cost seconds
    # of start-up and nothing here needs them: load only nbmake (and xdist).
    env["PYTEST_DISABLE_PLUGIN_AUTOLOAD"] = "1"
    plugins = ["-p", "nbmake"]
    (tmp_path / "notebooks").mkdir()
    copies = [tmp_path / "notebooks" / p.name for p in NOTEBOOKS]
    for src, dst in zip(NOTEBOOKS, copies, strict=True):
        dst.write_bytes(src.read_bytes())
    if importlib.util.find_spec("xdist") is not None:
        plugins += ["-p", "xdist.plugin", "-n", "2"]
    cmd = [
        sys.executable,
        "-m",
        "pytest",
        *plugins,
        "--nbmake",
        f"--nbmake-timeout={CELL_TIMEOUT_S}",
        "-p",
        "no:cacheprovider",
        "-q",
        "--durations=0",
        "--overwrite",
        f"--rootdir={tmp_path}",
        "-c",
        os.devnull,
        *map(str, copies),
    ]
    proc = subprocess.run(
        cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=HANG_GUARD_S
    )
    assert proc.returncode == 0, f"notebooks failed:\n{proc.stdout[-8000:]}\n{proc.stderr[-2000:]}"
    assert f"{len(NOTEBOOKS)} passed" in proc.stdout, proc.stdout[-3000:]
    unwanted = [line for path in copies for line in unwanted_outputs(path)]
    assert unwanted == [], "\n".join(unwanted)
