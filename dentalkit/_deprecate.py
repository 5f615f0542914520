"""Deprecated aliases for renamed public functions (docs/conventions.md, "Naming").

A renamed function keeps its old name for one release: the old name is a thin
wrapper that emits a :class:`DeprecationWarning` naming the new one and then
calls it, so results are identical. The wrapper carries
``__deprecated_alias_of__`` so the naming test (tests/test_naming.py) can tell
an alias from a function that breaks the rule.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def deprecated_alias(new: F, old_name: str, package: str) -> F:
    """Return ``new`` under its former name, warning on every call.

    Parameters
    ----------
    new : callable
        The function under its new name.
    old_name : str
        The former public name (``"measures"``).
    package : str
        The public package both names live in (``"dentalkit.arch"``), used in
        the warning so it names the exact replacement.

    Returns
    -------
    callable
        A wrapper with ``new``'s signature and docstring that emits
        ``DeprecationWarning("dentalkit.arch.measures is deprecated: use
        dentalkit.arch.measure ...")`` (stack level 2: the caller's line) and
        returns ``new(*args, **kwargs)`` unchanged.
    """
    new_name = new.__name__
    message = (
        f"{package}.{old_name} is deprecated and will be removed in the next release: "
        f"use {package}.{new_name} (same arguments, same result; see the naming rule "
        "in docs/conventions.md)"
    )

    @functools.wraps(new)
    def alias(*args: Any, **kwargs: Any) -> Any:
        warnings.warn(message, DeprecationWarning, stacklevel=2)
        return new(*args, **kwargs)

    alias.__name__ = old_name
    alias.__qualname__ = old_name
    alias.__doc__ = f"Deprecated alias of :func:`{package}.{new_name}` (one release).\n\n" + (
        new.__doc__ or ""
    )
    alias.__deprecated_alias_of__ = f"{package}.{new_name}"  # type: ignore[attr-defined]
    return alias  # type: ignore[return-value]
