"""No identifying DICOM tag leaves the user's machine.

DICOM files of a made-up patient (name, birth date, Patient ID, accession number, physician,
institution) go through the whole way: manifest (upload to a real S3 server, PNG
conversion, pseudonym) → fetch against the sandbox → tables. Then the test reads what the
sandbox received (its per-request log of PatientID, TimeStamp and ImageName), every object
in the bucket (what the service would download) and every byte of every file written, and
finds none of the identifying values. The pseudonym is recomputed here with ``hmac``.
"""

from __future__ import annotations

import hashlib
import hmac
import warnings

import pytest

from dentalkit import Client, convert, fetch_cohort, io
from dentalkit.errors import DentalkitWarning
from dentalkit.images import build_manifest
from tests.images.dicom_files import IDENTIFYING, PATIENT_ID, write_dicom
from tests.images.test_dicom import _png_chunks

pytest.importorskip("pydicom")
SECRET = "k3Jx9QvL2mZ7pR4sT8wYb1nC6dF0gH5j"


def _leaks(data: bytes) -> list[str]:
    return [s for s in IDENTIFYING if s.encode() in data or s.encode("utf-16-le") in data]


def test_no_name_birth_date_or_original_id_reaches_the_service_or_any_output(tmp_path, s3, sandbox):
    options, bucket, fs = s3
    export = tmp_path / "export"  # the clinic's export: outside the outputs scanned below
    write_dicom(
        export / "visit_0007" / "lateral_ceph.dcm",
        ImagerPixelSpacing=[0.11, 0.11],
        EstimatedRadiographicMagnificationFactor=1.1,
    )
    write_dicom(
        export / "visit_0007" / "pano.dcm",
        PixelSpacing=[0.1, 0.1],
        ImagerPixelSpacing=[0.12, 0.12],
        PixelSpacingCalibrationType="GEOMETRY",
    )
    write_dicom(
        export / "visit_0012" / "lateral_ceph.dcm",
        study_date="20250311",
        ImagerPixelSpacing=[0.1, 0.1],
    )
    out = tmp_path / "out"
    built = build_manifest(
        export,
        pattern="{*}/{kind}.dcm",
        upload_to=f"{bucket}/study",
        png_dir=out / "png",
        secret=SECRET,
        storage_options=options,
        errors="collect",
    )
    manifest_csv = out / "manifest.csv"
    built.write(manifest_csv)
    pseudonym = (
        "P"
        + hmac.new(SECRET.encode(), PATIENT_ID.encode(), hashlib.sha256).hexdigest().upper()[:12]
    )

    m = built.manifest
    assert set(m["patient_id"]) == {pseudonym}
    # calibration by hand: 0.11 mm / 1.1 = 0.1 (detector ÷ magnification); the calibrated
    # Pixel Spacing 0.1 of the pano (both endpoints); detector spacing alone for the 2025 ceph
    got = sorted(
        zip(m["timestamp"], m["endpoint"], m["mm_per_px"], m["calibration_source"], strict=True)
    )
    assert got == [
        (
            "2024-03-05",
            "ceph_lateral_points",
            pytest.approx(0.1),
            "dicom:ImagerPixelSpacing/EstimatedRadiographicMagnificationFactor",
        ),
        ("2024-03-05", "pano_segmentation", 0.1, "dicom:PixelSpacing"),
        ("2024-03-05", "panos_findings", 0.1, "dicom:PixelSpacing"),
        ("2025-03-11", "ceph_lateral_points", 0.1, "dicom:ImagerPixelSpacing"),
    ]
    (warning,) = built.problems.itertuples()
    assert warning.severity == "warning" and "magnification" in warning.reason
    assert warning.path == "visit_0012/lateral_ceph.dcm"

    before = dict(sandbox.stats()["by_request"])
    client = Client(sandbox.base_url, api_key=sandbox.api_key, cache=str(out / "http-cache.sqlite"))
    with warnings.catch_warnings():
        warnings.simplefilter(
            "ignore", DentalkitWarning
        )  # mm_per_px: a column fetch may not read yet
        report = fetch_cohort(manifest_csv, out=out / "store", client=client, errors="collect")
    tables = convert.tables(report.responses(), errors="collect")
    io.write_tables(tables, out / "tables")
    after = sandbox.stats()["by_request"]
    received = [key for key, n in after.items() if n != before.get(key, 0)]
    assert len(received) == 4  # PatientID|TimeStamp|ImageName of each request it validated
    for identity in received:
        _path, patient, _timestamp, _url = identity.split("|")
        assert patient == pseudonym
        assert _leaks(identity.encode()) == [] and "visit_00" not in identity

    objects = fs.find(f"{bucket[5:]}/study")
    assert len(objects) == 3  # three PNGs: what the service downloads
    for key in objects:
        data = fs.cat(key)
        assert _leaks(data) == [] and _png_chunks(data) == ["IHDR", "IDAT", "IEND"]

    written = [p for p in out.rglob("*") if p.is_file()]
    assert {p.suffix for p in written} >= {".csv", ".png", ".parquet", ".sqlite"}
    leaks = {str(p.relative_to(out)): _leaks(p.read_bytes()) for p in written}
    assert {k: v for k, v in leaks.items() if v} == {}
