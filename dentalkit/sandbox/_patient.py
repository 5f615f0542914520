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
from functools import cached_property, lru_cache
from types import MappingProxyType
from typing import Any, NamedTuple

import numpy as np

from dentalkit.sandbox._rng import (
    PATIENT_CACHE,
    REFERENCE_DATE,
    SESSION_CACHE,
    age_at,
    generator,
    parse_timestamp,
)

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


def _chain(c: dict[str, float]) -> dict[str, Any]:
    """The mandibular chain of the parameters ``c`` (see ``_anatomy_ceph.mandible_chain``)."""
    from dentalkit.sandbox._anatomy_ceph import mandible_chain  # local: avoids a cycle

    return mandible_chain(c)


def _derived(k: dict[str, Any]) -> dict[str, float]:
    """SNA, SNB and N–Me implied by the mandibular chain ``k``."""
    return {"SNA": k["SNA"], "SNB": k["SNB"], "N_Me": k["N_Me"]}


class _Draws(NamedTuple):
    """The raw stream of a patient's generator, kept for the parts computed on first use."""

    rows: list[float]  # the values of _ROWS (clipped, ANB and gonial angle final)
    size_factor: float
    tooth_normals: np.ndarray  # 64 by type, then 128 by side
    uniforms: list[float]


class _Later(NamedTuple):
    teeth: MappingProxyType
    missing: frozenset[str]
    frontal: MappingProxyType
    clinical_rates: MappingProxyType
    pano_rates: MappingProxyType
    pano_empty: float
    tmj: MappingProxyType


@dataclass(frozen=True)
class Patient:
    """Everything the simulator draws from ``PatientID`` alone.

    The cephalometric part is computed at once; teeth, missing teeth, frontal
    widths, finding rates and TMJ conditions on first use (a lateral ceph needs
    none of them), from the same drawn stream, so they never depend on what was
    asked first.
    """

    patient_id: str
    sex: str
    baseline_age: float
    birth_date: date
    skeletal_class: str
    growth_stop: float
    ceph: MappingProxyType  # drawn baseline parameters (deg, mm, ratios); SNA… per session
    rates: MappingProxyType  # growth per year
    arch: MappingProxyType  # intermolar targets and arch extras
    draws: _Draws = field(repr=False, compare=False)
    extra: MappingProxyType = field(default_factory=lambda: MappingProxyType({}))

    @cached_property
    def _later(self) -> _Later:
        return _later_draws(self.draws)

    @property
    def teeth(self) -> MappingProxyType:
        """Tooth key → (MD, BL, length, crown height) in mm."""
        return self._later.teeth

    @property
    def missing(self) -> frozenset[str]:
        """Keys of the missing teeth (the same in every source and session)."""
        return self._later.missing

    @property
    def frontal(self) -> MappingProxyType:
        """PA widths at the baseline age, midline deviations and cants."""
        return self._later.frontal

    @property
    def clinical_rates(self) -> MappingProxyType:
        """Clinical finding class → mean count per photo (0 = never)."""
        return self._later.clinical_rates

    @property
    def pano_rates(self) -> MappingProxyType:
        """Panoramic finding class → mean count per image (0 = never)."""
        return self._later.pano_rates

    @property
    def pano_empty(self) -> float:
        """Probability that a session's pano shows no finding."""
        return self._later.pano_empty

    @property
    def tmj(self) -> MappingProxyType:
        """Condyle side → tuple of TMJ conditions."""
        return self._later.tmj

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


# --- the patient draw as declared data ----------------------------------------------
#
# Every patient-level normal draw is one row below, in draw order: the row's value is
# ``clip(mean + sd·z, lo, hi)`` for the next standard normal z of the patient's stream.
# ``mean`` is a number, a (female, male) pair or a {skeletal class: mean} map; rows with a
# growth ``rate`` key are sizes drawn at age 12 and moved to the baseline age with the
# mean rate (unclipped). ``_ANB_SLOPE`` adds slope·(ANB − 2.5) to a mean (dento-alveolar
# compensation). Rows marked ``None`` are computed specially in :func:`patient`.

