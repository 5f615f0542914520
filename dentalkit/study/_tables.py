"""The analysis tables on disk, and the model versions behind them."""

from __future__ import annotations

import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd

from dentalkit.errors import MixedVersionsWarning

__all__ = ["fill_endpoints", "model_versions", "read_analyses", "warn_pooled", "write_analyses"]


def model_versions(tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """The ``Version`` labels behind the tables, per endpoint: what the analyses pool.

    Parameters
    ----------
    tables : mapping of str to DataFrame
        Tables of :func:`dentalkit.convert.tables` (any with ``endpoint``,
        ``model_version``, ``patient_id`` and ``timestamp`` columns count).

    Returns
    -------
    pandas.DataFrame
        One row per endpoint and ``model_version`` (``"(none)"`` for endpoints whose
        responses carry no Version, such as the classifier): ``n_sessions`` and
        ``n_patients`` (distinct sessions and patients with that label; the patient is the
        unit) and ``pooled`` (True when the endpoint's rows carry more than one label, so
        its analyses mix model versions).
    """
    keys = []
    for table in tables.values():
        if table is None or not len(table):
            continue
        if not {"endpoint", "model_version", "patient_id", "timestamp"} <= set(table.columns):
            continue
        keys.append(
            pd.DataFrame(
                {
                    "endpoint": table["endpoint"].astype("object"),
                    "model_version": table["model_version"].astype("object"),
                    "patient_id": table["patient_id"].astype("object"),
                    "timestamp": table["timestamp"].astype("object"),
                }
            ).drop_duplicates()
        )
    cols = ["endpoint", "model_version", "n_sessions", "n_patients", "pooled"]
    if not keys:
        return pd.DataFrame({c: pd.Series(dtype="object") for c in cols})
    allk = pd.concat(keys, ignore_index=True).drop_duplicates()
    allk["model_version"] = allk["model_version"].where(allk["model_version"].notna(), "(none)")
    grouped = allk.groupby(["endpoint", "model_version"], sort=True)
    out = pd.DataFrame(
        {
            "n_sessions": grouped[["patient_id", "timestamp"]].apply(
                lambda g: len(g.drop_duplicates())
            ),
            "n_patients": grouped["patient_id"].nunique(),
        }
    ).reset_index()
    labels = out.groupby("endpoint")["model_version"].transform("size")
    out["pooled"] = (labels > 1).to_numpy()
    return out.astype(
        {"endpoint": "str", "model_version": "str", "n_sessions": "int64", "n_patients": "int64"}
    )[cols]


def warn_pooled(versions: pd.DataFrame) -> None:
    pooled = versions[versions["pooled"]]
    if not len(pooled):
        return
    parts = [
        f"{ep}: "
        + ", ".join(
            f"{v} ({n} patients)" for v, n in zip(g["model_version"], g["n_patients"], strict=True)
        )
        for ep, g in pooled.groupby("endpoint", sort=True)
    ]
    warnings.warn(
        "the analyses pool responses of different model versions — "
        + "; ".join(parts)
        + " (recorded in the model_versions table; analyse one Version at a time by "
        "filtering the tables on model_version to keep them apart)",
        MixedVersionsWarning,
        stacklevel=4,
    )


def write_analyses(analyses: Mapping[str, pd.DataFrame], out: str | Path) -> Path:
    """Write each analysis table as ``out/<name>.parquet`` (atomic); return the folder.

    Tables are written with their declared schemas (``docs/columns.md``): declared Arrow
    types and nullability, field metadata ``description``/``unit``/``values``.
    """
    from dentalkit.io import write_parquet

    out = Path(out)
    for name, table in analyses.items():
        write_parquet(table, out / f"{name}.parquet", name=name)
    return out


def read_analyses(folder: str | Path) -> dict[str, pd.DataFrame]:
    """Read the tables written by :func:`write_analyses`."""
    return {p.stem: pd.read_parquet(p) for p in sorted(Path(folder).glob("*.parquet"))}


def fill_endpoints(problems: pd.DataFrame, tables: Mapping[str, pd.DataFrame]) -> pd.DataFrame:
    """``endpoint`` of the problems that name a row of a given table but no endpoint."""
    need = problems["endpoint"].isna() & problems["row"].notna()
    for name in pd.unique(problems.loc[need, "table"].astype(object)):
        table = tables.get(str(name))
        if table is None or "endpoint" not in table.columns:
            continue
        sel = (need & (problems["table"] == name)).to_numpy(dtype=bool)
        rows = problems.loc[sel, "row"].to_numpy(dtype="int64")
        rows_ok = (rows >= 0) & (rows < len(table))
        idx = np.flatnonzero(sel)[rows_ok]
        values = table["endpoint"].astype(object).to_numpy()[rows[rows_ok]]
        problems.loc[idx, "endpoint"] = [None if pd.isna(v) else str(v) for v in values]
    return problems
