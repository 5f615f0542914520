"""Deprecated path: the module moved to :mod:`dentalkit.fetch.client` (issue 24).

``import dentalkit.client`` still works for one release and warns; it gives the very module
object of :mod:`dentalkit.fetch.client` (same functions, same globals, so patches apply).
Import from ``dentalkit.fetch.client`` (or the public names of ``dentalkit``) instead.
"""

from __future__ import annotations

import sys
import warnings

from dentalkit.fetch import client as _moved

warnings.warn(
    "dentalkit.client moved to dentalkit.fetch.client; import it from there "
    "(the old path goes in the next release)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
