"""``dentalkit analyze`` says which arch stays in pixels, why and how to bring it in.

An occlusogram endpoint without ``--mm-per-px`` leaves its arches in px (the analysis
tables' ``unit`` column); pixel lengths of different photographs share no scale, so those
arches are left out of the mm analyses. The report says so in one line (demo, section
"Arches in pixels"); the command says the same line after its summary. The demo cohort
(the session fixture ``demo_study``) analysed with the lower occlusogram uncalibrated.
"""

from __future__ import annotations

import pandas as pd
from typer.testing import CliRunner

from dentalkit.cli import app
from dentalkit.study.demo import sandbox_calibration

LOWER = "occlusogram_lower_points"


def _analyze(demo_study, out, calibration: dict[str, float]) -> tuple[int, list[str]]:
    folder, _, result = demo_study
    assert result.exit_code == 0, result.output
    args = ["analyze", str(folder / "tables"), "--out", str(out)]
    for endpoint, value in calibration.items():
        args += ["--mm-per-px", f"{endpoint}={value}"]
    ran = CliRunner().invoke(app, args)
    return ran.exit_code, ran.output.splitlines()


def test_an_uncalibrated_arch_is_named_with_its_endpoint_and_option(demo_study, tmp_path):
    partial = {k: v for k, v in sandbox_calibration().items() if k != LOWER}
    code, lines = _analyze(demo_study, tmp_path / "partial", partial)
    notes = [i for i, line in enumerate(lines) if line.startswith("note: ")]
    assert len(notes) == 1, lines
    (i,) = notes
    note = lines[i]
    # after the summary (the analysis_problems line), the last line of the output
    assert "analysis_problems.parquet" in lines[i - 1] and i == len(lines) - 1, lines
    assert note.startswith(f"note: The lower arch ({LOWER}) is in pixels because its "), note
    assert "not calibrated" in note and "upper arch" not in note
    assert f"pass --mm-per-px {LOWER}=VALUE (VALUE in mm per pixel)" in note, note
    assert "`" not in note  # the report's Markdown marks are not printed
    # the line says what the written tables say: lower arches in px, upper ones in mm
    fits = pd.read_parquet(tmp_path / "partial" / "arch_fits.parquet")
    units = fits.groupby(fits["arch"].astype(str))["unit"].agg(lambda u: set(u.astype(str)))
    assert units.to_dict() == {"lo": {"px"}, "up": {"mm"}}
    assert code == 0  # a note, not a problem: the exit status stays 0


def test_no_line_when_every_arch_is_in_mm(demo_study, tmp_path):
    code, lines = _analyze(demo_study, tmp_path / "mm", sandbox_calibration())
    assert code == 0, lines
    assert not any(line.startswith("note: ") or "in pixels" in line for line in lines), lines
    fits = pd.read_parquet(tmp_path / "mm" / "arch_fits.parquet")
    assert (fits["unit"].astype(str) == "mm").all()
