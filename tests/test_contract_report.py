"""The contract report against hand-made drift (issue 20, item 2).

Clean bodies come from the sandbox's pure simulator (``simulate.respond``); every
expected row below is written by hand from the mutation applied, never read back from the
report.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import pandas as pd
import pytest
from typer.testing import CliRunner

from dentalkit.cli import app
from dentalkit.contract import CONTRACT_COLUMNS, contract_markdown, contract_report, write_contract
from dentalkit.endpoints import ENDPOINTS
from dentalkit.errors import InputError
from dentalkit.sandbox.simulate import estimate_tle, respond

TS = "2024-03-05T10:00:00Z"
FETCHED = datetime(2024, 3, 5, 12, 0, tzinfo=UTC)


def _link(hours: float, host: str = "out.example.org") -> str:
    expires = int((FETCHED + timedelta(hours=hours)).timestamp())
    return f"https://{host}/o.png?expires={expires}&signature=ab"


def clean(name: str, pid: str) -> dict:
    ep = ENDPOINTS[name]
    if name == "tle":
        return estimate_tle({f"p{i:02d}": v for i, v in enumerate(
            ["14", "F", "2", "1", "0", "4.5", "3", "0", "0", "0", "5.0"], 1)})  # fmt: skip
    body = respond(
        ep, {"PatientID": pid, "TimeStamp": TS, "ImageName": f"https://i.example.org/{pid}.png"}
    )
    if ep.output_image:
        body["OutputImageUrl"] = _link(72)
    return body


def frame(rows: list[tuple[str, str, dict | str]]) -> pd.DataFrame:
    return pd.DataFrame(
        {
            "endpoint": [r[0] for r in rows],
            "patient_id": [r[1] for r in rows],
            "timestamp": TS,
            "body": [r[2] if isinstance(r[2], str) else json.dumps(r[2]) for r in rows],
            "status_code": 200,
            "fetched_at": FETCHED,
            "error": None,
        }
    )


def drift_rows(report: pd.DataFrame) -> set[tuple]:
    d = report[report["verdict"] == "drift"]
    return set(
        d[["endpoint", "aspect", "item", "n_responses", "n_patients"]].itertuples(
            index=False, name=None
        )
    )


def test_clean_sandbox_bodies_show_no_drift():
    rows = [(name, pid, clean(name, pid)) for name in ENDPOINTS for pid in ("P1", "P2")]
    report = contract_report(frame(rows))
    assert list(report.columns) == list(CONTRACT_COLUMNS)
    assert drift_rows(report) == set()
    base = report[report["aspect"] == "responses"].set_index("endpoint")
    assert base["n_responses"].to_dict() == dict.fromkeys(ENDPOINTS, 2)
    assert base["n_patients"].to_dict() == dict.fromkeys(ENDPOINTS, 2)
    life = report[report["aspect"] == "output_link_lifetime"]
    assert set(life["verdict"]) == {"ok"} and life["item"].str.startswith("72.0 h").all()


def test_each_kind_of_drift_is_one_visible_row():
    rows = []
    # ceph lateral: an extra top-level field, one landmark's x as a string, a new key
    b = clean("ceph_lateral_points", "P1")
    b["Confidence"] = 0.9
    first = next(iter(b["Results"]))
    b["Results"][first]["x_coordinate"] = str(b["Results"][first]["x_coordinate"])
    b["Results"]["Later_170"] = {"x_coordinate": 1.0, "y_coordinate": 2.0}
    rows.append(("ceph_lateral_points", "P1", b))
    rows.append(("ceph_lateral_points", "P2", clean("ceph_lateral_points", "P2")))
    # another Version on the second patient's panoramic findings; a missing PatientID
    b = clean("panos_findings", "P2")
    b["Version"] = "3.0.0"
    del b["PatientID"]
    rows += [("panos_findings", "P1", clean("panos_findings", "P1")), ("panos_findings", "P2", b)]
    # a new class (in Results and ImageContents) and another TimeStamp format
    b = clean("clinical_images", "P1")
    b["Results"]["fracture"] = [{"ClassName": "fracture", "TopLeft": [1, 2], "BottomRight": [3, 4]}]
    b["ImageContents"]["fracture"] = 1
    b["TimeStamp"] = "05/03/2024 10:00"
    rows.append(("clinical_images", "P1", b))
    # a new category, a TMJ wording nobody knows, a tooth key outside the grammar
    b = clean("classifier", "P1")
    b["Classification"]["category"] = "cbct_axial"
    rows.append(("classifier", "P1", b))
    for pid in ("P1", "P2"):
        b = clean("tmj_xsectional", pid)
        b["Results"]["Finding"] = "Clinical correlation advised."
        rows.append(("tmj_xsectional", pid, b))
    b = clean("pano_segmentation", "P1")
    b["Results"]["i1_mid_up"] = {"missing": True, "points": [[0, 0]]}
    b["OutputImageUrl"] = _link(24, host="cdn.example.net")
    rows.append(("pano_segmentation", "P1", b))
    rows.append(("classifier", "P3", "{not json"))
    report = contract_report(frame(rows))
    assert drift_rows(report) == {
        ("ceph_lateral_points", "extra_field", "Confidence", 1, 1),
        ("ceph_lateral_points", "type_change", "Results.*.x_coordinate", 1, 1),
        ("ceph_lateral_points", "unknown_label", "landmark Later_170", 1, 1),
        (
            "ceph_lateral_points",
            "landmark_count",
            "NumberOfPredictedPoints 169, 170 landmarks",
            1,
            1,
        ),
        ("panos_findings", "missing_field", "PatientID", 1, 1),
        # every response that carried a Version, and its patient (issue 30: was 1 and 0)
        ("panos_findings", "versions_pooled", "2.1.0-sandbox, 3.0.0", 2, 2),
        ("clinical_images", "unknown_label", "class fracture", 1, 1),
        ("clinical_images", "timestamp_format", "99/99/9999 99:99", 1, 1),
        ("classifier", "unknown_label", "category cbct_axial", 1, 1),
        ("classifier", "malformed_body", "not JSON", 1, 1),
        ("tmj_xsectional", "tmj_sentence", "Clinical correlation advised.", 2, 2),
        ("pano_segmentation", "unknown_label", "tooth key i1_mid_up", 1, 1),
        ("pano_segmentation", "output_link_lifetime", "24.0 h (median; 24.0–24.0)", 1, 1),
    }
    tc = report[(report["aspect"] == "type_change")].iloc[0]
    assert (tc["expected"], tc["seen"]) == ("number", "string")
    versions = report[(report["endpoint"] == "panos_findings") & (report["aspect"] == "version")]
    assert dict(zip(versions["item"], versions["n_responses"], strict=True)) == {
        "2.1.0-sandbox": 1,
        "3.0.0": 1,
    }
    hosts = report[report["aspect"] == "output_link_host"]
    assert "cdn.example.net" in set(hosts["item"])
    md = contract_markdown(report)
    for needle in ("Later_170", "x_coordinate", "cbct_axial", "Clinical correlation advised.",
                   "99/99/9999 99:99", "3.0.0", "i1_mid_up", "cdn.example.net"):  # fmt: skip
        assert needle in md, needle


@pytest.mark.parametrize(
    ("vendor", "hours"),
    [("Amz", 24.0), ("Goog", 48.0)],  # dated 10:00, fetched 12:00: lifetime − 2 h
)
def test_v4_signed_links_state_their_lifetime(vendor, hours):
    """SigV4 and Google's V4 links (``X-…-Date`` + ``X-…-Expires``) are read by the same
    function as the manifest check; before it, a Google link's lifetime was "not stated"."""
    seconds = int((hours + 2) * 3600)
    b = clean("pano_segmentation", "P1")
    b["OutputImageUrl"] = (
        f"https://storage.example.com/o.png?X-{vendor}-Date=20240305T100000Z"
        f"&X-{vendor}-Expires={seconds}&X-{vendor}-Signature=00ff"
    )
    report = contract_report(frame([("pano_segmentation", "P1", b)]))
    life = report[report["aspect"] == "output_link_lifetime"]
    assert list(life["item"]) == [f"{hours:.1f} h (median; {hours:.1f}–{hours:.1f})"]


