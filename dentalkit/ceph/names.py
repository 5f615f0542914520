"""Landmark names: which names the measures need, and mapping other naming schemes to ours.

dentalkit's landmark names are those of the default landmark maps
(``dentalkit/data/landmark_map_lateral.csv`` / ``_frontal.csv``: ``S``, ``N``, ``A``,
``U1_tip``, ``Pog'``, ``J_R`` …). Tables from elsewhere — manual tracings, other
software's exports, the ISBI 2015 challenge — are brought to these names with a
*name map*: a CSV with columns ``source_name`` and ``name`` (optional ``view``,
``description``). Shipped maps live in ``dentalkit/data/name_maps/``
(``isbi2015.csv``); pass your own as a path or DataFrame.

Examples
--------
>>> import pandas as pd
>>> t = pd.DataFrame({"name": ["Sella", "Nasion"], "x": [0.0, 70.0], "y": [0.0, 0.0]})
>>> m = pd.DataFrame({"source_name": ["Sella", "Nasion"], "name": ["S", "N"]})
>>> rename_landmarks(t, m)["name"].tolist()
['S', 'N']
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import pandas as pd

from dentalkit.ceph._catalog import GEOMETRIC_KINDS, compile_view, load_measures, load_points
from dentalkit.errors import InputError

__all__ = [
    "NAME_MAPS",
    "landmark_names",
    "load_name_map",
    "rename_landmarks",
    "required_landmarks",
]

#: Shipped name maps (``dentalkit/data/name_maps/<name>.csv``).
NAME_MAPS = ("isbi2015", "anatomical_en")


def load_name_map(source: str | Path | pd.DataFrame) -> pd.DataFrame:
    """Return a name map (``source_name`` → ``name``) as a validated DataFrame.

    Parameters
    ----------
    source : str, path-like or DataFrame
        A shipped map's name (``"isbi2015"``), a CSV path, or a DataFrame with the
        columns ``source_name`` and ``name``.

    Raises
    ------
    InputError
        Missing columns, or a ``source_name`` mapped to two different names.
    """
    if isinstance(source, pd.DataFrame):
        table = source.copy()
    elif isinstance(source, str) and source in NAME_MAPS:
        ref = resources.files("dentalkit.data").joinpath("name_maps", f"{source}.csv")
        with ref.open(encoding="utf-8") as fh:
            table = pd.read_csv(fh, dtype=str, keep_default_na=False)
    else:
        path = Path(source)
        if not path.exists():
            raise InputError(
                f"name map {source!r} is neither a shipped map {NAME_MAPS} nor an existing file"
            )
        table = pd.read_csv(path, dtype=str, keep_default_na=False)
    missing = {"source_name", "name"} - set(table.columns)
    if missing:
        raise InputError(f"name map lacks column(s) {sorted(missing)}; needs source_name, name")
    table["source_name"] = table["source_name"].astype(str).str.strip()
    table["name"] = table["name"].astype(str).str.strip()
    clash = table.drop_duplicates(["source_name", "name"]).duplicated("source_name", keep=False)
    if clash.any():
        raise InputError(
            f"name map sends {sorted(set(table.loc[clash, 'source_name']))} to more than one name"
        )
    return table.drop_duplicates(["source_name", "name"]).reset_index(drop=True)


def name_translation(name_map: str | Path | pd.DataFrame | None) -> dict[str, str]:
    """``source_name → name`` dict of a name map (empty for ``None``)."""
    if name_map is None:
        return {}
    m = load_name_map(name_map)
    return dict(zip(m["source_name"], m["name"], strict=True))


def rename_landmarks(table: pd.DataFrame, name_map: str | Path | pd.DataFrame) -> pd.DataFrame:
    """Return a copy of a long landmarks table with its ``name`` column in our names.

    Names found in the map's ``source_name`` are replaced by its ``name``; other names
    are kept as they are (so a table that already uses some of our names works).

    Parameters
    ----------
    table : DataFrame
        Needs a ``name`` column.
    name_map : str, path-like or DataFrame
        See :func:`load_name_map`.
    """
    if "name" not in table.columns:
        raise InputError("rename_landmarks needs a 'name' column in the landmarks table")
    mapping = name_translation(name_map)
    out = table.copy()
    col = out["name"]
    if isinstance(col.dtype, pd.CategoricalDtype):
        new = [mapping.get(c, c) for c in col.cat.categories]
        if len(set(new)) == len(new):
            out["name"] = col.cat.rename_categories(new)
        else:  # two source names map to one of ours: rebuild the categories
            out["name"] = col.astype(object).map(lambda v: mapping.get(v, v)).astype("category")
    else:
        out["name"] = col.map(lambda v: mapping.get(v, v) if isinstance(v, str) else v)
    return out


def required_landmarks(
    measures: list[str] | None = None, catalog: pd.DataFrame | None = None
) -> dict[str, list[str]]:
    """Landmark names each measure needs (construction points and operands expanded).

    Examples
    --------
    >>> required_landmarks(["ANB"])["ANB"]
    ['A', 'B', 'N', 'S']
    """
    cat = load_measures(catalog)
    pts = load_points()
    ids = list(cat["id"]) if measures is None else list(measures)
    unknown = sorted(set(ids) - set(cat["id"]))
    if unknown:
        raise InputError(f"unknown measure ids {unknown}")
    out: dict[str, list[str]] = {}
    for mid in ids:
        compiled = compile_view(cat, pts, [mid])
        out[mid] = sorted(compiled.needs[mid])
    return out


def landmark_names(view: str | None = None, catalog: pd.DataFrame | None = None) -> list[str]:
    """All landmark names the catalogue's measures use (of one view, or both).

    Examples
    --------
    >>> "S" in landmark_names("lateral") and "J_R" in landmark_names("frontal")
    True
    """
    cat = load_measures(catalog)
    if view is not None:
        cat = cat[cat["view"] == view]
    pts = load_points()
    members = {r["id"]: r["points"].split() for r in pts.to_dict("records")}
    names: list[str] = []
    for rec in cat.to_dict("records"):
        if rec["kind"] in GEOMETRIC_KINDS:
            for p in rec["points"].split():
                for n in members.get(p, [p]):
                    if n not in names:
                        names.append(n)
    return names
