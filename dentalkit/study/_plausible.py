"""Is the scale plausible? Lengths measured in mm against human ranges.

A wrong ``mm_per_px`` (a factor 10 typed by mistake, a value meant for another device)
makes every length of its images wrong by the same factor, and nothing else notices: the
angles are unchanged. After the calibration is applied, the study takes the cephalometric
lengths of the images that share one scale — every image of an endpoint calibrated by its
endpoint fallback, or one image with its own value — and compares the median of each
length with the plausible human range in ``dentalkit/data/plausible_ranges.csv`` (the
rows whose ``unit`` is mm and ``view`` a cephalogram's). A median outside is a problem row
(``severity`` warning: the lengths are kept) and a :class:`~dentalkit.errors.DentalkitWarning`
naming the scale, where it came from, the endpoint and how to fix it.

**The rule.** The ranges are wide on purpose (the file states each one's population and
source): the angles there are a norm's mean ± 8 SD, and the lengths span children of 6
years to adults of both sexes. The lengths' bounds are recalled textbook spans, not
confirmed in a retrieved source (``verified`` is False), so they are never used as norms
(no z-score, no classification rests on them): they only catch a scale wrong by a factor
of about 2 or more — N–Me of 10,904 mm from 10 mm per pixel instead of about 0.1 — which
no patient can have. The file is shared with :mod:`dentalkit.qc`'s range checks.
"""

from __future__ import annotations

import warnings
from functools import cache
from importlib import resources
from typing import Any

import numpy as np
import pandas as pd

from dentalkit.errors import DentalkitWarning
from dentalkit.study.calibration import Calibration

#: ``producer`` of the rows in ``analysis_problems``.
PRODUCER = "study.implausible_lengths"
#: The views of ``ceph_measures`` whose lengths are checked.
_VIEWS = ("lateral", "frontal")
_KEY = ["patient_id", "timestamp", "view"]


@cache
def _ranges() -> pd.DataFrame:
    """The shipped ranges of lengths in mm of a cephalogram view (``measure``, ``view``,
    ``low``, ``high``, ``population``)."""
    path = resources.files("dentalkit.data").joinpath("plausible_ranges.csv")
    with path.open(encoding="utf-8") as fh:
        table = pd.read_csv(fh, dtype=str, keep_default_na=False)
    table = table[(table["unit"] == "mm") & table["view"].isin(_VIEWS)].copy()
    table["low"] = table["low"].astype(float)
    table["high"] = table["high"].astype(float)
    return table[["measure", "view", "low", "high", "population"]].reset_index(drop=True)


def _how_to_fix(endpoint: str, level: str, scale: float) -> str:
    if level == "endpoint":
        return (
            f"check the endpoint fallback {endpoint} = {scale:g} mm per pixel (--mm-per-px "
            f"{endpoint}=VALUE or the study file's [calibration]): give the scale of these "
            "images, from the device's pixel spacing or a ruler in the image"
        )
    return (
        "check this image's mm_per_px (the manifest's column, or its DICOM pixel spacing): "
        "give the scale of the image, from the device or a ruler in it"
    )


