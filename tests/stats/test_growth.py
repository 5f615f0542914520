"""Growth models (stats.growth): a published fit, closed forms, a reference path, bad input."""

import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dentalkit.errors import InputError
from dentalkit.stats import growth

DATA = Path(__file__).resolve().parents[1] / "data"


def test_sleepstudy_reproduces_lme4_reml(sleepstudy):
    """lmer(Reaction ~ Days + (Days | Subject), sleepstudy) as printed by lme4
    (Bates et al. 2015, J Stat Softw 67(1), section 3): fixed effects 251.405 (SE 6.825)
    and 10.467 (SE 1.546); random SDs 24.741 and 5.922, correlation 0.066, residual SD
    25.592; REML criterion 1743.6."""
    r = growth(sleepstudy, "Reaction", per=None, time="Days", unit="Subject")
    fixed = r.fixed.set_index("term")
    assert list(fixed.index) == ["Intercept", "Days"]
    assert fixed.loc["Intercept", "estimate"] == pytest.approx(251.405, abs=5e-4)
    assert fixed.loc["Days", "estimate"] == pytest.approx(10.467, abs=5e-4)
    assert fixed.loc["Intercept", "se"] == pytest.approx(6.825, abs=5e-4)
    assert fixed.loc["Days", "se"] == pytest.approx(1.546, abs=5e-4)
    var = r.variance.set_index("component")["estimate"]
    # lme4 prints variance 612.10 (SD 24.741); the REML surface is flat along it: our fit
    # (24.7405) has a REML criterion 6e-8 *below* statsmodels' default fit (24.7406),
    # so this one is checked to the last printed digit ± 1.
    assert var["Subject: intercept"] == pytest.approx(24.741, abs=1e-3)
    assert var["Subject: slope on Days"] == pytest.approx(5.922, abs=5e-4)
    assert var["Subject: intercept ~ slope"] == pytest.approx(0.066, abs=5e-4)
    assert var["residual"] == pytest.approx(25.592, abs=5e-4)
    model = r.models.iloc[0]
    assert -2 * model["log_likelihood"] == pytest.approx(1743.6, abs=0.05)
    assert model["status"] == "ok" and not model["singular"]
    assert (model["n_units"], model["n_rows"]) == (18, 180)
    assert model["random_effects"].startswith("intercept + slope")
    assert model["formula"] == "Reaction ~ 1 + Days + (1 + Days | Subject)"


def test_two_sessions_random_intercept_equals_paired_differences(two_sessions):
    """Balanced, two sessions a year apart, random intercept (compound symmetry): the
    REML rate is the mean within-patient difference and its SE sd(d)/√n — the paired t
    analysis (scipy) — while the patient, not the row, is counted."""
    n = 25
    t, base, later = two_sessions(n)
    r = growth(t)
    row = r.fixed.set_index("term").loc["years"]
    d = later - base
    ref = stats.ttest_rel(later, base)
    assert row["estimate"] == pytest.approx(d.mean(), abs=1e-6)
    assert row["se"] == pytest.approx(d.std(ddof=1) / np.sqrt(n), rel=1e-4)
    assert row["statistic"] == pytest.approx(ref.statistic, rel=1e-4)
    assert (row["n_units"], row["n_rows"]) == (n, 2 * n)
    model = r.models.iloc[0]
    assert model["random_effects"] == "intercept | patient_id"
    assert "random slope not identifiable" in model["note"]
    assert model["sessions_per_unit_min"] == model["sessions_per_unit_max"] == 2


