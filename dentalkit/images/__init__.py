"""The user's images → a fetch manifest: folders, object stores, DICOM.

:func:`build_manifest` (``dentalkit manifest`` on the command line) lists a folder or an
object-store prefix (``s3://``, ``gs://``, ``az://`` through fsspec), reads each file's
patient, session date and kind from a file-name pattern such as
``{patient_id}/{date}/{kind}.png`` or from a mapping CSV, and writes the manifest
``dentalkit fetch`` reads: one row per image and endpoint, with a presigned HTTPS URL of
stated lifetime. Local images are uploaded to a bucket first (``upload_to=``). DICOM files
give their pixel spacing as the image's ``mm_per_px``, are converted to PNG, and keep every
identifying tag on your machine: the manifest carries the keyed pseudonym of the Patient ID.

Guide: docs/images.md. Object stores need ``pip install 'dentalkit[images]'`` (S3;
``[gcs]``, ``[azure]`` for the others), DICOM ``pip install 'dentalkit[dicom]'``.
"""

from __future__ import annotations

from dentalkit.images._build import MANIFEST_COLUMNS, ImageManifest, build_manifest
from dentalkit.images._dicom import DicomImage, read_dicom, to_png
from dentalkit.images._kinds import load_kinds
from dentalkit.images._lifetime import (
    DEFAULT_LIFETIME,
    MARGIN,
    MAX_LIFETIME,
    SECONDS_PER_REQUEST,
    required_lifetime,
)

__all__ = [
    "DEFAULT_LIFETIME",
    "MANIFEST_COLUMNS",
    "MARGIN",
    "MAX_LIFETIME",
    "SECONDS_PER_REQUEST",
    "DicomImage",
    "ImageManifest",
    "build_manifest",
    "load_kinds",
    "read_dicom",
    "required_lifetime",
    "to_png",
]
