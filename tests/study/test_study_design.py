"""The study file (TOML): documented defaults, every key, and the errors a user makes."""

from __future__ import annotations

from pathlib import Path

import pytest

from dentalkit.errors import InputError
from dentalkit.study import Design, read_design

FULL = """
title = "Arch widths after expansion"
out = "rme"
intro = "Thirty patients."

[groups]
column = "treatment"

[statistics]
session = "last"
alpha = 0.01
correction = "fdr_bh"

[analyses]
run = ["ceph", "arch", "arch_groups"]

[figures]
draw = ["arch_forms"]
dpi = 300
formats = ["SVG", "tiff"]
width = 120

[calibration]
ceph_lateral_points = 0.1

[tle]
sensitivity = "crowding"
levels = ["none", "severe"]
patients = 4
"""


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "study.toml"
    path.write_text(text, encoding="utf-8")
    return path


def test_an_empty_file_is_every_default(tmp_path):
    d = read_design(_file(tmp_path, ""))
    assert d == Design()
    assert (d.groups, d.session, d.alpha, d.correction) == (None, "first", 0.05, "holm")
    assert (d.analyses, d.figures, d.dpi, dict(d.mm_per_px)) == (None, None, 600, {})
    assert (d.formats, d.width) == (("pdf", "png"), None)
    assert d.confidence == 0.95 and d.adjust == "holm"
    assert d.sensitivity is None


def test_every_key_is_read(tmp_path):
    d = read_design(_file(tmp_path, FULL))
    assert d.title == "Arch widths after expansion" and d.intro == "Thirty patients."
    assert d.out == tmp_path / "rme"  # relative to the study file
    assert (d.groups, d.session, d.alpha, d.correction) == ("treatment", "last", 0.01, "fdr_bh")
    assert d.analyses == ("ceph", "arch", "arch_groups") and d.figures == ("arch_forms",)
    assert d.dpi == 300 and dict(d.mm_per_px) == {"ceph_lateral_points": 0.1}
    assert d.sensitivity == ("crowding", ("none", "severe"), 4)
    assert d.confidence == pytest.approx(0.99)
    lines = d.lines()
    assert lines[0] == "Groups: the column `treatment` of the patients table."
    assert "the last session of each patient" in lines[1]
    assert lines[2] == (
        "α = 0.01 (intervals at 99 %); multiplicity: Benjamini–Hochberg across the measures "
        "of one question."
    )
    assert d.formats == ("svg", "tiff") and d.width == 120
    assert "ceph, arch, arch_groups" in lines[3]
    assert "arch_forms (300 dpi; SVG, TIFF; every figure 120 mm wide)" in lines[3]
    assert "`ceph_lateral_points` 0.1 mm/px" in lines[4]
    assert Design(correction="none").adjust is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "[statistics]\naplha = 0.1\n",
            r"unknown key '\[statistics\] aplha' \(did you mean 'alpha'\?\)",
        ),
        ("titel = 'x'\n", r"unknown key 'titel' \(did you mean 'title'\?\)"),
        ("[statistics]\nalpha = 5\n", r"alpha=5 is not a number between 0 and 0.5"),
        ("[statistics]\nsession = 'baseline'\n", r"session='baseline' is not one of first, last"),
        ("[statistics]\ncorrection = 'holmes'\n", r"correction='holmes' is not one of holm"),
        ("[figures]\ndpi = 72\n", r"dpi=72 is not an integer from 300 to 1200"),
        ("[figures]\nformats = ['eps']\n", r"format\(s\) \['eps'\] not available; choose from"),
        ("[figures]\nformats = 'pdf'\n", r"\[figures\] formats must be a list of names"),
        ("[figures]\nwidth = 'triple'\n", r"width 'triple' is not a journal width"),
        ("[calibration]\nceph = 0.1\n", r"'ceph' is not an endpoint name"),
        ("[analyses]\nrun = 'ceph'\n", r"\[analyses\] run must be a list of names"),
        ("[tle]\nsensitivity = 'crowding'\n", r"\[tle\] sensitivity needs levels"),
        ("groups = 'treatment'\n", r"\[groups\] must be a table"),
        ("title = \n", r"is not valid TOML"),
    ],
)
def test_a_wrong_file_is_refused_naming_the_file_and_the_key(tmp_path, text, message):
    path = _file(tmp_path, text)
    with pytest.raises(InputError, match=message) as info:
        read_design(path)
    assert str(path) in str(info.value)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(InputError, match=r"cannot read the study file .*nope\.toml"):
        read_design(tmp_path / "nope.toml")


def test_unknown_analysis_and_figure_names_are_refused_before_anything_runs(tmp_path):
    from dentalkit.study import analyze, run

    with pytest.raises(InputError, match="unknown analysis 'cephs'; the analyses are "):
        analyze({}, design=Design(analyses=("cephs",)))
    # run refuses them before it reads the manifest or sends anything
    with pytest.raises(InputError, match="unknown figure 'tracing'; the figures are ceph_trac"):
        run(tmp_path / "no-manifest.csv", design=Design(figures=("tracing",), out=tmp_path / "o"))
    assert not (tmp_path / "o").exists()
