"""Deprecated path: the module moved to :mod:`dentalkit.fetch.cohort` (issue 24).

``import dentalkit.cohort`` still works for one release and warns; it gives the very module
object of :mod:`dentalkit.fetch.cohort` (same functions, same globals, so patches apply).
Import from ``dentalkit.fetch.cohort`` (or the public names of ``dentalkit``) instead.
"""

from __future__ import annotations

import sys
import warnings

from dentalkit.fetch import cohort as _moved

warnings.warn(
    "dentalkit.cohort moved to dentalkit.fetch.cohort; import it from there "
    "(the old path goes in the next release)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
