"""Prevalence of findings classes, detections per image, box sizes and count checks (private)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np
import pandas as pd

from dentalkit._calibration import MmPerPx, resolve_mm_per_px
from dentalkit.errors import InputError
from dentalkit.findings._images import (
    COUNTED_SOURCES,
    infer_images,
    known_rows,
    unique_images,
    unknown_image_rows,
)
from dentalkit.stats import proportion_ci
from dentalkit.stats._proportions import CLUSTER_CI_METHOD, cluster_proportion_ci
from dentalkit.stats._tables import (
    as_list,
    attach_groups,
    check_errors_mode,
    combine_problems,
    duplicated_rows,
    problem_rows,
    raise_if_problems,
    require_columns,
)

__all__ = ["UNITS", "FindingsPrevalence", "prevalence"]

UNITS = ("patient", "session", "image")
_BOX = ("x0", "y0", "x1", "y1")


class FindingsPrevalence(NamedTuple):
    """Result of :func:`prevalence`.

    Attributes
    ----------
    prevalence : DataFrame
        One row per group, source and class: ``n_units`` (analysed units),
        ``n_units_with`` (units with ≥1 detection), ``prevalence``,
        ``ci_low``/``ci_high`` and ``ci_method`` (Wilson for patients; for
        sessions or images, which are not independent, Wilson on an effective
        sample size clustered on ``patient_id``, never zero-width), ``unit_of_analysis`` (the ``unit=`` argument), ``n_patients``, ``n_images``,
        ``n_detections`` and ``detections_per_image`` (mean over every
        analysed image, zeros included).
    box_sizes : DataFrame
        One row per source, class and ``measure`` (``width``, ``height``,
        ``area``): ``n``, ``mean``, ``sd``, ``median``, ``q1``, ``q3``, ``unit``.
    boxes : DataFrame
        The detections with ``box_width``, ``box_height``, ``box_area`` and
        ``unit``.
    consistency : DataFrame
        Every (image, class) of a counted source where the ``ImageContents``
        count differs from the number of detections: ``count_reported``,
        ``n_detections``, ``difference`` (reported − detected). Empty when all
        agree, or when no ``finding_counts`` were given (nothing to compare).
    images : DataFrame
        The analysed images used as denominators, with ``n_detections``.
    problems : DataFrame
        Rows that could not be used (``errors="collect"`` or ``"warn"``; columns
        :data:`dentalkit.errors.PROBLEM_COLUMNS`); empty otherwise.
    """

    prevalence: pd.DataFrame
    box_sizes: pd.DataFrame
    boxes: pd.DataFrame
    consistency: pd.DataFrame
    images: pd.DataFrame
    problems: pd.DataFrame


def prevalence(
    findings: pd.DataFrame,
    finding_counts: pd.DataFrame | None = None,
    *,
    images: pd.DataFrame | None = None,
    by: str | Sequence[str] | None = None,
    groups: pd.DataFrame | None = None,
    unit: str = "patient",
    classes: Sequence[str] | None = None,
    mm_per_px: MmPerPx = None,
    confidence: float = 0.95,
    errors: str = "raise",
) -> FindingsPrevalence:
    """Share of patients (sessions, images) with ≥1 detection of each class.

    Parameters
    ----------
    findings : DataFrame
        One row per detection: session key, ``source``, ``class_name``,
        ``x0``, ``y0``, ``x1``, ``y1`` (TopLeft, BottomRight; pixels).
    finding_counts : DataFrame, optional
        ``ImageContents`` counts: session key, ``source``, ``class_name``,
        ``count``.
    images : DataFrame, optional
        The analysed images (session key and ``source``; e.g.
        :func:`analysed_images` of the ``responses`` table). **Give it**:
        images without detections then count in every denominator. Without
        it the images are inferred from the rows of ``findings`` and
        ``finding_counts`` (with a warning), which misses them.
    by : str or list of str, optional
        Group columns, from ``images`` or ``groups``.
    groups : DataFrame, optional
        One row per ``patient_id`` with group columns.
    unit : {"patient", "session", "image"}
        What a prevalence counts: patients with ≥1 detection in any of
        their images, sessions, or single images.
    classes : sequence of str, optional
        Classes to report even if never detected (prevalence 0). The class
        set is open: by default every class seen in either table.
    mm_per_px : optional
        Calibration of box sizes, as in :func:`dentalkit.teeth.measure`
        (number, column, ``{source: scale}`` or keyed table).
    confidence : float
        Level of the Wilson intervals.
    errors : {"raise", "collect", "warn"}
        dentalkit's one ``errors=`` rule (:func:`dentalkit.errors.check_errors`).
        Bad rows (malformed boxes, detections of images not in ``images``,
        bad counts) raise :class:`~dentalkit.errors.InputError` (``"raise"``,
        default), or are listed in ``problems`` and left out (``"collect"``; with
        ``"warn"`` one :class:`~dentalkit.errors.DentalkitWarning` too).

    Returns
    -------
    FindingsPrevalence

    Notes
    -----
    An image is identified by ``patient_id``, ``timestamp`` and ``source``
    (plus ``image_name`` when ``findings`` has that column): several
    clinical photographs of one session are told apart only through
    ``image_name``. A patient counts as affected when any analysed image
    shows the class; the denominator of a (source, class) row is every unit
    with an analysed image of that source. Only ``clinical`` responses carry
    ``ImageContents``, so counts are compared with detections for that source
    only; every disagreement is listed in ``consistency``.

    Examples
    --------
    >>> import pandas as pd
    >>> f = pd.DataFrame(
    ...     {
    ...         "patient_id": ["a", "a"],
    ...         "timestamp": ["t0", "t0"],
    ...         "source": ["pano", "pano"],
    ...         "class_name": ["decay", "decay"],
    ...         "x0": [0, 10],
    ...         "y0": [0, 0],
    ...         "x1": [4, 14],
    ...         "y1": [5, 3],
    ...     }
    ... )
    >>> imgs = pd.DataFrame(
    ...     {"patient_id": ["a", "b"], "timestamp": ["t0", "t0"], "source": ["pano", "pano"]}
    ... )
    >>> res = prevalence(f, images=imgs)
    >>> res.prevalence[["class_name", "n_units", "n_units_with", "prevalence"]].to_dict("records")
    [{'class_name': 'decay', 'n_units': 2, 'n_units_with': 1, 'prevalence': 0.5}]
    >>> float(res.prevalence["detections_per_image"].iloc[0])
    1.0
    """
    errors = check_errors_mode(errors, "dentalkit.findings.prevalence")
    if unit not in UNITS:
        raise InputError(f"unit={unit!r} is not allowed; use one of {UNITS}")
    require_columns(
        findings, ["patient_id", "timestamp", "source", "class_name", *_BOX], "findings"
    )
    if finding_counts is not None:
        require_columns(
            finding_counts,
            ["patient_id", "timestamp", "source", "class_name", "count"],
            "finding_counts",
        )
    by = as_list(by)
    key = ["patient_id", "timestamp", "source"] + (
        ["image_name"] if "image_name" in findings else []
    )
    counts_given = finding_counts is not None
    if finding_counts is None:
        finding_counts = _empty_counts(key)
    require_columns(
        finding_counts, key, "finding_counts", f"finding_counts needs the image key {key}"
    )
    if images is None:
        images = infer_images(findings, finding_counts, key)
    else:
        require_columns(images, key, "images", f"images needs the image key columns {key}")
    images = unique_images(images, key)
    images = attach_groups(images, groups, by, "images")

    f_known = known_rows(findings, images, key)
    c_known = known_rows(finding_counts, images, key)
    f_class = findings["class_name"].notna().to_numpy()
    c_class = finding_counts["class_name"].notna().to_numpy()
    boxes, box_problems = _boxes(findings, f_known, mm_per_px)
    count_bad, count_problems = _bad_counts(finding_counts, c_known & c_class)
    problems = combine_problems(
        [
            unknown_image_rows(findings, ~f_known, "findings"),
            unknown_image_rows(finding_counts, ~c_known, "finding_counts"),
            problem_rows(
                findings, f_known & ~f_class, "findings", "class_name", "class_name is null"
            ),
            problem_rows(
                finding_counts,
                c_known & ~c_class,
                "finding_counts",
                "class_name",
                "class_name is null",
            ),
            box_problems,
            count_problems,
        ]
    )
    raise_if_problems(problems, "findings.prevalence", errors)
    findings = findings.loc[f_known & f_class]
    boxes = boxes.loc[f_known & f_class].reset_index(drop=True)
    counts = finding_counts.loc[c_known & c_class & ~count_bad]

    det = _detections_per_image(findings, key)
    table = _prevalence_table(images, det, key, by, unit, classes, confidence)
    consistency = _consistency(det if counts_given else det.iloc[:0], counts, key)
    per_image = det.groupby(key, observed=True, dropna=False)["n"].sum().rename("n_detections")
    images_out = images.merge(per_image.reset_index(), on=key, how="left")
    images_out["n_detections"] = images_out["n_detections"].fillna(0).astype("int64")
    return FindingsPrevalence(
        prevalence=table,
        box_sizes=_box_sizes(boxes),
        boxes=boxes,
        consistency=consistency,
        images=images_out,
        problems=problems,
    )


def _empty_counts(key: list[str]) -> pd.DataFrame:
    cols = {c: pd.Series(dtype="object") for c in (*key, "class_name")}
    return pd.DataFrame({**cols, "count": pd.Series(dtype="int64")})


def _boxes(
    findings: pd.DataFrame, known: np.ndarray, mm_per_px: MmPerPx
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Box width, height and area per detection (NaN for malformed boxes)."""
    xy = findings[list(_BOX)].apply(pd.to_numeric, errors="coerce").to_numpy(dtype=float)
    finite = np.isfinite(xy).all(axis=1)
    w = xy[:, 2] - xy[:, 0]
    h = xy[:, 3] - xy[:, 1]
    ordered = finite & (w >= 0) & (h >= 0)
    problems = [
        problem_rows(
            findings, known & ~finite, "findings", "x0", "box coordinate is missing or not a number"
        ),
        problem_rows(
            findings,
            known & finite & ~ordered,
            "findings",
            "x1",
            "BottomRight is left of or above TopLeft (x1 < x0 or y1 < y0)",
        ),
    ]
    scale, cal = resolve_mm_per_px(findings, mm_per_px, known & ordered, "findings")
    problems.append(cal)
    out = findings.reset_index(drop=True).copy()
    w = np.where(ordered, w, np.nan)
    h = np.where(ordered, h, np.nan)
    if mm_per_px is not None:
        w, h = w * scale, h * scale
    out["box_width"] = w
    out["box_height"] = h
    out["box_area"] = w * h
    out["unit"] = "mm" if mm_per_px is not None else "px"
    return out, combine_problems(problems)


