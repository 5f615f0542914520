"""Regenerate the figure gallery: ``docs/images/*.png`` and ``docs/figures.md``.

Run from the repository root::

    python docs/images/make_gallery.py

Every image is made by the code shown next to it in ``docs/figures.md`` (the snippets
below are executed as written, inside ``plot.style()``, then saved with
``plot.savefig``). The data come from the embedded sandbox: synthetic patients, no
network, no key. The small table builders of ``tests/plot/plot_tables.py`` flatten
sandbox bodies into the data-contract tables (``dentalkit.convert`` does the same for
fetched responses).
"""

from __future__ import annotations

import sys
import textwrap
import time
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

IMAGES = ROOT / "docs" / "images"
PAGE = ROOT / "docs" / "figures.md"

SETUP = """
import numpy as np
import pandas as pd
from dentalkit import ceph, findings, plot, teeth, tle
from dentalkit.sandbox.render import input_image
from tests.plot.plot_tables import arch_points, findings as findings_table, landmarks
from tests.plot.plot_tables import teeth as teeth_table

patients = [f"P{i:03d}" for i in range(1, 41)]
lateral = pd.concat([landmarks(p, "2024-03-01") for p in patients], ignore_index=True)
"""

# (file name, title, function, width or (width, height mm), text, code). The code leaves
# the figure in ``ax``.
GALLERY = [
    (
        "ceph_tracing",
        "Cephalometric tracing over the radiograph",
        "plot.ceph_tracing",
        ("double", 150),
        "Landmarks, the landmark map's contours as smooth curves and the lines of the "
        "chosen measures, with their values, over the lateral cephalogram (y down).",
        """
        radiograph = input_image("lateral_ceph/P001/2024-03-01.png")  # PNG bytes
        ax = plot.ceph_tracing(
            lateral,
            ("P001", "2024-03-01"),
            image=radiograph,
            mm_per_px=0.1,
            measures=["SNA", "SNB", "ANB", "SN_MP", "U1_SN", "IMPA", "Wits"],
            legend="right",
        )
        """,
    ),
    (
        "ceph_tracing_blank",
        "Tracing on a blank canvas",
        "plot.ceph_tracing",
        "single",
        "The same session without the image and without axes: distances along a "
        "reference line (Wits, A to N-perpendicular) show the perpendiculars dropped on "
        "it (dashed) and the measured stretch.",
        """
        ax = plot.ceph_tracing(
            lateral,
            ("P001", "2024-03-01"),
            mm_per_px=0.1,
            show_axes=False,
            measures=["SNA", "SNB", "FMA", "Wits", "A_Nperp", "E_line_lower_lip"],
        )
        """,
    ),
    (
        "ceph_superimposition",
        "Superimposition of two sessions on S–N at S",
        "plot.ceph_superimposition",
        "single",
        "Four years of growth of one synthetic patient: both tracings registered on S–N "
        "at S; arrows from the first to the last position of chosen landmarks.",
        """
        sessions = pd.concat([landmarks("P001", "2020-03-01"), landmarks("P001", "2024-03-01")])
        ax = plot.ceph_superimposition(sessions, "P001", mm_per_px=0.1)
        """,
    ),
    (
        "ceph_wiggle",
        "Cohort z-scores against norms (wiggle chart)",
        "plot.ceph_wiggle",
        "single",
        "Every measure whose norm has an SD, on the z scale; grey lines are the "
        "patients, coloured lines the group means with 95 % t intervals; the right axis "
        "gives the norm used. (The shipped SDs are textbook values, hence "
        "``include_unverified=True``.)",
        """
        from dentalkit.study.demo import sandbox_patients

        measures, _ = ceph.measure(lateral, mm_per_px=0.1, errors="collect")
        record = sandbox_patients(patients)  # sex, birth date (a study: its patient table)
        record["sex"] = record["sex"].map({"F": "female", "M": "male"})
        z = ceph.zscores(measures, patients=record, include_unverified=True)
        ax = plot.ceph_wiggle(z, by="sex")  # each norm of the patient's sex and age
        """,
    ),
    (
        "arch_forms",
        "Arch points with fitted arch forms",
        "plot.arch_forms",
        "single",
        "The catenary points of one upper occlusogram with the fitted curve of each "
        "model (``dentalkit.arch.fit``), in image pixels; the legend gives each model's "
        "RMSE.",
        """
        from dentalkit import arch

        points = arch_points("P003", "2024-03-01", "up")
        fits = arch.fit(points, ["catenary", "beta", "poly4", "parabola"])
        ax = plot.arch_forms(points, fits)
        """,
    ),
    (
        "mean_arch_forms",
        "Group mean arch forms with confidence bands",
        "plot.mean_arch_forms",
        "single",
        "Mean catenary forms of two groups after alignment, the upper and the lower arch in "
        "separate panels at the same scale, with pointwise 95 % confidence bands "
        "(``dentalkit.arch.mean_form``).",
        """
        from dentalkit import arch

        pts = pd.concat(
            [arch_points(p, "2024-03-01", a) for p in patients[:30] for a in ("up", "lo")],
            ignore_index=True,
        )
        pts["group"] = np.where(pts["patient_id"].str[-1].astype(int) % 2, "B", "A")
        mf = arch.mean_form(pts, by="group", mm_per_px=0.08)
        ax = plot.mean_arch_forms(mf, by="group")
        """,
    ),
    (
        "tooth_map",
        "Tooth map of one patient",
        "plot.tooth_map",
        ("double", 85),
        "Tooth outlines of a panoramic radiograph coloured by area; missing teeth "
        "hatched at the place interpolated between their neighbours.",
        """
        t = teeth_table("P002", "2024-03-01", "pano")
        areas = teeth.measure(t, mm_per_px=0.1, measures=["area"])
        ax = plot.tooth_map(t, "area", values=areas, image=input_image("pano/P002/2024-03-01.png"))
        """,
    ),
    (
        "tooth_map_z",
        "Tooth map with a diverging scale",
        "plot.tooth_map",
        "single",
        "An upper dental-model photograph (occlusogram), teeth coloured by a z-score "
        "of their area (any per-tooth value works) on a diverging scale centred at 0.",
        """
        t = teeth_table("P015", "2024-03-01", "occlusogram_upper")
        m = teeth.measure(t, mm_per_px=0.08, measures=["area"])
        m["area_z"] = (m["area"] - m["area"].mean()) / m["area"].std()
        ax = plot.tooth_map(t, "area_z", values=m, center=0.0, label="area z-score")
        """,
    ),
    (
        "odontogram",
        "FDI odontogram of missing-teeth prevalence",
        "plot.odontogram",
        "single",
        "Share of patients missing each tooth on panoramic radiographs "
        "(``dentalkit.teeth.missing``), quadrants as a clinician charts them: the "
        "patient's right on the viewer's left, upper arch on top.",
        """
        cohort = pd.concat([teeth_table(p, "2024-03-01", "pano") for p in patients])
        ax = plot.odontogram(teeth.missing(cohort).by_fdi)
        """,
    ),
    (
        "finding_boxes",
        "Findings boxes over the photograph",
        "plot.finding_boxes",
        "single",
        "Detections of one intra-oral photograph, one colour per class (kept across "
        "the images of a table), with the count per class.",
        """
        det = pd.concat([findings_table(p, "2024-03-01") for p in patients], ignore_index=True)
        ax = plot.finding_boxes(
            det,
            ("P006", "2024-03-01"),
            crop=True,
            image=input_image("intraoral_frontal/P006/2024-03-01.png"),
        )
        """,
    ),
    (
        "prevalence_bars",
        "Prevalence with confidence intervals",
        "plot.prevalence_bars",
        "single",
        "Share of patients with at least one detection per class and group, Wilson "
        "95 % intervals, counts at the bar ends (``dentalkit.findings.prevalence``).",
        """
        det = pd.concat([findings_table(p, "2024-03-01") for p in patients], ignore_index=True)
        images = pd.DataFrame(
            {
                "patient_id": patients,
                "timestamp": "2024-03-01",
                "source": "clinical",
                "sex": ["female", "male"] * (len(patients) // 2),
            }
        )
        res = findings.prevalence(det, images=images, by="sex")
        ax = plot.prevalence_bars(res.prevalence, by="sex")
        """,
    ),
    (
        "tle_distribution",
        "Predicted treatment length by group",
        "plot.tle_distribution",
        "single",
        "``GET /tle`` answers of the sandbox for 120 synthetic patients, by malocclusion "
        "class: boxes, points, and the mean with its BCa bootstrap 95 % CI "
        "(``dentalkit.tle.summarize``).",
        """
        import tempfile

        from dentalkit.fetch.client import Client
        from dentalkit.fetch.cohort import Fetcher
        from dentalkit.sandbox import running

        with running() as sb, tempfile.TemporaryDirectory() as store:
            client = Client(sb.base_url, api_key=sb.api_key, cache="memory")
            est = tle.estimate(tle.example_patients(120), Fetcher(f"{store}/tle", client))
            what_if = Fetcher(f"{store}/sensitivity", client)  # hypothetical patients: own store
            curves = [
                tle.sensitivity(
                    tle.example_patients(30), "crowding", ["none", "mild", "moderate", "severe"], what_if
                ),
                tle.sensitivity(tle.example_patients(30), "age_years", range(10, 41, 5), what_if),
            ]
        ax = plot.tle_distribution(est, "malocclusion_class")
        """,
    ),
    (
        "tle_sensitivity",
        "Sensitivity (partial dependence) curves",
        "plot.tle_sensitivity",
        "double",
        "One factor varied, the others held at each patient's values "
        "(``dentalkit.tle.sensitivity``); grey: patients, blue: cohort mean. Several "
        "factors make a panel figure.",
        """
        ax = plot.tle_sensitivity(curves)  # the two curve tables of the previous example
        """,
    ),
    (
        "tle_bland_altman",
        "Bland–Altman plot of predicted against observed length",
        "plot.tle_bland_altman",
        "single",
        "Predicted − observed against their mean; bias and 95 % limits of agreement "
        "with their CIs (shaded), as ``dentalkit.tle.calibration`` computes them. The "
        "observed durations here are **simulated** (prediction + noise) for the picture.",
        """
        rng = np.random.default_rng(1)
        observed = est["estimate_length_months"] + rng.normal(1.0, 3.0, len(est))
        ax = plot.tle_bland_altman(est, observed.to_numpy())
        """,
    ),
    (
        "tle_calibration",
        "Calibration of predicted against observed length",
        "plot.tle_calibration",
        "single",
        "Observed against predicted months with the identity and the calibration (OLS) "
        "line; same simulated observations as above.",
        """
        ax = plot.tle_calibration(est, observed.to_numpy())
        """,
    ),
]


