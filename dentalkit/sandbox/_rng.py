"""Seeds, timestamps and ages of the sandbox simulator (private).

Every random draw of the simulator comes from a :class:`numpy.random.Generator`
seeded with a SHA-256 digest of labelled strings, never from Python's ``hash()``
(which is salted per process), so answers are identical across processes,
machines and Python versions.

Seed levels (see ``docs/sandbox.md``):

* patient level: ``("patient", PatientID)`` — anatomy shared by all sessions;
* session level: ``("session", PatientID, TimeStamp, ...)`` — image placement;
* image level: ``("image", PatientID, TimeStamp, ImageName, endpoint)`` — noise.
"""

from __future__ import annotations

import hashlib
import sys
from datetime import UTC, date, datetime
from typing import Any

import numpy as np
from numpy.random.bit_generator import ISeedSequence

_sha256 = hashlib.sha256
_Generator = np.random.Generator
_PCG64 = np.random.PCG64
_LITTLE_ENDIAN = sys.byteorder == "little"

__all__ = [
    "PATIENT_CACHE",
    "REFERENCE_DATE",
    "SESSION_CACHE",
    "DigestSeed",
    "age_at",
    "digest",
    "generator",
    "parse_timestamp",
]

#: Patients whose drawn parameters and tooth layouts the simulator keeps (``lru_cache``), and
#: sessions whose placements it keeps. Everything is deterministic, so an evicted patient is
#: simply drawn again; the bounds only trade CPU for memory. A cohort fetch asks for one
#: patient's images close together (at most a few dozen requests are in flight), so a few
#: hundred patients cover it. With these bounds a sandbox server stays under 250 MB however
#: many patients it has seen (``benchmarks/sandbox_memory.py --http``: 248 MB after 10,000;
#: with bounds of 4,096-16,384 entries it reached 628 MB and grew 48 MB per 1,000).
PATIENT_CACHE = 512
SESSION_CACHE = 512

#: Each patient's baseline age is the age on this date; the birth date follows.
REFERENCE_DATE = date(2024, 1, 1)
#: Days per year used for ages (Julian year).
DAYS_PER_YEAR = 365.25


def digest(*parts: object) -> bytes:
    """SHA-256 of the parts, each as ``str`` and followed by a NUL byte."""
    return _sha256("".join([f"{p}\x00" for p in parts]).encode("utf-8")).digest()


class DigestSeed(ISeedSequence):
    """A numpy seed sequence that hands a bit generator the words of a digest as they are.

    numpy's own :class:`~numpy.random.SeedSequence` first hashes its entropy
    again (about 10 µs per generator, most of a cold request's seeding time).
    A SHA-256 digest is already uniformly mixed, so its 256 bits are used
    directly: PCG64 asks for four 64-bit words and takes the first two as its
    128-bit initial state and the last two as its 128-bit stream increment.
    Words are read little-endian, so streams are the same on every platform.
    """

    __slots__ = ("_digest",)

    def __init__(self, digest: bytes) -> None:
        self._digest = digest

    def generate_state(self, n_words: int, dtype: Any = np.uint32) -> np.ndarray:
        if n_words == 4 and dtype is np.uint64 and _LITTLE_ENDIAN:  # PCG64's request
            return np.frombuffer(self._digest, dtype=np.uint64, count=4)
        dt = np.dtype(dtype)
        if dt not in (np.dtype(np.uint32), np.dtype(np.uint64)):
            raise ValueError("DigestSeed supports only uint32 and uint64 words")
        size = n_words * dt.itemsize
        if size > len(self._digest):
            raise ValueError(f"a {len(self._digest)}-byte digest has no {n_words} {dt} words")
        return np.frombuffer(self._digest[:size], dtype=dt.newbyteorder("<")).astype(dt)


def generator(*parts: object) -> np.random.Generator:
    """A PCG64 generator whose state is :func:`digest` of the parts (deterministic).

    State and stream increment are the digest's four 64-bit words (see :class:`DigestSeed`).
    """
    return _Generator(_PCG64(DigestSeed(digest(*parts))))


def parse_timestamp(timestamp: str) -> datetime | None:
    """Parse a request ``TimeStamp`` as ISO 8601, or return ``None``.

    Dates (``2024-03-01``), date-times with or without seconds, fractions and
    zone (``2024-03-01T10:00:00Z``, ``+02:00``) are accepted; naive times are
    taken as UTC. Anything else (the spec does not show the format) gives
    ``None`` and the simulator uses the patient's baseline age.
    """
    text = timestamp.strip()
    if not text or len(text) > 64:
        return None
    try:
        parsed = datetime.fromisoformat(text)
    except ValueError:
        return None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def age_at(birth: date, when: datetime | None, baseline_age: float) -> float:
    """Age in years at ``when`` (Julian years); ``baseline_age`` when ``when`` is None."""
    if when is None:
        return baseline_age
    days = (when.date() - birth).days + (when.hour * 3600 + when.minute * 60 + when.second) / 86400
    return days / DAYS_PER_YEAR