def test_writer_and_cli(tmp_path):
    rows = [(name, "P1", clean(name, "P1")) for name in ("classifier", "tmj_xsectional")]
    report = contract_report(frame(rows))
    paths = write_contract(report, tmp_path / "c")
    back = pd.read_parquet(paths["parquet"])
    # written with its declaration: endpoint (a key) and verdict are categorical on disk
    assert isinstance(back["verdict"].dtype, pd.CategoricalDtype)
    pd.testing.assert_frame_equal(back, report, check_dtype=False, check_categorical=False)
    assert paths["markdown"].read_text().startswith("# Contract report")
    with pytest.raises(InputError, match="lacks column"):
        contract_report(pd.DataFrame({"endpoint": []}))
    missing = CliRunner().invoke(
        app, ["contract", str(tmp_path / "nostore"), "--out", str(tmp_path / "x")]
    )
    assert missing.exit_code == 2 and "not a dentalkit responses store" in missing.output


def test_contract_command_on_a_store(tmp_path):
    from dentalkit.fetch.client import Client
    from dentalkit.fetch.cohort import fetch_cohort
    from dentalkit.sandbox import running

    m = pd.DataFrame(
        {"patient_id": ["A", "B"], "timestamp": "2024-03-05", "image_url": ["https://i.example.org/a.png", "https://i.example.org/b.png"]}
    )  # fmt: skip
    with running() as sb, Client(sb.base_url, api_key=sb.api_key, cache="memory") as c:
        fetch_cohort(m, ["classifier", "tmj_xsectional"], tmp_path / "s", client=c, progress=False)
    result = CliRunner().invoke(
        app, ["contract", str(tmp_path / "s"), "--out", str(tmp_path / "r")]
    )
    assert result.exit_code == 0, result.output
    assert "classifier" in result.output and "0 drift" in result.output
    assert (tmp_path / "r" / "contract.md").exists() and (
        tmp_path / "r" / "contract.parquet"
    ).exists()
    assert sb.api_key not in (tmp_path / "r" / "contract.md").read_text()


def test_known_labels_cover_the_sandbox_documented_labels():
    from dentalkit.contract import _known_labels
    from dentalkit.sandbox._findings import CATEGORIES
    from dentalkit.sandbox._patient import CLINICAL_CLASSES, PANO_CLASSES

    known = _known_labels()
    assert {*CLINICAL_CLASSES, *PANO_CLASSES} == set(known["class_name"])
    assert set(CATEGORIES.values()) == set(known["category"])
    assert {"decay", "restoration"} <= known["class_name"]  # the spec's two
