"""Patient- and session-level draws of the sandbox simulator (private).

A *patient* (everything seeded by ``PatientID`` alone) has a sex, a birth date,
a baseline age, a skeletal class, cephalometric parameters at the baseline age
with individual growth, tooth sizes, a missing-teeth pattern, arch-form targets,
frontal widths and asymmetry, finding prevalences and a TMJ condition. A
*session* (``PatientID`` + ``TimeStamp``) is the patient at one age: linear
dimensions grow, the mandible rotates forward a little (see ``docs/sandbox.md``).

Nothing here imports an analysis or converter module.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta
from functools import lru_cache
from types import MappingProxyType
from typing import Any

import numpy as np

from dentalkit.sandbox._rng import REFERENCE_DATE, age_at, generator, parse_timestamp

__all__ = [
    "ARCHES",
    "SIDES",
    "TOOTH_KEYS",
    "TOOTH_TYPES",
    "Patient",
    "Session",
    "patient",
    "session",
]

TOOTH_TYPES = ("i1", "i2", "c", "p1", "p2", "m1", "m2", "m3")
SIDES = ("rgt", "lft")
ARCHES = ("up", "lo")
#: Every tooth key the sandbox emits, ``{type}_{side}_{arch}``.
TOOTH_KEYS = tuple(f"{t}_{s}_{a}" for a in ARCHES for s in SIDES for t in TOOTH_TYPES)

#: Mean crown sizes in mm (mesiodistal MD, buccolingual BL), total tooth length
#: (crown + root) and clinical crown height, by arch and type. Textbook values
#: (Wheeler's dental anatomy tables; Moyers) rounded to 0.5 mm.
TOOTH_SIZE_MM: dict[str, dict[str, tuple[float, float, float, float]]] = {
    #        MD    BL   length crown
    "up": {
        "i1": (8.5, 7.0, 23.5, 10.5),
        "i2": (6.5, 6.0, 22.0, 9.0),
        "c": (7.5, 8.0, 27.0, 10.0),
        "p1": (7.0, 9.0, 22.5, 8.5),
        "p2": (6.5, 9.0, 22.5, 8.5),
        "m1": (10.0, 11.0, 20.5, 7.5),
        "m2": (9.0, 11.0, 20.0, 7.0),
        "m3": (8.5, 10.0, 17.5, 6.5),
    },
    "lo": {
        "i1": (5.0, 6.0, 21.5, 9.0),
        "i2": (5.5, 6.0, 23.5, 9.5),
        "c": (7.0, 7.5, 27.0, 11.0),
        "p1": (7.0, 7.5, 22.5, 8.5),
        "p2": (7.0, 8.0, 22.5, 8.0),
        "m1": (11.0, 10.5, 21.0, 7.5),
        "m2": (10.5, 10.0, 19.5, 7.0),
        "m3": (10.0, 9.5, 18.0, 6.5),
    },
}

#: Per-tooth probability of being absent (agenesis or extraction), by type.
#: Third molars: ~22 % each (a patient-level propensity makes absences cluster);
#: i2 and p2 agenesis a few per cent; other teeth rarely missing (extractions).
MISSING_PROBABILITY = {
    "i1": 0.004,
    "i2": 0.02,
    "c": 0.004,
    "p1": 0.01,
    "p2": 0.03,
    "m1": 0.01,
    "m2": 0.006,
    "m3": 0.22,
}

#: Clinical finding classes of the intra-oral photographs: (mean count per photo
#: in the cohort, fraction of patients with the class at all).
CLINICAL_CLASSES: dict[str, tuple[float, float]] = {
    "decay": (1.2, 0.45),
    "restoration": (1.5, 0.50),
    "bracket": (9.0, 0.25),
    "white_spot_lesion": (1.5, 0.20),
    "gingivitis": (1.0, 0.30),
    "calculus": (1.0, 0.25),
}
#: Panoramic finding classes: (mean count per image when present, fraction of patients).
PANO_CLASSES: dict[str, tuple[float, float]] = {
    "caries": (1.5, 0.25),
    "restoration": (2.0, 0.25),
    "root_canal_treatment": (1.0, 0.08),
    "periapical_lesion": (1.0, 0.06),
    "impacted_tooth": (1.2, 0.10),
}

#: TMJ conditions a condyle may show, with the cohort probability per condyle.
TMJ_CONDITIONS: dict[str, float] = {"flattening": 0.10, "erosion": 0.05, "osteophyte": 0.04}


def _derived(c: dict[str, float]) -> dict[str, float]:
    """SNA, SNB and N–Me implied by the mandibular chain (see ``_anatomy_ceph``)."""
    from dentalkit.sandbox._anatomy_ceph import mandible_chain  # local: avoids a cycle

    k = mandible_chain(c)
    return {"SNA": k["SNA"], "SNB": k["SNB"], "N_Me": k["N_Me"]}


def _grow(value: float, rate: float, age: float, base_age: float, stop: float) -> float:
    """Linear growth ``rate``/year between the clipped ages (ages clipped to [6, stop])."""
    a = min(max(age, 6.0), stop)
    b = min(max(base_age, 6.0), stop)
    return value + rate * (a - b)


@dataclass(frozen=True)
class Patient:
    """Everything the simulator draws from ``PatientID`` alone."""

    patient_id: str
    sex: str
    baseline_age: float
    birth_date: date
    skeletal_class: str
    growth_stop: float
    ceph: MappingProxyType  # baseline parameters (deg, mm, ratios)
    rates: MappingProxyType  # growth per year
    teeth: MappingProxyType  # tooth key -> (md, bl, length, crown) in mm
    missing: frozenset[str]
    arch: MappingProxyType  # intermolar targets and arch extras
    frontal: MappingProxyType  # PA widths at baseline, deviations, cants
    clinical_rates: MappingProxyType  # class -> mean count per photo (0 = never)
    pano_rates: MappingProxyType
    pano_empty: float  # probability that a pano shows nothing
    tmj: MappingProxyType  # side -> tuple of conditions
    extra: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    def summary(self) -> dict[str, Any]:
        """JSON-serialisable patient section of the ground truth."""
        return {
            "patient_id": self.patient_id,
            "sex": self.sex,
            "birth_date": self.birth_date.isoformat(),
            "baseline_age_years": self.baseline_age,
            "reference_date": REFERENCE_DATE.isoformat(),
            "skeletal_class": self.skeletal_class,
            "growth_stop_age_years": self.growth_stop,
            "missing_teeth": sorted(self.missing, key=TOOTH_KEYS.index),
            "tmj": {side: list(c) for side, c in self.tmj.items()},
        }


@lru_cache(maxsize=16384)
def patient(patient_id: str) -> Patient:
    """Draw (once, cached) the patient-level parameters of ``patient_id``."""
    rng = generator("patient", patient_id)
    sex = "F" if rng.random() < 0.5 else "M"
    male = sex == "M"
    baseline_age = float(round(rng.uniform(8.0, 16.0), 3))
    birth = REFERENCE_DATE - timedelta(days=round(baseline_age * 365.25))
    # recompute the baseline age from the whole-day birth date so that age_at() agrees
    baseline_age = (REFERENCE_DATE - birth).days / 365.25
    growth_stop = 15.5 if not male else 17.5
    skeletal_class = str(rng.choice(["I", "II", "III"], p=[0.55, 0.35, 0.10]))

    z = iter(rng.standard_normal(160).tolist())

    def n(mean: float, sd: float, lo: float, hi: float) -> float:
        """A normal draw, clipped to the plausible range [lo, hi]."""
        return min(max(mean + sd * next(z), lo), hi)

    # Sizes are drawn at age 12 and moved to the baseline age with the mean rates.
    rates = {
        "S_N": 0.6 if not male else 0.9,
        "Ar_Go": 1.0 if not male else 1.5,
        "Go_Me": 1.3 if not male else 2.0,
        "ANB": -0.1,
        "gonial_angle": -0.3,
        "S_Ar": 0.4 if not male else 0.6,
        "S_Ba": 0.4 if not male else 0.6,
        "ANS_PNS": 0.5 if not male else 0.8,
        "SN_MP": -0.25,
        "nose": 0.5 if not male else 0.7,
        # frontal (Ricketts: yearly growth of the PA widths)
        "NC": 0.7,
        "J": 0.6,
        "Ag": 1.4,
        "ZA": 1.0,
        "U6": 0.2,
        "Co": 0.8,
        "Ma": 0.8,
        "O": 0.5,
    }

    def at_base(mean12: float, key: str, sd: float) -> float:
        return _grow(mean12, rates[key], baseline_age, 12.0, growth_stop) + sd * next(z)

    if skeletal_class == "I":
        anb = n(2.5, 1.2, 0.5, 4.0)
    elif skeletal_class == "II":
        anb = n(6.0, 1.5, 4.2, 10.0)
    else:
        anb = n(-2.0, 1.5, -6.0, -0.3)
    ceph = {
        "ANB": anb,
        "FH_SN": n(7.0, 2.5, 2.0, 12.0),
        "SN_MP": n(33.0, 5.0, 22.0, 45.0),
        "saddle_angle": n(123.0, 4.0, 112.0, 134.0),
        "S_N": at_base(67.0 if not male else 69.5, "S_N", 2.8),
        "Ar_Go": at_base(42.0 if not male else 44.0, "Ar_Go", 3.0),
        "Go_Me": at_base(66.0 if not male else 68.0, "Go_Me", 3.0)
        + {"I": 0.0, "II": -3.5, "III": 4.5}[skeletal_class],
        "S_Ar": at_base(33.0 if not male else 34.5, "S_Ar", 2.5),
        "S_Ba": at_base(41.0 if not male else 43.0, "S_Ba", 2.5),
        "ANS_PNS": at_base(48.0 if not male else 50.0, "ANS_PNS", 2.5),
        "N_ANS_ratio": n(0.445, 0.018, 0.40, 0.49),
        "NSBa": n(130.0, 4.0, 120.0, 140.0),
        "SN_PP": n(8.0, 2.5, 2.0, 14.0),
        "SN_OP": n(15.0, 3.5, 6.0, 24.0),
        "ANS_angle": n(4.0, 1.2, 1.5, 7.0),
        "A_below_ANS": n(6.0, 1.2, 3.5, 9.0),
        "B_ratio": n(0.79, 0.012, 0.75, 0.83),
        "Pog_ratio": n(0.90, 0.010, 0.87, 0.93),
        "Pog_angle": n(1.5, 0.8, -0.5, 3.5),
        "Me_angle": n(3.5, 1.0, 1.0, 6.0),
        "IMPA": n(93.0 + 1.0 * (anb - 2.5), 5.5, 78.0, 110.0),
        "U1_SN": n(103.0 + (0.0 if skeletal_class != "III" else 3.0), 6.0, 88.0, 118.0),
        "U1_dx": n(4.5 - 0.25 * (anb - 2.5), 1.0, 1.5, 8.0),
        "U1_dy_ratio": n(0.33, 0.015, 0.29, 0.37),
        "L1_dx": n(5.0 + 0.45 * (anb - 2.5), 1.0, 1.5, 10.0),
        "overbite": n(
            2.5
            + (1.0 if skeletal_class == "II" else 0.0)
            - (1.0 if skeletal_class == "III" else 0.0),
            1.5,
            -3.0,
            6.5,
        ),
        "U1_length": n(23.5, 1.2, 20.0, 27.0),
        "L1_length": n(21.5, 1.1, 18.5, 24.5),
        "molar_relation": n(2.5 - 0.8 * (anb - 2.5), 0.8, -6.0, 8.0),
        "U6_distance": n(26.0, 1.5, 22.0, 30.0),
        "U4_distance": n(12.5, 1.0, 10.0, 15.0),
        "FH_depth": n(19.0, 2.0, 14.0, 24.0),
        "Or_back": n(9.0, 1.5, 5.0, 13.0),
        "Po_back": n(10.0, 1.5, 6.0, 14.0),
        "soft_N": n(6.5, 1.0, 4.0, 9.0),
        "soft_A": n(14.0, 1.5, 10.0, 18.0),
        "soft_Ls": n(13.0, 1.5, 9.0, 17.0),
        "soft_Li": n(14.0, 1.5, 10.0, 18.0),
        "soft_B": n(11.5, 1.3, 8.0, 15.0),
        "soft_Pog": n(12.0, 1.5, 8.0, 16.0),
        "soft_Me": n(7.5, 1.0, 5.0, 10.0),
        "nose": at_base(27.0 if not male else 28.5, "nose", 2.5),
        "lip_gap": n(0.5 + (1.5 if skeletal_class == "II" else 0.0), 0.8, 0.0, 5.0),
    }
    # The gonial angle goes with the mandibular plane angle (high-angle faces have
    # obtuse gonial angles).
    ceph["gonial_angle"] = n(128.0 + 0.6 * (ceph["SN_MP"] - 33.0), 4.5, 114.0, 144.0)
    ceph.update(_derived(ceph))

    # Teeth: a patient-level size factor, near-symmetric left/right.
    size_factor = 1.0 + 0.035 * next(z)
    teeth: dict[str, tuple[float, float, float, float]] = {}
    sd_type = np.array([0.3, 0.3, 1.0, 0.5])  # md, bl, length, crown
    sd_side = np.array([0.08, 0.08, 0.2, 0.1])
    z_type = rng.standard_normal((len(ARCHES), len(TOOTH_TYPES), 4)) * sd_type
    z_side = rng.standard_normal((len(ARCHES), len(TOOTH_TYPES), len(SIDES), 4)) * sd_side
    for ia, arch in enumerate(ARCHES):
        for it, t in enumerate(TOOTH_TYPES):
            mean = np.array(TOOTH_SIZE_MM[arch][t]) * size_factor + z_type[ia, it]
            for js, side in enumerate(SIDES):
                teeth[f"{t}_{side}_{arch}"] = tuple(np.round(mean + z_side[ia, it, js], 4).tolist())
    m3_propensity = rng.random() < 0.35  # patients prone to third-molar absence
    missing = set()
    u = rng.random(len(TOOTH_KEYS))
    for key, ui in zip(TOOTH_KEYS, u, strict=True):
        t = key.split("_")[0]
        p = MISSING_PROBABILITY[t]
        if t == "m3":
            p = 0.55 if m3_propensity else 0.04
        if ui < p:
            missing.add(key)
    # agenesis of i2 / p2 is usually bilateral
    for t in ("i2", "p2"):
        for arch in ARCHES:
            keys = [f"{t}_{s}_{arch}" for s in SIDES]
            if any(k in missing for k in keys) and rng.random() < 0.6:
                missing.update(keys)

    w_up = n(47.0, 2.5, 40.0, 54.0) * size_factor
    arch = {
        "intermolar_up": w_up,
        "intermolar_lo": w_up - n(5.0, 1.0, 2.5, 8.0),
    }

    sm = 0.0 if rng.random() < 0.5 else 1.0  # half of the patients have a visible shift
    frontal = {
        "NC": at_base(25.0 + 0.7 * 3, "NC", 1.5),
        "J": at_base(61.9 + 0.6 * 3, "J", 2.5),
        "Ag": at_base(76.1 + 1.4 * 3, "Ag", 3.5),
        "ZA": at_base(116.0 if not male else 119.0, "ZA", 4.0),
        "U6": at_base(54.0 + 0.2 * 3, "U6", 2.0),
        "L6_diff": n(3.0, 0.8, 1.0, 5.0),
        "Co": at_base(98.0 if not male else 101.0, "Co", 3.0),
        "Ma": at_base(96.0 if not male else 100.0, "Ma", 3.0),
        "O": at_base(64.0, "O", 2.5),
        "Z": at_base(92.0, "O", 3.0),
        "Cg_ANS_extra": n(9.0, 1.5, 5.0, 13.0),
        "mand_shift": n(0.0, 1.4, -4.0, 4.0) * sm,
        "max_shift": n(0.0, 0.6, -2.0, 2.0),
        "udm_dev": n(0.0, 0.8, -3.0, 3.0),
        "ldm_extra": n(0.0, 0.8, -3.0, 3.0),
        "mand_cant": n(0.0, 1.5, -5.0, 5.0),
        "max_cant": n(0.0, 0.8, -3.0, 3.0),
    }

    def prevalence(classes: dict[str, tuple[float, float]]) -> dict[str, float]:
        out = {}
        for name, (mean, frac) in classes.items():
            has = rng.random() < frac
            out[name] = float(mean / frac * rng.uniform(0.5, 1.5)) if has else 0.0
        return out

    clinical_rates = prevalence(CLINICAL_CLASSES)
    pano_rates = prevalence(PANO_CLASSES)
    pano_empty = float(rng.uniform(0.3, 0.8))
    tmj: dict[str, tuple[str, ...]] = {}
    for side in ("right", "left"):
        found = tuple(c for c, p in TMJ_CONDITIONS.items() if rng.random() < p)
        tmj[side] = found

    return Patient(
        patient_id=patient_id,
        sex=sex,
        baseline_age=baseline_age,
        birth_date=birth,
        skeletal_class=skeletal_class,
        growth_stop=growth_stop,
        ceph=MappingProxyType(ceph),
        rates=MappingProxyType(rates),
        teeth=MappingProxyType(teeth),
        missing=frozenset(missing),
        arch=MappingProxyType(arch),
        frontal=MappingProxyType(frontal),
        clinical_rates=MappingProxyType(clinical_rates),
        pano_rates=MappingProxyType(pano_rates),
        pano_empty=pano_empty,
        tmj=MappingProxyType(tmj),
    )


@dataclass(frozen=True)
class Session:
    """A patient at the age of one session (``PatientID`` + ``TimeStamp``)."""

    patient: Patient
    timestamp: str
    when: datetime | None
    age: float
    ceph: MappingProxyType  # parameters at this age
    frontal: MappingProxyType

    def summary(self) -> dict[str, Any]:
        return {
            "timestamp": self.timestamp,
            "parsed_time": self.when.isoformat() if self.when else None,
            "age_years": self.age,
            "age_rule": (
                "age = (TimeStamp − birth date) in Julian years"
                if self.when
                else "TimeStamp is not ISO 8601: baseline age used"
            ),
        }


@lru_cache(maxsize=16384)
def session(patient_id: str, timestamp: str) -> Session:
    """The patient ``patient_id`` at the session ``timestamp`` (cached)."""
    p = patient(patient_id)
    when = parse_timestamp(timestamp)
    age = age_at(p.birth_date, when, p.baseline_age)
    stop = p.growth_stop
    base = p.baseline_age
    c = dict(p.ceph)
    r = p.rates
    for key in (
        "S_N",
        "Ar_Go",
        "Go_Me",
        "S_Ar",
        "S_Ba",
        "ANS_PNS",
        "nose",
        "SN_MP",
        "ANB",
        "gonial_angle",
    ):
        c[key] = _grow(c[key], r[key], age, base, stop)
    c.update(_derived(c))
    f = dict(p.frontal)
    for key in ("NC", "J", "Ag", "ZA", "U6", "Co", "Ma", "O"):
        f[key] = _grow(f[key], r[key], age, base, stop)
    f["Z"] = _grow(f["Z"], r["O"], age, base, stop)
    f["Cg_ANS"] = c["N_Me"] * c["N_ANS_ratio"] + f["Cg_ANS_extra"]
    return Session(
        patient=p,
        timestamp=timestamp,
        when=when,
        age=float(age),
        ceph=MappingProxyType(c),
        frontal=MappingProxyType(f),
    )
