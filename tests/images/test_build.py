"""images.build_manifest against a real S3 server (moto's server mode, see conftest.py).

The presigned URLs are fetched over HTTP from the server to prove they give the image;
what a file name means is checked against the pattern by hand.
"""

from __future__ import annotations

import hashlib
import hmac
from datetime import timedelta
from urllib.parse import parse_qs, urlsplit

import pandas as pd
import pytest
import requests

from dentalkit.errors import ConfigurationError, InputError, MissingDependencyError
from dentalkit.images import build_manifest, required_lifetime

SECRET = "k3Jx9QvL2mZ7pR4sT8wYb1nC6dF0gH5j"


def _put(fs, bucket: str, files: dict[str, bytes]) -> None:
    fs.pipe({f"{bucket[5:]}/{k}": v for k, v in files.items()})


def _pseudonym(pid: str) -> str:
    return "P" + hmac.new(SECRET.encode(), pid.encode(), hashlib.sha256).hexdigest().upper()[:12]


def test_object_store_prefix_gives_presigned_urls_and_lists_every_file_left_out(s3):
    options, bucket, fs = s3
    images = {
        "study/P001/2024-03-05/lateral_ceph.png": b"ceph-1",
        "study/P001/2024-03-05/pano.png": b"pano-1",
        "study/P002/20240612/lateral_ceph.png": b"ceph-2",
        "study/P002/05.06.2024/lateral_ceph.png": b"bad date",
        "study/P003/2024-03-05/ceph.png": b"unknown kind",
        "study/notes.txt": b"not an image",
    }
    _put(fs, bucket, images)
    built = build_manifest(
        f"{bucket}/study",
        pattern="{patient_id}/{date}/{kind}.png",
        lifetime="2h",
        storage_options=options,
        errors="collect",
    )
    m = built.manifest
    # by hand: lateral_ceph → 1 endpoint, pano → 2 (panos_findings, pano_segmentation)
    assert m[["patient_id", "timestamp", "endpoint"]].to_numpy().tolist() == [
        ["P001", "2024-03-05", "panos_findings"],
        ["P001", "2024-03-05", "pano_segmentation"],
        ["P001", "2024-03-05", "ceph_lateral_points"],
        ["P002", "2024-06-12", "ceph_lateral_points"],
    ]
    assert list(m.columns) == ["patient_id", "timestamp", "endpoint", "image_url"]
    for url, key in zip(
        m["image_url"],
        ["P001/2024-03-05/pano.png"] * 2
        + ["P001/2024-03-05/lateral_ceph.png", "P002/20240612/lateral_ceph.png"],
        strict=True,
    ):
        query = parse_qs(urlsplit(url).query)
        assert query["X-Amz-Expires"] == ["7200"]  # the stated lifetime, Signature V4
        assert query["X-Amz-Algorithm"] == ["AWS4-HMAC-SHA256"]
        assert requests.get(url, timeout=10).content == images[f"study/{key}"]
    assert requests.get(m["image_url"][0].split("?")[0], timeout=10).status_code == 403
    assert built.expires_at - built.created_at == timedelta(hours=2)
    # every other file is a problem row naming it, with why
    p = built.problems.set_index("path")
    assert sorted(p.index) == [
        "P002/05.06.2024/lateral_ceph.png",
        "P003/2024-03-05/ceph.png",
        "notes.txt",
    ]
    assert "date_format" in p.loc["P002/05.06.2024/lateral_ceph.png", "reason"]
    assert "unknown kind 'ceph'" in p.loc["P003/2024-03-05/ceph.png", "reason"]
    assert "0 folder(s) deep, the pattern 2" in p.loc["notes.txt", "reason"]
    assert set(p["severity"]) == {"error"} and set(p["table"]) == {"images"}


def test_raise_mode_names_every_file_left_out(s3):
    options, bucket, fs = s3
    _put(
        fs,
        bucket,
        {"a/P1/2024-01-02/pano.png": b"x", "a/P1/2024-01-02/x.png": b"y", "a/readme": b"z"},
    )
    with pytest.raises(InputError, match="left files out") as info:
        build_manifest(
            f"{bucket}/a", pattern="{patient_id}/{date}/{kind}.png", storage_options=options
        )
    assert "P1/2024-01-02/x.png" in str(info.value) and "readme" in str(info.value)
    assert len(info.value.problems) == 2
    # declared as not images, they are counted, not listed
    built = build_manifest(
        f"{bucket}/a",
        pattern="{patient_id}/{date}/{kind}.png",
        storage_options=options,
        ignore=["readme", "x.png"],
    )
    assert built.ignored == 2 and len(built.problems) == 0 and len(built.manifest) == 2


