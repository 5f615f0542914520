"""MkDocs hook: publish the notebooks next to the pages, as files to download.

The notebooks live in ``notebooks/`` at the repository root (outside ``docs/``); this
hook adds them to the site under ``notebooks/`` so ``docs/notebooks.md`` can link to
them and ``mkdocs build --strict`` checks those links. They are not rendered (no
mkdocs-jupyter): they are stored without outputs, and CI executes them
(``tests/docs/test_notebooks.py``).
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File


def on_files(files, config):
    root = Path(config["config_file_path"]).resolve().parent
    for path in sorted((root / "notebooks").glob("*.ipynb")):
        files.append(
            File(
                f"notebooks/{path.name}",
                src_dir=str(root),
                dest_dir=config["site_dir"],
                use_directory_urls=config["use_directory_urls"],
            )
        )
    return files
