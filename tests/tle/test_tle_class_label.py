"""The demo's malocclusion class is a drawn label (round-9 polish 4).

The sandbox's ground truth has no Angle class to take it from, so docs/tle.md and
demo.tle_inputs say the class is independent of the anatomy and that the estimates differ
by class only through the sandbox's /tle rule. These tests keep those statements true.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from dentalkit.sandbox import truth
from dentalkit.sandbox._findings import TLE_RULE
from dentalkit.study.demo import SESSIONS
from dentalkit.study.report import sections as _sections
from dentalkit.tle import example_patients

DOCS = Path(__file__).resolve().parents[2] / "docs" / "tle.md"


def test_the_sandbox_truth_has_no_angle_class_to_take():
    for pid in example_patients(20)["patient_id"]:
        t = truth(str(pid), SESSIONS[0])
        named = [k for k in t["patient"] if re.search("malocclusion|angle", k, re.I)]
        assert not named, (
            f"the sandbox truth now has {named}: take the demo's malocclusion_class from it "
            "(demo.tle_inputs) and drop the 'drawn label' statements of docs/tle.md"
        )
        assert t["patient"]["skeletal_class"] in {"I", "II", "III"}  # no Class II divisions
        assert "molar_relation_mm" in t["ceph_lateral"]


def test_the_docs_give_the_class_terms_of_the_sandbox_rule():
    term = re.search(r"class\{([^}]*)\}\[p03\]", TLE_RULE).group(1)
    terms = ", ".join(p.replace(":", " ") for p in term.split(", "))  # "I 0, II/1 3, …"
    text = " ".join(DOCS.read_text(encoding="utf-8").split())
    assert f"({terms};" in text, terms
    assert "must find no effect" in text


def test_the_report_shows_estimates_by_class_without_a_test():
    summary = pd.DataFrame(
        {
            "malocclusion_class": ["I", "III"],
            "n": [10, 4],
            "mean": [20.0, 26.0],
            "ci_low": [18.0, 22.0],
            "ci_high": [22.0, 30.0],
            "median": [20.0, 26.0],
            "p_value": [0.01, 0.01],  # not shown even when a summary carries one
        }
    )
    [body] = [b for title, b in _sections({}, {"tle_summary": summary}) if "treatment" in title]
    assert "p_value" not in body and "significan" not in body.lower()
    assert "n = patients" in body