def _cohort(n: int, rng: np.random.Generator, measures=("A", "B")):
    """Three sessions, two groups (group b grows 0.5/year faster), a sex effect."""
    ids = [f"p{i:03d}" for i in range(n)]
    grp = np.where(np.arange(n) % 3 == 0, "b", "a")
    sex = np.where(np.arange(n) % 2 == 0, "F", "M")
    rows = []
    for m_i, m in enumerate(measures):
        b0 = rng.normal(0, 2, n)
        b1 = rng.normal(0, 0.4, n)
        for when in ("2020-01-01", "2021-01-01", "2022-01-01"):
            yr = (pd.Timestamp(when) - pd.Timestamp("2020-01-01")).days / 365.25
            v = (
                50 + 10 * m_i + b0 + (1.0 + 0.5 * (grp == "b") + b1) * yr
                + 1.5 * (sex == "M") + rng.normal(0, 0.5, n)
            )  # fmt: skip
            rows.append(
                pd.DataFrame(
                    {
                        "patient_id": ids,
                        "timestamp": when,
                        "session_time": pd.Timestamp(when, tz="UTC"),
                        "measure": m,
                        "value": v,
                        "unit": "mm",
                    }
                )
            )
    table = pd.concat(rows, ignore_index=True)
    patients = pd.DataFrame({"patient_id": ids, "group": grp, "sex": sex})
    return table, patients


def test_group_by_time_matches_statsmodels_formula_path():
    """The array path agrees with statsmodels' own formula interface on the same model."""
    smf = pytest.importorskip("statsmodels.formula.api")
    rng = np.random.default_rng(11)
    table, patients = _cohort(60, rng, measures=("A",))
    r = growth(table, group="group", covariates="sex", patients=patients)
    ours = r.fixed.set_index("term")["estimate"]
    assert list(ours.index) == [
        "Intercept", "years", "group[T.b]", "years:group[T.b]", "sex[T.M]"
    ]  # fmt: skip
    d = table.merge(patients, on="patient_id")
    d["years"] = (d["session_time"] - d["session_time"].min()).dt.days / 365.25
    ref = smf.mixedlm(
        "value ~ years * group + sex", d, groups=d["patient_id"], re_formula="~years"
    ).fit(reml=True)
    names = {
        "Intercept": "Intercept", "years": "years", "group[T.b]": "group[T.b]",
        "years:group[T.b]": "years:group[T.b]", "sex[T.M]": "sex[T.M]",
    }  # fmt: skip
    for ours_name, ref_name in names.items():
        assert ours[ours_name] == pytest.approx(ref.fe_params[ref_name], abs=1e-4)
    se = r.fixed.set_index("term")["se"]
    assert se["years:group[T.b]"] == pytest.approx(ref.bse_fe["years:group[T.b]"], rel=1e-3)
    # the band of predict() at time 0 in the reference group is the intercept's CI
    band = r.predict("A", [0.0], group="a")
    assert r.models.iloc[0]["random_effects"].startswith("intercept + slope")
    fx = r.fixed.set_index("term").loc["years:group[T.b]"]
    assert fx["ci_low"] < 0.5 < fx["ci_high"]
    assert band["estimate"].iloc[0] == pytest.approx(
        ours["Intercept"] + ours["sex[T.M]"] * 0.5, abs=1e-9
    )


def test_holm_across_measures_per_term():
    rng = np.random.default_rng(5)
    table, patients = _cohort(30, rng, measures=("A", "B", "C"))
    r = growth(table, group="group", patients=patients, correction="holm", random_slope=False)
    rate = r.fixed[r.fixed["term"] == "years:group[T.b]"]
    p = rate["p_value"].to_numpy()
    order = np.argsort(p)
    m = len(p)
    holm = np.empty(m)
    running = 0.0
    for rank, i in enumerate(order):  # Holm (1979) step-down, by hand
        running = max(running, min(1.0, (m - rank) * p[i]))
        holm[i] = running
    np.testing.assert_allclose(rate["p_adjusted"].to_numpy(), holm, rtol=1e-12)
    assert rate["correction"].iloc[0] == "holm across 3 measure(s), per term"
    assert r.fixed.loc[r.fixed["term"] == "Intercept", "p_adjusted"].isna().all()


# ----------------------------------------------------------------------- bad input


@pytest.fixture(scope="module")
def small():
    return _cohort(12, np.random.default_rng(2))


def test_unknown_unit_column(small):
    table, _ = small
    with pytest.raises(InputError, match=r"unit column 'subject'.*pass unit="):
        growth(table, unit="subject")


