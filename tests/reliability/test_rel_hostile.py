"""Hostile input, generated with hypothesis: manifests, service responses and landmark tables
with wrong types, huge numbers, NaN, unicode, 1 MB strings and deeply nested JSON. dentalkit
must answer with its own errors (``DentalkitError``) or problem / failure rows — never a bare
``KeyError``, ``TypeError``, ``RecursionError`` … — and must store every JSON-object answer
losslessly."""

from __future__ import annotations

import json
import tempfile
import threading
import warnings
from functools import reduce
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from dentalkit.ceph import measure
from dentalkit.errors import DentalkitError
from dentalkit.fetch.client import Client
from dentalkit.fetch.cohort import FetchReport, fetch_cohort
from tests.reliability.cohort import add_figure

pytestmark = pytest.mark.slow

HOSTILE = settings(
    deadline=None,
    derandomize=True,  # the same examples in every CI run
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
MEGABYTE = "é" * (1 << 19)  # 1 MiB of UTF-8


def nest(depth: int) -> list:
    return reduce(lambda acc, _: [acc], range(depth), [])


def deep_dict(depth: int) -> dict:
    return reduce(lambda acc, _: {"k": acc}, range(depth), {})


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(10**40), max_value=10**40),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=12),
    st.text(st.characters(codec="utf-8", categories=["Lo", "So", "Zs", "Mn", "Cc"]), max_size=8),
    st.just(MEGABYTE),
    st.just("\ud800 lone surrogate"),
)
cells = st.one_of(
    scalars,
    st.sampled_from(
        [
            "https://img.example.org/P1.png",
            " https://img.example.org/P1.png",
            "file:///etc/passwd",
            "ftp://example.org/x.png",
            "classifier",
            "tle",
            "pano_segmentation",
            "/frontal-segmentation",
            "P001",
            "2024-03-05",
            "true",
            "maybe",
            "4.5",
        ]
    ),
    st.integers(1, 3000).map(nest),
    st.integers(1, 3000).map(deep_dict),
    st.binary(max_size=8),
    st.lists(scalars, max_size=3),
)
MANIFEST_COLUMNS = ["patient_id", "timestamp", "image_url", "endpoint", "draw_contours", "standard_name", "plot_labels", *(f"p{i:02d}" for i in range(1, 12)), "extra"]  # fmt: skip


@st.composite
def manifests(draw):
    n = draw(st.integers(1, 4))
    columns = draw(st.lists(st.sampled_from(MANIFEST_COLUMNS), min_size=1, max_size=8, unique=True))
    for required in ("patient_id", "timestamp", "image_url"):
        if draw(st.integers(0, 9)) and required not in columns:  # usually present
            columns.append(required)
    data = {c: draw(st.lists(cells, min_size=n, max_size=n)) for c in columns}
    frame = pd.DataFrame({c: pd.Series(v, dtype=object) for c, v in data.items()})
    endpoints = None if "endpoint" in columns else draw(
        st.one_of(
            st.sampled_from(["classifier", ["classifier", "pano_segmentation"], "tle"]),
            cells,
        )
    )  # fmt: skip
    return frame, endpoints


@pytest.fixture(scope="module")
def sandbox_client():
    from dentalkit.sandbox import running

    with running() as sb:
        yield Client(sb.base_url, api_key=sb.api_key, cache="memory", max_retries=0)


def test_hostile_manifests_give_problems_or_dentalkit_errors(sandbox_client):
    tried = [0]

    @settings(HOSTILE, max_examples=80)
    @given(manifests(), st.sampled_from(["collect", "raise"]))
    def check(case, mode):
        frame, endpoints = case
        tried[0] += 1
        with tempfile.TemporaryDirectory() as out, warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                report = fetch_cohort(
                    frame, endpoints, out, client=sandbox_client, progress=False, errors=mode
                )
            except DentalkitError:
                return
        assert isinstance(report, FetchReport)
        problems = report.problems
        if len(problems):
            assert problems["reason"].map(lambda r: isinstance(r, str) and r != "").all()
            assert set(problems["row"].dropna().astype(int)) <= set(range(1, len(frame) + 1))

    check()
    add_figure("bad inputs tried", tried[0])


class _Hostile(BaseHTTPRequestHandler):
    def do_POST(self):  # http.server's name
        self.rfile.read(int(self.headers.get("content-length", 0)))
        payload: bytes = self.server.payload  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)

    def log_message(self, *args):  # quiet
        pass


@pytest.fixture(scope="module")
def hostile_server():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Hostile)
    server.payload = b"{}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()


