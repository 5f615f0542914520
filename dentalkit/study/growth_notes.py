"""The growth section's notes: interval method, regression to the mean, class
reliability and the power of comparisons with small groups.

Text for :mod:`dentalkit.study.report` (which renders the tables), each sentence drawn
from the fitted tables: the df method from ``growth_fixed``, the measures at risk of
regression to the mean from :func:`dentalkit.ceph.regression_to_the_mean`, the power from
:func:`dentalkit.study.planning.small_group_power`.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

__all__ = [
    "class_reliability",
    "defining_measure",
    "interval_text",
    "power_text",
    "rtm_table",
    "rtm_text",
]


def defining_measure(fixed: pd.DataFrame) -> str | None:
    """The measure the growth models were baseline-adjusted for (its ``baseline X`` term)."""
    terms = fixed["term"].astype(str)
    names = {t.split(":")[0][len("baseline ") :] for t in terms if t.startswith("baseline ")}
    return sorted(names)[0] if names else None


def interval_text(rates: pd.DataFrame) -> str:
    """How the rates' intervals were formed, from the fitted rows: t on Satterthwaite df
    (with their range) or Wald z."""
    kinds = set(rates["statistic_name"].dropna().astype(str)) if len(rates) else set()
    df = rates["df"].dropna() if "df" in rates.columns else pd.Series(dtype=float)
    if kinds == {"t"} and len(df):
        span = f"{df.min():.1f}" if np.isclose(df.min(), df.max()) else (
            f"{df.min():.1f}–{df.max():.1f}"
        )  # fmt: skip
        return (
            f"t on Satterthwaite's degrees of freedom, df {span}, in the `df` column; "
            "Kuznetsova et al. 2017, as lmerTest"
        )
    if kinds == {"z"}:
        return "Wald z: the variance components treated as known, too narrow with few patients"
    return "per term: " + ", ".join(sorted(kinds)) if kinds else "none fitted"


def rtm_text(analyses: Mapping, defining: str, models: pd.DataFrame) -> str:
    """Regression to the mean: what the adjustment does, every measure at risk and why
    (:func:`dentalkit.ceph.regression_to_the_mean`), and the class reliability."""
    rtm = rtm_table(analyses, defining, models)
    text = (
        f"**Regression to the mean.** The classes are defined by the first-session "
        f"{defining}, whose tracing error does not recur at the next session, so every "
        f"measure is modelled baseline-adjusted (`stats.growth(group_defined_by="
        f"'{defining}')`: the patient's first-session {defining} as covariate, also × time; "
        "analysis of covariance, Barnett, van der Pols & Dobson 2005): the class × time "
        f"terms compare classes at the same baseline {defining}."
    )
    if rtm is not None:
        risk = rtm[rtm["at_risk"]]
        text += (
            f" Measures at risk (sharing landmarks with, or correlating with, {defining}; "
            "`ceph.regression_to_the_mean`), whose unadjusted class differences in change "
            "would partly be regression to the mean:\n\n"
            + "\n".join(f"- **{r.measure}**: {r.why}." for r in risk.itertuples())
        )
    return text + "\n\n" + class_reliability(analyses)


def rtm_table(
    analyses: Mapping, defining: str, models: pd.DataFrame | None = None
) -> pd.DataFrame | None:
    """:func:`dentalkit.ceph.regression_to_the_mean` for the growth models' ceph measures.

    The measures are those of ``growth_models`` that are catalogue measures (arch
    widths are not), checked against ``defining`` with the correlation across patients
    at the first lateral session of ``ceph_measures``. None without them.
    """
    from dentalkit import ceph

    models = analyses.get("growth_models") if models is None else models
    measures = analyses.get("ceph_measures")
    if models is None or measures is None or not len(measures):
        return None
    catalogue = set(ceph.load_measures()["id"])
    names = [m for m in dict.fromkeys(models["measure"].astype(str)) if m in catalogue]
    if defining not in catalogue:
        return None
    lateral = measures[measures["view"] == "lateral"] if "view" in measures else measures
    return ceph.regression_to_the_mean(lateral, defining=defining, measures=names)


def class_reliability(analyses: Mapping) -> str:
    """The skeletal class's reliability where a session was traced twice, else 'not known'.

    Two lateral ANB rows of one session are two tracings: each is classified
    (:func:`dentalkit.ceph.classify`) and their agreement is linear weighted kappa in the
    declared class order with its small-sample interval
    (:func:`dentalkit.agreement.cohens_kappa`).
    """
    from dentalkit import agreement, ceph

    measures = analyses.get("ceph_measures")
    anb = None
    if measures is not None and len(measures):
        anb = measures[(measures["measure"].astype(str) == "ANB") & measures["value"].notna()]
        if "view" in anb.columns:
            anb = anb[anb["view"] == "lateral"]
    key = ["patient_id", "timestamp"]
    if anb is not None and len(anb):
        anb = anb.assign(tracing=anb.groupby(key, sort=False).cumcount())
        first = anb[anb["tracing"] == 0]
        second = anb[anb["tracing"] == 1]
        if second["patient_id"].nunique() >= 2:
            a = ceph.classify(first.drop(columns="tracing"), schemes=["skeletal_class"])
            b = ceph.classify(second.drop(columns="tracing"), schemes=["skeletal_class"])
            both = a[[*key, "skeletal_class"]].merge(
                b[[*key, "skeletal_class"]], on=key, suffixes=("_1", "_2")
            )
            both = both.dropna(subset=["skeletal_class_1", "skeletal_class_2"])
            if both["patient_id"].nunique() >= 2:
                k = agreement.cohens_kappa(
                    both["skeletal_class_1"].astype(str),
                    both["skeletal_class_2"].astype(str),
                    categories=ceph.class_order("skeletal_class"),
                    weights="linear",
                    units=both["patient_id"].astype(str),
                )
                return (
                    f"**Class reliability:** {len(both)} sessions of "
                    f"{both['patient_id'].nunique()} patients were traced twice; the class "
                    f"of the two tracings agrees with linear weighted κ {k['kappa']:.2f} "
                    f"[{k['kappa_ci_low']:.2f}, {k['kappa_ci_high']:.2f}] "
                    "(`agreement.cohens_kappa`, class order III < I < II)."
                )
    return (
        "**Class reliability: not known.** No session of this study was traced twice, so "
        "how often a patient's class would change on a second tracing — the misclassification "
        "that drives regression to the mean — is not measured here; with repeated tracings, "
        "`agreement.measure(tracing_1, tracing_2, schemes=['skeletal_class'])` gives it."
    )


def power_text(analyses: Mapping, member: str = "group") -> tuple[str, str, pd.DataFrame] | None:
    """Heading, text and table of the power of the growth comparisons with a small group.

    From :func:`dentalkit.study.planning.small_group_power`; None when no compared
    ``member`` (group, class) is small or there is no growth model. The table's
    ``patients`` holds the two group sizes (reference first) as lists.
    """
    from dentalkit.study.planning import (
        POWER_EFFECT,
        POWER_N_SIMS,
        SMALL_GROUP,
        session_times,
        small_group_power,
    )

    power = small_group_power(analyses)
    if power is None or not len(power):
        return None
    effects = ", ".join(f"{v:g} {u}/year" for u, v in POWER_EFFECT.items())
    table = pd.DataFrame(
        {
            "measure": power["measure"].astype(str),
            "comparison": [
                f"{g} vs {r}" for g, r in zip(power["group"], power["reference"], strict=True)
            ],
            "patients": power["n_per_group"],
            "effect_per_year": [
                f"{e:g} {u}" for e, u in zip(power["effect"], power["unit"], strict=True)
            ],
            "power_mc_ci": [
                f"{p:.2f} [{lo:.2f}, {hi:.2f}]"
                for p, lo, hi in zip(
                    power["power"], power["power_ci_low"], power["power_ci_high"], strict=True
                )
            ],
            "closed_form_power": power["closed_form_power"],
            "sd_slope": power["sd_slope"],
            "sd_residual": power["sd_residual"],
        }
    )
    notes = sorted(set(power["note"].dropna().astype(str)))
    times = ", ".join(f"{t:g}" for t in session_times(analyses["growth_data"]))
    text = (
        f"**Rule (fixed in advance):** where a compared {member} has fewer than "
        f"{SMALL_GROUP} patients (`dentalkit.study.planning.SMALL_GROUP`), a difference in "
        "the rate of change that is not significant says little, so the report states the "
        "power these group sizes have to detect a stated difference in rate — "
        f"{effects} (`POWER_EFFECT`; not the observed difference, whose power only restates "
        "its p-value). **Method:** `stats.simulate_power` from each measure's fitted "
        "variance components (intercept, slope and residual SDs), two groups of the "
        f"observed sizes seen at the cohort's typical times ({times} years), "
        f"{POWER_N_SIMS} simulated studies each (seed 0), two-sided α = 0.05; in brackets "
        "the Monte Carlo 95 % interval (Wilson) of the simulated power; beside it the closed "
        "form of Diggle et al. (2002). n = patients (reference group first)."
        + (" Note: " + "; ".join(notes) + "." if notes else "")
    )
    heading = f"Power of the growth comparisons (groups of fewer than {SMALL_GROUP} patients)"
    return heading, text, table
