"""House style, palette and journal-width saving."""

from __future__ import annotations

import re
import subprocess
import sys

import matplotlib as mpl
import matplotlib.pyplot as plt
import numpy as np
import pytest
from PIL import Image

from dentalkit import plot
from dentalkit.errors import InputError
from dentalkit.plot.style import CATEGORICAL, OKABE_ITO, colour_for, width_mm

MM = 25.4


def test_okabe_ito_matches_the_published_rgb_values():
    # Wong B, Nat Methods 2011;8:441, Figure 2 (RGB 0-255)
    published = {
        "black": (0, 0, 0),
        "orange": (230, 159, 0),
        "sky_blue": (86, 180, 233),
        "bluish_green": (0, 158, 115),
        "yellow": (240, 228, 66),
        "blue": (0, 114, 178),
        "vermillion": (213, 94, 0),
        "reddish_purple": (204, 121, 167),
    }
    for name, rgb in published.items():
        got = tuple(round(255 * c) for c in mpl.colors.to_rgb(OKABE_ITO[name]))
        assert got == rgb, name
    assert sorted(CATEGORICAL) == sorted(OKABE_ITO.values())


def test_colour_for_cycles_after_eight():
    cats = [f"c{i}" for i in range(10)]
    m = colour_for(cats)
    assert m["c0"] == CATEGORICAL[0] and m["c8"] == CATEGORICAL[0] and m["c9"] == CATEGORICAL[1]


def test_style_applies_inside_and_restores_after():
    before = {k: mpl.rcParams[k] for k in ("font.size", "pdf.fonttype", "axes.spines.top")}
    with plot.style():
        assert mpl.rcParams["font.size"] == 7.0
        assert mpl.rcParams["pdf.fonttype"] == 42
        assert mpl.rcParams["axes.spines.top"] is False
        colours = mpl.rcParams["axes.prop_cycle"].by_key()["color"]
        assert [c.upper() for c in colours] == [c.upper() for c in CATEGORICAL]
    with plot.style({"font.size": 9}):
        assert mpl.rcParams["font.size"] == 9
    assert {k: mpl.rcParams[k] for k in before} == before


def test_importing_and_plotting_leave_global_rcparams_alone():
    code = (
        "import matplotlib as mpl; mpl.use('Agg'); before = dict(mpl.rcParams);"
        "import pandas as pd; from dentalkit import plot;"
        "plot.odontogram(pd.DataFrame({'fdi': [11], 'prevalence': [0.5]}));"
        "after = dict(mpl.rcParams);"
        "print(sorted(k for k in before if str(before[k]) != str(after[k])))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd="."
    )
    assert out.stdout.strip() == "[]"


def test_figure_is_made_at_journal_width():
    fig = plot.figure("single", height=60)
    assert fig.get_figwidth() * MM == pytest.approx(85.0)
    assert fig.get_figheight() * MM == pytest.approx(60.0)
    fig2 = plot.figure("double")
    assert fig2.get_figwidth() * MM == pytest.approx(180.0)
    assert fig2.get_figheight() * MM == pytest.approx(135.0)  # 3/4 of the width


@pytest.mark.parametrize("bad", ["triple", 5, 1000, "wide", None])
def test_widths_other_than_names_or_millimetres_are_refused(bad):
    with pytest.raises(InputError, match="width"):
        width_mm(bad)


