"""Client methods generated from the endpoint registry (private; see client.py).

One method per endpoint, with the registry's signature (``inspect.signature`` shows the
real parameters) and a numpy-style docstring built from the specification's text.
"""

from __future__ import annotations

import inspect
from typing import Any

from dentalkit.endpoints import Endpoint

__all__ = ["endpoint_method"]


def endpoint_method(ep: Endpoint) -> Any:
    """Build the Client method of ``ep``: it validates its arguments and calls ``Client.call``."""
    P = inspect.Parameter
    params = [P("self", P.POSITIONAL_OR_KEYWORD)]
    if ep.is_image:
        params += [
            P(n, P.POSITIONAL_OR_KEYWORD, annotation=str)
            for n in ("patient_id", "timestamp", "image_url")
        ]
        params += [
            P(f.param, P.KEYWORD_ONLY, default=None, annotation=f"{f.type.__name__} | None")
            for f in ep.optional_fields
        ]
    else:
        params += [P(q.name, P.KEYWORD_ONLY, annotation=str) for q in ep.query]
    params.append(P("refresh", P.KEYWORD_ONLY, default=False, annotation=bool))
    signature = inspect.Signature(params, return_annotation="ApiResult")

    def method(self: Any, *args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        values = dict(bound.arguments)
        values.pop("self")
        refresh = values.pop("refresh")
        if ep.is_image:
            pid, ts, url = (values.pop(n) for n in ("patient_id", "timestamp", "image_url"))
            return self.call(ep, pid, ts, url, options=values, refresh=refresh)
        return self.call(ep, options=values, refresh=refresh)

    if ep.is_image:
        opts = "".join(
            f"    {f.param} : {f.type.__name__}, optional\n        ``{f.name}``: {f.description}."
            + (f" Service default: {f.default!r}.\n" if f.default is not None else "\n")
            for f in ep.optional_fields
        )
        args = (
            "    patient_id, timestamp, image_url : str\n"
            "        ``PatientID``, ``TimeStamp`` and ``ImageName`` (the image's full URL).\n"
            + opts
        )
    else:
        args = "".join(f"    {q.name} : str\n        {q.meaning}.\n" for q in ep.query)
    method.__doc__ = (
        f"{ep.method} {ep.path}: {ep.summary}.\n\n"
        f"Parameters\n----------\n{args}"
        "    refresh : bool\n        Bypass the cache read and store the fresh answer.\n\n"
        "Returns\n-------\nApiResult\n    Parsed body plus status, from_cache, fetched_at and "
        "usage headers. See :meth:`Client.call` for the errors raised.\n"
    )
    method.__name__ = method.__qualname__ = ep.name
    method.__signature__ = signature  # type: ignore[attr-defined]
    return method
