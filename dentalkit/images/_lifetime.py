"""How long presigned image URLs must stay valid (private; pure functions).

The service downloads each image when its request arrives, so a URL must outlive the
whole fetch, resumes included. The fetch sends ``settings.max_workers`` requests at a
time; with :data:`SECONDS_PER_REQUEST` per request the ``n`` requests of a manifest take
``ceil(n / workers) × SECONDS_PER_REQUEST`` seconds, and :data:`MARGIN` is added for
retries, back-off and one interrupted run resumed the same day (docs/images.md).
"""

from __future__ import annotations

import math
import re
from datetime import timedelta

from dentalkit import settings
from dentalkit.errors import InputError

__all__ = [
    "DEFAULT_LIFETIME",
    "MARGIN",
    "MAX_LIFETIME",
    "SECONDS_PER_REQUEST",
    "check_lifetime",
    "parse_lifetime",
    "required_lifetime",
]

#: Stated time the service takes to answer one image request, in seconds, for the estimate
#: (the specification states none; 10 s is a slow AI answer; the read timeout is 60 s).
SECONDS_PER_REQUEST = 10.0
#: Added to every estimate: retries and back-off, and a resumed run.
MARGIN = timedelta(hours=1)
#: Longest validity a store's presigned URL can have: AWS Signature Version 4 and Google
#: Cloud Storage V4 signing both cap it at 7 days (604,800 s); Azure SAS tokens have no cap.
MAX_LIFETIME: dict[str, timedelta | None] = {
    "s3": timedelta(days=7),
    "gs": timedelta(days=7),
    "az": None,
}
#: Default validity of the URLs: the longest S3 and GCS allow.
DEFAULT_LIFETIME = timedelta(days=7)

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400}


def required_lifetime(
    n_requests: int, *, workers: int | None = None, seconds_per_request: float | None = None
) -> timedelta:
    """How long presigned URLs must stay valid for a fetch of ``n_requests`` requests.

    ``ceil(n_requests / workers) × seconds_per_request + MARGIN`` (one hour): the fetch
    sends ``workers`` requests at a time, each taking ``seconds_per_request``.

    Parameters
    ----------
    n_requests : int
        Requests the fetch will send (manifest rows; one per image and endpoint).
    workers : int, optional
        Concurrent requests of the fetch (default: ``settings.max_workers``, read now).
    seconds_per_request : float, optional
        Time per request, in seconds (default :data:`SECONDS_PER_REQUEST`, 10 s).

    Returns
    -------
    datetime.timedelta

    Examples
    --------
    >>> from dentalkit import images
    >>> images.required_lifetime(25_000, workers=8)  # 3,125 waves of 10 s + 1 h
    datetime.timedelta(seconds=34850)
    """
    workers = settings.max_workers if workers is None else workers
    per = SECONDS_PER_REQUEST if seconds_per_request is None else seconds_per_request
    if not isinstance(workers, int) or workers < 1:
        raise InputError(f"workers={workers!r}: give a whole number of at least 1")
    if not (isinstance(per, int | float) and math.isfinite(per) and per > 0):
        raise InputError(f"seconds_per_request={per!r}: give a positive number of seconds")
    waves = math.ceil(max(int(n_requests), 0) / workers)
    return timedelta(seconds=waves * float(per)) + MARGIN


def parse_lifetime(value: float | timedelta | str) -> timedelta:
    """A lifetime given as seconds, a ``timedelta`` or text such as ``"7d"``, ``"36h"``,
    ``"90m"``, ``"3600s"`` or ``"3600"``; refuse anything not positive."""
    if isinstance(value, timedelta):
        out = value
    elif isinstance(value, int | float) and not isinstance(value, bool):
        out = timedelta(seconds=float(value)) if math.isfinite(value) else timedelta(0)
    elif isinstance(value, str) and (
        m := re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([smhd]?)\s*", value)
    ):
        out = timedelta(seconds=float(m[1]) * _UNITS[m[2] or "s"])
    else:
        raise InputError(
            f"lifetime={value!r}: give seconds, a timedelta or text like '7d', '36h', '90m'"
        )
    if out <= timedelta(0):
        raise InputError(f"lifetime={value!r}: a URL lifetime must be positive")
    return out


def words(delta: timedelta) -> str:
    """``2 d 3 h 5 min`` (whole minutes; seconds below a minute)."""
    total = round(delta.total_seconds())
    if total < 60:
        return f"{total} s"
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes = rest // 60
    parts = [
        f"{days} d" if days else "",
        f"{hours} h" if hours else "",
        f"{minutes} min" if minutes else "",
    ]
    return " ".join(p for p in parts if p)


def check_lifetime(
    lifetime: timedelta, *, protocol: str, n_requests: int, workers: int | None = None
) -> timedelta:
    """Refuse a lifetime shorter than the fetch needs or longer than the store allows.

    Returns the required lifetime (:func:`required_lifetime`).
    """
    need = required_lifetime(n_requests, workers=workers)
    cap = MAX_LIFETIME.get(protocol)
    if cap is not None and lifetime > cap:
        raise InputError(
            f"lifetime {words(lifetime)} is longer than {protocol}:// presigned URLs can be "
            f"valid ({words(cap)}); give at most 7d"
        )
    if lifetime < need:
        w = settings.max_workers if workers is None else workers
        fix = (
            f"give a lifetime of at least {words(need)} (--lifetime {math.ceil(need.total_seconds() / 3600)}h)"
            if cap is None or need <= cap
            else f"split the images into manifests of at most {_fits(cap, w)} requests "
            f"each, built right before each fetch"
        )
        raise InputError(
            f"URL lifetime {words(lifetime)} is shorter than the fetch will need: "
            f"{n_requests:,} requests, {w} at a time (settings.max_workers), "
            f"{SECONDS_PER_REQUEST:g} s each, plus {words(MARGIN)} for retries and a resume "
            f"= {words(need)}; the service could not download the images sent last. {fix}"
        )
    return need


def _fits(cap: timedelta, workers: int) -> int:
    """Requests whose estimate stays within ``cap``."""
    seconds = (cap - MARGIN).total_seconds()
    return max(int(seconds // SECONDS_PER_REQUEST) * workers, 0)
