"""The cohort shape model: each landmark predicted from all the others, robustly.

Input: Procrustes shape coordinates (:mod:`dentalkit.qc._gpa`) of a cohort, one row per
session, ``2p`` columns (x and y of each landmark).

Model. The shape vector is taken as Gaussian with mean μ and a covariance of low rank plus
a diagonal, ``Σ = W Wᵀ + Ψ`` (principal components of the shape variation plus each
coordinate's own scatter, as in factor analysis and probabilistic PCA; Tipping & Bishop
1999). For a Gaussian, the prediction of landmark j from all the others and its error are
read off the precision matrix Λ = Σ⁻¹ (the leave-one-out identities of regression):

    r = Λ (x − μ);   x_j − E[x_j | x_{−j}] = Λ_jj⁻¹ r_j;   Cov(x_j | x_{−j}) = Λ_jj⁻¹,

so one product gives the leave-one-landmark-out residual of every landmark of every
session (Λ applied through the Woodbury identity: O(n·p·k), never a p × p product per
session), and ``d²_j = r_jᵀ Λ_jj⁻¹ r_j`` is the squared Mahalanobis distance of landmark j
from where the others put it (χ² with 2 degrees of freedom under the model).

Robustness. A landmark on the wrong structure is a *cellwise* outlier: one landmark of one
session, not a whole session. The fit therefore cleans cells, as DetectDeviatingCells does
(Rousseeuw & Van den Bossche 2018, *Technometrics* 60:135–145): cells far from the
coordinatewise median are first set to it, then, for a few rounds, the model is fitted to
the cleaned data and every cell whose d² exceeds the χ²₂ 99.9 % point is replaced by its
prediction from the others. The scale of each landmark's residuals is then estimated by
the Minimum Covariance Determinant (Rousseeuw 1984; C-steps of Rousseeuw & Van Driessen
1999 from the model's conditional covariance, h = 75 % of the sessions, consistency factor
med(d²)/χ²₂(0.5), one reweighting step at χ²₂(0.975)), so that the scores are in robust
standard deviations of that landmark's own residuals.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np
from scipy.stats import chi2

__all__ = ["CrossFitted", "ShapeModel", "fit_model", "threshold"]

#: χ²₂ point beyond which a cell is cleaned while fitting (99.9 %).
CLEAN_D2 = float(chi2.ppf(0.999, 2))
#: Fraction of sessions an MCD C-step keeps.
MCD_FRACTION = 0.75
#: Rounds of model fit and cell cleaning.
ROUNDS = 2
#: Sessions the model is fitted on at most, and as many again on which the residual scale is
#: estimated (fixed random subsets; scoring uses all).
FIT_SESSIONS = 1500
#: Most principal components of the model (and at most one per ten sessions).
MAX_COMPONENTS = 20


@dataclass(frozen=True)
class ShapeModel:
    """A fitted cohort shape model (see the module docstring).

    Attributes
    ----------
    mean : numpy.ndarray
        ``(2p,)`` μ.
    psi : numpy.ndarray
        ``(2p,)`` diagonal Ψ.
    w : numpy.ndarray
        ``(2p, k)`` W.
    core : numpy.ndarray
        ``(k, k)`` (I + Wᵀ Ψ⁻¹ W)⁻¹ (for the Woodbury product).
    block_inv : numpy.ndarray
        ``(p, 2, 2)`` Λ_jj⁻¹: conditional covariance of each landmark under the model.
    scatter_inv : numpy.ndarray
        ``(p, 2, 2)`` inverse of the MCD scatter of each landmark's residuals.
    components : int
        k.
    n_fit : int
        Sessions the model was fitted on.
    """

    mean: np.ndarray
    psi: np.ndarray
    w: np.ndarray
    core: np.ndarray
    block_inv: np.ndarray
    scatter_inv: np.ndarray
    components: int
    n_fit: int

    def single(self) -> ShapeModel:
        """The model in float32 (scoring a cohort: half the memory traffic; residuals of
        ~1e-3 in unit-size shape coordinates keep ~5 significant digits)."""
        f = np.float32
        return ShapeModel(
            self.mean.astype(f), self.psi.astype(f), self.w.astype(f), self.core.astype(f),
            self.block_inv.astype(f), self.scatter_inv.astype(f), self.components, self.n_fit,
        )  # fmt: skip

    def precision_times(self, x: np.ndarray) -> np.ndarray:
        """``(x − μ) Λ`` for rows x, ``(n, 2p)`` → ``(n, 2p)`` (Woodbury, O(n·p·k))."""
        u = (x - self.mean) / self.psi
        return u - ((u @ self.w) @ self.core) @ (self.w.T / self.psi)

    def scores(self, x: np.ndarray) -> np.ndarray:
        """d² of every landmark, ``(n, p)``, without forming the residuals:
        ``d² = rᵀ (Λ_jj⁻¹ S_j⁻¹ Λ_jj⁻¹) r`` with r = (x − μ)Λ."""
        r = self.precision_times(x).reshape(len(x), len(self.mean) // 2, 2)
        return quadratic_2x2(r, self.score_form)

    @property
    def score_form(self) -> np.ndarray:
        """(p, 2, 2) Λ_jj⁻¹ S_j⁻¹ Λ_jj⁻¹ (symmetric): d² as a quadratic form of r_j."""
        b, s = self.block_inv, self.scatter_inv
        return np.einsum("pab,pbc,pcd->pad", b, s, b).astype(self.mean.dtype)

    def residuals(self, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Leave-one-landmark-out residuals ``(n, p, 2)`` and scores d² ``(n, p)``.

        d² is in the MCD scale of each landmark's residuals (χ²₂ under the model).
        """
        r = self.precision_times(x).reshape(len(x), len(self.mean) // 2, 2)
        e = apply_2x2(self.block_inv, r)
        return e, quadratic_2x2(e, self.scatter_inv)


def apply_2x2(m: np.ndarray, v: np.ndarray) -> np.ndarray:
    """``m[j] @ v[i, j]`` for (p, 2, 2) matrices and (n, p, 2) vectors (written out: 2 × 2)."""
    v0, v1 = v[..., 0], v[..., 1]
    out = np.empty_like(v)
    out[..., 0] = m[:, 0, 0] * v0 + m[:, 0, 1] * v1
    out[..., 1] = m[:, 1, 0] * v0 + m[:, 1, 1] * v1
    return out


def quadratic_2x2(v: np.ndarray, m: np.ndarray) -> np.ndarray:
    """``v[i, j] · m[j] @ v[i, j]`` for (n, p, 2) vectors and symmetric (p, 2, 2) ``m``."""
    v0, v1 = v[..., 0], v[..., 1]
    return m[:, 0, 0] * v0 * v0 + 2.0 * m[:, 0, 1] * v0 * v1 + m[:, 1, 1] * v1 * v1


def _components(eigenvalues: np.ndarray, n: int) -> int:
    """Principal components kept: those explaining 95 % of the variance, at most
    min(:data:`MAX_COMPONENTS`, n // 5) (five sessions per component) and at least 1."""
    total = eigenvalues.sum()
    if total <= 0:
        return 1
    k = int(np.searchsorted(np.cumsum(eigenvalues) / total, 0.95) + 1)
    return max(1, min(k, MAX_COMPONENTS, n // 5))


def _fit_once(z: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, int]:
    """μ, Ψ, W, core of the low-rank-plus-diagonal model of rows z."""
    n, _q = z.shape
    mean = z.mean(axis=0)
    zc = z - mean
    cov = (zc.T @ zc) / max(n - 1, 1)
    values, vectors = np.linalg.eigh(cov)
    values, vectors = values[::-1], vectors[:, ::-1]
    values = np.clip(values, 0.0, None)
    k = _components(values, n)
    floor = max(1e-12, 1e-6 * float(values[0])) if values[0] > 0 else 1e-12
    explained = (vectors[:, :k] ** 2) @ values[:k]
    psi = np.maximum(np.diag(cov) - explained, floor)
    w = vectors[:, :k] * np.sqrt(np.maximum(values[:k] - psi.mean(), 0.0))
    core = np.linalg.inv(np.eye(k) + (w.T / psi) @ w)
    return mean, psi, w, core, k


def _block_inverse(psi: np.ndarray, w: np.ndarray, core: np.ndarray) -> np.ndarray:
    """Λ_jj⁻¹ for every landmark (2 × 2 diagonal blocks of the precision, inverted)."""
    wp = w / psi[:, None]
    lam = np.diag(1.0 / psi) - wp @ core @ wp.T
    p = len(psi) // 2
    idx = np.arange(p) * 2
    blocks = np.stack(
        [
            np.stack([lam[idx, idx], lam[idx, idx + 1]], axis=-1),
            np.stack([lam[idx + 1, idx], lam[idx + 1, idx + 1]], axis=-1),
        ],
        axis=1,
    )
    return np.linalg.inv(blocks)


def _mcd_scatter(e: np.ndarray, start: np.ndarray) -> np.ndarray:
    """MCD scatter (about 0) of each landmark's residuals: ``e`` (n, p, 2) → (p, 2, 2)."""
    n = e.shape[0]
    h = max(int(np.ceil(MCD_FRACTION * n)), 3)
    scatter = start.copy()
    for _ in range(3):  # C-steps: the covariance of the h residuals closest under the last
        d2 = quadratic_2x2(e, np.linalg.inv(scatter))
        cut = np.partition(d2, h - 1, axis=0)[h - 1]  # h-th smallest d² per landmark
        scatter = _weighted_scatter(e, (d2 <= cut) / h)
    d2 = quadratic_2x2(e, np.linalg.inv(scatter))
    scatter *= (np.median(d2, axis=0) / chi2.ppf(0.5, 2))[:, None, None]
    # one reweighting step: the sessions within χ²₂(0.975), with the consistency factor of
    # a normal truncated there (Croux & Haesbroeck 1999)
    d2 = quadratic_2x2(e, np.linalg.inv(scatter))
    cut = chi2.ppf(0.975, 2)
    kept = d2 <= cut
    scatter = _weighted_scatter(e, kept / np.maximum(kept.sum(axis=0), 3))
    scatter /= chi2.cdf(cut, 4) / 0.975
    det = scatter[:, 0, 0] * scatter[:, 1, 1] - scatter[:, 0, 1] ** 2
    bad = ~(det > 0)
    scatter[bad] = start[bad]  # degenerate (e.g. a landmark fixed by construction)
    return scatter


def _weighted_scatter(e: np.ndarray, w: np.ndarray) -> np.ndarray:
    """Σ_i w[i, j] e[i, j] e[i, j]ᵀ per landmark: (n, p, 2), (n, p) → (p, 2, 2)."""
    e0, e1 = e[..., 0], e[..., 1]
    s00, s01, s11 = (w * e0 * e0).sum(0), (w * e0 * e1).sum(0), (w * e1 * e1).sum(0)
    return np.stack([np.stack([s00, s01], -1), np.stack([s01, s11], -1)], axis=1)


@dataclass(frozen=True)
class CrossFitted:
    """Two shape models fitted on two halves of the sessions (see :func:`fit_model`).

    Attributes
    ----------
    models : tuple of ShapeModel
        Model 0 was fitted on ``folds[0]``, model 1 on ``folds[1]``; both carry the
        scale estimated from all out-of-fold residuals.
    folds : tuple of numpy.ndarray
        Row indices (into the rows given to :func:`fit_model`) of each half.
    n_scale : int
        Residuals the scale was estimated from (for the prediction threshold).
    """

    models: tuple[ShapeModel, ShapeModel]
    folds: tuple[np.ndarray, np.ndarray]
    n_scale: int

    def model_for(self, n: int) -> np.ndarray:
        """Per row of the n rows given to :func:`fit_model`: the index of the model that
        did not see it (model 0 for rows in neither half)."""
        which = np.zeros(n, dtype=np.int64)
        which[self.folds[0]] = 1
        return which


def fit_model(z: np.ndarray, *, seed: int = 0) -> CrossFitted:
    """Fit the robust shape model to rows ``z`` (n, 2p), no NaN (impute first), cross-fitted.

    The sessions (at most 2 × :data:`FIT_SESSIONS`, a fixed random subset by ``seed``) are
    split in two halves; a model is fitted on each, and the scale of each landmark's
    residuals is estimated from the residuals of each half under the *other* half's model.
    A session is then scored by a model that has not seen it: in-sample residuals are
    smaller than those of new sessions, and a scale read from them flags too many (in a
    small cohort, every session is in the fit).
    """
    n = len(z)
    order = np.random.default_rng(seed).permutation(n)
    half = min(n // 2, FIT_SESSIONS)
    folds = (np.sort(order[:half]), np.sort(order[half : 2 * half]))
    data = [np.asarray(z[f], dtype=np.float64) for f in folds]
    models = [_fit_cleaned(d) for d in data]
    e = np.concatenate([models[1].residuals(data[0])[0], models[0].residuals(data[1])[0]])
    scatter_inv = np.linalg.inv(_mcd_scatter(e, 0.5 * (models[0].block_inv + models[1].block_inv)))
    return CrossFitted(
        models=(
            replace(models[0], scatter_inv=scatter_inv),
            replace(models[1], scatter_inv=scatter_inv),
        ),
        folds=folds,
        n_scale=len(e),
    )


def threshold(alpha: float, m: int, n_scale: int) -> float:
    """The d² a landmark must exceed to be a suspect: the 1 − α/m prediction bound of a
    2-D normal whose scatter was estimated from ``n_scale`` residuals,
    ``2 (n − 1)(n + 1) / (n (n − 2)) · F(2, n − 2)`` (Hotelling's T² for a new observation;
    → the χ²₂ quantile as n grows)."""
    from scipy.stats import f

    n = max(int(n_scale), 4)
    q = 1.0 - alpha / max(m, 1)
    return float(2.0 * (n - 1) * (n + 1) / (n * (n - 2)) * f.ppf(q, 2, n - 2))


def _fit_cleaned(z: np.ndarray) -> ShapeModel:
    """The low-rank-plus-diagonal model of rows z after cellwise cleaning (see above)."""
    n, q = z.shape
    p = q // 2
    clean = z.copy()
    # start: cells far from the coordinatewise median are set to it
    med = np.median(clean, axis=0)
    dev = np.hypot(*(clean - med).reshape(n, p, 2).transpose(2, 0, 1))  # (n, p)
    scale = np.median(dev, axis=0) / np.sqrt(2 * np.log(2))  # Rayleigh median → σ
    far = dev > np.sqrt(CLEAN_D2) * np.maximum(scale, 1e-12)
    cells = clean.reshape(n, p, 2)
    cells[far] = med.reshape(p, 2)[np.nonzero(far)[1]]
    for _ in range(ROUNDS):
        model = _model_of(clean)
        e, d2 = model.residuals(clean)
        far = d2 > CLEAN_D2
        cells = clean.reshape(n, p, 2)
        cells[far] -= e[far]
    return _model_of(clean)


def _model_of(z: np.ndarray) -> ShapeModel:
    """The model of rows z, its residual scale provisionally the model's own (Λ_jj⁻¹)."""
    mean, psi, w, core, k = _fit_once(z)
    block_inv = _block_inverse(psi, w, core)
    return ShapeModel(mean, psi, w, core, block_inv, np.linalg.inv(block_inv), k, len(z))
