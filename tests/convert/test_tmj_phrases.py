"""TMJ sentences: three-valued has_finding from the phrases data file (issue 20, item 1).

Expected values are hand-read clinical meanings of each sentence, not outputs of the rule.
"""

from __future__ import annotations

import csv
from importlib import resources

import pandas as pd
import pytest

from dentalkit import convert, settings
from dentalkit.convert._tmj import classify, load_phrases
from dentalkit.errors import InputError
from tests.convert._helpers import frame, load, row

NO_FINDING = [
    "No findings were detected.",
    "No findings were detected in this image.",
    "Normal",
    "Normal.",
    "Unremarkable",
    "Within normal limits",
    "Nothing abnormal detected",
    "None",
    "Findings: none",
    "NAD",
    "No abnormality detected in either joint.",
    "Right TMJ: no findings. Left TMJ: normal.",
    "Both joints within normal limits.",
    "Normal appearance of both condyles",
    "No pathology seen bilaterally",
    "No significant abnormality identified on the right condyle.",
    "No evidence of degenerative change",
    "No erosion and no osteophyte",
    "No erosion or osteophyte.",
    "Normal, bilaterally",
    "There are no findings.",
    "No TMJ abnormality detected",
    "No abnormalities were identified!",
    "  No   significant findings were found in the image. ",
    "Unremarkable study.",
]
FINDING = [
    "Condylar flattening detected on the right condyle.",
    "Condylar flattening detected on the right condyle. Osteophyte detected on the left condyle.",
    "Cortical erosion detected on the left condyle.",
    "No effusion; condyle flattened.",
    "No findings other than condylar flattening",
    "No change in condylar flattening",
    "Flattening of the left condylar head.",
    "No findings detected on the left; erosion on the right.",
    "Erosion of the articular surface detected",
    "Osteophyte present",
    "Abnormality detected on the left condyle",
    "Normal right joint, but subchondral sclerosis of the left condyle",
    "Condylar flattening, left",
]
UNKNOWN = [
    "Clinical correlation advised.",
    "No findings. Recommend follow-up.",
    "No effusion and condylar flattening",  # is the flattening denied too? ambiguous
    "Joint space 2.5 mm, normal.",
    "Image quality insufficient",
    "Possible erosion of the left condyle.",  # a hedge is not a finding, nor its absence
    "Condylar flattening cannot be excluded.",
    "Suspected osteophyte, right",
    "",
]


@pytest.mark.parametrize("sentence", NO_FINDING)
def test_no_finding_wordings(sentence):
    assert classify(sentence) is False


@pytest.mark.parametrize("sentence", FINDING)
def test_finding_wordings(sentence):
    assert classify(sentence) is True


@pytest.mark.parametrize("sentence", UNKNOWN)
def test_unrecognised_is_unknown_not_a_finding(sentence):
    assert classify(sentence) is None


def test_every_shipped_example_reads_as_its_meaning():
    text = resources.files("dentalkit.data").joinpath("tmj_phrases.csv").read_text("utf-8")
    rows = list(csv.DictReader(text.splitlines()))
    assert len(rows) >= 20
    expected = {"finding": True, "no_finding": False, "uncertain": None}
    for r in rows:
        assert classify(r["example"]) is expected[r["meaning"]], r


def _tmj_frame(sentences):
    rows = []
    for k, s in enumerate(sentences):
        body = load("tmj_xsectional")
        body["Results"]["Finding"] = s
        body["PatientID"] = f"P{k:03d}"
        rows.append(row("tmj_xsectional", body, patient_id=f"P{k:03d}"))
    return frame(*rows)


def test_table_is_three_valued_with_one_problem_per_distinct_sentence():
    sentences = [
        "No findings were detected.",
        "Clinical correlation advised.",
        "Osteophyte present",
        "Clinical correlation advised.",
        "Image quality insufficient",
    ]
    out = convert.tables(_tmj_frame(sentences), errors="collect")
    t = out["tmj"]
    assert str(t["has_finding"].dtype) == "boolean"
    assert t["has_finding"].tolist() == [False, pd.NA, True, pd.NA, pd.NA]
    # NA is unknown, never counted as a finding
    assert int(t["has_finding"].sum()) == 1 and int(t["has_finding"].isna().sum()) == 3
    probs = out["problems"]
    tmj_probs = probs[probs["path"] == "$.Results.Finding"]
    assert len(tmj_probs) == 2  # one per distinct unrecognised sentence
    assert tmj_probs["patient_id"].tolist() == ["P001", "P004"]
    assert "2 response(s)" in tmj_probs["reason"].iloc[0]
    assert "phrases" in tmj_probs["reason"].iloc[0]


def _phrases_file(tmp_path, rows):
    path = tmp_path / "my_phrases.csv"
    with path.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["meaning", "pattern", "example"])
        w.writerows(rows)
    return path


def test_users_extend_the_phrases_by_argument_and_setting(tmp_path, monkeypatch):
    path = _phrases_file(
        tmp_path,
        [
            ["no_finding", "clinical correlation advised", "Clinical correlation advised."],
            ["finding", "loose bod(?:y|ies)", "Loose body in the joint"],
        ],
    )
    assert classify("Clinical correlation advised.") is None
    assert classify("Clinical correlation advised.", path) is False
    assert classify("Loose body in the joint", [path]) is True
    frame_ = _tmj_frame(["Clinical correlation advised."])
    assert convert.tmj(frame_, tmj_phrases=path)["has_finding"].tolist() == [False]
    monkeypatch.setattr(settings, "tmj_phrases", str(path))
    out = convert.tables(frame_, errors="collect")
    assert out["tmj"]["has_finding"].tolist() == [False]
    assert len(out["problems"]) == 0


@pytest.mark.parametrize(
    ("rows", "message"),
    [
        ([["maybe", "x", ""]], "meaning must be"),
        ([["uncertain", "[", ""]], "not a valid regular expression"),
        ([["finding", "(unclosed", ""]], "not a valid regular expression"),
        ([["finding", "", ""]], "pattern is empty"),
    ],
)
def test_bad_phrases_file_names_file_and_line(tmp_path, rows, message):
    path = _phrases_file(tmp_path, rows)
    with pytest.raises(InputError, match=message) as info:
        load_phrases(path)
    assert "my_phrases.csv, line 2" in str(info.value)


def test_an_edited_phrases_file_is_read_again(tmp_path):
    import os

    path = _phrases_file(tmp_path, [["no_finding", "all clear", ""]])
    assert classify("All clear.", path) is False
    with path.open("a", newline="") as fh:
        csv.writer(fh).writerow(["no_finding", "joints fine", ""])
    os.utime(path, ns=(1, 1))  # a different mtime, whatever the clock's resolution
    assert classify("Joints fine.", path) is False


def test_missing_phrases_file_is_an_input_error(tmp_path):
    with pytest.raises(InputError, match="cannot read the TMJ phrases file"):
        load_phrases(tmp_path / "absent.csv")
