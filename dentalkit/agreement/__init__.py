"""Agreement and method error: the service against manual tracings, examiner against
examiner, session against session.

Public API
----------
landmarks(reference, test, mm_per_px=None, by="name", ...)
    Mean radial error ± SD, success detection rate at 2/2.5/3/4 mm (ISBI 2015) and
    x/y bias per landmark and overall → :class:`LandmarkAgreement`.
measure(reference, test, ...)
    Per measure: Bland–Altman bias and limits of agreement with CIs, ICC(2,1) with
    CI, Dahlberg's method error; per classification scheme: % agreement and Cohen's
    kappa → :class:`MeasureAgreement`.
simulate_examiner(landmarks, sd_mm, mm_per_px, seed)
    A landmarks table plus documented isotropic Gaussian noise (validation).
bland_altman(), bland_altman_moments(), bland_altman_repeated(), dahlberg(), icc(),
cohens_kappa()
    The statistics on plain arrays.

Reading manual tracings: :mod:`dentalkit.tracings`. Figures:
:mod:`dentalkit.plot.agreement`. Guide: ``docs/agreement.md``.

Examples
--------
>>> import pandas as pd
>>> from dentalkit import agreement
>>> ref = pd.DataFrame({"patient_id": ["a", "b", "c"], "measure": "ANB", "value": [1.0, 3.0, 5.0]})
>>> tst = ref.assign(value=[1.5, 3.0, 5.5])
>>> res = agreement.measure(ref, tst, errors="collect")
>>> float(res.summary["dahlberg"].iloc[0].round(4))
0.2887
"""

from dentalkit.agreement._examiner import simulate_examiner
from dentalkit.agreement._frame import procrustes
from dentalkit.agreement._landmarks import LandmarkAgreement, landmarks
from dentalkit.agreement._measures import MeasureAgreement, measure
from dentalkit.agreement._radial import OVERALL, SDR_RADII_MM
from dentalkit.agreement._reliability import ICC_FORMS, cohens_kappa, icc
from dentalkit.agreement._stats import (
    LOA_CI_METHODS,
    bland_altman,
    bland_altman_moments,
    bland_altman_repeated,
    dahlberg,
)

__all__ = [
    "ICC_FORMS",
    "LOA_CI_METHODS",
    "OVERALL",
    "SDR_RADII_MM",
    "LandmarkAgreement",
    "MeasureAgreement",
    "bland_altman",
    "bland_altman_moments",
    "bland_altman_repeated",
    "cohens_kappa",
    "dahlberg",
    "icc",
    "landmarks",
    "measure",
    "procrustes",
    "simulate_examiner",
]
