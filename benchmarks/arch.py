"""Benchmark: batched arch-form fits vs a loop of ``scipy.optimize.curve_fit``.

Fits all five models (catenary, beta, poly4, poly6, parabola; ``pose="fit"``)
to N synthetic arches with one call of :func:`dentalkit.arch.fit`, then fits
the same models to the same arches with one ``curve_fit`` call per arch and
model (same parameterisation, same orthogonal residuals), and reports

* the wall-clock ratio (loop time / batched time; target ≥ 20×),
* the largest parameter difference between the two on the fits both report
  as converged (target ≤ 1e-6 relative).

The loop is given everything for free that the batched call computes itself:
the aligned, normalised coordinates and the same starting values, and the
analytic Jacobian; its tolerances are tightened (``xtol = ftol = gtol = 1e-12``)
so that both converge to the same optimum. Only the ``curve_fit`` calls are
timed. Times are CPU seconds of this process (``time.process_time``), so a
busy shared machine slows both sides alike. Differences are relative to ``max(|p|, 1)`` in the normalised
coordinates in which both solvers work (lengths divided by each arch's RMS
radius), so the near-zero pose parameters are compared on the arch's scale.

Data: each arch is drawn from one of the five models (equal shares) with
random size and shape, 12–18 points unevenly spaced along it, rotated by a
random angle, translated, mirrored for half of them, with Gaussian noise
(1.5 px) on both coordinates.

Usage::

    python benchmarks/arch.py            # 10,000 arches (about a minute, mostly the loop)
    python benchmarks/arch.py --n 2000
    python benchmarks/arch.py --smoke    # 8 arches, 2 models, for the test suite

Exit status 1 when a batched fit is worse than its curve_fit twin (parameters
differing by more than 1e-6 and a sum of squares higher by more than the beta fit's
documented stopping rule allows, 1e-6·p·s²; the speed ratio is reported, not
enforced: it depends on the machine). ``--baseline DIR`` also times ``fit`` of
another checkout (e.g. the previous release) on the same arches.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from dentalkit.arch import MODELS, fit
from dentalkit.arch._engine import POSE_PARAMS, _beta_q, _fit_model
from dentalkit.arch._fit import _prepare
from dentalkit.arch._models import BETA_EXPONENT, beta_foot
from dentalkit.arch._tables import stack_points

TOLERANCE = 1e-6
#: MINPACK tolerances of the curve_fit loop (tight, so that it converges as far as ours).
LOOP_TOL = 1e-15


def simulate(n: int, seed: int = 0, noise: float = 1.5) -> pd.DataFrame:
    """An ``arch_points`` table of ``n`` synthetic arches (see module docstring)."""
    rng = np.random.default_rng(seed)
    names = list(MODELS)
    which = rng.integers(0, len(names), n)
    npts = rng.integers(12, 19, n)
    N = int(npts.max())
    half = rng.uniform(180.0, 320.0, n)  # half-width in px
    depth = half * rng.uniform(0.8, 1.3, n)
    X = np.sort(rng.uniform(-1.0, 1.0, (n, N)), axis=1)
    X[:, 0], X[np.arange(n), npts - 1] = -1.0, 1.0
    valid = np.arange(N)[None, :] < npts[:, None]
    X = np.where(valid, X, np.nan)
    Y = np.full((n, N), np.nan)
    for j, name in enumerate(names):
        sel = which == j
        h, D = half[sel, None], depth[sel, None]
        x = X[sel] * h
        mod = MODELS[name]
        if name == "catenary":
            # a such that the arch reaches depth D at x = ±h, solved by bisection
            lo, hi = np.full(sel.sum(), 1.0), np.full(sel.sum(), 1e5)
            for _ in range(100):
                a = np.sqrt(lo * hi)
                too_deep = a * (np.cosh(h[:, 0] / a) - 1.0) > D[:, 0]
                lo, hi = np.where(too_deep, a, lo), np.where(too_deep, hi, a)
            P = a[:, None]
        elif name == "beta":
            P = np.column_stack([D[:, 0] * 1.05, 2 * h[:, 0] * rng.uniform(1.02, 1.1, sel.sum())])
        elif name == "poly4":
            t = rng.uniform(0.2, 0.6, sel.sum())
            P = np.column_stack([(1 - t) * D[:, 0] / h[:, 0] ** 2, t * D[:, 0] / h[:, 0] ** 4])
        elif name == "poly6":
            t = rng.uniform(0.2, 0.6, sel.sum())
            P = np.column_stack([(1 - t) * D[:, 0] / h[:, 0] ** 2, t * D[:, 0] / h[:, 0] ** 6])
        else:
            P = (D[:, 0] / h[:, 0] ** 2)[:, None]
        Y[sel] = mod.f(x, P)
        X[sel] = x
    th = rng.uniform(-np.pi, np.pi, n)[:, None]
    mirror = np.where(rng.random(n) < 0.5, -1.0, 1.0)[:, None]
    xs = X * mirror
    px = np.cos(th) * xs - np.sin(th) * Y + rng.uniform(300, 1700, (n, 1))
    py = np.sin(th) * xs + np.cos(th) * Y + rng.uniform(300, 1700, (n, 1))
    px += noise * rng.standard_normal(px.shape)
    py += noise * rng.standard_normal(py.shape)
    arch_id, pos = np.nonzero(valid)
    return pd.DataFrame(
        {
            "patient_id": pd.Categorical([f"b{i:05d}" for i in arch_id]),
            "timestamp": "2024-01-01",
            "arch": pd.Categorical(np.where(arch_id % 2 == 0, "up", "lo")),
            "point": [f"t{k:02d}" for k in pos],
            "index": pos.astype(np.int16),
            "x": px[valid],
            "y": py[valid],
        }
    )


def _one_arch(mod, U: np.ndarray, V: np.ndarray):
    """Residual and Jacobian of one arch, plain 1-D numpy (what a per-arch loop would write).

    Same parameterisation and residual as the batched fit: shape parameters,
    then the pose (y0, x0, φ); (x', y') are the points in the pose frame and
    the residual is the first-order orthogonal distance (y' − f(x'))/√(1 + f'(x')²),
    or for the beta function the exact distance (the same foot-point search).
    """
    k = mod.k

    def pose(p):
        c, s = np.cos(p[k + 2]), np.sin(p[k + 2])
        du, dv = U - p[k + 1], V - p[k]
        return c, s, c * du + s * dv, c * dv - s * du

    if mod.name == "beta":  # exact distance to the curve (its ends are singular)
        # fitted as (κ, v) = (4eD/W², 4/W²): D = κ/(e·v), W = 2/√v
        e = BETA_EXPONENT

        def dw(p):
            return np.array([p[0] / (e * p[1]), 2.0 / np.sqrt(p[1])])

        def f(_x, *p):
            p = np.asarray(p)
            _, _, xp, yp = pose(p)
            return beta_foot(xp, yp, dw(p), iterations=12).d

        def jac(_x, *p):
            p = np.asarray(p)
            c, s, xp, yp = pose(p)
            D, W = dw(p)
            ft = beta_foot(xp, yp, np.array([D, W]), iterations=12)
            jd, jw = (-(ft.nx * ft.dcx[j] + ft.ny * ft.dcy[j]) for j in range(k))
            jv = -(jd * D + jw * W / 2.0) / p[1]
            # near the parabola limit, without the chain rule's cancellation (as the
            # batched fit): the curve held at the foot's abscissa, ∂f/∂v = κx⁴·Q(v·x²)
            xf = ft.dcx[1] * W
            t = p[1] * xf**2
            inner = t < 0.5
            jv = np.where(inner, -ft.ny * p[0] * xf**4 * _beta_q(np.where(inner, t, 0.0)), jv)
            cols = [jd / (e * p[1]), jv]
            cols += [-(ft.nx * s + ft.ny * c), ft.ny * s - ft.nx * c, ft.nx * yp - ft.ny * xp]
            return np.column_stack(cols)

        return f, jac

    def f(_x, *p):
        p = np.asarray(p)
        _, _, xp, yp = pose(p)
        d = mod.derivs(xp, p[:k])
        return (yp - d.f) / np.sqrt(1.0 + d.d1**2)

    def jac(_x, *p):
        p = np.asarray(p)
        c, s, xp, yp = pose(p)
        d = mod.derivs(xp, p[:k])
        sf = 1.0 / np.sqrt(1.0 + d.d1**2)
        t = (yp - d.f) * sf**3 * d.d1
        cols = [-sf * dp - t * d1p for dp, d1p in zip(d.dp, d.d1p, strict=True)]
        cols.append(sf * (d.d1 * s - c) + t * d.d2 * s)
        cols.append(sf * (d.d1 * c + s) + t * d.d2 * c)
        cols.append(-sf * (xp + d.d1 * yp) - t * d.d2 * yp)
        return np.column_stack(cols)

    return f, jac


def _prepared(st, name: str):
    """The frame and coordinates ``fit(points, name)`` works in (the parabola alone skips
    the parabola pre-fit that refines the frame for the other models)."""
    return _prepare(st, "fit", "orthogonal", None, "right", 200, refine=name != "parabola")


def curve_fit_loop(points: pd.DataFrame, models: list[str]) -> tuple[dict, dict]:
    """Fit every arch and model with one ``curve_fit`` call each; time the calls only."""
    from scipy.optimize import OptimizeWarning, curve_fit

    st = stack_points(points)
    elapsed: dict[str, float] = {}
    out = {}
    for name in models:
        pre = _prepared(st, name)
        prob = pre.prob
        mod = MODELS[name]
        kk = mod.k + len(POSE_PARAMS["fit"])
        fittable = pre.framed & (st.n >= kk + 1)
        p0 = _fit_model(prob, mod, "fit", fittable, 200)["p0"]
        P = np.full((len(st.n), kk), np.nan)
        ok = np.zeros(len(st.n), bool)
        nfev = np.zeros(len(st.n), np.int64)
        for i in np.flatnonzero(fittable):
            f, jac = _one_arch(mod, prob.U[i, : st.n[i]], prob.V[i, : st.n[i]])
            t0 = time.process_time()
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", OptimizeWarning)
                    warnings.simplefilter("ignore", RuntimeWarning)
                    popt, _, info, _, _ = curve_fit(
                        f,
                        None,
                        np.zeros(int(st.n[i])),
                        p0=p0[i],
                        jac=jac,
                        method="lm",
                        xtol=LOOP_TOL,
                        ftol=LOOP_TOL,
                        gtol=LOOP_TOL,
                        full_output=True,
                    )
                P[i], ok[i], nfev[i] = popt, True, info["nfev"]
            except (RuntimeError, ValueError):
                pass
            elapsed[name] = elapsed.get(name, 0.0) + time.process_time() - t0
        out[name] = (P, ok, prob.s)
    return elapsed, out


def run(n: int, seed: int = 0, loop_n: int | None = 1000, models: list[str] | None = None) -> dict:
    """Run the benchmark; returns the measured figures."""
    points = simulate(n, seed)
    models = list(MODELS) if models is None else models
    t0 = time.process_time()
    fits = fit(points, models)
    t_all = time.process_time() - t0
    # the public table of each model alone (its own frame: see _prepared)
    alone = {}
    t_batched = {}
    for name in models:
        t0 = time.process_time()
        alone[name] = fit(points, name)
        t_batched[name] = time.process_time() - t0

    sub = points
    if loop_n is not None and loop_n < n:
        keep = pd.unique(points["patient_id"])[:loop_n]
        sub = points[points["patient_id"].isin(keep)]
    n_loop = sub["patient_id"].nunique()
    t_loop, loop = curve_fit_loop(sub, models)
    scale = n / n_loop

    # compare: shape parameters of the public fit table (physical units) and the
    # pose parameters of the same batched solver (normalised units) with the loop
    st = stack_points(points)
    s_norm = _prepared(st, "catenary").prob.s[:n_loop]  # the RMS radius: frame-invariant
    agree = flat = disagree = loop_worse = offset = 0
    worst: dict[str, float] = {}
    for name in models:
        mod = MODELS[name]
        pre = _prepared(st, name)
        res = _fit_model(pre.prob, mod, "fit", pre.framed & (st.n >= mod.k + 4), 200)
        ok_b = np.array([x is None for x in res["status"]])[:n_loop]
        P_loop, ok_l, _ = loop[name]
        table = alone[name].iloc[:n_loop]
        both = ok_b & ok_l & table["status"].eq("ok").to_numpy()
        if not both.any():
            continue
        power = np.array(mod.length_power, dtype=float)
        shape_loop = P_loop[:, : mod.k] * s_norm[:, None] ** power
        shape_pub = table[list(mod.params)].to_numpy(dtype=float)
        d_shape = np.abs(shape_pub - shape_loop) / np.abs(shape_loop)
        d_pose = np.abs(res["P"][:n_loop, mod.k :] - P_loop[:, mod.k :]) / np.maximum(
            np.abs(P_loop[:, mod.k :]), 1.0
        )
        diff = np.maximum(d_shape.max(1), d_pose.max(1))[both]
        worst[name] = float(diff.max())
        # where the parameters differ, are both solutions the same minimum of a flat valley?
        rss_b = res["rss"][:n_loop][both]
        f_rss = np.array(
            [
                (
                    _one_arch(mod, pre.prob.U[i, : st.n[i]], pre.prob.V[i, : st.n[i]])[0](
                        None, *P_loop[i]
                    )
                    ** 2
                ).sum()
                for i in np.flatnonzero(both)
            ]
        )
        same_min = np.abs(rss_b - f_rss) <= 1e-9 * f_rss
        agree += int((diff <= TOLERANCE).sum())
        flat += int(((diff > TOLERANCE) & same_min).sum())
        differ = (diff > TOLERANCE) & ~same_min
        loop_worse += int((differ & (f_rss > rss_b)).sum())
        # the beta fit may stop on the Bates–Watts relative offset ≤ 1e-3 (docs/arch.md):
        # then its sum of squares is above the optimum by at most ~1e-6·p·s²
        p = mod.k + 3
        n_i = st.n[:n_loop][both].astype(float)
        s2 = rss_b / np.maximum(n_i - p, 1.0)
        by_offset = differ & (f_rss <= rss_b) & (rss_b - f_rss <= 1e-6 * p * s2)
        offset += int(by_offset.sum())
        disagree += int((differ & (f_rss <= rss_b) & ~by_offset).sum())
    return {
        "n_arches": n,
        "n_fits": len(fits),
        "batched_s": t_all,
        "batched_per_model_s": t_batched,
        "loop_s": sum(t_loop.values()) * scale,
        "loop_per_model_s": {k: v * scale for k, v in t_loop.items()},
        "loop_measured_on": n_loop,
        "ratio": sum(t_loop.values()) * scale / t_all,
        "max_rel_diff_per_model": worst,
        "agree": agree,
        "flat": flat,
        "disagree": disagree,
        "offset": offset,
        "loop_worse": loop_worse,
        "statuses": fits.groupby(["model", "status"], observed=True).size(),
    }


_BASELINE = """
import sys, time, json
import pandas as pd
sys.path.insert(0, sys.argv[2])
from dentalkit.arch import fit
pts = pd.read_pickle(sys.argv[1])
out = {}
models = sys.argv[3].split(",")
t0 = time.process_time(); fit(pts, models); out["all"] = time.process_time() - t0
for m in models:
    t0 = time.process_time(); fit(pts, m); out[m] = time.process_time() - t0
