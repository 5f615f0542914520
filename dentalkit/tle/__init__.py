"""Cohort treatment-length estimation through ``GET /tle``.

From a typed patient table to validated ``/tle`` calls, cohort summaries, sensitivity
(partial-dependence) curves and calibration against observed durations:

* :func:`load_codebook` — our documented, replaceable codebook (``docs/tle.md``): which
  column feeds each of p01 … p11 and how it is encoded.
* :func:`encode` / :func:`decode` — typed table ⇄ the eleven query strings, validating
  every row first.
* :func:`estimate` — predicted months from the stored GET /tle answers (a fetcher sends
  one request per distinct parameter set the store lacks, through fetch_cohort).
* :func:`summarize`, :func:`sensitivity`, :func:`calibration` — analyses (pure).
"""

from __future__ import annotations

from dentalkit.tle.codebook import Codebook, Parameter, load_codebook
from dentalkit.tle.encoding import decode, encode
from dentalkit.tle.estimation import estimate, problems, sensitivity
from dentalkit.tle.example import example_patients
from dentalkit.tle.stats import calibration, summarize

__all__ = [
    "Codebook",
    "Parameter",
    "calibration",
    "decode",
    "encode",
    "estimate",
    "example_patients",
    "load_codebook",
    "problems",
    "sensitivity",
    "summarize",
]
