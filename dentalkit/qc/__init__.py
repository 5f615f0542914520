"""Quality control of the AI's answers, before they reach the statistics.

One function per kind of output, each returning a declared table (one row per checked
item: ``flagged``, ``score``, ``reason``, the method used and why):

landmarks(landmarks, ...)
    Cohort shape model (generalised Procrustes superimposition, then a robust model that
    predicts each landmark from the others) and plausible-range rules.
teeth(teeth, ...)
    Outline validity, area for the tooth's number, overlaps, label order along the arch,
    missing status across images of one session.
arch_points(arch_points, ...)
    Order and spacing of the catenary points.
findings(findings, ...)
    Boxes outside the image, duplicated boxes.
tle_inputs(table, ...)
    Treatment-length inputs outside their codebook ranges.

and what a study does with them:

apply(table, qc, policy=...)
    A pre-specified policy (``"exclude"``, ``"flag"``, ``"ignore"``) applied to an
    analysis table: the kept rows and every excluded item with its reason.
summarize(qc)
    Counts and reasons per check, for the report.
superimpose(points)
    The generalised Procrustes superimposition itself (shape coordinates for other uses).
load_plausible_ranges()
    The shipped plausible human ranges (``dentalkit/data/plausible_ranges.csv``).

Pure functions: no I/O. The method and its measured accuracy: ``docs/qc.md``.
"""

from dentalkit.qc._arch_points import arch_points
from dentalkit.qc._findings import findings
from dentalkit.qc._gpa import Superimposition, superimpose
from dentalkit.qc._landmarks import landmarks
from dentalkit.qc._policy import POLICIES, Applied, apply, summarize
from dentalkit.qc._ranges import load_plausible_ranges
from dentalkit.qc._teeth import teeth
from dentalkit.qc._tle import tle_inputs

__all__ = [
    "POLICIES",
    "Applied",
    "Superimposition",
    "apply",
    "arch_points",
    "findings",
    "landmarks",
    "load_plausible_ranges",
    "summarize",
    "superimpose",
    "teeth",
    "tle_inputs",
]
