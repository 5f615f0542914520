"""Pair two long tables on (session key, view, item) and report everything left unpaired.

Used by :func:`dentalkit.agreement.landmarks` (items = landmark names or service keys)
and :func:`dentalkit.agreement.measure` (items = measure ids). Nothing is dropped
silently: every row that cannot be paired becomes a problem row saying why.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dentalkit.errors import InputError

__all__ = ["Paired", "Prepared", "no_pairs_error", "pair", "prepare"]

SIDES = ("reference", "test")


@dataclass
class Prepared:
    """One side's rows ready for pairing (clean) and what was set aside (problems)."""

    rows: pd.DataFrame  # session cols, view, item, row, endpoint, value columns, extras
    problems: list[pd.DataFrame]


@dataclass
class Paired:
    pairs: pd.DataFrame  # session cols, view, item, <value>_reference, <value>_test, ...
    problems: list[pd.DataFrame]


def _problem(
    frame: pd.DataFrame, side: str, item: str, reason: pd.Series | str, path: pd.Series | str
) -> pd.DataFrame:
    out = frame.copy()
    out["side"] = side
    out["reason"] = reason
    out["path"] = path
    if item not in out.columns:
        out[item] = None
    return out


def _categorical(col: pd.Series) -> pd.Categorical:
    """Repeated strings as a categorical (no per-row Python objects; merges use codes)."""
    if isinstance(col.dtype, pd.CategoricalDtype):
        return col.array
    codes, uniques = pd.factorize(col, use_na_sentinel=True)  # arrow strings: no Python loop
    return pd.Categorical.from_codes(codes, categories=pd.Index(uniques))


def _shared(left: pd.DataFrame, right: pd.DataFrame, cols: Sequence[str]) -> None:
    """Give both sides' categorical key columns the same categories (in place)."""
    for c in cols:
        cats = left[c].cat.categories.append(right[c].cat.categories).unique()
        left[c] = left[c].cat.set_categories(cats)
        right[c] = right[c].cat.set_categories(cats)


def _text(series: pd.Series) -> pd.Series:
    return series.astype(object).map(str)


def prepare(
    table: pd.DataFrame,
    side: str,
    *,
    item: str,
    item_values: pd.Series,
    values: Sequence[str],
    session_cols: list[str],
    subset: Sequence[str] | None,
    keep: Sequence[str] = (),
    finite: Callable[[pd.DataFrame], np.ndarray] | None = None,
    bad_value_reason: str = "",
    default_view: str = "lateral",
) -> Prepared:
    """Normalise one side: keys as categoricals; set aside unnamed, non-finite, repeated rows.

    Parameters
    ----------
    table : DataFrame
        The caller's table (never modified).
    item : str
        Name of the item column in the output (``name``, ``landmark``, ``measure``).
    item_values : Series
        The item of every row (aligned with ``table``; null = unmapped).
    values : list of str
        Value columns to carry (``x``, ``y`` or ``value``).
    keep : list of str
        Extra columns carried when present (e.g. ``unit``, ``name``).
    finite : callable, optional
        Row mask of usable values (default: every value column finite).
    default_view : str
        View of every row when the table has no ``view`` column.
    """
    n = len(table)
    rows = pd.DataFrame({c: _categorical(table[c]) for c in session_cols})
    rows["view"] = (
        _categorical(table["view"])
        if "view" in table.columns
        else pd.Categorical.from_codes(np.zeros(n, dtype=np.int8), [default_view])
    )
    rows[item] = _categorical(item_values)
    rows["row"] = np.arange(n)
    rows["endpoint"] = _categorical(table["endpoint"]) if "endpoint" in table.columns else None
    for c in values:
        rows[c] = pd.to_numeric(table[c], errors="coerce").to_numpy(dtype=float)
    for c in keep:
        if c in table.columns:
            rows[c] = _categorical(table[c])
    problems: list[pd.DataFrame] = []
    base_cols = [*session_cols, "view", item, "row", "endpoint"]

    unnamed = rows[item].isna().to_numpy()
    if unnamed.any():
        bad = rows.loc[unnamed, base_cols]
        what = (
            _text(table["landmark"].iloc[np.flatnonzero(unnamed)]).to_numpy()
            if "landmark" in table.columns and item != "landmark"
            else np.full(int(unnamed.sum()), "?", dtype=object)
        )
        problems.append(
            _problem(
                bad,
                side,
                item,
                "unmapped: no "
                + item
                + " for key "
                + pd.Series(what, index=bad.index)
                + "; add it to the landmark/name map or drop the row",
                side + "/" + pd.Series(what, index=bad.index),
            )
        )
    missing_key = rows[session_cols].isna().any(axis=1).to_numpy()
    if missing_key.any():
        bad = rows.loc[missing_key & ~unnamed, base_cols]
        if len(bad):
            problems.append(
                _problem(bad, side, item, f"missing session key ({', '.join(session_cols)})", side)
            )
    ok = ~unnamed & ~missing_key
    if subset is not None:
        ok &= rows[item].isin(list(subset)).to_numpy()
    good = finite(rows) if finite is not None else np.isfinite(rows[list(values)]).all(axis=1)
    good = np.asarray(good, dtype=bool)
    nonfinite = ok & ~good
    if nonfinite.any():
        bad = rows.loc[nonfinite, base_cols]
        problems.append(
            _problem(
                bad,
                side,
                item,
                bad_value_reason or f"{'/'.join(values)} missing or non-finite",
                side + "/" + _text(bad[item]),
            )
        )
    ok &= good
    rows = rows.loc[ok]
    dup = rows.duplicated([*session_cols, "view", item], keep=False).to_numpy()
    if dup.any():
        bad = rows.loc[dup, base_cols]
        problems.append(
            _problem(
                bad,
                side,
                item,
                item + " " + _text(bad[item]) + " given more than once in this session; "
                "all copies left out",
                side + "/" + _text(bad[item]),
            )
        )
        rows = rows.loc[~dup]
    return Prepared(rows.reset_index(drop=True), problems)


