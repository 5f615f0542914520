"""Publication figures (matplotlib) from dentalkit's tables and analyses.

Every figure function takes ``ax=None`` (a new figure is made when omitted) and
returns the Axes it drew on (multi-panel figures return the Figure). Nothing here
calls ``plt.show()`` or changes matplotlib's global rcParams: the house style is
applied only inside ``with plot.style():``. Pixel data are drawn the right way up
(image coordinates, y axis inverted). Gallery and calls: ``docs/figures.md``.

House style and output
    :mod:`dentalkit.plot.house` (the house style as data: text sizes, widths, maximum
    height, line weights, units, intervals, group order and colours), :func:`style`,
    :func:`figure`, :func:`savefig`, :func:`render` (draw, save and close one figure at a
    declared width), :func:`caption` (the figure's caption: what, n, units, method),
    :func:`pseudonyms` (one "patient k" per patient for ``identity=`` across a study),
    :data:`OKABE_ITO`, :data:`CATEGORICAL`, :data:`JOURNAL_WIDTHS_MM`.
Cephalometrics (:mod:`dentalkit.plot.ceph`)
    :func:`ceph_tracing`, :func:`ceph_wiggle`, :func:`ceph_superimposition`,
    :func:`sn_register`.
Arch forms (:mod:`dentalkit.plot.arch`)
    :func:`arch_forms`, :func:`mean_arch_forms`.
Teeth (:mod:`dentalkit.plot.teeth`)
    :func:`tooth_map`, :func:`odontogram`.
Findings (:mod:`dentalkit.plot.findings`)
    :func:`finding_boxes`, :func:`prevalence_bars`.
Treatment length (:mod:`dentalkit.plot.tle`)
    :func:`tle_distribution`, :func:`tle_sensitivity`, :func:`tle_bland_altman`,
    :func:`tle_calibration`.
Growth (:mod:`dentalkit.plot.growth`)
    :func:`growth_lines`.
Agreement (:mod:`dentalkit.plot.agreement`)
    :func:`landmark_errors`, :func:`agreement_bland_altman`, :func:`bland_altman_grid`,
    :func:`sdr_bars`.
Quality control (:mod:`dentalkit.plot.qc`)
    :func:`qc_outliers`.

Examples
--------
>>> import matplotlib
>>> matplotlib.use("Agg")
>>> import pandas as pd
>>> from dentalkit import plot
>>> by_fdi = pd.DataFrame({"fdi": [12, 22, 35, 45], "prevalence": [0.05, 0.04, 0.03, 0.03]})
>>> with plot.style():
...     ax = plot.odontogram(by_fdi)
...     files = plot.savefig(ax, "odontogram", width="single", formats=("pdf",))  # doctest: +SKIP
"""

from __future__ import annotations

# The submodules are imported first; ``style`` then names the context manager (the
# module stays importable as ``dentalkit.plot.style`` through sys.modules).
from dentalkit.plot import agreement, arch, ceph, findings, growth, house, qc, teeth, tle
from dentalkit.plot._identity import pseudonyms
from dentalkit.plot._layout import JOURNAL_WIDTHS_MM, figure, savefig
from dentalkit.plot._render import render
from dentalkit.plot.agreement import bland_altman as agreement_bland_altman
from dentalkit.plot.agreement import bland_altman_grid, landmark_errors, sdr_bars
from dentalkit.plot.arch import forms as arch_forms
from dentalkit.plot.arch import mean_forms as mean_arch_forms
from dentalkit.plot.captions import caption
from dentalkit.plot.ceph import sn_register
from dentalkit.plot.ceph import superimposition as ceph_superimposition
from dentalkit.plot.ceph import tracing as ceph_tracing
from dentalkit.plot.ceph import wiggle as ceph_wiggle
from dentalkit.plot.findings import boxes as finding_boxes
from dentalkit.plot.findings import prevalence_bars
from dentalkit.plot.growth import growth_lines
from dentalkit.plot.qc import qc_outliers
from dentalkit.plot.style import CATEGORICAL, OKABE_ITO, style
from dentalkit.plot.teeth import odontogram, tooth_map
from dentalkit.plot.tle import bland_altman as tle_bland_altman
from dentalkit.plot.tle import calibration_plot as tle_calibration
from dentalkit.plot.tle import distribution as tle_distribution
from dentalkit.plot.tle import sensitivity as tle_sensitivity

__all__ = [
    "CATEGORICAL",
    "JOURNAL_WIDTHS_MM",
    "OKABE_ITO",
    "agreement",
    "agreement_bland_altman",
    "arch",
    "arch_forms",
    "bland_altman_grid",
    "caption",
    "ceph",
    "ceph_superimposition",
    "ceph_tracing",
    "ceph_wiggle",
    "figure",
    "finding_boxes",
    "findings",
    "growth",
    "growth_lines",
    "house",
    "landmark_errors",
    "mean_arch_forms",
    "odontogram",
    "prevalence_bars",
    "pseudonyms",
    "qc",
    "qc_outliers",
    "render",
    "savefig",
    "sdr_bars",
    "sn_register",
    "style",
    "teeth",
    "tle",
    "tle_bland_altman",
    "tle_calibration",
    "tle_distribution",
    "tle_sensitivity",
    "tooth_map",
]
