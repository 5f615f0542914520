"""The measurement reference: one table (and ``docs/measures.md``) generated from the CSVs.

``docs/measures.md`` is written by :func:`write_measures_doc` from the shipped
catalogues, and a test checks that the committed file equals a fresh rendering, so
docs and data cannot drift. Regenerate with::

    python -c "from dentalkit.ceph.reference import write_measures_doc; write_measures_doc()"
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from dentalkit.ceph import _engine
from dentalkit.ceph._catalog import load_measures, load_points
from dentalkit.ceph.classify import load_thresholds
from dentalkit.ceph.norms import load_norms

__all__ = ["reference_table", "render_measures_doc", "write_measures_doc"]

_UNITS = {"angle": "deg", "length": "mm (px without mm_per_px)", "percent": "%"}


def _fmt(x: float) -> str:
    return "" if pd.isna(x) else f"{x:g}"


def reference_table(
    measures: pd.DataFrame | None = None, norms: pd.DataFrame | None = None
) -> pd.DataFrame:
    """One row per measure: definition, construction, sign, unit, norm and source.

    Parameters
    ----------
    measures, norms : DataFrame, optional
        Catalogues (default: the shipped ones).

    Returns
    -------
    DataFrame
        Columns ``id``, ``label``, ``view``, ``analysis``, ``kind``, ``construction``
        (points or operands), ``sign_convention``, ``unit``, ``norm`` (every norm row
        of the measure, ``mean ± sd [range] (group, sex, age) ✓/unverified``),
        ``description``, ``source``.
    """
    cat = load_measures(measures)
    nrm = load_norms(norms)
    norm_txt = {}
    for mid, g in nrm.groupby("measure", sort=False):
        parts = []
        for r in g.to_dict("records"):
            s = _fmt(r["mean"])
            if pd.notna(r["sd"]):
                s += f" ± {_fmt(r['sd'])}"
            if pd.notna(r["range_low"]) or pd.notna(r["range_high"]):
                s += f" [{_fmt(r['range_low'])}, {_fmt(r['range_high'])}]"
            who = ", ".join(
                x
                for x in (
                    r["group"],
                    r["sex"],
                    (
                        f"age {_fmt(r['age_min'])}-{_fmt(r['age_max'])}"
                        if pd.notna(r["age_min"])
                        else ""
                    ),
                )
                if x
            )
            s += f" ({who}){'' if r['verified'] else ' unverified'}"
            parts.append(s)
        norm_txt[mid] = "; ".join(parts)
    out = pd.DataFrame(
        {
            "id": cat["id"],
            "label": cat["label"],
            "view": cat["view"],
            "analysis": cat["analysis"],
            "kind": cat["kind"],
            "construction": [p or o for p, o in zip(cat["points"], cat["operands"], strict=True)],
            "sign_convention": cat["sign_convention"],
            "unit": cat["quantity"].map(_UNITS),
            "norm": cat["id"].map(norm_txt).fillna(""),
            "description": cat["description"],
            "source": cat["source"],
        }
    )
    return out


def _md_escape(s: str) -> str:
    return str(s).replace("|", "\\|").replace("\n", " ")


def render_measures_doc() -> str:
    """Markdown text of ``docs/measures.md`` (deterministic)."""
    ref = reference_table()
    pts = load_points()
    th = load_thresholds()
    lines = [
        "# Cephalometric measures",
        "",
        "Generated from `dentalkit/data/ceph_measures.csv`, `ceph_points.csv`, `ceph_norms.csv`",
        "and `ceph_classes.csv` by `dentalkit.ceph.reference.write_measures_doc()`; do not edit",
        "by hand (a test compares this file with a fresh rendering).",
        "",
        "## Usage",
        "",
        "```python",
        "from dentalkit import ceph",
        "",
        'm = ceph.measure(landmarks, mm_per_px=0.1, errors="warn")  # long table; problems: one warning',
        'm, problems = ceph.measure(landmarks, errors="collect")  # NaN + a problems table',
        'z = ceph.zscores(m.merge(patients, on="patient_id"), by=["sex", "age"])',
        "classes = ceph.classify(m)  # skeletal class, vertical pattern",
        "growth = ceph.change(m)  # consecutive sessions, per year",
        'isbi = ceph.read_isbi("AnnotationsByMD/senior/TrainingData", annotator="senior")',
        'm_isbi = ceph.measure(isbi, mm_per_px="mm_per_px", errors="warn")',
        "```",
        "",
        "Other naming schemes: `ceph.measure(table, name_map='isbi2015')` or a CSV / DataFrame",
        "with `source_name, name` columns; service keys (`Later_12`) are named through the",
        "landmark map (`landmark_map=` to replace the default).",
        "",
        "## Frame and signs",
        "",
        "Every session is put into an anatomical frame before measuring: lateral films with",
        "anterior = +x (S → N) and superior = +y; frontal films with the patient's left = +x",
        "and superior = +y (image y points down and is flipped; mirrored films are detected",
        "from the landmarks and mirrored back). Signed kinds are counter-clockwise positive in",
        "this frame, multiplied by the catalogue's `sign` so that each measure has the",
        "clinical sign stated in its row. All measures are invariant to rotation,",
        "translation and uniform scaling of the image; lengths scale with `mm_per_px`.",
        "",
        "## Kinds",
        "",
        "```text",
        *[ln for ln in (_engine.__doc__ or "").strip().splitlines()],
        "```",
        "",
        "## Construction points",
        "",
        "| id | view | mean of | description | source |",
        "|---|---|---|---|---|",
    ]
    for r in pts.to_dict("records"):
        lines.append(
            f"| {r['id']} | {r['view']} | {r['points']} | {_md_escape(r['description'])} | {_md_escape(r['source'])} |"
        )
    for view in ("lateral", "frontal"):
        lines += ["", f"## {view.capitalize()} measures", ""]
        sub = ref[ref["view"] == view]
        for r in sub.to_dict("records"):
            lines += [
                f"### {r['id']} — {r['label']}",
                "",
                f"- analysis: {r['analysis']}; kind: `{r['kind']}`; construction: `{r['construction']}`",
                f"- unit: {r['unit']}; sign: {r['sign_convention']}",
                f"- definition: {r['description']}",
                f"- norm: {r['norm'] or 'none shipped'}",
                f"- source: {r['source']}",
                "",
            ]
    lines += [
        "## Norms",
        "",
        "A norm row is `verified` when its mean (and SD, if given) were confirmed in a",
        "retrievable source (`checked_in` in `ceph_norms.csv`); unverified rows are textbook",
        "values kept for reference and excluded from `zscores` unless",
        "`include_unverified=True`. Rows without an SD never give a z-score.",
        "",
        "## Classification thresholds",
        "",
        "| scheme | measure | category | interval [lower, upper) | verified | source / note |",
        "|---|---|---|---|---|---|",
    ]
    for r in th.to_dict("records"):
        lines.append(
            f"| {r['scheme']} | {r['measure']} | {r['category']} | [{_fmt(r['lower']) or '-inf'}, "
            f"{_fmt(r['upper']) or 'inf'}) | {r['verified']} | {_md_escape(r['source'])}"
            f"{'; ' + _md_escape(r['note']) if r['note'] else ''} |"
        )
    return "\n".join(lines).rstrip() + "\n"


def write_measures_doc(path: str | Path | None = None) -> Path:
    """Write ``docs/measures.md`` (default: next to the package, in the repository)."""
    target = Path(path) if path else Path(__file__).resolve().parents[2] / "docs" / "measures.md"
    target.write_text(render_measures_doc(), encoding="utf-8")
    return target
