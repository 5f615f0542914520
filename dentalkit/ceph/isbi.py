"""ISBI 2015 cephalometric challenge annotations → our long landmarks table.

The challenge (Wang et al., ISBI 2015; 400 films, 1935 × 2400 px, 0.1 mm per pixel)
ships one text file per image and annotator (``AnnotationsByMD/senior/…/001.txt``,
``…/junior/…``). Each file has 19 lines ``x,y`` (pixels, image coordinates) in this
order: S, N, Or, Po, A, B, Pog, Me, Gn, Go, lower incisal incision, upper incisal
incision, upper lip, lower lip, subnasale, soft-tissue pogonion, PNS, ANS, Ar —
followed by lines of classification labels, which are ignored here. The name
mapping is the shipped name map ``dentalkit/data/name_maps/isbi2015.csv``
(``L01`` … ``L19`` → ``S`` … ``Ar``).

Measures that need landmarks ISBI lacks (incisor apices, molars, Co, Ba, Pt, Prn …)
come out NaN with problem rows.

Examples
--------
>>> import tempfile, pathlib
>>> d = pathlib.Path(tempfile.mkdtemp())
>>> _ = (d / "001.txt").write_text(
...     "\\n".join(f"{10 * i},{20 * i}" for i in range(1, 20)) + "\\n1\\n2\\n"
... )
>>> t = read_isbi(d / "001.txt")
>>> t[["patient_id", "name", "x", "y"]].head(2).to_dict("list")
{'patient_id': ['001', '001'], 'name': ['S', 'N'], 'x': [10.0, 20.0], 'y': [20.0, 40.0]}
>>> float(t["mm_per_px"].iloc[0])
0.1
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from dentalkit.ceph.names import load_name_map
from dentalkit.errors import InputError

__all__ = ["ISBI_MM_PER_PX", "ISBI_N_LANDMARKS", "read_isbi"]

ISBI_MM_PER_PX = 0.1
ISBI_N_LANDMARKS = 19


def _read_one(path: Path) -> np.ndarray:
    lines = [ln.strip() for ln in path.read_text(encoding="utf-8").splitlines() if ln.strip()]
    if len(lines) < ISBI_N_LANDMARKS:
        raise InputError(
            f"{path}: ISBI annotation files have {ISBI_N_LANDMARKS} 'x,y' lines; found {len(lines)}"
        )
    xy = np.empty((ISBI_N_LANDMARKS, 2))
    for i, ln in enumerate(lines[:ISBI_N_LANDMARKS]):
        parts = ln.replace(" ", "").split(",")
        try:
            xy[i] = [float(parts[0]), float(parts[1])]
        except (ValueError, IndexError) as exc:
            raise InputError(f"{path}, line {i + 1}: expected 'x,y', got {ln!r}") from exc
    return xy


def read_isbi(
    path: str | Path,
    *,
    annotator: str | None = None,
    pattern: str = "*.txt",
) -> pd.DataFrame:
    """Read ISBI 2015 annotation file(s) into a long landmarks table with our names.

    Parameters
    ----------
    path : path-like
        One annotation file, or a directory of them (read in sorted name order).
    annotator : str, optional
        Stored in an ``annotator`` column (e.g. ``"senior"``, ``"junior"``). To measure
        both annotators' tracings of the same films, concatenate the tables and pass
        ``session_cols=["patient_id", "annotator"]`` to :func:`dentalkit.ceph.measure`.
    pattern : str
        Glob for files inside a directory.

    Returns
    -------
    DataFrame
        Columns ``patient_id`` (file stem, e.g. ``"001"``), ``timestamp`` (empty
        string: the challenge has one session per film), ``session_time`` (NaT),
        ``annotator``, ``view`` (``lateral``), ``landmark`` (``L01`` … ``L19``),
        ``name`` (ours), ``x``, ``y`` (pixels), ``mm_per_px`` (0.1; pass
        ``mm_per_px="mm_per_px"`` to ``measure``).
    """
    p = Path(path)
    files = sorted(p.glob(pattern)) if p.is_dir() else [p]
    if not files:
        raise InputError(f"no ISBI annotation files matching {pattern!r} in {p}")
    if not all(f.exists() for f in files):
        raise InputError(f"ISBI annotation file {p} does not exist")
    coords = np.stack([_read_one(f) for f in files])  # (n, 19, 2)
    nmap = load_name_map("isbi2015").sort_values("index", key=lambda s: s.astype(int))
    n = len(files)
    keys = nmap["source_name"].tolist()
    names = nmap["name"].tolist()
    stems = [f.stem for f in files]
    return pd.DataFrame(
        {
            "patient_id": pd.Categorical(np.repeat(stems, ISBI_N_LANDMARKS)),
            "timestamp": pd.Categorical(np.repeat([""], n * ISBI_N_LANDMARKS)),
            "session_time": pd.Series(
                pd.NaT, index=range(n * ISBI_N_LANDMARKS), dtype="datetime64[ns, UTC]"
            ),
            "annotator": pd.Categorical(np.repeat([annotator or ""], n * ISBI_N_LANDMARKS)),
            "view": pd.Categorical(
                np.repeat(["lateral"], n * ISBI_N_LANDMARKS), ["lateral", "frontal"]
            ),
            "landmark": pd.Categorical(np.tile(keys, n), keys),
            "name": pd.Categorical(np.tile(names, n), names),
            "x": coords[..., 0].reshape(-1),
            "y": coords[..., 1].reshape(-1),
            "mm_per_px": ISBI_MM_PER_PX,
        }
    )
