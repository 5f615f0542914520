"""Atomic file writing, in one place: a temporary file in the target's folder, ``fsync``,
then a rename over the target, so a reader never sees a half-written file.

Used by table I/O (:mod:`dentalkit.io`), the responses store (:mod:`dentalkit.fetch.store`)
and partitioned Parquet (:mod:`dentalkit.io.partitioned`). It imports nothing from the
package, so every module may use it without an import circle.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def fsync_path(path: str | os.PathLike) -> None:
    """Flush a file or a folder (the folder entry of a rename) to disk; no-op on Windows.

    Parameters
    ----------
    path : str or os.PathLike
        File or folder to flush.
    """
    if os.name == "nt":  # pragma: no cover - directories cannot be opened on Windows
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def atomic_write(
    target: str | os.PathLike,
    write: Callable[[str], object],
    check: Callable[[str], object] | None = None,
) -> Path:
    """Call ``write(tmp_path)``, fsync it, ``check(tmp_path)`` (e.g. read it back), then
    rename it over ``target`` and fsync the folder.

    Parameters
    ----------
    target : str or os.PathLike
        Final path; its folder must exist.
    write : callable
        Writes the content to the temporary path it is given.
    check : callable, optional
        Validates the temporary file before it replaces ``target``; raising keeps ``target``.

    Returns
    -------
    pathlib.Path
        ``target``. On any error the temporary file is removed and ``target`` is unchanged.
    """
    target = Path(target)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb+") as fh:
            os.fsync(fh.fileno())
        if check is not None:
            check(tmp)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    fsync_path(target.parent)
    return target
