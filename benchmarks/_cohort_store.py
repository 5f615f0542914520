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


def replicate(source: Path, dest: Path, copies: int) -> int:
    """A ``copies`` × larger study folder made from ``source`` without the sandbox.

    ``source`` is a study folder (``patients.csv``, ``study.toml``, ``study/`` the store).
    Copy 0 is the source cohort; copy ``c`` ≥ 1 repeats every patient as
    ``<patient_id>~c``: its rows of ``patients.csv`` and its stored answers, each body's
    ``PatientID`` echo renamed the same way and a new ``request_key`` (SHA-256 of the old key
    and the copy). The parts are written through the store's own ``append`` (digests and
    page checksums as a fetch writes them). What the stages after the fetch read (bodies,
    sizes, patients) is then ``copies`` times the source; the request keys are not those a
    fetch of a renamed manifest would compute, so ``dentalkit study`` on this folder would
    send the copies' requests again: measure it with ``benchmarks/_stages.py``. Returns the
    rows stored.
    """
    import hashlib
    import shutil

    import pandas as pd
    import pyarrow.parquet as pq

    from dentalkit.fetch.store import CHECKSUM_COLUMNS, RESPONSES_SCHEMA, ResponseStore, _read_meta

    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy(source / "study.toml", dest / "study.toml")
    patients = pd.read_csv(source / "patients.csv", dtype={"patient_id": str})
    pd.concat(
        [
            patients.assign(patient_id=patients["patient_id"] + (f"~{c}" if c else ""))
            for c in range(copies)
        ],
        ignore_index=True,
    ).to_csv(dest / "patients.csv", index=False)
    meta = _read_meta(source / "study" / "_dentalkit.json")
    names = [n for n in RESPONSES_SCHEMA.names if n not in CHECKSUM_COLUMNS and n != "session_time"]
    stored = 0
    with ResponseStore(dest / "study", meta["base_url"]) as store:
        for path in sorted((source / "study" / "responses").glob("part-*.parquet")):
            part = pq.read_table(path, columns=names).to_pandas()
            for c in range(copies):
                copy = part.copy()
                if c:
                    old = part["patient_id"].astype(object)
                    new = old + f"~{c}"
                    copy["patient_id"] = new
                    copy["body"] = [
                        b.replace(f'"PatientID":"{o}"', f'"PatientID":"{n}"', 1)
                        if isinstance(b, str)
                        else b
                        for b, o, n in zip(part["body"], old, new, strict=True)
                    ]
                    copy["request_key"] = [
                        hashlib.sha256(f"{k}~{c}".encode()).hexdigest() for k in part["request_key"]
                    ]
                store.append(copy.to_dict("records"))
                stored += len(copy)
    return stored


if __name__ == "__main__":
    import argparse
    import time

    parser = argparse.ArgumentParser(description="build a benchmark store")
    parser.add_argument("folder", type=Path)
    parser.add_argument("--patients", type=int, default=0)
    parser.add_argument("--replicate", type=Path, help="a study folder to repeat --copies times")
    parser.add_argument("--copies", type=int, default=2)
    parser.add_argument("--root-url", default="http://127.0.0.1:8799")
    parser.add_argument("--processes", type=int, default=2)
    a = parser.parse_args()
    a.folder.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    if a.replicate:
        n = replicate(a.replicate, a.folder, a.copies)
        print(
            f"{a.copies} copies of {a.replicate}: {n} responses stored in {time.perf_counter() - t0:.0f} s"
        )
        raise SystemExit(0)
    table = study_inputs(a.folder, a.patients, a.root_url)
    n = build_store(table, a.folder / "study", root_url=a.root_url, processes=a.processes)
    print(f"{a.patients} patients: {n} responses stored in {time.perf_counter() - t0:.0f} s")
