"""Benchmark of dentalkit.teeth.measure on a large synthetic cohort of tooth polygons.

Run from the repository root::

    python benchmarks/teeth.py [--n 1000000] [--vertices 24] [--smoke]

Two comparisons (issue 8):

1. area, perimeter and centroid: ``teeth.measure`` (kernels over the coordinate array,
   validation included: a star-shape test proves most outlines valid and only the rest go
   to ``shapely.is_valid``; see ``dentalkit/teeth/_outline.py``) against a per-polygon
   Python loop calling shapely on each geometry — once with the shapely functions
   (``shapely.area(g)`` …) and once with the attribute access (``g.area`` …). Target:
   ≥ 20× faster. Timed with the compiled kernel (the ``fast`` extra, numba; what
   ``measure`` uses on a table this size when numba is installed) after loading it once
   (the load, a one-off per process, is printed separately), and with the numpy kernels
   of the core install (``DENTALKIT_NUMBA=0``).
2. widths: ``teeth.measure(..., measures=[md_width, bl_width, height])`` (arch
   tangents, side assignment, bookkeeping) against the bare vectorized
   ``shapely.minimum_rotated_rectangle`` on the same array. Target: ≤ 1.5×.

``--smoke`` runs a tiny cohort (a test calls it). Not part of the test suite otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import shapely

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dentalkit.teeth import measure
from dentalkit.teeth._outline import _ring_kernel, outline_shape

TYPES = ["m3", "m2", "m1", "p2", "p1", "c", "i2", "i1"]
KEYS = [f"{t}_rgt_up" for t in TYPES] + [f"{t}_lft_up" for t in reversed(TYPES)]


def cohort(n: int, vertices: int, seed: int = 0) -> pd.DataFrame:
    """``n`` tooth outlines (16 per occlusogram image, on an arch), built in one shapely call."""
    rng = np.random.default_rng(seed)
    n_img = -(-n // len(KEYS))
    k = np.tile(np.arange(len(KEYS)), n_img)[:n]
    img = np.repeat(np.arange(n_img), len(KEYS))[:n]
    # tooth centres on a circle of 400 px, MD along the tangent, BL across it
    ang = np.deg2rad(200 + 140 * k / (len(KEYS) - 1)) + rng.normal(0, 0.01, n)
    md = rng.uniform(60, 130, n)
    bl = rng.uniform(60, 140, n)
    t = 2 * np.pi * (np.arange(vertices) + 0.5) / vertices
    ux, uy = np.cos(t), np.sin(t)
    lx = np.sign(ux) * np.abs(ux) ** 0.6 * md[:, None] / 2  # superellipse, flat-ish sides
    ly = np.sign(uy) * np.abs(uy) ** 0.6 * bl[:, None] / 2
    phi = ang + np.pi / 2
    cx = 500 + 400 * np.cos(ang)
    cy = 500 + 400 * np.sin(ang)
    x = cx[:, None] + lx * np.cos(phi)[:, None] - ly * np.sin(phi)[:, None]
    y = cy[:, None] + lx * np.sin(phi)[:, None] + ly * np.cos(phi)[:, None]
    geoms = shapely.polygons(np.stack([x, y], axis=-1))
    keys = np.array(KEYS)[k]
    parts = np.char.split(keys, "_")
    return pd.DataFrame(
        {
            "patient_id": pd.Categorical.from_codes(img, [f"P{i:07d}" for i in range(n_img)]),
            "timestamp": pd.Categorical(["2024-01-01"] * n),
            "source": pd.Categorical(["occlusogram_upper"] * n),
            "tooth": pd.Categorical(keys),
            "tooth_type": pd.Categorical([p[0] for p in parts]),
            "side": pd.Categorical([p[1] for p in parts]),
            "arch": pd.Categorical(["up"] * n),
            "missing": np.zeros(n, dtype=bool),
            "geometry": geoms,
        }
    )


def _time(fn, repeat: int = 1) -> float:
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _loop_functions(geoms):
    out = np.empty((len(geoms), 4))
    for i, g in enumerate(geoms):
        c = shapely.centroid(g)
        out[i] = (shapely.area(g), shapely.length(g), shapely.get_x(c), shapely.get_y(c))
    return out


def _loop_attributes(geoms):
    out = np.empty((len(geoms), 4))
    for i, g in enumerate(geoms):
        c = g.centroid
        out[i] = (g.area, g.length, c.x, c.y)
    return out


def _loop_attributes_valid(geoms):
    out = np.empty((len(geoms), 4))
    for i, g in enumerate(geoms):
        if g.is_valid:  # what measure() checks before trusting an area
            c = g.centroid
            out[i] = (g.area, g.length, c.x, c.y)
    return out


def _bare_kernels(geoms):
    c = shapely.centroid(geoms)
    return shapely.area(geoms), shapely.length(geoms), shapely.get_x(c), shapely.get_y(c)


def _numba_available() -> bool:
    try:
        import numba  # noqa: F401
    except ImportError:
        return False
    return True


class _NumpyEngine:
    """``DENTALKIT_NUMBA=0`` inside the block: what the core install runs."""

    def __enter__(self) -> None:
        self.before = os.environ.get("DENTALKIT_NUMBA")
        os.environ["DENTALKIT_NUMBA"] = "0"

    def __exit__(self, *exc: object) -> None:
        if self.before is None:
            del os.environ["DENTALKIT_NUMBA"]
        else:
            os.environ["DENTALKIT_NUMBA"] = self.before


def run(n: int, vertices: int, repeat: int) -> dict[str, float]:
    t0 = time.perf_counter()
    table = cohort(n, vertices)
    geoms = table["geometry"].to_numpy()
    build = time.perf_counter() - t0
    shape = ["area", "perimeter", "centroid_x", "centroid_y"]
    widths = ["md_width", "bl_width", "height"]

    res = {"n": n, "vertices": vertices, "build_s": build}
    t0 = time.perf_counter()
    compiled = _ring_kernel("compiled", 0) if _numba_available() else None
    res["load_s"] = time.perf_counter() - t0
    res["engine"] = "compiled (numba)" if compiled is not None else "numpy (no numba)"
    res["measure_shape_s"] = _time(lambda: measure(table, measures=shape), repeat)
    with _NumpyEngine():
        res["measure_numpy_s"] = _time(lambda: measure(table, measures=shape), repeat)
    res["bare_shape_s"] = _time(lambda: _bare_kernels(geoms), repeat)
    res["bare_valid_s"] = _time(lambda: shapely.is_valid(geoms), repeat)
    res["outline_s"] = _time(lambda: outline_shape(geoms), repeat)
    res["outline_numpy_s"] = _time(lambda: outline_shape(geoms, engine="numpy"), repeat)
    res["proven_share"] = float(outline_shape(geoms).proven_valid.mean())
    res["loop_functions_s"] = _time(lambda: _loop_functions(geoms), repeat)
    res["loop_attributes_s"] = _time(lambda: _loop_attributes(geoms), repeat)
    res["loop_attributes_valid_s"] = _time(lambda: _loop_attributes_valid(geoms), repeat)
    res["measure_widths_s"] = _time(lambda: measure(table, measures=widths), repeat)
    res["bare_mrr_s"] = _time(lambda: shapely.minimum_rotated_rectangle(geoms), repeat)

    # the loop and the vectorized call agree
    check = measure(table.iloc[:1000], measures=shape)[shape].to_numpy()
    np.testing.assert_allclose(check, _loop_attributes(geoms[:1000]), rtol=1e-12)
    return res


def main(argv: list[str] | None = None) -> dict[str, float]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="number of tooth polygons")
    parser.add_argument("--vertices", type=int, default=24, help="vertices per outline")
    parser.add_argument(
        "--repeat", type=int, default=1, help="best of this many runs (every timing alike)"
    )
    parser.add_argument("--smoke", action="store_true", help="tiny run (1,600 polygons)")
    args = parser.parse_args(argv)
    n = 1_600 if args.smoke else args.n
    r = run(n, args.vertices, args.repeat)
    per = 1e6 / r["n"]
    print(f"{r['n']:,} polygons × {r['vertices']} vertices (built in {r['build_s']:.2f} s)")
    print(f"kernel: {r['engine']}; loading it took {r['load_s']:.2f} s (once per process)")
    print(f"{'':44s}{'seconds':>10s}{'µs/polygon':>12s}")
    for label, key in [
        ("measure(): area, perimeter, centroid", "measure_shape_s"),
        ("  of which outline kernels + proof", "outline_s"),
        ("measure(), numpy kernels (core install)", "measure_numpy_s"),
        ("  of which numpy outline kernels + proof", "outline_numpy_s"),
        ("bare shapely area/length/centroid", "bare_shape_s"),
        ("bare shapely.is_valid", "bare_valid_s"),
        ("loop: shapely.area(g), … per polygon", "loop_functions_s"),
        ("loop: g.area, g.length, g.centroid", "loop_attributes_s"),
        ("loop: the same after g.is_valid", "loop_attributes_valid_s"),
        ("measure(): md_width, bl_width, height", "measure_widths_s"),
        ("bare shapely.minimum_rotated_rectangle", "bare_mrr_s"),
    ]:
        print(f"{label:44s}{r[key]:10.3f}{r[key] * per:12.2f}")
    print(f"outlines proven valid without GEOS: {100 * r['proven_share']:.1f} %")
    print(
        f"speed-up vs function loop  {r['loop_functions_s'] / r['measure_shape_s']:6.1f}×  (target ≥ 20×)"
        f"  (numpy kernels: {r['loop_functions_s'] / r['measure_numpy_s']:.1f}×)\n"
        f"speed-up vs attribute loop {r['loop_attributes_s'] / r['measure_shape_s']:6.1f}×"
        f"  (with validity check: {r['loop_attributes_valid_s'] / r['measure_shape_s']:.1f}×)\n"
        f"widths / bare MRR          {r['measure_widths_s'] / r['bare_mrr_s']:6.2f}×  (target ≤ 1.5×)"
    )
    return r


if __name__ == "__main__":
    main()
