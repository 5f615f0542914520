"""The study's one calibration policy: the millimetres per pixel of each image.

Millimetres appear only after an explicit calibration, never guessed (DESIGN.md). A study
resolves one scale per image, that is per (``patient_id``, ``timestamp``, ``endpoint``):

1. **image** — the image's own value, from the ``calibration`` table (one row per manifest
   row that has ``mm_per_px``: given in the manifest or read from its DICOM file);
2. **endpoint** — else the endpoint's fallback value (``--mm-per-px ENDPOINT=VALUE``, the
   study file's ``[calibration]`` table, or a mapping in Python);
3. **none** — else pixels.

:class:`Calibration` holds the policy and records which of the three each image got
(:meth:`Calibration.applied`). The analysis functions below the study (``ceph.measure``,
``teeth.measure``, ``arch.fit`` …) take the resolved scale as a column or a table; they
parse their ``mm_per_px=`` argument with :func:`dentalkit._calibration.resolve_mm_per_px`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from dentalkit.endpoints import ENDPOINTS
from dentalkit.errors import InputError

__all__ = ["CALIBRATION_LEVELS", "Calibration", "calibration_policy"]

#: Where an image's scale came from, in the order the policy tries them.
CALIBRATION_LEVELS = ("image", "endpoint", "none")
#: ``calibration_source`` of a scale taken from the endpoint fallback.
ENDPOINT_SOURCE = "endpoint fallback"

_KEY = ["patient_id", "timestamp", "endpoint"]
_IMAGE_COLUMNS = (*_KEY, "mm_per_px")


def _positive(value: Any) -> float | None:
    """``value`` as a float when it is a finite number > 0, else None."""
    if isinstance(value, bool):
        return None
    try:
        number = float(value)
    except (TypeError, ValueError):
        return None
    return number if math.isfinite(number) and number > 0 else None


def _check_endpoints(endpoints: Mapping[str, Any]) -> dict[str, float]:
    """The endpoint fallback as ``{registry name: mm per px}``, or an InputError."""
    out = {}
    for name, value in dict(endpoints).items():
        if str(name) not in ENDPOINTS:
            raise InputError(
                f"calibration: {name!r} is not an endpoint name; the endpoints are "
                f"{', '.join(ENDPOINTS)}"
            )
        number = _positive(value)
        if number is None:
            raise InputError(
                f"calibration: {value!r} for endpoint {name} is not a positive number of "
                "millimetres per pixel (for example 0.1)"
            )
        out[str(name)] = number
    return out


def _check_images(images: pd.DataFrame) -> pd.DataFrame:
    """The ``calibration`` table keyed by text (patient_id, timestamp, endpoint), one row
    per image key; a missing column, a bad value or two values for one key is an
    InputError naming the row, patient and endpoint."""
    absent = [c for c in _IMAGE_COLUMNS if c not in images.columns]
    if absent:
        raise InputError(
            f"the calibration table has no column {', '.join(absent)}; it needs "
            f"{', '.join(_IMAGE_COLUMNS)} (and optionally calibration_source); columns found: "
            f"{', '.join(map(str, images.columns))}"
        )
    keys = images[_KEY].astype("object").astype(str).reset_index(drop=True)
    scale = pd.to_numeric(images["mm_per_px"], errors="coerce").to_numpy(dtype=float)
    bad = ~(np.isfinite(scale) & (scale > 0))
    if bad.any():
        row = int(np.flatnonzero(bad)[0])
        k, value = keys.iloc[row], images["mm_per_px"].iloc[row]
        shown = repr(value) if isinstance(value, str) else str(value)
        raise InputError(
            f"calibration table row {row} (0-based; patient {k['patient_id']}, session "
            f"{k['timestamp']}, endpoint {k['endpoint']}): mm_per_px={shown} is not a positive "
            f"number of millimetres per pixel ({int(bad.sum())} such row(s))"
        )
    source = (
        images["calibration_source"].astype("object").reset_index(drop=True)
        if "calibration_source" in images.columns
        else pd.Series([None] * len(images), dtype="object")
    )
    source = source.where(source.notna(), "manifest")
    out = keys.assign(mm_per_px=scale, calibration_source=source.astype(str).to_numpy())
    both = out.drop_duplicates([*_KEY, "mm_per_px"])
    clash = both.duplicated(_KEY, keep=False)
    if clash.any():
        k = both[clash].iloc[0]
        values = both.loc[(both[_KEY] == k[_KEY]).all(axis=1), "mm_per_px"].tolist()
        raise InputError(
            f"the calibration table gives patient {k['patient_id']}, session {k['timestamp']}, "
            f"endpoint {k['endpoint']} {len(values)} different scales "
            f"({', '.join(f'{v:g}' for v in values)} mm per pixel); give each image one value"
        )
    return both.drop_duplicates(_KEY).set_index(_KEY)


@dataclass(frozen=True, eq=False)
class Calibration:
    """Millimetres per pixel of every image: its own value, else its endpoint's, else none.

    Parameters
    ----------
    endpoints : mapping of str to float
        Fallback scale by endpoint registry name (``{"ceph_lateral_points": 0.1}``),
        used for the images without a value of their own.
    images : DataFrame, optional
        The ``calibration`` table: ``patient_id``, ``timestamp``, ``endpoint``,
        ``mm_per_px`` and optionally ``calibration_source`` (``manifest`` when absent).

    Raises
    ------
    InputError
        An unknown endpoint name, a scale that is not a finite number > 0, a calibration
        table without its columns, or two different scales for one image.

    Examples
    --------
    >>> images = pd.DataFrame(
    ...     {
    ...         "patient_id": ["P1"],
    ...         "timestamp": ["2024-03-05"],
    ...         "endpoint": ["ceph_lateral_points"],
    ...         "mm_per_px": [0.12],
    ...     }
    ... )
    >>> cal = Calibration({"ceph_lateral_points": 0.1}, images)
    >>> cal.of_session("ceph_lateral_points", "P1", "2024-03-05")
    0.12
    >>> cal.of_session("ceph_lateral_points", "P2", "2024-03-05")
    0.1
    >>> cal.of_session("pano_teeth", "P1", "2024-03-05") is None
    True
    """

    endpoints: Mapping[str, float] = field(default_factory=dict)
    images: pd.DataFrame | None = field(default=None, repr=False)
    _by_image: pd.DataFrame | None = field(init=False, default=None, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "endpoints", _check_endpoints(self.endpoints))
        object.__setattr__(
            self, "_by_image", None if self.images is None else _check_images(self.images)
        )

    @property
    def by_image(self) -> pd.DataFrame | None:
        """The image values keyed by (patient_id, timestamp, endpoint) as text."""
        return self._by_image

    def resolve(self, table: pd.DataFrame) -> pd.DataFrame:
        """The scale of every row of ``table`` (its ``patient_id``, ``timestamp``, ``endpoint``).

        Returns
        -------
        DataFrame
            Indexed as ``table``: ``mm_per_px`` (float64, NaN where the row stays in
            pixels), ``calibration`` (one of :data:`CALIBRATION_LEVELS`) and
            ``calibration_source`` (the image's source, ``endpoint fallback``, or null).
        """
        n = len(table)
        scale = np.full(n, np.nan)
        level = np.full(n, "none", dtype=object)
        source = np.full(n, None, dtype=object)
        if n and "endpoint" in table.columns:
            endpoint = table["endpoint"].astype("object").to_numpy()
            fallback = pd.Series(endpoint).map(self.endpoints).to_numpy(dtype=float)
            has = np.isfinite(fallback)
            scale[has], level[has], source[has] = fallback[has], "endpoint", ENDPOINT_SOURCE
            images = self.by_image
            if images is not None and len(images) and {"patient_id", "timestamp"} <= set(table):
                codes, keys = pd.MultiIndex.from_frame(table[_KEY].astype("object")).factorize()
                keys = pd.MultiIndex.from_arrays(
                    [keys.get_level_values(i).astype(str) for i in range(3)], names=_KEY
                )
                at = images.index.get_indexer(keys)[codes]
                own = at >= 0
                scale[own] = images["mm_per_px"].to_numpy()[at[own]]
                source[own] = images["calibration_source"].to_numpy()[at[own]]
                level[own] = "image"
        return pd.DataFrame(
            {
                "mm_per_px": scale,
                "calibration": pd.Categorical(level, categories=list(CALIBRATION_LEVELS)),
                "calibration_source": source,
            },
            index=table.index,
        )

    def with_scale(self, table: pd.DataFrame) -> pd.DataFrame:
        """``table`` plus its ``mm_per_px`` column (NaN: pixels), as the analyses take it."""
        out = table.copy()
        out["mm_per_px"] = self.resolve(table)["mm_per_px"].to_numpy()
        return out

    def of_session(self, endpoint: str, patient_id: str, timestamp: str) -> float | None:
        """The scale of one image, or None when it stays in pixels."""
        row = pd.DataFrame({"patient_id": [patient_id], "timestamp": [timestamp]})
        value = self.resolve(row.assign(endpoint=[endpoint]))["mm_per_px"].iloc[0]
        return None if np.isnan(value) else float(value)

    def applied(self, tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
        """Which scale each image of ``tables`` got: the record the study writes.

        Returns
        -------
        DataFrame
            One row per image (``patient_id``, ``timestamp``, image ``endpoint``) found in
            a table with those columns (not the ``problems`` or ``calibration`` tables),
            sorted: ``mm_per_px`` (NaN: pixels), ``calibration`` (``image``, ``endpoint`` or
            ``none``) and ``calibration_source``.
        """
        keys = [
            t[_KEY].astype("object").drop_duplicates()
            for name, t in tables.items()
            if name not in ("calibration", "problems")
            and t is not None
            and len(t)
            and set(_KEY) <= set(t)
        ]
        images = {name for name, ep in ENDPOINTS.items() if ep.is_image}
        cols = [*_KEY, "mm_per_px", "calibration", "calibration_source"]
        if not keys:
            empty = pd.DataFrame({c: pd.Series(dtype="object") for c in cols})
            empty["mm_per_px"] = empty["mm_per_px"].astype("float64")
            empty["calibration"] = pd.Categorical([], categories=list(CALIBRATION_LEVELS))
            return empty
        found = pd.concat(keys, ignore_index=True).astype(str).drop_duplicates()
        found = found[found["endpoint"].isin(images)].sort_values(_KEY, ignore_index=True)
        return pd.concat([found, self.resolve(found)], axis=1)[cols]

    def describe(self) -> str:
        """The policy in words (for the report's design section and ``--help`` echoes)."""
        parts = []
        n = 0 if self.by_image is None else len(self.by_image)
        if n:
            parts.append(f"{n} image(s) with their own mm per pixel (the calibration table)")
        if self.endpoints:
            parts.append(
                "endpoint fallback "
                + ", ".join(f"{e} = {v:g} mm/px" for e, v in sorted(self.endpoints.items()))
            )
        return "; ".join(parts) + "; others in pixels" if parts else "none: every image in pixels"


def calibration_policy(
    mm_per_px: Calibration | Mapping[str, float] | None,
    tables: Mapping[str, pd.DataFrame] | None = None,
) -> Calibration:
    """The study's :class:`Calibration` from what a caller gives.

    Parameters
    ----------
    mm_per_px : Calibration, mapping or None
        A policy (kept as given), or the endpoint fallback (``{endpoint: mm per px}``;
        None: no fallback).
    tables : mapping, optional
        The study's tables: their ``calibration`` table (per image), when present, goes
        before the endpoint fallback.
    """
    if isinstance(mm_per_px, Calibration):
        return mm_per_px
    images = (tables or {}).get("calibration")
    return Calibration(dict(mm_per_px or {}), images)
