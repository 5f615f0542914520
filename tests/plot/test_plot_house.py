"""The house style as data: group order and colours, units, intervals, pseudonyms (issue 31)."""

from __future__ import annotations

import re

import matplotlib.colors as mcolors
import numpy as np
import pandas as pd
import pytest

from dentalkit import plot
from dentalkit.errors import InputError
from dentalkit.plot import house
from dentalkit.plot._common import text_colour_on
from dentalkit.plot._identity import patient_label, session_label
from tests.plot.plot_tables import findings, landmarks, teeth


def test_skeletal_classes_in_their_natural_order():
    assert house.group_order(["Class III", "Class I", "Class II"]) == [
        "Class I",
        "Class II",
        "Class III",
    ]
    assert house.group_order(["III", "II/2", "I", "II/1"]) == ["I", "II/1", "II/2", "III"]
    assert house.group_order(["M", "F"]) == ["F", "M"]
    # undeclared levels: natural order (numbers by value)
    assert house.group_order(["patient 10", "patient 2"]) == ["patient 2", "patient 10"]


def test_a_class_keeps_its_colour_whichever_classes_are_present():
    # Okabe & Ito's palette (their Color Universal Design chart): blue, orange, bluish green
    blue, orange, green = "#0072B2", "#E69F00", "#009E73"
    assert house.group_colours(["Class I", "Class II", "Class III"]) == {
        "Class I": blue,
        "Class II": orange,
        "Class III": green,
    }
    # the defect of issue 31: with Class I absent, Class II took Class I's colour
    assert house.group_colours(["Class III", "Class II"]) == {
        "Class II": orange,
        "Class III": green,
    }
    assert house.group_colours(["II"], "skeletal_class") == {"II": orange}
    other = house.group_colours(["clinical", "pano"])
    assert other == {"clinical": blue, "pano": orange}


def _level_colours_by_figure() -> dict[str, dict[str, str]]:
    """The colour each figure gives to each skeletal class, read from the drawn artists."""
    from tests.plot.test_plot_arch import _mean_form
    from tests.plot.test_plot_growth import _data_and_bands

    out = {}
    data, bands = _data_and_bands()
    data["klass"] = data["klass"].map({"I": "Class II", "II": "Class III"})
    bands["group"] = bands["group"].map({"I": "Class II", "II": "Class III"})
    ax = plot.growth_lines(data, bands, "SNB", group="klass")
    out["growth"] = {
        ln.get_label().split(" (")[0]: mcolors.to_hex(ln.get_color())
        for ln in ax.lines
        if not ln.get_label().startswith("_")
    }
    mf = _mean_form()
    mf["group"] = mf["group"].map({"Class I": "Class II", "Class II": "Class III"})
    ax = plot.mean_arch_forms(mf, by="group")
    out["mean_arch_forms"] = {
        ln.get_label().split(" (")[0]: mcolors.to_hex(ln.get_color())
        for ln in ax.lines
        if str(ln.get_gid()).startswith("mean:")
    }
    est = pd.DataFrame(
        {"klass": ["II"] * 4 + ["III"] * 3, "estimate_length_months": np.arange(7) + 20.0}
    )
    ax = plot.tle_distribution(est, "klass", n_resamples=99)
    out["tle"] = {
        c.get_gid().split(":")[1]: mcolors.to_hex(c.get_facecolor()[0])
        for c in ax.collections
        if str(c.get_gid()).startswith("points:")
    }
    return out


def test_every_figure_gives_a_class_the_same_colour():
    seen = _level_colours_by_figure()
    for figure, colours in seen.items():
        keyed = {re.sub(r"^Class ", "", k): v.upper() for k, v in colours.items()}
        assert keyed == {"II": "#E69F00", "III": "#009E73"}, figure


def test_units_and_intervals_are_spelled_one_way():
    assert house.ci_text(0.95) == "95 % CI" == house.ci_text(95)
    assert house.ci_text(0.9, "bootstrap") == "90 % bootstrap CI"
    assert house.unit_text("deg") == "°" and house.unit_text("mm2") == "mm²"
    assert house.with_unit("81.1", "deg") == "81.1°" and house.with_unit("2.0", "mm") == "2.0 mm"
    assert house.variable_label("skeletal_class") == "Skeletal class"


