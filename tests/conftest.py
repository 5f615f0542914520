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


#: Test files run on one xdist worker together (one work unit of ``--dist loadfile``), by
#: unit name: they read a session fixture that costs a minute of CPU and that another worker
#: could not use (tests/reliability's ``reference``: the bodies hold links signed by the
#: worker's own frozen sandbox, with its port). Handed out first, as slow files are.
SAME_WORKER = {
    "tests/reliability/test_rel_kills.py": "tests/reliability (reference run)",
    "tests/reliability/test_rel_damage.py": "tests/reliability (reference run)",
    "tests/reliability/test_rel_redis_restart.py": "tests/reliability (reference run)",
}


class _SameWorkerScheduling:
    """An xdist plugin (registered when xdist is there): ``--dist loadfile``, with the files
    of :data:`SAME_WORKER` as one work unit."""

    @staticmethod
    def pytest_xdist_make_scheduler(config: pytest.Config, log):
        if config.getoption("dist") != "loadfile":
            return None
        from xdist.scheduler import LoadFileScheduling

        class _Scheduling(LoadFileScheduling):
            def _split_scope(self, nodeid: str) -> str:
                path = nodeid.split("::", 1)[0]
                return SAME_WORKER.get(path, path)

        return _Scheduling(config, log)


def pytest_configure(config: pytest.Config) -> None:
    if config.pluginmanager.hasplugin("xdist"):  # not with -p no:xdist
        config.pluginmanager.register(_SameWorkerScheduling(), "dentalkit-same-worker")


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

    from typer.testing import CliRunner

    from dentalkit.cli import app
    from tests.across_workers import shared_folder
    from tests.distributed.realservers import free_port

    def build(folder):
        port = str(free_port())
        args = ["demo", "--patients", "3", "--out", str(folder / "demo"), "--port", port]
        args += ["--no-progress", "--dpi", "300"]  # 600 dpi draws the same, more slowly
        ran = CliRunner().invoke(app, args)
        result = {"exit_code": ran.exit_code, "output": ran.output, "port": port}
        (folder / "result.json").write_text(json.dumps(result), encoding="utf-8")

    shared = shared_folder(tmp_path_factory, "demo-study-shared", build)
    result = json.loads((shared / "result.json").read_text(encoding="utf-8"))
    out = tmp_path_factory.mktemp("demo-study") / "demo"
    if (shared / "demo").is_dir():
        shutil.copytree(shared / "demo", out)
    # the same port: the store records the service's origin and refuses another one
    args = ["demo", "--patients", "3", "--out", str(out), "--port", result.pop("port")]
    args += ["--no-progress", "--dpi", "300"]
    return out, args, SimpleNamespace(**result)


@pytest.fixture(scope="session")
def sandbox_store(request, tmp_path_factory):
    """A responses store of a small sandbox cohort, fetched once per test run: (the store
    folder, the base URL of the sandbox that answered).

    6 patients (:data:`tests.helpers.STORE_PATIENTS`) × 2 sessions × the 8 endpoints of
    :data:`tests.helpers.STORE_ENDPOINTS`, every request answered. Read by tests/io's study and by the
    streaming tests of tests/study. The folder is shared by the run's workers: read it, or
    copy it before adding to it (with the base URL given here: a store refuses another).
    """
    import json

    import pandas as pd

    from tests.across_workers import shared_folder
    from tests.helpers import STORE_ENDPOINTS, STORE_PATIENTS, STORE_SESSIONS

    def build(folder):
        from dentalkit.fetch.client import Client
        from dentalkit.fetch.cohort import fetch_cohort

        sb = request.getfixturevalue("sandbox")  # started only by the worker that fetches
        rows = [
            {
                "patient_id": pid,
                "timestamp": ts,
                "endpoint": name,
                "image_url": f"https://images.example.org/{name}/{ts}.png",
            }
            for pid in STORE_PATIENTS
            for ts in STORE_SESSIONS
            for name in STORE_ENDPOINTS
        ]
        with Client(sb.base_url, api_key=sb.api_key, cache="memory") as client:
            report = fetch_cohort(
                pd.DataFrame(rows), out=folder / "store", client=client, progress=False
            )
        assert report.failed == 0, report.summary()
        (folder / "base_url.json").write_text(json.dumps(sb.base_url), encoding="utf-8")

    folder = shared_folder(tmp_path_factory, "sandbox-store", build)
    return folder / "store", json.loads((folder / "base_url.json").read_text(encoding="utf-8"))


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
