"""Download annotated output images behind their 72-hour links (private; see client.py)."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import orjson
import pandas as pd
import requests

from dentalkit import settings
from dentalkit.errors import ExpiredLinkError, InputError, TransportError, api_error_for_status
from dentalkit.fetch._http import check_service_url
from dentalkit.fetch._result import OUTPUT_LINK_TTL, ApiResult

__all__ = ["download_output_image"]


#: Redirects followed when downloading an output image.
_MAX_HOPS = 10


def _as_utc(value: Any) -> datetime | None:
    if value is None or (not isinstance(value, str | datetime) and pd.isna(value)):
        return None
    ts = pd.Timestamp(value)
    if pd.isna(ts):
        return None
    ts = ts.tz_localize("UTC") if ts.tzinfo is None else ts.tz_convert("UTC")
    return ts.to_pydatetime()


def _unpack(result: Any) -> tuple[str, str | None, dict[str, Any], datetime | None]:
    if isinstance(result, ApiResult):
        return result.endpoint, result.request.get("PatientID"), result.data, result.fetched_at
    if isinstance(result, pd.Series):
        result = result.to_dict()
    if isinstance(result, Mapping) and "body" in result:
        body = result["body"]
        try:
            data = orjson.loads(body) if isinstance(body, str | bytes) else dict(body)
        except (orjson.JSONDecodeError, TypeError, ValueError):
            raise InputError(
                "the row's body is not a JSON object; pass a row of the responses table "
                "(dentalkit.fetch.store.read_responses) or a Client result"
            ) from None
        return (
            str(result.get("endpoint")),
            result.get("patient_id"),
            data,
            _as_utc(result.get("fetched_at")),
        )
    raise InputError(
        f"download_output_image needs a Client result (ApiResult) or a row of the responses "
        f"table with 'body' and 'fetched_at', got {type(result).__name__}"
    )


def download_output_image(
    result: Any,
    path: str | os.PathLike[str],
    *,
    now: datetime | None = None,
    verify: bool | str | None = None,
    timeout: tuple[float, float] | None = None,
) -> Path:
    """Download the annotated output image of one response to ``path``.

    Parameters
    ----------
    result : ApiResult or responses row
        A :class:`dentalkit.fetch.client.ApiResult`, or a row (``pandas.Series`` / mapping) of the
        ``responses`` table, with ``body`` and ``fetched_at``.
    path : path
        Where to write the image (written atomically: a temporary file, then renamed).
    now : datetime, optional
        Current time, for tests; default the UTC wall clock.
    verify, timeout
        TLS verification and timeouts; default :mod:`dentalkit.settings`.

    Returns
    -------
    pathlib.Path
        ``path``.

    Raises
    ------
    ExpiredLinkError
        Before any request when ``fetched_at`` + 72 h has passed (spec, "Limits": links are
        valid 72 hours from issue), and when the link host answers 410, or 403 saying the link
        expired. The message says to re-request the analysis with ``refresh=True``.
    InputError
        The response has no ``OutputImageUrl`` (classifier, TMJ, /tle) or no ``fetched_at``.
    ApiError, TransportError
        Other failures of the download.

    Notes
    -----
    The API key is **not** sent: the link is self-authorising and may point to another host
    (e.g. object storage), which must never see the key.
    """
    endpoint, patient_id, data, fetched_at = _unpack(result)
    who = f"{endpoint} response for patient {patient_id!r}"
    url = data.get("OutputImageUrl")
    if not isinstance(url, str) or not url:
        raise InputError(f"the {who} has no OutputImageUrl (this endpoint returns no image)")
    if fetched_at is None:
        raise InputError(f"the {who} has no fetched_at, so the link's 72 h validity is unknown")
    now = now or datetime.now(UTC)
    expires = fetched_at + OUTPUT_LINK_TTL
    fix = (
        "Re-request the analysis with refresh=True (e.g. client.call(endpoint, patient_id, "
        "timestamp, image_url, refresh=True)) to get a fresh link"
    )
    if now >= expires:
        raise ExpiredLinkError(
            f"the output image link of the {who} was issued at {fetched_at:%Y-%m-%d %H:%M:%S} UTC "
            f"and expired at {expires:%Y-%m-%d %H:%M:%S} UTC (valid 72 hours). {fix}"
        )
    check_service_url(url, what="output image link")
    try:
        for _ in range(_MAX_HOPS):  # redirects by hand: every hop obeys the https rule
            resp = requests.get(
                url,
                timeout=timeout or settings.timeout,
                verify=settings.verify if verify is None else verify,
                headers={"User-Agent": settings.user_agent},
                allow_redirects=False,
            )
            if not resp.is_redirect:
                break
            url = requests.compat.urljoin(url, resp.headers["Location"])
            check_service_url(url, what="output image link (redirect target)")
        else:
            raise TransportError(f"the output image link of the {who} redirects too often")
    except requests.RequestException as exc:
        raise TransportError(f"downloading the output image of the {who}: {exc}") from None
    if resp.status_code != 200:
        text = resp.content.decode("utf-8", "replace")
        if resp.status_code == 410 or (resp.status_code == 403 and "expire" in text.lower()):
            raise ExpiredLinkError(
                f"the link host says the output image link of the {who} expired "
                f"(HTTP {resp.status_code}). {fix}"
            )
        raise api_error_for_status(
            resp.status_code, endpoint="output image link", patient_id=patient_id, body=text[:500]
        )
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(resp.content)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return target
