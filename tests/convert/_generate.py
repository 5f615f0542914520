"""Generators of valid responses for the property tests, with the rows they must give.

The expected rows are built here from the generated data with plain Python (and
shapely for outlines), not by the converters. Hypothesis draws one seed per response;
the body is built from it with ``random.Random``, which keeps generation cheap enough
for batches of a hundred responses per example.
"""

from __future__ import annotations

import csv
import json
import math
import random
from importlib import resources

import pandas as pd
import shapely
from hypothesis import strategies as st

from tests.convert._helpers import FDI_32, frame

# hand-checked ISO 8601 parses (naive = UTC); None = not ISO 8601 → NaT
TIMESTAMPS = {
    "2024-03-01T09:30:00Z": pd.Timestamp("2024-03-01 09:30", tz="UTC"),
    "2024-03-01": pd.Timestamp("2024-03-01", tz="UTC"),
    "2023-12-31T23:00:00-01:00": pd.Timestamp("2024-01-01 00:00", tz="UTC"),
    "2025-06-30T12:00:00.5": pd.Timestamp("2025-06-30 12:00:00.5", tz="UTC"),
    "visit 3": None,
}
PATIENTS = [f"P{i:03d}" for i in range(6)]
VERSIONS = ["2024.1.3", "2024.2.0", "v7"]


def _names(view: str) -> dict[str, str]:
    text = resources.files("dentalkit.data").joinpath(f"landmark_map_{view}.csv").read_text("utf-8")
    return {r["key"]: r["name"] for r in csv.DictReader(text.splitlines())}


NAMES = {"lateral": _names("lateral"), "frontal": _names("frontal")}


# ---------------------------------------------------------------- generators of valid bodies
# Each draws a seed and builds the bulk (coordinates, outlines) with random.Random(seed):
# a handful of hypothesis draws per response keeps generation cheap, so every example
# can be a whole batch. Each returns (endpoint, body, expected rows per table, extra).


def coord(rng: random.Random) -> float | int:
    """A valid coordinate: mostly decimals, sometimes integers, exact 0/1 (which the
    converters recheck), negative zero, values near the ±1e6 limit or tiny ones."""
    r = rng.random()
    if r < 0.70:
        return round(rng.uniform(-500, 5000), rng.choice([0, 1, 2, 3, 6, 12]))
    if r < 0.82:
        return rng.randint(-500, 50_000)
    return rng.choice([0, 1, 0.0, 1.0, -0.0, 999_999.5, -1e6, 1e6, 5e-324, 1e-300])


SEEDS = st.integers(0, 2**32 - 1)
#: characters for generated names: ASCII, JSON escapes, accents, CJK, emoji
CHARS = "abcXYZ019 _-./:" + '"\\' + "\t\n" + "éßøÅ漢字歯" + "\U0001f9b7\u200b"


def text(rng: random.Random) -> str:
    return "".join(rng.choice(CHARS) for _ in range(rng.randint(1, 20)))


def landmark_body(rng: random.Random):
    view = rng.choice(["lateral", "frontal"])
    if view == "lateral":
        pool, endpoint = [f"Later_{k}" for k in range(1, 170)], "ceph_lateral_points"
    else:
        pool = [f"Front_{k}" for k in range(1, 101)] + [f"SasFront_{k}" for k in range(1, 19)]
        endpoint = "ceph_frontal_points"
    keys = rng.sample(pool, rng.choice([0, 1, 3, 12, 40, 40, len(pool)]))
    results, rows = {}, []
    for k in keys:
        x, y = coord(rng), coord(rng)
        rec = {"x_coordinate": x, "y_coordinate": y}
        results[k] = dict(reversed(rec.items())) if rng.random() < 0.2 else rec
        rows.append((view, k, NAMES[view][k], float(x), float(y)))
    version = rng.choice(VERSIONS)
    body = {"Version": version, "NumberOfPredictedPoints": len(keys), "Results": results}
    return endpoint, body, {"landmarks": rows}, version


