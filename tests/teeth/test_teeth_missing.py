"""teeth.missing: prevalence by FDI, type, arch and pattern on a hand-built cohort."""

from __future__ import annotations

import pandas as pd
import pytest
import shapely
from statsmodels.stats.proportion import proportion_confint

from dentalkit.errors import InputError
from dentalkit.teeth import missing
from tests.teeth.factory import DIGIT, QUADRANT, one_row, teeth_table, tooth_row

ARCHES = {"up": ("rgt", "lft"), "lo": ("lft", "rgt")}


def _key(fdi: int) -> str:
    q, d = divmod(fdi, 10)
    side, arch = next(k for k, v in QUADRANT.items() if v == q)
    kind = next(k for k, v in DIGIT.items() if v == d)
    return f"{kind}_{side}_{arch}"


def _dentition(pid, source, absent=(), teeth=None, timestamp="2024-01-01"):
    fdis = teeth or [q * 10 + d for q in (1, 2, 3, 4) for d in range(1, 9)]
    rows = []
    for f in fdis:
        gone = f in absent
        g = None if gone else shapely.box(0, 0, 1, 1)
        rows.append(tooth_row(_key(f), g, patient_id=pid, source=source, timestamp=timestamp))
    return rows


FRONTAL = [q * 10 + d for q in (1, 2, 3, 4) for d in (1, 2, 3, 4)]


@pytest.fixture
def cohort():
    rows = []
    rows += _dentition("A", "pano", absent={12, 22, 18})
    rows += _dentition("B", "pano", absent={35})
    rows += _dentition("C", "frontal", absent={12}, teeth=FRONTAL)
    # the frontal segmentation also returns molar records flagged missing: not assessable
    rows += _dentition("C", "frontal", absent={16, 26}, teeth=[16, 26])
    rows += _dentition("D", "pano")
    rows += _dentition("D", "frontal", absent={22}, teeth=FRONTAL)  # disagrees with the pano
    rows += _dentition("E", "pano", timestamp="2024-01-01")
    rows += _dentition("E", "pano", absent={11}, timestamp="2025-06-01")
    return teeth_table(rows)


def test_by_fdi_counts_and_wilson_interval(cohort):
    res = missing(cohort)
    r12 = one_row(res.by_fdi, fdi=12)
    assert (r12["n_assessed"], r12["n_affected"]) == (5, 2)  # A, C missing of A-E
    assert r12["prevalence"] == pytest.approx(0.4)
    lo, hi = proportion_confint(2, 5, alpha=0.05, method="wilson")
    assert (r12["ci_low"], r12["ci_high"]) == pytest.approx((lo, hi))
    assert r12["tooth_type"] == "i2"
    assert r12["arch"] == "up"
    assert r12["unit_of_analysis"] == "patient"
    # frontal photographs do not assess molars: C's molar records are excluded
    r16 = one_row(res.by_fdi, fdi=16)
    assert (r16["n_assessed"], r16["n_affected"]) == (4, 0)
    # D: the pano shows 22, the frontal photo says missing → present, flagged discordant
    r22 = one_row(res.by_fdi, fdi=22)
    assert (r22["n_assessed"], r22["n_affected"]) == (5, 1)
    d22 = one_row(res.status, patient_id="D", fdi=22)
    assert bool(d22["discordant"])
    assert not bool(d22["missing"])
    assert d22["n_sources"] == 2
    # E's first session is used by default: 11 present
    assert one_row(res.by_fdi, fdi=11)["n_affected"] == 0
    ex = res.excluded.set_index(["source", "reason"])["n_rows"]
    assert ex[("frontal", "source does not show this tooth type")] == 2


def test_patterns_require_every_tooth_of_the_pattern_assessed(cohort):
    p = missing(cohort).patterns.set_index("pattern")
    assert tuple(p.loc["upper_lateral_incisor", ["n_assessed", "n_affected"]]) == (5, 2)
    assert tuple(p.loc["upper_lateral_incisors_bilateral", ["n_assessed", "n_affected"]]) == (5, 1)
    # C (frontal only) is not assessed for the whole dentition
    assert tuple(p.loc["any_excl_m3", ["n_assessed", "n_affected"]]) == (4, 2)
    assert tuple(p.loc["oligodontia", ["n_assessed", "n_affected"]]) == (4, 0)
    assert tuple(p.loc["lower_second_premolar", ["n_assessed", "n_affected"]]) == (4, 1)
    assert tuple(p.loc["third_molar", ["n_assessed", "n_affected"]]) == (4, 1)
    lo, hi = proportion_confint(1, 4, method="wilson")
    assert (p.loc["third_molar", "ci_low"], p.loc["third_molar", "ci_high"]) == pytest.approx(
        (lo, hi)
    )


def test_by_type_and_by_arch(cohort):
    res = missing(cohort)
    i2 = one_row(res.by_type, tooth_type="i2", arch="up")
    assert (i2["n_assessed"], i2["n_affected"]) == (5, 2)
    assert (i2["n_teeth_assessed"], i2["n_teeth_missing"]) == (10, 3)
    m1 = one_row(res.by_type, tooth_type="m1", arch="up")
    assert (m1["n_assessed"], m1["n_affected"], m1["n_teeth_assessed"]) == (4, 0, 8)
    up = one_row(res.by_arch, arch="up")
    lo = one_row(res.by_arch, arch="lo")
    assert (up["n_assessed"], up["n_affected"]) == (4, 1)  # A (third molar 18 excluded)
    assert (lo["n_assessed"], lo["n_affected"]) == (4, 1)  # B


