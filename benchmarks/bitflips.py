"""Single-bit flips in a responses part and in the HTTP cache: caught, harmless or silent?

Issue 30: of 400 single-bit flips in a 46 KB responses part, 186 silently changed response
bodies and 23 changed request keys, and ``verify`` and ``tables`` said all was well. This
campaign flips one bit at a time, at a uniformly drawn position (seeded), in a copy of

* **a responses part** (~50 KB; 48 answers of four endpoints from a frozen sandbox), then
  reads the copy with :func:`dentalkit.fetch.store.read_responses` (what ``dentalkit
  tables`` and ``verify`` read through) and compares every row with the original;
* **a SQLite HTTP cache** holding the same 48 answers, then asks a new client for every
  one of them and compares each answer served from the cache with the original.

Each flip is **caught** (the damage is detected: a ``DamagedFileError``, a cache moved aside
or an entry refused, so nothing damaged is used), **harmless** (everything read is identical
to the original: the bit was in padding, statistics or a key that then misses) or
**silent** (something read differs from the original and nothing said so). The target is
0 silent of >= 400 tried, in each. With ``--compare``, the part campaign is also run on a
part written the way dentalkit wrote them before (no page checksums, no digests) and read
without checks, side by side.

    python benchmarks/bitflips.py                # 400 flips in a part, 400 in the cache
    python benchmarks/bitflips.py --compare      # and the same flips in an unchecked part
    python benchmarks/bitflips.py --smoke        # 40 + 40, for the test suite

Any exception other than dentalkit's ``DamagedFileError`` while reading is counted as
``other errors`` (a crash the user would see as a traceback); the target is 0 there too.
"""

from __future__ import annotations

import argparse
import logging
import random
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

FROZEN = 1_767_225_600.0
ENDPOINTS = ["classifier", "tmj_xsectional", "occlusogram_upper_points", "panos_findings"]
COMPARED = ["patient_id", "timestamp", "endpoint", "request_key", "image_url", "options", "status_code", "body", "model_version", "fetched_at", "from_cache", "error"]  # fmt: skip


def _manifest(n: int):
    import pandas as pd

    ids = [f"F{i:03d}" for i in range(n)]
    return pd.DataFrame(
        {
            "patient_id": ids,
            "timestamp": "2025-02-03",
            "image_url": [f"https://images.example.org/{p}/image.png" for p in ids],
        }
    )


def _flip(data: bytes, rng: random.Random) -> tuple[bytes, int]:
    pos = rng.randrange(len(data) * 8)
    out = bytearray(data)
    out[pos // 8] ^= 1 << (pos % 8)
    return bytes(out), pos


def _rows(frame) -> dict:
    table = frame[COMPARED].astype(object).where(frame[COMPARED].notna(), None)
    return {r["request_key"]: r for r in table.to_dict("records")}


def part_campaign(out: Path, flips: int, seed: int, unchecked: bool = False) -> dict[str, int]:
    """Flip bits in (a copy of) the one part of store ``out``; read it back each time."""
    import pyarrow.parquet as pq

    from dentalkit.errors import DamagedFileError
    from dentalkit.fetch.store import CHECKSUM_COLUMNS, read_responses

    (part,) = sorted((out / "responses").glob("part-*.parquet"))
    reference = _rows(read_responses(out))
    scratch = Path(tempfile.mkdtemp(prefix="bitflips-part-"))
    try:
        shutil.copy(out / "_dentalkit.json", scratch / "_dentalkit.json")
        (scratch / "responses").mkdir()
        target = scratch / "responses" / part.name
        if unchecked:  # as dentalkit wrote parts before issue 30
            table = pq.read_table(part).drop_columns(list(CHECKSUM_COLUMNS))
            pq.write_table(table, target, write_page_checksum=False)
            original = target.read_bytes()
        else:
            original = part.read_bytes()
        counts = dict.fromkeys(["tried", "caught", "harmless", "silent", "bodies changed", "keys changed", "other errors"], 0)  # fmt: skip
        rng = random.Random(seed)
        for _ in range(flips):
            damaged, _ = _flip(original, rng)
            target.write_bytes(damaged)
            counts["tried"] += 1
            try:
                got = _rows(read_responses(scratch, verify=not unchecked))
            except DamagedFileError:
                counts["caught"] += 1
                continue
            except Exception as exc:  # a traceback the user would see: not dentalkit's error
                counts["other errors"] += 1
                print(f"  other error: {type(exc).__name__}: {str(exc)[:200]}")
                continue
            changed_keys = len(set(got) ^ set(reference))
            changed_bodies = sum(
                got[k]["body"] != r["body"] for k, r in reference.items() if k in got
            )
            changed_rows = changed_keys + sum(got[k] != r for k, r in reference.items() if k in got)
            counts["keys changed"] += changed_keys > 0
            counts["bodies changed"] += changed_bodies > 0
            counts["silent" if changed_rows else "harmless"] += 1
        return counts
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def cache_campaign(
    sb, cache: Path, manifest, reference: dict, flips: int, seed: int
) -> dict[str, int]:
    """Flip bits in (a copy of) a SQLite cache; ask a new client for every answer each time."""
    from dentalkit.errors import DentalkitError
    from dentalkit.fetch import _cache
    from dentalkit.fetch.client import Client

    original = cache.read_bytes()
    scratch = Path(tempfile.mkdtemp(prefix="bitflips-cache-"))
    counts = dict.fromkeys(["tried", "caught", "harmless", "silent", "other errors"], 0)
    rng = random.Random(seed)
    quiet = logging.getLogger("dentalkit")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)  # one warning per damaged entry would flood the output
    logging.getLogger("requests_cache").setLevel(logging.CRITICAL)
    try:
        for i in range(flips):
            copy = scratch / f"c{i}.sqlite"
            damaged, _ = _flip(original, rng)
            copy.write_bytes(damaged)
            counts["tried"] += 1
            sb.reset_stats()
            read_before = _cache.damaged_entries_read
            detected = served_wrong = False
            try:
                client = Client(sb.base_url, api_key=sb.api_key, cache=copy, max_retries=0)
                detected |= bool(client.quarantined_cache)
                for (pid, ts, url, ep), text in reference.items():
                    try:
                        res = client.call(ep, pid, ts, url)
                    except DentalkitError:  # DamagedFileError of a malformed database
                        detected = True
                        continue
                    served_wrong |= res.from_cache and res.text != text
                client.close()
            except DentalkitError:
                detected = True
            except Exception:
                counts["other errors"] += 1
                continue
            asked = sb.stats()["total"]  # answers the cache could not give
            detected |= _cache.damaged_entries_read > read_before or asked > 0
            if served_wrong:
                counts["silent"] += 1
            else:
                counts["caught" if detected else "harmless"] += 1
            for f in scratch.glob(f"c{i}.sqlite*"):
                f.unlink()
        return counts
    finally:
        quiet.setLevel(level)
        shutil.rmtree(scratch, ignore_errors=True)


