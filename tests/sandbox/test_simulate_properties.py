"""Property tests: the TLE rule is monotone; stored image names are safe file names."""

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from dentalkit.sandbox.simulate import estimate_tle, stored_image_name

BASE = dict(p01="14", p02="F", p03="1", p04="0", p05="0", p06="2.5", p07="2.5", p08="0",
            p09="0", p10="0", p11="3.0")  # fmt: skip

ages = st.integers(6, 80)
overjets = st.floats(-10, 20, allow_nan=False).map(lambda v: f"{v:.1f}")
overbites = st.floats(-10, 15, allow_nan=False).map(lambda v: f"{v:.1f}")
scores = st.floats(0, 10, allow_nan=False).map(lambda v: f"{v:.1f}")
patients = st.fixed_dictionaries({
    "p01": ages.map(str), "p02": st.sampled_from(["F", "M"]),
    "p03": st.sampled_from(["1", "2", "3", "4"]), "p04": st.sampled_from(["0", "1", "2", "3"]),
    "p05": st.sampled_from(["0", "1", "2", "3"]), "p06": overjets, "p07": overbites,
    "p08": st.sampled_from(["0", "1"]), "p09": st.sampled_from(["0", "1"]),
    "p10": st.sampled_from(["0", "1"]), "p11": scores,
})  # fmt: skip


def months(q):
    return estimate_tle(q)["estimate_length"]


@settings(max_examples=60, deadline=None)
@given(patients)
def test_tle_is_monotone_in_every_risk_factor(q):
    base = months(q)
    assert 6.0 <= base <= 60.0
    for flag in ("p08", "p09", "p10"):
        assert months({**q, flag: "1"}) >= months({**q, flag: "0"})
    for cat in ("p04", "p05"):
        if q[cat] != "3":
            assert months({**q, cat: str(int(q[cat]) + 1)}) >= base
    assert months({**q, "p11": f"{min(float(q['p11']) + 1.0, 10.0):.1f}"}) >= base
    oj = float(q["p06"])
    bigger = oj + 1.0 if oj >= 0 else oj - 1.0  # larger |overjet|
    if -10 <= bigger <= 20:
        assert months({**q, "p06": f"{bigger:.1f}"}) >= base
    assert months({**q, "p02": "M" if q["p02"] == "F" else "F"}) == base  # sex has no effect


def test_tle_worked_example():
    # 12 + mild crowding 2 + class II/1 3 + 0.6*(5.5-3) + extraction 6 + 1.2*4.5 = 29.9
    q = {**BASE, "p03": "2", "p04": "1", "p06": "5.5", "p07": "3", "p10": "1", "p11": "4.5"}
    assert months(q) == 29.9


@settings(max_examples=50, deadline=None)
@given(st.text(max_size=120))
def test_stored_image_name_is_a_safe_file_name(tail):
    name = stored_image_name("https://host.example/dir/" + tail)
    assert re.fullmatch(r"[0-9a-f]{12}_[A-Za-z0-9._-]+", name)
    assert "." in name
