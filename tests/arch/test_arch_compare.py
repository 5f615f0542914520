"""arch.compare is stats.compare on the right long table: checked against scipy directly."""

import numpy as np
import pandas as pd
import pytest
from scipy import stats as sps

from dentalkit import arch
from dentalkit.errors import InputError


def _fit_table(rng):
    rows = []
    for i in range(40):
        group = "A" if i < 20 else "B"
        for a_arch in ("up", "lo"):
            a = rng.normal(30 if group == "A" else 34, 2) + (5 if a_arch == "up" else 0)
            rows.append({"patient_id": f"P{i}", "timestamp": "t0", "arch": a_arch, "model": "catenary",
                         "status": "ok", "a": a, "depth": np.nan, "group": group})  # fmt: skip
            rows.append({"patient_id": f"P{i}", "timestamp": "t0", "arch": a_arch, "model": "beta",
                         "status": "ok", "a": np.nan, "depth": 25.0 + i % 3, "group": group})  # fmt: skip
    rows.append({"patient_id": "PX", "timestamp": "t0", "arch": "up", "model": "catenary",
                 "status": "not_converged", "a": 1e6, "depth": np.nan, "group": "A"})  # fmt: skip
    return pd.DataFrame(rows)


def test_fit_parameters_compared_per_arch_like_a_direct_welch_test():
    table = _fit_table(np.random.default_rng(1))
    out = arch.compare(table, "group", model="catenary", test="welch_t")
    assert set(out["arch"]) == {"up", "lo"}
    assert set(out["parameter"]) == {"a"}
    for arch_name in ("up", "lo"):
        ok = table[(table.model == "catenary") & (table.status == "ok") & (table.arch == arch_name)]
        expected = sps.ttest_ind(
            ok.loc[ok.group == "A", "a"], ok.loc[ok.group == "B", "a"], equal_var=False
        )
        row = out[out["arch"] == arch_name].iloc[0]
        assert row["p_value"] == pytest.approx(expected.pvalue, rel=1e-9)
    # Holm over the two arches: the larger p is max(p_i * 1, running max), the smaller p * 2.
    ps = np.sort(out["p_value"].to_numpy())
    adj = np.sort(out["p_adjusted"].to_numpy())
    assert adj[0] == pytest.approx(min(1.0, 2 * ps[0]))


def test_measures_tables_and_input_errors():
    rng = np.random.default_rng(2)
    m = pd.DataFrame(
        {
            "patient_id": [f"P{i}" for i in range(30)],
            "arch": "up",
            "measure": "intermolar_width",
            "value": np.r_[rng.normal(50, 2, 15), rng.normal(53, 2, 15)],
            "unit": "mm",
            "status": "ok",
            "group": ["A"] * 15 + ["B"] * 15,
        }
    )
    out = arch.compare(m, "group", test="mann_whitney")
    expected = sps.mannwhitneyu(m.value[:15], m.value[15:], alternative="two-sided")
    assert out.iloc[0]["p_value"] == pytest.approx(expected.pvalue, rel=1e-9)
    with pytest.raises(InputError, match="several units"):
        arch.compare(pd.concat([m, m.assign(unit="px")]), "group")
    with pytest.raises(InputError, match="choose one with model="):
        arch.compare(_fit_table(rng), "group")
    with pytest.raises(InputError, match="no column"):
        arch.compare(m, "sex")
