"""Growth figure: one line per patient, the model's fit and band per group."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dentalkit.errors import InputError
from dentalkit.plot import growth_lines


def _data_and_bands():
    ids = [f"p{i}" for i in range(6)]
    data = pd.DataFrame(
        {
            "patient_id": np.repeat(ids, 2),
            "session_time": pd.to_datetime(["2024-01-01", "2025-01-01"] * 6, utc=True),
            "measure": "SNB",
            "value": [78.0, 78.5, 79.0, 79.4, 80.0, 80.2, 76.0, 77.0, 77.5, 78.1, 75.0, 76.2],
            "unit": "deg",
            "klass": np.repeat(["I", "I", "I", "II", "II", "II"], 2),
        }
    )
    t = np.array([0.0, 1.0])
    bands = pd.concat(
        [
            pd.DataFrame({"measure": "SNB", "group": "I", "time": t, "estimate": [79.0, 79.4],
                          "ci_low": [78.0, 78.4], "ci_high": [80.0, 80.4]}),
            pd.DataFrame({"measure": "SNB", "group": "II", "time": t, "estimate": [76.2, 77.1],
                          "ci_low": [75.0, 76.0], "ci_high": [77.4, 78.2]}),
        ],
        ignore_index=True,
    )  # fmt: skip
    return data, bands


def test_lines_per_patient_fit_and_band_per_group():
    data, bands = _data_and_bands()
    ax = growth_lines(data, bands, "SNB", group="klass")
    # 6 patient lines + 2 fit lines; 2 shaded bands
    assert len(ax.lines) == 8
    assert len(ax.collections) == 2
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert labels == ["I (n = 3 patients)", "II (n = 3 patients)"]
    fit = next(ln for ln in ax.lines if ln.get_label().startswith("II"))
    np.testing.assert_allclose(fit.get_ydata(), [76.2, 77.1])
    patient = ax.lines[0]  # years since the patient's first session: 0 and 1 (2024 a leap year)
    np.testing.assert_allclose(patient.get_xdata(), [0.0, 366 / 365.25])
    assert ax.get_ylabel() == "SNB (°)"  # one spelling of units (issue 31)


def test_unknown_measure_is_refused():
    data, bands = _data_and_bands()
    with pytest.raises(InputError, match="measure 'ANB' has no rows"):
        growth_lines(data, bands, "ANB", group="klass")


@pytest.mark.filterwarnings("error::UserWarning")
def test_fits_a_single_column_in_the_house_style(tmp_path):
    """As tests/plot/test_plot_journal.py does for the other figures: no clipped text and
    no layout failure at 85 mm."""
    from dentalkit import plot
    from dentalkit.plot.style import clipped_text

    data, bands = _data_and_bands()
    with plot.style():
        ax = growth_lines(data, bands, "SNB", group="klass")
        plot.savefig(ax, tmp_path / "fig.pdf", width="single")
        assert clipped_text(ax.get_figure()) == []
    pos = ax.get_position()
    assert pos.width > 0.3 and pos.height > 0.1