def test_a_lifetime_shorter_than_the_fetch_is_refused_with_the_estimate(s3):
    options, bucket, fs = s3
    _put(fs, bucket, {f"s/P{i:03d}/2024-01-02/pano.png": b"x" for i in range(40)})
    # 40 images × 2 endpoints = 80 requests; 8 at a time → 10 waves × 10 s + 1 h = 3,700 s
    assert required_lifetime(80, workers=8) == timedelta(seconds=3700)
    with pytest.raises(InputError) as info:
        build_manifest(
            f"{bucket}/s",
            pattern="{patient_id}/{date}/{kind}.png",
            lifetime=3600,
            storage_options=options,
        )
    text = str(info.value)
    assert "80 requests" in text and "1 h 1 min" in text and "--lifetime 2h" in text
    with pytest.raises(InputError, match="at most 7d"):
        build_manifest(
            f"{bucket}/s",
            pattern="{patient_id}/{date}/{kind}.png",
            lifetime="8d",
            storage_options=options,
        )


def test_local_images_need_an_upload_and_say_so(tmp_path):
    (tmp_path / "P1" / "2024-01-02").mkdir(parents=True)
    (tmp_path / "P1" / "2024-01-02" / "pano.png").write_bytes(b"x")
    with pytest.raises(InputError) as info:
        build_manifest(tmp_path, pattern="{patient_id}/{date}/{kind}.png")
    assert "--upload s3://BUCKET/PREFIX" in str(info.value) and "full URL" in str(info.value)
    with pytest.raises(InputError, match="upload to an object store"):
        build_manifest(tmp_path, pattern="{patient_id}/{date}/{kind}.png", upload_to=str(tmp_path))


def test_upload_copies_local_images_under_pseudonyms_once(tmp_path, s3):
    options, bucket, fs = s3
    folder = tmp_path / "clinic"
    for pid, data in (("HOSP-0001", b"first"), ("HOSP-0002", b"second")):
        (folder / pid / "2024-01-02").mkdir(parents=True)
        (folder / pid / "2024-01-02" / "lateral_ceph.png").write_bytes(data)
    kwargs = dict(
        pattern="{patient_id}/{date}/{kind}.png",
        upload_to=f"{bucket}/up",
        secret=SECRET,
        storage_options=options,
    )
    built = build_manifest(folder, **kwargs)
    m = built.manifest
    assert built.uploaded == 2
    assert sorted(m["patient_id"]) == sorted([_pseudonym("HOSP-0001"), _pseudonym("HOSP-0002")])
    for pid, data in (("HOSP-0001", b"first"), ("HOSP-0002", b"second")):
        url = m.loc[m["patient_id"] == _pseudonym(pid), "image_url"].item()
        assert pid not in url and requests.get(url, timeout=10).content == data
        key = f"up/{_pseudonym(pid)}/2024-01-02/lateral_ceph-{hashlib.sha256(data).hexdigest()[:12]}.png"
        assert fs.cat(f"{bucket[5:]}/{key}") == data
    again = build_manifest(folder, **kwargs)
    assert again.uploaded == 0 and again.manifest["patient_id"].tolist() == m["patient_id"].tolist()


def test_an_identifier_in_a_store_key_is_not_sent_beside_its_pseudonym(s3):
    options, bucket, fs = s3
    _put(fs, bucket, {"k/HOSP-0001/2024-01-02/pano.png": b"x"})
    built = build_manifest(
        f"{bucket}/k",
        pattern="{patient_id}/{date}/{kind}.png",
        secret=SECRET,
        storage_options=options,
        errors="collect",
    )
    assert built.manifest.empty
    assert "original identifier" in built.problems["reason"].item()
    assert "HOSP-0001" not in str(built.problems["reason"].item())


