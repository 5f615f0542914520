"""Test data for dentalkit.arch, built forward from known curves and transforms.

The curve formulas here are written out independently of
``dentalkit.arch._models`` (Braun's beta in his own frame, the catenary with
``numpy.cosh``), so a recovery test compares the fitter with separately coded
geometry.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def catenary(x, a):
    return a * (np.cosh(x / a) - 1.0)


def beta_braun(x, D, W):
    """Braun et al. 1998 in their own frame (origin between the molars, incisors at +D)."""
    return 3.031433133 * D * ((0.5 + x / W) * (0.5 - x / W)) ** 0.8


def beta_canonical(x, D, W):
    """The same curve with the incisal point at the origin, molars at +y."""
    return D - beta_braun(x, D, W)


def poly(x, **c):
    return sum(v * x ** int(k[1:]) for k, v in c.items())


CURVES = {
    "catenary": lambda x, p: catenary(x, p["a"]),
    "beta": lambda x, p: beta_canonical(x, p["depth"], p["width"]),
    "poly4": lambda x, p: poly(x, c2=p["c2"], c4=p["c4"]),
    "poly6": lambda x, p: poly(x, c2=p["c2"], c6=p["c6"]),
    "parabola": lambda x, p: poly(x, c2=p["c2"]),
}

#: Typical arch shapes in pixels (half-width ~250 px): one parameter set per model.
TRUTH = {
    "catenary": {"a": 150.0},
    "beta": {"depth": 260.0, "width": 560.0},
    "poly4": {"c2": 0.0025, "c4": 1.6e-8},
    "poly6": {"c2": 0.0025, "c6": 2.4e-13},
    "parabola": {"c2": 0.004},
}


def place(q: np.ndarray, theta: float, t, mirror: bool) -> np.ndarray:
    """Image points p = t + R(theta) · M · q, M = diag(-1, 1) when mirrored."""
    q = np.asarray(q, float)
    if mirror:
        q = q * np.array([-1.0, 1.0])
    c, s = np.cos(theta), np.sin(theta)
    R = np.array([[c, -s], [s, c]])
    return q @ R.T + np.asarray(t, float)


def arch_table(
    xs,
    ys,
    *,
    theta=0.0,
    t=(0.0, 0.0),
    mirror=False,
    patient="p1",
    arch="up",
    timestamp="2024-01-01",
) -> pd.DataFrame:
    """An arch_points table of one arch given in canonical coordinates.

    The points are numbered in the order given (the first is on the patient's
    right when ``xs`` increases, as dentalkit assumes by default).
    """
    p = place(np.column_stack([xs, ys]), theta, t, mirror)
    n = len(xs)
    return pd.DataFrame(
        {
            "patient_id": patient,
            "timestamp": timestamp,
            "arch": arch,
            "point": [f"t{i + 20:02d}" for i in range(n)],
            "index": np.arange(20, 20 + n, dtype=np.int16),
            "x": p[:, 0],
            "y": p[:, 1],
        }
    )


def random_arches(
    model, params, n_arches, rng, *, noise=0.0, n_points=16, half=250.0, symmetric=False
):
    """Many arches of one model at random poses; returns (table, poses)."""
    frames, poses = [], []
    for j in range(n_arches):
        if symmetric:
            x = np.linspace(-half, half, n_points)
        else:
            x = np.sort(rng.uniform(-half, half, n_points))
            x[0], x[-1] = -half * rng.uniform(0.9, 1.0), half * rng.uniform(0.9, 1.0)
        y = CURVES[model](x, params)
        theta = rng.uniform(-np.pi, np.pi)
        t = rng.uniform(-800, 800, 2)
        mirror = bool(rng.random() < 0.5)
        tab = arch_table(x, y, theta=theta, t=t, mirror=mirror, patient=f"p{j:04d}")
        if noise:
            tab["x"] += noise * rng.standard_normal(len(tab))
            tab["y"] += noise * rng.standard_normal(len(tab))
        frames.append(tab)
        poses.append(
            {"patient_id": f"p{j:04d}", "theta": theta, "tx": t[0], "ty": t[1], "mirror": mirror}
        )
    return pd.concat(frames, ignore_index=True), pd.DataFrame(poses)
