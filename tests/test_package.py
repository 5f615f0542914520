"""The top-level package: every public name resolves, and importing it stays light."""

from __future__ import annotations

import subprocess
import sys

import dentalkit


def test_every_public_name_resolves():
    for name in dentalkit.__all__:
        assert getattr(dentalkit, name) is not None, name
    assert set(dentalkit.__all__) <= set(dir(dentalkit))


def test_import_does_not_load_matplotlib_or_the_sandbox():
    code = (
        "import sys, dentalkit; "
        "print(sorted(m for m in ('matplotlib', 'fastapi', 'scipy.optimize') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_plot_is_reachable_as_an_attribute():
    import dentalkit.plot as plot_module

    assert dentalkit.plot is plot_module


def test_the_dev_install_has_every_optional_library_the_tests_use():
    """A few tests ``importorskip`` optional libraries; with the dev extra (the README's
    test command, CI) none may be missing, or those tests would skip silently."""
    import importlib

    for name in (
        "PIL",
        "geopandas",
        "duckdb",
        "statsmodels",
        "pingouin",
        "trustme",
        "redis",
        "numba",
        "pydicom",
        "s3fs",
        "moto.server",
    ):
        importlib.import_module(name)