def main(argv: list[str] | None = None) -> dict[str, dict[str, int]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--flips", type=int, default=400, help="flips per campaign")
    parser.add_argument("--patients", type=int, default=12)
    parser.add_argument("--seed", type=int, default=30)
    parser.add_argument("--compare", action="store_true", help="also an unchecked part")
    parser.add_argument("--smoke", action="store_true", help="40 flips each, for CI")
    args = parser.parse_args(argv)
    if args.smoke:
        args.flips = 40

    from dentalkit.fetch.client import Client
    from dentalkit.fetch.cohort import fetch_cohort
    from dentalkit.fetch.store import read_responses
    from dentalkit.sandbox import running

    results: dict[str, dict[str, int]] = {}
    with running(frozen_time=FROZEN) as sb, tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        manifest = _manifest(args.patients)
        cache = tmp / "http.sqlite"
        with Client(sb.base_url, api_key=sb.api_key, cache=cache) as client:
            fetch_cohort(manifest, ENDPOINTS, tmp / "out", client=client, progress=False)
        # the closed client checkpointed the WAL: the cache is one file
        stored = read_responses(tmp / "out")
        (part,) = (tmp / "out" / "responses").glob("part-*.parquet")
        reference = {
            (r.patient_id, r.timestamp, r.image_url, str(r.endpoint)): r.body
            for r in stored.itertuples()
        }
        print(
            f"setup: one responses part of {part.stat().st_size:,} bytes ({len(stored)} "
            f"answers of {', '.join(ENDPOINTS)}); a SQLite cache of "
            f"{cache.stat().st_size:,} bytes holding the same answers; {args.flips} "
            f"single-bit flips each, seed {args.seed}"
        )
        runs = [("part", False)] + ([("part, unchecked (as before)", True)] if args.compare else [])
        for name, unchecked in runs:
            results[name] = part_campaign(tmp / "out", args.flips, args.seed, unchecked)
        results["cache"] = cache_campaign(sb, cache, manifest, reference, args.flips, args.seed)
    for name, c in results.items():
        extra = (
            f"; {c['bodies changed']} changed bodies, {c['keys changed']} changed keys"
            if "bodies changed" in c
            else ""
        )
        print(
            f"{name}: {c['caught']} caught, {c['harmless']} harmless, {c['silent']} silent "
            f"of {c['tried']} tried{extra}; {c['other errors']} other errors"
        )
    return results


if __name__ == "__main__":
    main()
