"""The study's figure files: formats, width and resolution chosen by the caller, and
``captions.md`` beside the figures (issue 31)."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from dentalkit.cli import app
from dentalkit.errors import InputError
from dentalkit.study import Design, make_figures

MM_PER_INCH = 25.4


def _sections(path) -> dict[str, str]:
    """``## name`` → the paragraph below it, from a captions.md."""
    text = path.read_text(encoding="utf-8")
    parts = re.split(r"^## (\S+)\n\n", text, flags=re.M)
    return {name: body.strip() for name, body in zip(parts[1::2], parts[2::2], strict=True)}


def test_the_demo_writes_a_caption_for_every_figure_it_draws(demo_study):
    out, _, result = demo_study
    assert result.exit_code == 0, result.output
    drawn = {p.stem for p in (out / "figures").glob("*.pdf")}
    captions = _sections(out / "figures" / "captions.md")
    assert set(captions) == drawn
    missing = {n for n, text in captions.items() if text.startswith("(No caption")}
    assert not missing, missing
    for name, text in captions.items():
        assert text, name
        assert "DEMO-" not in text, name  # pseudonymised, as the figures
    # the demo's 3 patients (the fixture's --patients 3), each scored at the first session
    assert "n = 3 patients" in captions["ceph_wiggle"]
    assert "first session" in captions["ceph_wiggle"]
    assert "n = 1 patient" in captions["ceph_tracing"]
    assert "captions.md" in (out / "report.md").read_text(encoding="utf-8")


def test_figures_command_writes_the_formats_width_and_dpi_asked_for(demo_study, tmp_path):
    from PIL import Image

    out, _, result = demo_study
    assert result.exit_code == 0, result.output
    figs = tmp_path / "figs"
    args = ["figures", str(out / "tables"), str(out / "analyses"), "--out", str(figs)]
    args += ["--format", "svg", "--format", "tiff", "--width", "double", "--dpi", "300"]
    args += ["--no-progress"]
    run = CliRunner().invoke(app, args)
    assert run.exit_code == 0, run.output
    assert not list(figs.glob("*.pdf")) and not list(figs.glob("*.png"))
    svgs, tiffs = (
        sorted(figs.glob("*.svg")),
        sorted(figs.glob("*.tif")),
    )  # savefig writes TIFF as .tif
    assert len(svgs) >= 10 and [p.stem for p in svgs] == [p.stem for p in tiffs]
    want_pt = 180 / MM_PER_INCH * 72  # double column, every figure
    for svg in svgs:
        head = svg.read_text(encoding="utf-8")[:2000]
        width_pt = float(re.search(r'<svg[^>]*\swidth="([\d.]+)pt"', head).group(1))
        assert width_pt == pytest.approx(want_pt, abs=0.5), svg.name
    with Image.open(tiffs[0]) as im:
        assert im.info["dpi"][0] == pytest.approx(300)
        assert im.width == pytest.approx(180 / MM_PER_INCH * 300, abs=2)
    assert set(_sections(figs / "captions.md")) == {p.stem for p in svgs}


def test_a_wrong_format_or_width_stops_before_anything_is_drawn(tmp_path):
    with pytest.raises(InputError, match=r"'jpeg'.*choose from pdf, svg, png, tiff"):
        make_figures({}, {}, tmp_path / "f", formats=("pdf", "jpeg"))
    with pytest.raises(InputError, match="'triple' is not a journal width"):
        make_figures({}, {}, tmp_path / "f", width="triple")
    assert not (tmp_path / "f").exists()
    with pytest.raises(InputError, match=r"study design: .*'jpeg'"):
        Design(formats=("jpeg",))
    with pytest.raises(InputError, match="study design: width 'triple'"):
        Design(width="triple")
    assert Design(formats=("PDF", ".tiff")).formats == ("pdf", "tiff")


def test_treatment_length_by_class_is_not_drawn_without_an_estimate(tmp_path, caplog):
    """A study whose /tle answers could not be read (all estimates missing, as under the
    sandbox's drift mode) draws no empty axes; one estimate is enough to draw."""
    from dentalkit.study.figures import FIGURES

    spec = [f for f in FIGURES if f.name == "tle_by_class"]
    none = pd.DataFrame(
        {
            "patient_id": ["P1", "P2"],
            "malocclusion_class": ["Class I", "Class II"],
            "estimate_length_months": [np.nan, np.nan],
        }
    )
    with caplog.at_level("INFO", logger="dentalkit"):
        drawn = make_figures({}, {"tle_estimates": none}, tmp_path / "a", figures=spec, dpi=300)
    assert drawn == {} and not (tmp_path / "a" / "tle_by_class.pdf").exists()
    assert "tle_by_class not drawn: its inputs have nothing to show" in caplog.text
    one = none.assign(estimate_length_months=[20.0, np.nan])
    drawn = make_figures({}, {"tle_estimates": one}, tmp_path / "b", figures=spec, dpi=300)
    assert set(drawn) == {"tle_by_class"}