def _bad_counts(counts: pd.DataFrame, usable: np.ndarray) -> tuple[np.ndarray, pd.DataFrame]:
    """Counts that are not non-negative integers, and repeated (image, class) rows."""
    if counts.empty:
        return np.zeros(0, dtype=bool), combine_problems([])
    c = pd.to_numeric(counts["count"], errors="coerce").to_numpy(dtype=float)
    bad = usable & (~np.isfinite(c) | (c < 0) | (c != np.round(c)))
    key = [
        k for k in ("patient_id", "timestamp", "source", "image_name", "class_name") if k in counts
    ]
    dup = usable & ~bad & duplicated_rows(counts, key)
    problems = combine_problems(
        [
            problem_rows(
                counts, bad, "finding_counts", "count", "count is not a non-negative integer"
            ),
            problem_rows(
                counts, dup, "finding_counts", "class_name", "class listed twice for one image"
            ),
        ]
    )
    return bad | dup, problems


def _detections_per_image(findings: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    work = findings[[*key, "class_name"]].astype("object")
    return work.groupby([*key, "class_name"], sort=True).size().rename("n").reset_index()


def _prevalence_table(
    images: pd.DataFrame,
    det: pd.DataFrame,
    key: list[str],
    by: list[str],
    unit: str,
    classes: Sequence[str] | None,
    confidence: float,
) -> pd.DataFrame:
    unit_key = {"patient": ["patient_id"], "session": ["patient_id", "timestamp"], "image": key}[
        unit
    ]
    # (source, class) pairs to report: every class seen for the source, plus requested classes
    seen = det[["source", "class_name"]].drop_duplicates()
    if classes is not None:
        extra = pd.MultiIndex.from_product(
            [images["source"].drop_duplicates(), list(classes)], names=["source", "class_name"]
        ).to_frame(index=False)
        seen = pd.concat([seen, extra], ignore_index=True).drop_duplicates()
    seen = seen.astype("object")
    img = images[[*key, *[b for b in by if b not in key]]]
    # every analysed image × every class reported for its source, with its detection count
    grid = img.merge(seen, on="source", how="inner")
    grid = grid.merge(det, on=[*key, "class_name"], how="left")
    grid["n"] = grid["n"].fillna(0).astype("int64")
    grid_keys = list(dict.fromkeys([*by, "source", "class_name"]))
    per_unit = (
        grid.groupby(list(dict.fromkeys([*grid_keys, *unit_key])), sort=True, dropna=False)["n"]
        .agg(n_detections="sum", n_images="size")
        .reset_index()
    )
    per_unit["with"] = per_unit["n_detections"] > 0
    out = (
        per_unit.groupby(grid_keys, sort=True, dropna=False)
        .agg(
            n_units=("with", "size"),
            n_units_with=("with", "sum"),
            n_images=("n_images", "sum"),
            n_detections=("n_detections", "sum"),
        )
        .reset_index()
    )
    n = out["n_units"].to_numpy(dtype=float)
    k = out["n_units_with"].to_numpy(dtype=float)
    out["prevalence"] = k / n
    if unit == "patient":
        out["ci_low"], out["ci_high"] = proportion_ci(k, n, confidence)
        out["n_patients"] = out["n_units"]
        out["ci_method"] = "Wilson score (Wilson 1927); patients independent"
    else:
        # sessions / images of one patient are not independent: cluster on the patient
        def labels(frame: pd.DataFrame) -> np.ndarray:
            parts = [frame[c].astype("object").astype(str).to_numpy() for c in grid_keys]
            return np.array(["\x1f".join(t) for t in zip(*parts, strict=True)], dtype=object)

        unit_labels = labels(per_unit)
        _, low, high, n_pat = cluster_proportion_ci(
            per_unit["with"].to_numpy(), per_unit["patient_id"].to_numpy(), unit_labels, confidence
        )
        idx = np.searchsorted(np.unique(unit_labels.astype(str)), labels(out).astype(str))
        out["ci_low"], out["ci_high"] = low[idx], high[idx]
        out["n_patients"] = n_pat[idx]
        out["ci_method"] = f"{CLUSTER_CI_METHOD}, {unit}s clustered on patient_id"
    out["unit_of_analysis"] = unit
    out["detections_per_image"] = out["n_detections"] / out["n_images"]
    cols = [
        *grid_keys,
        "n_units",
        "n_units_with",
        "prevalence",
        "ci_low",
        "ci_high",
        "ci_method",
        "unit_of_analysis",
        "n_patients",
        "n_images",
        "n_detections",
        "detections_per_image",
    ]
    return out[cols].astype({"n_units": "int64", "n_units_with": "int64", "n_patients": "int64"})


def _consistency(det: pd.DataFrame, counts: pd.DataFrame, key: list[str]) -> pd.DataFrame:
    cols = [*key, "class_name", "count_reported", "n_detections", "difference"]
    det = det[det["source"].isin(list(COUNTED_SOURCES))]
    ckey = [k for k in key if k in counts]
    if counts.empty and det.empty:
        return pd.DataFrame(columns=cols)
    reported = counts[[*ckey, "class_name", "count"]].astype({k: "object" for k in ckey})
    reported = reported[reported["source"].isin(list(COUNTED_SOURCES))]
    both = det.merge(reported, on=[*ckey, "class_name"], how="outer")
    both["count_reported"] = pd.to_numeric(both.pop("count")).fillna(0).astype("int64")
    both["n_detections"] = both.pop("n").fillna(0).astype("int64")
    both["difference"] = both["count_reported"] - both["n_detections"]
    bad = both[both["difference"] != 0]
    return bad.reindex(columns=cols).sort_values([*key, "class_name"], ignore_index=True)


def _box_sizes(boxes: pd.DataFrame) -> pd.DataFrame:
    long = boxes.melt(
        id_vars=["source", "class_name", "unit"],
        value_vars=["box_width", "box_height", "box_area"],
        var_name="measure",
    )
    long["measure"] = long["measure"].str.removeprefix("box_")
    long = long.astype({"source": "object", "class_name": "object"}).dropna(subset=["value"])
    g = long.groupby(["source", "class_name", "measure"], sort=True)["value"]
    out = g.agg(
        n="size",
        mean="mean",
        sd="std",
        median="median",
        q1=lambda v: v.quantile(0.25),
        q3=lambda v: v.quantile(0.75),
    ).reset_index()
    unit = boxes["unit"].iloc[0] if len(boxes) else "px"
    out["unit"] = np.where(out["measure"] == "area", unit + "²", unit)
    return out
