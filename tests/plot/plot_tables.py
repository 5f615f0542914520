"""Small tables for the figure tests, built by hand or from sandbox bodies.

The sandbox simulator (``dentalkit.sandbox.simulate.respond``) answers like the
service; a few lines here flatten its bodies into the data-contract tables (the
converters' own tests pin the converters; these tests only need plausible tables).
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

import pandas as pd
import shapely

from dentalkit.landmark_map import load_landmark_map
from dentalkit.sandbox import simulate
from dentalkit.teeth import TOOTH_DIGIT

_QUADRANT = {("up", "rgt"): 1, ("up", "lft"): 2, ("lo", "lft"): 3, ("lo", "rgt"): 4}


def _url(kind: str, pid: str, ts: str) -> str:
    return f"https://sandbox.local/_sandbox/images/{kind}/{pid}/{ts}.png"


@lru_cache(maxsize=64)
def _landmarks(pid: str, ts: str, view: str) -> pd.DataFrame:
    kind = "lateral_ceph" if view == "lateral" else "frontal_ceph"
    body = simulate.respond(
        f"ceph-{view}-points", {"PatientID": pid, "TimeStamp": ts, "ImageName": _url(kind, pid, ts)}
    )
    names = load_landmark_map(view).set_index("key")["name"]
    rows = [
        (pid, ts, view, k, names.get(k), v["x_coordinate"], v["y_coordinate"])
        for k, v in body["Results"].items()
    ]
    return pd.DataFrame(
        rows, columns=["patient_id", "timestamp", "view", "landmark", "name", "x", "y"]
    )


def landmarks(pid: str = "P001", ts: str = "2024-03-01", view: str = "lateral") -> pd.DataFrame:
    """The ``landmarks`` table of one sandbox session."""
    return _landmarks(pid, ts, view).copy()


@lru_cache(maxsize=64)
def _teeth(pid: str, ts: str, endpoint: str, source: str, kind: str) -> pd.DataFrame:
    body = simulate.respond(
        endpoint, {"PatientID": pid, "TimeStamp": ts, "ImageName": _url(kind, pid, ts)}
    )
    rows = []
    for key, rec in body["Results"].items():
        tt, side, arch = key.split("_")
        geom = None if rec["missing"] else shapely.Polygon(rec["points"])
        fdi = _QUADRANT[(arch, side)] * 10 + TOOTH_DIGIT[tt]
        rows.append((pid, ts, source, key, tt, side, arch, fdi, rec["missing"], geom))
    return pd.DataFrame(
        rows,
        columns=[
            "patient_id",
            "timestamp",
            "source",
            "tooth",
            "tooth_type",
            "side",
            "arch",
            "fdi",
            "missing",
            "geometry",
        ],
    )


def teeth(pid: str = "P002", ts: str = "2024-03-01", source: str = "pano") -> pd.DataFrame:
    """The ``teeth`` table of one sandbox image (pano or occlusogram_upper/lower)."""
    endpoint, kind = {
        "pano": ("pano-segmentation", "pano"),
        "occlusogram_upper": ("occlusogram-upper-seg", "model_upper"),
        "occlusogram_lower": ("occlusogram-lower-seg", "model_lower"),
    }[source]
    return _teeth(pid, ts, endpoint, source, kind).copy()


def findings(pid: str | None = None, ts: str = "2024-03-01") -> pd.DataFrame:
    """The ``findings`` table of one sandbox clinical photograph (default: the first
    sandbox patient with detections, see :func:`patient_with_findings`)."""
    pid = pid or patient_with_findings()
    body = simulate.respond(
        "clinical-images",
        {"PatientID": pid, "TimeStamp": ts, "ImageName": _url("intraoral_frontal", pid, ts)},
    )
    rows = [
        (pid, ts, "clinical", d["ClassName"], *d["TopLeft"], *d["BottomRight"])
        for dets in body["Results"].values()
        for d in dets
    ]
    return pd.DataFrame(
        rows,
        columns=["patient_id", "timestamp", "source", "class_name", "x0", "y0", "x1", "y1"],
    )


@lru_cache(maxsize=1)
def patient_with_findings(ts: str = "2024-03-01") -> str:
    """The first sandbox patient (P001, P002 …) whose clinical photograph has detections."""
    for i in range(1, 200):
        pid = f"P{i:03d}"
        if len(findings(pid, ts)) >= 3:
            return pid
    raise AssertionError("no sandbox patient with clinical findings")  # pragma: no cover


def arch_points(pid: str = "P003", ts: str = "2024-03-01", arch: str = "up") -> pd.DataFrame:
    """The ``arch_points`` table of one sandbox occlusogram."""
    kind = "model_upper" if arch == "up" else "model_lower"
    body = simulate.respond(
        f"occlusogram-{'upper' if arch == 'up' else 'lower'}-points",
        {"PatientID": pid, "TimeStamp": ts, "ImageName": _url(kind, pid, ts)},
    )
    rows = [
        (pid, ts, arch, k, int(k[1:]), float(x), float(y))
        for k, (x, y) in body["CatenaryPoints"].items()
    ]
    out = pd.DataFrame(
        rows, columns=["patient_id", "timestamp", "arch", "point", "index", "x", "y"]
    )
    return out.sort_values("index", ignore_index=True)


def save_all(ax_or_fig, tmp_path: Path, name: str = "figure") -> dict[str, Path]:
    """Save a figure as PNG, PDF and SVG; check each file is a real, non-empty file."""
    from dentalkit import plot

    files = plot.savefig(
        ax_or_fig, tmp_path / name, width=None, dpi=300, formats=("png", "pdf", "svg")
    )
    out = {p.suffix.lstrip("."): p for p in files}
    assert out["png"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert out["pdf"].read_bytes()[:5] == b"%PDF-"
    assert b"<svg" in out["svg"].read_bytes()[:2000]
    return out
