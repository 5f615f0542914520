"""HMAC-signed, expiring links to the sandbox's annotated output images.

The spec says ``OutputImageUrl`` is "a time-limited link … valid 72 hours". It does not
show the link's form; the sandbox's links are its own documented choice::

    {root}/_sandbox/output/{endpoint-slug}.png?req={base64url(JSON request)}&expires={unix}&signature={hex}

The request travels inside the link (signed), so the sandbox can render the image later
without keeping state, and any change to it breaks the signature.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any

import orjson

__all__ = ["LinkError", "sign_link", "verify_link"]


class LinkError(Exception):
    """A link that is forged, malformed or expired; ``reason`` says which."""

    def __init__(self, reason: str, message: str) -> None:
        self.reason = reason
        super().__init__(message)


def _signature(secret: bytes, slug: str, req: str, expires: int) -> str:
    msg = f"{slug}\n{req}\n{expires}".encode()
    return hmac.new(secret, msg, hashlib.sha256).hexdigest()


def sign_link(
    root_url: str,
    slug: str,
    request: Mapping[str, Any],
    *,
    issued_at: float,
    ttl: float,
    secret: bytes,
) -> str:
    """Build a signed output-image link for ``request`` that expires ``ttl`` s after issue."""
    req = base64.urlsafe_b64encode(orjson.dumps(dict(request), option=orjson.OPT_SORT_KEYS))
    req_s = req.decode().rstrip("=")
    expires = int(issued_at + ttl)
    # base64url, digits and hex need no percent-encoding in a query string.
    signature = _signature(secret, slug, req_s, expires)
    return (
        f"{root_url.rstrip('/')}/_sandbox/output/{slug}.png"
        f"?req={req_s}&expires={expires}&signature={signature}"
    )


def verify_link(
    slug: str,
    req: str | None,
    expires: str | None,
    signature: str | None,
    *,
    now: float,
    secret: bytes,
) -> dict[str, Any]:
    """Check a link's signature and expiry; return the request it carries.

    Raises
    ------
    LinkError
        ``reason`` is ``"malformed"``, ``"forged"`` or ``"expired"``.
    """
    if not req or not expires or not signature:
        raise LinkError("malformed", "link lacks req, expires or signature")
    try:
        exp = int(expires)
    except ValueError:
        raise LinkError("malformed", "link's expires is not an integer") from None
    if not hmac.compare_digest(_signature(secret, slug, req, exp), signature):
        raise LinkError("forged", "link signature does not match: the link was altered or forged")
    if now > exp:
        raise LinkError(
            "expired",
            f"link expired {now - exp:.0f} s ago (valid 72 hours from issue); "
            "request the analysis again for a fresh link",
        )
    try:
        data = orjson.loads(base64.urlsafe_b64decode(req + "=" * (-len(req) % 4)))
    except (ValueError, orjson.JSONDecodeError):
        raise LinkError("malformed", "link's req is not base64url JSON") from None
    if not isinstance(data, dict):
        raise LinkError("malformed", "link's req is not a JSON object")
    return data