def test_mapping_csv_with_calibration_and_its_problems(tmp_path, s3):
    options, bucket, fs = s3
    _put(fs, bucket, {"m/img1.png": b"1", "m/img2.png": b"2", "m/img3.png": b"3"})
    mapping = tmp_path / "map.csv"  # semicolon-separated, as spreadsheets in many locales write
    mapping.write_text(
        "file;patient_id;date;kind;mm_per_px\n"
        "img1.png;P1;2024-01-02;lateral_ceph;0.1\n"
        "img2.png;P2;2024-01-02;model_upper;\n"
        "gone.png;P3;2024-01-02;pano;\n"
        "img1.png;P4;2024-01-02;pano;\n",
        encoding="utf-8",
    )
    built = build_manifest(
        f"{bucket}/m", mapping=mapping, storage_options=options, errors="collect"
    )
    m = built.manifest
    assert m[["patient_id", "endpoint"]].to_numpy().tolist() == [
        ["P1", "ceph_lateral_points"],
        ["P2", "occlusogram_upper_points"],
        ["P2", "occlusogram_upper_seg"],
    ]
    assert m["mm_per_px"].tolist()[0] == 0.1 and m["mm_per_px"].isna().tolist() == [
        False,
        True,
        True,
    ]
    assert m["calibration_source"].tolist()[0] == "manifest" and m["mm_per_px"].dtype == "float64"
    p = built.problems
    rows = dict(zip(p["path"], zip(p["table"], p["row"], p["reason"], strict=True), strict=True))
    assert rows["gone.png"][:2] == ("mapping", 3) and "no such file" in rows["gone.png"][2]
    assert rows["img3.png"][0] == "images" and "not in the mapping" in rows["img3.png"][2]
    assert "earlier mapping row" in rows["img1.png"][2] and rows["img1.png"][1] == 4
    bad = tmp_path / "bad.csv"
    bad.write_text("file,patient,date\nimg1.png,P1,2024-01-02\n", encoding="utf-8")
    with pytest.raises(InputError, match=r"'patient' \(did you mean 'patient_id'"):
        build_manifest(f"{bucket}/m", mapping=bad, storage_options=options)


def test_plain_http_store_endpoint_is_refused_before_any_upload(tmp_path):
    (tmp_path / "P1" / "2024-01-02").mkdir(parents=True)
    (tmp_path / "P1" / "2024-01-02" / "pano.png").write_bytes(b"x")
    options = {"endpoint_url": "http://s3.example.org", "key": "k", "secret": "s"}
    with pytest.raises(ConfigurationError, match="unencrypted"):
        build_manifest(
            tmp_path,
            pattern="{patient_id}/{date}/{kind}.png",
            upload_to="s3://bucket/x",
            storage_options=options,
        )


def test_gcs_and_azure_name_their_extra_when_missing():
    for url, extra, package in (("gs://b/p", "gcs", "gcsfs"), ("az://c/p", "azure", "adlfs")):
        try:
            __import__(package)
        except ImportError:
            with pytest.raises(MissingDependencyError, match=rf"dentalkit\[{extra}\]"):
                build_manifest(url, pattern="{patient_id}/{kind}.png")


def test_manifest_fetches_against_the_sandbox(tmp_path, s3, sandbox):
    from dentalkit import Client, fetch_cohort

    options, bucket, fs = s3
    _put(fs, bucket, {"f/P9/2024-01-02/lateral_ceph.png": b"x", "f/P9/2024-01-02/tmj.png": b"y"})
    built = build_manifest(
        f"{bucket}/f", pattern="{patient_id}/{date}/{kind}.png", storage_options=options
    )
    path = tmp_path / "manifest.csv"
    assert built.write(path) == [path]
    client = Client(sandbox.base_url, api_key=sandbox.api_key, cache="memory")
    report = fetch_cohort(path, out=tmp_path / "store", client=client)
    responses = report.responses()
    assert sorted(responses["endpoint"]) == ["ceph_lateral_points", "tmj_xsectional"]
    assert (responses["status_code"] == 200).all()
    assert set(responses["image_url"]) == set(pd.read_csv(path)["image_url"])


def test_dicom_in_a_store_is_converted_locally_and_uploaded(tmp_path, s3):
    pytest.importorskip("pydicom")
    from tests.images.dicom_files import PATIENT_ID, write_dicom

    options, bucket, fs = s3
    path = write_dicom(tmp_path / "src.dcm", PixelSpacing=[0.1, 0.1], Modality="CT")
    _put(fs, bucket, {"dcm/a/tmj.dcm": path.read_bytes()})
    common = dict(pattern="{*}/{kind}.dcm", storage_options=options)
    with pytest.raises(InputError, match="give upload_to="):
        build_manifest(f"{bucket}/dcm", png_dir=tmp_path / "png", **common)
    built = build_manifest(
        f"{bucket}/dcm",
        png_dir=tmp_path / "png",
        upload_to=f"{bucket}/png",
        secret=SECRET,
        **common,
    )
    row = built.manifest.iloc[0]
    assert row["patient_id"] == _pseudonym(PATIENT_ID) and row["endpoint"] == "tmj_xsectional"
    assert row["mm_per_px"] == 0.1 and row["calibration_source"] == "dicom:PixelSpacing"
    png = requests.get(row["image_url"], timeout=10).content
    assert png[:8] == b"\x89PNG\r\n\x1a\n"
    (local,) = (tmp_path / "png").rglob("*.png")  # the same PNG is kept locally
    assert local.read_bytes() == png and local.parent.parent.name == _pseudonym(PATIENT_ID)