def main() -> None:
    from dentalkit import plot

    IMAGES.mkdir(parents=True, exist_ok=True)
    ns: dict = {}
    t0 = time.time()
    exec(SETUP, ns)
    made: dict[str, bool] = {}
    for name, _title, _func, width, _text, code in GALLERY:
        src = textwrap.dedent(code)
        try:
            with plot.style():
                exec(src, ns)
                w, h = width if isinstance(width, tuple) else (width, None)
                plot.savefig(ns["ax"], IMAGES / f"{name}.png", width=w, height=h, dpi=300)
            made[name] = True
            print(f"{name}: ok ({time.time() - t0:.1f} s)")
        except ImportError as exc:  # e.g. dentalkit.arch not installed yet
            made[name] = False
            print(f"{name}: skipped ({exc})")
        matplotlib.pyplot.close("all")
    PAGE.write_text(_page(made), encoding="utf-8")
    print(f"wrote {PAGE}")


def _page(made: dict[str, bool]) -> str:
    rows = ["| function | figure |", "|---|---|"]
    seen: set[str] = set()
    for _name, title, func, *_ in GALLERY:
        if func not in seen:
            anchor = title.lower().replace(" ", "-")
            anchor = "".join(ch for ch in anchor if ch.isalnum() or ch == "-")
            rows.append(f"| `{func}` | [{title}](#{anchor}) |")
            seen.add(func)
    out = [HEADER, "\n".join(rows) + "\n"]
    for name, title, func, width, text, code in GALLERY:
        out.append(f"## {title}\n")
        out.append(f"`{func}` — {text}\n")
        if made.get(name):
            out.append(f"![{title}](images/{name}.png)\n")
        else:
            out.append("*(image not generated: a module it needs is not installed)*\n")
        out.append("```python\n" + textwrap.dedent(code).strip() + "\n```\n")
        w, h = width if isinstance(width, tuple) else (width, None)
        size = f'width="{w}"' + (f", height={h}" if h else "")
        out.append(f'Saved with `plot.savefig(ax, "{name}.png", {size}, dpi=300)`.\n')
    out.append(FOOTER)
    return "\n".join(out)


