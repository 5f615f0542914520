"""findings.prevalence on sandbox responses, checked against the simulator's drawn counts."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest

from dentalkit.endpoints import get_endpoint
from dentalkit.findings import prevalence
from dentalkit.sandbox.simulate import respond, truth

N = 40
TS = "2024-03-01"
ENDPOINT = {"clinical": "clinical_images", "pano": "panos_findings"}


def _url(kind, pid):
    # a sandbox image URL tells the simulator which intra-oral photo this is
    return f"http://127.0.0.1:1/_sandbox/images/{kind}/{pid}/{TS}.png"


@pytest.fixture(scope="module")
def cohort():
    dets, counts, images, drawn = [], [], [], []
    for i in range(N):
        pid = f"FIND-{i:03d}"
        for source, name in ENDPOINT.items():
            kind = "intraoral_frontal" if source == "clinical" else "pano"
            req = {"PatientID": pid, "TimeStamp": TS, "ImageName": _url(kind, pid)}
            body = respond(get_endpoint(name), req)
            images.append({"patient_id": pid, "timestamp": TS, "source": source})
            for cls, boxes in body["Results"].items():
                for b in boxes:
                    x0, y0 = b["TopLeft"]
                    x1, y1 = b["BottomRight"]
                    dets.append(
                        {"patient_id": pid, "timestamp": TS, "source": source, "class_name": cls}
                        | {"x0": x0, "y0": y0, "x1": x1, "y1": y1}
                    )
            for cls, n in body.get("ImageContents", {}).items():
                counts.append(
                    {
                        "patient_id": pid,
                        "timestamp": TS,
                        "source": source,
                        "class_name": cls,
                        "count": n,
                    }
                )
        f = truth(pid, TS)["findings"]
        for cls, n in f["clinical_counts"]["intraoral_frontal"].items():
            drawn.append({"patient_id": pid, "source": "clinical", "class_name": cls, "n": n})
        for cls, n in f["pano_counts"].items():
            drawn.append({"patient_id": pid, "source": "pano", "class_name": cls, "n": n})
    return pd.DataFrame(dets), pd.DataFrame(counts), pd.DataFrame(images), pd.DataFrame(drawn)


def test_prevalence_and_rates_equal_the_drawn_counts(cohort):
    findings, counts, images, drawn = cohort
    res = prevalence(findings, counts, images=images, classes=["decay", "restoration"])
    assert res.consistency.empty  # the sandbox's ImageContents match its Results
    got = res.prevalence.set_index(["source", "class_name"])
    for (source, cls), grp in drawn.groupby(["source", "class_name"]):
        if not (grp["n"] > 0).any() and (source, cls) not in got.index:
            continue
        row = got.loc[(source, cls)]
        assert row["n_units"] == N
        assert row["n_units_with"] == (grp["n"] > 0).sum(), (source, cls)
        assert row["detections_per_image"] == pytest.approx(grp["n"].sum() / N)


def test_clean_panoramic_images_count_in_the_denominator(cohort):
    findings, counts, images, drawn = cohort
    pano_with = drawn[(drawn["source"] == "pano") & (drawn["n"] > 0)]["patient_id"].nunique()
    assert 0 < pano_with < N  # some panos came back with Results {}
    res = prevalence(findings, counts, images=images)
    per_image = res.images.set_index(["patient_id", "source"])["n_detections"]
    assert (per_image.xs("pano", level="source") == 0).sum() == N - pano_with
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        inferred = prevalence(findings, counts)
    pano_rows = inferred.prevalence[inferred.prevalence["source"] == "pano"]
    assert (pano_rows["n_units"] == pano_with).all()  # what goes wrong without images=
    assert np.all(
        pano_rows["prevalence"].to_numpy()
        >= res.prevalence[res.prevalence["source"] == "pano"]["prevalence"].to_numpy()
    )
