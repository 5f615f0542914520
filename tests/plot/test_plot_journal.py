"""Every figure, made in the house style, fits one journal column without layout failure.

constrained layout only *warns* when labels and legends leave no room for the axes
(the figure is then unusable), so these tests turn that warning into an error. The PDF
each writes is read back (``pdf_rules``): no text under 6 pt, no text over text, a page
of a declared size.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest

from dentalkit import plot
from tests.plot import test_plot_arch, test_plot_ceph_cohort, test_plot_tle
from tests.plot.pdf_rules import problems
from tests.plot.plot_tables import arch_points, findings, landmarks, teeth


def _tracing():
    return plot.ceph_tracing(landmarks(), mm_per_px=0.1, show_axes=False)


def _superimposition():
    t = pd.concat([landmarks("P001", "2020-03-01"), landmarks("P001", "2024-03-01")])
    return plot.ceph_superimposition(t, mm_per_px=0.1)


def _wiggle():
    return plot.ceph_wiggle(test_plot_ceph_cohort._zscores(), by="sex")


def _arch():
    pts = arch_points()
    return plot.arch_forms(pts, test_plot_arch._curves(pts))


def _mean_arch():
    return plot.mean_arch_forms(test_plot_arch._mean_form(), by="group")


def _tooth_map():
    from dentalkit import teeth as dteeth

    t = teeth("P002")
    return plot.tooth_map(t, "area", values=dteeth.measure(t, 0.1, measures=["area"]))


def _odontogram():
    return plot.odontogram(pd.DataFrame({"fdi": [11, 22, 36], "prevalence": [0.1, 0.3, 0.2]}))


def _boxes():
    return plot.finding_boxes(findings())


def _bars():
    return plot.prevalence_bars(
        pd.DataFrame(
            {
                "class_name": ["decay", "white_spot_lesion"],
                "prevalence": [0.2, 0.1],
                "ci_low": [0.1, 0.05],
                "ci_high": [0.3, 0.2],
            }
        )
    )


def _distribution():
    return plot.tle_distribution(test_plot_tle._estimates(), "group", n_resamples=199)


def _sensitivity():
    return plot.tle_sensitivity(test_plot_tle._curves(["none", "mild", "moderate", "severe"]))


def _bland_altman():
    return plot.tle_bland_altman(test_plot_tle.PRED, test_plot_tle.OBS)


def _agreement_bland_altman():
    from dentalkit import agreement

    ref = pd.DataFrame(
        {
            "patient_id": [f"s{i}" for i in range(8)],
            "measure": "ANB",
            "value": [1.0, 2, 3, 4, 2, 5, 0, 3],
            "unit": "deg",
        }
    )
    res = agreement.measure(
        ref, ref.assign(value=ref["value"] + [0.5, -0.2, 0.1, 0.4, 0.0, 0.3, -0.1, 0.2])
    )
    return plot.agreement_bland_altman(res, "ANB")


def _landmark_errors():
    from dentalkit import agreement

    truth = pd.concat([landmarks(f"P{i:03d}") for i in range(1, 6)], ignore_index=True)
    truth = truth[truth["name"].isin(["S", "N", "A", "B", "Pog", "Me", "Go", "Or", "Po"])]
    test = agreement.simulate_examiner(truth, 1.0, 0.1, seed=1)
    return plot.landmark_errors(agreement.landmarks(truth, test, mm_per_px=0.1))


FIGURES = [
    _tracing,
    _superimposition,
    _wiggle,
    _arch,
    _mean_arch,
    _tooth_map,
    _odontogram,
    _boxes,
    _bars,
    _distribution,
    _sensitivity,
    _bland_altman,
    _agreement_bland_altman,
    _landmark_errors,
]


@pytest.mark.filterwarnings("error::UserWarning")
@pytest.mark.parametrize("make", FIGURES, ids=lambda f: f.__name__.strip("_"))
def test_fits_a_single_column_in_the_house_style(make, tmp_path):
    with plot.style():
        ax = make()
        (pdf,) = plot.savefig(ax, tmp_path / "fig.pdf", width="single")
    data = pdf.read_bytes()
    width = float(re.search(rb"/MediaBox \[\s*0 0 ([\d.]+)", data).group(1))
    assert width == pytest.approx(85 / 25.4 * 72, abs=0.01)
    for a in ax.get_figure(root=True).axes:  # every plot kept a usable size at 85 mm
        if a.get_label() != "<colorbar>":
            pos = a.get_position()
            assert pos.width > 0.3 and pos.height > 0.1, a
    assert problems(pdf) == []
