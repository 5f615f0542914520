"""A large sandbox responses store, fast: the real fetch with the socket taken out.

A 10,000-patient study is 250,000 requests; through the HTTP sandbox on a loaded 2-core
machine that fetch takes hours. The stages after the fetch only need the store, so the
scaling benchmark builds big stores this way:

* :func:`fetch_in_process` runs the real :func:`dentalkit.fetch_cohort` — manifest
  planning, request keys, the client with its cache, parts flushed to the store — with one
  change: the client's session answers from the sandbox in this process (a
  ``requests`` transport adapter calls the same validation and the same payload function
  the sandbox's HTTP app calls) instead of over a socket. The store it writes is what an
  HTTP fetch of the same manifest writes, byte for byte in every column but
  ``fetched_at``; ``tests/study/test_streaming.py`` checks that on a small cohort, against
  a fetch through the HTTP sandbox.
* The sandbox clock is frozen (``frozen_time``) in both, so the signed ``OutputImageUrl``
  of a body is the same wherever it was made.

Used by ``benchmarks/study.py``; not part of the package.
"""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any
from urllib.parse import parse_qsl, urlsplit

import orjson
import requests
from requests.adapters import BaseAdapter, HTTPAdapter
from urllib3 import HTTPResponse

#: The sandbox clock of every benchmark store (2026-01-01T00:00:00Z).
FROZEN_TIME = 1767225600.0


class SandboxAdapter(BaseAdapter):
    """A ``requests`` transport that answers v2 requests from the sandbox, in process."""

    def __init__(self, root_url: str, config: Any) -> None:
        super().__init__()
        from dentalkit.endpoints import API_PREFIX, ENDPOINTS

        self.root = root_url.rstrip("/") + "/"
        self.config = config
        self.prefix = urlsplit(root_url).path.rstrip("/") + API_PREFIX
        self.by_path = {e.path: e for e in ENDPOINTS.values()}
        self._http = HTTPAdapter()

    def send(self, request: requests.PreparedRequest, **kwargs: Any) -> requests.Response:
        from dentalkit.sandbox.app import _simulated_payload
        from dentalkit.sandbox.validate import validate_body, validate_tle_query

        parts = urlsplit(request.url)
        endpoint = self.by_path[parts.path[len(self.prefix) :]]
        if endpoint.is_image:
            data = validate_body(endpoint, orjson.loads(request.body))
        else:
            data = validate_tle_query(endpoint, parse_qsl(parts.query, keep_blank_values=True))
        payload = _simulated_payload(self.config, endpoint, data, self.root)
        raw = HTTPResponse(
            body=io.BytesIO(payload),
            headers={"content-type": "application/json", "content-length": str(len(payload))},
            status=200,
            reason="OK",
            preload_content=False,
            decode_content=False,
        )
        return self._http.build_response(request, raw)

    def close(self) -> None:
        self._http.close()


def fetch_in_process(
    manifest: Any, out: Path, *, root_url: str = "http://127.0.0.1:8766", **fetch: Any
) -> Any:
    """``fetch_cohort(manifest, out=out, …)`` answered by the sandbox in this process.

    ``root_url`` is the server root the manifest's image URLs and the signed output links
    name (that of the sandbox an HTTP fetch would reach). Returns the fetch's report.
    """
    from dentalkit.fetch.client import Client
    from dentalkit.fetch.cohort import fetch_cohort
    from dentalkit.sandbox.config import SandboxConfig

    base = root_url.rstrip("/") + "/api/v2"
    client = Client(base, api_key="dentalkit-sandbox", cache="memory", expire_after=0)
    client.session.mount(base, SandboxAdapter(root_url, SandboxConfig(frozen_time=FROZEN_TIME)))
    try:
        return fetch_cohort(manifest, out=out, client=client, errors="collect", **fetch)
    finally:
        client.close()


class _Urls:
    """What :func:`dentalkit.study.demo.demo_manifest` needs of a sandbox: its image URLs."""

    def __init__(self, root_url: str) -> None:
        from dentalkit.sandbox.server import SandboxServer

        self.root_url = root_url.rstrip("/")
        self.image_url = SandboxServer.image_url.__get__(self)


