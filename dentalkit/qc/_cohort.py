"""The cohort check of ``qc.landmarks``: superimpose, fit the shape model, name suspects.

Suspects are named one at a time (the largest score over its threshold first; the session
is then scored again with that landmark replaced by its prediction from the others), so
that one landmark on the wrong structure does not make its neighbours suspect as well: a
landmark's prediction uses the others, and a displaced neighbour moves it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from dentalkit.qc._gpa import superimpose_inplace
from dentalkit.qc._model import ShapeModel, fit_model, threshold

__all__ = ["MAX_SUSPECTS", "CohortScores", "score_cohort"]

#: Suspects named per session at most.
MAX_SUSPECTS = 5
#: Sessions scored per block: temporaries stay a few MB (reused by the allocator; fresh
#: large arrays cost page faults).
BLOCK = 4096


@dataclass
class CohortScores:
    """Per-session outcome of the cohort check (indices are columns of the model's ``z``)."""

    score: np.ndarray  # largest standardised residual of a tested landmark
    threshold: float
    flagged: np.ndarray  # a tested landmark is a suspect
    suspects: np.ndarray  # (sessions, MAX_SUSPECTS) landmark indices, −1 = none
    displacement: np.ndarray  # first suspect's distance from its prediction (input units)
    distance: np.ndarray  # Procrustes distance from the consensus
    components: int
    extra: dict = field(default_factory=dict)


def score_cohort(
    z: np.ndarray, checkable: np.ndarray, tested: np.ndarray, alpha: float
) -> CohortScores:
    """Run the cohort check on configurations ``z`` (n, p) complex, overwriting ``z``.

    ``tested`` marks the landmarks the selected measures use (threshold at 1 − α/m over
    the m tested; the others at 1 − α/p, listed but not flagging).
    """
    n, p = z.shape
    z[~checkable] = np.nan
    sup = superimpose_inplace(z)
    s_idx, p_idx = np.nonzero(np.isnan(z))
    absent = np.zeros((n, p), bool)
    absent[s_idx, p_idx] = True
    z[s_idx, p_idx] = np.nan_to_num(sup.consensus)[p_idx]  # a start; imputed when scored
    x = z.view(z.real.dtype)  # (n, 2p): x0, y0, x1, y1, … (no copy)
    rows = np.flatnonzero(checkable)
    fitted = fit_model(x if len(rows) == n else x[rows])
    which = np.zeros(n, dtype=np.int64)  # the model that did not see each session
    which[rows] = fitted.model_for(len(rows))
    m_tested = max(int(tested.sum()), 1)
    t_tested = threshold(alpha, m_tested, fitted.n_scale)
    thr = np.where(tested, t_tested, threshold(alpha, p, fitted.n_scale))
    out = CohortScores(
        score=np.full(n, np.nan),
        threshold=float(np.sqrt(t_tested)),
        flagged=np.zeros(n, bool),
        suspects=np.full((n, MAX_SUSPECTS), -1, dtype=np.int64),
        displacement=np.full(n, np.nan),
        distance=sup.distance,
        components=fitted.models[0].components,
    )
    for k, model in enumerate(fitted.models):
        mine = np.flatnonzero(which == k)
        if len(mine) == n:  # every session: contiguous blocks, no gather
            mine = slice(None)
        single = model.single() if z.dtype == np.complex64 else model
        idx = np.arange(n)[mine]
        for start in range(0, len(idx), BLOCK):
            block = idx[start : start + BLOCK]
            sl = slice(block[0], block[-1] + 1) if isinstance(mine, slice) else block
            _score_block(single, x[sl], ~absent[sl], thr, tested, out, sl)
    out.displacement *= sup.centroid_size
    return out


def _score_block(
    model: ShapeModel,
    x: np.ndarray,
    present: np.ndarray,
    thr: np.ndarray,
    tested: np.ndarray,
    out: CohortScores,
    block: slice | np.ndarray,
) -> None:
    """Score one block of sessions and name suspects by peeling (fills ``out``)."""
    x = _impute(model, x.astype(model.mean.dtype, copy=True), present)
    n, p = present.shape
    d2 = model.scores(x)  # residuals themselves only for the sessions over a threshold
    d2[~present] = 0.0
    judged = d2.copy()  # the d² each landmark is judged by: when peeled, or at the end
    peeled = np.zeros((n, p), bool)
    suspects = np.full((n, MAX_SUSPECTS), -1, dtype=np.int64)
    shift = np.full(n, np.nan)
    active = np.flatnonzero((d2 / thr).max(axis=1) > 1) if p else np.zeros(0, np.int64)
    e = model.residuals(x[active])[0]  # (len(active), p, 2)
    for k in range(MAX_SUSPECTS):
        ratio = np.where(peeled[active], 0.0, d2[active] / thr)
        j = ratio.argmax(axis=1) if len(active) else np.zeros(0, np.int64)
        over = ratio[np.arange(len(active)), j] > 1
        active, j, e = active[over], j[over], e[over]
        if not len(active):
            break
        here = np.arange(len(active))
        suspects[active, k] = j
        judged[active, j] = d2[active, j]
        peeled[active, j] = True
        if k == 0:
            shift[active] = np.abs(e[here, j, 0] + 1j * e[here, j, 1])
        cells = x[active].reshape(len(active), p, 2)
        cells[here, j] -= e[here, j]
        x[active] = cells.reshape(len(active), -1)
        e, new = model.residuals(x[active])
        d2[active] = np.where(present[active] & ~peeled[active], new, 0.0)
    judged = np.where(peeled, judged, d2)
    worst = np.where(tested[None, :], judged, 0.0).max(axis=1) if p else np.zeros(n)
    out.score[block] = np.sqrt(worst)
    left = ((d2 / thr > 1) & tested[None, :] & ~peeled).any(axis=1)  # past MAX_SUSPECTS
    out.flagged[block] = (peeled & tested[None, :]).any(axis=1) | left
    out.suspects[block] = suspects
    out.displacement[block] = shift


def _impute(model: ShapeModel, x: np.ndarray, present: np.ndarray) -> np.ndarray:
    """Absent landmarks replaced by their prediction from the others (two passes)."""
    rows = np.flatnonzero(~present.all(axis=1))
    if not len(rows):
        return x
    sub = x[rows]
    gone = ~present[rows]
    for _ in range(2):
        e, _ = model.residuals(sub)
        cells = sub.reshape(len(rows), -1, 2)
        cells[gone] -= e[gone]
    x[rows] = sub
    return x
