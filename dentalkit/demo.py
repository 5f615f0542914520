"""``dentalkit demo``: the whole pipeline on the embedded sandbox.

Today it starts the sandbox and calls every endpoint once for a few synthetic patients;
later stages (cached cohort fetch, tables, analyses, figures) join as they land.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import orjson
import requests

from dentalkit.endpoints import ENDPOINTS


def run_demo(patients: int = 3, out: Path = Path("dentalkit-demo"), echo: Callable = print) -> None:
    """Start a sandbox, call every endpoint for ``patients`` synthetic patients, print a summary."""
    from dentalkit.sandbox import running
    from dentalkit.sandbox.app import BANNER
    from dentalkit.sandbox.render import default_image_kind

    echo(BANNER)
    out.mkdir(parents=True, exist_ok=True)
    with running() as sb:
        echo(f"sandbox at {sb.base_url}")
        session = requests.Session()
        session.headers["x-api-key"] = sb.api_key
        rows = []
        for i in range(patients):
            pid, ts = f"DEMO-{i + 1:03d}", "2024-03-05T10:00:00Z"
            for ep in ENDPOINTS.values():
                if ep.is_image:
                    url = sb.image_url(default_image_kind(ep), pid, ts[:10])
                    body = {"PatientID": pid, "TimeStamp": ts, "ImageName": url}
                    r = session.post(sb.base_url + ep.path, json=body, timeout=30)
                else:
                    params = {
                        "p01": "14", "p02": "F", "p03": "2", "p04": "1", "p05": "0", "p06": "4.5",
                        "p07": "3.0", "p08": "0", "p09": "0", "p10": "1", "p11": "6.5",
                    }  # fmt: skip
                    r = session.get(sb.base_url + ep.path, params=params, timeout=30)
                data = orjson.loads(r.content)
                rows.append((pid, ep.path, r.status_code, ", ".join(list(data)[:4])))
        (out / "responses.json").write_bytes(orjson.dumps(rows, option=orjson.OPT_INDENT_2))
    for pid, path, status, fields in rows:
        echo(f"{pid}  {path:28s} {status}  {fields}")
    echo(f"{len(rows)} calls; raw summary in {out / 'responses.json'}")
