"""Prevalence of missing teeth by FDI number, type, arch and hypodontia pattern (private)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np
import pandas as pd

from dentalkit.errors import InputError
from dentalkit.stats import proportion_ci
from dentalkit.stats._proportions import CLUSTER_CI_METHOD, cluster_proportion_ci
from dentalkit.stats._tables import as_list, attach_groups, require_columns, select_sessions
from dentalkit.teeth._widths import SOURCE_VIEW, TOOTH_DIGIT

__all__ = ["COVERAGE", "PATTERNS", "MissingTeeth", "ToothSet", "missing"]

_ALL_TYPES = frozenset(TOOTH_DIGIT)

#: Tooth types each segmentation source shows, and can therefore call missing.
#: Panoramic radiographs show the whole dentition including unerupted teeth;
#: occlusograms (dental-model photographs) show every erupted tooth of their
#: arch; frontal intra-oral photographs show the anterior teeth and first
#: premolars, not the molars — a molar absent from a frontal photograph is
#: not assessed, never counted missing. Replace with ``coverage=``.
COVERAGE: dict[str, frozenset[str]] = {
    "pano": _ALL_TYPES,
    "occlusogram_upper": _ALL_TYPES,
    "occlusogram_lower": _ALL_TYPES,
    "frontal": frozenset({"i1", "i2", "c", "p1"}),
}
assert set(COVERAGE) == set(SOURCE_VIEW)

_QUADRANTS = {"up": (1, 2), "lo": (3, 4)}
ALL_FDI: tuple[int, ...] = tuple(q * 10 + d for q in (1, 2, 3, 4) for d in range(1, 9))
NON_M3: tuple[int, ...] = tuple(f for f in ALL_FDI if f % 10 != 8)
M3: tuple[int, ...] = (18, 28, 38, 48)


@dataclass(frozen=True)
class ToothSet:
    """A set of teeth and how many of them must be missing to count a patient.

    A patient (session) is *assessed* for the set only when every tooth of the
    set was assessed, and *affected* when at least ``min_missing`` of them are
    missing. Requiring complete assessment keeps partly seen dentitions from
    lowering (or raising) the prevalence.
    """

    name: str
    fdi: tuple[int, ...]
    min_missing: int
    description: str


#: Missing-tooth patterns reported by :func:`missing` (replace with ``patterns=``).
#: Third molars are excluded from the hypodontia counts and reported on their
#: own, as is usual in agenesis studies (Polder et al. 2004; OMIM #150400).
PATTERNS: tuple[ToothSet, ...] = (
    ToothSet("any_excl_m3", NON_M3, 1, "≥1 missing tooth, third molars excluded"),
    ToothSet("oligodontia", NON_M3, 6, "≥6 missing teeth, third molars excluded (OMIM #150400)"),
    ToothSet("upper_lateral_incisor", (12, 22), 1, "≥1 missing maxillary lateral incisor"),
    ToothSet(
        "upper_lateral_incisors_bilateral", (12, 22), 2, "both maxillary lateral incisors missing"
    ),
    ToothSet("upper_second_premolar", (15, 25), 1, "≥1 missing maxillary second premolar"),
    ToothSet("lower_second_premolar", (35, 45), 1, "≥1 missing mandibular second premolar"),
    ToothSet("second_premolar", (15, 25, 35, 45), 1, "≥1 missing second premolar"),
    ToothSet("lower_incisor", (31, 32, 41, 42), 1, "≥1 missing mandibular incisor"),
    ToothSet("third_molar", M3, 1, "≥1 missing third molar (reported apart from hypodontia)"),
)


class MissingTeeth(NamedTuple):
    """Result of :func:`missing`; every prevalence table has ``n_assessed``,
    ``n_affected``, ``prevalence``, ``ci_low``, ``ci_high`` and ``unit_of_analysis``
    (``"patient"`` or ``"session"``).

    Attributes
    ----------
    status : DataFrame
        One row per unit (patient session) and FDI tooth assessed by at least
        one source: ``n_sources``, ``n_sources_missing``, ``missing`` (every
        assessing source says missing) and ``discordant`` (sources disagree).
    by_fdi : DataFrame
        Per FDI tooth (and group): share of units missing that tooth.
    by_type : DataFrame
        Per arch and tooth type: share of units missing ≥1 of the left/right
        pair, plus tooth-level ``n_teeth_assessed`` / ``n_teeth_missing``.
    by_arch : DataFrame
        Per arch: share of units missing ≥1 tooth, third molars excluded.
    patterns : DataFrame
        Per :data:`PATTERNS` entry.
    per_patient : DataFrame
        Per unit: ``n_assessed``, ``n_missing_excl_m3``, ``n_missing_m3``,
        ``missing_fdi`` (list of FDI numbers, ascending; empty when none), ``complete_excl_m3`` and
        ``category`` (``none`` / ``hypodontia`` 1–5 / ``oligodontia`` ≥6,
        third molars excluded; ``incomplete`` when fewer than six are missing
        among incompletely assessed teeth).
    excluded : DataFrame
        Rows not used, counted per ``source`` and ``reason``.
    """

    status: pd.DataFrame
    by_fdi: pd.DataFrame
    by_type: pd.DataFrame
    by_arch: pd.DataFrame
    patterns: pd.DataFrame
    per_patient: pd.DataFrame
    excluded: pd.DataFrame


def missing(
    teeth: pd.DataFrame,
    *,
    by: str | Sequence[str] | None = None,
    groups: pd.DataFrame | None = None,
    sources: Iterable[str] | None = None,
    coverage: Mapping[str, Iterable[str]] | None = None,
    patterns: Sequence[ToothSet] | None = None,
    session: str = "first",
    confidence: float = 0.95,
) -> MissingTeeth:
    """Prevalence of missing teeth with Wilson confidence intervals.

    Parameters
    ----------
    teeth : DataFrame
        The ``teeth`` table (session key, ``source``, ``tooth_type``,
        ``side``, ``arch``, ``fdi``, ``missing``).
    by : str or list of str, optional
        Group columns (in ``teeth`` or in ``groups``), e.g. ``"sex"``. Use
        ``by="source"`` for one prevalence per source instead of combining.
    groups : DataFrame, optional
        One row per ``patient_id`` with group columns to merge in.
    sources : iterable of str, optional
        Sources to use (default all). Photographs and dental models only show
        erupted teeth; for agenesis (hypodontia) use ``sources=["pano"]``.
    coverage : mapping, optional
        Source → tooth types it can assess (default :data:`COVERAGE`). Rows of
        types a source does not show are excluded, never counted missing.
    patterns : sequence of ToothSet, optional
        Patterns to report (default :data:`PATTERNS`).
    session : {"first", "last", "all"}
        Each patient's first or last session (unit = patient) or every
        session (unit = session; sessions of one patient are then not
        independent).
    confidence : float
        Level of the intervals: Wilson score (Wilson 1927) when the unit is the
        patient; with ``session="all"`` the sessions of a patient are not
        independent and the intervals are cluster-robust on ``patient_id``
        (``ci_method`` says which).

    Returns
    -------
    MissingTeeth

    Notes
    -----
    The service reports a tooth as missing from the image; that is not a
    diagnosis of agenesis (a tooth may be extracted, unerupted or hidden).
    Sources are combined per patient session and FDI tooth: the tooth counts
    as missing only when every source that assesses it says so (a tooth seen
    in any image is present); disagreements are flagged in
    ``status.discordant``. Tooth-level counts of one type are not independent
    (two sides of one patient), so confidence intervals are given only for
    unit-level prevalences.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame(
    ...     {
    ...         "patient_id": ["a", "a", "b", "b"],
    ...         "timestamp": ["t0"] * 4,
    ...         "source": ["pano"] * 4,
    ...         "tooth_type": ["i2"] * 4,
    ...         "side": ["rgt", "lft"] * 2,
    ...         "arch": ["up"] * 4,
    ...         "fdi": [12, 22, 12, 22],
    ...         "missing": [True, False, False, False],
    ...     }
    ... )
    >>> res = missing(t)
    >>> print(res.by_fdi[["fdi", "n_assessed", "n_affected", "prevalence"]].to_string(index=False))
     fdi  n_assessed  n_affected  prevalence
      12           2           1         0.5
      22           2           0         0.0
    >>> print(res.patterns.set_index("pattern").loc["upper_lateral_incisor", "n_affected"])
    1

    References
    ----------
    Polder BJ, Van't Hof MA, Van der Linden FPGM, Kuijpers-Jagtman AM. A
    meta-analysis of the prevalence of dental agenesis of permanent teeth.
    Community Dent Oral Epidemiol 2004;32:217–226 (third molars excluded;
    mandibular second premolars, maxillary lateral incisors and maxillary
    second premolars most often missing). OMIM #150400, Tooth agenesis,
    selective (hypodontia: fewer than 6, oligodontia: 6 or more missing
    permanent teeth, third molars not counted). Wilson EB. Probable inference,
    the law of succession, and statistical inference. J Am Stat Assoc
    1927;22:209–212.
    """
    require_columns(
        teeth,
        ["patient_id", "timestamp", "source", "tooth_type", "side", "arch", "fdi", "missing"],
        "teeth",
    )
    by = as_list(by)
    table = attach_groups(teeth, groups, by, "teeth")
    cover = _coverage(coverage)
    patterns = PATTERNS if patterns is None else tuple(patterns)
    if table["missing"].isna().any():
        rows = np.flatnonzero(table["missing"].isna().to_numpy())[:5].tolist()
        raise InputError(f"teeth.missing has nulls at rows {rows}; each flag must be True or False")

    source = table["source"].astype("object")
    if sources is not None:
        wanted = set(sources)
        unknown = wanted - set(cover)
        if unknown:
            raise InputError(f"sources {sorted(unknown)} unknown; known: {sorted(cover)}")
        table = table.loc[source.isin(wanted).to_numpy()]
        source = table["source"].astype("object")

    fdi = pd.to_numeric(table["fdi"], errors="coerce")
    kind = table["tooth_type"].astype("object")
    allowed = [(src, t) for src, types in cover.items() for t in types]
    shows = pd.MultiIndex.from_arrays([source, kind]).isin(allowed)
    reasons = np.select(
        [~source.isin(list(cover)).to_numpy(), fdi.isna().to_numpy(), ~shows],
        [
            "unknown source",
            "no FDI number (unknown tooth type)",
            "source does not show this tooth type",
        ],
        default="",
    )
    excluded = (
        pd.DataFrame({"source": source.to_numpy(), "reason": reasons})
        .query("reason != ''")
        .groupby(["source", "reason"], sort=True)
        .size()
        .rename("n_rows")
        .reset_index()
    )
    used = table.loc[reasons == ""].assign(fdi=fdi[reasons == ""].astype("int64"))
    used = select_sessions(used, session)
    unit = "session" if session == "all" else "patient"

    status = _status(used, by)
    wide = _wide(status, by)
    keys = ["patient_id", "timestamp", *by]
    by_fdi = _summarise(
        status.assign(_affected=status["missing"]),
        [*by, "fdi", "tooth_type", "arch", "side"],
        confidence,
        unit,
    )
    type_sets = {
        f"{t}_{arch}": ToothSet(f"{t}_{arch}", tuple(q * 10 + d for q in _QUADRANTS[arch]), 1, "")
        for arch in ("up", "lo")
        for t, d in TOOTH_DIGIT.items()
    }
    by_type = _sets_prevalence(wide, keys, by, list(type_sets.values()), confidence, unit)
    names = by_type.pop("pattern").str.split("_")
    by_type.insert(len(by), "arch", names.str[1])
    by_type.insert(len(by), "tooth_type", names.str[0])
    by_type = by_type.drop(columns=["description", "min_missing"])
    teeth_counts = (
        status.groupby([*by, "arch", "tooth_type"], dropna=False, observed=True)["missing"]
        .agg(n_teeth_assessed="size", n_teeth_missing="sum")
        .reset_index()
    )
    by_type = by_type.merge(teeth_counts, on=[*by, "arch", "tooth_type"], how="left")
    arch_sets = [
        ToothSet(arch, tuple(f for f in NON_M3 if f // 10 in _QUADRANTS[arch]), 1, "")
        for arch in ("up", "lo")
    ]
    by_arch = _sets_prevalence(wide, keys, by, arch_sets, confidence, unit)
    by_arch = by_arch.rename(columns={"pattern": "arch"}).drop(
        columns=["description", "min_missing"]
    )
    return MissingTeeth(
        status=status,
        by_fdi=by_fdi,
        by_type=by_type,
        by_arch=by_arch,
        patterns=_sets_prevalence(wide, keys, by, patterns, confidence, unit),
        per_patient=_per_patient(status, wide, keys),
        excluded=excluded,
    )


def _coverage(coverage: Mapping[str, Iterable[str]] | None) -> dict[str, frozenset[str]]:
    if coverage is None:
        return COVERAGE
    out = {}
    for src, types in coverage.items():
        types = frozenset(types)
        unknown = types - _ALL_TYPES
        if unknown:
            raise InputError(f"coverage[{src!r}] has unknown tooth types {sorted(unknown)}")
        out[src] = types
    return out


def _status(used: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    keys = ["patient_id", "timestamp", *by, "fdi"]
    work = used.astype({"patient_id": "object", "timestamp": "object"})
    dup = work.duplicated([*keys, "source"], keep=False)
    if dup.any():
        example = work.loc[dup, [*keys, "source"]].head(2).astype("object").to_dict("records")
        raise InputError(
            f"the same tooth is reported twice by one source in one session, e.g. {example}"
        )
    status = (
        work.groupby(keys, sort=True, dropna=False, observed=True)
        .agg(
            tooth_type=("tooth_type", "first"),
            arch=("arch", "first"),
            side=("side", "first"),
            n_sources=("missing", "size"),
            n_sources_missing=("missing", "sum"),
        )
        .reset_index()
    )
    for c in ("tooth_type", "arch", "side"):
        status[c] = status[c].astype("object")
    n, k = status["n_sources"], status["n_sources_missing"]
    status["missing"] = (k == n).to_numpy()
    status["discordant"] = ((k > 0) & (k < n)).to_numpy()
    return status


def _wide(status: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """Units × 32 FDI teeth: 1.0 missing, 0.0 present, NaN not assessed."""
    keys = ["patient_id", "timestamp", *by]
    wide = status.pivot(index=keys, columns="fdi", values="missing").astype("float64")
    return wide.reindex(columns=list(ALL_FDI))


def _summarise(frame: pd.DataFrame, keys: list[str], confidence: float, unit: str) -> pd.DataFrame:
    g = frame.groupby(keys, sort=True, dropna=False, observed=True)["_affected"]
    out = g.agg(n_assessed="size", n_affected="sum").reset_index()
    out = _add_ci(out, confidence, unit)
    if unit == "session":
        _clustered_ci(out, frame[keys], frame["_affected"], frame["patient_id"], confidence)
    return out


def _labels(frame: pd.DataFrame) -> np.ndarray:
    """One string per row joining its values (group labels for cluster_proportion_ci)."""
    parts = [frame[c].astype("object").astype(str).to_numpy() for c in frame.columns]
    if not parts:
        return np.full(len(frame), "", dtype=object)
    return np.array(["\x1f".join(t) for t in zip(*parts, strict=True)], dtype=object)


def _clustered_ci(
    out: pd.DataFrame,
    unit_groups: pd.DataFrame,
    affected: pd.Series | np.ndarray,
    patients: pd.Series | np.ndarray,
    confidence: float,
    out_groups: pd.DataFrame | None = None,
) -> None:
    """Replace the Wilson limits of ``out`` by patient-clustered ones (sessions as units)."""
    unit_labels = _labels(unit_groups).astype(str)
    _, low, high, _ = cluster_proportion_ci(
        np.asarray(affected, dtype=float), np.asarray(patients), unit_labels, confidence
    )
    target = _labels(out[list(unit_groups.columns)] if out_groups is None else out_groups)
    idx = np.searchsorted(np.unique(unit_labels), target.astype(str))
    out["ci_low"], out["ci_high"] = low[idx], high[idx]
    out["ci_method"] = f"{CLUSTER_CI_METHOD}, sessions clustered on patient_id"


def _add_ci(out: pd.DataFrame, confidence: float, unit: str) -> pd.DataFrame:
    n = out["n_assessed"].to_numpy(dtype=float)
    k = out["n_affected"].to_numpy(dtype=float)
    with np.errstate(invalid="ignore", divide="ignore"):
        out["prevalence"] = np.where(n > 0, k / n, np.nan)
    out["ci_low"], out["ci_high"] = proportion_ci(k, n, confidence)
    out["n_assessed"] = out["n_assessed"].astype("int64")
    out["n_affected"] = out["n_affected"].astype("int64")
    out["unit_of_analysis"] = unit
    out["ci_method"] = "Wilson score (Wilson 1927); patients independent"
    return out


def _sets_prevalence(
    wide: pd.DataFrame,
    keys: list[str],
    by: list[str],
    sets: Sequence[ToothSet],
    confidence: float,
    unit: str,
) -> pd.DataFrame:
    """Units assessed for / affected by each tooth set, summed per group (one pass)."""
    values = wide.to_numpy()
    col = {f: i for i, f in enumerate(wide.columns)}
    assessed = np.empty((len(values), len(sets)), dtype=bool)
    affected = np.empty_like(assessed)
    for j, s in enumerate(sets):  # one column per set, never per unit
        sub = values[:, [col[f] for f in s.fdi]]
        assessed[:, j] = ~np.isnan(sub).any(axis=1)
        affected[:, j] = assessed[:, j] & (np.nansum(sub, axis=1) >= s.min_missing)
    units = wide.index.to_frame(index=False)
    if by:
        codes = units.groupby(by, sort=True, dropna=False, observed=True).ngroup().to_numpy()
        _, first = np.unique(codes, return_index=True)  # first unit of each group
        labels = units[by].iloc[first]
        n_groups = len(first)
    else:
        codes = np.zeros(len(units), dtype=int)
        labels = pd.DataFrame(index=[0])
        n_groups = 1
    n_assessed = np.zeros((n_groups, len(sets)), dtype="int64")
    n_affected = np.zeros_like(n_assessed)
    np.add.at(n_assessed, codes, assessed)
    np.add.at(n_affected, codes, affected)
    out = labels.reset_index(drop=True).loc[np.repeat(np.arange(n_groups), len(sets))]
    out = out.reset_index(drop=True)
    out["pattern"] = np.tile([s.name for s in sets], n_groups)
    out["description"] = np.tile([s.description for s in sets], n_groups)
    out["min_missing"] = np.tile([s.min_missing for s in sets], n_groups)
    out["n_assessed"] = n_assessed.ravel()
    out["n_affected"] = n_affected.ravel()
    out = _add_ci(out, confidence, unit)
    if unit == "session":
        for j, tooth_set in enumerate(sets):  # one pass per set, vectorised over units
            rows = (out["pattern"] == tooth_set.name).to_numpy()
            use = assessed[:, j]
            if not use.any():
                continue
            part = out.loc[rows].copy()
            group_cols = units[by].loc[use] if by else pd.DataFrame(index=units.index[use])
            _clustered_ci(
                part,
                group_cols.reset_index(drop=True),
                affected[use, j],
                units["patient_id"].to_numpy()[use],
                confidence,
                out_groups=part[by] if by else pd.DataFrame(index=part.index),
            )
            out.loc[rows, ["ci_low", "ci_high", "ci_method"]] = part[
                ["ci_low", "ci_high", "ci_method"]
            ].to_numpy()
    return out


def _per_patient(status: pd.DataFrame, wide: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    non_m3 = wide[list(NON_M3)].to_numpy()
    m3 = wide[list(M3)].to_numpy()
    out = wide.index.to_frame(index=False)
    out["n_assessed"] = (~np.isnan(wide.to_numpy())).sum(axis=1)
    out["n_missing_excl_m3"] = np.nansum(non_m3, axis=1).astype("int64")
    out["n_missing_m3"] = np.nansum(m3, axis=1).astype("int64")
    out["complete_excl_m3"] = ~np.isnan(non_m3).any(axis=1)
    n = out["n_missing_excl_m3"]
    out["category"] = np.select(
        [n >= 6, ~out["complete_excl_m3"], n == 0],
        ["oligodontia", "incomplete", "none"],
        default="hypodontia",
    )
    lists = (
        status[status["missing"]]
        .sort_values("fdi")
        .groupby(keys, sort=False, dropna=False, observed=True)["fdi"]
        .agg(lambda s: [int(v) for v in s])
        .rename("missing_fdi")
        .reset_index()
    )
    out = out.merge(lists, on=keys, how="left")
    # a list per unit (empty: none missing), written as Arrow list<int16>
    out["missing_fdi"] = [v if isinstance(v, list) else [] for v in out["missing_fdi"]]
    return out