json_values = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(10**40), max_value=10**40),
        st.floats(allow_nan=False, allow_infinity=False),
        st.text(max_size=10),
        st.just(MEGABYTE),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=12,
)
bodies = st.one_of(
    # JSON objects of the right and wrong shapes
    st.dictionaries(st.text(max_size=8), json_values, max_size=5).map(
        lambda d: json.dumps(d).encode()
    ),
    st.fixed_dictionaries(
        {"Version": json_values, "PatientID": json_values, "Results": json_values}
    ).map(lambda d: json.dumps(d, ensure_ascii=False).encode()),
    # deep nesting, non-objects, non-JSON
    st.integers(1, 5000).map(lambda n: json.dumps({"Results": deep_dict(min(n, 900))}).encode()),
    st.integers(900, 5000).map(lambda n: b'{"a":' + b"[" * n + b"]" * n + b"}"),
    st.sampled_from(
        [
            b"[1, 2]",
            b'"text"',
            b"null",
            b"",
            b'{"a": NaN}',
            b'{"a": Infinity}',
            b'{"a": 1',
            b'{"a": "\xff\xfe"}',
            b'{"a": "\\ud800"}',
            b"\x00\x01",
            b'{"a": 1}{"b": 2}',
        ]
    ),
    st.binary(max_size=64),
)


def test_hostile_responses_are_stored_losslessly_or_fail_cleanly(hostile_server, tmp_path):
    client = Client(
        f"http://127.0.0.1:{hostile_server.server_port}/api/v2",
        api_key="hostile-test-key",
        cache="memory",
        max_retries=0,
    )
    tried, stored = [0], [0]

    @settings(HOSTILE, max_examples=80)
    @given(bodies)
    def check(payload):
        tried[0] += 1
        hostile_server.payload = payload
        pid = f"H{tried[0]:05d}"  # a new request each time (no cache hits)
        manifest = pd.DataFrame(
            {"patient_id": [pid], "timestamp": ["2024-03-05"], "image_url": ["https://a.b/c.png"]}
        )
        out = tmp_path / pid
        report = fetch_cohort(
            manifest, "classifier", out, client=client, progress=False, errors="collect"
        )
        try:
            parsed = json.loads(payload)
        except (ValueError, RecursionError):  # the test's own check, not dentalkit's
            parsed = None
        if report.stored:
            stored[0] += 1
            table = report.responses()
            assert table["body"].tolist() == [payload.decode("utf-8")]  # byte for byte
            assert isinstance(parsed, dict) or parsed is None  # only objects are accepted
            version = table["model_version"][0]
            assert version is None or pd.isna(version) or isinstance(version, str)
        else:
            # not a JSON object, or one orjson refuses (integers beyond 64 bits, nesting
            # beyond 1024 levels): a ResponseFormatError, recorded as a failure row
            assert report.failed == 1
            failure = report.failures.iloc[0]
            assert failure["error_type"] == "ResponseFormatError"
            assert "not a JSON object" in failure["error"] and "/classifier" in failure["error"]

    check()
    assert 0 < stored[0] < tried[0]  # both outcomes were exercised
    add_figure("bad inputs tried", tried[0])


landmark_cells = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.none(),
    st.text(max_size=6),
    st.just(MEGABYTE),
    st.integers(1, 2000).map(nest),
)


@st.composite
def landmark_tables(draw):
    n = draw(st.integers(0, 12))
    names = st.one_of(st.sampled_from(["S", "N", "A", "B", "Go", "Me", "Po", "Or"]), cells)
    cols = {
        "patient_id": draw(st.lists(st.one_of(st.just("P1"), cells), min_size=n, max_size=n)),
        "timestamp": draw(st.lists(st.just("t"), min_size=n, max_size=n)),
        "name": draw(st.lists(names, min_size=n, max_size=n)),
        "x": draw(st.lists(landmark_cells, min_size=n, max_size=n)),
        "y": draw(st.lists(landmark_cells, min_size=n, max_size=n)),
    }
    drop = draw(st.lists(st.sampled_from(list(cols)), max_size=2, unique=True))
    return pd.DataFrame({k: pd.Series(v, dtype=object) for k, v in cols.items() if k not in drop})


def test_hostile_landmark_tables_give_problems_or_dentalkit_errors():
    tried = [0]

    @settings(HOSTILE, max_examples=80)
    @given(landmark_tables(), st.sampled_from(["collect", "raise", "ignore"]))
    def check(table, mode):
        tried[0] += 1
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            try:
                out = measure(table, ["SNA", "SNB", "S_N"], mm_per_px=0.1, errors=mode)
            except DentalkitError:
                return
        result = out[0] if mode == "collect" else out
        assert isinstance(result, pd.DataFrame)
        assert result["value"].dtype == np.float64

    check()
    add_figure("bad inputs tried", tried[0])