def test_unknown_time_column(small):
    table, _ = small
    with pytest.raises(InputError, match="time column 'visit_age' is not in the table"):
        growth(table, time="visit_age")


def test_non_numeric_time(small):
    table, _ = small
    t = table.assign(visit=np.where(table["timestamp"] == "2020-01-01", "baseline", "1y"))
    with pytest.raises(InputError, match=r"time column 'visit' is .*not numeric.*'baseline'"):
        growth(t, time="visit")
    with pytest.raises(InputError, match="holds date-times; use time='years'"):
        growth(table, time="session_time")


def test_years_without_session_time(small):
    table, _ = small
    with pytest.raises(InputError, match="needs a session_time column"):
        growth(table.drop(columns="session_time"))


def test_one_session_per_patient_is_reported_and_others_fitted(small):
    table, _ = small
    only_first = table[(table["measure"] == "A") & (table["timestamp"] == "2020-01-01")]
    t = pd.concat([only_first, table[table["measure"] == "B"]], ignore_index=True)
    r = growth(t)
    models = r.models.set_index("measure")
    assert models.loc["A", "status"] == "not fitted"
    assert "no unit has two distinct times" in models.loc["A", "note"]
    assert "slope not estimable" in models.loc["A", "note"]
    assert models.loc["B", "status"] == "ok"
    assert set(r.fixed["measure"]) == {"B"}


def test_group_with_one_patient(small):
    table, patients = small
    lonely = patients.assign(group=np.where(patients["patient_id"] == "p001", "c", "a"))
    r = growth(table, group="group", patients=lonely)
    note = r.models.iloc[0]["note"]
    assert (r.models["status"] == "not fitted").all()
    assert "level(s) ['c'] have a single patient_id" in note


def test_group_changing_within_patient_is_refused(small):
    table, _ = small
    t = table.assign(group=np.where(table["timestamp"] == "2022-01-01", "b", "a"))
    with pytest.raises(InputError, match="group changes within 12 patient_id"):
        growth(t, group="group")


def test_unknown_group_and_covariate(small):
    table, patients = small
    with pytest.raises(InputError, match=r"group column\(s\) \['klass'\]"):
        growth(table, group="klass", patients=patients)
    with pytest.raises(InputError, match=r"covariate column\(s\) \['age0'\]"):
        growth(table, covariates="age0")


def test_mixed_units_and_degenerate_fit_reported_others_fitted():
    table, _ = _cohort(40, np.random.default_rng(4))
    b = table[table["measure"] == "B"].copy()
    b.loc[b.index[:3], "unit"] = "px"
    const = table[table["measure"] == "A"].assign(measure="C", value=5.0)
    t = pd.concat([table[table["measure"] == "A"], b, const], ignore_index=True)
    r = growth(t)
    models = r.models.set_index("measure")
    assert models.loc["A", "status"] == "ok"
    assert models.loc["B", "status"] == "not fitted"
    assert "mix units (mm, px)" in models.loc["B", "note"]
    assert models.loc["C", "status"] == "not fitted"
    assert "the same in every row" in models.loc["C", "note"]
    assert set(r.fixed["measure"]) == {"A"}


def test_non_numeric_value_and_bad_options(small):
    table, _ = small
    with pytest.raises(InputError, match="value column 'measure' is"):
        growth(table, "measure", per=None)
    with pytest.raises(InputError, match="random_slope="):
        growth(table, random_slope="yes")


def test_converges_where_statsmodels_default_does_not(small):
    """12 patients, small random-slope SD: statsmodels' default optimisers give up on A
    (a direct MixedLM call); growth's Powell sweep + BFGS converges to a likelihood at
    least as high."""
    mixed = pytest.importorskip("statsmodels.regression.mixed_linear_model")
    table, _ = small
    r = growth(table)
    models = r.models.set_index("measure")
    sub = table[table["measure"] == "A"]
    years = (sub["session_time"] - sub["session_time"].min()).dt.days / 365.25
    X = np.column_stack([np.ones(len(sub)), years])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        direct = mixed.MixedLM(sub["value"], X, sub["patient_id"], exog_re=X).fit()
    assert not direct.converged
    assert models.loc["A", "status"] == "ok"
    assert models.loc["A", "log_likelihood"] >= direct.llf - 1e-6