def pair(
    ref: Prepared,
    tst: Prepared,
    *,
    item: str,
    values: Sequence[str],
    session_cols: list[str],
    subset: Sequence[str] | None,
    carry: Sequence[str] = (),
) -> Paired:
    """Outer-join both sides; unpaired rows become problems (aggregated where whole
    sessions or whole items are missing from one side)."""
    on = [*session_cols, "view", item]
    left = ref.rows[[*on, "row", "endpoint", *values, *[c for c in carry if c in ref.rows]]].copy()
    right = tst.rows[[*on, "row", "endpoint", *values, *[c for c in carry if c in tst.rows]]].copy()
    _shared(left, right, on)
    merged = left.merge(
        right, on=on, how="outer", suffixes=("_reference", "_test"), indicator=True, sort=False
    )
    problems = [*ref.problems, *tst.problems]
    both = merged["_merge"].to_numpy() == "both"
    for side, other, flag, other_rows in (
        ("reference", "test", "left_only", tst.rows),
        ("test", "reference", "right_only", ref.rows),
    ):
        lone = merged.loc[merged["_merge"].to_numpy() == flag]
        if not len(lone):
            continue
        lone = lone.rename(columns={f"row_{side}": "row", f"endpoint_{side}": "endpoint"})
        # whole sessions missing from the other side: one row per session
        other_sessions = other_rows[[*session_cols, "view"]].drop_duplicates()
        mark = lone[[*session_cols, "view"]].merge(
            other_sessions.assign(_present=True), on=[*session_cols, "view"], how="left"
        )["_present"]
        no_session = mark.isna().to_numpy()
        if no_session.any():
            ses = lone.loc[no_session]
            counts = ses.groupby([*session_cols, "view"], sort=False, dropna=False).agg(
                n=(item, "size"), endpoint=("endpoint", "first")
            )
            counts = counts.reset_index()
            problems.append(
                _problem(
                    counts.drop(columns="n"),
                    side,
                    item,
                    f"session only in the {side} table (the {other} table has no such "
                    "session in this view): " + _text(counts["n"]) + f" {item}(s) unpaired",
                    side,
                )
            )
        lone = lone.loc[~no_session]
        if not len(lone):
            continue
        # items the other side never has (in this view): one row per item
        other_items = other_rows[["view", item]].drop_duplicates()
        mark = lone[["view", item]].merge(
            other_items.assign(_present=True), on=["view", item], how="left"
        )["_present"]
        never = mark.isna().to_numpy()
        if never.any():
            it = lone.loc[never]
            counts = it.groupby(["view", item], sort=False, dropna=False).size().rename("n")
            counts = counts.reset_index()
            problems.append(
                _problem(
                    counts.drop(columns="n"),
                    side,
                    item,
                    item
                    + " "
                    + _text(counts[item])
                    + f" is in the {side} table ("
                    + _text(counts["n"])
                    + f" session(s)) but never in the {other} table"
                    + (
                        "; pass subset=[...] to compare only the items both have"
                        if subset is None
                        else ""
                    ),
                    side + "/" + _text(counts[item]),
                )
            )
        lone = lone.loc[~never]
        if len(lone):
            problems.append(
                _problem(
                    lone[[*session_cols, "view", item, "row", "endpoint"]],
                    side,
                    item,
                    item + " " + _text(lone[item]) + f" absent from the {other} table in this "
                    "session",
                    side + "/" + _text(lone[item]),
                )
            )
    if subset is not None:
        seen = set(ref.rows[item]) | set(tst.rows[item])
        absent = [s for s in subset if s not in seen]
        if absent:
            problems.append(
                pd.DataFrame(
                    {
                        item: absent,
                        "side": "both",
                        "reason": [
                            f"{item} {a!r} requested in subset but in neither table" for a in absent
                        ],
                        "path": [f"subset/{a}" for a in absent],
                    }
                )
            )
    pairs = merged.loc[both].drop(columns="_merge").reset_index(drop=True)
    for c in ("row_reference", "row_test"):
        pairs[c] = pairs[c].astype(np.int64)
    return Paired(pairs, problems)


def no_pairs_error(what: str, session_cols: list[str], problems: list[pd.DataFrame]) -> InputError:
    """The error raised when nothing pairs, with the first reasons why."""
    reasons = [r for p in problems if len(p) for r in p["reason"].astype(str).head(3)][:5]
    listed = "".join(f"\n  {r}" for r in reasons)
    return InputError(
        f"no {what} pairs: no (session, view, item) of the reference matches the test on "
        f"{[*session_cols, 'view']}. Check session_cols (e.g. session_cols=['patient_id'] "
        "when a tracing has no timestamp), the view column and the item names."
        + (f" First problems:{listed}" if listed else "")
    )