SOURCES = {
    "frontal_segmentation": ("frontal", None),
    "pano_segmentation": ("pano", None),
    "occlusogram_upper_seg": ("occlusogram_upper", "up"),
    "occlusogram_lower_seg": ("occlusogram_lower", "lo"),
}


def star(rng: random.Random) -> list[list[float]]:
    """A simple outline: points in angular order around a centre, gaps below 180°."""
    k = rng.randint(4, 14)
    cx, cy = rng.uniform(50, 3000), rng.uniform(50, 3000)
    pts = []
    for j in range(k):
        a = 2 * math.pi * j / k + rng.uniform(0, math.pi / (2 * k))
        r = rng.uniform(2, 60)
        pts.append([cx + r * math.cos(a), cy + r * math.sin(a)])
    if rng.random() < 0.3:
        pts = [[round(x), round(y)] for x, y in pts] if rng.random() < 0.3 else pts
    if rng.random() < 0.5:
        pts.append(list(pts[0]))  # closed ring
    return pts


def tooth_body(rng: random.Random):
    endpoint = rng.choice(sorted(SOURCES))
    source, arch = SOURCES[endpoint]
    pool = [k for k in FDI_32 if arch is None or k.endswith(arch)]
    results, rows = {}, []
    for key in rng.sample(pool, rng.choice([0, 1, 4, len(pool)])):
        if rng.random() < 0.15:
            results[key] = {"missing": True, "points": [[0, 0]]}
            rows.append((source, key, FDI_32[key], True, None))
            continue
        pts = star(rng)
        results[key] = {"missing": False, "points": pts}
        # rounding to integers can fold a small outline onto itself: keep only the
        # outlines that plain shapely calls valid, built one by one
        poly = shapely.Polygon(pts)
        if not poly.is_valid or len({tuple(p) for p in pts}) < 3:
            del results[key]
            continue
        rows.append((source, key, FDI_32[key], False, poly))
    version = rng.choice(VERSIONS)
    return endpoint, {"Version": version, "Results": results}, {"teeth": rows}, version


def keypoint_body(rng: random.Random):
    endpoint = rng.choice(["occlusogram_upper_points", "occlusogram_lower_points"])
    arch = "up" if "upper" in endpoint else "lo"
    pool = [k for k in FDI_32 if k.endswith(arch)]
    teeth, tk_rows = {}, []
    for key in rng.sample(pool, rng.choice([0, 1, 5, len(pool)])):
        missing = rng.random() < 0.2
        rec = {"missing": missing, "centroid": [coord(rng), coord(rng)]}
        for n in rng.sample(range(1, 21), rng.randint(0, 4)):
            rec[f"t{n:02d}"] = [coord(rng), coord(rng)]
        if rng.random() < 0.3:  # any order of fields
            rec = dict(reversed(rec.items()))
        teeth[key] = rec
        for name, value in rec.items():
            if name != "missing":
                tk_rows.append(
                    (arch, key, FDI_32[key], missing, name, float(value[0]), float(value[1]))
                )
    catenary, ap_rows = {}, []
    for n in rng.sample(range(100), rng.choice([0, 2, 7, 30])):
        x, y = coord(rng), coord(rng)
        catenary[f"t{n:02d}"] = [x, y]
        ap_rows.append((arch, f"t{n:02d}", n, float(x), float(y)))
    version = rng.choice(VERSIONS)
    body = {"Version": version, "Teeth": teeth, "CatenaryPoints": catenary}
    return endpoint, body, {"tooth_keypoints": tk_rows, "arch_points": ap_rows}, version