def test_non_convergence_is_reported_in_its_row_and_others_fitted(small, monkeypatch):
    """A fit the optimiser gives up on is reported in its row (estimates kept, flagged);
    the other measures are fitted as usual."""
    from dentalkit.stats import _growth_fit as _growth

    real = _growth.fit_mixedlm
    calls = []

    class GaveUp:
        def __init__(self, res):
            self._res = res
            self.converged = False

        def __getattr__(self, name):
            return getattr(self._res, name)

    def first_gives_up(model, reml=True):
        calls.append(1)
        res = real(model, reml)
        return GaveUp(res) if len(calls) == 1 else res

    monkeypatch.setattr(_growth, "fit_mixedlm", first_gives_up)
    table, _ = small
    r = growth(table, random_slope=True)  # forced: no fallback to a random intercept
    models = r.models.set_index("measure")
    assert models.loc["A", "status"] == "not converged"
    assert not models.loc["A", "converged"]
    assert "did not converge: estimates are not trustworthy" in models.loc["A", "note"]
    assert models.loc["B", "status"] == "ok"
    assert set(r.fixed["measure"]) == {"A", "B"}


def test_docstring_example():
    import doctest

    import dentalkit.stats._growth as module

    result = doctest.testmod(module, optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.attempted > 0
    assert result.failed == 0


def test_bands_are_predict_over_the_observed_range():
    rng = np.random.default_rng(8)
    table, patients = _cohort(24, rng, measures=("A",))
    r = growth(table, group="group", patients=patients, random_slope=False)
    bands = r.bands(points=3)
    assert list(bands.columns) == ["measure", "group", "time", "estimate", "ci_low", "ci_high"]
    assert sorted(set(bands["group"])) == ["a", "b"]
    b = bands[bands["group"] == "b"]
    fx = r.fixed.set_index("term")["estimate"]
    # group b at time t: intercept + b-shift + (rate + b-extra)·t
    t = b["time"].to_numpy()
    expected = fx["Intercept"] + fx["group[T.b]"] + (fx["years"] + fx["years:group[T.b]"]) * t
    np.testing.assert_allclose(b["estimate"].to_numpy(), expected, rtol=1e-12)
    assert t[0] == 0.0 and t[-1] == pytest.approx(731 / 365.25)
    assert (b["ci_low"] < b["estimate"]).all() and (b["estimate"] < b["ci_high"]).all()


def test_zero_random_effect_variance_gives_least_squares_fixed_effects(no_patient_variance):
    """No between-patient variation (REML intercept variance ~0): the fixed effects are
    those of OLS (statsmodels' MixedLM may return between-patient terms as 0 here,
    statsmodels issue #10239); the fit is flagged singular."""
    sm = pytest.importorskip("statsmodels.api")
    table, y, X = no_patient_variance
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = growth(table, per=None, group="group")
    ols = sm.OLS(y, X).fit()
    np.testing.assert_allclose(r.fixed["estimate"], ols.params, rtol=1e-9)
    np.testing.assert_allclose(r.fixed["se"], ols.bse, rtol=1e-9)
    model = r.models.iloc[0]
    assert model["singular"] and "least squares" in model["note"]
    assert r.variance.set_index("component").loc["residual", "estimate"] == pytest.approx(
        np.sqrt(ols.scale)
    )


def test_age_from_birth_date_and_origin():
    """time='age' is (session_time − birth_date) in Julian years (checked against a column
    computed here by hand); origin shifts the intercept to the value at that age."""
    table, patients = _cohort(16, np.random.default_rng(9), measures=("A",))
    births = pd.to_datetime("2010-06-15") + pd.to_timedelta(np.arange(16) * 37, unit="D")
    patients = patients.assign(birth_date=births)
    r = growth(table, time="age", patients=patients, random_slope=False)
    hand = table.merge(patients, on="patient_id")
    st = hand["session_time"].dt.tz_localize(None)
    hand["my_age"] = (st - hand["birth_date"]).dt.days / 365.25
    ref = growth(hand, time="my_age", random_slope=False)
    np.testing.assert_allclose(r.fixed["estimate"], ref.fixed["estimate"], rtol=1e-6)
    assert list(r.fixed["term"]) == ["Intercept", "age"]
    at12 = growth(table, time="age", patients=patients, random_slope=False, origin=12)
    fx = r.fixed.set_index("term")["estimate"]
    fx12 = at12.fixed.set_index("term")["estimate"]
    assert fx12["Intercept"] == pytest.approx(fx["Intercept"] + 12 * fx["age"], rel=1e-6)
    assert fx12["age"] == pytest.approx(fx["age"], rel=1e-6)
    assert "minus 12" in at12.models.iloc[0]["time"]


def test_random_slope_that_breaks_down_falls_back_to_intercept_only():
    """Regression: on this sandbox cohort a random-slope fit ended at an exactly singular
    covariance with an infinite REML likelihood and SEs of 1e7, reported as converged.
    growth refuses such a fit and, with random_slope='auto', falls back to a random
    intercept, saying so; the rate is then sane (true rate −0.25 °/year)."""
    t = pd.read_csv(DATA / "growth_sn_mp_cohort42.csv", comment="#")
    t["session_time"] = pd.to_datetime(t["timestamp"], utc=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        r = growth(t)
    model = r.models.iloc[0]
    rate = r.fixed.set_index("term").loc["years"]
    assert model["status"] == "ok" and np.isfinite(model["log_likelihood"])
    assert rate["se"] < 0.5 and rate["ci_low"] < -0.25 < rate["ci_high"]
    if "random slope did not converge" in (model["note"] or ""):
        assert model["random_effects"] == "intercept | patient_id"


def test_fallback_to_intercept_only_is_said(small, monkeypatch):
    from dentalkit.stats import _growth_fit as _growth

    real = _growth.fit_mixedlm

    class Broken:
        def __init__(self, res):
            self._res = res
            self.llf = float("inf")

        def __getattr__(self, name):
            return getattr(self._res, name)

    def slope_breaks(model, reml=True):
        res = real(model, reml)
        return Broken(res) if model.k_re == 2 else res

    monkeypatch.setattr(_growth, "fit_mixedlm", slope_breaks)
    table, _ = small
    r = growth(table[table["measure"] == "B"])
    model = r.models.iloc[0]
    assert model["status"] == "ok"
    assert model["random_effects"] == "intercept | patient_id"
    assert "random slope did not converge" in model["note"]
    assert model["formula"] == "value ~ 1 + years + (1 | patient_id)"
    assert list(r.variance["kind"]) == ["sd", "sd"]


def test_random_slope_fit_that_raises_falls_back_and_says_so(small, monkeypatch):
    """Issue 29: when the random-slope fit raises (statsmodels inverts a singular Hessian:
    numpy LinAlgError), random_slope='auto' used to report no estimate at all although
    the intercept-only model fits. Now it falls back and the note says why."""
    from dentalkit.stats import _growth_fit as _growth

    real = _growth.fit_mixedlm

    def slope_raises(model, reml=True):
        if model.k_re == 2:
            raise np.linalg.LinAlgError("Singular matrix")
        return real(model, reml)

    monkeypatch.setattr(_growth, "fit_mixedlm", slope_raises)
    table, _ = small
    r = growth(table[table["measure"] == "B"])
    model = r.models.iloc[0]
    assert model["status"] == "ok" and model["random_effects"] == "intercept | patient_id"
    assert "random slope could not be fitted (LinAlgError: Singular matrix)" in model["note"]
    assert "random intercept only" in model["note"]
    rate = r.fixed.set_index("term").loc["years"]
    assert np.isfinite(rate["estimate"]) and rate["df"] > 0
    # random_slope=True asks for the slope: no fallback, the measure's row says it failed
    forced = growth(table[table["measure"] == "B"], random_slope=True).models.iloc[0]
    assert forced["status"] == "failed" and "Singular matrix" in forced["note"]
