"""DICOM files: pixel spacing as calibration, PNG for the service, no identifying tag out.

Needs ``dentalkit[dicom]`` (pydicom, Pillow). The tags read and the order in which they are
trusted are stated in docs/images.md with the sections of the DICOM standard (PS3.3) they
come from:

1. **Pixel Spacing (0028,0030) when it is a calibration**: the Basic Pixel Spacing
   Calibration Macro (PS3.3 §10.7.1.1) defines it as the spacing *in the patient*; it is
   a calibration when Pixel Spacing Calibration Type (0028,0A02, §10.7.1.2) is present or
   when it differs from Imager Pixel Spacing (0018,1164). The magnification factor is then
   already accounted for and is not applied again.
2. **Imager Pixel Spacing (0018,1164) ÷ Estimated Radiographic Magnification Factor
   (0018,1114)**: Imager Pixel Spacing is measured at the detector (DX Detector Module,
   PS3.3 §C.8.11.4; never adjusted for magnification), and the factor is SID/SOD (DX
   Positioning Module §C.8.11.5, XRF Positioner Module §C.8.7.6), so their quotient is the
   spacing at the object — the plane the service's landmarks lie in.
3. **Imager Pixel Spacing alone**: kept, with a warning that lengths are overstated by the
   (unknown) magnification (about 1.1 for a cephalostat).
4. **Pixel Spacing alone** (no Imager Pixel Spacing, no calibration type): kept; for a
   projection radiograph with a warning that §10.7.1.1 says it cannot be told whether it
   was corrected.

The identifying tags (PS3.15 Annex E: Patient's Name, Birth Date, the IDs, institution,
physicians …) never leave this module except the Patient ID, which the builder replaces by
its keyed pseudonym before anything is written or sent. The PNG holds pixels only (no text
chunks); a file that states Burned In Annotation (0028,0301) = YES is refused, as its pixels
may show the patient's name.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from dentalkit.errors import InputError, require

__all__ = [
    "DicomFileError",
    "DicomImage",
    "calibration",
    "read_dicom",
    "read_header",
    "to_png",
]

#: Modalities whose images are projections (spacing at the detector is magnified).
PROJECTION_MODALITIES = frozenset({"CR", "DX", "IO", "MG", "PX", "RF", "RG", "XA"})
#: Date tags tried for the session date, in order.
DATE_TAGS = ("StudyDate", "AcquisitionDate", "ContentDate", "SeriesDate")
_SOURCE_PS = "dicom:PixelSpacing"
_SOURCE_IPS = "dicom:ImagerPixelSpacing"
_SOURCE_ERMF = "dicom:ImagerPixelSpacing/EstimatedRadiographicMagnificationFactor"
_SQUARE_TOLERANCE = 1e-3  # relative difference of row and column spacing still "square"
_MAGNIFICATION_RANGE = (1.0, 2.0)  # SID/SOD: at least 1; a dental radiograph is about 1.05-1.3


class DicomFileError(Exception):
    """A DICOM file that cannot be used (left out, with this reason)."""


@dataclass(frozen=True)
class DicomImage:
    """A DICOM image as dentalkit uses it, without any identifying tag.

    Attributes
    ----------
    patient_id : str or None
        The keyed pseudonym of Patient ID (0010,0020) (:func:`dentalkit.io.pseudonymize`);
        None when the file has none or no secret was given.
    date : str or None
        Session date, ``YYYY-MM-DD``, from the first of Study, Acquisition, Content, Series
        Date that is set (``date_tag`` says which).
    mm_per_px : float or None
        Millimetres per pixel in the plane of the anatomy (see the module docstring).
    calibration_source : str or None
        The tags it comes from, e.g. ``dicom:PixelSpacing``.
    calibration_note : str or None
        Why there is no calibration, or what to bear in mind about it.
    modality : str or None
        Modality (0008,0060), e.g. ``DX``, ``PX``, ``CT``.
    """

    patient_id: str | None
    date: str | None
    date_tag: str | None
    mm_per_px: float | None
    calibration_source: str | None
    calibration_note: str | None
    modality: str | None


def _dataset(data: bytes, *, pixels: bool) -> Any:
    pydicom = require("pydicom", "dicom")
    try:
        return pydicom.dcmread(io.BytesIO(data), stop_before_pixels=not pixels, force=False)
    except Exception as exc:
        raise DicomFileError(
            f"not a readable DICOM file ({type(exc).__name__}: {exc})"[:300]
        ) from None


def _pair(ds: Any, keyword: str) -> tuple[float, float] | None:
    """A (row, column) spacing pair in mm; None when absent; DicomFileError when malformed."""
    if keyword not in ds or ds[keyword].value in (None, ""):
        return None
    value = ds[keyword].value
    try:
        values = [float(v) for v in (value if ds[keyword].VM > 1 else [value])]
    except (TypeError, ValueError):
        values = []
    if len(values) != 2 or not all(math.isfinite(v) and v > 0 for v in values):
        raise DicomFileError(f"{keyword} is {value!s:.60}: not two positive numbers (mm)")
    return values[0], values[1]


def _square(pair: tuple[float, float], keyword: str) -> float:
    row, col = pair
    if abs(row - col) > _SQUARE_TOLERANCE * max(row, col):
        raise DicomFileError(
            f"{keyword} is {row:g} mm (rows) by {col:g} mm (columns): pixels are not square, "
            "so one mm_per_px cannot scale every direction; give mm_per_px in a mapping"
        )
    return (row + col) / 2


def _magnification(ds: Any) -> tuple[float | None, str | None]:
    """The magnification factor when usable, else None and why (None when absent)."""
    if "EstimatedRadiographicMagnificationFactor" not in ds:
        return None, None
    raw = ds.EstimatedRadiographicMagnificationFactor
    try:
        value = float(raw)
    except (TypeError, ValueError):
        return None, f"EstimatedRadiographicMagnificationFactor {raw!s:.30} is not a number"
    low, high = _MAGNIFICATION_RANGE
    if not (math.isfinite(value) and low <= value <= high):
        return None, (
            f"EstimatedRadiographicMagnificationFactor {value:g} is outside {low:g}-{high:g} "
            "(SID/SOD of a radiograph), so it was not applied"
        )
    return value, None


def calibration(ds: Any) -> tuple[float | None, str | None, str | None]:
    """``(mm_per_px, calibration_source, note)`` of a pydicom dataset (module docstring).

    ``note`` is None when the value needs no comment; otherwise it says why there is no
    value or what to bear in mind about it.
    """
    try:
        ps = _pair(ds, "PixelSpacing")
        ips = _pair(ds, "ImagerPixelSpacing")
    except DicomFileError as exc:
        return None, None, f"{exc}; this image has no calibration"
    calibrated = ps is not None and (
        "PixelSpacingCalibrationType" in ds
        or (ips is not None and not np.allclose(ps, ips, rtol=1e-6, atol=0))
    )
    try:
        if calibrated:
            return _square(ps, "PixelSpacing"), _SOURCE_PS, None
        if ips is not None:
            spacing = _square(ips, "ImagerPixelSpacing")
            factor, why = _magnification(ds)
            if factor is not None:
                return spacing / factor, _SOURCE_ERMF, None
            return (
                spacing,
                _SOURCE_IPS,
                (
                    (why + "; " if why else "")
                    + "ImagerPixelSpacing is measured at the detector and the file states no "
                    "magnification factor: lengths are overstated by the radiographic "
                    "magnification (about 1.1 for a cephalostat); give mm_per_px in a mapping "
                    "if you know it"
                ),
            )
        if ps is not None:
            modality = str(ds.get("Modality", "") or "")
            note = None
            if modality in PROJECTION_MODALITIES:
                note = (
                    "PixelSpacing without ImagerPixelSpacing or a calibration type: DICOM "
                    "PS3.3 10.7.1.1 says it cannot be told whether it was corrected for "
                    "magnification"
                )
            return _square(ps, "PixelSpacing"), _SOURCE_PS, note
    except DicomFileError as exc:
        return None, None, str(exc)
    return (
        None,
        None,
        (
            "no PixelSpacing or ImagerPixelSpacing: this image stays in pixels unless a "
            "mapping or --mm-per-px gives its scale"
        ),
    )


def _date(ds: Any) -> tuple[str | None, str | None]:
    from dentalkit.images._pattern import parse_date

    for tag in DATE_TAGS:
        value = str(ds.get(tag, "") or "").strip()
        if value:
            return parse_date(value, None), tag
    return None, None


def read_header(data: bytes) -> tuple[str | None, DicomImage]:
    """``(Patient ID, image without it)`` of a DICOM file (raises :class:`DicomFileError`).

    The Patient ID is returned apart so that it stays in memory only: the builder replaces
    it by its pseudonym before anything is written or sent.
    """
    ds = _dataset(data, pixels=False)
    mm, source, note = calibration(ds)
    date, tag = _date(ds)
    key = str(ds.get("PatientID", "") or "").strip() or None
    modality = str(ds.get("Modality", "") or "") or None
    return key, DicomImage(None, date, tag, mm, source, note, modality)


def _eight_bit(values: np.ndarray) -> np.ndarray:
    """Linear map of the array's minimum → 0 and maximum → 255."""
    lo, hi = float(np.min(values)), float(np.max(values))
    if hi <= lo:
        return np.zeros(values.shape, dtype=np.uint8)
    return np.rint((values - lo) * (255.0 / (hi - lo))).astype(np.uint8)


