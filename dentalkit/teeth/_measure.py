"""Per-tooth shape measures of the ``teeth`` table, vectorized with shapely 2."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property
from typing import Literal, overload

import numpy as np
import pandas as pd
import shapely

from dentalkit._calibration import MmPerPx, resolve_mm_per_px
from dentalkit.errors import InputError
from dentalkit.stats._tables import (
    check_errors_mode,
    combine_problems,
    duplicated_rows,
    problem_rows,
    raise_if_problems,
    require_columns,
)
from dentalkit.teeth._outline import _POLYGONAL, OutlineShape, outline_shape
from dentalkit.teeth._widths import (
    MD_AXIS_CATEGORIES,
    SOURCE_VIEW,
    md_directions,
    rectangle_sides,
    view,
)

__all__ = ["MEASURES", "ToothMeasure", "measure"]

_REQUIRED = (
    "patient_id",
    "timestamp",
    "source",
    "tooth_type",
    "side",
    "arch",
    "missing",
    "geometry",
)


@dataclass(frozen=True)
class ToothMeasure:
    """One declared tooth measure: a row of :data:`MEASURES`.

    Attributes
    ----------
    name : str
        Output column.
    dimension : int
        Power of length: 2 for areas, 1 for lengths and coordinates, 0 for
        dimensionless ratios. Calibration multiplies by ``mm_per_px ** dimension``.
    needs_valid : bool
        Whether the value is wrong for an invalid (self-intersecting)
        polygon; such rows are reported instead of measured.
    compute : callable
        ``compute(kernels) -> float64 array`` over the whole column.
    description : str
        Definition, method and reference.
    """

    name: str
    dimension: int
    needs_valid: bool
    compute: Callable[[_Kernels], np.ndarray]
    description: str


class _Kernels:
    """Lazily computed geometry kernels, shared by the measures that need them."""

    def __init__(
        self,
        table: pd.DataFrame,
        geoms: np.ndarray,
        usable: np.ndarray,
        shape: OutlineShape | None = None,
    ) -> None:
        self.table = table
        self.raw = geoms
        self.usable = usable
        if shape is not None:  # already computed for the validity check
            self.shape = shape

    @cached_property
    def geoms(self) -> np.ndarray:
        """The geometries of usable rows, None elsewhere."""
        return np.where(self.usable, self.raw, None)

    @cached_property
    def shape(self) -> OutlineShape:
        return outline_shape(self.geoms)

    @property
    def area(self) -> np.ndarray:
        return self.shape.area

    @property
    def perimeter(self) -> np.ndarray:
        return self.shape.perimeter

    @property
    def centroid(self) -> tuple[np.ndarray, np.ndarray]:
        return self.shape.centroid_x, self.shape.centroid_y

    @cached_property
    def widths(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(md, perpendicular extent, md_axis code)`` from the minimum rotated rectangle."""
        tx, ty, axis = md_directions(self.table, *self.centroid, self.usable)
        md, other = rectangle_sides(self.geoms, tx, ty)
        return md, other, axis

    @cached_property
    def occlusal(self) -> np.ndarray:
        return view(self.table) == "occlusal"


def _bl(k: _Kernels) -> np.ndarray:
    return np.where(k.occlusal, k.widths[1], np.nan)


def _height(k: _Kernels) -> np.ndarray:
    return np.where(k.occlusal, np.nan, k.widths[1])


