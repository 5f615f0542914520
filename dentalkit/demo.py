"""``dentalkit demo``: the whole pipeline on the embedded sandbox.

Today it starts the sandbox and fetches a small synthetic cohort — every endpoint for a few
patients — through the cached, resumable :func:`dentalkit.fetch_cohort` into
``out/responses``; later stages (tables, analyses, figures) join as they land.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pandas as pd

from dentalkit.endpoints import ENDPOINTS, TLE_PARAMETERS

#: The /tle query of the demo patients, as the sandbox's codebook encodes it.
DEMO_TLE = dict(zip([q.name for q in TLE_PARAMETERS], ["14", "F", "2", "1", "0", "4.5", "3.0", "0", "0", "1", "6.5"], strict=True))  # fmt: skip


def demo_manifest(sb, patients: int = 3, timestamp: str = "2024-03-05T10:00:00Z") -> pd.DataFrame:
    """A manifest of ``patients`` synthetic patients × every endpoint, with sandbox image URLs."""
    from dentalkit.sandbox.render import default_image_kind

    rows = []
    for i in range(patients):
        pid = f"DEMO-{i + 1:03d}"
        for ep in ENDPOINTS.values():
            row = {"patient_id": pid, "timestamp": timestamp, "endpoint": ep.name}
            if ep.is_image:
                row["image_url"] = sb.image_url(default_image_kind(ep), pid, timestamp[:10])
            else:
                row.update(DEMO_TLE)
            rows.append(row)
    return pd.DataFrame(rows)


def run_demo(patients: int = 3, out: Path = Path("dentalkit-demo"), echo: Callable = print) -> None:
    """Start a sandbox and fetch a synthetic cohort into ``out``; print a short summary.

    Each run starts a new sandbox on a free port (a new service address), so the demo starts
    its store afresh; the HTTP cache lives in ``out/http-cache.sqlite``.
    """
    from dentalkit.client import Client
    from dentalkit.cohort import fetch_cohort
    from dentalkit.sandbox import running
    from dentalkit.sandbox.app import BANNER

    echo(BANNER)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    for stale in ("responses", "_dentalkit.json", "failures.parquet"):
        target = out / stale
        if target.is_dir():
            shutil.rmtree(target)
        else:
            target.unlink(missing_ok=True)
    with running() as sb:
        echo(f"sandbox at {sb.base_url}")
        client = Client(sb.base_url, api_key=sb.api_key, cache=out / "http-cache.sqlite")
        report = fetch_cohort(demo_manifest(sb, patients), out=out, client=client, progress=False)
        client.close()
    echo(f"fetch: {report.summary()}")
    table = report.responses()
    counts = table.groupby("endpoint", observed=True).size()
    echo(f"{len(table)} responses from {counts.size} endpoints in {out / 'responses'}")
