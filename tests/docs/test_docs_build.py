"""The documentation site builds with ``mkdocs build --strict``, and what the pages promise holds.

Strict mode turns every warning into an error: a page missing from the nav, a broken link or
anchor, a docstring mkdocstrings cannot parse, an API page naming an object that no longer
exists.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import dentalkit.settings as settings

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
#: A hang guard, not a speed test (the build takes ~30 s on a quiet machine).
HANG_GUARD_S = 600


def _clean_env() -> dict[str, str]:
    env = {
        k: v for k, v in os.environ.items() if k not in ("DENTALKIT_API_KEY", "DENTALKIT_BASE_URL")
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    env["NO_MKDOCS_2_WARNING"] = "1"  # material's end-of-life banner, not a build warning
    return env


@pytest.mark.slow
def test_mkdocs_build_strict(tmp_path: Path):
    pytest.importorskip("mkdocs")
    pytest.importorskip("material")
    pytest.importorskip("mkdocstrings_handlers.python")
    site = tmp_path / "site"
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
        cwd=ROOT,
        env=_clean_env(),
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
    )
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-6000:]
    # every page of the nav was rendered, the API reference has real content, and the
    # notebooks are published next to the pages (docs/_hooks.py) for notebooks.md's links
    for page in ("index.html", "configuration/index.html", "publishing/index.html"):
        assert (site / page).is_file(), page
    plot_api = (site / "api" / "plot" / "index.html").read_text(encoding="utf-8")
    assert 'id="dentalkit.plot.ceph.tracing"' in plot_api
    io_api = (site / "api" / "io" / "index.html").read_text(encoding="utf-8")
    assert 'id="dentalkit.io.pseudonymize"' in io_api or "dentalkit.io.pseudonymize" in io_api
    published = sorted(p.name for p in (site / "notebooks").glob("*.ipynb"))
    assert published == sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))


def test_every_nav_page_exists_and_every_page_is_in_the_nav():
    yml = (ROOT / "mkdocs.yml").read_text(encoding="utf-8")
    nav = yml[yml.index("\nnav:") :]
    listed = set(re.findall(r"([\w/.-]+\.md)\s*$", nav, flags=re.M))
    for page in listed:
        assert (DOCS / page).is_file(), f"mkdocs.yml lists {page}, which does not exist"
    pages = {p.relative_to(DOCS).as_posix() for p in DOCS.rglob("*.md")}
    assert pages - listed == set(), f"pages missing from the nav: {sorted(pages - listed)}"


def test_configuration_page_describes_every_setting():
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    missing = [name for name in settings.__all__ if f"`{name}" not in text]
    assert missing == [], f"docs/configuration.md does not describe settings {missing}"
    for env in (settings.base_url_env, settings.api_key_env):
        assert env in text


def test_configuration_defaults_match_the_module():
    text = (DOCS / "configuration.md").read_text(encoding="utf-8")
    rows = dict(re.findall(r"^\| `(\w+)` \| `([^`]*)`", text, flags=re.M))
    for name in ("timeout", "max_retries", "backoff_base", "backoff_max", "max_workers"):
        assert rows[name] == repr(getattr(settings, name)), name
    for name in ("flush_every", "flush_interval", "verify", "base_url"):
        assert rows[name] == repr(getattr(settings, name)), name


@pytest.mark.slow
def test_getting_started_example_runs(tmp_path: Path):
    """The blocks marked ``<!-- runnable -->`` in getting-started.md run as printed."""
    pytest.importorskip("fastapi")
    text = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    blocks = re.findall(r"<!-- runnable -->\s*```python\n(.*?)```", text, flags=re.S)
    assert blocks, "getting-started.md has no runnable example"
    script = tmp_path / "example.py"
    script.write_text("\n\n".join(blocks), encoding="utf-8")
    env = _clean_env()
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "20 requests" in proc.stdout
    assert "skeletal_class" in proc.stdout
    assert (tmp_path / "study" / "responses").is_dir()


def test_getting_started_shows_the_readme_commands():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    commands = [line.strip() for line in readme.splitlines() if "python3 -m venv" in line]
    assert len(commands) == 2, commands  # the demo and the tests
    page = (DOCS / "getting-started.md").read_text(encoding="utf-8")
    for command in commands:
        assert command in page, f"getting-started.md lacks the README command {command!r}"
