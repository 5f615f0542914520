"""The simulator's fast paths agree with independent computations of what they replace.

Seeding is checked against the PCG64 reference seeding (O'Neill's
``pcg_setseq_128_srandom_r``) written out with Python integers; the catenary bisection
against scipy's ``brentq``; the transform's linear part against numpy's matrix product;
the patient's lazily computed parts against a second draw read in another order; and the
micro-benchmark runs once (a smoke test, not a timing).
"""

import contextlib
import io
import math
import runpy
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.optimize import brentq

from dentalkit.sandbox import _anatomy_dental, _geometry, _patient, _rng

ROOT = Path(__file__).resolve().parents[2]
#: PCG64's 128-bit LCG multiplier (PCG_DEFAULT_MULTIPLIER_128 of the reference code).
PCG_MULT = 47026247687942121848144207491837523525
MASK128 = (1 << 128) - 1


def _words(d: bytes, size: int) -> list[int]:
    return [int.from_bytes(d[i : i + size], "little") for i in range(0, len(d), size)]


@pytest.mark.parametrize("parts", [("patient", "P001"), ("image", "P", "2024", "u", "ep"), ()])
def test_generator_state_is_the_pcg64_seeding_of_the_digest_words(parts):
    d = _rng.digest(*parts)
    w = _words(d, 8)
    initstate, initseq = (w[0] << 64) | w[1], (w[2] << 64) | w[3]
    inc = ((initseq << 1) | 1) & MASK128  # srandom: state = 0, inc = 2·initseq + 1, step,
    state = ((inc + initstate) * PCG_MULT + inc) & MASK128  # state += initstate, step
    got = _rng.generator(*parts).bit_generator.state["state"]
    assert got == {"state": state, "inc": inc}


def test_digest_seed_words_in_every_form():
    d = _rng.digest("x", 1, 2.5)
    seed = _rng.DigestSeed(d)
    assert seed.generate_state(4, np.uint64).tolist() == _words(d, 8)
    assert seed.generate_state(4, "u8").tolist() == _words(d, 8)
    assert seed.generate_state(8).tolist() == _words(d, 4)
    assert seed.generate_state(2, np.uint64).tolist() == _words(d, 8)[:2]
    with pytest.raises(ValueError, match="words"):
        seed.generate_state(5, np.uint64)
    with pytest.raises(ValueError, match="uint32 and uint64"):
        seed.generate_state(4, np.float64)


def test_digest_separates_parts():
    assert _rng.digest("ab", "c") != _rng.digest("a", "bc")
    assert _rng.digest("a") != _rng.digest("a", "")
    a, b = _rng.generator("s", 1).random(4), _rng.generator("s", 1).random(4)
    assert np.array_equal(a, b)
    assert not np.array_equal(a, _rng.generator("s", 2).random(4))


LAZY = ("teeth", "missing", "frontal", "clinical_rates", "pano_rates", "pano_empty", "tmj")


@pytest.mark.parametrize("pid", ["lazy-1", "lazy-2", "lazy-3"])
def test_lazy_patient_parts_do_not_depend_on_access_order(pid):
    draw = _patient.patient.__wrapped__  # two fresh draws, not the cached one
    a, b = draw(pid), draw(pid)
    first = {name: getattr(a, name) for name in LAZY}
    second = {name: getattr(b, name) for name in reversed(LAZY)}
    for name in LAZY:
        x, y = first[name], second[name]
        assert (dict(x) if hasattr(x, "keys") else x) == (dict(y) if hasattr(y, "keys") else y)


def test_session_frontal_grows_from_the_patient_widths():
    s = _patient.session("grow-1", "2026-06-01")
    p = s.patient
    years = min(max(s.age, 6.0), p.growth_stop) - min(max(p.baseline_age, 6.0), p.growth_stop)
    assert s.years == pytest.approx(years, abs=1e-12)
    assert s.frontal["ZA"] == pytest.approx(p.frontal["ZA"] + p.rates["ZA"] * years)
    assert s.frontal["Z"] == pytest.approx(p.frontal["Z"] + p.rates["O"] * years)
    assert s.frontal["Cg_ANS"] == pytest.approx(
        s.ceph["N_Me"] * s.ceph["N_ANS_ratio"] + p.frontal["Cg_ANS_extra"]
    )


