"""``dentalkit manifest``: arguments in, a manifest and its problems out, exit status."""

from __future__ import annotations

import json

import pandas as pd
from typer.testing import CliRunner

from dentalkit.cli import app


def _args(options: dict) -> list[str]:
    out = []
    for key, value in options.items():
        text = value if isinstance(value, str) else json.dumps(value)
        out += ["--storage-option", f"{key}={text}"]
    return out


def test_manifest_command_writes_the_manifest_and_lists_files_left_out(tmp_path, s3):
    options, bucket, fs = s3
    fs.pipe({f"{bucket[5:]}/c/P1/2024-01-02/ceph.png": b"x", f"{bucket[5:]}/c/P1/x.txt": b"y"})
    out = tmp_path / "m.csv"
    args = ["manifest", f"{bucket}/c", "--pattern", "{patient_id}/{date}/{kind}.png"]
    args += [
        "--kind",
        "ceph=ceph_lateral_points,classifier",
        "--out",
        str(out),
        "--lifetime",
        "36h",
    ]
    result = CliRunner().invoke(app, args + _args(options))
    assert result.exit_code == 1, result.output  # one file left out
    written = pd.read_csv(out)
    assert written["endpoint"].tolist() == ["ceph_lateral_points", "classifier"]
    assert "URLs valid 1 d 12 h, until" in result.stdout
    problems = pd.read_csv(tmp_path / "m-problems.csv")
    assert problems["path"].tolist() == ["P1/x.txt"]
    assert "P1/x.txt" in result.stderr
    # ignored, it is counted and the exit status is 0
    result = CliRunner().invoke(app, [*args, "--ignore", "*.txt", *_args(options)])
    assert result.exit_code == 0, result.output
    assert not (tmp_path / "m-problems.csv").exists()


def test_manifest_command_says_the_way_forward(tmp_path, monkeypatch):
    (tmp_path / "img" / "P1").mkdir(parents=True)
    (tmp_path / "img" / "P1" / "pano.png").write_bytes(b"x")
    args = ["manifest", str(tmp_path / "img"), "--pattern", "{patient_id}/{kind}.png"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 2 and "--upload s3://BUCKET/PREFIX" in result.stderr
    monkeypatch.delenv("DK_TEST_SECRET", raising=False)
    result = CliRunner().invoke(app, [*args, "--secret-env", "DK_TEST_SECRET"])
    assert result.exit_code == 2 and "DK_TEST_SECRET is not set" in result.stderr
    result = CliRunner().invoke(app, [*args, "--kind", "nonsense"])
    assert result.exit_code == 2 and "KIND=ENDPOINT" in result.stderr
