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
from datetime import UTC, date, datetime

import numpy as np

__all__ = ["REFERENCE_DATE", "age_at", "digest", "generator", "parse_timestamp"]

#: Each patient's baseline age is the age on this date; the birth date follows.
REFERENCE_DATE = date(2024, 1, 1)
#: Days per year used for ages (Julian year).
DAYS_PER_YEAR = 365.25


def digest(*parts: object) -> bytes:
    """SHA-256 of the parts, each as ``str`` and separated by a NUL byte."""
    h = hashlib.sha256()
    for p in parts:
        h.update(str(p).encode("utf-8"))
        h.update(b"\x00")
    return h.digest()


def generator(*parts: object) -> np.random.Generator:
    """A PCG64 generator seeded from :func:`digest` of the parts (deterministic)."""
    return np.random.Generator(np.random.PCG64(int.from_bytes(digest(*parts)[:16], "little")))


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
