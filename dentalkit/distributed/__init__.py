"""Deprecated path: the module moved to :mod:`dentalkit.io.partitioned` (issue 24).

Partitioned Parquet is table I/O, so it lives in the io package. ``import
dentalkit.distributed`` still works for one release and warns; it gives the very module
object of :mod:`dentalkit.io.partitioned` (same functions, same globals, so patches apply).
Import from ``dentalkit.io`` (``write_partitioned``, ``read_partitioned``,
``patient_bucket``) or ``dentalkit.io.partitioned`` (``read_dask``, ``map_partitions``,
``FETCH_DASK_CONFIG`` …) instead. The alias is a one-file package (not ``distributed.py``) so
that git records the old file as moved and carries edits made to it elsewhere meanwhile to
``dentalkit/io/partitioned.py`` when branches merge.
"""

from __future__ import annotations

import sys
import warnings

from dentalkit.io import partitioned as _moved

warnings.warn(
    "dentalkit.distributed moved to dentalkit.io.partitioned; import it from there "
    "(the old path goes in the next release)",
    DeprecationWarning,
    stacklevel=2,
)
sys.modules[__name__] = _moved
