"""DICOM test files made with pydicom (no binary fixture is committed).

Every file carries the identifying tags of one made-up patient, so that tests can look for
them in everything dentalkit writes or sends.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

#: The made-up patient's identifying values, as the tags hold them.
NAME = "Quixby^Marguerite"
BIRTH_DATE = "19790214"
PATIENT_ID = "MRN-4471-XZ"
OTHER_IDS = ("ACC99213", "Dr^Honeywell", "Saint Elsewhere Dental")

#: Every text form in which those values could leak (raw tag text and readable forms).
IDENTIFYING = (
    NAME,
    "Quixby",
    "Marguerite",
    BIRTH_DATE,
    "1979-02-14",
    PATIENT_ID,
    *OTHER_IDS,
)


def write_dicom(
    path: Path,
    pixels: np.ndarray | None = None,
    *,
    photometric: str = "MONOCHROME2",
    study_date: str = "20240305",
    patient_id: str = PATIENT_ID,
    **tags,
) -> Path:
    """A single-frame DX DICOM file at ``path`` with ``pixels`` (uint16) and ``tags``."""
    from pydicom.dataset import Dataset, FileMetaDataset
    from pydicom.uid import ExplicitVRLittleEndian, generate_uid

    if pixels is None:
        pixels = (np.arange(64 * 48, dtype=np.uint16).reshape(48, 64) * 3) % 4096
    meta = FileMetaDataset()
    meta.MediaStorageSOPClassUID = "1.2.840.10008.5.1.4.1.1.1.1"  # Digital X-Ray for presentation
    meta.MediaStorageSOPInstanceUID = generate_uid()
    meta.TransferSyntaxUID = ExplicitVRLittleEndian
    ds = Dataset()
    ds.file_meta = meta
    ds.SOPClassUID = meta.MediaStorageSOPClassUID
    ds.SOPInstanceUID = meta.MediaStorageSOPInstanceUID
    ds.PatientName = NAME
    ds.PatientBirthDate = BIRTH_DATE
    ds.PatientID = patient_id
    ds.AccessionNumber = OTHER_IDS[0]
    ds.ReferringPhysicianName = OTHER_IDS[1]
    ds.InstitutionName = OTHER_IDS[2]
    ds.StudyDate = study_date
    ds.Modality = "DX"
    ds.StudyInstanceUID = generate_uid()
    ds.SeriesInstanceUID = generate_uid()
    ds.Rows, ds.Columns = pixels.shape[:2]
    ds.SamplesPerPixel = 1
    ds.PhotometricInterpretation = photometric
    ds.BitsAllocated = 16
    ds.BitsStored = 12
    ds.HighBit = 11
    ds.PixelRepresentation = 0
    for keyword, value in tags.items():
        setattr(ds, keyword, value)
    ds.PixelData = pixels.astype(np.uint16).tobytes()
    path.parent.mkdir(parents=True, exist_ok=True)
    ds.save_as(path, enforce_file_format=True)
    return path
