"""Dental arch forms: alignment, model fits, arch dimensions and mean arch forms.

Reads the ``arch_points`` and ``tooth_keypoints`` tables (docs/data-contract.md)
and returns tidy tables. Everything is vectorized over the whole cohort; arches
that cannot be aligned or fitted become problem rows (``status`` other than
"ok", with a ``reason``), never exceptions. Models, frame and formulas:
``docs/arch.md``.

Public names
------------
align
    Canonical frame of every arch (incisal point at the origin, midline on the
    y-axis, +y posterior, +x patient's left) and its transform.
to_canonical, to_image
    Move any per-arch table into / out of that frame (exact inverses).
fit
    Catenary, Braun beta, even 4th/6th-order polynomials, parabola; batched.
curve
    Evaluate fitted models on a grid (model frame or image pixels).
measure
    Intercanine and intermolar width, arch depth, arch perimeter, upper/lower
    compatibility; px or mm.
problems
    The input rows behind ``status="bad_input"`` fits, in the one problems schema.
mean_form
    Mean arch form per group with a pointwise confidence band.
compare
    Group comparisons of fitted parameters or arch dimensions (via ``dentalkit.stats``).
MODELS, MEASURES
    The model and measure registries (formula/definition, parameters, reference).
"""

from __future__ import annotations

from dentalkit.arch._compare import compare
from dentalkit.arch._curve import curve
from dentalkit.arch._fit import fit, problems
from dentalkit.arch._frame import Alignment, align, to_canonical, to_image
from dentalkit.arch._mean_form import mean_form
from dentalkit.arch._measures import MEASURES, ArchMeasure, measure
from dentalkit.arch._models import MODELS, ArchModel

__all__ = [
    "MEASURES",
    "MODELS",
    "Alignment",
    "ArchMeasure",
    "ArchModel",
    "align",
    "compare",
    "curve",
    "fit",
    "mean_form",
    "measure",
    "problems",
    "to_canonical",
    "to_image",
]