#: The declared tooth measures, evaluated in this order by :func:`measure`.
MEASURES: tuple[ToothMeasure, ...] = (
    ToothMeasure(
        "area",
        2,
        True,
        lambda k: k.area,
        "Area enclosed by the tooth outline (shoelace formula; holes subtracted), px² or mm².",
    ),
    ToothMeasure(
        "perimeter",
        1,
        True,
        lambda k: k.perimeter,
        "Length of the tooth outline (sum of its edge lengths), px or mm.",
    ),
    ToothMeasure(
        "md_width",
        1,
        False,
        lambda k: k.widths[0],
        "Mesiodistal width: the side of the outline's minimum-area rotated rectangle "
        "(shapely.minimum_rotated_rectangle) that runs closer to parallel with the local arch "
        "tangent (Moorrees et al. 1957: greatest MD crown diameter). Arch tangent: the line "
        "through the centroids of the nearest present neighbours along the arch in the same "
        "image; px or mm.",
    ),
    ToothMeasure(
        "bl_width",
        1,
        False,
        _bl,
        "Buccolingual width: the other side of the same rectangle, perpendicular to MD. Only "
        "occlusal views (occlusogram_upper/lower) show it; NaN for frontal and pano.",
    ),
    ToothMeasure(
        "height",
        1,
        False,
        _height,
        "Vertical extent: the rectangle side perpendicular to MD on facial views — visible "
        "crown height on frontal photographs, length of the segmented tooth on panoramic "
        "radiographs; NaN for occlusal views.",
    ),
    ToothMeasure(
        "centroid_x",
        1,
        True,
        lambda k: k.centroid[0],
        "x of the area centroid (first moment of area / area), image coordinates; px or mm.",
    ),
    ToothMeasure(
        "centroid_y",
        1,
        True,
        lambda k: k.centroid[1],
        "y of the area centroid (image coordinates, y down); px or mm.",
    ),
    ToothMeasure(
        "compactness",
        0,
        True,
        lambda k: 4.0 * np.pi * k.area / k.perimeter**2,
        "Isoperimetric quotient 4πA/P² (Osserman 1978; Polsby & Popper 1991): 1 for a circle, "
        "π/4 ≈ 0.785 for a square; dimensionless, unaffected by calibration.",
    ),
)
_BY_NAME = {m.name: m for m in MEASURES}


