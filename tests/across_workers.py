"""Build a fixture's data once per test run, not once per pytest-xdist worker.

``pytest -n 2`` (README's test command) runs two worker processes; a session-scoped fixture
is built once in each worker that asks for it. The expensive ones (a sandbox cohort fetched
and analysed, the demo study) are built once into the run's shared temporary folder, under a
file lock: the first worker to ask builds while the other waits, then both read the result.
"""

from __future__ import annotations

import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest


def shared_folder(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], None]
) -> Path:
    """The folder ``name`` of this run, shared by its workers; ``build(folder)`` fills it once.

    ``build`` runs in the first worker to ask, into an empty folder; a build that raised is
    started again by the next worker that asks (the error is not hidden from either). The
    folder is read-only by convention: a test that writes there copies it first.
    """
    from filelock import FileLock

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the folder every worker of this run shares
    shared = base / name
    with FileLock(str(base / f"{name}.lock")):
        if not (shared / ".built").is_file():
            if shared.exists():
                shutil.rmtree(shared)  # a build that failed half-way
            shared.mkdir(parents=True)
            build(shared)
            (shared / ".built").touch()
    return shared


def shared_value(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[], Any]
) -> Any:
    """``make()``, computed once per run and handed to every worker (through a pickle, which
    keeps pandas dtypes, categories and ``attrs``)."""

    def build(folder: Path) -> None:
        (folder / "value.pickle").write_bytes(pickle.dumps(make()))

    folder = shared_folder(tmp_path_factory, name, build)
    return pickle.loads((folder / "value.pickle").read_bytes())
