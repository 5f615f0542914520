"""Tooth keys ``{type}_{side}_{arch}`` → tooth type, side, arch and ISO 3950 (FDI) number.

ISO 3950 two-digit notation: the first digit is the quadrant — 1 upper right, 2 upper
left, 3 lower left, 4 lower right, the patient's right and left — and the second the
tooth counted from the midline: central incisor 1, lateral incisor 2, canine 3, first
and second premolar 4 and 5, first, second and third molar 6, 7 and 8 (ISO 3950:2016,
*Dentistry — Designation system for teeth and areas of the oral cavity*). The spec
shows the prefixes i1, c, p2, m1, m2, m3; i2 and p1 exist anatomically and are
accepted. Any other prefix is kept with a null type and FDI number and reported.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from dentalkit.convert.schemas import FDI_TOOTH_TYPES

_KEY = re.compile(r"(?P<type>[^_]+)_(?P<side>rgt|lft)_(?P<arch>up|lo)")
TYPES = tuple(FDI_TOOTH_TYPES)
SIDES = ("rgt", "lft")
ARCHES = ("up", "lo")
#: (arch, side) → ISO 3950 quadrant.
QUADRANT = {("up", "rgt"): 1, ("up", "lft"): 2, ("lo", "lft"): 3, ("lo", "rgt"): 4}


def fdi(key: str) -> int | None:
    """ISO 3950 number of a tooth key, or None when the key is not a known permanent tooth.

    >>> fdi("m1_rgt_up"), fdi("i1_lft_up"), fdi("c_lft_lo"), fdi("p2_rgt_lo")
    (16, 21, 33, 45)
    >>> fdi("x9_rgt_up") is None
    True
    """
    m = _KEY.fullmatch(key)
    if m is None or m["type"] not in FDI_TOOTH_TYPES:
        return None
    return 10 * QUADRANT[(m["arch"], m["side"])] + FDI_TOOTH_TYPES[m["type"]]


@dataclass
class ParsedKeys:
    """Parsed form of each category of tooth keys (arrays aligned with the keys)."""

    type_code: np.ndarray  # int8 index into TYPES, -1 when unknown
    side_code: np.ndarray  # int8 index into SIDES, -1 when unparsable
    arch_code: np.ndarray  # int8 index into ARCHES, -1 when unparsable
    fdi: np.ndarray  # int16, 0 when unknown

    def fdi_array(self, codes: np.ndarray) -> pd.arrays.IntegerArray:
        """Nullable Int16 FDI numbers of tooth ``codes``."""
        values = self.fdi[codes] if len(codes) else np.zeros(0, dtype=np.int16)
        return pd.arrays.IntegerArray(values, values == 0)


def parse(keys: Sequence[str]) -> ParsedKeys:
    """Parse the (unique) tooth keys; one regex match per distinct key, not per row."""
    n = len(keys)
    t = np.full(n, -1, dtype=np.int8)
    s = np.full(n, -1, dtype=np.int8)
    a = np.full(n, -1, dtype=np.int8)
    f = np.zeros(n, dtype=np.int16)
    for j, key in enumerate(keys):
        m = _KEY.fullmatch(key)
        if m is None:
            continue
        s[j] = SIDES.index(m["side"])
        a[j] = ARCHES.index(m["arch"])
        if m["type"] in FDI_TOOTH_TYPES:
            t[j] = TYPES.index(m["type"])
            f[j] = 10 * QUADRANT[(m["arch"], m["side"])] + FDI_TOOTH_TYPES[m["type"]]
    return ParsedKeys(t, s, a, f)


def key_problems(keys: Sequence[str], arch: str | None) -> tuple[list[str], list[str]]:
    """Keys that are not a known permanent tooth, and keys of the wrong arch for ``arch``."""
    unknown: list[str] = []
    wrong_arch: list[str] = []
    for key in keys:
        m = _KEY.fullmatch(key)
        if m is None or m["type"] not in FDI_TOOTH_TYPES:
            unknown.append(key)
        if arch is not None and m is not None and m["arch"] != arch:
            wrong_arch.append(key)
    return unknown, wrong_arch