HEADER = (
    """# Figures

`dentalkit.plot` draws publication figures from dentalkit's tables and analyses with
matplotlib only. Every function takes `ax=None` (a new figure when omitted) and returns
the Axes it drew on (multi-panel figures return the Figure); none calls `plt.show()` or
changes global rcParams.

```python
from dentalkit import plot

with plot.style():  # house style: 7 pt sans-serif, Okabe–Ito colours
    ax = plot.odontogram(by_fdi)  # any figure function
    plot.savefig(ax, "figures/fig2", width="single")  # 85 mm: fig2.pdf/.svg/.png/.tif
```

- **House style** — `plot.style()` is a `matplotlib.rc_context`: 7 pt text (journals
  ask for 6–8 pt at final size), thin lines, no top/right spines, the Okabe–Ito
  colour-blind-safe palette (`plot.OKABE_ITO`, in plotting order `plot.CATEGORICAL`),
  viridis for magnitudes and RdBu for signed values centred on a reference. Create
  *and* save figures inside the block.
- **Saving** — `plot.savefig(fig_or_ax, path, width="single" | "double" | mm, height=None,
  dpi=600, formats=("pdf", "svg", "png", "tiff"))` writes each format at the journal width
  (85 mm or 180 mm), keeping the aspect ratio unless `height` (mm) is given. Text stays
  text (TrueType fonts embedded in PDF, `<text>` in SVG); TIFF is RGB, LZW-compressed,
  with its resolution tag set; PDF/SVG carry no creation date, so they are reproducible.
  `plot.figure("single", height=60)` makes an empty figure at a journal width. Before
  writing, `savefig` lays the figure out at its final size and warns (`DentalkitWarning`)
  naming any text that would run past the edge and be cut off — typically an axis label
  centred under an axes that long tick labels pushed aside; `clipped_text(fig)` (from
  `dentalkit.plot.style`)
  gives the same list. Every figure function of `dentalkit.plot` is checked for it at
  85 mm (`tests/plot/test_plot_journal.py`).
- **Pixel data the right way up** — tracings, tooth maps, boxes and arch points are in
  image coordinates: equal aspect, y axis inverted (y down, as the service reports).
  Background images can be a numpy array, a PIL image, PNG bytes or a file path; plot
  functions never fetch a URL. A tracing that makes its own figure (no `ax=`) gets the
  height its view needs, the column width kept, so the radiograph or the landmarks fill
  the axes with no blank bands beside them; a `height=` in `savefig` overrides it.
- **Legends** sit above the axes by default (`legend="above" | "right" | "inside" | None`),
  so figures fit one journal column; without the house style (10 pt default fonts) new
  figures are made proportionally larger.

Regenerate this page and its images with `python docs/images/make_gallery.py` (the
code below is exactly what made each image, executed in `plot.style()`; the tables
come from the embedded sandbox's synthetic patients):

```python
"""
    + textwrap.dedent(SETUP).strip()
    + """
```
"""
)