def _grey(ds: Any, pixels: np.ndarray) -> np.ndarray:
    """Monochrome pixels → 8-bit grey, dark = low (PS3.3 C.11: modality then VOI LUT)."""
    from pydicom.dataset import Dataset
    from pydicom.pixels import apply_modality_lut, apply_voi_lut, apply_windowing

    values = apply_modality_lut(pixels, ds)
    if "VOILUTSequence" in ds:
        out = _eight_bit(apply_voi_lut(values, ds))
    elif "WindowCenter" in ds and "WindowWidth" in ds:
        # the window of the file, with an 8-bit unsigned output range (0-255)
        window = Dataset()
        window.PhotometricInterpretation = "MONOCHROME2"
        window.WindowCenter = ds.WindowCenter
        window.WindowWidth = ds.WindowWidth
        if "VOILUTFunction" in ds:
            window.VOILUTFunction = ds.VOILUTFunction
        window.BitsStored = 8
        window.PixelRepresentation = 0
        out = np.rint(apply_windowing(np.asarray(values, dtype=np.float64), window)).astype(
            np.uint8
        )
    else:
        out = _eight_bit(np.asarray(values, dtype=np.float64))
    if ds.PhotometricInterpretation == "MONOCHROME1":  # minimum shown white (C.7.6.3.1.2)
        out = 255 - out
    return out