def implausible_lengths(
    measures: pd.DataFrame, landmarks: pd.DataFrame, calibration: Calibration
) -> pd.DataFrame:
    """Problem rows for lengths whose median over one scale is not a human length.

    Parameters
    ----------
    measures : DataFrame
        ``ceph_measures`` (``patient_id``, ``timestamp``, ``view``, ``measure``, ``value``,
        ``unit``); only the rows in mm are checked.
    landmarks : DataFrame
        The ``landmarks`` table the measures come from (it gives each view's endpoint).
    calibration : Calibration
        The study's calibration policy (the scale of each image and where it came from).

    Returns
    -------
    DataFrame
        One row per scale and length outside its range, in the problems schema: ``table``
        ``ceph_measures``, the ``endpoint`` (and the ``patient_id`` / ``timestamp`` of an
        image's own scale), ``field`` ``mm_per_px``, ``value`` the scale, ``path`` the
        measure, ``reason`` the median, the range with its population and the fix,
        ``severity`` warning. Empty when every median is inside.
    """
    cols = ["table", "endpoint", "patient_id", "timestamp", "field", "path", "value", "reason"]
    ranges = _ranges()
    mm = measures[(measures["unit"] == "mm") & measures["view"].isin(_VIEWS)]
    mm = mm[mm["measure"].astype(str).isin(set(ranges["measure"]))]
    if not len(mm) or not len(landmarks):
        return pd.DataFrame(columns=[*cols, "severity"])
    images = landmarks[[*_KEY, "endpoint"]].astype("object").drop_duplicates(_KEY)
    mm = mm.astype({"patient_id": "object", "timestamp": "object", "view": "object"})
    mm = mm.merge(images, on=_KEY, how="inner").assign(measure=lambda t: t["measure"].astype(str))
    mm = pd.concat(
        [mm.reset_index(drop=True), calibration.resolve(mm).reset_index(drop=True)], axis=1
    )
    mm = mm[mm["calibration"] != "none"]
    # the images that share one scale: an endpoint's fallback, or one image's own value
    own = (mm["calibration"] == "image").to_numpy()
    mm["_who"] = np.where(
        own, mm["patient_id"].astype(str) + "\t" + mm["timestamp"].astype(str), ""
    )
    rows = []
    groups = mm.groupby(["endpoint", "calibration", "_who", "mm_per_px", "view", "measure"],
                        observed=True, sort=True)  # fmt: skip
    medians = groups["value"].median()
    counts = groups.apply(lambda g: len(g[["patient_id", "timestamp"]].drop_duplicates()))
    bounds = ranges.set_index(["view", "measure"])
    for (endpoint, level, who, scale, view, measure), median in medians.items():
        low, high, population = bounds.loc[(view, measure), ["low", "high", "population"]]
        if not np.isfinite(median) or low <= median <= high:
            continue
        n = int(counts[(endpoint, level, who, scale, view, measure)])
        pid, ts = who.split("\t") if who else (None, None)
        source = (
            f"the endpoint fallback of {endpoint} ({n} image(s))"
            if level == "endpoint"
            else f"the image's own scale ({endpoint}, patient {pid}, session {ts})"
        )
        rows.append(
            {
                "table": "ceph_measures",
                "endpoint": str(endpoint),
                "patient_id": pid,
                "timestamp": ts,
                "field": "mm_per_px",
                "path": f"{view}/{measure}",
                "value": f"{scale:g}",
                "reason": (
                    f"implausible scale: median {measure} {median:,.1f} mm at mm_per_px "
                    f"{scale:g} from {source} is outside the plausible human range "
                    f"{low:g}–{high:g} mm ({population}; dentalkit/data/plausible_ranges.csv); "
                    f"every length of these images is probably wrong by the same factor; "
                    + _how_to_fix(str(endpoint), str(level), float(scale))
                ),
            }
        )
    return pd.DataFrame(rows, columns=cols).assign(severity="warning")


def warn_implausible(found: pd.DataFrame) -> None:
    """One :class:`DentalkitWarning` naming every implausible scale (none when empty)."""
    if not len(found):
        return
    parts = []
    keys = found[["endpoint", "patient_id", "timestamp", "value"]].astype("object")
    for (endpoint, pid, ts, value), group in found.groupby(
        [keys[c].fillna("") for c in keys.columns], sort=False
    ):
        where = f"image {pid} {ts}" if pid else "endpoint fallback"
        lengths = ", ".join(group["path"].astype(str))
        parts.append(f"{endpoint} mm_per_px {value} ({where}: {lengths})")
    named = "; ".join(parts)
    warnings.warn(
        f"implausible calibration: lengths outside the human range at {named}; the "
        "analysis_problems rows of study.implausible_lengths give the medians and ranges. "
        "Fix the scale (--mm-per-px ENDPOINT=VALUE, the study file's [calibration], or the "
        "manifest's mm_per_px) and run again",
        DentalkitWarning,
        stacklevel=3,
    )


def run_plausible(inputs: Any) -> dict[str, pd.DataFrame]:
    """The study's ``plausible_lengths`` analysis: the rows of :func:`implausible_lengths`
    into ``inputs.problems`` and one warning; the lengths are kept (no table is written)."""
    found = implausible_lengths(
        inputs.results["ceph_measures"], inputs.tables["landmarks"], inputs.calibration
    )
    inputs.problems.add(PRODUCER, found)
    warn_implausible(found)
    return {}
