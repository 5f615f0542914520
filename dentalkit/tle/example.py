"""A small synthetic patient table in the shape :func:`~dentalkit.tle.encode` expects.

For demos, documentation and tests only. The proportions below are **illustrative
choices**, not estimates from any study; do not use the table to say anything about
real patients.

Every column, sex and age included, is drawn here, independently of any other record. To
ask ``/tle`` about patients who exist elsewhere too, such as sandbox patients whose anatomy
was simulated for a sex and birth date, take sex and age from that record
(``dentalkit demo`` does so with :func:`dentalkit.study.tle_inputs`), or each output would
give a patient its own sex and age.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

__all__ = ["example_patients"]


def example_patients(n: int = 50, seed: int = 0) -> pd.DataFrame:
    """A reproducible synthetic cohort of typed orthodontic patient records.

    Parameters
    ----------
    n : int
        Number of patients (``DEMO-001`` …).
    seed : int
        Seed of ``numpy.random.default_rng``; the same ``(n, seed)`` gives the same table.

    Returns
    -------
    pandas.DataFrame
        ``patient_id`` and the default codebook's columns: ``age_years`` (float, 10–45,
        mostly adolescents), ``sex`` (female/male), ``malocclusion_class`` (I, II/1, II/2,
        III), ``crowding`` and ``spacing`` (none/mild/moderate/severe), ``overjet_mm`` and
        ``overbite_mm`` (0.1 mm, tied loosely to the class), ``crossbite``, ``open_bite``,
        ``extraction`` (bool) and ``difficulty_score`` (0–10, 0.1 steps). Every value is
        valid under the shipped codebook. Sex and age are drawn, not read from any
        patient record (see the module notes); so are the class and the occlusal
        columns, not from any anatomy (the sandbox's included: analyses of its images'
        measures by ``malocclusion_class`` show no effect).

    Examples
    --------
    >>> t = example_patients(5)
    >>> t.shape, t["patient_id"].iloc[0]
    ((5, 12), 'DEMO-001')
    """
    if n < 1:
        raise ValueError(f"n must be at least 1, got {n}")
    rng = np.random.default_rng(seed)
    adult = rng.random(n) < 0.25
    age = np.where(adult, rng.uniform(18, 45, n), rng.uniform(10, 17.99, n)).round(2)
    klass = rng.choice(["I", "II/1", "II/2", "III"], n, p=[0.45, 0.3, 0.1, 0.15])
    overjet_mean = pd.Series(klass).map({"I": 2.5, "II/1": 6.5, "II/2": 3.0, "III": -1.0})
    overbite_mean = pd.Series(klass).map({"I": 2.5, "II/1": 3.5, "II/2": 5.5, "III": 1.0})
    overjet = np.clip(rng.normal(overjet_mean, 1.5), -8, 14).round(1)
    overbite = np.clip(rng.normal(overbite_mean, 1.8), -6, 10).round(1)
    severity = ["none", "mild", "moderate", "severe"]
    crowding = rng.choice(severity, n, p=[0.25, 0.35, 0.25, 0.15])
    spacing = np.where(
        crowding == "none", rng.choice(severity, n, p=[0.5, 0.3, 0.15, 0.05]), "none"
    )
    difficulty = np.clip(
        rng.normal(4 + 0.8 * pd.Series(crowding).map(severity.index).to_numpy(), 1.5), 0, 10
    ).round(1)
    return pd.DataFrame(
        {
            "patient_id": pd.Series([f"DEMO-{i + 1:03d}" for i in range(n)], dtype="str"),
            "age_years": age,
            "sex": pd.Categorical(rng.choice(["female", "male"], n, p=[0.6, 0.4])),
            "malocclusion_class": pd.Categorical(klass, categories=["I", "II/1", "II/2", "III"]),
            "crowding": pd.Categorical(crowding, categories=severity),
            "spacing": pd.Categorical(spacing, categories=severity),
            "overjet_mm": overjet,
            "overbite_mm": overbite,
            "crossbite": rng.random(n) < 0.15,
            "open_bite": overbite < 0,
            "extraction": (crowding == "severe") | (rng.random(n) < 0.1),
            "difficulty_score": difficulty,
        }
    )