@overload
def measure(
    teeth: pd.DataFrame,
    mm_per_px: MmPerPx = ...,
    *,
    measures: Sequence[str] | None = ...,
    errors: Literal["raise", "warn"] = ...,
) -> pd.DataFrame: ...
@overload
def measure(
    teeth: pd.DataFrame,
    mm_per_px: MmPerPx = ...,
    *,
    measures: Sequence[str] | None = ...,
    errors: Literal["collect"],
) -> tuple[pd.DataFrame, pd.DataFrame]: ...
def measure(
    teeth: pd.DataFrame,
    mm_per_px: MmPerPx = None,
    *,
    measures: Sequence[str] | None = None,
    errors: str = "raise",
) -> pd.DataFrame | tuple[pd.DataFrame, pd.DataFrame]:
    """Measure every tooth outline of a ``teeth`` table in one vectorized pass.

    Parameters
    ----------
    teeth : DataFrame
        The ``teeth`` table (docs/data-contract.md): session key, ``source``,
        ``tooth``, ``tooth_type``, ``side``, ``arch``, ``fdi``, ``missing``,
        ``geometry`` (shapely Polygon, None when missing), ``repaired``.
    mm_per_px : None, float, str, mapping, DataFrame or Series
        Calibration. ``None`` keeps pixels. A number applies to every row; a
        column name reads it per row; ``{source: scale}`` per source; a table
        with ``mm_per_px`` and key columns (e.g. ``patient_id``, ``timestamp``,
        ``source``) per key, or a Series indexed by such key columns. Every
        measured row must be covered.
    measures : sequence of str, optional
        Subset of :data:`MEASURES` names (default: all). Widths cost most
        (a minimum rotated rectangle per tooth).
    errors : {"raise", "collect", "warn"}
        dentalkit's one ``errors=`` rule (:func:`dentalkit.errors.check_errors`).
        ``"raise"`` (default): bad rows raise :class:`~dentalkit.errors.InputError`
        listing them. ``"collect"``: bad rows get NaN measures and the call
        returns ``(table, problems)``. ``"warn"``: bad rows get NaN measures, one
        :class:`~dentalkit.errors.DentalkitWarning` summarises them and the call
        returns the table.

    Returns
    -------
    DataFrame
        One row per input row, in input order: every input column except
        ``geometry``, then the requested measures (float64), ``unit``
        (``"px"`` or ``"mm"``; areas are in unit²), ``mm_per_px`` (NaN when
        uncalibrated) and, with widths, ``md_axis`` (``"arch"``: MD side chosen
        by the arch tangent; ``"image_x"``: no neighbour, image x axis used on
        a facial view; ``"none"``: undefined, widths NaN). Missing teeth keep
        their row with NaN measures, so they never enter sums or means.

    Notes
    -----
    Widths come from the minimum-area rotated rectangle of each outline, so
    they follow the tooth's own orientation (a rotated tooth keeps its true
    MD width, as a caliper measures it; Moorrees et al. 1957). The arch
    tangent only decides which rectangle side is mesiodistal — needed because
    premolars and molars are often wider buccolingually than mesiodistally,
    so "long side = MD" would be wrong. On facial views (frontal, pano) the
    side across the tangent is the tooth's vertical extent (``height``).
    Frontal photographs foreshorten canines and posterior teeth and panoramic
    radiographs magnify unevenly, so their millimetre values are image
    measures, not true tooth sizes.

    References
    ----------
    Moorrees CFA, Thomsen SO, Jensen E, Yen PK-J. Mesiodistal crown diameters
    of the deciduous and permanent teeth in individuals. J Dent Res
    1957;36:39–47. Osserman R. The isoperimetric inequality. Bull Amer Math
    Soc 1978;84:1182–1238. Polsby DD, Popper RD. The third criterion:
    compactness as a procedural safeguard against partisan gerrymandering.
    Yale Law Policy Rev 1991;9:301–353.

    Examples
    --------
    >>> import pandas as pd, shapely
    >>> t = pd.DataFrame(
    ...     {
    ...         "patient_id": ["p1"],
    ...         "timestamp": ["2024-01-01"],
    ...         "source": ["pano"],
    ...         "tooth": ["i1_rgt_up"],
    ...         "tooth_type": ["i1"],
    ...         "side": ["rgt"],
    ...         "arch": ["up"],
    ...         "fdi": [11],
    ...         "missing": [False],
    ...         "geometry": [shapely.box(0, 0, 80, 200)],
    ...     }
    ... )
    >>> m = measure(t, mm_per_px=0.1)
    >>> m[["area", "md_width", "height"]].round(9).to_dict("records")
    [{'area': 160.0, 'md_width': 8.0, 'height': 20.0}]
    >>> m["unit"].iloc[0], m["md_axis"].iloc[0]
    ('mm', 'image_x')
    """
    errors = check_errors_mode(errors, "dentalkit.teeth.measure")
    require_columns(teeth, _REQUIRED, "teeth")
    names = [m.name for m in MEASURES] if measures is None else list(measures)
    unknown = [n for n in names if n not in _BY_NAME]
    if unknown:
        raise InputError(f"unknown tooth measure(s) {unknown}; available: {list(_BY_NAME)}")
    chosen = [_BY_NAME[n] for n in names]

    geoms, usable, problems, shape = _usable_geometries(teeth, any(m.needs_valid for m in chosen))
    scale, cal_problems = resolve_mm_per_px(teeth, mm_per_px, usable, "teeth")
    problems = combine_problems([problems, cal_problems])
    raise_if_problems(problems, "teeth.measure", errors)
    calibrated = mm_per_px is not None
    if calibrated:
        usable = usable & np.isfinite(scale)

    kernels = _Kernels(teeth, geoms, usable, shape)
    out = teeth.drop(columns="geometry").reset_index(drop=True)
    for m in chosen:
        values = np.asarray(m.compute(kernels), dtype="float64")
        values = np.where(usable, values, np.nan)
        if calibrated and m.dimension:
            values = values * scale**m.dimension
        out[m.name] = values
    out["unit"] = pd.Categorical.from_codes(
        np.full(len(out), int(calibrated), dtype=np.int8), categories=["px", "mm"]
    )
    out["mm_per_px"] = np.where(usable, scale, np.nan) if calibrated else np.nan
    if any(m.name in ("md_width", "bl_width", "height") for m in chosen):
        code = kernels.widths[2]
        out["md_axis"] = pd.Categorical.from_codes(code, categories=list(MD_AXIS_CATEGORIES))
    if errors == "collect":
        return out, problems
    return out


