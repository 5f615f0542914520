"""The report's inference (issue 29): growth df and baseline adjustment, regression to the
mean for every measure at risk, effect sizes beside their tests, power for small groups,
and ``dentalkit plan``.

Expected values come from the statistics layer called directly on the same data
(``stats.growth``, ``ceph.regression_to_the_mean``, ``stats.simulate_power``), from
scikit-learn's weighted kappa, and from Diggle et al.'s closed form computed here by hand.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps
from typer.testing import CliRunner

from dentalkit import ceph, stats
from dentalkit.cli import app
from dentalkit.study import Design, growth_by_group, write_analyses
from dentalkit.study.analyses import AnalysisInputs, _run_growth
from dentalkit.study.calibration import calibration_policy
from dentalkit.study.groups import default_groups
from dentalkit.study.planning import SMALL_GROUP
from dentalkit.study.report import sections

YEAR = pd.Timedelta(days=365.25)
MEASURES = ("SNB", "ANB", "SN_MP", "FMA")


def _cohort(n: int = 24, sessions: int = 2, seed: int = 0) -> pd.DataFrame:
    """Lateral ceph measures of ``n`` patients seen yearly (exact Julian years)."""
    rng = np.random.default_rng(seed)
    rows = []
    start = pd.Timestamp("2024-03-05T10:00:00Z")
    for i in range(n):
        sna, snb = rng.normal(82, 3), 0.0
        anb = rng.normal(2.5, 2.5)
        snb = sna - anb
        mp, fma = rng.normal(32, 4), rng.normal(25, 4)
        for k in range(sessions):
            when = start + k * YEAR
            values = {
                "SNA": sna + rng.normal(0, 1),
                "SNB": snb + 0.3 * k + rng.normal(0, 1),
                "SN_MP": mp - 0.25 * k + rng.normal(0, 0.8),
                "FMA": fma - 0.2 * k + rng.normal(0, 0.8),
            }
            values["ANB"] = values["SNA"] - values["SNB"]
            for m, v in values.items():
                rows.append(
                    {
                        "patient_id": f"P{i:02d}",
                        "timestamp": when.isoformat(),
                        "session_time": when,
                        "view": "lateral",
                        "measure": m,
                        "unit": "deg",
                        "value": v,
                    }
                )
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def study():
    """The growth analysis as the study runs it (default groups: skeletal class from the
    first-session ANB), its report sections, and the inputs for independent checks."""
    measures = _cohort()
    classes = ceph.classify(measures, schemes=["skeletal_class"])
    groups = default_groups(classes)
    out = growth_by_group(measures, None, groups, ceph=MEASURES, group_defined_by="ANB")
    analyses = {"ceph_measures": measures, "ceph_classes": classes, **out}
    body = dict(sections({}, analyses))
    # independent: stats.growth on the same rows, called here (Class I the reference)
    order = ["Class I", "Class III", "Class II"]
    direct = stats.growth(
        measures[measures["measure"].isin(MEASURES)],
        group="skeletal_class",
        patients=groups.assign(
            skeletal_class=pd.Categorical(groups["skeletal_class"].astype(str), categories=order)
        ),
        group_defined_by="ANB",
    )
    return measures, groups, analyses, body, direct


def _growth_body(body: dict) -> str:
    [text] = [b for title, b in body.items() if title.startswith("Growth by")]
    return text


def test_the_study_fits_skeletal_classes_baseline_adjusted_for_anb():
    measures = _cohort(n=12)  # 7, 3 and 2 patients per class
    classes = ceph.classify(measures, schemes=["skeletal_class"])

    def run(design: Design) -> pd.DataFrame:
        inputs = AnalysisInputs({}, calibration_policy(None, {}), design)
        inputs.results.update(ceph_measures=measures, ceph_classes=classes)
        return _run_growth(inputs)["growth_fixed"]

    terms = set(run(Design())["term"])
    assert {"baseline ANB", "baseline ANB:years"} <= terms  # two sessions: no jump term
    # a class from the last session is not defined by the first-session ANB: no adjustment
    assert not any(t.startswith("baseline") for t in run(Design(session="last"))["term"])


def test_growth_section_states_satterthwaite_df_equal_to_stats_growth(study):
    _, _, _, body, fit = study
    text = _growth_body(body)
    assert "Wald" not in text
    assert "Satterthwaite" in text
    direct = fit.fixed
    direct = direct[direct["term"].str.startswith("years")]
    table = text[text.index("| measure") :]
    lines = [line for line in table.splitlines()[2:] if line.startswith("|")]
    shown = {}
    for line in lines:
        cells = [c.strip() for c in line.strip("|").split("|")]
        shown[(cells[0], cells[1])] = float(cells[5])  # the df column
    assert len(shown) == len(direct) > 4
    for r in direct.itertuples():
        assert shown[(r.measure, r.term)] == pytest.approx(r.df, abs=5e-4)
    lo, hi = direct["df"].min(), direct["df"].max()
    assert (f"df {lo:.1f}–{hi:.1f}" if round(lo, 1) != round(hi, 1) else f"df {lo:.1f},") in text


def test_rtm_warning_lists_exactly_the_measures_ceph_flags(study):
    measures, _, _, body, _ = study
    text = _growth_body(body)
    flagged = ceph.regression_to_the_mean(measures, defining="ANB", measures=list(MEASURES))
    at_risk = flagged.loc[flagged["at_risk"], "measure"].tolist()
    listed = re.findall(r"^- \*\*(\w+)\*\*: ", text, flags=re.M)
    assert listed == at_risk
    assert {"ANB", "SNB", "SN_MP"} <= set(listed)  # SN–MP shares S and N with ANB
    assert set(MEASURES) - set(listed)  # a measure not at risk is not warned for
    for r in flagged[flagged["at_risk"]].itertuples():
        assert r.why in text
    assert "Class reliability: not known" in text
    assert "group_defined_by='ANB'" in text


def test_class_reliability_is_weighted_kappa_of_the_two_tracings():
    from sklearn.metrics import cohen_kappa_score

    from dentalkit.study.growth_notes import class_reliability

    rng = np.random.default_rng(2)
    first = _cohort(n=30, sessions=1)
    anb = first[first["measure"] == "ANB"]
    second = anb.assign(value=anb["value"] + rng.normal(0, 1.0, len(anb)))
    text = class_reliability({"ceph_measures": pd.concat([first, second], ignore_index=True)})
    order = ceph.class_order("skeletal_class")
    c1 = ceph.classify(anb, schemes=["skeletal_class"])["skeletal_class"].astype(str)
    c2 = ceph.classify(second, schemes=["skeletal_class"])["skeletal_class"].astype(str)
    kappa = cohen_kappa_score(c1, c2, labels=order, weights="linear")
    assert "30 sessions of 30 patients were traced twice" in text
    assert f"linear weighted κ {kappa:.2f} [" in text


def test_comparisons_say_which_effect_size_goes_with_which_test_and_whether_they_agree():
    rng = np.random.default_rng(0)
    t = pd.DataFrame(
        {
            "patient_id": [f"p{i}" for i in range(30)],
            "measure": "SN_MP",
            "skeletal_class": ["Class I"] * 12 + ["Class II"] * 10 + ["Class III"] * 8,
            "value": np.r_[rng.normal(32, 4, 12), rng.normal(36, 4, 10), rng.normal(30, 2, 8)],
        }
    )
    welch = stats.compare(t, "value", "skeletal_class", per="measure")
    rank = stats.compare(t, "value", "skeletal_class", per="measure", test="rank")
    cmp = pd.concat([welch, rank.assign(measure="SN_MP (ranks)")], ignore_index=True)
    [body] = [b for title, b in sections({}, {"ceph_compare": cmp}) if "by skeletal" in title]
    assert "η² = SS_between/SS_total" not in body
    w, k = welch.iloc[0], rank.iloc[0]
    agree, other = body.split("Effect size whose interval agrees with the test: ")[1].split(
        "Effect size whose interval is not derived from it: "
    )
    assert f"{w['test']} → {w['effect_size_name']} (" in agree and "df (" not in agree
    assert f"{k['test']} → {k['effect_size_name']} ({k['effect_ci_method']})" in other
    assert bool(w["effect_agrees_with_test"]) and not bool(k["effect_agrees_with_test"])
    # independent truth of agreement: the 90 % interval of ω² excludes 0 exactly when p < 0.05
    assert (w["effect_ci_low"] > 0) == (w["p_value"] < 0.05)
    rows = {
        c[0]: c for c in (ln.strip("|").split("|") for ln in body.splitlines() if "| SN_MP" in ln)
    }
    cells = {k.strip(): [x.strip() for x in v] for k, v in rows.items()}
    assert cells["SN_MP"][-1] == "yes" and cells["SN_MP (ranks)"][-1] == "no"
    assert "(90%)" in cells["SN_MP"][-2]


def test_power_is_stated_for_small_groups_as_simulate_power_gives_it(study):
    _, groups, _, body, pilot = study
    sizes = groups["skeletal_class"].astype(str).value_counts()
    assert sizes.min() < SMALL_GROUP
    [(_title, text)] = [(t, b) for t, b in body.items() if t.startswith("Power of the growth")]
    assert f"fewer than {SMALL_GROUP} patients" in text and "1000 simulated studies" in text
    assert "Monte Carlo 95 % interval" in text
    rows = [ln for ln in text.splitlines() if ln.startswith("| SNB ")]
    assert rows
    for line in rows:
        cells = [c.strip() for c in line.strip("|").split("|")]
        other, ref = cells[1].split(" vs ")
        assert ref == "Class I"
        n = (int(sizes[ref]), int(sizes[other]))
        assert cells[2] == f"{n[0]}, {n[1]}"
        direct = stats.simulate_power(
            pilot, measure="SNB", effect=0.5, n_per_group=n, times=(0, 1), n_sims=1000
        ).iloc[0]
        low, high = direct["power_ci_low"], direct["power_ci_high"]
        assert cells[4] == f"{direct['power']:.2f} [{low:.2f}, {high:.2f}]"


def test_no_power_section_when_every_group_is_large():
    from dentalkit.study.planning import small_group_power

    measures = _cohort(n=12, sessions=2)  # 7, 3 and 2 per class
    classes = ceph.classify(measures, schemes=["skeletal_class"])
    out = growth_by_group(measures, None, default_groups(classes), ceph=("SNB",))
    assert len(small_group_power(out, threshold=2)) == 0
    assert len(small_group_power(out, threshold=50)) > 0


def _run_cli(args: list[str]) -> tuple[int, str]:
    result = CliRunner().invoke(app, args)
    return result.exit_code, result.output


def test_plan_with_components_prints_simulate_power_and_diggles_closed_form():
    comp = {"sd_intercept": 3.0, "sd_slope": 0.4, "correlation": 0.2, "sd_residual": 0.8}
    args = ["plan", "--sd-intercept", "3", "--sd-slope", "0.4", "--correlation", "0.2"]
    args += ["--sd-residual", "0.8", "--effect", "0.5", "--unit", "deg/year"]
    code, out = _run_cli([*args, "--n-per-group", "20", "--n-sims", "800", "--seed", "3"])
    assert code == 0, out
    direct = stats.simulate_power(comp, effect=0.5, n_per_group=20, n_sims=800, seed=3).iloc[0]
    assert f"power: {direct['power']:.3f} (Monte Carlo 95 % CI" in out
    # Diggle et al. (2002) §2.4 by hand: ξ = σ²_slope + σ²_res/Σ(t − t̄)², times 0..3
    xi = 0.4**2 + 0.8**2 / 5.0
    closed = sps.norm.cdf(0.5 / np.sqrt(2 * xi / 20) - sps.norm.ppf(0.975))
    assert f"closed form (Diggle et al. 2002): power {closed:.3f}" in out
    assert "effect: 0.5 deg/year" in out
    code, out = _run_cli([*args, "--power", "0.8", "--n-sims", "400"])
    assert code == 0, out
    direct = stats.simulate_power(comp, effect=0.5, power=0.8, n_sims=400).iloc[0]
    n = direct["n_per_group"][0]
    assert f"patients per group: {n} and {n}" in out
    m = 2 * (sps.norm.ppf(0.975) + sps.norm.ppf(0.8)) ** 2 * xi / 0.25
    assert f"n per group {int(np.ceil(m))}" in out


def test_plan_from_a_pilot_folder_uses_its_growth_tables(study, tmp_path):
    _, _, analyses, _, fit = study
    write_analyses(
        {k: v for k, v in analyses.items() if k.startswith("growth")}, tmp_path / "analyses"
    )
    args = ["plan", str(tmp_path), "--measure", "SN_MP", "--effect", "0.4"]
    code, out = _run_cli([*args, "--n-per-group", "15,18", "--n-sims", "600", "--seed", "1"])
    assert code == 0, out
    direct = stats.simulate_power(
        fit, measure="SN_MP", effect=0.4, n_per_group=(15, 18), n_sims=600, seed=1
    ).iloc[0]
    assert f"power: {direct['power']:.3f} " in out and "patients per group: 15 and 18" in out
    assert "effect: 0.4 deg/year" in out
    code, out = _run_cli(["plan", str(tmp_path), "--effect", "0.4", "--power", "0.8"])
    assert code == 2 and "name the measure to plan for (--measure" in out
    assert "ANB, FMA, SNB, SN_MP" in out and "None" not in out


def test_plan_refuses_what_it_cannot_use(tmp_path):
    code, out = _run_cli(["plan", str(tmp_path), "--effect", "0.5", "--n-per-group", "10"])
    assert code == 2 and "holds no growth tables" in out
    code, out = _run_cli(["plan", "--sd-intercept", "1", "--effect", "0.5", "--power", "0.8"])
    assert code == 2 and "--sd-slope, --sd-residual missing" in out
    code, out = _run_cli(
        ["plan", "--sd-intercept", "1", "--sd-slope", "0.2", "--sd-residual", "1", "--effect", "1"]
    )
    assert code == 2 and "--n-per-group" in out and "--power" in out
