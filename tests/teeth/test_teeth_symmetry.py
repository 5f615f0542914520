"""teeth.symmetry: pair ratios and differences, summaries checked against scipy."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import shapely
from scipy import stats

from dentalkit.errors import InputError
from dentalkit.teeth import measure, symmetry
from tests.teeth.factory import rect, teeth_table, tooth_row


def _mirror(g, x0):
    return shapely.affinity.scale(g, -1, 1, origin=(x0, 0))


def test_mirrored_arch_gives_ratio_one_and_zero_difference():
    # Right-side teeth drawn left of x = 0; the left side is their mirror image.
    shapes = {
        "i1": shapely.Polygon([(-9, 0), (-1, 0), (-2, 11), (-8, 10)]),
        "i2": shapely.Polygon([(-16, 1), (-10, 0), (-10.5, 9), (-15, 9.5)]),
        "c": shapely.Point(-21, 4).buffer(4, 16),
    }
    rows = []
    for kind, g in shapes.items():
        rows.append(tooth_row(f"{kind}_rgt_up", g, source="frontal"))
        rows.append(tooth_row(f"{kind}_lft_up", _mirror(g, 0), source="frontal"))
    result = symmetry(measure(teeth_table(rows)), "area")
    np.testing.assert_allclose(result.pairs["ratio"], 1.0, rtol=1e-12)
    np.testing.assert_allclose(result.pairs["difference"], 0.0, atol=1e-9)
    assert result.per_patient["gm_ratio"].iloc[0] == pytest.approx(1.0)
    for w in ("md_width", "height", "perimeter"):
        np.testing.assert_allclose(symmetry(measure(teeth_table(rows)), w).pairs["ratio"], 1.0)


def _measured(values):
    """A measured-like table: values[(patient, timestamp, tooth_type, side)] = area."""
    rows = []
    for (pid, ts, kind, side), v in values.items():
        rows.append(
            {
                "patient_id": pid,
                "timestamp": ts,
                "source": "occlusogram_upper",
                "arch": "up",
                "tooth_type": kind,
                "side": side,
                "area": v,
            }
        )
    return pd.DataFrame(rows)


def test_known_ratio_difference_and_direction():
    result = symmetry(_measured({("p", "t", "m1", "rgt"): 110.0, ("p", "t", "m1", "lft"): 100.0}))
    row = result.pairs.iloc[0]
    assert row["value_rgt"] == 110.0
    assert row["value_lft"] == 100.0
    assert row["ratio"] == pytest.approx(1.1)  # right is the numerator
    assert row["difference"] == pytest.approx(10.0)  # right minus left
    assert row["asymmetry_pct"] == pytest.approx(100 * 10 / 105)
    assert row["log_ratio"] == pytest.approx(np.log(1.1))


def test_incomplete_pairs_are_kept_but_never_summarised():
    m = _measured(
        {
            ("p", "t", "m1", "rgt"): 110.0,
            ("p", "t", "m1", "lft"): 100.0,
            ("p", "t", "i2", "rgt"): 50.0,
            ("p", "t", "i2", "lft"): np.nan,  # missing tooth: NaN area from measure
            ("p", "t", "c", "rgt"): 70.0,  # antimere not segmented at all
        }
    )
    result = symmetry(m)
    pairs = result.pairs.set_index("tooth_type")
    assert not pairs.loc["i2", "complete"]
    assert not pairs.loc["c", "complete"]
    assert np.isnan(pairs.loc["i2", "ratio"])
    assert np.isnan(pairs.loc["c", "value_lft"])
    pp = result.per_patient.iloc[0]
    assert pp["n_pairs"] == 1
    assert pp["gm_ratio"] == pytest.approx(1.1)
    assert pp["mean_difference"] == pytest.approx(10.0)
    assert set(result.cohort["tooth_type"]) == {"m1"}


def test_cohort_intervals_match_scipy_one_sample_t():
    rng = np.random.default_rng(7)
    right = rng.normal(100, 8, 12)
    left = right * np.exp(rng.normal(0.02, 0.05, 12))
    values = {}
    for i, (r, lf) in enumerate(zip(right, left, strict=True)):
        values[(f"p{i}", "t", "m1", "rgt")] = r
        values[(f"p{i}", "t", "m1", "lft")] = lf
    cohort = symmetry(_measured(values), confidence=0.9).cohort.iloc[0]
    d = right - left
    ci_d = stats.ttest_1samp(d, 0).confidence_interval(0.9)
    assert cohort["n_patients"] == 12
    assert cohort["mean_difference"] == pytest.approx(d.mean())
    assert cohort["sd_difference"] == pytest.approx(d.std(ddof=1))
    assert (cohort["difference_ci_low"], cohort["difference_ci_high"]) == pytest.approx(
        (ci_d.low, ci_d.high)
    )
    lr = np.log(right / left)
    ci_l = stats.ttest_1samp(lr, 0).confidence_interval(0.9)
    assert cohort["gm_ratio"] == pytest.approx(np.exp(lr.mean()))
    assert (cohort["gm_ratio_ci_low"], cohort["gm_ratio_ci_high"]) == pytest.approx(
        (np.exp(ci_l.low), np.exp(ci_l.high))
    )
    assert cohort["mean_abs_asymmetry_pct"] == pytest.approx(
        np.mean(np.abs(100 * d / ((right + left) / 2)))
    )


def test_each_patient_counts_once_in_the_cohort():
    m = _measured(
        {
            ("a", "t1", "m1", "rgt"): 120.0,
            ("a", "t1", "m1", "lft"): 100.0,
            ("a", "t2", "m1", "rgt"): 100.0,
            ("a", "t2", "m1", "lft"): 100.0,
            ("b", "t1", "m1", "rgt"): 100.0,
            ("b", "t1", "m1", "lft"): 100.0,
        }
    )
    result = symmetry(m)
    assert len(result.per_patient) == 3
    cohort = result.cohort.iloc[0]
    assert cohort["n_patients"] == 2
    assert cohort["mean_difference"] == pytest.approx((10.0 + 0.0) / 2)
    first = symmetry(m, session="first").cohort.iloc[0]
    assert first["mean_difference"] == pytest.approx((20.0 + 0.0) / 2)
    last = symmetry(m, session="last").cohort.iloc[0]
    assert last["mean_difference"] == pytest.approx(0.0)


def test_symmetry_bad_input():
    m = _measured({("p", "t", "m1", "rgt"): 1.0, ("p", "t", "m1", "lft"): 1.0})
    with pytest.raises(InputError, match="several rows"):
        symmetry(pd.concat([m, m]))
    with pytest.raises(InputError, match="side must be"):
        symmetry(m.assign(side=["right", "left"]))
    with pytest.raises(InputError, match="md_width"):
        symmetry(m, "md_width")
    with pytest.raises(InputError, match="not numeric"):
        symmetry(m.assign(area=["a", "b"]))
    with pytest.raises(InputError, match="session="):
        symmetry(m, session="middle")


def test_symmetry_from_measure_keeps_unit():
    rows = [
        tooth_row("m1_rgt_lo", rect(0, 0, 10, 11), source="occlusogram_lower"),
        tooth_row("m1_lft_lo", rect(60, 0, 10, 12), source="occlusogram_lower"),
    ]
    pairs = symmetry(measure(teeth_table(rows), 0.1)).pairs
    assert pairs["unit"].iloc[0] == "mm"
    assert pairs["ratio"].iloc[0] == pytest.approx(110 / 120)
