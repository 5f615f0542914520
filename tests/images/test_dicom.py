"""DICOM: pixel spacing as calibration (precedence of the tags), PNG conversion, pseudonyms.

Expected values are computed by hand from the tags the test writes and the DICOM standard's
formulas (PS3.3 §10.7.1.1, §C.8.11.5, §C.11.2.1.2), never by the code under test.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import struct

import numpy as np
import pytest

from dentalkit.errors import InputError
from dentalkit.images import read_dicom, to_png
from tests.images.dicom_files import PATIENT_ID, write_dicom

pytest.importorskip("pydicom")
SECRET = "k3Jx9QvL2mZ7pR4sT8wYb1nC6dF0gH5j"


def _png_chunks(data: bytes) -> list[str]:
    """The chunk types of a PNG file (read by hand, so text chunks cannot hide)."""
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, kinds = 8, []
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kinds.append(data[pos + 4 : pos + 8].decode("ascii"))
        pos += 12 + length
    return kinds


def _pixels(png: bytes) -> np.ndarray:
    from PIL import Image

    return np.asarray(Image.open(io.BytesIO(png)))


@pytest.mark.parametrize(
    ("tags", "mm", "source", "note"),
    [
        # calibrated Pixel Spacing (a calibration type is stated): used as it is, ERMF not
        # applied again
        (
            {
                "PixelSpacing": [0.09, 0.09],
                "ImagerPixelSpacing": [0.1, 0.1],
                "PixelSpacingCalibrationType": "GEOMETRY",
                "PixelSpacingCalibrationDescription": "cephalostat geometry",
                "EstimatedRadiographicMagnificationFactor": 1.1,
            },
            0.09,
            "dicom:PixelSpacing",
            None,
        ),
        # Pixel Spacing differs from Imager Pixel Spacing: calibrated (§10.7.1.1)
        (
            {"PixelSpacing": [0.091, 0.091], "ImagerPixelSpacing": [0.1, 0.1]},
            0.091,
            "dicom:PixelSpacing",
            None,
        ),
        # detector spacing 0.11 mm / magnification 1.1 = 0.1 mm at the object
        (
            {"ImagerPixelSpacing": [0.11, 0.11], "EstimatedRadiographicMagnificationFactor": 1.1},
            0.1,
            "dicom:ImagerPixelSpacing/EstimatedRadiographicMagnificationFactor",
            None,
        ),
        # Pixel Spacing equal to Imager Pixel Spacing is not a calibration: ERMF applies
        (
            {
                "PixelSpacing": [0.12, 0.12],
                "ImagerPixelSpacing": [0.12, 0.12],
                "EstimatedRadiographicMagnificationFactor": 1.2,
            },
            0.1,
            "dicom:ImagerPixelSpacing/EstimatedRadiographicMagnificationFactor",
            None,
        ),
        ({"ImagerPixelSpacing": [0.1, 0.1]}, 0.1, "dicom:ImagerPixelSpacing", "magnification"),
        ({"PixelSpacing": [0.1, 0.1]}, 0.1, "dicom:PixelSpacing", "10.7.1.1"),
        ({"PixelSpacing": [0.1, 0.1], "Modality": "CT"}, 0.1, "dicom:PixelSpacing", None),
        # an impossible magnification (SID/SOD < 1) is not applied
        (
            {"ImagerPixelSpacing": [0.1, 0.1], "EstimatedRadiographicMagnificationFactor": 0.5},
            0.1,
            "dicom:ImagerPixelSpacing",
            "outside",
        ),
        ({"ImagerPixelSpacing": [0.1, 0.2]}, None, None, "not square"),
        ({}, None, None, "no PixelSpacing"),
    ],
)
def test_pixel_spacing_precedence(tmp_path, tags, mm, source, note):
    path = write_dicom(tmp_path / "a.dcm", **tags)
    image = read_dicom(path)
    if mm is None:
        assert image.mm_per_px is None and image.calibration_source is None
    else:
        assert image.mm_per_px == pytest.approx(mm, rel=1e-12)
        assert image.calibration_source == source
    if note is None:
        assert image.calibration_note is None
    else:
        assert note in image.calibration_note


def test_pseudonym_is_the_keyed_hmac_and_no_identifier_is_returned(tmp_path):
    image = read_dicom(write_dicom(tmp_path / "a.dcm"), secret=SECRET)
    digest = hmac.new(SECRET.encode(), PATIENT_ID.encode(), hashlib.sha256).hexdigest()
    assert image.patient_id == "P" + digest.upper()[:12]
    assert image.date == "2024-03-05" and image.date_tag == "StudyDate"
    text = repr(image)
    assert "Quixby" not in text and "1979" not in text and PATIENT_ID not in text
    assert read_dicom(tmp_path / "a.dcm").patient_id is None  # no secret, no ID at all


def test_png_without_window_spans_the_pixel_range(tmp_path):
    values = np.array([[0, 1000], [2000, 4000]], dtype=np.uint16)
    png = to_png(write_dicom(tmp_path / "a.dcm", values))
    # min 0 → 0, max 4000 → 255, linear: round(v * 255 / 4000)
    assert _pixels(png).tolist() == [[0, 64], [128, 255]]
    assert _png_chunks(png) == ["IHDR", "IDAT", "IEND"]  # pixels only: no text chunk


def test_png_applies_rescale_then_the_window_of_the_file(tmp_path):
    values = np.array([[100, 200, 250, 300, 400, 500]], dtype=np.uint16)
    # rescale: y = 2x - 100 → 100, 300, 400, 500, 700, 900; window c=500, w=401 (LINEAR, §C.11.2.1.2):
    # ≤ c-0.5-(w-1)/2 = 299.5 → 0; > c-0.5+(w-1)/2 = 699.5 → 255;
    # else ((y-(c-0.5))/(w-1)+0.5)*255: 300 → 0.32, 400 → 64.07, 500 → 127.82
    path = write_dicom(
        tmp_path / "a.dcm",
        values,
        RescaleSlope=2,
        RescaleIntercept=-100,
        WindowCenter=500,
        WindowWidth=401,
    )
    assert _pixels(to_png(path)).tolist() == [[0, 0, 64, 128, 255, 255]]


def test_monochrome1_is_inverted(tmp_path):
    values = np.array([[0, 4000]], dtype=np.uint16)
    png = to_png(write_dicom(tmp_path / "a.dcm", values, photometric="MONOCHROME1"))
    assert _pixels(png).tolist() == [[255, 0]]  # minimum shown white (PS3.3 C.7.6.3.1.2)


def test_burned_in_annotation_and_multiframe_are_refused(tmp_path):
    with pytest.raises(InputError, match=r"Burned In Annotation \(0028,0301\)"):
        to_png(write_dicom(tmp_path / "a.dcm", BurnedInAnnotation="YES"))
    frames = np.zeros((2, 4, 4), dtype=np.uint16)
    path = write_dicom(tmp_path / "b.dcm", frames[0], NumberOfFrames=2)
    with pytest.raises(InputError, match="2 frames"):
        to_png(path)
    (tmp_path / "c.dcm").write_bytes(b"not dicom at all")
    with pytest.raises(InputError, match="not a readable DICOM file"):
        to_png(tmp_path / "c.dcm")
