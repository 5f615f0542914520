"""Outline noise keeps tooth outlines simple (cohort rate) and has the documented law.

The check is independent of the simulator's code: noisy and noise-free answers of the
same request are compared edge by edge, and validity is shapely's.
"""

import numpy as np
import shapely

from dentalkit.sandbox.simulate import NOISE_MODEL, POINT_NOISE_SD_MM, respond

SEG = (
    "frontal-segmentation",
    "pano-segmentation",
    "occlusogram-upper-seg",
    "occlusogram-lower-seg",
)
KIND = {
    "frontal-segmentation": "intraoral_frontal",
    "pano-segmentation": "pano",
    "occlusogram-upper-seg": "model_upper",
    "occlusogram-lower-seg": "model_lower",
}
MM_PER_PX = {"frontal-segmentation": 0.04, "pano-segmentation": 0.1}


def _pairs(endpoint: str, n_patients: int, prefix: str = "R"):
    """(noisy, noise-free) outline arrays of every present tooth of a cohort."""
    for i in range(n_patients):
        pid = f"{prefix}{i}"
        req = {
            "PatientID": pid,
            "TimeStamp": "2024-03-05T10:00:00Z",
            "ImageName": f"http://h/_sandbox/images/{KIND[endpoint]}/{pid}/2024-03-05.png",
        }
        noisy, exact = respond(endpoint, req), respond(endpoint, req, noise=False)
        for key, rec in noisy["Results"].items():
            if not rec["missing"]:
                yield (
                    np.asarray(rec["points"], dtype=float),
                    np.asarray(exact["Results"][key]["points"], dtype=float),
                )


def test_noisy_outlines_stay_simple_over_a_cohort():
    """No outline folds: every edge keeps its direction and every polygon is valid.

    The frontal photo (the narrowest outlines in pixels: lower premolars, whose short
    corner edges are 2–3 px long) for 150 patients, the other segmentations for 30. The
    former independent per-vertex noise reversed an edge of 6 lower-premolar outlines of
    these 150 frontal answers (after rounding to whole pixels); the correlated outline
    noise must reverse none.
    """
    noisy, exact = [], []
    for ep, n in zip(SEG, (150, 30, 30, 30), strict=True):
        for a, b in _pairs(ep, n):
            noisy.append(a)
            exact.append(b)
    sizes = np.array([len(a) for a in noisy])
    owner = np.repeat(np.arange(len(noisy)), sizes)
    p, q = np.concatenate(noisy), np.concatenate(exact)
    # the next vertex of each vertex on its own (closed) outline
    nxt = np.arange(len(p)) + 1
    ends = np.cumsum(sizes) - 1
    nxt[ends] = ends - sizes + 1
    dots = np.sum((p[nxt] - p) * (q[nxt] - q), axis=1)
    reversed_outlines = np.unique(owner[dots <= 0.0])
    polys = shapely.polygons(shapely.linearrings(p, indices=owner))
    assert len(noisy) > 3_000
    assert reversed_outlines.tolist() == []
    assert np.flatnonzero(~shapely.is_valid(polys)).tolist() == []


def test_outline_noise_sd_and_correlation_along_the_outline():
    """Per-vertex SD as documented; neighbouring vertices move together.

    Rounding to whole pixels adds a uniform error of variance 1/12 px² per coordinate;
    the documented correlation between neighbours is exp(−1 / (4 L²)) for correlation
    length L (Gaussian-smoothed white noise).
    """
    ep = "frontal-segmentation"
    per_tooth = [noisy - exact for noisy, exact in _pairs(ep, 40, prefix="S")]
    disp = np.concatenate(per_tooth)
    sd_px = POINT_NOISE_SD_MM["outline"] / MM_PER_PX[ep]
    expected_sd = np.sqrt(sd_px**2 + 1.0 / 12.0)
    assert abs(np.std(disp) / expected_sd - 1.0) < 0.05
    length = NOISE_MODEL["outline_correlation_vertices"]
    rho = np.exp(-1.0 / (4.0 * length**2)) * sd_px**2 / expected_sd**2
    a = np.concatenate([d[:, 0] for d in per_tooth])
    b = np.concatenate([np.roll(d[:, 0], -1) for d in per_tooth])
    assert abs(np.corrcoef(a, b)[0, 1] - rho) < 0.03
