"""The README's Python study runs as written (against the embedded sandbox)."""

from __future__ import annotations

import re
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def _python_blocks() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)


def test_readme_starts_with_the_two_commands():
    text = README.read_text()
    first = re.search(r"```bash\n(.*?)```", text, flags=re.S).group(1)
    commands = [line for line in first.splitlines() if line and not line.startswith("#")]
    assert commands == [
        'python3 -m venv .venv && .venv/bin/pip install -e ".[demo]" && .venv/bin/dentalkit demo',
        'python3 -m venv .venv && .venv/bin/pip install -e ".[dev]" && .venv/bin/python -m pytest -n 2',
    ]
    ci = (README.parent / ".ci" / "run").read_text()
    assert commands[1] in ci


def test_the_readme_study_runs(tmp_path, capsys):
    (block,) = _python_blocks()
    namespace = {"study_dir": tmp_path / "study"}
    exec(compile(block, str(README), "exec"), namespace)
    anb = namespace["anb"]
    assert anb["patient_id"].tolist() == ["P001", "P002", "P003"]
    assert (anb["unit"] == "deg").all() and anb["value"].between(-10, 15).all()
    assert "skeletal_class" in capsys.readouterr().out


def test_every_relative_link_in_the_readme_exists():
    targets = re.findall(r"\]\(([^)#]+)(?:#[^)]*)?\)", README.read_text())
    local = [t for t in targets if not re.match(r"[a-z]+://", t)]
    assert local, "the README links its docs and notebooks"
    missing = [t for t in local if not (README.parent / t).exists()]
    assert not missing
