"""Arch fits and measures against the sandbox simulator's ground truth.

The simulator draws each arch as a catenary y = a·(cosh(x/a) − 1) in mm (incisal
point at the origin, x to the patient's left, y posterior), places the 14
tooth centres of second molar to second molar on it as ``CatenaryPoints``
(keys ``t17`` … ``t27`` upper, ``t47`` … ``t37`` lower: FDI numbers) and
reports a, the intercanine / intermolar widths between tooth centres and the
depth from the incisal point to the first-molar line (``truth()["arch"]``).
It is built by its own code; nothing here is computed by dentalkit.arch.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from dentalkit import arch
from dentalkit.endpoints import get_endpoint
from dentalkit.sandbox import simulate

PATIENTS = [f"ARCH{i:03d}" for i in range(24)]
SESSION = "2024-05-01"
MM_PER_PX = 0.08  # the sandbox's occlusal photographs (truth()["arch"][...]["mm_per_px"])


def _tables(noise: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    """arch_points and tooth_keypoints tables from the sandbox's response bodies."""
    points, teeth = [], []
    for pid in PATIENTS:
        req = {"PatientID": pid, "TimeStamp": SESSION, "ImageName": f"https://img/{pid}.png"}
        for arch_, ep in (("up", "occlusogram-upper-points"), ("lo", "occlusogram-lower-points")):
            body = simulate.respond(get_endpoint(ep), req, noise=noise)
            for key, (x, y) in body["CatenaryPoints"].items():
                points.append((pid, SESSION, arch_, key, int(key[1:]), x, y))
            for tooth, rec in body["Teeth"].items():
                for pt, val in rec.items():
                    if pt != "missing":
                        teeth.append((pid, SESSION, arch_, tooth, rec["missing"], pt, *val))
    cols = ["patient_id", "timestamp", "arch"]
    return (
        pd.DataFrame(points, columns=[*cols, "point", "index", "x", "y"]),
        pd.DataFrame(teeth, columns=[*cols, "tooth", "missing", "point", "x", "y"]),
    )


@pytest.fixture(scope="module")
def truth() -> pd.DataFrame:
    rows = []
    for pid in PATIENTS:
        t = simulate.truth(pid, SESSION)["arch"]
        for arch_ in ("up", "lo"):
            a = t[arch_]
            assert a["mm_per_px"] == MM_PER_PX
            rows.append(
                {
                    "patient_id": pid,
                    "arch": arch_,
                    "a_mm": a["catenary_a_mm"],
                    "a_px": a["catenary_a_px"],
                    "intercanine_width": a["intercanine_width_mm"],
                    "intermolar_width": a["intermolar_width_mm"],
                    "arch_depth": a["depth_mm"],
                    "rotation_deg": a["transform"]["rotation_deg"],
                    "flip_y": a["transform"]["flip"][1],
                    "tx": a["transform"]["translation_px"][0],
                    "ty": a["transform"]["translation_px"][1],
                }
            )
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def exact():
    return _tables(noise=False)


@pytest.fixture(scope="module")
def noisy():
    return _tables(noise=True)


def _measures_vs_truth(m: pd.DataFrame, truth: pd.DataFrame) -> pd.DataFrame:
    wide = m[m["arch"].isin(["up", "lo"])].pivot_table(
        index=["patient_id", "arch"], columns="measure", values="value", observed=True
    )
    wide = wide.reset_index()
    wide["arch"] = wide["arch"].astype(str)
    return wide.merge(truth, on=["patient_id", "arch"], suffixes=("", "_true"))


def test_noise_free_catenary_and_pose_are_recovered_exactly(exact, truth):
    pts, _ = exact
    px = arch.fit(pts, "catenary")
    mm = arch.fit(pts, "catenary", mm_per_px=MM_PER_PX)
    assert (px["status"] == "ok").all()
    assert (px["side_source"] == "fdi_keys").all()
    f = px.assign(arch=px["arch"].astype(str)).merge(
        truth, on=["patient_id", "arch"], suffixes=("_fit", "_true")
    )
    np.testing.assert_allclose(f["a"], f["a_px"], rtol=1e-6)
    np.testing.assert_allclose(mm["a"].to_numpy(), f["a_mm"].to_numpy(), rtol=1e-6)
    # image → arch frame: q = diag(flip)·R(−rot)·(p − t)·mm_per_px, i.e. our R(θ)·F with
    # θ = −rot, no mirror (flip = [1, 1]) or θ = 180° + rot, mirrored (flip = [1, −1])
    upper = f["flip_y"] == 1
    expected = np.where(upper, -f["rotation_deg_true"], 180.0 + f["rotation_deg_true"])
    diff = (f["rotation_deg_fit"] - expected + 180.0) % 360.0 - 180.0
    assert np.abs(diff).max() < 1e-6
    assert (f["reflected"].astype(bool) == ~upper).all()
    np.testing.assert_allclose(f["tx_fit"], f["tx_true"], atol=1e-5)
    np.testing.assert_allclose(f["ty_fit"], f["ty_true"], atol=1e-5)


