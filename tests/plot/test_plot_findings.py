"""Finding boxes over an image and prevalence bar charts with CIs."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dentalkit import findings as dfindings
from dentalkit.errors import InputError
from dentalkit.plot import findings as pfind
from tests.plot.plot_tables import findings, patient_with_findings, save_all


def _boxes_of(ax):
    """(class, x, y, width, height) of every drawn box, from the per-class collections."""
    out = []
    for coll in ax.collections:
        if str(coll.get_gid()).startswith("boxes:"):
            cls = coll.get_gid().split(":", 1)[1]
            for path in coll.get_paths():
                (x0, y0), (x1, y1) = path.vertices.min(axis=0), path.vertices.max(axis=0)
                out.append((cls, x0, y0, x1 - x0, y1 - y0))
    return out


def _colours(ax):
    return {
        c.get_gid(): c.get_edgecolor()[0]
        for c in ax.collections
        if str(c.get_gid()).startswith("boxes:")
    }


def test_boxes_match_the_detections_and_classes_keep_their_colour(tmp_path):
    f = pd.concat([findings(f"P{i:03d}") for i in range(1, 21)], ignore_index=True)
    # two patients with detections of a common class (whichever the sandbox draws)
    classes = f.groupby("patient_id")["class_name"].agg(set)
    first, second = next(
        (a, b) for a in classes.index for b in classes.index if a < b and classes[a] & classes[b]
    )
    ax = pfind.boxes(f, (first, "2024-03-01"))
    one = f[f["patient_id"] == first]
    boxes = _boxes_of(ax)
    assert len(boxes) == len(one)
    got = sorted(boxes)
    want = sorted(
        zip(
            one["class_name"],
            one["x0"],
            one["y0"],
            one["x1"] - one["x0"],
            one["y1"] - one["y0"],
            strict=True,
        )
    )
    assert [g[0] for g in got] == [w[0] for w in want]  # each box in its class's colour
    np.testing.assert_allclose([g[1:] for g in got], [w[1:] for w in want])
    assert all(
        len(c.get_facecolor()) == 0 or c.get_facecolor()[0][3] == 0
        for c in ax.collections
        if str(c.get_gid()).startswith("boxes:")
    )  # unfilled
    assert ax.yaxis_inverted()
    counts = one["class_name"].value_counts()
    legend = [t.get_text() for t in ax.get_legend().get_texts()]
    assert legend == [f"{c.replace('_', ' ')} ({counts[c]})" for c in sorted(counts.index)]
    # the same class has the same colour in another image of the same table
    other = _colours(pfind.boxes(f, (second, "2024-03-01")))
    colour = _colours(ax)
    shared = set(colour) & set(other)
    assert shared
    for gid in shared:
        np.testing.assert_allclose(other[gid], colour[gid])
    save_all(ax, tmp_path, "boxes")


def test_boxes_over_the_photograph():
    from dentalkit.sandbox.render import input_image

    pid = patient_with_findings()
    png = input_image(f"intraoral_frontal/{pid}/2024-03-01.png")
    ax = pfind.boxes(findings(pid), image=png, labels=False)
    assert ax.get_ylim() == (1199.5, -0.5) and ax.get_xlim() == (-0.5, 1599.5)
    assert len(ax.get_images()) == 1 and not ax.texts


def test_bad_boxes_are_refused():
    f = findings()
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
