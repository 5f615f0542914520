"""Deprecated path: the module moved to :mod:`dentalkit.fetch.store` (issue 24).

``import dentalkit.store`` still works for one release and warns; it gives the very module
object of :mod:`dentalkit.fetch.store` (same functions, same globals, so patches apply).
Import from ``dentalkit.fetch.store`` (or the public names of ``dentalkit``) instead.
"""

from __future__ import annotations

import sys
import warnings

from dentalkit.fetch import store as _moved

warnings.warn(
    "dentalkit.store moved to dentalkit.fetch.store; import it from there "
    "(the old path goes in the next release)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
