"""Pixel-view figures save without matplotlib's "Ignoring fixed … limits" (issue 23).

The demo printed ``WARNING matplotlib.axes._base: Ignoring fixed x limits to fulfill fixed
data aspect with adjustable data limits`` for the tooth map, the finding boxes and the
tracing: the saved view was pinned (fixed limits) while the axes kept the aspect by
moving their limits (``adjustable="datalim"``), and any later layout pass that moved the
box by a hair made matplotlib override the pinned limits. It is a log record, not a
warning, so both are watched here: the log and, as errors, warnings.
"""

from __future__ import annotations

import logging
import warnings

from dentalkit import plot
from dentalkit.sandbox.render import input_image
from dentalkit.study import FigureSpec, make_figures
from dentalkit.teeth import measure
from tests.plot.plot_tables import findings, landmarks, patient_with_findings, teeth

TS = "2024-03-01"


def _image(kind: str, pid: str) -> object:
    return input_image(f"{kind}/{pid}/{TS}.png")


def _figures() -> tuple[FigureSpec, ...]:
    pid = patient_with_findings()
    pano = teeth("P002", TS)
    return (
        FigureSpec(
            "tooth_map",
            lambda _: (
                lambda ax: plot.tooth_map(
                    pano,
                    "area",
                    ("P002", TS),
                    values=measure(pano),
                    image=_image("pano", "P002"),
                    ax=ax,
                )
            ),
            width="double",
        ),
        FigureSpec(
            "finding_boxes",
            lambda _: (
                lambda ax: plot.finding_boxes(
                    findings(pid, TS), (pid, TS), image=_image("intraoral_frontal", pid), ax=ax
                )
            ),
        ),
        FigureSpec(
            "ceph_tracing",
            lambda _: (
                lambda ax: plot.ceph_tracing(
                    landmarks("P001", TS),
                    mm_per_px=0.1,
                    image=_image("lateral_ceph", "P001"),
                    ax=ax,
                )
            ),
        ),
    )


def test_pixel_figures_save_without_limit_warnings(tmp_path, caplog):
    with caplog.at_level(logging.WARNING, logger="matplotlib"), warnings.catch_warnings():
        warnings.simplefilter("error")
        written = make_figures({}, {}, tmp_path, dpi=300, figures=_figures())
    assert list(written) == ["tooth_map", "finding_boxes", "ceph_tracing"]
    ignored = [r.getMessage() for r in caplog.records if "Ignoring fixed" in r.getMessage()]
    assert ignored == []
    assert not [r for r in caplog.records if r.name == "dentalkit"]  # every figure was drawn
