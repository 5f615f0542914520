"""Shared fixtures: one sandbox per test session on a free loopback port.

Tests that change faults or latency start their own sandbox (``dentalkit.sandbox.running``).
Tests marked ``remote`` need the real service and run only with ``--remote`` and
``DENTALKIT_API_KEY`` set (as astroquery marks ``remote_data``).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

#: Property tests keep the example counts each test sets; on a loaded machine (CI, several
#: xdist workers, a shared 2-core box) data generation can be slow without anything being
#: wrong, so the speed health check and the per-example deadline do not fail a test.
settings.register_profile("dentalkit", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("dentalkit")


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--remote",
        action="store_true",
        default=False,
        help="also run tests against the real service (needs DENTALKIT_API_KEY)",
    )


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _slow_files_first(items)
    if config.getoption("--remote") and os.environ.get("DENTALKIT_API_KEY"):
        return
    skip = pytest.mark.skip(reason="needs --remote and DENTALKIT_API_KEY (the real service)")
    for item in items:
        if "remote" in item.keywords:
            item.add_marker(skip)


def _slow_files_first(items: list[pytest.Item]) -> None:
    """Put the test files holding a ``slow`` test first, each file's tests in their order.

    pytest-xdist (``-n 2``, ``--dist loadfile`` in pyproject.toml) hands out whole files in
    collection order: the minutes-long files (the README demo, the notebooks, the docs
    build, the reliability suite) start at once instead of last, when one worker would run
    them alone while the other idles. Within a file nothing moves; the order is the same
    on every worker (xdist checks that they collected the same list).
    """
    slow_files = {item.nodeid.split("::")[0] for item in items if "slow" in item.keywords}
    items.sort(key=lambda item: item.nodeid.split("::")[0] not in slow_files)


@pytest.fixture(scope="session")
def sandbox():
    """A noise-on sandbox shared by the whole session (do not change its faults)."""
    from dentalkit.sandbox import running

    with running() as sb:
        yield sb


@pytest.fixture(scope="session")
def exact_sandbox():
    """A sandbox with the simulator's noise switched off (exact ground-truth geometry)."""
    from dentalkit.sandbox import running

    with running(noise=False) as sb:
        yield sb


def _free_port() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return str(s.getsockname()[1])


@pytest.fixture(scope="session")
def demo_study(tmp_path_factory):
    """``dentalkit demo`` run once (3 patients): (output folder, its CLI args, the result).

    Shared by the tests that read a whole demo run (tests/study, tests/io, tests/plot, the
    figure and schema tests) so that the study runs once per test run. Under pytest-xdist
    the first worker to ask runs it into the run's shared temporary folder, under a file
    lock, while the other waits for it; each worker then gets its own copy of the folder
    (and its own port in the args), so a test that runs the demo again into it or writes
    next to it never touches another worker's files; the args keep the run's port (the
    store refuses answers from another origin). The result has the run's ``exit_code`` and
    ``output``.
    """
    import json
    import shutil
    from types import SimpleNamespace

    from filelock import FileLock
    from typer.testing import CliRunner

    from dentalkit.cli import app

    base = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        base = base.parent  # the folder every worker of this run shares
    shared = base / "demo-study-shared"
    with FileLock(str(base / "demo-study-shared.lock")):
        if not (shared / "result.json").is_file():
            shared.mkdir(parents=True, exist_ok=True)
            port = _free_port()
            args = ["demo", "--patients", "3", "--out", str(shared / "demo"), "--port", port]
            args += ["--no-progress", "--dpi", "300"]  # 600 dpi draws the same, more slowly
            ran = CliRunner().invoke(app, args)
            result = {"exit_code": ran.exit_code, "output": ran.output, "port": port}
            (shared / "result.json").write_text(json.dumps(result), encoding="utf-8")
    result = json.loads((shared / "result.json").read_text(encoding="utf-8"))
    out = tmp_path_factory.mktemp("demo-study") / "demo"
    if (shared / "demo").is_dir():
        shutil.copytree(shared / "demo", out)
    # the same port: the store records the service's origin and refuses another one
    args = ["demo", "--patients", "3", "--out", str(out), "--port", result.pop("port")]
    args += ["--no-progress", "--dpi", "300"]
    return out, args, SimpleNamespace(**result)


@pytest.fixture(scope="module")
def demo_tables(demo_study):
    """The contract tables of :func:`demo_study` (without its problems table), read once per
    test module: the input of the tests that run ``study.analyze`` on them."""
    from dentalkit import io

    out, _, result = demo_study
    assert result.exit_code == 0, result.output
    tables = io.read_tables(out / "tables")
    tables.pop("problems")
    return tables
