"""Property tests: random valid responses convert exactly and survive Parquet; random
structural corruptions become ResponseFormatError (raise) or a dropped response with a
problems row (collect) — never another exception, never a silently wrong row.

The expected rows are built here from the generated data with plain Python (and
shapely for outlines), not by the converters. Each example is a batch of responses, so
the suite covers well over 10,000 generated responses in a few seconds per test.
"""

from __future__ import annotations

import csv
import json
import math
import random
import tempfile
from importlib import resources

import pandas as pd
import pytest
import shapely
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dentalkit import convert, io
from dentalkit.errors import ResponseFormatError
from tests.convert._helpers import COUNTS, frame
from tests.convert.test_teeth import FDI_32

pytestmark = pytest.mark.filterwarnings("error::dentalkit.errors.DentalkitWarning")

SETTINGS = settings(
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
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


def check_session_time(df: pd.DataFrame) -> None:
    for ts, parsed in set(zip(df["timestamp"].astype(object), df["session_time"], strict=True)):
        want = TIMESTAMPS.get(ts) if isinstance(ts, str) else None
        assert (pd.isna(parsed) and want is None) or parsed == want


# ---------------------------------------------------------------- valid responses


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(SETTINGS, max_examples=25)
@given(data=st.data())
def test_valid_batches_convert_exactly(kind, data):
    size = data.draw(st.sampled_from([1, 3, 30, 100, 150]), label="size")
    batch = data.draw(st.lists(response(kind), min_size=size, max_size=size), label="batch")
    rows = [r for r, _, _ in batch]
    df = responses_frame(rows, [e for _, e, _ in batch])
    out = convert.tables(df, include=KINDS[kind][1])
    assert len(out["problems"]) == 0
    for table in KINDS[kind][1]:
        want = [r for _, _, exp in batch for r in exp[table]]
        assert_rows(observed(out[table], table), want)
        check_session_time(out[table])
    COUNTS["responses"] += len(batch)


@settings(SETTINGS, max_examples=8)
@given(data=st.data())
def test_mixed_batches_round_trip_through_parquet(data):
    batch = data.draw(
        st.lists(st.sampled_from(sorted(KINDS)).flatmap(response), min_size=20, max_size=60),
        label="batch",
    )
    df = responses_frame([r for r, _, _ in batch], [e for _, e, _ in batch])
    out = convert.tables(df)
    with tempfile.TemporaryDirectory() as tmp:
        io.write_tables(out, tmp)
        back = io.read_tables(tmp)
    assert list(back) == list(out)
    for table in ALL_TABLES:
        want = [r for _, _, exp in batch for r in exp.get(table, [])]
        assert_rows(observed(back[table], table), want)
        a, b = out[table], back[table]
        if table == "teeth":
            a, b = a.drop(columns="geometry"), b.drop(columns="geometry")
        pd.testing.assert_frame_equal(a, b, check_exact=True)
    COUNTS["responses"] += len(batch)


# ---------------------------------------------------------------- corruptions

NUM, INT, BOOL, STR, PAIR = "num", "int", "bool", "str", "pair"
HUGE = "x" * 1_000_001  # a 1 MB string


def rec(fields: dict, extra=None) -> tuple:
    return ("rec", fields, extra)


def map_(value) -> tuple:
    return ("map", value)


def list_(item) -> tuple:
    return ("list", item)


DETECTION = rec({"ClassName": STR, "TopLeft": PAIR, "BottomRight": PAIR})
# the parts of each body the spec defines and the tables read; echo fields and
# OutputImageUrl are not in here (absent echoes are allowed)
SHAPES = {
    "landmarks": rec(
        {"Version": STR, "NumberOfPredictedPoints": INT,
         "Results": map_(rec({"x_coordinate": NUM, "y_coordinate": NUM}))}
    ),
    "teeth": rec({"Version": STR, "Results": map_(rec({"missing": BOOL, "points": list_(PAIR)}))}),
    "keypoints": rec(
        {"Version": STR, "Teeth": map_(rec({"missing": BOOL, "centroid": PAIR}, extra=PAIR)),
         "CatenaryPoints": map_(PAIR)}
    ),
    "findings": rec({"Version": STR, "Results": map_(list_(DETECTION))}),
    "clinical": rec({"Version": STR, "ImageContents": map_(INT), "Results": map_(list_(DETECTION))}),
    "classifier": rec({"ImageName": STR, "Classification": rec({"category": STR, "confidence": NUM})}),
    "tmj": rec({"ImageName": STR, "Results": rec({"Finding": STR})}),
    "tle": rec({"app": STR, "estimate_length": NUM}),
}  # fmt: skip
GARBAGE = {
    NUM: ["12.5", True, False, None, [1, 2], {"a": 1}, 1e300, -1e300, 10**30, math.nan, math.inf, HUGE],
    INT: [2.5, True, "3", None, -1, 10**30, [1], HUGE],
    BOOL: [0, 1, "false", None, [], HUGE],
    STR: [123, None, ["a"], "", HUGE, {"t": "x"}, True],
    PAIR: [[1], [1, 2, 3], [[1, 2], [3, 4]], "1,2", {"x": 1, "y": 2}, [1, "2"], None, [True, 2.0],
           [1e300, 0], [math.nan, 1], [HUGE, 1], []],
    "rec": [[], "rec", None, 5, [1, 2], [1, {"b": None}]],
    "map": [[], "map", None, 7, [{"a": 1}]],
    "list": [{}, "list", None, 3, {"0": [1, 2]}],
}  # fmt: skip
NESTED_GARBAGE = {"junk": [1, {"deeper": [None, "x"]}]}


def slots(value, shape, parent, key, top=False):
    """Every place of a body a corruption can hit, with the operations that break it."""
    kind = shape if isinstance(shape, str) else shape[0]
    if not top:
        yield ("replace", parent, key, kind)
    if kind == "rec" and isinstance(value, dict):
        fields, extra = shape[1], shape[2]
        for name, sub in fields.items():
            if name in value:
                yield ("drop", value, name, None)
                yield from slots(value[name], sub, value, name)
        if extra is not None:
            for name in value:
                if name not in fields:
                    yield from slots(value[name], extra, value, name)
        if not top:
            yield ("extra", value, "junk", None)
    elif kind == "map" and isinstance(value, dict):
        for name in value:
            yield from slots(value[name], shape[1], value, name)
        if value:
            yield ("bad_key", value, None, None)
    elif kind == "list" and isinstance(value, list):
        for i, item in enumerate(value):
            yield from slots(item, shape[1], value, i)


def corrupt(body: dict, shape_name: str, data) -> str:
    options = list(slots(body, SHAPES[shape_name], None, None, top=True))
    op, parent, key, kind = data.draw(st.sampled_from(options), label="slot")
    if op == "drop":
        del parent[key]
    elif op == "extra":
        parent["junk"] = NESTED_GARBAGE
    elif op == "bad_key":
        bad = data.draw(
            st.sampled_from([HUGE, "zz", ""]) if shape_name == "keypoints" else st.just(HUGE)
        )
        if shape_name == "keypoints" and bad != HUGE:
            parent_is_catenary = "CatenaryPoints" in body and parent is body["CatenaryPoints"]
            bad = bad if parent_is_catenary else HUGE
        parent[bad] = next(iter(parent.values()))
    else:
        parent[key] = data.draw(st.sampled_from(GARBAGE[kind]), label="garbage")
    return op


@pytest.mark.parametrize("kind", sorted(KINDS))
@settings(SETTINGS, max_examples=40)
@given(data=st.data())
def test_corruptions_raise_or_become_problems(kind, data):
    size = data.draw(st.sampled_from([1, 2, 6, 15]), label="size")
    batch = data.draw(st.lists(response(kind), min_size=size, max_size=size), label="batch")
    j = data.draw(st.integers(0, len(batch) - 1), label="victim")
    row = batch[j][0]
    shape = "clinical" if row["endpoint"] == "clinical_images" else kind
    corrupt(row["body"], shape, data)
    df = responses_frame([r for r, _, _ in batch], [e for _, e, _ in batch])
    tables = KINDS[kind][1]

    with pytest.raises(ResponseFormatError) as info:
        convert.tables(df, include=tables)
    assert info.value.row == j
    assert len(str(info.value)) < 1000  # a 1 MB value never ends up in a message

    out = convert.tables(df, errors="collect", include=tables)
    probs = out["problems"]
    assert set(probs["row"]) == {j}
    assert probs["reason"].str.endswith("(response dropped)").all()
    assert sorted(probs["table"]) == sorted(tables)
    for table in tables:  # the others convert exactly; nothing of the victim remains
        want = [r for i, (_, _, exp) in enumerate(batch) if i != j for r in exp[table]]
        assert_rows(observed(out[table], table), want)
    COUNTS["responses"] += len(batch)
    COUNTS["corruptions"] += 1
