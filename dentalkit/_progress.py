"""Say when a long step starts and when it ends (the CLI and the demo; no print here).

A :class:`Stage` announces a step (``"figures: drawing …"``) and, when it ends, one line
with what it made and how long it took (``"figures: 15 in out/figures [12.3 s]"``). The
lines go to the ``echo`` callable the caller gives (``typer.echo`` in the CLI, the demo's
``echo``) or, without one, to the ``dentalkit.progress`` logger at INFO level, so library
code never prints. Steps over many items show a tqdm bar of their own (the fetch, the
table conversion, the figures; :func:`bar`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any

__all__ = ["Stage", "bar"]

log = logging.getLogger("dentalkit.progress")


def bar(total: int | None, desc: str, unit: str, enabled: bool = True) -> Any:
    """A tqdm bar on stderr over ``total`` items, shown only where someone watches.

    The bar is drawn when ``enabled`` and stderr is a terminal (tqdm's ``disable=None``);
    in a pipe, a log file or CI it draws nothing, so that captured output holds the
    :class:`Stage` lines only. It disappears when closed (``leave=False``): the stage's
    finish line says what was done.

    Parameters
    ----------
    total : int or None
        Number of items (``None`` when unknown: tqdm counts without a percentage).
    desc : str
        Label before the bar (``"tables"``, ``"figures"``).
    unit : str
        What one item is (``"response"``, ``"fig"``).
    enabled : bool
        ``False`` never draws (``--no-progress``, ``progress=False``).

    Returns
    -------
    tqdm.tqdm
        The bar: call ``update(n)``, ``set_postfix_str(name)`` and ``close()``.

    Examples
    --------
    >>> b = bar(3, "tables", "response", enabled=False)
    >>> b.disable, b.total
    (True, 3)
    >>> b.close()
    """
    if not enabled:
        # tqdm.auto is not imported for a bar never drawn: in a notebook without
        # ipywidgets its import alone warns ("IProgress not found").
        from tqdm.std import tqdm as plain

        return plain(total=total, desc=desc, unit=unit, disable=True)
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, disable=None, leave=False)


class Stage:
    """One step of a run: a start line now, a finish line with its duration later.

    Use it around a block (``with Stage("tables", echo, "converting …") as st:`` then
    ``st.result = "…"``) or, where a block would re-indent much code, call
    :meth:`done` yourself.

    Parameters
    ----------
    name : str
        Name of the step, printed at the start of both lines (``"analyses"``).
    echo : callable, optional
        Where the lines go (``typer.echo``, ``print``); default the
        ``dentalkit.progress`` logger at INFO.
    doing : str
        What the start line says the step does (``"running every analysis"``).

    Examples
    --------
    >>> lines = []
    >>> with Stage("tables", lines.append, "converting 3 responses") as st:
    ...     st.result = "9 tables"
    >>> lines[0]
    'tables: converting 3 responses …'
    >>> lines[1].startswith("tables: 9 tables [")
    True
    """

    def __init__(
        self, name: str, echo: Callable[[str], object] | None = None, doing: str = "started"
    ) -> None:
        self.name = name
        self.result = "done"
        self._echo = echo if echo is not None else log.info
        self._echo(f"{name}: {doing} …")
        self._t0 = time.perf_counter()
        self._ended = False

    @property
    def seconds(self) -> float:
        """Seconds since the start line."""
        return time.perf_counter() - self._t0

    def done(self, result: str | None = None) -> None:
        """Print the finish line: ``name: result [seconds]`` (once)."""
        if self._ended:
            return
        self._ended = True
        self._echo(f"{self.name}: {result or self.result} [{self.seconds:.1f} s]")

    def __enter__(self) -> Stage:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if exc_type is None:
            self.done()
        # on an error no finish line: the caller reports the error itself
