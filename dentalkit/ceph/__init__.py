"""Cephalometric analysis: the landmarks table → measures, norms, z-scores, classes, change.

Public API
----------
measure(landmarks, measures=None, mm_per_px=None, landmark_map=None, ...)
    Long table of measures for every session (vectorized over the cohort).
zscores(measures, norms=None, by=None, ...)
    Attach norm mean/SD and z-scores (shipped or user norm tables, by age/sex/group).
classify(measures, thresholds=None)
    Skeletal class (ANB, Wits) and vertical pattern (SN_GoGn, FMA) per session.
class_changes(classes)
    Each patient's class at the first and last session, and whether it changed.
change(measures)
    Per-patient differences between consecutive sessions and annualised rates.
summarize(measures, session="first")
    Cohort summary per measure over one session per patient (n, mean, SD, range; mean z).
load_measures(), load_norms(), load_thresholds()
    The shipped catalogues (CSV in ``dentalkit/data``), validated.
reference_table()
    The measurement reference (definition, landmarks, unit, norm, source) that
    ``docs/measures.md`` is generated from.
read_isbi(path)
    ISBI 2015 challenge annotation files → our long landmarks table.
landmark_names(), required_landmarks(), load_name_map(), rename_landmarks()
    Landmark-name helpers.
"""

from dentalkit.ceph._catalog import load_measures, load_points
from dentalkit.ceph.baseline import regression_to_the_mean
from dentalkit.ceph.change import change
from dentalkit.ceph.classify import class_changes, class_order, classify, load_thresholds
from dentalkit.ceph.isbi import read_isbi
from dentalkit.ceph.measure import measure
from dentalkit.ceph.names import (
    landmark_names,
    load_name_map,
    rename_landmarks,
    required_landmarks,
)
from dentalkit.ceph.norms import load_norms, zscores
from dentalkit.ceph.reference import reference_table
from dentalkit.ceph.summary import summarize

__all__ = [
    "change",
    "class_changes",
    "class_order",
    "classify",
    "landmark_names",
    "load_measures",
    "load_name_map",
    "load_norms",
    "load_points",
    "load_thresholds",
    "measure",
    "read_isbi",
    "reference_table",
    "regression_to_the_mean",
    "rename_landmarks",
    "required_landmarks",
    "summarize",
    "zscores",
]
