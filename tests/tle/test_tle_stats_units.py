"""tle.summarize takes one estimate per patient: repeated patients are refused."""

from __future__ import annotations

import pandas as pd
import pytest

from dentalkit.errors import InputError
from dentalkit.tle import summarize


def test_summary_refuses_two_estimates_of_one_patient():
    t = pd.DataFrame(
        {"patient_id": ["a", "a", "b", "c"], "estimate_length_months": [20.0, 21.0, 24.0, 30.0]}
    )
    with pytest.raises(InputError, match=r"1 patient_id\(s\) have more than one estimate"):
        summarize(t, n_resamples=99)
    assert summarize(t, n_resamples=99, unit=None)["n"].item() == 4
    assert summarize(t.iloc[1:], n_resamples=99)["n"].item() == 3
    with pytest.raises(InputError, match="unit column 'subject'"):
        summarize(t, unit="subject")


def test_deprecated_alias_summary_warns_and_returns_the_same():
    """tle.summary (old name, one release) names tle.summarize and gives its table."""
    from dentalkit import tle
    from dentalkit.tle import stats

    t = pd.DataFrame({"patient_id": list("abcd"), "estimate_length_months": [20.0, 21, 24, 30]})
    for old_fn in (tle.summary, stats.summary):
        with pytest.warns(
            DeprecationWarning, match=r"tle\.summary is deprecated.*dentalkit\.tle\.summarize\b"
        ):
            old = old_fn(t, n_resamples=99, seed=1)
        pd.testing.assert_frame_equal(old, summarize(t, n_resamples=99, seed=1))