def study_inputs(
    folder: Path, n: int, root_url: str, dpi: int = 300, figures: tuple[str, ...] | None = None
) -> Any:
    """The inputs of the demo's ``n``-patient cohort as ``dentalkit study`` reads them.

    Writes ``manifest.csv`` (the 24 image requests of each patient), ``patients.csv``
    (the demo's patients table: record, ``/tle`` parameters, observed months) and
    ``study.toml`` (``out = "study"``, the sandbox's calibration, ``dpi``, the figures to
    draw: default all) into ``folder``.
    Returns the manifest the study fetches: the images plus one ``/tle`` query per patient.
    """
    from dentalkit.study.demo import demo_manifest, demo_patients, sandbox_calibration
    from dentalkit.study.run import _with_tle_queries

    patients = demo_patients(n)
    manifest = demo_manifest(_Urls(root_url), patients)
    patients.to_csv(folder / "patients.csv", index=False)
    manifest.to_csv(folder / "manifest.csv", index=False)
    lines = ['out = "study"', "[figures]", f"dpi = {dpi}"]
    if figures is not None:
        lines.append("draw = [" + ", ".join(f'"{f}"' for f in figures) + "]")
    lines.append("[calibration]")
    lines += [f"{k} = {v}" for k, v in sandbox_calibration().items()]
    (folder / "study.toml").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return _with_tle_queries(manifest, patients)[0]


def _shard(args: tuple[str, str, str, int]) -> int:
    manifest, out, root_url, workers = args
    import pandas as pd

    table = pd.read_parquet(manifest)
    report = fetch_in_process(
        table, Path(out), root_url=root_url, max_workers=workers, progress=False
    )
    return int(report.stored)


def build_store(
    manifest: Any, out: Path, *, root_url: str, processes: int = 2, workers: int = 4
) -> int:
    """Fetch ``manifest`` in process into the store ``out``, in ``processes`` shards.

    Each shard (a slice of the patients) is fetched by its own process into its own store;
    their parts are then moved into ``out`` (a store is its part files plus the marker, and
    parts are only ever added, so the result reads as one fetch). Returns the rows stored.
    """
    import json
    import os
    import shutil
    import tempfile
    from concurrent.futures import ProcessPoolExecutor

    import numpy as np

    ids = manifest["patient_id"].drop_duplicates().tolist()
    with tempfile.TemporaryDirectory(dir=out.parent) as tmp:
        jobs = []
        for k, chunk in enumerate(np.array_split(np.array(ids, dtype=object), processes)):
            path = Path(tmp) / f"manifest-{k}.parquet"
            manifest[manifest["patient_id"].isin(set(chunk))].to_parquet(path)
            jobs.append((str(path), str(Path(tmp) / f"store-{k}"), root_url, workers))
        with ProcessPoolExecutor(processes) as pool:
            stored = sum(pool.map(_shard, jobs))
        (out / "responses").mkdir(parents=True, exist_ok=True)
        meta = json.loads((Path(jobs[0][1]) / "_dentalkit.json").read_text())
        (out / "_dentalkit.json").write_text(json.dumps(meta, indent=2))
        for _, store, _, _ in jobs:
            for part in sorted((Path(store) / "responses").glob("part-*.parquet")):
                shutil.move(part, out / "responses" / part.name)
        os.sync()
    return stored


if __name__ == "__main__":
    import argparse
    import time

    parser = argparse.ArgumentParser(description="build a benchmark store")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--patients", type=int, required=True)
    parser.add_argument("--root-url", default="http://127.0.0.1:8799")
    parser.add_argument("--processes", type=int, default=2)
    a = parser.parse_args()
    a.folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    table = study_inputs(a.folder, a.patients, a.root_url)
    n = build_store(table, a.folder / "study", root_url=a.root_url, processes=a.processes)
    print(f"{a.patients} patients: {n} responses stored in {time.perf_counter() - t0:.0f} s")
