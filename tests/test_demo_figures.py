"""The figures the demo writes follow the house style, read from the PDFs (issue 31).

Every PDF of ``dentalkit demo`` (the 3-patient run of the ``demo_study`` fixture) is read
with pdfplumber (``tests/plot/pdf_rules.py``): no text under the minimum size at printed
size, no text drawn over other text, every page a declared width and at most the maximum
height.
"""

from __future__ import annotations

import pytest

from dentalkit.plot.house import FIGURE_WIDTHS, JOURNAL_WIDTHS_MM
from tests.plot.pdf_rules import problems, words


@pytest.fixture(scope="module")
def demo_pdfs(demo_study):
    out, _, result = demo_study
    assert result.exit_code == 0, result.output
    pdfs = sorted((out / "figures").glob("*.pdf"))
    assert len(pdfs) >= 10, [p.name for p in pdfs]
    return pdfs


def test_every_demo_figure_follows_the_house_style(demo_pdfs):
    found = [p for pdf in demo_pdfs for p in problems(pdf)]
    assert not found, "\n".join(found)


def test_every_demo_figure_has_its_declared_width(demo_pdfs):
    for pdf in demo_pdfs:
        (width, _), _ = words(pdf)
        want = JOURNAL_WIDTHS_MM[FIGURE_WIDTHS[pdf.stem]]
        assert abs(width - want) < 0.1, (pdf.name, width, want)


def test_no_demo_figure_prints_a_patient_id_or_a_timestamp(demo_pdfs):
    for pdf in demo_pdfs:
        _, found = words(pdf)
        text = " ".join(w.text for w in found)
        assert "DEMO-" not in text, pdf.name
        assert "2024-03-05" not in text and "T10:00" not in text, pdf.name