def test_savefig_writes_every_format_at_the_width(tmp_path):
    # constrained layout: shrunk to 85 mm, a fixed-margin figure would cut its x label
    fig, ax = plt.subplots(figsize=(4, 3), layout="constrained")
    ax.plot([0, 1], [0, 1])
    ax.set_xlabel("x label (mm)")
    files = plot.savefig(fig, tmp_path / "fig1", width="single", dpi=300)
    assert [p.suffix for p in files] == [".pdf", ".svg", ".png", ".tif"]
    # the figure keeps its own size afterwards
    assert tuple(fig.get_size_inches()) == (4.0, 3.0)
    w_in, h_in = 85 / MM, 85 / MM * 3 / 4

    with Image.open(files[2]) as png:
        assert abs(png.size[0] - w_in * 300) <= 1 and abs(png.size[1] - h_in * 300) <= 1

    with Image.open(files[3]) as tif:
        assert tif.mode == "RGB"  # no alpha channel
        assert tif.info["compression"] == "tiff_lzw"
        assert tuple(round(v) for v in tif.info["dpi"]) == (300, 300)
        assert abs(tif.size[0] - w_in * 300) <= 1

    pdf = files[0].read_bytes()
    box = re.search(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)", pdf)
    assert float(box.group(1)) == pytest.approx(w_in * 72, abs=0.01)
    assert b"/FontFile2" in pdf  # TrueType embedded (fonttype 42)
    assert b"/Type3" not in pdf

    svg = files[1].read_text()
    assert re.search(r'width="([\d.]+)pt"', svg).group(1) == pytest.approx(f"{w_in * 72:.6f}")
    assert "<text" in svg and "x label (mm)" in svg  # text stays text


def test_savefig_with_a_suffix_writes_that_format_only(tmp_path):
    fig, _ = plt.subplots(layout="constrained")
    files = plot.savefig(fig.axes[0], tmp_path / "sub" / "a.pdf", width=120, height=50)
    assert files == [tmp_path / "sub" / "a.pdf"]
    box = re.search(rb"/MediaBox \[\s*0 0 ([\d.]+) ([\d.]+)", files[0].read_bytes())
    assert float(box.group(1)) == pytest.approx(120 / MM * 72, abs=0.01)
    assert float(box.group(2)) == pytest.approx(50 / MM * 72, abs=0.01)


def test_savefig_is_deterministic_for_svg(tmp_path):
    fig, ax = plt.subplots()
    ax.plot(np.arange(5), np.arange(5) ** 2)
    a = plot.savefig(fig, tmp_path / "a.svg")[0].read_bytes()
    b = plot.savefig(fig, tmp_path / "b.svg")[0].read_bytes()
    assert a == b


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [({"dpi": 72}, "dpi"), ({"dpi": 2400}, "dpi"), ({"formats": ("jpg",)}, "unsupported")],
)
def test_savefig_refuses_bad_options(tmp_path, kwargs, match):
    fig, _ = plt.subplots()
    with pytest.raises(InputError, match=match):
        plot.savefig(fig, tmp_path / "x", **kwargs)


def test_savefig_refuses_something_that_is_not_a_figure(tmp_path):
    with pytest.raises(InputError, match="Figure or Axes"):
        plot.savefig("not a figure", tmp_path / "x.png")


def test_savefig_warns_when_text_would_be_cut_off(tmp_path):
    from dentalkit.errors import DentalkitWarning
    from dentalkit.plot.style import clipped_text

    fig = plot.figure("single")
    ax = fig.add_subplot()
    ax.plot([0, 1], [0, 1])
    ax.set_yticks([0, 1], ["a long tick label, 30 mm", "b"])
    label = "an axis label centred under the pushed axes, too wide for 85 mm"
    ax.set_xlabel(label)
    assert clipped_text(fig) == [label]
    with pytest.warns(DentalkitWarning, match="cut off.*too wide for 85 mm"):
        plot.savefig(fig, tmp_path / "cut.png", dpi=300)
    ax.set_xlabel("two lines\nthat fit")
    assert clipped_text(fig) == []
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error", DentalkitWarning)
        plot.savefig(fig, tmp_path / "fits.png", dpi=300)


def test_the_wiggle_chart_keeps_its_labels_inside_a_single_column():
    """The demo's z-score chart once cut its x label at the right edge."""
    from dentalkit.plot.style import clipped_text
    from tests.plot.test_plot_ceph_cohort import _zscores

    fig = plot.figure("single")
    ax = plot.ceph_wiggle(_zscores(), ax=fig.add_subplot())
    assert clipped_text(fig) == []
    ax.set_xlabel("z-score against textbook norms (SDs not all verified)")  # the old label
    assert clipped_text(fig) != []