def test_noise_free_widths_and_depth_equal_the_truth(exact, truth):
    pts, teeth = exact
    m = arch.measure(teeth, pts, mm_per_px=MM_PER_PX, model="catenary", incisal="vertex")
    # the simulator drops a few teeth (a missing tooth keeps its place in the truth):
    # exactly the measures that need a missing tooth are problem rows
    missing = teeth[teeth["missing"] & (teeth["point"] == "centroid")]
    needs = {
        "c": ("intercanine_width",),
        "m1": ("intermolar_width", "arch_depth", "arch_perimeter"),
    }
    expected_bad = {
        (r.patient_id, r.arch, name)
        for r in missing.itertuples()
        for name in needs.get(r.tooth.split("_")[0], ())
    }
    bad = m[(m["status"] != "ok") & m["arch"].isin(["up", "lo"])]
    assert (
        set(
            zip(bad["patient_id"], bad["arch"].astype(str), bad["measure"].astype(str), strict=True)
        )
        == expected_bad
    )
    assert (bad["status"] == "missing_tooth").all()
    w = _measures_vs_truth(m, truth)
    for name in ("intercanine_width", "intermolar_width", "arch_depth"):
        ok = w[name].notna()
        assert ok.sum() >= 40
        np.testing.assert_allclose(
            w.loc[ok, name], w.loc[ok, f"{name}_true"], rtol=1e-6, err_msg=name
        )
    # along the catenary from molar to molar: a·(sinh(x_l/a) − sinh(x_r/a)), with the
    # first-molar centres taken into the truth's arch frame by the truth's own transform
    # p_mm = diag(flip)·R(−rot)·(p − t)·mm_per_px
    cen = teeth[(teeth["point"] == "centroid") & teeth["tooth"].str.startswith("m1_")]
    cen = cen.merge(truth, on=["patient_id", "arch"])
    th = np.radians(cen["rotation_deg"].to_numpy())
    d = cen[["x", "y"]].to_numpy() - cen[["tx", "ty"]].to_numpy()
    x_mm = (np.cos(th) * d[:, 0] + np.sin(th) * d[:, 1]) * MM_PER_PX
    cen = cen.assign(x_mm=x_mm, side=cen["tooth"].str.split("_").str[1])
    xs = cen.pivot_table(index=["patient_id", "arch"], columns="side", values="x_mm").reset_index()
    w = w.merge(xs, on=["patient_id", "arch"])
    ok = w["arch_perimeter"].notna()
    a, xl, xr = w.loc[ok, "a_mm"], w.loc[ok, "lft"], w.loc[ok, "rgt"]
    assert (xl > 0).all()
    assert (xr < 0).all()
    np.testing.assert_allclose(
        w.loc[ok, "arch_perimeter"], a * (np.sinh(xl / a) - np.sinh(xr / a)), rtol=1e-6
    )


def test_with_the_sandbox_noise_errors_are_within_what_the_noise_allows(noisy, truth):
    pts, teeth = noisy
    fits = arch.fit(pts, "catenary", mm_per_px=MM_PER_PX, tooth_keypoints=teeth)
    assert (fits["status"] == "ok").all()
    assert (fits["side_source"] == "teeth").all()
    f = fits.assign(arch=fits["arch"].astype(str)).merge(truth, on=["patient_id", "arch"])
    rel = f["a"] / f["a_mm"] - 1
    # catenary points carry 0.12 mm isotropic noise: a is recovered to a few per cent
    assert np.abs(rel).max() < 0.05, rel.describe()
    assert abs(rel.mean()) < 4 * rel.std(ddof=1) / np.sqrt(len(rel)) + 0.005
    # residual scale: orthogonal distances ≈ the per-coordinate noise sd
    assert 0.06 < f["rmse"].median() < 0.16

    m = arch.measure(teeth, pts, mm_per_px=MM_PER_PX, model="catenary", incisal="vertex")
    w = _measures_vs_truth(m, truth)
    # centroids carry 0.15 mm noise per coordinate: a width differs by N(0, 0.15·√2 mm)
    sd = 0.15 * np.sqrt(2)
    for name in ("intercanine_width", "intermolar_width"):
        err = (w[name] - w[f"{name}_true"]).dropna()
        assert np.abs(err).max() < 5 * sd, (name, err.describe())
        assert abs(err.mean()) < 4 * sd / np.sqrt(len(err)), (name, err.mean())
    depth_err = (w["arch_depth"] - w["arch_depth_true"]).dropna()
    assert np.abs(depth_err).max() < 1.0, depth_err.describe()


def test_left_molar_is_on_the_positive_side(noisy):
    pts, _ = noisy
    al = arch.align(pts)
    q = al.points.set_index(["patient_id", "arch", "point"])
    left = q.xs("t27", level="point")["x_canonical"].to_numpy()
    right = q.xs("t17", level="point")["x_canonical"].to_numpy()
    assert (left > 0).all()
    assert (right < 0).all()
    assert (q.xs("t37", level="point")["x_canonical"] > 0).all()