@pytest.mark.parametrize(("arc_r", "arc_l", "width"), [(30.0, 31.0, 47.0), (12.0, 40.0, 30.0),
                                                       (25.0, 25.0, 49.9), (25.0, 26.0, 5.0)])  # fmt: skip
def test_catenary_bisection_matches_brentq(arc_r, arc_l, width):
    def f(a):
        return a * (math.asinh(arc_r / a) + math.asinh(arc_l / a)) - width

    expected = brentq(f, 1e-3, 1e4, xtol=1e-14, rtol=4 * np.finfo(float).eps)
    assert _anatomy_dental.catenary_a(arc_r, arc_l, width) == pytest.approx(expected, rel=1e-13)


@pytest.mark.parametrize("rotation", [0.0, -0.0, 1.2345, -4.0, 90.0, 179.9])
@pytest.mark.parametrize(("flip_x", "flip_y"), [(1, 1), (1, -1), (-1, 1), (-1, -1)])
def test_linear_part_is_the_matrix_product_bit_for_bit(rotation, flip_x, flip_y):
    c, s = math.cos(math.radians(rotation)), math.sin(math.radians(rotation))
    expected = np.array([[c, -s], [s, c]]) @ np.diag([float(flip_x), float(flip_y)]) / 0.08
    got = _geometry.ImageTransform(0.08, rotation, flip_x, flip_y, (3.0, 4.0), 100, 100).matrix()
    assert got.tobytes() == expected.tobytes()


def test_placed_points_are_the_transform_applied_and_keep_the_margin():
    rng = np.random.default_rng(7)
    pts = rng.normal(0.0, 20.0, (50, 2))
    tr, px = _geometry.place_points(
        np.random.default_rng(1), pts, mm_per_px=0.1, rotation_deg=3.0, flip_x=-1, flip_y=-1,
        width=1935, height=2400, margin_px=80.0,
    )  # fmt: skip
    assert np.array_equal(px, tr.apply(pts))
    assert px.min() >= 80.0 - 1e-3
    assert px[:, 0].max() <= 1935 - 1 - 80.0 + 1e-3
    assert px[:, 1].max() <= 2400 - 1 - 80.0 + 1e-3
    np.testing.assert_allclose(tr.invert(px), pts, atol=1e-9)


@pytest.mark.parametrize("arch", ["up", "lo"])
def test_arch_layout_arrays_are_the_teeth_rows_in_response_key_order(arch):
    from dentalkit.sandbox import _answers

    layout = _anatomy_dental.arch_layout(_patient.patient("rows-1"), arch)
    assert list(layout["teeth"]) == _answers._arch_keys(arch)
    for name, arr in layout["arrays"].items():
        assert arr.shape == (16, 2)
        for i, rec in enumerate(layout["teeth"].values()):
            assert np.array_equal(arr[i], rec[name])


def test_simulate_benchmark_smoke():
    out = io.StringIO()
    argv = ["simulate.py", "--calls", "2", "--blocks", "1", "--only", "ceph_lateral"]
    with contextlib.redirect_stdout(out), _argv(argv):
        runpy.run_path(str(ROOT / "benchmarks" / "simulate.py"), run_name="__main__")
    lines = out.getvalue().splitlines()
    row = next(line for line in lines if line.startswith("ceph_lateral_points"))
    assert len([float(x) for x in row.replace("(", " ").replace(")", " ").split()[1:]]) == 6
    assert any(line.startswith("tle") for line in lines)


@contextlib.contextmanager
def _argv(argv):
    saved, sys.argv = sys.argv, argv
    try:
        yield
    finally:
        sys.argv = saved


def test_request_counter_is_bounded():
    # a long-running sandbox must not grow one entry per distinct request for ever
    from dentalkit.sandbox.app import Stats

    stats = Stats(by_request_limit=3)
    for identity in ["a", "b", "a", "c", "d", "e", "c"]:
        stats.count_request(identity)
    out = stats.as_dict()
    assert out["by_request"] == {"a": 2, "b": 1, "c": 2}
    assert out["by_request_untracked"] == 2
    stats.reset()
    assert stats.as_dict()["by_request"] == {} and stats.by_request_untracked == 0
