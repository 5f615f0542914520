"""An implausible scale is named (issue 32, item 3): lengths against human ranges.

``--mm-per-px ceph_lateral_points=10`` (a hundred times the sandbox's 0.1 mm per pixel)
made a median N–Me of about 10,000 mm without a word. Now the study's analyses flag each
length whose median over the images of one scale is outside the range in
``dentalkit/data/plausible_ranges.csv`` (a warning row of ``study.implausible_lengths`` and
one ``DentalkitWarning`` naming the scale, its source and the endpoint), and the right
scale is not flagged. The expected medians are the sandbox's lateral lengths at its
documented scale times the factor of the wrong one (the sandbox's image specification).
"""

from __future__ import annotations

import socket

import pandas as pd
import pytest
from typer.testing import CliRunner

from dentalkit.cli import app
from dentalkit.errors import DentalkitWarning
from dentalkit.study import Design, run
from dentalkit.study.demo import demo_manifest, sandbox_calibration, sandbox_patients

PRODUCER = "study.implausible_lengths"
LATERAL = "ceph_lateral_points"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def two(tmp_path_factory):
    """(client, manifest of 2 sandbox patients' cephalograms, patients, folder)."""
    from dentalkit.fetch.client import Client
    from dentalkit.sandbox import running

    folder = tmp_path_factory.mktemp("plausible")
    with running(port=_free_port()) as sb:
        client = Client(sb.base_url, api_key=sb.api_key, cache=folder / "http-cache.sqlite")
        patients = sandbox_patients(["DEMO-001", "DEMO-002"])
        manifest = demo_manifest(sb, patients)
        manifest = manifest[manifest["endpoint"].isin([LATERAL, "ceph_frontal_points"])]
        try:
            yield client, manifest.reset_index(drop=True), patients, folder
        finally:
            client.close()


def _run(two, name: str, manifest: pd.DataFrame, scales: dict[str, float]):
    client, _, patients, folder = two
    design = Design(out=folder / name, figures=(), dpi=300, mm_per_px=scales)
    result = run(manifest, patients=patients, design=design, client=client, echo=lambda _: None)
    problems = result.analysis_problems
    flagged = problems[problems["producer"].astype(str) == PRODUCER]
    measures = pd.read_parquet(design.out / "analyses" / "ceph_measures.parquet")
    return result, flagged, measures, design.out


def _median(measures: pd.DataFrame, measure: str) -> float:
    rows = measures[(measures["view"] == "lateral") & (measures["measure"] == measure)]
    return float(rows["value"].median())


def test_the_right_scale_is_not_flagged(two):
    _, manifest, _, _ = two
    result, flagged, measures, _ = _run(two, "right", manifest, sandbox_calibration())
    assert len(flagged) == 0 and result.left_out == 0
    assert 75 <= _median(measures, "N_Me") <= 150  # a human N-Me (the range's own bounds)


def test_ten_mm_per_pixel_is_flagged_with_its_source_and_fix(two):
    _, manifest, _, out = two
    right = sandbox_calibration()[LATERAL]
    wrong = {**sandbox_calibration(), LATERAL: 10.0}
    with pytest.warns(DentalkitWarning, match=r"ceph_lateral_points mm_per_px 10 \(endpoint"):
        result, flagged, measures, out = _run(two, "wrong", manifest, wrong)
    n_me = _median(measures, "N_Me")
    assert n_me > 5_000  # about 10,000 mm: 100 times the sandbox's scale of 0.1 mm/px
    paths = set(flagged["path"])
    assert {"lateral/N_Me", "lateral/S_N", "lateral/S_Go", "lateral/ANS_Me"} <= paths
    assert not any(p.startswith("frontal/") for p in paths)  # its scale is right
    row = flagged[flagged["path"] == "lateral/N_Me"].iloc[0]
    assert row["endpoint"] == LATERAL and row["value"] == "10" and row["severity"] == "warning"
    assert pd.isna(row["patient_id"])  # an endpoint's scale concerns all its images
    assert f"median N_Me {n_me:,.1f} mm at mm_per_px 10" in row["reason"]
    assert "endpoint fallback of ceph_lateral_points (4 image(s))" in row["reason"]
    assert "75–150 mm" in row["reason"] and "--mm-per-px ceph_lateral_points=VALUE" in row["reason"]
    # a length wrong by a factor of 100 is the scale's: right / wrong = 100 for every length
    assert n_me * right / 10.0 == pytest.approx(
        _median(_run(two, "right", manifest, sandbox_calibration())[2], "N_Me"), rel=1e-9
    )
    assert result.left_out == len(flagged)  # the command exits 1: someone must look
    assert "study.implausible_lengths" in (out / "report.md").read_text(encoding="utf-8")


def test_an_image_of_its_own_wrong_scale_is_named(two):
    """A manifest column ``mm_per_px``: one image's own scale is wrong, the others right."""
    _, manifest, _, _ = two
    right = sandbox_calibration()
    table = manifest.assign(mm_per_px=manifest["endpoint"].map(right))
    bad = (table["patient_id"] == "DEMO-002") & (table["endpoint"] == LATERAL)
    bad &= table["timestamp"] == table["timestamp"].min()
    table.loc[bad, "mm_per_px"] = 1.0  # ten times the scale
    with pytest.warns(DentalkitWarning, match="image DEMO-002"):
        _, flagged, _, _ = _run(two, "own", table, {})
    assert len(flagged) and set(flagged["patient_id"]) == {"DEMO-002"}
    assert set(flagged["timestamp"]) == {table["timestamp"].min()}
    assert flagged["reason"].str.contains("the image's own scale").all()
    assert flagged["reason"].str.contains("the manifest's column").all()


def test_the_command_line_exits_1_and_names_the_scale(two, tmp_path):
    _, manifest, patients, _ = two
    manifest.to_csv(tmp_path / "manifest.csv", index=False)
    patients.to_csv(tmp_path / "patients.csv", index=False)
    (tmp_path / "study.toml").write_text("[figures]\ndraw = []\ndpi = 300\n")
    result = CliRunner().invoke(
        app,
        [
            "study",
            str(tmp_path / "manifest.csv"),
            *("--patients", str(tmp_path / "patients.csv")),
            *("--design", str(tmp_path / "study.toml"), "--out", str(tmp_path / "out")),
            *("--mm-per-px", f"{LATERAL}=10", "--mm-per-px", "ceph_frontal_points=0.1"),
            *("--sandbox", "--port", str(_free_port()), "--no-progress"),
        ],
    )
    assert result.exit_code == 1, result.output
    assert "study.implausible_lengths" in result.output
    assert "implausible calibration" in result.output
