"""Findings: prevalence of detected classes, detections per image and box sizes.

Pure functions over the ``findings`` (one row per detection) and
``finding_counts`` (one row per class of ``ImageContents``) tables of
docs/data-contract.md. See docs/teeth-and-findings.md.

Denominators are the crux: an image in which nothing was detected has
``Results == {}`` and leaves **no row** in ``findings`` (and, for the
panoramic endpoint, which has no ``ImageContents``, none in
``finding_counts`` either). Prevalences are therefore computed over an
explicit table of analysed images (``images=``), which
:func:`analysed_images` builds from the ``responses`` table. Without it the
images are inferred from the rows present, which leaves out every image
without detections, and a warning says so.
"""

from __future__ import annotations

from dentalkit.findings._images import COUNTED_SOURCES, analysed_images
from dentalkit.findings._prevalence import UNITS, FindingsPrevalence, prevalence
from dentalkit.findings._tmj import tmj_prevalence

__all__ = [
    "COUNTED_SOURCES",
    "UNITS",
    "FindingsPrevalence",
    "analysed_images",
    "prevalence",
    "tmj_prevalence",
]