def test_no_figure_spells_units_or_intervals_another_way():
    from tests.plot.test_plot_journal import FIGURES

    texts = []
    with plot.style():
        for make in FIGURES:
            ax = make()
            fig = ax.get_figure(root=True)
            fig.canvas.draw()
            texts += [t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text"))]
    text = "\n".join(t for t in texts if t)
    assert not re.search(r"\d%", text), "per cent without a space"
    assert not re.search(r"\bdeg\b", text), "deg for °"
    assert "CIs" not in text


@pytest.mark.parametrize(
    ("face", "want"),
    [("#FFFFFF", "black"), ("#000000", "white"), ("#440154", "white"), ("#FDE725", "black")],
)
def test_numbers_on_a_colour_take_the_better_contrast(face, want):
    # #440154 is viridis's darkest purple (the tooth map's defect: black on dark purple)
    assert text_colour_on(face) == want


def test_patients_and_sessions_get_pseudonyms_not_identifiers():
    t = pd.DataFrame(
        {
            "patient_id": ["P10", "P10", "P2"],
            "timestamp": ["2025-03-04T10:00:00Z", "2024-03-05T10:00:00Z", "2024-03-05"],
        }
    )
    assert patient_label(t, "P2") == "patient 1"  # natural order: P2 before P10
    assert patient_label(t, "P10") == "patient 2"
    # 2024-03-05 to 2025-03-04: 364 days, 364 / 30.44 = 11.96 months
    assert session_label(t, "P10", "2025-03-04T10:00:00Z") == "patient 2, session 2 (12 months)"
    assert session_label(t, "P10", "2024-03-05T10:00:00Z") == "patient 2, session 1 (baseline)"
    assert session_label(t, "P10", "2024-03-05T10:00:00Z", "raw") == "P10, 2024-03-05T10:00:00Z"
    assert session_label(t, "P2", "2024-03-05", {"P2": "A7F3"}) == "A7F3, session 1 (baseline)"
    with pytest.raises(InputError, match="identity must be"):
        session_label(t, "P2", "2024-03-05", "name")


def _figure_texts(ax) -> str:
    fig = ax.get_figure(root=True)
    fig.canvas.draw()
    return "\n".join(t.get_text() for t in fig.findobj(lambda a: hasattr(a, "get_text")))


@pytest.mark.parametrize(
    "make",
    [
        lambda **kw: plot.ceph_tracing(landmarks("P001", "2024-03-01"), **kw),
        lambda **kw: plot.ceph_superimposition(
            pd.concat([landmarks("P001", "2020-03-01"), landmarks("P001", "2024-03-01")]), **kw
        ),
        lambda **kw: plot.tooth_map(teeth("P002", "2024-03-01"), **kw),
        lambda **kw: plot.finding_boxes(findings(), **kw),
    ],
    ids=["tracing", "superimposition", "tooth_map", "finding_boxes"],
)
def test_figures_print_no_identifier_or_timestamp_unless_asked(make):
    shown = _figure_texts(make())
    assert not re.search(r"P\d\d\d", shown) and "2024-03-01" not in shown and "2020" not in shown
    assert "patient 1" in shown
    assert re.search(r"P\d\d\d", _figure_texts(make(identity="raw")))


def test_render_draws_at_a_declared_width_only(tmp_path):
    from tests.plot.pdf_rules import problems

    by_fdi = pd.DataFrame({"fdi": [11, 22, 36], "prevalence": [0.1, 0.3, 0.2]})
    files = plot.render(lambda ax: plot.odontogram(by_fdi, ax=ax), tmp_path / "o", dpi=300)
    assert [f.name for f in files] == ["o.pdf", "o.png"]
    assert problems(files[0]) == []
    with pytest.raises(InputError, match="not a declared width"):
        plot.render(lambda ax: None, tmp_path / "x", width="wide")


def test_the_odontogram_gets_no_blank_canvas():
    """Issue 31: ~55 % of the canvas was blank (a 32-cell chart on a 4:3 figure)."""
    by_fdi = pd.DataFrame({"fdi": [11, 22, 36], "prevalence": [0.1, 0.3, 0.2]})
    with plot.style():
        fig = plot.figure("single")  # 85 × 64 mm, as the study makes it
        plot.odontogram(by_fdi, ax=fig.add_subplot())
        height_mm = fig.get_figheight() * 25.4
    # the chart is 18.45 × 3.3 cells, 4.4 mm a cell at this width: ~15 mm, with the FDI
    # numbers, the colour bar and its label under 40 mm in all
    assert height_mm < 40


def test_savefig_keeps_a_figure_within_the_maximum_height(tmp_path):
    import matplotlib.pyplot as plt

    from dentalkit.errors import DentalkitWarning

    fig = plt.figure(figsize=(85 / 25.4, 250 / 25.4), layout="constrained")
    with pytest.warns(DentalkitWarning, match="saved 225 mm tall"):
        (pdf,) = plot.savefig(fig, tmp_path / "tall.pdf")
    box = re.search(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)", pdf.read_bytes())
    assert float(box.group(2)) == pytest.approx(225 / 25.4 * 72, abs=0.01)
