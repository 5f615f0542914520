"""Constants, the cohort and the figures of the reliability suite (one module, imported as
``tests.reliability.cohort`` by the conftest and the tests, so there is one ``FIGURES``)."""

from __future__ import annotations

import pandas as pd

#: Sandbox clock for the suite (2026-01-01T00:00:00Z): output links are then identical in
#: every run, so bodies can be compared byte for byte.
FROZEN = 1_767_225_600.0
#: The cohort: 500 patients × 4 endpoints = 2,000 requests. Two of the endpoints return
#: signed output-image links.
ENDPOINTS = ["classifier", "tmj_xsectional", "pano_segmentation", "occlusogram_upper_seg"]
N_PATIENTS = 500

FIGURES: dict[str, int] = {
    "requests sent (HTTP attempts reaching the sandbox)": 0,
    "faults injected (5xx, slow, malformed, 429)": 0,
    "kills survived": 0,
    "rows lost": 0,
    "duplicates": 0,
    "bad inputs tried": 0,
    "files damaged (store parts, failures, marker, SQLite cache)": 0,
    "files recovered (moved aside, their rows stored again)": 0,
    "keys found (canary key in caches, stores, logs, errors after redirects)": 0,
    "second writers refused": 0,
    "cut-short answers sent (body shorter than its Content-Length, then closed)": 0,
    "cut-short bodies stored": 0,
    "bit flips tried in responses parts": 0,
    "bit flips caught in responses parts (the rest left every row as written)": 0,
    "bit flips that silently changed stored data": 0,
    "bit flips tried in the HTTP cache": 0,
    "bit flips caught in the HTTP cache (the rest served only intact answers)": 0,
    "bit flips that silently changed cached answers": 0,
    "trickled requests sent (one byte at a time)": 0,
    "trickled requests ended by the deadline": 0,
}


def add_figure(name: str, value: int) -> None:
    key = next(k for k in FIGURES if k.startswith(name))
    FIGURES[key] += int(value)


def cohort_manifest(n_patients: int = N_PATIENTS) -> pd.DataFrame:
    ids = [f"R{i:04d}" for i in range(n_patients)]
    return pd.DataFrame(
        {
            "patient_id": ids,
            "timestamp": "2025-02-03",
            "image_url": [f"https://images.example.org/{p}/image.png" for p in ids],
        }
    )


def fetch_child(base_url: str, api_key: str, cache: str, out: str, n_patients: int) -> None:
    """Body of a fetch process that the kill tests SIGKILL (runs in a forkserver child)."""
    from dentalkit.fetch.client import Client
    from dentalkit.fetch.cohort import fetch_cohort

    client = Client(base_url, api_key=api_key, cache=cache, backoff_base=0.01)
    fetch_cohort(
        cohort_manifest(n_patients),
        ENDPOINTS,
        out,
        client=client,
        max_workers=16,
        progress=False,
        flush_every=25,
        flush_interval=0.5,
    )


def fetch_child_outcome(
    base_url: str, api_key: str, cache: str, out: str, n_patients: int, result: str
) -> None:
    """A fetch process that writes what happened to ``result``: ``stored N`` or the name of
    the dentalkit error it raised (the concurrent-writer test starts two at once)."""
    from pathlib import Path

    from dentalkit.errors import DentalkitError
    from dentalkit.fetch.client import Client
    from dentalkit.fetch.cohort import fetch_cohort

    client = Client(base_url, api_key=api_key, cache=cache, backoff_base=0.01)
    try:
        rep = fetch_cohort(cohort_manifest(n_patients), ENDPOINTS, out, client=client, max_workers=8, progress=False)  # fmt: skip
        text = f"stored {rep.stored}"
    except DentalkitError as exc:
        text = f"{type(exc).__name__}: {exc}"
    Path(result).write_text(text)


#: Modules the kill tests' fork server imports once, so each killed child starts at once.
CHILD_PRELOAD = ["pandas", "pyarrow.parquet", "requests_cache", "dentalkit.fetch.cohort", __name__]
