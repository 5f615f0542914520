"""The PDF rules find what they are meant to find (so that a clean demo means something)."""

from __future__ import annotations

import matplotlib.pyplot as plt

from dentalkit import plot
from tests.plot.pdf_rules import problems, words


def _pdf(tmp_path, width_mm: float, draw) -> str:
    fig = plt.figure(figsize=(width_mm / 25.4, 50 / 25.4), layout="none")
    ax = fig.add_axes((0.2, 0.3, 0.75, 0.65))
    draw(ax)
    path = tmp_path / "f.pdf"
    fig.savefig(path)
    plt.close(fig)
    return path


def test_a_figure_in_the_house_style_passes(tmp_path):
    def draw(ax):
        ax.plot([0, 1], [0, 1], label="a line")
        ax.set_xlabel("x (mm)")
        ax.set_ylabel("y (mm)")
        ax.legend()

    with plot.style():
        assert problems(_pdf(tmp_path, 85.0, draw)) == []


def test_small_text_overlapping_text_and_an_odd_page_are_each_found(tmp_path):
    def draw(ax):
        ax.text(0.1, 0.8, "tiny", fontsize=4.5)
        ax.text(0.1, 0.5, "restoration", fontsize=7)
        ax.text(0.13, 0.5, "decay", fontsize=7)  # drawn over "restoration"
        ax.text(0.95, 0.2, "cut at the edge", fontsize=7)
        ax.set_axis_off()

    found = problems(_pdf(tmp_path, 100.0, draw))
    assert any("100.0 mm wide, not a declared width" in p for p in found)
    assert any("'tiny' at 4.50 pt, under 6 pt" in p for p in found)
    assert any("text over text" in p for p in found)
    assert any("'edge' runs past the page's edge" in p for p in found)
    assert not any("tiny" in p and "over" in p for p in found)


def test_rotated_labels_are_measured_by_their_size_not_their_advance(tmp_path):
    def draw(ax):
        ax.set_ylabel("SNB (°)", fontsize=7)
        ax.set_yticks([])
        ax.set_xticks([])

    (_, _), found = words(_pdf(tmp_path, 85.0, draw))
    rotated = [w for w in found if "SNB" in w.text]
    assert rotated and abs(rotated[0].size - 7.0) < 0.05


def test_a_page_taller_than_the_maximum_is_found(tmp_path):
    fig = plt.figure(figsize=(85 / 25.4, 240 / 25.4))
    fig.savefig(tmp_path / "tall.pdf")
    plt.close(fig)
    assert any("more than 225 mm" in p for p in problems(tmp_path / "tall.pdf"))