FOOTER = """## Agreement figures

`dentalkit.plot.agreement` (also exported as `plot.landmark_errors`,
`plot.agreement_bland_altman`, `plot.bland_altman_grid`, `plot.sdr_bars`) draws
landmark offsets with 95 % ellipses, Bland–Altman plots of measures and success
detection rates for the agreement analyses; see `docs/agreement.md`.

## Choices made here (replaceable)

- **Contours**: numbered landmark names of the landmark map (`mandible_contour_01` …)
  form contour groups, drawn as centripetal Catmull–Rom splines through their points
  (Yuksel, Schaefer & Keyser, *Comput Aided Des* 2011;43:747–755: no cusps or loops
  within a segment). Tooth outlines, orbits, the pterygomaxillary fissure and the nasal
  cavity are closed (`plot.ceph.CLOSED_CONTOURS`; `closed=` changes it).
- **Measurement lines** follow each measure's definition in
  `dentalkit/data/ceph_measures.csv`; a segment shared by two measures is drawn once,
  in the colour of the first. `ANB` (= SNA − SNB) is drawn as the angle between N–A and
  N–B.
- **S–N superimposition** (`plot.sn_register`): S at the origin, S → N on +x, superior
  up; a film facing left is mirrored so every tracing faces right; `scale=True` scales
  each session to the first session's S–N length (Ghafari, Engel & Laster, *Am J Orthod
  Dentofacial Orthop* 1987;91:403–413, method "SN registered at S").
- **Missing teeth** in a tooth map are drawn as hatched circles at the position
  interpolated along the arch between the present neighbours (extrapolated at the ends),
  with the neighbours' mean size: a schematic, not a measurement.
- **Odontogram**: teeth without a value (not in the table, or NaN) are grey, "not
  assessed"; proportions are shown in percent.
- **Wiggle chart**: measures on the z scale with ±1 and ±2 SD bands; group means with
  t intervals (Hellman 1937; Vorhies & Adams, *Angle Orthod* 1951;21:194–197).
"""


if __name__ == "__main__":
    main()
