"""Per-landmark and overall radial-error statistics and SDR of a pairs table.

Definitions of the ISBI 2015 challenge (Wang CW et al., *Med Image Anal* 2016;31:63–76):
radial error R = ‖p_test − p_ref‖; MRE = mean R; SD = sqrt(Σ(R − MRE)²/(N − 1));
SDR(z) = #{R ≤ z}/N × 100 %. Grouped sums by :func:`numpy.bincount` (no loop per landmark).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from dentalkit.agreement._stats import t_interval, wilson_interval

__all__ = ["OVERALL", "SDR_RADII_MM", "summaries"]

#: Success detection radii of the ISBI 2015 challenge, mm (Wang et al. 2016).
SDR_RADII_MM = (2.0, 2.5, 3.0, 4.0)
#: Label of the all-landmarks row of the summary and SDR tables.
OVERALL = "overall"
#: Relative tolerance of "radial error ≤ r" (px → mm products may miss by one ulp).
_SDR_RTOL = 1e-9


def summaries(
    pairs: pd.DataFrame,
    by: str,
    radii: np.ndarray,
    unit: str,
    confidence: float,
    order: list[str],
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The ``summary`` and ``sdr`` tables of :class:`~dentalkit.agreement.LandmarkAgreement`.

    ``pairs`` has categorical ``view`` (lateral, frontal) and ``by`` (categories
    ``order``, ending with :data:`OVERALL`) columns and ``error``, ``dx``, ``dy``.
    """
    view_codes = pairs["view"].cat.codes.to_numpy(np.int64)
    item_codes = pairs[by].cat.codes.to_numpy(np.int64)
    n_items = len(order)
    # groups: (view, item) and (view, overall)
    g_item = view_codes * n_items + item_codes
    g_all = view_codes * n_items + (n_items - 1)
    group = np.concatenate([g_item, g_all])
    err = pairs["error"].to_numpy(float)
    dx = pairs["dx"].to_numpy(float)
    dy = pairs["dy"].to_numpy(float)
    E, X, Y = (np.concatenate([a, a]) for a in (err, dx, dy))
    uniq, code = np.unique(group, return_inverse=True)
    n = np.bincount(code).astype(float)

    def mean(a):
        return np.bincount(code, weights=a) / n

    def sd(a, m):
        with np.errstate(invalid="ignore", divide="ignore"):
            ss = np.bincount(code, weights=(a - m[code]) ** 2)
            return np.where(n > 1, np.sqrt(ss / (n - 1)), np.nan)

    mre, mx, my = mean(E), mean(X), mean(Y)
    sre, sx, sy = sd(E, mre), sd(X, mx), sd(Y, my)
    med = pd.Series(E).groupby(code).median().to_numpy()
    mx_err = pd.Series(E).groupby(code).max().to_numpy()
    is_all = (uniq % n_items) == n_items - 1
    xlo, xhi = t_interval(mx, sx, n, confidence)
    ylo, yhi = t_interval(my, sy, n, confidence)
    for a in (xlo, xhi, ylo, yhi):
        a[is_all] = np.nan
    views = pd.Categorical.from_codes(uniq // n_items, ["lateral", "frontal"])
    items = pd.Categorical.from_codes(uniq % n_items, order)
    summary = pd.DataFrame(
        {
            "view": views,
            by: items,
            "n": n.astype(np.int64),
            "mre": mre,
            "sd": sre,
            "median": med,
            "max": mx_err,
            "bias_x": mx,
            "bias_x_ci_low": xlo,
            "bias_x_ci_high": xhi,
            "bias_y": my,
            "bias_y_ci_low": ylo,
            "bias_y_ci_high": yhi,
            "sd_x": sx,
            "sd_y": sy,
            "unit": unit,
        }
    )
    if not radii.size:
        sdr = pd.DataFrame(
            {
                "view": pd.Categorical([], ["lateral", "frontal"]),
                by: pd.Categorical([], order),
                "radius_mm": pd.Series(dtype=float),
                "n": pd.Series(dtype=np.int64),
                "n_within": pd.Series(dtype=np.int64),
                "sdr_pct": pd.Series(dtype=float),
                "ci_low_pct": pd.Series(dtype=float),
                "ci_high_pct": pd.Series(dtype=float),
            }
        )
        return summary, sdr
    within = E[:, None] <= radii[None, :] * (1 + _SDR_RTOL)  # (rows, radii)
    k = np.stack([np.bincount(code, weights=within[:, j]) for j in range(radii.size)], axis=1)
    n_g = len(uniq)
    nn = np.repeat(n, radii.size)
    kk = k.reshape(-1)
    lo, hi = wilson_interval(kk, nn, confidence)
    all_rows = np.repeat(is_all, radii.size)
    lo[all_rows], hi[all_rows] = np.nan, np.nan
    sdr = pd.DataFrame(
        {
            "view": pd.Categorical.from_codes(
                np.repeat(uniq // n_items, radii.size), ["lateral", "frontal"]
            ),
            by: pd.Categorical.from_codes(np.repeat(uniq % n_items, radii.size), order),
            "radius_mm": np.tile(radii, n_g),
            "n": nn.astype(np.int64),
            "n_within": kk.astype(np.int64),
            "sdr_pct": 100.0 * kk / nn,
            "ci_low_pct": 100.0 * lo,
            "ci_high_pct": 100.0 * hi,
        }
    )
    return summary, sdr