def findings_body(rng: random.Random):
    endpoint = rng.choice(["clinical_images", "panos_findings"])
    source = "clinical" if endpoint == "clinical_images" else "pano"
    classes = rng.sample(
        ["decay", "restoration", "bracket", "calculus", "gingivitis"], rng.randint(0, 4)
    )
    results, rows, counts = {}, [], {}
    for cls in classes:
        dets = []
        for _ in range(rng.choice([0, 1, 2, 5])):
            x0, y0 = coord(rng), coord(rng)
            x1, y1 = x0 + rng.randint(0, 300), y0 + rng.uniform(0, 300)
            if abs(x1) > 1e6 or abs(y1) > 1e6:
                x1, y1 = x0, y0
            dets.append({"ClassName": cls, "TopLeft": [x0, y0], "BottomRight": [x1, y1]})
            rows.append((source, cls, float(x0), float(y0), float(x1), float(y1)))
        results[cls] = dets
        counts[cls] = len(dets)
    version = rng.choice(VERSIONS)
    body = {"Version": version, "Results": results}
    expected = {"findings": rows, "finding_counts": []}
    if endpoint == "clinical_images":
        if rng.random() < 0.3:
            counts["bracket_debond"] = 0  # a declared zero with no detections
        body["ImageContents"] = counts
        expected["finding_counts"] = [(source, c, n) for c, n in counts.items()]
    return endpoint, body, expected, version


def classifier_body(rng: random.Random):
    name, category = text(rng), text(rng)
    confidence = rng.choice([rng.random(), rng.random(), 0, 1, 1.0, 5e-324])
    body = {"ImageName": name, "Classification": {"category": category, "confidence": confidence}}
    return "classifier", body, {"classifications": [(name, category, float(confidence))]}, None


SENTENCES = {
    "No findings were detected.": False,
    "No findings detected": False,
    "There are no findings.": False,
    "No significant findings were found in the image.": False,
    "Flattening of the left condylar head.": True,
    "Erosion of the articular surface detected": True,
    "No effusion; condyle flattened.": True,
}


def tmj_body(rng: random.Random):
    name, sentence = text(rng), rng.choice(sorted(SENTENCES))
    body = {"ImageName": name, "Results": {"Finding": sentence}}
    return "tmj_xsectional", body, {"tmj": [(name, sentence, SENTENCES[sentence])]}, None


def tle_body(rng: random.Random):
    params = [
        rng.choice(["", "F", "M", "II/1", "2.5", "yes"])
        if rng.random() < 0.5
        else rng.randint(0, 90)
        for _ in range(11)
    ]
    app, est = text(rng), rng.choice([rng.uniform(0, 120), 0, 36, 1e-9])
    body = {"app": app, "estimate_length": est}
    options = {f"p{i:02d}": v for i, v in enumerate(params, 1)}
    return "tle", body, {"tle": [(*[str(v) for v in params], app, est)]}, options


KINDS = {
    "landmarks": (landmark_body, ("landmarks",)),
    "teeth": (tooth_body, ("teeth",)),
    "keypoints": (keypoint_body, ("tooth_keypoints", "arch_points")),
    "findings": (findings_body, ("findings", "finding_counts")),
    "classifier": (classifier_body, ("classifications",)),
    "tmj": (tmj_body, ("tmj",)),
    "tle": (tle_body, ("tle",)),
}
ALL_TABLES = [t for _, tables in KINDS.values() for t in tables]


@st.composite
def response(draw, kind: str):
    """One responses-table row of ``kind`` and its expected rows (with the session key).

    Hypothesis draws one seed per response; the body is built from it with
    random.Random, which keeps generation cheap enough for batches of a hundred.
    """
    rng = random.Random(draw(SEEDS))
    endpoint, body, expected, extra = KINDS[kind][0](rng)
    pid, ts = rng.choice(PATIENTS), rng.choice(sorted(TIMESTAMPS))
    row = {"endpoint": endpoint, "patient_id": pid, "timestamp": ts}
    version = None
    if kind == "tle":
        row["options"] = json.dumps(extra)
        if rng.random() < 0.5:
            row["patient_id"] = row["timestamp"] = None
    else:
        version = extra
        if rng.random() < 0.5:  # an echo that agrees with the request, or none
            body["PatientID"] = pid
        if rng.random() < 0.5:
            body["OutputImageUrl"] = "https://out.example/x.png?expires=1&sig=ab"
    encoding = rng.choice(["text", "text", "bytes", "dict"])
    row["body"] = body
    key = (row["patient_id"], row["timestamp"], endpoint, version)
    return row, encoding, {t: [(*key, *r) for r in rows] for t, rows in expected.items()}


