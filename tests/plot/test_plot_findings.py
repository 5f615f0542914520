"""Finding boxes over an image and prevalence bar charts with CIs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dentalkit import findings as dfindings
from dentalkit.errors import InputError
from dentalkit.plot import findings as pfind
from tests.plot.plot_tables import findings, save_all


def _boxes_of(ax):
    return [p for p in ax.patches if str(p.get_gid()).startswith("box:")]


def test_boxes_match_the_detections_and_classes_keep_their_colour(tmp_path):
    f = pd.concat([findings("P006"), findings("P001")], ignore_index=True)
    ax = pfind.boxes(f, ("P006", "2024-03-01"))
    one = f[f["patient_id"] == "P006"]
    rects = _boxes_of(ax)
    assert len(rects) == len(one)
    got = sorted((r.get_x(), r.get_y(), r.get_width(), r.get_height()) for r in rects)
    want = sorted(
        zip(one["x0"], one["y0"], one["x1"] - one["x0"], one["y1"] - one["y0"], strict=True)
    )
    np.testing.assert_allclose(got, want)
    assert not any(r.get_fill() for r in rects)
    assert ax.yaxis_inverted()
    counts = one["class_name"].value_counts()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [f"{c} ({counts[c]})" for c in sorted(counts.index)]
    # the same class has the same colour in another image of the same table
    other = pfind.boxes(f, ("P001", "2024-03-01"))
    colour = {r.get_gid(): r.get_edgecolor() for r in rects}
    for r in _boxes_of(other):
        if r.get_gid() in colour:
            np.testing.assert_allclose(r.get_edgecolor(), colour[r.get_gid()])
    save_all(ax, tmp_path, "boxes")


def test_boxes_over_the_photograph():
    from dentalkit.sandbox.render import input_image

    png = input_image("intraoral_frontal/P006/2024-03-01.png")
    ax = pfind.boxes(findings("P006"), image=png, labels=False)
    assert ax.get_ylim() == (1199.5, -0.5) and ax.get_xlim() == (-0.5, 1599.5)
    assert len(ax.get_images()) == 1 and not ax.texts


def test_bad_boxes_are_refused():
    f = findings("P006")
    f.loc[f.index[0], "x1"] = f.loc[f.index[0], "x0"] - 5
    with pytest.raises(InputError, match="BottomRight is above/left of TopLeft"):
        pfind.boxes(f)


def _prevalence() -> pd.DataFrame:
    return pd.DataFrame(
        {
            "class_name": ["decay", "restoration", "bracket"],
            "prevalence": [0.25, 0.5, 0.1],
            "ci_low": [0.1, 0.3, 0.02],
            "ci_high": [0.45, 0.7, 0.3],
            "n_units": [20, 20, 20],
            "n_units_with": [5, 10, 2],
        }
    )


def test_bars_are_the_proportions_with_ci_whiskers(tmp_path):
    ax = pfind.prevalence_bars(_prevalence())
    (bars,) = ax.containers[:1]
    # sorted: largest on top (highest y)
    assert [t.get_text() for t in ax.get_yticklabels()] == ["bracket", "decay", "restoration"]
    np.testing.assert_allclose([b.get_width() for b in bars], [10.0, 25.0, 50.0])
    err = next(c for c in ax.containers if type(c).__name__ == "ErrorbarContainer")
    segs = err.lines[2][0].get_segments()
    np.testing.assert_allclose([s[:, 0] for s in segs], [[2, 30], [10, 45], [30, 70]])
    assert sorted(t.get_text() for t in ax.texts) == ["10/20", "2/20", "5/20"]
    assert ax.get_xlabel() == "Prevalence (%)"
    save_all(ax, tmp_path, "prevalence_bars")


def test_grouped_bars_from_the_findings_analysis():
    f = pd.concat([findings(f"P{i:03d}") for i in range(1, 13)], ignore_index=True)
    images = pd.DataFrame(
        {
            "patient_id": [f"P{i:03d}" for i in range(1, 13)],
            "timestamp": "2024-03-01",
            "source": "clinical",
            "sex": ["F", "M"] * 6,
        }
    )
    res = dfindings.prevalence(f, images=images, by="sex")
    ax = pfind.prevalence_bars(res.prevalence, by="sex", sort=False)
    bars = [c for c in ax.containers if type(c).__name__ == "BarContainer"]
    assert len(bars) == 2
    assert [t.get_text() for t in ax.get_legend().get_texts()] == ["F", "M"]
    labels = [t.get_text().replace(" ", "_") for t in ax.get_yticklabels()]  # shown with spaces
    fem = res.prevalence[res.prevalence["sex"] == "F"].set_index("class_name")["prevalence"]
    np.testing.assert_allclose(
        [b.get_width() for b in bars[0]], 100 * fem.reindex(labels).to_numpy()
    )
    assert bars[0][0].get_y() != bars[1][0].get_y()  # side by side


def test_ambiguous_labels_are_refused():
    t = pd.concat([_prevalence(), _prevalence()])
    with pytest.raises(InputError, match="share the bar label"):
        pfind.prevalence_bars(t)
