"""Plausible human ranges of measures (``dentalkit/data/plausible_ranges.csv``).

One row per measure: ``measure`` (an id of ``ceph_measures.csv``, or a tooth / arch measure),
``view`` (``lateral``, ``frontal``, ``teeth``, ``arch``), ``unit``, ``low``, ``high``,
``population``, ``source``, ``checked_in`` (where the numbers were read), ``verified`` and
``note``. A row is ``verified`` only when the numbers it rests on were read in a retrievable
source; the others are kept for reference and are **not used unless**
``include_unverified=True`` — as the cephalometric norms (:mod:`dentalkit.ceph.norms`). The
angles are a norm's mean ± 8 SD: a cohort of all skeletal classes spreads about twice as wide as
the normal-occlusion samples the norms come from, and a value beyond that is a landmark on the
wrong structure or a wrong calibration, not a patient. The lengths (children to adults) are
kept unverified. The file is shared with the study's calibration check (a wrong ``mm_per_px`` puts
lengths such as S–N or N–Me outside).
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np
import pandas as pd

from dentalkit.errors import InputError

__all__ = ["RANGE_COLUMNS", "load_plausible_ranges"]

RANGE_COLUMNS = (
    "measure",
    "view",
    "unit",
    "low",
    "high",
    "population",
    "source",
    "checked_in",
    "verified",
    "note",
)


@lru_cache(maxsize=1)
def _shipped() -> pd.DataFrame:
    path = resources.files("dentalkit.data").joinpath("plausible_ranges.csv")
    with path.open(encoding="utf-8") as fh:
        return pd.read_csv(fh, dtype=str, keep_default_na=False)


def load_plausible_ranges(
    path: str | Path | pd.DataFrame | None = None, *, include_unverified: bool = False
) -> pd.DataFrame:
    """The plausible ranges (shipped by default), validated, verified rows only by default.

    Parameters
    ----------
    path : path-like or DataFrame, optional
        A user table with at least ``measure``, ``low``, ``high`` (and ``view``, ``unit``
        where the measure needs them); missing optional columns are added (``verified``
        True: a table you supply is yours to vouch for).
    include_unverified : bool, default False
        Keep the rows whose numbers were not confirmed in a retrievable source.

    Returns
    -------
    DataFrame
        The columns of :data:`RANGE_COLUMNS`; ``low`` and ``high`` float64 (in ``unit``),
        ``verified`` bool.

    Raises
    ------
    InputError
        A missing column, a bound that is not a number or ``low`` ≥ ``high`` (naming the
        row and measure).

    Examples
    --------
    >>> r = load_plausible_ranges()
    >>> anb = r.set_index("measure").loc["ANB"]
    >>> float(anb["low"]), float(anb["high"]), anb["unit"]
    (-14.0, 18.0, 'deg')
    """
    user = path is not None
    if path is None:
        table = _shipped().copy()
    elif isinstance(path, pd.DataFrame):
        table = path.copy()
    else:
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = {"measure", "low", "high"} - set(table.columns)
    if missing:
        raise InputError(
            f"plausible-range table lacks column(s) {sorted(missing)}; needs measure, low, high"
        )
    for col in RANGE_COLUMNS:
        if col not in table.columns:
            table[col] = True if (col == "verified" and user) else ""
    for col in ("low", "high"):
        values = pd.to_numeric(table[col].replace("", np.nan), errors="coerce")
        bad = values.isna()
        if bad.any():
            i = int(np.flatnonzero(bad.to_numpy())[0])
            raise InputError(
                f"plausible-range table row {i} (0-based position), measure "
                f"{table['measure'].iloc[i]!r}: {col} {table[col].iloc[i]!r} is not a number"
            )
        table[col] = values.astype(float)
    inverted = table["low"] >= table["high"]
    if inverted.any():
        i = int(np.flatnonzero(inverted.to_numpy())[0])
        raise InputError(
            f"plausible-range table row {i} (0-based position), measure "
            f"{table['measure'].iloc[i]!r}: low {table['low'].iloc[i]:g} is not below high "
            f"{table['high'].iloc[i]:g}"
        )
    v = table["verified"]
    table["verified"] = (
        v if v.dtype == bool else v.astype(str).str.strip().str.lower().isin(["true", "1", "yes"])
    )
    for col in ("measure", "view", "unit", "population", "source", "checked_in", "note"):
        table[col] = table[col].fillna("").astype(str)
    if not include_unverified:
        table = table[table["verified"]]
    return table[list(RANGE_COLUMNS)].reset_index(drop=True)
