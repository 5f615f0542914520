"""Small-sample inference of stats.growth: Satterthwaite df as lmerTest, Wald z on request.

Expected values come from lmerTest's printout on lme4's sleepstudy data, from exact
balanced-design identities (the t test on per-patient slopes, the paired t test) computed
here with scipy, and from statsmodels' OLS — never from growth itself.
"""

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from dentalkit.errors import InputError
from dentalkit.stats import growth


def _fit(table, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return growth(table, **kw)


def test_sleepstudy_satterthwaite_reproduces_lmertest(sleepstudy):
    """lmerTest, summary(lmer(Reaction ~ Days + (Days | Subject), sleepstudy)): df 17.0 for
    both fixed effects, Days t = 6.771, p = 3.26e-06; its 95 % interval 10.467 ± t(17)·1.546
    = 7.206–13.729 (issue 29 quotes 7.205, the same to 1e-3)."""
    r = _fit(sleepstudy, value="Reaction", per=None, time="Days", unit="Subject")
    fx = r.fixed.set_index("term")
    assert (fx["statistic_name"] == "t").all()
    assert fx.loc["Intercept", "df"] == pytest.approx(17.0, abs=1e-3)
    assert fx.loc["Days", "df"] == pytest.approx(17.0, abs=1e-3)
    days = fx.loc["Days"]
    assert days["statistic"] == pytest.approx(6.771, abs=5e-4)
    assert days["p_value"] == pytest.approx(3.26e-06, rel=5e-3)
    assert days["ci_low"] == pytest.approx(7.205, abs=1e-3)
    assert days["ci_high"] == pytest.approx(13.729, abs=5e-4)
    assert "Satterthwaite" in days["method"]


def test_wald_z_only_on_request(sleepstudy):
    """df_method='wald' gives what dentalkit gave before (issue 29): z 6.771, p 1.27e-11,
    95 % CI 7.438–13.497 — estimate ± 1.96 SE."""
    r = _fit(sleepstudy, value="Reaction", per=None, time="Days", unit="Subject", df_method="wald")
    days = r.fixed.set_index("term").loc["Days"]
    assert days["statistic_name"] == "z" and np.isnan(days["df"])
    assert days["p_value"] == pytest.approx(1.27e-11, rel=5e-3)
    assert (days["ci_low"], days["ci_high"]) == pytest.approx((7.438, 13.497), abs=5e-4)
    assert "Wald z" in days["method"]
    with pytest.raises(InputError, match="df_method"):
        growth(sleepstudy, "Reaction", per=None, time="Days", unit="Subject", df_method="kr")


def test_random_intercept_sleepstudy_df(sleepstudy):
    """Random intercept only, balanced: the within-subject term's df is the classic
    180 − 18 − 1 = 161; lmerTest prints 22.81 for the intercept."""
    r = _fit(
        sleepstudy, value="Reaction", per=None, time="Days", unit="Subject", random_slope=False
    )
    fx = r.fixed.set_index("term")
    assert fx.loc["Days", "df"] == pytest.approx(161.0, abs=1e-4)
    assert fx.loc["Intercept", "df"] == pytest.approx(22.81, abs=5e-3)


def _two_groups(seed: int, n: int = 12):
    rng = np.random.default_rng(seed)
    rows = []
    for i in range(2 * n):
        grp = "b" if i >= n else "a"
        b0, b1 = rng.normal(0, 2), rng.normal(0, 0.5)
        for t in (0.0, 1.0, 2.0, 3.0):
            v = 50 + b0 + (1 + 0.3 * (grp == "b") + b1) * t + rng.normal(0, 0.5)
            rows.append((f"p{i:02d}", grp, t, v))
    return pd.DataFrame(rows, columns=["patient_id", "group", "years", "value"])


@pytest.mark.parametrize("seed", [0, 1])
def test_balanced_two_groups_equal_the_t_test_on_patient_slopes(seed):
    """Balanced and complete (every patient at the same 4 times), random intercept and
    slope: the group × time test is exactly the two-sample t test of the per-patient
    least-squares slopes (the summary-statistics analysis), df = patients − 2."""
    t = _two_groups(seed)
    r = _fit(t, per=None, group="group")
    row = r.fixed.set_index("term").loc["years:group[T.b]"]
    slopes = t.groupby("patient_id").apply(lambda s: np.polyfit(s["years"], s["value"], 1)[0])
    grp = t.groupby("patient_id")["group"].first()
    ref = stats.ttest_ind(slopes[grp == "b"], slopes[grp == "a"])
    assert not r.models.iloc[0]["singular"]
    assert row["statistic"] == pytest.approx(ref.statistic, rel=1e-5)
    assert row["df"] == pytest.approx(22.0, abs=1e-3)
    assert row["p_value"] == pytest.approx(ref.pvalue, rel=1e-4)
    ci = ref.confidence_interval(0.95)
    assert (row["ci_low"], row["ci_high"]) == pytest.approx((ci.low, ci.high), rel=1e-4)


def test_two_sessions_equal_the_paired_t_test(two_sessions):
    """Two sessions, random intercept: the rate's t, df and p are the paired t test's."""
    n = 15
    t, base, later = two_sessions(n)
    row = _fit(t).fixed.set_index("term").loc["years"]
    ref = stats.ttest_rel(later, base)
    assert row["df"] == pytest.approx(n - 1, abs=1e-3)
    assert row["p_value"] == pytest.approx(ref.pvalue, rel=1e-4)


def test_least_squares_limit_has_the_residual_df(no_patient_variance):
    """No between-patient variance: the fixed effects are OLS and so are their t tests —
    df = rows − fixed effects, p-values as statsmodels' OLS."""
    sm = pytest.importorskip("statsmodels.api")
    table, y, X = no_patient_variance
    r = _fit(table, per=None, group="group")
    ols = sm.OLS(y, X).fit()
    np.testing.assert_allclose(r.fixed["df"], ols.df_resid, rtol=1e-6)
    np.testing.assert_allclose(r.fixed["p_value"][1:], ols.pvalues[1:], rtol=1e-5)


def test_band_uses_the_contrast_df(sleepstudy):
    """The band at Days = 0 is the intercept's interval (the same contrast, the same t)."""
    r = _fit(sleepstudy, value="Reaction", per=None, time="Days", unit="Subject")
    band = r.predict((), [0.0])
    fx = r.fixed.set_index("term").loc["Intercept"]
    assert band["ci_low"].item() == pytest.approx(fx["ci_low"], rel=1e-9)
    assert band["ci_high"].item() == pytest.approx(fx["ci_high"], rel=1e-9)
    wald = _fit(
        sleepstudy, value="Reaction", per=None, time="Days", unit="Subject", df_method="wald"
    )
    z = wald.predict((), [0.0])
    assert z["ci_high"].item() - z["ci_low"].item() == pytest.approx(2 * 1.959964 * fx["se"])