def encode(row: dict, encoding: str) -> dict:
    """The body as JSON text, UTF-8 bytes or the parsed dict itself (NaN and 10**30 stay
    what they are in a dict; in text they become invalid JSON or a float)."""
    body = row["body"]
    if encoding == "text":
        body = json.dumps(body)
    elif encoding == "bytes":
        body = json.dumps(body).encode()
    return row | {"body": body}


def responses_frame(rows: list[dict], encodings: list[str]) -> pd.DataFrame:
    df = frame(*[encode(r, e) for r, e in zip(rows, encodings, strict=True)])
    df["body"] = pd.Series(list(df["body"]), dtype=object)  # keep dicts and bytes as they are
    if "options" not in df:
        df["options"] = None
    return df


# ---------------------------------------------------------------- observed rows

_OWN_COLUMNS = {
    "landmarks": ["view", "landmark", "name", "x", "y"],
    "teeth": ["source", "tooth", "fdi", "missing", "geometry"],
    "tooth_keypoints": ["arch", "tooth", "fdi", "missing", "point", "x", "y"],
    "arch_points": ["arch", "point", "index", "x", "y"],
    "findings": ["source", "class_name", "x0", "y0", "x1", "y1"],
    "finding_counts": ["source", "class_name", "count"],
    "classifications": ["image_name", "category", "confidence"],
    "tmj": ["image_name", "finding", "has_finding"],
    "tle": [f"p{i:02d}" for i in range(1, 12)] + ["app", "estimate_length_months"],
}


def observed(df: pd.DataFrame, table: str) -> list[tuple]:
    cols = ["patient_id", "timestamp", "endpoint", "model_version", *_OWN_COLUMNS[table]]
    values = []
    for c in cols:
        values.append([None if _isna(v) else v for v in df[c].astype(object).tolist()])
    return list(zip(*values, strict=True))


def _isna(v) -> bool:
    return v is None or v is pd.NA or v is pd.NaT or (type(v) is float and v != v)


def assert_rows(got: list[tuple], want: list[tuple]) -> None:
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        for a, b in zip(g, w, strict=True):
            if isinstance(b, shapely.Geometry):
                assert isinstance(a, shapely.Geometry) and shapely.equals_exact(a, b, tolerance=0)
            else:
                assert a == b, (g, w)


def other_problems(problems: pd.DataFrame, df: pd.DataFrame, dropped=()) -> pd.DataFrame:
    """The problems besides the timestamps that give no session_time, after checking those:
    one warning per image response row whose timestamp is not ISO 8601 (``TIMESTAMPS``
    None), except the rows of dropped responses (a /tle timestamp is a label, not parsed)."""
    unread = {
        i
        for i, (ts, ep) in enumerate(zip(df["timestamp"], df["endpoint"], strict=True))
        if isinstance(ts, str)
        and TIMESTAMPS.get(ts, "x") is None
        and i not in dropped
        and ep != "tle"
    }
    is_ts = (problems["field"] == "timestamp").to_numpy()
    got = problems[is_ts]
    assert sorted(got["row"]) == sorted(unread)
    assert (got["severity"] == "warning").all() and (got["table"] == "responses").all()
    assert got["reason"].str.contains("not an ISO 8601 date").all()
    return problems[~is_ts]


def check_session_time(df: pd.DataFrame) -> None:
    for ts, parsed in set(zip(df["timestamp"].astype(object), df["session_time"], strict=True)):
        want = TIMESTAMPS.get(ts) if isinstance(ts, str) else None
        assert (pd.isna(parsed) and want is None) or parsed == want
