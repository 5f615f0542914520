"""``agreement.landmarks``: radial error, SDR and x/y bias of two landmark tables."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

import numpy as np
import pandas as pd

from dentalkit.agreement._common import (
    Errors,
    calibration,
    check_errors,
    check_session,
    finish,
    one_session_per_unit,
    problems_frame,
    session_columns,
    unit_column,
)
from dentalkit.agreement._frame import FRAMES, to_anatomical
from dentalkit.agreement._pairing import no_pairs_error, pair, prepare
from dentalkit.agreement._radial import OVERALL, SDR_RADII_MM, summaries
from dentalkit.errors import InputError
from dentalkit.landmark_map import key_to_name, load_landmark_map

__all__ = ["LandmarkAgreement", "landmarks"]


@dataclass(frozen=True)
class LandmarkAgreement:
    """Result of :func:`landmarks`.

    Attributes
    ----------
    summary : DataFrame
        One row per (view, landmark), in the landmark map's order, and one ``overall``
        row per view: ``n`` pairs, ``unit_of_analysis`` (the unit column, ``"session"``
        without one), ``n_units`` (units behind the pairs), ``session`` (the rule),
        ``mre`` (mean radial error), ``sd`` (its SD, ``ddof=1``), ``median``,
        ``max``, ``bias_x``/``bias_y`` (mean signed offset test − reference in the
        frame) with t intervals ``*_ci_low``/``*_ci_high``, ``sd_x``/``sd_y``,
        ``unit``. The overall rows have no bias CIs (landmarks of one image are not
        independent).
    sdr : DataFrame
        Long: view, landmark, ``radius_mm``, ``n``, ``n_within``, ``sdr_pct`` (percent
        of pairs with radial error ≤ radius) and its Wilson interval ``ci_low_pct``/
        ``ci_high_pct`` (NaN for the overall rows, and with ``session="all"`` where
        a unit repeats). Empty without calibration.
    pairs : DataFrame
        One row per paired landmark: session columns, view, landmark, the input
        image coordinates ``x_reference``, ``y_reference``, ``x_test``, ``y_test``
        (px), ``mm_per_px`` (when calibrated), offsets ``dx``, ``dy`` in the frame,
        radial ``error``, and the reference position in the frame
        ``frame_x``, ``frame_y`` (all in ``unit``).
    problems : DataFrame
        Everything not paired and why (data-contract ``problems`` columns plus
        ``side``, ``view`` and the landmark column).
    unit : {"mm", "px"}
    frame : {"anatomical", "image"}
    by : {"name", "landmark"}
        The landmark column the tables were paired on.
    session_cols : list of str
        The session key used.
    confidence : float
        Level of the intervals.
    session : {"first", "last", "all"}
        The ``session=`` rule used.
    unit_col : str or None
        The unit-of-analysis column (None: each paired session is a unit).
    """

    summary: pd.DataFrame
    sdr: pd.DataFrame
    pairs: pd.DataFrame
    problems: pd.DataFrame
    unit: str
    frame: str
    by: str
    session_cols: list[str] = field(default_factory=list)
    confidence: float = 0.95
    session: str = "first"
    unit_col: str | None = "patient_id"

    @property
    def overall(self) -> pd.DataFrame:
        """The ``overall`` rows of :attr:`summary` (one per view)."""
        return self.summary[self.summary[self.by].astype(object) == OVERALL].reset_index(drop=True)

    def __repr__(self) -> str:
        o = self.overall
        head = ", ".join(
            f"{r['view']}: MRE {r['mre']:.3g} ± {r['sd']:.3g} {self.unit} (n={r['n']})"
            for r in o.to_dict("records")
        )
        return (
            f"LandmarkAgreement({head}; {len(self.summary) - len(o)} landmark(s), "
            f"frame={self.frame!r}, {len(self.problems)} problem(s))"
        )


def _items(
    table: pd.DataFrame, by: str, landmark_map: str | Path | pd.DataFrame | None, side: str
) -> tuple[pd.Series, pd.Series]:
    """(pairing key, anatomical name used for the handedness) of every row."""
    for col in ("x", "y"):
        if col not in table.columns:
            raise InputError(f"the {side} landmarks table lacks column {col!r} (pixel coordinates)")
    views = table["view"] if "view" in table.columns else None
    if views is not None:
        bad = ~views.isin(["lateral", "frontal"]).to_numpy(dtype=bool)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise InputError(
                f"the {side} table has view {views.iloc[i]!r} at row {i}; views are "
                "'lateral' or 'frontal' (drop the column to take every row as lateral)"
            )

    def from_keys() -> pd.Series:
        keys = table["landmark"]
        out = pd.Series(None, index=table.index, dtype=object)
        for v in ("lateral", "frontal"):
            mask = (
                (views == v).to_numpy(dtype=bool)
                if views is not None
                else np.full(len(table), v == "lateral")
            )
            if mask.any():
                out[mask] = keys[mask].map(key_to_name(v, landmark_map)).astype(object)
        return out

    if by == "name":
        if "name" in table.columns:
            names = table["name"]
            if "landmark" in table.columns and names.isna().any():
                names = names.astype(object).where(names.notna(), from_keys())
        elif "landmark" in table.columns:
            names = from_keys()
        else:
            raise InputError(f"the {side} landmarks table needs a 'name' or a 'landmark' column")
        return names, names
    if "landmark" not in table.columns:
        raise InputError(f"by='landmark' needs a 'landmark' column in the {side} table")
    oname = table["name"] if "name" in table.columns else from_keys()
    return table["landmark"], oname


def landmarks(
    reference: pd.DataFrame,
    test: pd.DataFrame,
    mm_per_px: float | str | pd.Series | None = None,
    by: Literal["name", "landmark"] = "name",
    *,
    subset: Sequence[str] | None = None,
    session_cols: list[str] | None = None,
    frame: Literal["anatomical", "image"] = "anatomical",
    sdr_radii_mm: Sequence[float] | None = None,
    confidence: float = 0.95,
    landmark_map: str | Path | pd.DataFrame | None = None,
    errors: Errors = "raise",
    session: Literal["first", "last", "all"] = "first",
    unit: str | None = "patient_id",
) -> LandmarkAgreement:
    """Agreement of two landmark tables: MRE ± SD, SDR and x/y bias per landmark and overall.

    Pairs the tables on the session key, view and landmark (test − reference), e.g.
    the service against a manual tracing, two examiners, or two sessions of one image.

    Parameters
    ----------
    reference, test : DataFrame
        Long landmark tables (``docs/data-contract.md``: session key, ``view``,
        ``landmark``, ``name``, ``x``, ``y`` in px, image coordinates). Tables without a
        ``view`` column are taken as lateral. A manual tracing read with
        :func:`dentalkit.tracings.read_tracings` has this shape.
    mm_per_px : float, str or Series, optional
        Calibration: a number, the name of a column (reference first, then test;
        constant within a session) or a Series indexed by session columns. Without
        it, errors are in px and no SDR is computed.
    by : {"name", "landmark"}
        Pair on the anatomical ``name`` (default; rows without one are reported as
        unmapped — names are filled from ``landmark`` keys through the landmark map
        where null) or on the service key ``landmark`` (both tables from the service).
    subset : list of str, optional
        Compare only these landmarks (e.g. the 19 ISBI names when the service
        returns 169); others are left out on purpose, not reported.
    session_cols : list of str, optional
        Columns identifying one image in both tables; default those of
        ``patient_id``, ``timestamp`` present in both (use ``["patient_id"]`` when a
        tracing has no timestamp).
    frame : {"anatomical", "image"}
        Axes of ``bias_x``/``bias_y`` and of the figures; see
        :mod:`dentalkit.agreement._frame`. Radial errors do not depend on it.
    sdr_radii_mm : list of float, optional
        SDR radii in mm; default (2, 2.5, 3, 4) when calibrated, none otherwise.
        Asking for radii without ``mm_per_px`` is an error.
    confidence : float
        Level of the bias and SDR intervals (0.95).
    landmark_map : path-like or DataFrame, optional
        Key → name map used where ``name`` is null (default: the shipped map).
    errors : {"raise", "collect", "warn"}, default "raise"
        dentalkit's one ``errors=`` rule (:func:`dentalkit.errors.check_errors`).
        Unpaired, unmapped, repeated or non-finite landmarks and uncalibrated
        sessions are always listed in ``result.problems`` and left out of the
        statistics; ``"collect"`` says nothing more, ``"warn"`` also emits one
        :class:`~dentalkit.errors.DentalkitWarning`, ``"raise"`` (the default) raises
        :class:`~dentalkit.errors.InputError` instead, listing them (patient, session,
        side/item and reason; the whole table on its ``problems`` attribute).
    session : {"first", "last", "all"}
        Which paired sessions of each unit enter the statistics, so that every patient
        counts once in the per-landmark intervals. Default ``"first"``: per landmark
        (and view), each unit's earliest calibrated session traced by both (sessions
        ordered by ``timestamp``, read as a date when it is one); ``"last"`` its
        latest. ``"all"`` pools every paired session: MRE, SD, SDR and bias over all
        pairs, but the bias and SDR intervals are NaN where a unit has more than one
        session (they would count one patient's images as different patients).
    unit : str or None
        Column naming the unit of analysis, default ``"patient_id"``; it must be a
        session column. Without it (``None`` or no such column) each paired session
        is a unit and ``session`` has no effect.

    Returns
    -------
    LandmarkAgreement
        ``summary``, ``sdr``, ``pairs``, ``problems`` (see the class).

    Notes
    -----
    Radial error of landmark *i* in image *j*: R = ‖p_test − p_ref‖ (Euclidean). MRE
    = mean of R, SD = sqrt(Σ(R − MRE)² / (N − 1)); SDR(z) = #{R ≤ z} / N × 100 %,
    for z = 2, 2.5, 3, 4 mm — the definitions of the ISBI 2015 challenge (Wang CW
    et al. A benchmark for comparison of dental radiography analysis algorithms.
    *Med Image Anal* 2016;31:63–76). Bias: mean of the signed offsets per axis with
    a Student t interval.

    Examples
    --------
    >>> import pandas as pd
    >>> ref = pd.DataFrame(
    ...     {
    ...         "patient_id": "p",
    ...         "timestamp": "t",
    ...         "name": ["S", "N"],
    ...         "x": [0.0, 700.0],
    ...         "y": [0.0, 0.0],
    ...     }
    ... )
    >>> tst = ref.assign(x=[30.0, 700.0], y=[40.0, 0.0])  # S off by 50 px = 5 mm
    >>> res = landmarks(ref, tst, mm_per_px=0.1, frame="image")
    >>> res.summary[["name", "n", "mre"]].to_dict("list")
    {'name': ['S', 'N', 'overall'], 'n': [1, 1, 2], 'mre': [5.0, 0.0, 2.5]}
    """
    errors = check_errors(errors, "dentalkit.agreement.landmarks")
    if by not in ("name", "landmark"):
        raise InputError(f"by must be 'name' or 'landmark', got {by!r}")
    if frame not in FRAMES:
        raise InputError(f"frame must be one of {FRAMES}, got {frame!r}")
    check_session(session)
    cols = session_columns(reference, test, session_cols)
    unit_col = unit_column(unit, cols, reference, test)
    if sdr_radii_mm is not None and len(sdr_radii_mm) and mm_per_px is None:
        raise InputError(
            "SDR radii are in mm, but the landmarks are in px: pass mm_per_px (a number, "
            "e.g. 0.1 for ISBI 2015 films, a column name or a Series per session), or "
            "sdr_radii_mm=() for px errors only"
        )
    radii = np.asarray(
        SDR_RADII_MM if sdr_radii_mm is None and mm_per_px is not None else (sdr_radii_mm or ()),
        dtype=float,
    )
    if radii.size and (~np.isfinite(radii) | (radii <= 0)).any():
        raise InputError(f"sdr_radii_mm must be positive numbers, got {list(sdr_radii_mm or ())}")
    if subset is not None and OVERALL in subset:
        raise InputError(f"{OVERALL!r} is reserved for the all-landmarks row")

    sides = []
    for side, table in (("reference", reference), ("test", test)):
        items, onames = _items(table, by, landmark_map, side)
        if (items == OVERALL).to_numpy(dtype=bool, na_value=False).any():
            raise InputError(
                f"a landmark in the {side} table is called {OVERALL!r}; that label is reserved"
            )
        prep = prepare(
            table.assign(_oname=onames),
            side,
            item=by,
            item_values=items,
            values=("x", "y"),
            session_cols=cols,
            subset=subset,
            keep=("_oname",),
        )
        sides.append(prep)
    paired = pair(
        *sides, item=by, values=("x", "y"), session_cols=cols, subset=subset, carry=("_oname",)
    )
    pairs = paired.pairs
    problems = list(paired.problems)
    if not len(pairs):
        raise no_pairs_error("landmark", cols, problems)

    scale = calibration(mm_per_px, reference, test, pairs, cols)
    if scale is not None:
        nocal = ~np.isfinite(scale)
        if nocal.any():
            lost = pairs.loc[nocal, [*cols, "view"]].drop_duplicates()
            problems.append(
                lost.assign(
                    side="both",
                    reason="no valid mm_per_px for this session: its landmarks are left out",
                    path="mm_per_px",
                )
            )
            pairs = pairs.loc[~nocal].reset_index(drop=True)
            scale = scale[~nocal]
            if not len(pairs):
                raise InputError("no calibrated session: every session lacks a valid mm_per_px")
    if unit_col is not None and session != "all":  # one session per patient and landmark
        keep = one_session_per_unit(pairs, unit_col, cols, session, by)
        pairs = pairs.loc[keep].reset_index(drop=True)
        scale = scale[keep] if scale is not None else None
    unit = "mm" if scale is not None else "px"
    factor = scale if scale is not None else np.ones(len(pairs))

    ref_xy = pairs[["x_reference", "y_reference"]].to_numpy(dtype=float)
    tst_xy = pairs[["x_test", "y_test"]].to_numpy(dtype=float)
    offsets = (tst_xy - ref_xy) * factor[:, None]
    positions = ref_xy * factor[:, None]
    if frame == "anatomical":
        positions, offsets, undetermined = to_anatomical(pairs, ref_xy, offsets, scale, cols, by)
        if len(undetermined):
            problems.append(undetermined)
    error = np.hypot(offsets[:, 0], offsets[:, 1])

    out_pairs = pairs[[*cols, "view", by]].copy()
    out_pairs["x_reference"], out_pairs["y_reference"] = ref_xy[:, 0], ref_xy[:, 1]
    out_pairs["x_test"], out_pairs["y_test"] = tst_xy[:, 0], tst_xy[:, 1]
    if scale is not None:
        out_pairs["mm_per_px"] = scale
    out_pairs["dx"], out_pairs["dy"] = offsets[:, 0], offsets[:, 1]
    out_pairs["error"] = error
    out_pairs["frame_x"], out_pairs["frame_y"] = positions[:, 0], positions[:, 1]
    order = _item_order(out_pairs[by], by, landmark_map)
    out_pairs[by] = out_pairs[by].cat.set_categories(order)
    out_pairs["view"] = out_pairs["view"].cat.set_categories(["lateral", "frontal"])
    out_pairs = out_pairs.sort_values(["view", by], kind="stable").reset_index(drop=True)

    summary, sdr = summaries(out_pairs, by, radii, unit, confidence, order)
    summary, sdr = _units(summary, sdr, out_pairs, by, unit_col, session)
    prob = problems_frame(problems, "agreement_landmarks", by, cols)
    finish(prob, errors, "landmarks", where="dentalkit.agreement.landmarks")
    return LandmarkAgreement(
        summary, sdr, out_pairs, prob, unit, frame, by, cols, confidence, session, unit_col
    )


def _units(
    summary: pd.DataFrame,
    sdr: pd.DataFrame,
    pairs: pd.DataFrame,
    by: str,
    unit_col: str | None,
    session: str,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Add ``unit_of_analysis``, ``n_units``, ``session``; drop intervals where a unit repeats."""
    keys = [summary["view"].astype(object), summary[by].astype(object)]
    if unit_col is None:
        n_units = summary["n"].to_numpy(np.int64)
    else:
        per_item = pairs.groupby(["view", by], observed=True)[unit_col].nunique()
        per_view = pairs.groupby("view", observed=True)[unit_col].nunique()
        n_units = np.array(
            [
                per_view[v] if item == OVERALL else per_item[(v, item)]
                for v, item in zip(*keys, strict=True)
            ],
            dtype=np.int64,
        )
    at = summary.columns.get_loc("n") + 1
    summary.insert(at, "unit_of_analysis", unit_col if unit_col is not None else "session")
    summary.insert(at + 1, "n_units", n_units)
    summary.insert(at + 2, "session", session if unit_col is not None else "all")
    repeated = n_units < summary["n"].to_numpy()
    if repeated.any():  # session="all": one patient's images are not independent patients
        for col in ("bias_x_ci_low", "bias_x_ci_high", "bias_y_ci_low", "bias_y_ci_high"):
            summary.loc[repeated, col] = np.nan
        if len(sdr):
            rep = pd.MultiIndex.from_arrays(
                [k[repeated].to_numpy() for k in keys], names=["view", by]
            )
            hit = pd.MultiIndex.from_arrays(
                [sdr["view"].astype(object), sdr[by].astype(object)]
            ).isin(rep)
            sdr.loc[hit, ["ci_low_pct", "ci_high_pct"]] = np.nan
    return summary, sdr


def _item_order(items: pd.Series, by: str, landmark_map) -> list[str]:
    """Landmarks in the landmark map's (anatomical) order, others after them as met."""
    present = list(dict.fromkeys(items.tolist()))
    known = set(present)
    col = "name" if by == "name" else "key"
    mapped = load_landmark_map(None, landmark_map)[col].tolist()
    ordered = [x for x in dict.fromkeys(mapped) if x in known]
    rest = [x for x in present if x not in set(ordered)]
    return [*ordered, *rest, OVERALL]