_INF = float("inf")
_Mean = float | tuple[float, float] | dict[str, float]
_ROWS: tuple[tuple[str, _Mean | None, float, float, float, str | None], ...] = (
    # name, mean, sd, lo, hi, growth-rate key
    ("ANB", None, 0.0, -_INF, _INF, None),  # by skeletal class, see _ANB
    ("FH_SN", 7.0, 2.5, 2.0, 12.0, None),
    ("SN_MP", 35.0, 5.0, 24.0, 47.0, None),
    ("saddle_angle", 123.0, 4.0, 112.0, 134.0, None),
    ("S_N", (67.0, 69.5), 2.8, -_INF, _INF, "S_N"),
    ("Ar_Go", (42.0, 44.0), 3.0, -_INF, _INF, "Ar_Go"),
    ("Go_Me", (66.0, 68.0), 3.0, -_INF, _INF, "Go_Me"),  # + _GO_ME_BY_CLASS after the draw
    ("S_Ar", (33.0, 34.5), 2.5, -_INF, _INF, "S_Ar"),
    ("S_Ba", (41.0, 43.0), 2.5, -_INF, _INF, "S_Ba"),
    ("ANS_PNS", (48.0, 50.0), 2.5, -_INF, _INF, "ANS_PNS"),
    ("N_ANS_ratio", 0.445, 0.018, 0.40, 0.49, None),
    ("NSBa", 130.0, 4.0, 120.0, 140.0, None),
    ("SN_PP", 8.0, 2.5, 2.0, 14.0, None),
    ("SN_OP", 15.0, 3.5, 6.0, 24.0, None),
    ("ANS_angle", 4.0, 1.2, 1.5, 7.0, None),
    ("A_below_ANS", 6.0, 1.2, 3.5, 9.0, None),
    ("B_ratio", 0.79, 0.012, 0.75, 0.83, None),
    ("Pog_ratio", 0.90, 0.010, 0.87, 0.93, None),
    ("Pog_angle", 1.5, 0.8, -0.5, 3.5, None),
    ("Me_angle", 3.5, 1.0, 1.0, 6.0, None),
    ("IMPA", 93.0, 5.5, 78.0, 110.0, None),
    ("U1_SN", {"I": 103.0, "II": 103.0, "III": 106.0}, 6.0, 88.0, 118.0, None),
    ("U1_dx", 4.5, 1.0, 1.5, 8.0, None),
    ("U1_dy_ratio", 0.33, 0.015, 0.29, 0.37, None),
    ("L1_dx", 5.0, 1.0, 1.5, 10.0, None),
    ("overbite", {"I": 2.5, "II": 3.5, "III": 1.5}, 1.5, -3.0, 6.5, None),
    ("U1_length", 23.5, 1.2, 20.0, 27.0, None),
    ("L1_length", 21.5, 1.1, 18.5, 24.5, None),
    ("molar_relation", 2.5, 0.8, -6.0, 8.0, None),
    ("U6_distance", 26.0, 1.5, 22.0, 30.0, None),
    ("U4_distance", 12.5, 1.0, 10.0, 15.0, None),
    ("FH_depth", 19.0, 2.0, 14.0, 24.0, None),
    ("Or_back", 9.0, 1.5, 5.0, 13.0, None),
    ("Po_back", 10.0, 1.5, 6.0, 14.0, None),
    ("soft_N", 6.5, 1.0, 4.0, 9.0, None),
    ("soft_A", 14.0, 1.5, 10.0, 18.0, None),
    ("soft_Ls", 13.0, 1.5, 9.0, 17.0, None),
    ("soft_Li", (14.0, 15.0), 1.5, 10.0, 19.0, None),
    ("soft_B", 11.5, 1.3, 8.0, 15.0, None),
    ("soft_Pog", 12.0, 1.5, 8.0, 16.0, None),
    ("soft_Me", 7.5, 1.0, 5.0, 10.0, None),
    ("nose", (27.0, 28.5), 2.5, -_INF, _INF, "nose"),
    ("lip_gap", {"I": 0.5, "II": 2.0, "III": 0.5}, 0.8, 0.0, 5.0, None),
    # high-angle faces have obtuse gonial angles: mean 128 + 0.6·(SN_MP − 33)
    ("gonial_angle", None, 4.5, 114.0, 144.0, None),
    ("size_factor", None, 0.035, -_INF, _INF, None),  # 1 + 0.035·z
    ("intermolar_up", 47.0, 2.5, 40.0, 54.0, None),  # × size factor
    ("intermolar_diff", 5.0, 1.0, 2.5, 8.0, None),  # lower = upper − diff
    # frontal (Ricketts: norms at age 9 plus three years of growth)
    ("NC", 25.0 + 0.7 * 3, 1.5, -_INF, _INF, "NC"),
    ("J", 61.9 + 0.6 * 3, 2.5, -_INF, _INF, "J"),
    ("Ag", 76.1 + 1.4 * 3, 3.5, -_INF, _INF, "Ag"),
    ("ZA", (116.0, 119.0), 4.0, -_INF, _INF, "ZA"),
    ("U6", 54.0 + 0.2 * 3, 2.0, -_INF, _INF, "U6"),
    ("L6_diff", 3.0, 0.8, 1.0, 5.0, None),
    ("Co", (98.0, 101.0), 3.0, -_INF, _INF, "Co"),
    ("Ma", (96.0, 100.0), 3.0, -_INF, _INF, "Ma"),
    ("O", 64.0, 2.5, -_INF, _INF, "O"),
    ("Z", 92.0, 3.0, -_INF, _INF, "O"),
    ("Cg_ANS_extra", 9.0, 1.5, 5.0, 13.0, None),
    ("mand_shift", 0.0, 1.4, -4.0, 4.0, None),  # × 0 for the half without a visible shift
    ("max_shift", 0.0, 0.6, -2.0, 2.0, None),
    ("udm_dev", 0.0, 0.8, -3.0, 3.0, None),
    ("ldm_extra", 0.0, 0.8, -3.0, 3.0, None),
    ("mand_cant", 0.0, 1.5, -5.0, 5.0, None),
    ("max_cant", 0.0, 0.8, -3.0, 3.0, None),
    # appended last, so every earlier row keeps its normal: Ricketts' lower facial height
    # ANS–Xi–Pm (47 ± 4°, constant with age); Xi is placed to give it (_anatomy_ceph)
    ("lower_facial_height", 47.0, 3.5, 38.0, 56.0, None),
)
#: ANB by skeletal class: (mean, sd, lo, hi).
_ANB = {"I": (2.5, 1.2, 0.5, 4.0), "II": (6.0, 1.5, 4.2, 10.0), "III": (-2.0, 1.5, -6.0, -0.3)}
_ANB_SLOPE = {"IMPA": 1.0, "U1_dx": -0.25, "L1_dx": 0.45, "molar_relation": -0.8}
_GO_ME_BY_CLASS = {"I": 0.0, "II": -3.5, "III": 4.5}
#: Skeletal class I / II / III: 55 % / 35 % / 10 % (cumulative, as numpy's choice builds it).
_CLASSES = ("I", "II", "III")
_CLASS_CDF = tuple((np.cumsum([0.55, 0.35, 0.10]) / np.cumsum([0.55, 0.35, 0.10])[-1]).tolist())
#: Growth per year (mm, deg; female / male) of the session parameters.
RATES: dict[str, MappingProxyType] = {
    sex: MappingProxyType(
        {
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
    )
    for sex, male in (("F", False), ("M", True))
}
_NAMES = tuple(r[0] for r in _ROWS)
_N_NORMALS = 160  # normals reserved for the rows (the unused rest keeps the stream layout)
_I = {name: i for i, name in enumerate(_NAMES)}
_CEPH_NAMES = _NAMES[: _I["gonial_angle"] + 1]
assert len(_ROWS) == 65
_FRONTAL_NAMES = _NAMES[_I["NC"] : _I["max_cant"] + 1]


def _row_arrays(sex: str, klass: str) -> tuple[np.ndarray, ...]:
    """(mean, ANB slope, growth rate, sd, lo, hi) arrays of the rows for one sex and class."""
    male = sex == "M"
    mean, slope, rate, sd, lo, hi = [], [], [], [], [], []
    for name, m, s, a, b, key in _ROWS:
        if isinstance(m, tuple):
            m = m[male]
        elif isinstance(m, dict):
            m = m[klass]
        mean.append(0.0 if m is None else m)
        slope.append(_ANB_SLOPE.get(name, 0.0))
        rate.append(RATES[sex][key] if key else 0.0)
        sd.append(s)
        lo.append(a)
        hi.append(b)
    return tuple(np.array(v) for v in (mean, slope, rate, sd, lo, hi))


_ROW_ARRAYS = {(sex, k): _row_arrays(sex, k) for sex in ("F", "M") for k in _CLASSES}

#: Tooth sizes: means (arch, type, 4), type and side SDs, the dict keys in draw order.
_SIZE_MEAN = np.array([[TOOTH_SIZE_MM[a][t] for t in TOOTH_TYPES] for a in ARCHES])
_SD_TYPE = np.array([0.3, 0.3, 1.0, 0.5])  # md, bl, length, crown
_SD_SIDE = np.array([0.08, 0.08, 0.2, 0.1])
_SIZE_KEYS = tuple(f"{t}_{s}_{a}" for a in ARCHES for t in TOOTH_TYPES for s in SIDES)
#: Missing-tooth probability per key of TOOTH_KEYS, without / with third-molar propensity.
_P_MISSING = {
    prone: tuple(
        (0.55 if prone else 0.04) if k.startswith("m3") else MISSING_PROBABILITY[k.split("_")[0]]
        for k in TOOTH_KEYS
    )
    for prone in (False, True)
}
_BILATERAL = tuple(
    (f"{t}_rgt_{a}", f"{t}_lft_{a}") for t in ("i2", "p2") for a in ARCHES
)  # agenesis of i2 / p2 is usually bilateral
#: Uniforms consumed after the normals, at most: m3 propensity, 32 teeth, 4 bilateral
#: checks, the shift flag, 2 per finding class, the pano-empty chance, 6 TMJ checks.
_N_UNIFORMS = 1 + len(TOOTH_KEYS) + 4 + 1 + 2 * (len(CLINICAL_CLASSES) + len(PANO_CLASSES)) + 1 + 6


@lru_cache(maxsize=PATIENT_CACHE)
def patient(patient_id: str) -> Patient:
    """Draw (once, cached) the patient-level parameters of ``patient_id``.

    The stream of the patient's generator is: three uniforms (sex, baseline age,
    skeletal class), 160 standard normals (the rows of ``_ROWS`` in order, the rest
    unused), 64 + 128 normals (tooth sizes by type and by side), then uniforms
    (missing teeth, findings, TMJ). Each is drawn in one batched call.
    """
    rng = generator("patient", patient_id)
    u_sex, u_age, u_class = rng.random(3).tolist()
    z_all = rng.standard_normal(_N_NORMALS + 64 + 128)
    uniforms = rng.random(_N_UNIFORMS).tolist()

    sex = "F" if u_sex < 0.5 else "M"
    male = sex == "M"
    # numpy's uniform(8, 16) is 8 + 8·u; np.round(x, 3) is rint(x·1000)/1000
    baseline_age = round((8.0 + 8.0 * u_age) * 1000.0) / 1000.0
    birth = REFERENCE_DATE - timedelta(days=round(baseline_age * 365.25))
    # recompute the baseline age from the whole-day birth date so that age_at() agrees
    baseline_age = (REFERENCE_DATE - birth).days / 365.25
    growth_stop = 15.5 if not male else 17.5
    klass = _CLASSES[0 if u_class < _CLASS_CDF[0] else 1 if u_class < _CLASS_CDF[1] else 2]

    # all rows at once: clip(mean + slope·(ANB − 2.5) + rate·(age − 12) + sd·z, lo, hi)
    z = z_all[: len(_ROWS)]
    z0, z_gonial, z_size = z[0], z[_I["gonial_angle"]], z[_I["size_factor"]]
    m, s_, lo, hi = _ANB[klass]
    anb = min(max(m + s_ * float(z0), lo), hi)
    mean, slope, rate, sd, lo_v, hi_v = _ROW_ARRAYS[sex, klass]
    d_age = min(max(baseline_age, 6.0), growth_stop) - 12.0
    v = mean + slope * (anb - 2.5) + rate * d_age + sd * z
    vals = np.minimum(np.maximum(v, lo_v), hi_v).tolist()
    vals[0] = anb
    i_go = _I["gonial_angle"]
    vals[i_go] = min(
        max(128.0 + 0.6 * (vals[_I["SN_MP"]] - 33.0) + 4.5 * float(z_gonial), 114.0), 144.0
    )
    ceph = dict(zip(_CEPH_NAMES, vals[: i_go + 1], strict=True))
    ceph["Go_Me"] += _GO_ME_BY_CLASS[klass]
    ceph["lower_facial_height"] = vals[_I["lower_facial_height"]]
    # SNA, SNB and N–Me follow from the chain at each session's age (session()); nothing
    # reads them at the baseline, so the patient's chain is not built here

    size_factor = 1.0 + 0.035 * float(z_size)
    w_up = vals[_I["intermolar_up"]] * size_factor
    arch = {"intermolar_up": w_up, "intermolar_lo": w_up - vals[_I["intermolar_diff"]]}
    return Patient(
        patient_id=patient_id,
        sex=sex,
        baseline_age=baseline_age,
        birth_date=birth,
        skeletal_class=klass,
        growth_stop=growth_stop,
        ceph=MappingProxyType(ceph),
        rates=RATES[sex],
        arch=MappingProxyType(arch),
        draws=_Draws(vals, size_factor, z_all[_N_NORMALS:], uniforms),
    )


def _later_draws(d: _Draws) -> _Later:
    """Teeth, missing teeth, frontal widths, findings and TMJ of a patient's drawn stream."""
    # Teeth: a patient-level size factor, a per-type deviation, near-symmetric left/right.
    z_type = d.tooth_normals[:64].reshape(2, 8, 4) * _SD_TYPE
    z_side = d.tooth_normals[64:].reshape(2, 8, 2, 4) * _SD_SIDE
    sizes = np.round((_SIZE_MEAN * d.size_factor + z_type)[:, :, None, :] + z_side, 4)
    teeth = dict(zip(_SIZE_KEYS, map(tuple, sizes.reshape(-1, 4).tolist()), strict=True))

    uniforms = d.uniforms
    m3_propensity = uniforms[0] < 0.35  # patients prone to third-molar absence
    p_missing = _P_MISSING[m3_propensity]
    missing = {
        k
        for k, ui, p in zip(TOOTH_KEYS, uniforms[1 : 1 + len(TOOTH_KEYS)], p_missing, strict=True)
        if ui < p
    }
    u = iter(uniforms[1 + len(TOOTH_KEYS) :])
    for keys in _BILATERAL:
        if (keys[0] in missing or keys[1] in missing) and next(u) < 0.6:
            missing.update(keys)

    sm = 0.0 if next(u) < 0.5 else 1.0  # half of the patients have a visible shift
    frontal = dict(zip(_FRONTAL_NAMES, d.rows[_I["NC"] : _I["max_cant"] + 1], strict=True))
    frontal["mand_shift"] *= sm

    def prevalence(classes: dict[str, tuple[float, float]]) -> dict[str, float]:
        # a class present with probability frac; then rate = mean/frac · uniform(0.5, 1.5)
        return {
            name: float(mean / frac * (0.5 + 1.0 * next(u))) if next(u) < frac else 0.0
            for name, (mean, frac) in classes.items()
        }

    clinical_rates = prevalence(CLINICAL_CLASSES)
    pano_rates = prevalence(PANO_CLASSES)
    pano_empty = 0.3 + (0.8 - 0.3) * next(u)
    tmj = {
        side: tuple([c for c, p in TMJ_CONDITIONS.items() if next(u) < p])
        for side in ("right", "left")
    }
    return _Later(
        teeth=MappingProxyType(teeth),
        missing=frozenset(missing),
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
    chain: MappingProxyType  # the mandibular chain of ``ceph`` (_anatomy_ceph.mandible_chain)
    years: float  # growth span: clip(age) − clip(baseline age), clipped to [6, growth stop]

    @cached_property
    def frontal(self) -> MappingProxyType:
        """PA widths, deviations and cants at this age (computed on first use)."""
        r = self.patient.rates
        f = dict(self.patient.frontal)
        for key, rate in _FRONTAL_GROWTH:
            f[key] = f[key] + r[rate] * self.years
        f["Cg_ANS"] = self.ceph["N_Me"] * self.ceph["N_ANS_ratio"] + f["Cg_ANS_extra"]
        return MappingProxyType(f)

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


#: Session parameters that grow with age (ceph, then frontal widths; Z grows as O).
_CEPH_GROWTH = ("S_N", "Ar_Go", "Go_Me", "S_Ar", "S_Ba", "ANS_PNS", "nose", "SN_MP", "ANB",
                "gonial_angle")  # fmt: skip
_FRONTAL_GROWTH = (("NC", "NC"), ("J", "J"), ("Ag", "Ag"), ("ZA", "ZA"), ("U6", "U6"),
                   ("Co", "Co"), ("Ma", "Ma"), ("O", "O"), ("Z", "O"))  # fmt: skip


@lru_cache(maxsize=SESSION_CACHE)
def session(patient_id: str, timestamp: str) -> Session:
    """The patient ``patient_id`` at the session ``timestamp`` (cached)."""
    p = patient(patient_id)
    when = parse_timestamp(timestamp)
    age = age_at(p.birth_date, when, p.baseline_age)
    stop = p.growth_stop
    # linear growth between the ages clipped to [6, growth stop]: value + rate·years
    years = min(max(age, 6.0), stop) - min(max(p.baseline_age, 6.0), stop)
    r = p.rates
    c = p.ceph.copy()  # a dict; dict(mappingproxy) would copy key by key
    for key in _CEPH_GROWTH:
        c[key] = c[key] + r[key] * years
    chain = _chain(c)
    c.update(_derived(chain))
    return Session(
        patient=p,
        timestamp=timestamp,
        when=when,
        age=float(age),
        ceph=MappingProxyType(c),
        chain=MappingProxyType(chain),
        years=years,
    )
