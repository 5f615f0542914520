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
