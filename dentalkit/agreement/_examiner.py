"""A simulated examiner: landmarks plus documented isotropic Gaussian noise.

Used to validate the agreement statistics (tests) and to stand in for a manual tracing
on sandbox data (``notebooks/07_agreement.ipynb``). With independent N(0, σ²) noise on
each axis the radial error R of one examiner against the truth follows a Rayleigh
distribution with scale σ:

- mean (MRE)      E[R] = σ·√(π/2) ≈ 1.2533 σ,
- variance        Var[R] = (4 − π)/2 · σ²,
- SDR at radius r P(R ≤ r) = 1 − exp(−r² / 2σ²).

(the length of a zero-mean isotropic bivariate normal vector; e.g. Papoulis & Pillai,
*Probability, Random Variables and Stochastic Processes*, 4th ed., 2002). Two
independent examiners with σ₁ and σ₂ differ by N(0, σ₁² + σ₂²) per axis, hence by
Rayleigh errors of scale √(σ₁² + σ₂²).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pandas as pd

from dentalkit.errors import InputError

__all__ = ["simulate_examiner"]


def simulate_examiner(
    landmarks: pd.DataFrame,
    sd_mm: float | Mapping[str, float],
    mm_per_px: float | str,
    seed: int | np.random.Generator | None,
    *,
    default_sd_mm: float | None = None,
) -> pd.DataFrame:
    """Return a copy of a landmarks table with Gaussian noise added, as an examiner's tracing.

    Parameters
    ----------
    landmarks : DataFrame
        Long table with ``x``, ``y`` in px (e.g. the sandbox's noise-free answer).
    sd_mm : float or mapping
        Noise SD σ in mm **per axis** (isotropic), for every landmark or per
        landmark ``name``.
    mm_per_px : float or str
        Calibration: a number or the name of a column.
    seed : int, numpy.random.Generator or None
        Seed for :func:`numpy.random.default_rng` (pass one for reproducible tables).
    default_sd_mm : float, optional
        σ for names missing from a ``sd_mm`` mapping (default: such names are an
        error).

    Returns
    -------
    DataFrame
        Same rows and columns; ``x``, ``y`` moved by independent N(0, (σ/mm_per_px)²)
        pixel offsets. The input is not modified.

    Examples
    --------
    >>> import pandas as pd
    >>> t = pd.DataFrame({"name": ["S", "N"], "x": [0.0, 700.0], "y": [0.0, 0.0]})
    >>> noisy = simulate_examiner(t, 0.5, 0.1, seed=1)
    >>> noisy.shape == t.shape and not noisy[["x", "y"]].equals(t[["x", "y"]])
    True
    """
    for col in ("x", "y"):
        if col not in landmarks.columns:
            raise InputError(f"landmarks table lacks column {col!r}")
    n = len(landmarks)
    if isinstance(sd_mm, Mapping):
        if "name" not in landmarks.columns:
            raise InputError("a per-landmark sd_mm needs a 'name' column")
        sd = landmarks["name"].astype(object).map(dict(sd_mm)).to_numpy(dtype=float)
        if np.isnan(sd).any():
            if default_sd_mm is None:
                missing = sorted(
                    set(landmarks["name"].astype(object)[np.isnan(sd)].map(str)) - {"None"}
                )[:10]
                raise InputError(
                    f"sd_mm gives no SD for landmark(s) {missing}; add them or pass default_sd_mm"
                )
            sd = np.where(np.isnan(sd), float(default_sd_mm), sd)
    else:
        sd = np.full(n, float(sd_mm))
    if (~np.isfinite(sd) | (sd < 0)).any():
        raise InputError("sd_mm must be finite and ≥ 0")
    if isinstance(mm_per_px, str):
        if mm_per_px not in landmarks.columns:
            raise InputError(f"mm_per_px={mm_per_px!r} is not a column of the landmarks table")
        scale = pd.to_numeric(landmarks[mm_per_px], errors="coerce").to_numpy(dtype=float)
    else:
        scale = np.full(n, float(mm_per_px))
    if (~np.isfinite(scale) | (scale <= 0)).any():
        raise InputError("mm_per_px must be positive for every row")
    rng = seed if isinstance(seed, np.random.Generator) else np.random.default_rng(seed)
    noise = rng.standard_normal((n, 2)) * (sd / scale)[:, None]
    out = landmarks.copy()
    out["x"] = landmarks["x"].to_numpy(dtype=float) + noise[:, 0]
    out["y"] = landmarks["y"].to_numpy(dtype=float) + noise[:, 1]
    return out