def test_per_patient_categories(cohort):
    pp = missing(cohort).per_patient.set_index("patient_id")
    # a list of FDI numbers, ascending (before issue 23 the text "12,18,22")
    assert pp.loc["A", "missing_fdi"] == [12, 18, 22]
    assert pp.loc["A", "n_missing_excl_m3"] == 2
    assert pp.loc["A", "n_missing_m3"] == 1
    assert pp.loc["A", "category"] == "hypodontia"
    assert pp.loc["B", "category"] == "hypodontia"
    assert pp.loc["C", "category"] == "incomplete"
    assert not pp.loc["C", "complete_excl_m3"]
    assert pp.loc["D", "category"] == "none"
    assert pp.loc["D", "missing_fdi"] == []
    assert pp.loc["A", "n_assessed"] == 32


def test_oligodontia_threshold_is_six_excluding_third_molars():
    rows = _dentition("F", "pano", absent={12, 22, 15, 25, 35, 45, 18, 28})  # 6 + two m3
    rows += _dentition("G", "pano", absent={12, 22, 15, 25, 35, 18, 28, 38, 48})  # 5 + four m3
    res = missing(teeth_table(rows))
    pp = res.per_patient.set_index("patient_id")
    assert pp.loc["F", "category"] == "oligodontia"
    assert pp.loc["G", "category"] == "hypodontia"
    olig = one_row(res.patterns, pattern="oligodontia")
    assert (olig["n_assessed"], olig["n_affected"]) == (2, 1)


def test_sessions_first_last_all(cohort):
    last = missing(cohort, session="last")
    assert one_row(last.by_fdi, fdi=11)["n_affected"] == 1
    every = missing(cohort, session="all")
    r11 = one_row(every.by_fdi, fdi=11)
    assert (r11["n_assessed"], r11["n_affected"]) == (6, 1)
    assert r11["unit_of_analysis"] == "session"
    # sessions of one patient are not independent: the interval is clustered on the patient
    from tests.stats.clustered_ci import clustered_wilson

    s11 = every.status[every.status["fdi"] == 11]
    y = s11["missing"].to_numpy(dtype=float)
    _, lo, hi = clustered_wilson(y, pd.factorize(s11["patient_id"])[0])
    assert (r11["ci_low"], r11["ci_high"]) == pytest.approx((lo, hi))
    assert "clustered on patient_id" in r11["ci_method"]
    any_set = one_row(every.patterns, pattern="any_excl_m3")
    assert "clustered on patient_id" in any_set["ci_method"]
    assert one_row(last.by_fdi, fdi=11)["ci_method"].startswith("Wilson")


def test_groups_and_by_source(cohort):
    groups = pd.DataFrame({"patient_id": list("ABCDE"), "sex": list("FFMMM")})
    res = missing(cohort, by="sex", groups=groups)
    f12 = one_row(res.by_fdi, sex="F", fdi=12)
    m12 = one_row(res.by_fdi, sex="M", fdi=12)
    assert (f12["n_assessed"], f12["n_affected"]) == (2, 1)
    assert (m12["n_assessed"], m12["n_affected"]) == (3, 1)
    pat = one_row(res.patterns, sex="F", pattern="any_excl_m3")
    assert (pat["n_assessed"], pat["n_affected"]) == (2, 2)
    per_source = missing(cohort, by="source")
    assert tuple(
        one_row(per_source.by_fdi, source="pano", fdi=22)[["n_assessed", "n_affected"]]
    ) == (
        4,
        1,
    )
    assert tuple(
        one_row(per_source.by_fdi, source="frontal", fdi=22)[["n_assessed", "n_affected"]]
    ) == (
        2,
        1,
    )
    only_pano = missing(cohort, sources=["pano"])
    assert one_row(only_pano.by_fdi, fdi=12)["n_assessed"] == 4


def test_coverage_can_be_replaced(cohort):
    wide = {
        "pano": ["i1", "i2", "c", "p1", "p2", "m1", "m2", "m3"],
        "frontal": ["i1", "i2", "c", "p1", "p2", "m1"],
    }
    res = missing(cohort, coverage=wide)
    r16 = one_row(res.by_fdi, fdi=16)
    assert (r16["n_assessed"], r16["n_affected"]) == (5, 1)  # C's frontal "missing" 16 now counts
    with pytest.raises(InputError, match="unknown tooth types"):
        missing(cohort, coverage={"pano": ["x9"]})


def test_missing_bad_input(cohort):
    with pytest.raises(InputError, match="fdi"):
        missing(cohort.drop(columns="fdi"))
    with pytest.raises(InputError, match="sources"):
        missing(cohort, sources=["ceph"])
    with pytest.raises(InputError, match="group column"):
        missing(cohort, by="sex")
    with pytest.raises(InputError, match="twice"):
        missing(pd.concat([cohort, cohort.iloc[:1]]))
    bad = cohort.copy()
    bad["missing"] = bad["missing"].astype("boolean")
    bad.loc[3, "missing"] = pd.NA
    with pytest.raises(InputError, match="nulls at rows"):
        missing(bad)


def test_unknown_tooth_prefix_is_excluded_and_counted():
    rows = _dentition("A", "pano", teeth=[11, 21])
    rows.append(tooth_row("d1_rgt_up", None, patient_id="A", source="pano"))
    res = missing(teeth_table(rows))
    assert res.excluded["reason"].tolist() == ["no FDI number (unknown tooth type)"]
    assert res.excluded["n_rows"].tolist() == [1]
    assert set(res.status["fdi"]) == {11, 21}