def _usable_geometries(
    teeth: pd.DataFrame, check_valid: bool
) -> tuple[np.ndarray, np.ndarray, pd.DataFrame, OutlineShape | None]:
    """Which rows can be measured; every other non-missing row is a problem.

    With ``check_valid`` the outlines' shape kernels are computed here too: their fast
    star-shape test proves most outlines valid, and only the rest pay for
    ``shapely.is_valid`` (see ``_outline``).
    """
    raw = teeth["geometry"].to_numpy(dtype=object)
    try:  # the usual column: geometries and None (type id -1)
        type_id = shapely.get_type_id(raw)
        geoms = raw
        is_geom = type_id >= 0
        is_none = ~is_geom
        not_geom = np.zeros(len(raw), dtype=bool)
    except TypeError:  # something else in it: sort it out element by element
        is_geom = shapely.is_geometry(raw)
        is_none = shapely.is_missing(raw)
        other = ~is_geom & ~is_none  # NaN / pd.NA placeholders count as no geometry too
        if other.any():
            is_none[other] = pd.isna(raw[other])
        not_geom = ~is_none & ~is_geom
        geoms = np.where(is_geom, raw, None)
        type_id = shapely.get_type_id(geoms)

    missing_col = teeth["missing"]
    flag_na = missing_col.isna().to_numpy()
    missing = missing_col.fillna(False).astype(bool).to_numpy()
    polygonal = np.isin(type_id, [int(t) for t in _POLYGONAL])
    counts = shapely.get_num_coordinates(geoms)
    empty = is_geom & (counts == 0)  # cheaper than shapely.is_empty, same answer
    present = ~missing & ~flag_na
    bad_source = ~teeth["source"].isin(list(SOURCE_VIEW)).to_numpy()

    checks = [
        (flag_na, "missing", "missing flag is null; it must be True or False"),
        (not_geom, "geometry", "geometry is not a shapely geometry (convert WKB/WKT first)"),
        (missing & is_geom, "geometry", "tooth is flagged missing but has a geometry"),
        (present & is_none, "geometry", "tooth is not missing but has no geometry"),
        (present & is_geom & ~polygonal, "geometry", "geometry is not a Polygon or MultiPolygon"),
        (present & polygonal & empty, "geometry", "geometry is empty"),
        (present & bad_source, "source", f"source is not one of {sorted(SOURCE_VIEW)}"),
    ]
    usable = present & polygonal & ~empty & ~bad_source
    shape = None
    if check_valid:
        # unusable rows are hidden by their type id alone (no copy of the object array)
        shape = outline_shape(geoms, type_id=np.where(usable, type_id, -1), counts=counts)
        unproven = usable & ~shape.proven_valid
        invalid = np.zeros_like(usable)
        invalid[unproven] = ~shapely.is_valid(geoms[unproven])
        if invalid.any():
            reasons = [f"geometry is invalid: {r}" for r in shapely.is_valid_reason(geoms[invalid])]
            checks.append((invalid, "geometry", reasons))
            usable &= ~invalid
    key = ["patient_id", "timestamp", "source", "tooth"] if "tooth" in teeth else None
    if key is not None:
        dup = duplicated_rows(teeth, key) & present
        checks.append((dup, "tooth", "the same tooth appears twice for this session and source"))
        usable &= ~dup
    problems = combine_problems([problem_rows(teeth, m, "teeth", p, r) for m, p, r in checks])
    return geoms, usable, problems, shape
