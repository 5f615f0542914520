"""Atomic file writing, in one place: a temporary file in the target's folder, ``fsync``,
then a rename over the target, so a reader never sees a half-written file.

Used by table I/O (:mod:`dentalkit.io`), the responses store (:mod:`dentalkit.fetch.store`)
and partitioned Parquet (:mod:`dentalkit.io.partitioned`). It imports nothing from the
package, so every module may use it without an import circle.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Mapping
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


def atomic_write_all(
    folder: str | os.PathLike, writes: Mapping[str, Callable[[str], object]]
) -> list[Path]:
    """Write several files into ``folder`` so that they appear together or not at all.

    Every ``write(tmp_path)`` first fills a temporary file in ``folder`` (fsynced); only
    when all of them succeeded are the temporary files renamed over their targets, one
    after another, and the folder flushed. If any write raises, every temporary file is
    removed and no target is touched: the folder holds nothing new.

    Parameters
    ----------
    folder : str or os.PathLike
        Existing folder of the files.
    writes : mapping of str to callable
        File name → function writing that file's content to the path it is given.

    Returns
    -------
    list of pathlib.Path
        The written files, in the order of ``writes``.

    Notes
    -----
    The renames are atomic one by one, not as a group: a crash (or a failing rename, e.g.
    a target that is a folder) between two of them leaves some files new and some old,
    each of them whole.
    """
    folder = Path(folder)
    staged: list[tuple[str, Path]] = []
    try:
        for name, write in writes.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=folder)
            os.close(fd)
            staged.append((tmp, folder / name))
            write(tmp)
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        for tmp, target in staged:
            os.replace(tmp, target)
    except BaseException:
        for tmp, _ in staged:
            Path(tmp).unlink(missing_ok=True)
        raise
    fsync_path(folder)
    return [target for _, target in staged]
