"""Landmark maps: which service key (``Later_12``, ``Front_3``) is which anatomical point.

The service does not publish its numbering (spec: "Complete list of landmark keys:
not shown"). dentalkit ships a default map per view in ``dentalkit/data/`` (see
``docs/conventions.md``); the sandbox answers with it and the analyses read names
through it. Replace it with your own CSV (columns ``key``, ``name``; optional
``view``, ``group``, ``description``) when the provider publishes the real one.

Examples
--------
>>> m = load_landmark_map("lateral")
>>> m.loc[m["key"] == "Later_1", "name"].item()
'S'
>>> len(load_landmark_map())
287
"""

from __future__ import annotations

from functools import lru_cache
from importlib import resources
from pathlib import Path

import pandas as pd

from dentalkit.errors import InputError

__all__ = ["VIEWS", "key_to_name", "load_landmark_map"]

#: Views with a default map and their key prefixes (spec, "Landmark response").
VIEWS: dict[str, tuple[str, ...]] = {
    "lateral": ("Later_",),
    "frontal": ("Front_", "SasFront_"),
}


@lru_cache(maxsize=4)
def _default(view: str) -> pd.DataFrame:
    with (
        resources.files("dentalkit.data")
        .joinpath(f"landmark_map_{view}.csv")
        .open(encoding="utf-8") as fh
    ):
        return pd.read_csv(fh, dtype=str, keep_default_na=False)


def load_landmark_map(
    view: str | None = None, path: str | Path | pd.DataFrame | None = None
) -> pd.DataFrame:
    """Return a landmark map as a DataFrame with columns ``key``, ``view``, ``name``, ….

    Parameters
    ----------
    view : {"lateral", "frontal"}, optional
        Only this view; both when omitted.
    path : path-like or DataFrame, optional
        A user map (CSV path or DataFrame) with at least ``key`` and ``name`` columns;
        ``view`` is inferred from the key prefix when absent. Default: the shipped map.

    Returns
    -------
    pandas.DataFrame
        One row per key; keys and names unique within a view.

    Raises
    ------
    InputError
        When the map lacks columns, repeats a key or a name within a view, or has keys
        that match no known prefix.
    """
    if view is not None and view not in VIEWS:
        raise InputError(f"unknown view {view!r}; expected one of {sorted(VIEWS)}")
    if path is None:
        views = [view] if view else list(VIEWS)
        return pd.concat([_default(v) for v in views], ignore_index=True)
    table = path.copy() if isinstance(path, pd.DataFrame) else pd.read_csv(path, dtype=str)
    missing = {"key", "name"} - set(table.columns)
    if missing:
        raise InputError(f"landmark map lacks column(s) {sorted(missing)}; needs 'key' and 'name'")
    table["key"] = table["key"].astype(str).str.strip()
    if "view" not in table.columns:
        table["view"] = table["key"].map(_view_of_key)
    unknown = table.loc[table["view"].isna(), "key"]
    if len(unknown):
        raise InputError(
            f"landmark map keys {unknown.head(5).tolist()} match no known prefix "
            f"({', '.join(p for ps in VIEWS.values() for p in ps)})"
        )
    for col in ("key", "name"):
        dup = table.dropna(subset=[col]).duplicated(["view", col], keep=False)
        if dup.any():
            raise InputError(
                f"landmark map repeats {col} values {table.loc[dup, col].unique()[:5].tolist()} "
                "within a view; each key and each name must appear once per view"
            )
    if view is not None:
        table = table[table["view"] == view]
    return table.reset_index(drop=True)


def _view_of_key(key: str) -> str | None:
    for v, prefixes in VIEWS.items():
        if key.startswith(prefixes):
            return v
    return None


def key_to_name(view: str | None = None, path: str | Path | pd.DataFrame | None = None) -> dict:
    """Mapping ``key → name`` of a landmark map (see :func:`load_landmark_map`)."""
    m = load_landmark_map(view, path)
    return dict(zip(m["key"], m["name"], strict=True))