print(json.dumps(out))
"""


def baseline_times(path: str, points: pd.DataFrame, models: list[str]) -> dict:
    """CPU seconds of ``fit`` of another dentalkit checkout on the same arches (subprocess)."""
    import json
    import subprocess
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        data = Path(tmp) / "points.pkl"
        points.to_pickle(data)
        root = str(Path(path).resolve())
        res = subprocess.run(
            [sys.executable, "-c", _BASELINE, str(data), root, ",".join(models)],
            capture_output=True,
            text=True,
            check=True,
            env={"PATH": "", "PYTHONPATH": root},
        )
    return json.loads(res.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10_000, help="number of arches (default 10000)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--loop-n",
        type=int,
        default=1000,
        help="run the curve_fit loop on the first K arches and scale its time to n "
        "(default 1000; pass the same as --n for the full loop)",
    )
    ap.add_argument("--models", nargs="+", choices=list(MODELS), default=list(MODELS))
    ap.add_argument(
        "--baseline",
        help="also time dentalkit.arch.fit of another checkout on the same arches, e.g. "
        "`mkdir /tmp/base && git archive <rev> | tar -x -C /tmp/base` then --baseline /tmp/base",
    )
    ap.add_argument(
        "--smoke",
        action="store_true",
        help="tiny run for the tests (8 arches, loop on 2; catenary and poly4)",
    )
    args = ap.parse_args(argv)
    n = 8 if args.smoke else args.n
    loop_n = 2 if args.smoke else min(args.loop_n, n)
    models = ["catenary", "poly4"] if args.smoke else args.models
    r = run(n, args.seed, loop_n, models)
    print(f"arches: {r['n_arches']}  fits: {r['n_fits']} ({len(models)} models, pose='fit')")
    print(f"batched dentalkit.arch.fit(..., models): {r['batched_s']:.2f} s")
    extra = (
        ""
        if r["loop_measured_on"] == n
        else f" (measured on {r['loop_measured_on']} arches, scaled)"
    )
    print(f"curve_fit loop, all models:            {r['loop_s']:.2f} s{extra}")
    print(f"speed-up:                              {r['ratio']:.1f}x  (target >= 20x)")
    print("per model (batched s / loop s / ratio):")
    for k, tb in r["batched_per_model_s"].items():
        tl = r["loop_per_model_s"][k]
        print(f"  {k:9s} {tb:7.2f} {tl:9.2f} {tl / tb:7.1f}x")
    print(
        f"parameters: {r['agree']} fits agree to <= {TOLERANCE:g} relative; "
        f"{r['flat']} differ more but reach the same minimum (rss equal to 1e-9: a flat "
        f"valley, parameters not determined more precisely by the data); "
        f"{r['loop_worse']} differ where curve_fit stopped at a higher sum of squares "
        f"(not converged within its maxfev); {r['offset']} where the batched fit stopped "
        f"on the relative-offset rule, within 1e-6·p·s² of curve_fit's sum of squares (0.1 % "
        f"of a standard error); {r['disagree']} where the batched fit is worse"
    )
    print(
        "  largest difference per model: "
        + ", ".join(f"{k} {v:.1e}" for k, v in r["max_rel_diff_per_model"].items())
    )
    if args.baseline:
        base = baseline_times(args.baseline, simulate(n, args.seed), models)
        print(f"baseline checkout {args.baseline} on the same arches (CPU s, this / baseline):")
        print(
            f"  all models {r['batched_s']:7.2f} / {base['all']:7.2f}  "
            f"({base['all'] / r['batched_s']:.2f}x faster)"
        )
        for k, tb in r["batched_per_model_s"].items():
            print(f"  {k:9s} {tb:7.2f} / {base[k]:7.2f}  ({base[k] / tb:.2f}x faster)")
    print("statuses of the batched fits:")
    print(r["statuses"].to_string())
    return 0 if r["disagree"] == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
