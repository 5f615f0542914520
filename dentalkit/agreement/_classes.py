"""Classification agreement: skeletal class and vertical pattern of two measure tables.

Each session is classified twice with :func:`dentalkit.ceph.classify` (the shipped or the
user's thresholds) and the two categories are compared: share agreeing with a Wilson
interval, Cohen's kappa and — the classes being ordered as the thresholds declare them
(:func:`dentalkit.ceph.class_order`: Class III < I < II; hypo- < normo- <
hyperdivergent) — weighted kappa (Cohen 1968), linear by default, each with the
Fleiss–Cohen–Everitt (1969) standard error and the small-sample MOVER interval of
:func:`~dentalkit.agreement.cohens_kappa`, clustered on the patient when a patient
contributes several sessions.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from dentalkit.agreement._reliability import cohens_kappa
from dentalkit.errors import InputError

__all__ = ["classification"]


def classification(
    pairs: pd.DataFrame,
    cols: list[str],
    thresholds: pd.DataFrame | str | Path | None,
    schemes: Sequence[str] | None,
    confidence: float,
    weights: str = "linear",
    unit: str | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame, list[pd.DataFrame]]:
    """(per-scheme table, per-session categories, problem pieces) of a measures pairs table."""
    from dentalkit.ceph.classify import classify, load_thresholds

    table = load_thresholds(thresholds)
    available = set(pairs["measure"].astype(str))
    if schemes is not None:
        unknown = sorted(set(schemes) - set(table["scheme"]))
        if unknown:
            raise InputError(f"unknown scheme(s) {unknown}; have {sorted(set(table['scheme']))}")
        lacking = [
            s
            for s in schemes
            if table.loc[table["scheme"] == s, "measure"].iloc[0] not in available
        ]
        if lacking:
            raise InputError(
                f"scheme(s) {lacking} need measures that are not paired in both tables"
            )
        wanted = list(schemes)
    else:
        wanted = [
            s
            for s in dict.fromkeys(table["scheme"])
            if table.loc[table["scheme"] == s, "measure"].iloc[0] in available
        ]
    rows, class_rows, problems = [], [], []
    for scheme in wanted:  # a handful of schemes
        g = table[table["scheme"] == scheme]
        mid = g["measure"].iloc[0]
        sub = pairs[pairs["measure"].astype(str) == mid]
        if (sub["unit"].astype(object) == "px").any():
            problems.append(
                pd.DataFrame(
                    {
                        "measure": [mid],
                        "side": "both",
                        "path": f"classification/{scheme}",
                        "reason": f"{mid} is in px; the {scheme} thresholds are not: "
                        "calibrate (mm_per_px) to compare classes",
                    }
                )
            )
            continue
        base = sub[[*cols, "measure"]].reset_index(drop=True)
        cats = {}
        for side in ("reference", "test"):
            m = base.assign(value=sub[side].to_numpy(float))
            cats[side] = classify(m, table, schemes=[scheme])[scheme]
        ordered = list(cats["reference"].cat.categories)
        ref_c = cats["reference"].astype(object)
        tst_c = cats["test"].astype(object)
        both = ref_c.notna() & tst_c.notna()
        cp = base[cols].assign(
            scheme=scheme,
            reference=ref_c.to_numpy(),
            test=tst_c.to_numpy(),
        )
        cp["agree"] = pd.array(
            np.where(both, ref_c.to_numpy() == tst_c.to_numpy(), False), dtype="boolean"
        )
        cp.loc[~both.to_numpy(), "agree"] = pd.NA
        class_rows.append(cp)
        if not both.all():
            problems.append(
                base.loc[~both.to_numpy(), [*cols, "measure"]].assign(
                    side="both",
                    path=f"classification/{scheme}",
                    reason="no category (value outside every threshold interval)",
                )
            )
        units = base.loc[both.to_numpy(), unit] if unit is not None else None
        k = cohens_kappa(
            ref_c[both], tst_c[both], categories=ordered, confidence=confidence, units=units
        )
        kw = cohens_kappa(
            ref_c[both],
            tst_c[both],
            categories=ordered,
            confidence=confidence,
            weights=weights,
            units=units,
        )
        n_units = (
            int(base.loc[both.to_numpy(), "patient_id"].nunique())
            if "patient_id" in base.columns
            else int(k["n"])
        )
        rows.append(
            {
                "scheme": scheme,
                "measure": mid,
                "n": int(k["n"]),
                "n_units": n_units,
                "n_agree": int(k["n_agree"]),
                "agreement_pct": 100.0 * k["agreement"],
                "agreement_ci_low_pct": 100.0 * k["agreement_ci_low"],
                "agreement_ci_high_pct": 100.0 * k["agreement_ci_high"],
                "kappa": k["kappa"],
                "kappa_se": k["kappa_se"],
                "kappa_ci_low": k["kappa_ci_low"],
                "kappa_ci_high": k["kappa_ci_high"],
                "weights": weights,
                "weighted_kappa": kw["kappa"],
                "weighted_kappa_se": kw["kappa_se"],
                "weighted_kappa_ci_low": kw["kappa_ci_low"],
                "weighted_kappa_ci_high": kw["kappa_ci_high"],
                "kappa_ci_method": k["kappa_ci_method"]
                + ("; clustered on " + unit if unit is not None and k["n_units"] < k["n"] else ""),
                "categories": " < ".join(map(str, ordered)),
            }
        )
    columns = [
        "scheme", "measure", "n", "n_units", "n_agree", "agreement_pct", "agreement_ci_low_pct",
        "agreement_ci_high_pct", "kappa", "kappa_se", "kappa_ci_low", "kappa_ci_high",
        "weights", "weighted_kappa", "weighted_kappa_se", "weighted_kappa_ci_low",
        "weighted_kappa_ci_high", "kappa_ci_method", "categories",
    ]  # fmt: skip
    summary = pd.DataFrame(rows, columns=columns)
    class_pairs = (
        pd.concat(class_rows, ignore_index=True)
        if class_rows
        else pd.DataFrame(columns=[*cols, "scheme", "reference", "test", "agree"])
    )
    return summary, class_pairs, problems