def to_png(data: bytes | str | Path) -> bytes:
    """The image of a DICOM file as PNG bytes, the format the service reads.

    Monochrome images become 8-bit grey after the file's Modality LUT (rescale) and VOI LUT
    (window), as a viewer would show them (PS3.3 C.11), MONOCHROME1 inverted so that dark is
    low; colour images stay RGB. The pixel grid is kept (no resampling), so the file's pixel
    spacing applies to the PNG. The PNG carries pixels only: no text chunk, no tag.

    Parameters
    ----------
    data : bytes or path
        The DICOM file or its bytes.

    Returns
    -------
    bytes

    Raises
    ------
    InputError
        A file that is not DICOM, has several frames, a compressed transfer syntax without
        its decoder installed, or states burned-in annotation (its pixels may show the
        patient's name: PS3.3 C.7.6.1, Burned In Annotation (0028,0301)).
    """
    raw = Path(data).read_bytes() if isinstance(data, str | Path) else data
    try:
        return _png(raw)
    except DicomFileError as exc:
        raise InputError(str(exc)) from None


def _png(data: bytes) -> bytes:
    image_module = require("PIL.Image", "dicom")
    ds = _dataset(data, pixels=True)
    if str(ds.get("BurnedInAnnotation", "") or "").upper() == "YES":
        raise DicomFileError(
            "the file states Burned In Annotation (0028,0301) = YES: its pixels may show the "
            "patient's name or other identifiers, so it is not converted; export it without "
            "annotations (or crop them away) first"
        )
    if int(ds.get("NumberOfFrames", 1) or 1) > 1:
        raise DicomFileError(f"{int(ds.NumberOfFrames)} frames: give single-frame images")
    if "PixelData" not in ds:
        raise DicomFileError("no pixel data (0x7FE0,0010)")
    try:
        pixels = ds.pixel_array
    except Exception as exc:
        syntax = getattr(getattr(ds, "file_meta", None), "TransferSyntaxUID", None)
        raise DicomFileError(
            f"pixel data of transfer syntax {getattr(syntax, 'name', syntax)} cannot be "
            f"decoded ({type(exc).__name__}); install a decoder such as pylibjpeg "
            "(see pydicom's documentation on compressed pixel data)"
        ) from None
    if str(ds.get("PhotometricInterpretation", "")).startswith("MONOCHROME"):
        out = _grey(ds, pixels)
    else:
        out = pixels if pixels.dtype == np.uint8 else _eight_bit(pixels.astype(np.float64))
    buffer = io.BytesIO()
    image_module.fromarray(out).save(buffer, format="PNG")
    return buffer.getvalue()


def read_dicom(path: str | Path, *, secret: str | bytes | None = None) -> DicomImage:
    """Read what dentalkit uses from a DICOM file: pseudonym, date, calibration.

    No identifying tag is returned: the Patient ID only as its keyed pseudonym (with
    ``secret``, as :func:`dentalkit.io.pseudonymize` computes it), the name and birth date
    not at all.

    Parameters
    ----------
    path : str or pathlib.Path
        The DICOM file.
    secret : str or bytes, optional
        The pseudonymisation key (at least 32 bytes, read from the environment); without
        it ``patient_id`` is None.

    Returns
    -------
    DicomImage

    Raises
    ------
    InputError
        The file is not DICOM.
    """
    try:
        key, image = read_header(Path(path).read_bytes())
    except DicomFileError as exc:
        raise InputError(f"{path}: {exc}") from None
    if key is None or secret is None:
        return image
    return replace(image, patient_id=pseudonyms([key], secret)[key])


def pseudonyms(ids: list[str], secret: str | bytes) -> dict[str, str]:
    """Keyed pseudonym of each identifier (:func:`dentalkit.io.pseudonymize`'s mapping)."""
    import pandas as pd

    from dentalkit.io import pseudonymize

    frame = pd.DataFrame({"patient_id": pd.Series(sorted(set(ids)), dtype=object)})
    _, mapping = pseudonymize(frame, secret, mapping=True, on_leak="ignore")
    return dict(
        zip(mapping["patient_id"].astype(str), mapping["pseudonym"].astype(str), strict=True)
    )
